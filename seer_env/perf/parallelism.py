"""How much parallelism a model has: what more threads could give, read from a trace.

The conservative executor runs a step as a sequence of *windows*; inside a
window every entity's events are independent of every other entity's, so
with enough threads a window takes as long as its busiest entity (its
*critical path*), and with ``T`` threads at least its work divided by ``T``.
From one traced run on a single thread, `analyze` measures, window by
window, the work (the window's wall time, handlers and the runtime's own
per-event work together) and the critical path (the busiest entity's handler
time, scaled by the same per-event overhead), plus the phases around the
events (act, boundary).  `ParallelismReport.predict_ns` then estimates a
step on ``T`` threads:

```text
sum over windows of max(work / T, critical path) + phases / T
+ windows x barrier cost(T)
```

where the barrier cost per window is measured on two threads (the time the
run took beyond the ideal) and grows like ``log2(T)`` (a tree of arrivals).
[`measure`][seer_env.perf.parallelism.measure] does it all on one machine: a traced
one-thread run, a
timed two-thread run to check the prediction against, and the report:

```python
from seer_env.perf import parallelism
rep = parallelism.measure("pcs_v0", {"width": 32, "height": 32}, steps=20)
print(rep.table())          # predicted speedup at 1, 2, 4, 16, 64 threads
```

or ``seer-env trace pcs_v0 --parallelism --set width=32 --set height=32``.
The figure at two threads is checked against the two-thread run measured
here (``measured_speedup``); the others are what the trace says, on this
machine's per-event costs, for a machine with that many cores.

A model with lookahead 0 has no windows:
[`measure`][seer_env.perf.parallelism.measure] then traces the
optimistic executor, whose speculation phase is one "window" per step.  The
critical path is then the busiest entity's handler time in the step (its
events are handled one after the other whatever the threads) -- a lower bound
of the true one, which also follows zero-delay chains across entities -- and
the work includes the handlings that rollbacks undid: the predictions are an
upper bound of what more threads could give, to be read with the rollback
counts (``Runtime.stats()``).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._bind.runtime import Runtime, trace_kinds
from ..errors import ConfigError

DEFAULT_THREADS = (1, 2, 4, 16, 64)
#: Events at one simulated instant of one instance that make it a burst.
BURST_EVENTS = 64


@dataclass
class ParallelismReport:
    """What a traced one-thread run says about more threads (see the module doc).

    Attributes:
        steps: traced steps.
        windows: windows in them.
        events: events handled.
        work_ns: wall time inside windows (all windows, ns).
        critical_ns: sum over windows of the busiest entity's time (ns).
        phase_ns: act and boundary phases (ns).
        step_ns: measured ns per step on one thread (traced run included).
        barrier_ns: barrier cost per window on two threads (ns; 0 if unmeasured).
        measured_ns: measured ns per step by thread count (the runs here).
        critical_bound_share: by thread count, the share of windows whose
            critical path exceeds their work / T (more threads do not help them).
        hot_entities: the busiest (instance, entity) pairs and their share of all
            handler time.
        partition_imbalance: on two threads, the mean over windows of the busier
            worker's events over the mean (1.0: balanced), when measured.
        weighted_imbalance: the same weighted by the windows' events (the busier
            worker's events summed over windows, over the mean's): the time a
            two-thread step takes over a perfectly balanced one, from the split.
        burst_share: the share of events handled at a simulated instant that at
            least ``BURST_EVENTS`` events of their instance share (timers that
            every entity sets for the same time, and what they send).  A burst
            is a point every thread must be through before what it sends can
            be handled: its imbalance is lost whatever the schedule.
        bursts_per_step: such instants per step.
        worker_ns_per_event: on two threads, each worker's wall time in windows
            per event it handled there.  Their ratio far from 1 with balanced
            events means one core ran slower (another tenant, a lower clock):
            with one partition per thread every window waits for it.
    """

    steps: int
    windows: int
    events: int
    work_ns: float
    critical_ns: float
    phase_ns: float
    step_ns: float
    barrier_ns: float = 0.0
    measured_ns: dict[int, float] = field(default_factory=dict)
    critical_bound_share: dict[int, float] = field(default_factory=dict)
    hot_entities: list[tuple[int, int, float]] = field(default_factory=list)
    partition_imbalance: float | None = None
    weighted_imbalance: float | None = None
    burst_share: float = 0.0
    bursts_per_step: float = 0.0
    worker_ns_per_event: list[float] = field(default_factory=list)
    _work: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    _crit: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    def predict_ns(self, threads: int) -> float:
        """Estimated ns per step on ``threads`` threads."""
        t = max(1, int(threads))
        if self.steps == 0:
            return 0.0
        win = float(np.maximum(self._work / t, self._crit).sum())
        sync = self.windows * self.barrier_ns * (math.log2(t) if t > 1 else 0.0)
        return (win + self.phase_ns / t + sync) / self.steps

    def speedup(self, threads: int) -> float:
        """Predicted speedup over one thread."""
        p = self.predict_ns(threads)
        return self.predict_ns(1) / p if p > 0 else 1.0

    def ideal_speedup(self) -> float:
        """The bound with unlimited threads and free barriers: work / critical path."""
        return self.work_ns / self.critical_ns if self.critical_ns > 0 else 1.0

    def measured_speedup(self, threads: int) -> float | None:
        """Measured speedup over one thread, where both were measured here."""
        if threads in self.measured_ns and 1 in self.measured_ns:
            return self.measured_ns[1] / self.measured_ns[threads]
        return None

    def table(self, threads: Sequence[int] = DEFAULT_THREADS) -> str:
        """A plain-text report."""
        lines = [
            f"{self.steps} traced step(s), {self.windows} windows, {self.events} events; "
            f"{self.step_ns / 1e3:.1f} us per step on one thread",
            f"work in windows {self.work_ns / 1e6:.2f} ms, critical path "
            f"{self.critical_ns / 1e6:.2f} ms: at most {self.ideal_speedup():.1f}x with "
            "unlimited threads and free barriers",
        ]
        if self.barrier_ns:
            lines.append(f"barrier cost per window (measured on 2 threads): "
                         f"{self.barrier_ns / 1e3:.2f} us, assumed to grow like log2(threads)")
        if self.partition_imbalance is not None:
            lines.append(f"partition imbalance on 2 threads (busier worker / mean, mean over "
                         f"windows): {self.partition_imbalance:.2f}"
                         + (f"; weighted by events: {self.weighted_imbalance:.2f}"
                            if self.weighted_imbalance is not None else ""))
        if len(self.worker_ns_per_event) > 1:
            speeds = ", ".join(f"{x:.0f}" for x in self.worker_ns_per_event)
            ratio = max(self.worker_ns_per_event) / min(self.worker_ns_per_event)
            lines.append(f"ns per event in windows by worker on 2 threads: {speeds} (slower / "
                         f"faster {ratio:.2f}; far from 1 with balanced events: one core ran "
                         "slower)")
        if self.burst_share:
            lines.append(f"events at same-time bursts (>= {BURST_EVENTS} events at one simulated "
                         f"instant): {self.burst_share:.0%}, {self.bursts_per_step:.1f} bursts "
                         "per step (each a point every thread must pass before what it sends "
                         "is handled)")
        if self.hot_entities:
            hot = ", ".join(f"{e}@{i} {s:.1%}" for i, e, s in self.hot_entities[:5])
            lines.append(f"busiest entities (entity@instance, share of handler time): {hot}")
        lines.append("threads  predicted us/step  speedup  critical-path-bound windows  "
                     "measured here")
        for t in threads:
            m = self.measured_speedup(t)
            meas = f"{m:.2f}x ({self.measured_ns[t] / 1e3:.1f} us)" if m is not None else "-"
            share = self.critical_bound_share.get(t)
            share_s = f"{share:.0%}" if share is not None else "-"
            lines.append(f"{t:7d}  {self.predict_ns(t) / 1e3:17.1f}  {self.speedup(t):6.2f}x  "
                         f"{share_s:>27s}  {meas}")
        return "\n".join(lines)

    def as_dict(self, threads: Sequence[int] = DEFAULT_THREADS) -> dict[str, Any]:
        return {
            "steps": self.steps, "windows": self.windows, "events": self.events,
            "work_ns": self.work_ns, "critical_ns": self.critical_ns,
            "phase_ns": self.phase_ns, "step_ns": self.step_ns, "barrier_ns": self.barrier_ns,
            "ideal_speedup": self.ideal_speedup(),
            "predicted_ns": {t: self.predict_ns(t) for t in threads},
            "predicted_speedup": {t: self.speedup(t) for t in threads},
            "measured_ns": dict(self.measured_ns),
            "critical_bound_share": dict(self.critical_bound_share),
            "hot_entities": [list(h) for h in self.hot_entities],
            "partition_imbalance": self.partition_imbalance,
            "weighted_imbalance": self.weighted_imbalance,
            "burst_share": self.burst_share, "bursts_per_step": self.bursts_per_step,
            "worker_ns_per_event": list(self.worker_ns_per_event),
        }


def analyze(records: Sequence[np.ndarray], steps: int, scale: float = 1.0,
            threads: Sequence[int] = DEFAULT_THREADS) -> ParallelismReport:
    """The report of trace ``records`` of ``steps`` steps of the parallel executor
    on two or more threads (one thread runs a step as one window).  ``scale``
    converts traced time into untraced time (the measured step over the traced
    step: tracing every event costs a little)."""
    kinds = {v: k for k, v in trace_kinds().items()}
    recs = [r for r in records if len(r)]
    if not recs:
        return ParallelismReport(0, 0, 0, 0.0, 0.0, 0.0, 0.0)
    wkeys, wspan, wstart = [], [], []
    ev_key, ev_dur, ev_ent = [], [], []
    phase_ns = 0.0
    for r in recs:
        kind = r["kind"]
        win = r[kind == kinds["window"]]
        win = win[np.argsort(win["t0_ns"], kind="stable")]
        ev = r[kind == kinds["event"]]
        ph = r[(kind == kinds["act"]) | (kind == kinds["boundary"])]
        phase_ns += float((ph["t1_ns"].astype(np.int64) - ph["t0_ns"].astype(np.int64)).sum())
        w0 = win["t0_ns"].astype(np.int64)
        w1 = win["t1_ns"].astype(np.int64)
        e0 = ev["t0_ns"].astype(np.int64)
        e1 = ev["t1_ns"].astype(np.int64)
        # each event lies in the span of this worker's window that began last before it
        i = np.searchsorted(w0, e0, side="right") - 1
        ok = (i >= 0) & (e1 <= w1[np.clip(i, 0, None)]) if len(w0) else np.zeros(len(ev), bool)
        wkeys.append(win["sim_time"].astype(np.float64))
        wspan.append((w1 - w0).astype(np.float64))
        wstart.append(w0)
        ev_key.append(win["sim_time"][i[ok]].astype(np.float64))
        ev_dur.append((e1 - e0)[ok].astype(np.float64))
        ev_ent.append((ev["instance"][ok].astype(np.int64) << 32) | ev["entity"][ok])
    keys = np.concatenate(wkeys)
    span = np.concatenate(wspan)
    # a window is one simulated start time, whichever workers took part in it
    uk, winv = np.unique(keys, return_inverse=True)
    nwin = len(uk)
    spans = np.bincount(winv, weights=span, minlength=nwin)
    ekey = np.concatenate(ev_key)
    edur = np.concatenate(ev_dur)
    eent = np.concatenate(ev_ent)
    if len(edur):
        # a thread descheduled inside a handler makes one event look long: such
        # outliers are clipped (the report is about work, not about the OS)
        edur = np.minimum(edur, 50.0 * max(1.0, float(np.median(edur))))
    ewin = np.searchsorted(uk, ekey)
    handler = np.bincount(ewin, weights=edur, minlength=nwin)
    # the runtime's own per-event work (queues, outboxes) in proportion to the
    # handlers', from the typical window (robust to a descheduled thread)
    busy = handler > 0
    overhead = float(np.median(spans[busy] / handler[busy])) if busy.any() else 1.0
    work = np.where(busy, handler * overhead, spans)
    crit_h = np.zeros(nwin)
    if len(edur):
        # handler time per (window, entity), then the busiest entity of each window
        pair, pinv = np.unique(np.stack([ewin, eent]), axis=1, return_inverse=True)
        per = np.bincount(pinv.reshape(-1), weights=edur)
        np.maximum.at(crit_h, pair[0], per)
    crit = np.minimum(crit_h * overhead, work)
    rep = ParallelismReport(
        steps=int(steps), windows=int(nwin), events=int(len(edur)),
        work_ns=float(work.sum() * scale), critical_ns=float(crit.sum() * scale),
        phase_ns=phase_ns * scale, step_ns=0.0, _work=work * scale, _crit=crit * scale)
    rep.critical_bound_share = {
        int(t): float(np.mean(crit > work / t)) if nwin else 0.0 for t in threads}
    if len(edur):
        ents, inv = np.unique(eent, return_inverse=True)
        sums = np.bincount(inv.reshape(-1), weights=edur)
        total = float(sums.sum()) or 1.0
        rep.hot_entities = [(int(ents[j] >> 32), int(ents[j] & 0xFFFFFFFF),
                             float(sums[j] / total)) for j in np.argsort(sums)[::-1][:8]]
    return rep


def _of_kind(records: Sequence[np.ndarray], kind: str) -> list[np.ndarray]:
    """Each worker's records of trace kind ``kind``, in worker order (workers
    with none left out)."""
    code = {v: k for k, v in trace_kinds().items()}[kind]
    return [x for x in (r[r["kind"] == code] for r in records if len(r)) if len(x)]


def imbalance(records: Sequence[np.ndarray], weighted: bool = False) -> float | None:
    """Mean over windows of (events of the busiest worker / mean events per
    worker), from the window records of a multi-thread trace (a worker without
    a record for a window handled none of its events).  ``weighted``: the
    busiest worker's events summed over windows over the mean's (windows count
    by their events)."""
    per_worker = _of_kind(records, "window")
    if len(per_worker) < 2:
        return None
    keys = np.unique(np.concatenate([w["sim_time"] for w in per_worker]))
    counts = np.zeros((len(per_worker), len(keys)))
    for i, w in enumerate(per_worker):
        np.add.at(counts[i], np.searchsorted(keys, w["sim_time"]), w["count"])
    mean = counts.mean(axis=0)
    ok = mean > 0
    if not ok.any():
        return None
    if weighted:
        return float(counts.max(axis=0).sum() / mean.sum())
    return float(np.mean(counts.max(axis=0)[ok] / mean[ok]))


def worker_ns_per_event(records: Sequence[np.ndarray]) -> list[float]:
    """Each worker's wall time in windows per event it handled there (workers
    that handled none left out), from the window records of a trace."""
    out = []
    for win in _of_kind(records, "window"):
        n = int(win["count"].sum())
        if n:
            span = (win["t1_ns"].astype(np.int64) - win["t0_ns"].astype(np.int64)).sum()
            out.append(float(span) / n)
    return out


def bursts(records: Sequence[np.ndarray], steps: int,
           min_events: int = BURST_EVENTS) -> tuple[float, float]:
    """(share of events at a simulated instant that at least ``min_events``
    events of their instance share, such instants per step), from a trace's
    event records."""
    ev = _of_kind(records, "event")
    if not ev:
        return 0.0, 0.0
    inst = np.concatenate([e["instance"] for e in ev]).astype(np.float64)
    t = np.concatenate([e["sim_time"] for e in ev]).astype(np.float64)
    _, inv, counts = np.unique(np.stack([inst, t]), axis=1, return_inverse=True,
                               return_counts=True)
    big = counts >= min_events
    share = float(big[inv.reshape(-1)].mean())
    return share, float(big.sum()) / max(1, int(steps))


def _timed_steps(rt: Runtime, steps: int, actions: Any) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(steps):
        if actions is not None:
            rt.actions[:] = actions
        rt.step()
    return (time.perf_counter_ns() - t0) / steps


def measure(env: str, config: Mapping[str, Any] | None = None, steps: int = 10,
            num_envs: int = 1, seed: int = 0, warmup: int = 5, rounds: int = 5,
            threads: Sequence[int] = DEFAULT_THREADS, capacity: int = 1 << 20,
            oversubscribe: bool = False) -> ParallelismReport:
    """Run ``env`` (a registered env or a model folder) and report its parallelism.

    Two runtimes step the same episode: the parallel executor on one thread and
    on two (lookahead 0: the optimistic executor, see the module doc).  Each
    first takes ``warmup`` steps, then ``rounds`` blocks of ``steps`` timed
    steps alternate between them (medians); then one block of
    ``steps`` runs traced on two threads: the windows, their work and their
    critical paths.  The checks: the work the trace adds up to, against the
    one-thread run (``predict_ns(1)`` vs ``measured_ns[1]``), and the ideal
    two-thread step against the measured one, whose difference, per window,
    is the barrier cost the predictions carry (growing like log2(threads)).
    Actions are zeros (the env's first action).
    """
    from ..registry import native_model

    cfg = dict(config or {})
    cfg.pop("max_cycles", None)
    model = native_model(env)
    _, sz = model.describe(cfg)
    executor = "parallel" if sz.lookahead > 0.0 else "optimistic"
    rts = {t: Runtime(model, cfg, num_envs, executor, t, max_cycles=0,
                      oversubscribe=oversubscribe) for t in (1, 2)}
    try:
        for rt in rts.values():
            rt.reset([seed + i for i in range(num_envs)])
            rt.actions[:] = 0
            _timed_steps(rt, warmup, None)
        samples: dict[int, list[float]] = {1: [], 2: []}
        for r in range(rounds):
            for t in ((1, 2) if r % 2 == 0 else (2, 1)):
                samples[t].append(_timed_steps(rts[t], steps, None))
        measured = {t: statistics.median(v) for t, v in samples.items()}
        rt2 = rts[2]
        rt2.trace(capacity)
        traced_ns = _timed_steps(rt2, steps, None)
        records, dropped = rt2.trace_records(active_only=True), rt2.trace_dropped()
        rt2.trace(0)
    finally:
        for rt in rts.values():
            rt.close()
    if dropped:
        raise ConfigError(f"{dropped} trace records were dropped: raise capacity "
                         f"(now {capacity}) or take fewer steps")
    rep = analyze(records, steps, measured[2] / traced_ns, threads)
    rep.step_ns = measured[1]
    rep.measured_ns = measured
    rep.partition_imbalance = imbalance(records)
    rep.weighted_imbalance = imbalance(records, weighted=True)
    rep.burst_share, rep.bursts_per_step = bursts(records, steps)
    rep.worker_ns_per_event = worker_ns_per_event(records)
    # the barrier cost: what two threads took beyond the ideal, per window
    ideal2 = rep.predict_ns(2)
    rep.barrier_ns = max(0.0, (measured[2] - ideal2) * steps / max(1, rep.windows))
    return rep


__all__ = ["ParallelismReport", "analyze", "bursts", "imbalance", "measure",
           "worker_ns_per_event", "BURST_EVENTS", "DEFAULT_THREADS"]
