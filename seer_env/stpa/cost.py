"""STPA's cost model: what a step would cost where, from the preflight's measurements.

Pure and deterministic: the value types ([`Candidate`][seer_env.stpa.Candidate],
`Features`, `TraceSummary`, `Load`, `Decision`)
and the functions that turn measurements into a choice -- which
configurations are worth considering (`candidate_set`), what one traced
step says about parallel work (`summarize_trace`), a predicted step time
per candidate ([`predict_step_ns`][seer_env.stpa.predict_step_ns]) and which candidates to time
(`probe_plan`), the choice from measured step times (`select`),
and when the workload drifted enough to look again ([`regime`][seer_env.stpa.regime],
`drift`, `eliminated`, `close_call`, `neighbours`).
Nothing here runs a step: the controller attached to a runtime
([`seer_env.stpa.Stpa`][seer_env.stpa.Stpa]) measures and calls these; tests call them
directly.  [`seer_env.stpa`][seer_env.stpa] re-exports the public names.

The bottom of the `seer_env.stpa` package (``[tool.importlinter]`` in
``pyproject.toml``: cost, then cache, then controller): it imports only the
bindings' `opt_speculates`.  ``seer_env.stpa_cost``, its old path, re-exports it.
"""

from __future__ import annotations

import glob
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._bind.runtime import opt_speculates

_KIND_EVENT, _KIND_WINDOW, _KIND_BARRIER = 0, 2, 4


# -- value types ----------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One configuration: ``executor`` ("serial", "parallel" or "optimistic") and
    ``threads``."""

    executor: str
    threads: int

    @property
    def label(self) -> str:
        return "serial" if self.executor == "serial" else f"{self.executor}-{self.threads}"

    @staticmethod
    def parse(label: str) -> Candidate:
        """``"serial"``, ``"parallel-N"`` or ``"optimistic-N"`` back to a Candidate."""
        if label == "serial":
            return SERIAL
        for ex in ("parallel", "optimistic"):
            if label.startswith(ex + "-"):
                return Candidate(ex, int(label.split("-", 1)[1]))
        raise ValueError(f"not a candidate label: {label!r}")


SERIAL = Candidate("serial", 1)


@dataclass(frozen=True)
class Features:
    """Static and measured features of a workload (see the module docstring)."""

    model: str
    num_entities: int
    num_agents: int
    num_instances: int
    lookahead: float
    step_duration: float
    entity_size: int
    cores: int
    cache_bytes: Mapping[str, int]
    events_per_step: float
    windows_per_step: float
    alive_agents: int
    working_set_bytes: int
    #: the thread budget in words when it, not the CPUs, sets ``cores``
    #: (``seer_env.budget.ThreadBudget.describe``); "" otherwise
    budget: str = ""

    @property
    def events_per_window(self) -> float:
        return self.events_per_step / max(1.0, self.windows_per_step)

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["cache_bytes"] = dict(self.cache_bytes)
        d["events_per_window"] = self.events_per_window
        return d


@dataclass(frozen=True)
class TraceSummary:
    """What one traced step says about parallel work (per window, per worker).

    Attributes:
        threads: pool size of the traced step.
        windows: windows in the step.
        events: events handled.
        events_per_window: mean events per window (all workers together).
        handler_ns: median duration of one event record (the handler plus the
            clock reads of tracing).
        window_ns: mean time a worker spent working in one window.
        barrier_ns: synchronization cost per window: the smallest per-worker
            mean barrier wait (the least loaded waits for imbalance, not only
            for synchronization, so the minimum is the cleaner estimate).
        idle_fraction: barrier wait / (work + barrier wait), all workers.
        imbalance: most events on one worker / mean events per worker.
    """

    threads: int
    windows: int
    events: int
    events_per_window: float
    handler_ns: float
    window_ns: float
    barrier_ns: float
    idle_fraction: float
    imbalance: float

    @property
    def empty(self) -> bool:
        """The traced step handled no event: the trace predicts nothing (every
        prediction from it would be a pool's synchronisation alone)."""
        return self.events <= 0 and self.events_per_window <= 0

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Load:
    """The load the drift check compares: events per step and live agents."""

    events_per_step: float
    alive_agents: int


@dataclass(frozen=True)
class Decision:
    """A choice and its evidence.

    Attributes:
        candidate: the chosen configuration.
        reason: one line saying why.
        medians_ns: median step time (ns) of every timed candidate, by label.
        predicted_ns: predicted step time (ns) by label (empty without a trace).
        trigger: what started the probe ("preflight" or the drift reason).
    """

    candidate: Candidate
    reason: str
    medians_ns: Mapping[str, float]
    predicted_ns: Mapping[str, float]
    trigger: str = "preflight"

    @property
    def threads(self) -> int:
        return self.candidate.threads

    @property
    def executor(self) -> str:
        return self.candidate.executor

    def as_dict(self) -> dict[str, Any]:
        return {
            "choice": self.candidate.label,
            "executor": self.executor,
            "threads": self.threads,
            "reason": self.reason,
            "medians_ns": dict(self.medians_ns),
            "predicted_ns": dict(self.predicted_ns),
            "trigger": self.trigger,
        }


# -- pure functions (the selection logic; tests call them directly) -------------


def cache_sizes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> dict[str, int]:
    """Cache sizes in bytes from sysfs (``{"L1d": .., "L2": .., "L3": ..}``; {} if absent)."""
    out: dict[str, int] = {}
    for d in sorted(glob.glob(f"{root}/index*")):
        try:
            with open(f"{d}/level") as f:
                level = f.read().strip()
            with open(f"{d}/type") as f:
                kind = f.read().strip()
            with open(f"{d}/size") as f:
                size = f.read().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        mult = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(size[-1:], 1)
        digits = size.rstrip("KMG")
        if not digits.isdigit():
            continue
        name = f"L{level}" + ("d" if kind == "Data" else "")
        out[name] = int(digits) * mult
    return out


def speculates(features: Features) -> bool:
    """Would the optimistic executor speculate on this workload (rather than run
    the conservative executor's windows)?  Lookahead 0, or more than
    ``SEER_OPT_WINDOWS_MAX`` windows of width L per step (the runtime's rule,
    ``seer_runtime.h``)."""
    return opt_speculates(features.lookahead, features.step_duration)


def candidate_set(features: Features, max_threads: int | None = None) -> list[Candidate]:
    """The configurations worth considering, in preference order (fewest threads first).

    P = min(cores, max_threads, entities x instances) (a pool larger than the
    number of entities has idle workers by construction; more threads than cores
    oversubscribe).  The serial executor always; with lookahead > 0 the parallel
    executor with 1..P threads; where the optimistic executor would speculate
    (`speculates`: lookahead 0, or a lookahead so small that windows
    degenerate), the optimistic executor with 2..P threads.  With B instances on
    p <= B threads the optimistic executor runs whole instances per thread, like
    the parallel one: with lookahead > 0 it is then left out (the same run).
    """
    p_max = max(1, min(features.cores, max_threads or features.cores,
                       features.num_entities * features.num_instances))
    out = [SERIAL]
    if features.lookahead > 0.0:
        out += [Candidate("parallel", p) for p in range(1, p_max + 1)]
    if speculates(features):
        out += [Candidate("optimistic", p) for p in range(2, p_max + 1)
                if not (features.lookahead > 0.0 and p <= features.num_instances)]
    return sorted(out, key=_pref)


def first_candidate(features_lookahead: float) -> Candidate:
    """Where the preflight's first (features) steps run: the serial executor,
    whatever the lookahead.  Its counters give events per step, all a step on
    one thread can say (the parallel executor on one thread takes each
    instance whole, one 'window' a step: the windows per step come from the
    traced pool), it has the least machinery on one thread, and the env starts
    on it, so a tiny env's run pays no second executor's first steps."""
    del features_lookahead  # kept for callers: any lookahead starts serially
    return SERIAL


def _median(x: np.ndarray) -> float:
    """Median by partition.  Not ``np.median``: its first call in a process
    imports a NumPy submodule lazily (about 10 ms), which landed in the first
    preflight of every process."""
    n = len(x)
    part = np.partition(x, [(n - 1) // 2, n // 2])
    return float(0.5 * (part[(n - 1) // 2] + part[n // 2]))


def summarize_trace(records: Sequence[np.ndarray]) -> TraceSummary:
    """Condense per-worker trace records (``Runtime.trace_records()``) of one step."""
    threads = len(records)
    windows = 0
    events = 0
    work_ns = 0.0
    wait_ns = 0.0
    per_worker_events = []
    per_worker_wait_per_window = []
    durations = []
    window_events = 0
    for k, r in enumerate(records):
        kind = r["kind"]
        win = r[kind == _KIND_WINDOW]
        ev = r[kind == _KIND_EVENT]
        bar = r[kind == _KIND_BARRIER]
        if k == 0:
            windows = int(len(win))
        window_events += int(win["count"].sum()) if len(win) else 0
        events += int(len(ev))
        per_worker_events.append(int(win["count"].sum()) if len(win) else int(len(ev)))
        if len(ev):
            durations.append((ev["t1_ns"] - ev["t0_ns"]).astype(np.float64))
        w_ns = float((win["t1_ns"] - win["t0_ns"]).sum()) if len(win) else 0.0
        b_ns = float((bar["t1_ns"] - bar["t0_ns"]).sum()) if len(bar) else 0.0
        work_ns += w_ns
        wait_ns += b_ns
        per_worker_wait_per_window.append(b_ns / max(1, len(win)))
    # a record per event: their median; else (traced without them) a phase's
    # work over its events, which counts the queue's share of each event too
    handler_ns = (_median(np.concatenate(durations)) if durations
                  else work_ns / window_events if window_events else 0.0)
    mean_ev = sum(per_worker_events) / max(1, threads)
    return TraceSummary(
        threads=threads,
        windows=windows,
        events=events,
        events_per_window=window_events / max(1, windows),
        handler_ns=handler_ns,
        window_ns=work_ns / max(1, windows * threads),
        barrier_ns=min(per_worker_wait_per_window) if threads > 1 else 0.0,
        idle_fraction=wait_ns / (work_ns + wait_ns) if work_ns + wait_ns > 0 else 0.0,
        imbalance=max(per_worker_events) / mean_ev if mean_ev > 0 else 1.0,
    )


def predict_step_ns(features: Features, summary: TraceSummary, cand: Candidate) -> float:
    """Predicted event-loop time of one step on ``cand`` (ns).

    ``work / min(p, events per window) + windows x barrier(p)``, where the work
    is events per step x the traced per-event cost and the barrier cost per
    window grows linearly with the extra threads (measured at the traced pool
    size).  A crude model: it only decides which pools are worth timing.
    """
    work = features.events_per_step * max(summary.handler_ns, 1.0)
    p = cand.threads
    if cand.executor == "serial" or p == 1:
        return work
    if cand.executor == "optimistic":
        # no windows; speculation's logs and rollbacks cost about a tenth more
        return 1.1 * work / p
    par = max(1.0, summary.events_per_window)
    per_extra = summary.barrier_ns / max(1, summary.threads - 1)
    # the windows of the traced pool's step (one-thread counters see one a step)
    windows = summary.windows if summary.windows > 0 else features.windows_per_step
    return work / min(float(p), par) + windows * per_extra * (p - 1)


def probe_plan(features: Features, summary: TraceSummary | None,
               candidates: Sequence[Candidate], prune: float = 1.5) -> list[Candidate]:
    """The candidates to time: the one-thread candidates, and each larger pool
    whose predicted step time is within ``prune`` x the best prediction.

    Where a pool is predicted faster than ``prune`` x one thread, the serial
    executor is not timed either: the parallel executor on one thread (reached
    from a pool by a resize) is the one-thread baseline, and a switch between
    executors moves every pending event (10 ms and a slow step after it on PCS
    64x64, several steps' worth, twice a visit) to learn a few percent of a
    choice that loses anyway.  An empty trace (`TraceSummary.empty`) prunes
    nothing."""
    if summary is None or summary.empty:
        return list(candidates)
    pred = {c: predict_step_ns(features, summary, c) for c in candidates}
    best = min(pred.values())
    plan = [c for c in candidates if c.threads == 1 or pred[c] <= prune * best]
    one = Candidate("parallel", 1)
    if SERIAL in plan and one in plan and any(
            c.threads > 1 and pred[c] * prune <= pred[SERIAL] for c in plan):
        plan.remove(SERIAL)
    return plan


def select(timings: Mapping[Candidate, Sequence[float]], features: Features,
           summary: TraceSummary | None = None, margin: float = 0.02,
           trigger: str = "preflight", incumbent: Candidate | None = None,
           hysteresis: float = 0.0, serial_untimed: bool = False) -> Decision:
    """Choose from measured times per step (ns, several samples per candidate):
    the user's iterations as the probe times them, a step and the caller's own
    work before it (`seer_env.stpa.probe`), so a pool that slows the caller's
    computation loses by what it costs there.

    The fastest median wins, except that a candidate with fewer threads whose
    median is within ``margin`` of the fastest is preferred, and that an
    ``incumbent`` (the running choice, on a confirmation re-probe) is kept
    unless the winner is faster by more than ``hysteresis`` (a single noisy
    re-probe must not flip a good choice).  On one thread the choice is the
    serial executor where it was timed (`choosable`: the parallel or
    optimistic executor on one thread runs the same events through the
    pool's phases); ``serial_untimed``: the serial executor can run but was
    not timed (the probe pruned it for the pools, which company then ruled
    out), so a one-thread choice is the serial executor, untimed.  Without any timing
    the prediction decides (without a trace: the serial executor for lookahead
    0, else the parallel executor on one thread).  Deterministic: the same
    inputs give the same Decision.
    """
    cands = candidate_set(features)
    predicted: dict[str, float] = {}
    if summary is not None and not summary.empty:
        predicted = {c.label: predict_step_ns(features, summary, c) for c in cands}
    medians = {c: float(statistics.median(v)) for c, v in timings.items() if len(v)}
    medians_by_label = {c.label: m for c, m in sorted(medians.items(),
                                                      key=lambda x: _pref(x[0]))}
    if not medians:
        if predicted:
            choice = min(cands, key=lambda c: (predicted[c.label], _pref(c)))
            why = "predicted fastest from the traced step (nothing was timed)"
        else:
            choice = cands[0] if len(cands) == 1 else first_candidate(features.lookahead)
            why = "the default (nothing was timed or traced)"
        return Decision(choice, f"{in_words(choice).capitalize()}: {why}.", {}, predicted,
                        trigger)
    pool = choosable(medians)
    best_c = min(pool, key=lambda c: (pool[c], _pref(c)))
    best = pool[best_c]
    ok = [c for c in pool if pool[c] <= best * (1.0 + margin)]
    choice = min(ok, key=lambda c: (c.threads, pool[c], _pref(c)))
    # the same events without the pool's phases, untimed: the probe timed
    # the pools in its place (PCS 64x64 beside another env process ran 3.5%
    # slower on parallel-1, the choice within its share of the cores)
    serial_unseen = (serial_untimed and choice.threads == 1 and choice != SERIAL
                     and SERIAL not in medians and SERIAL in cands)
    kept = False
    if (not serial_unseen and incumbent is not None and incumbent in pool
            and choice != incumbent
            and pool[choice] > pool[incumbent] * (1.0 - hysteresis)):
        choice, kept = incumbent, True
    if serial_unseen:
        one, choice = choice, SERIAL
        why = (f"{in_words(choice).capitalize()}, untimed: {in_words(one)} took "
               f"{choice_ns(medians[one])} an iteration (median; a step and the caller's "
               "work before it), and on one thread the serial executor runs the same events "
               "without the pool's phases")
    else:
        why = (f"{in_words(choice).capitalize()}: its iterations took "
               f"{choice_ns(medians[choice])} (median; a step and the caller's work before it)")
        if choice == SERIAL and pool[SERIAL] < medians[SERIAL]:
            one = min((c for c in medians if c.threads == 1 and c != SERIAL),
                      key=lambda c: medians[c])
            why += (f", taken as {choice_ns(pool[SERIAL])}: {in_words(one)} ran the same "
                    "events through the pool's phases in that time (the one-thread choice is "
                    "the serial executor, judged by the better sample)")
        if kept:
            why += f"; kept, as no other choice was faster by more than {hysteresis:.0%}"
        elif choice != best_c:
            why += (f", within {margin:.0%} of the fastest ({in_words(best_c)}, "
                    f"{choice_ns(best)}) with fewer threads")
        elif len(pool) > 1:
            runner = min((c for c in pool if c != choice), key=lambda c: pool[c])
            why += (f", {pool[runner] / best:.2f}x faster than the next best "
                    f"({in_words(runner)})")
    if SERIAL in pool and choice != SERIAL:
        why += f"; {pool[SERIAL] / medians[choice]:.2f}x the serial executor's rate"
    # events per window as the traced pool ran them (a one-thread step of the
    # parallel executor runs each instance whole: one 'window' a step)
    traced = summary is not None and not summary.empty
    ev_w = summary.events_per_window if summary is not None and traced \
        else features.events_per_window
    why += (f". The workload: {features.events_per_step:.0f} events per step, "
            f"{ev_w:.1f} per window")
    if summary is not None and traced and summary.threads > 1:
        why += (f"; on {summary.threads} threads the barriers took "
                f"{summary.barrier_ns / 1e3:.1f} us per window and the workers were idle "
                f"{summary.idle_fraction:.0%} of the time")
    # the limit compares with the iteration the choice was judged by (the
    # serial executor's: the best one-thread sample, `choosable`)
    judged = {**medians, **pool}
    why += f". Limit: {limiting_factor(features, summary, judged, choice, predicted)}."
    return Decision(choice, why, medians_by_label, predicted, trigger)


def limiting_factor(features: Features, summary: TraceSummary | None,
                    medians: Mapping[Candidate, float], choice: Candidate,
                    predicted: Mapping[str, float] | None = None) -> str:
    """What keeps more threads from paying, in words: the machine's cores, too
    few events per window for the barriers, idle (unevenly loaded) workers, a
    pool that ran slower than its trace predicts (a busy or slower core), or
    speculation rolled back.  A pure function of the probe's evidence; the
    Decision's reason ends with it (``"... Limit: barriers: a window holds 3.1
    events ..."``).
    """
    p_max = max(c.threads for c in candidate_set(features))
    if features.budget and choice.threads >= p_max and p_max == features.cores:
        return (f"the thread budget: {features.budget} (seer_env.budget; more threads "
                "would take cores the budget leaves to others)")
    if choice.threads >= p_max and p_max == features.cores:
        return (f"the cores: all {features.cores} usable core(s) run it "
                "(more would only wait for each other)")
    if p_max < 2:
        return ("nothing to run in parallel: one core, one entity or lookahead 0 "
                "without the optimistic executor")
    bigger = sorted((c for c in medians if c.threads > choice.threads),
                    key=lambda c: medians[c])
    got = own_or_stand_in({c.label: m for c, m in medians.items()}, choice)
    base = got[1] if got is not None else None
    if summary is None or summary.empty:
        why = ("no trace to say why" if summary is None else
               "the traced step had no events, so its trace says nothing")
        if bigger and base:
            return (f"measured: {bigger[0].label} took "
                    f"{medians[bigger[0]] / base:.2f}x as long per step "
                    f"({why})")
        return f"the pools with more threads were not timed ({why})"
    per_window_ns = summary.handler_ns * summary.events_per_window / max(1, summary.threads)
    if summary.windows > 1 and summary.barrier_ns >= per_window_ns:
        return (f"barriers: a window holds {summary.events_per_window:.1f} events "
                f"({per_window_ns / 1e3:.1f} us of handlers per thread on "
                f"{summary.threads} threads), less than its synchronisation "
                f"({summary.barrier_ns / 1e3:.1f} us)")
    if summary.idle_fraction > 0.3:
        return (f"idle workers: they waited {summary.idle_fraction:.0%} of the traced step "
                f"(the busiest had {summary.imbalance:.2f}x the mean's events)")
    if bigger and predicted and bigger[0].label in predicted:
        ratio = medians[bigger[0]] / max(1.0, predicted[bigger[0].label])
        if ratio > 1.5:
            return (f"a slower or busy core: {bigger[0].label} ran {ratio:.1f}x slower than "
                    "its trace predicts (another process, or uneven cores)")
    if bigger and base and bigger[0].executor == "optimistic":
        return (f"speculation: {bigger[0].label} took "
                f"{medians[bigger[0]] / base:.2f}x as long per step "
                "(rollbacks and logging cost more than the second thread gave)")
    if bigger and base:
        return (f"measured: {bigger[0].label} took "
                f"{medians[bigger[0]] / base:.2f}x as long per step")
    if bigger:
        return f"measured: {bigger[0].label} was timed, {in_words(choice)} was not"
    return "the pools with more threads were predicted slower and not timed"


def in_words(c: Candidate) -> str:
    """A candidate in words: "the parallel executor on 2 threads"."""
    if c.executor == "serial":
        return "the serial executor"
    return f"the {c.executor} executor on {c.threads} thread{'s' if c.threads > 1 else ''}"


def choice_ns(ns: float) -> str:
    """A step time for humans."""
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} us"


def _pref(c: Candidate) -> tuple[int, int]:
    return (c.threads, {"serial": 0, "parallel": 1}.get(c.executor, 2))


def regime(load: Load) -> int:
    """The load regime of ``load``: events per step in factor-2 buckets
    (``round(log2(events per step))``).  STPA remembers its choice per regime
    and switches back at once when a regime returns (a new episode after a
    ``reset()``, a swarm that thins out and fills up again)."""
    return int(round(math.log2(max(1.0, load.events_per_step))))


def drift(baseline: Load, now: Load, factor: float = 2.0, alive_drop: float = 0.5
          ) -> str | None:
    """Why the workload changed enough to re-probe, or None.

    Events per step moved by ``factor`` either way (from a floor of one event per
    step), or fewer than ``alive_drop`` x the baseline's agents are alive.
    """
    a, b = max(1.0, baseline.events_per_step), max(1.0, now.events_per_step)
    if b >= a * factor or b <= a / factor:
        return (f"events per step changed {baseline.events_per_step:.0f} -> "
                f"{now.events_per_step:.0f}")
    if baseline.alive_agents > 0 and now.alive_agents < alive_drop * baseline.alive_agents:
        return f"live agents dropped {baseline.alive_agents} -> {now.alive_agents}"
    return None


def eliminated(timings: Mapping[Candidate, Sequence[float]], drop: float = 1.5
               ) -> set[Candidate]:
    """Candidates whose median is above ``drop`` x the best median so far: they cannot
    be chosen (``drop`` > 1 + margin), so the rest of their visits is skipped."""
    med = {c: float(statistics.median(v)) for c, v in timings.items() if len(v)}
    if len(med) < 2:
        return set()
    best = min(med.values())
    return {c for c, m in med.items() if m > drop * best}


def close_call(timings: Mapping[Candidate, Sequence[float]], tie: float = 0.08,
               recent: int = 0, medians: Mapping[Candidate, float] | None = None
               ) -> tuple[Candidate, Candidate] | None:
    """The two fastest candidates when their medians are within ``tie`` of each
    other (they get extra rounds), else None.  ``medians``: what each
    candidate is judged by, where not its samples' median (`choosable`'s:
    the serial executor at the best one-thread candidate's).

    With ``recent`` (the timed steps of a visit): also the fastest and a
    candidate whose last ``recent`` samples, at their median, ran faster than
    the fastest's median -- a candidate still warming up (a pool whose threads
    and records settle over its first steps: on a 2-core VM, parallel-2's
    steps on PCS 64x64 went 5.6, 3.1, 2.5, 2.0, 1.9 and 1.8 ms over its first
    three visits, against the serial executor's flat 2.2, and its median lost
    by 5% where it runs 1.45x faster), or the host changed under the probe::

        close_call({serial: [2.2e6] * 6,
                    p2: [5.6e6, 3.1e6, 2.5e6, 2.0e6, 1.9e6, 1.8e6]}, recent=2)
        # (serial, p2): more rounds of both
    """
    if medians is None:
        medians = {c: float(statistics.median(v)) for c, v in timings.items() if len(v)}
    med = sorted(((float(m), _pref(c), c) for c, m in medians.items()),
                 key=lambda x: (x[0], x[1]))
    if len(med) < 2:
        return None
    if med[1][0] <= med[0][0] * (1.0 + tie):
        return med[0][2], med[1][2]
    lead_ns, _, lead = med[0]
    late = sorted((float(statistics.median(timings[c][-recent:])), _pref(c), c)
                  for c in medians if recent and c != lead and len(timings.get(c, ())) > recent)
    if late and late[0][0] < lead_ns:
        return lead, late[0][2]
    return None


def own_or_stand_in(medians_ns: Mapping[str, float], c: Candidate
                    ) -> tuple[str, float] | None:
    """``c``'s median iteration (by label) or, for the serial executor chosen
    untimed (`select`'s ``serial_untimed``), the fastest one-thread
    candidate's, timed in its place (the same events, through the pool's
    phases): the label and the median; None where neither was timed."""
    if c.label in medians_ns:
        return c.label, medians_ns[c.label]
    ones = {k: v for k, v in medians_ns.items() if Candidate.parse(k).threads == 1}
    if c != SERIAL or not ones:
        return None
    k = min(ones, key=lambda x: ones[x])
    return k, ones[k]


def choosable(medians: Mapping[Candidate, float]) -> dict[Candidate, float]:
    """The timed candidates a choice is made from, with the iteration each is
    judged by: every one as timed, except that where the serial executor was
    timed the one-thread candidates count as one, the serial executor, at the
    best of their medians.  The parallel or optimistic executor on one thread
    runs the same events through the pool's phases (3-5% slower on PCS 64x64
    alone), so where one timed faster the serial executor's sample was the
    noisy one (a burner's slice; its free records scattered by the pools'
    visits before it: 4 env processes on 2 cores timed parallel-1 9% ahead,
    4 envs in one process 37%), and a run that kept parallel-1 lost those
    3-5% for good.  They are timed all the same: their iteration scales the
    pools' predictions."""
    if SERIAL not in medians:
        return dict(medians)
    out = {c: m for c, m in medians.items() if c.threads > 1}
    out[SERIAL] = min(m for c, m in medians.items() if c.threads == 1)
    return out


def neighbours(choice: Candidate, candidates: Sequence[Candidate]) -> list[Candidate]:
    """The cheap re-probe set: one-thread candidates, the choice and the pools
    next to it; for the serial executor the smallest pool (the parallel
    executor's where it runs the model): a serial choice made on a lighter
    load, or in company, must see a pool again once the load has grown or
    the company left (its re-probes timed the one-thread candidates alone,
    and the run stayed on the serial executor for good)."""
    keep = {SERIAL, Candidate("parallel", 1), choice}
    if choice.executor != "serial":
        keep |= {Candidate(choice.executor, choice.threads - 1),
                 Candidate(choice.executor, choice.threads + 1)}
    else:
        pools = [c for c in candidates if c.threads > 1]
        if pools:
            keep.add(min(pools, key=lambda c: (c.threads, c.executor != "parallel")))
    return [c for c in candidates if c in keep]


__all__ = [
    "Candidate",
    "Decision",
    "Features",
    "Load",
    "SERIAL",
    "TraceSummary",
    "cache_sizes",
    "candidate_set",
    "choice_ns",
    "close_call",
    "drift",
    "eliminated",
    "first_candidate",
    "in_words",
    "limiting_factor",
    "neighbours",
    "choosable",
    "own_or_stand_in",
    "predict_step_ns",
    "probe_plan",
    "regime",
    "select",
    "speculates",
    "summarize_trace",
]
