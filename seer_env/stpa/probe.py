"""STPA's probe: the steps that measure the candidates before a choice.

A probe (`Probe`) is the preflight's, a confirmation's or a drift re-probe's.
It goes through stages, one real step of the run at a time:

1. ``"features"`` (the preflight's first two steps, on one thread:
   `Prober.features_step`): the second gives events and windows per step and a
   step's length, from which the candidates and the plan follow
   (`Prober.plan_after_features`: tiny steps are decided at once, the pools'
   probe waits until the run can pay for it, a traced step comes first where
   there is more than one thread to consider);
2. ``"trace"`` (a warm-up step and one traced step on the largest pool; a
   second where the first took over ``drop_traced`` times the first step, a
   moment of the host's; the pool is dropped where both did);
3. ``"timing"`` (the planned candidates visited forth and back, a warm-up step
   after each switch and ``k`` timed steps a visit: `Prober.plan_timing`;
   after each visit the hopeless candidates are dropped, and a close call
   gets extra rounds of the two fastest if the run can pay for them).

`Prober` holds the probe in progress and what probing has measured (the
features, the traced step's summary, what switches and confirmations cost, the
probe steps and their time), and runs the steps (`Prober.visit_step`).  The
pools' probe put off until the run can pay for it is here too
(`Prober.deferred_check`).

The prober keeps no reference to the controller that runs it: each call that
needs the runtime, the controller's options, a switch or a decision gets the
controller as ``host``, typed by `ProbeHost` (a `typing.Protocol`: the
controller, `seer_env.stpa.controller`, is above this module and never
imported by it).  The controller's step hook, for one:

```python
pr = controller.prober.probe
if pr.stage == "features":
    controller.prober.features_step(controller, pr, mask_ptr)
else:
    controller.prober.visit_step(controller, pr, mask_ptr)
```

In the layers of `seer_env.stpa`: below the monitor (`seer_env.stpa.monitor`),
which starts re-probes, and the decisions (`seer_env.stpa.decision`), above
the decision cache and the cost model (`seer_env.stpa.cost`, whose pure
functions plan and prune).
"""

from __future__ import annotations

import itertools
import logging
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .._bind.runtime import EXECUTORS
from ..errors import SeerError
from .company import CpuSample, with_processes, with_threads
from .cost import (
    SERIAL,
    Candidate,
    Decision,
    Features,
    TraceSummary,
    candidate_set,
    choosable,
    close_call,
    eliminated,
    first_candidate,
    in_words,
    probe_plan,
    summarize_trace,
)

log = logging.getLogger("seer_env.stpa")

#: A pool that wins the timing stage by less than this over parallel-1, with
#: the serial executor pruned by the trace, has the serial executor timed too
#: (`Prober._time_pruned_serial`): parallel-1 stands in for one thread there,
#: and the serial executor ran faster than it (PCS 64x64, alone, two envs
#: each in rotated blocks: parallel-1 1.01-1.14x the serial executor's step
#: over five runs, 1.05 their median; Aircraft, PHOLD and Hunt within 1% or
#: slower), so a pool with a lead under this may trail it (a preflight in a
#: torch training loop chose parallel-2 at 1.07x parallel-1, and ran at 0.93x
#: the serial executor); a lead over it is the pool's, the runs' spread aside.
SERIAL_RECHECK = 1.10

#: probe steps the runs of this process have taken, all of them together
#: (`note_probe_step`): a run's company check leaves out its windows in which
#: another run of the process probed (`seer_env.stpa.monitor`)
_PROCESS_PROBE_STEPS = [0]


def note_probe_step() -> None:
    """Count one probe step of a run of this process (the controller, once a
    probe step has run; the monitor, as a re-probe begins)."""
    _PROCESS_PROBE_STEPS[0] += 1


def process_probe_steps() -> int:
    """Probe steps the runs of this process have taken so far (a count that
    only grows; a forked child goes on from its parent's)."""
    return _PROCESS_PROBE_STEPS[0]


@dataclass
class Visit:
    """One step of a probe on ``cand``: timed, traced, or (neither) a warm-up
    step after a switch."""

    cand: Candidate
    timed: bool
    traced: bool = False


@dataclass
class Probe:
    """A probe in progress: the preflight's (``trigger`` "preflight"), a
    confirmation's ("confirm") or a drift re-probe's (the drift in words).

    ``queue`` holds the visits still to run, first in line first; ``timings``
    the timed iterations so far, by candidate: what the user pays for a step,
    from the end of the call before it to the end of the step (the caller's
    own work between the calls, done beside the candidate's idle threads, and
    the step); ``steps_alone`` the steps alone and ``between`` the caller's
    work, of the same samples; ``stage`` is "features", "trace" or "timing"
    (see the module).
    """

    trigger: str
    rounds: int
    extended: bool = False
    #: the trace predicted a pool far ahead of one thread and the timings
    #: did not bear it out (`Prober._time_pruned_serial`): a moment of the
    #: host's, or a trace that mispredicts
    trace_missed: bool = False
    dropped: set[Candidate] = field(default_factory=set)
    candidates: list[Candidate] = field(default_factory=list)
    queue: list[Visit] = field(default_factory=list)
    timings: dict[Candidate, list[float]] = field(default_factory=dict)
    steps_alone: dict[Candidate, list[float]] = field(default_factory=dict)
    between: dict[Candidate, list[float]] = field(default_factory=dict)
    #: a pool's windows over its timed steps, and those run on the calling
    #: thread alone (the runtime's ``alone_windows``: its other threads found
    #: no free core), by candidate
    alone: dict[Candidate, list[int]] = field(default_factory=dict)
    #: a pool's other threads' waits for a core over its timed steps (ns,
    #: all of them together), those steps and their time (ns), by candidate
    #: (`seer_env.stpa.company.WAITED_MOST`)
    waited: dict[Candidate, list[float]] = field(default_factory=dict)
    #: the pool whose timed step ran last and its threads' waits read after it
    #: (`Prober.waits_since`)
    wait_last: tuple[Candidate, int] | None = None
    cpu0: CpuSample | None = None  # the clocks when its first timed step ran
    stage: str = "features"
    warm: bool = False  # the features stage's first (untimed, cold) step ran
    resumed: bool = False  # a preflight's pool stage, started once the run could pay
    mark: tuple[int, int] = (0, 0)  # (events, steps) when a re-probe began
    t_start: int = 0
    steps: int = 0
    unreachable: set[Candidate] = field(default_factory=set)  # switching to them failed
    #: pools whose traced step was over ``drop_traced`` once: traced again
    #: before they are dropped (`Prober.visit_step`)
    retraced: set[Candidate] = field(default_factory=set)
    pruned: list[Candidate] = field(default_factory=list)  # predicted too slow to time
    tiny: list[Candidate] = field(default_factory=list)  # left out: the steps are too short
    step_ns: float = 0.0  # ... this short
    #: a company re-probe's running pool and its step (ns alone, the median
    #: of the monitor's samples at its looks) as it ran before the re-probe:
    #: what it gives over time, where a visit of a few steps catches its
    #: threads just woken, which the kernel runs ahead of a busy neighbour
    #: for a moment (`Decisions.decide` counts the slower of the two)
    sustained: dict[Candidate, float] = field(default_factory=dict)
    #: ... and its iterations (ns each, the median of the monitor's windows),
    #: where they held no other env's steps: beside a pool whose visits
    #: caught its threads just woken the caller's own work may be slower
    #: over time too (torch's loop: 4.85 ms iterations on parallel-2 against
    #: 3.83 on one thread; a re-probe's visits chose it again)
    sustained_iter: dict[Candidate, float] = field(default_factory=dict)

    def leave_out_pools(self, pools: list[Candidate], step_ns: float) -> None:
        """Steps of ``step_ns`` are too short for ``pools`` to pay: not timed."""
        self.tiny = pools
        self.step_ns = step_ns
        self.candidates = [c for c in self.candidates if c not in pools]


class ProbeHost(Protocol):
    """What the probe needs of the controller that runs it
    (`Stpa`): the runtime, the options the probe reads,
    the step and the switches, a decision once the probe is done, and how far
    apart the controller's looks are."""

    rt: Any
    state: str
    countdown: int
    _steps0: int
    _clock: Callable[[], int]
    rounds: int
    min_visit_ns: float
    prune: float
    max_threads: int | None
    trace_enabled: bool
    caches: dict[str, int]
    drop: float
    drop_traced: float
    tie: float
    extra_rounds: int
    tiny_ns: float
    probe_share: float | None
    pool_probe_ns: float
    probe_step_ns: float
    check_every: int
    #: the caller's time since the controller's last call returned (its own
    #: work between two steps); None when unknown (a step in between ran
    #: without the controller, or a reset came)
    between_ns: float | None
    cpu_sampler: Callable[[], CpuSample] | None
    #: every other process's CPU time by pid (`seer_env.stpa.company.process_cpu_ns`)
    proc_sampler: Callable[[], Mapping[int, int] | None] | None
    #: how long the pool's other threads have waited for a core so far
    #: (`seer_env.stpa.company.pool_wait_ns`)
    wait_sampler: Callable[[Any], int | None] | None
    #: this process's other threads' time on a core by tid
    #: (`seer_env.stpa.company.other_threads_cpu_ns`)
    thread_sampler: Callable[[Any], Mapping[int, int] | None] | None

    @property
    def cores(self) -> int: ...  # the thread budget, read again when it changed

    @property
    def budget_note(self) -> str: ...

    def _native_step(self, mask_ptr: Any) -> None: ...

    def _switch(self, c: Candidate) -> float: ...

    def _switch_back(self, prev: Candidate) -> None: ...

    def _current(self) -> Candidate: ...

    def _decide(self, pr: Probe, provisional: Decision | None = None) -> None: ...

    def _check_interval(self) -> int: ...


@dataclass
class Prober:
    """The probe in progress (``probe``, None once decided) and what probing
    has measured so far; its methods run a probe's steps for ``host``.

    Attributes:
        probe: the probe in progress, or None.
        deferred: the pools' probe is put off until the run can pay for it:
            the shortest step seen meanwhile (ns); None when not put off.
        defer_countdown: steps to the next look at the put-off probe.
        t_first: the features step's time (ns), or the put-off probe's shortest.
        k: timed steps a visit takes.
        features: the latest `Features`.
        trace_summary: the latest traced step's `TraceSummary` (None without one).
        switch_ns: executor switches made, how long each took.
        confirm_cost_ns: the last confirmation's cost beyond its steps' own.
        preflight_steps: steps of the first preflight (and a pool stage put off).
        preflight_ns: their wall time.
        probe_steps: steps of every probe so far.
        probe_ns: their wall time.
    """

    probe: Probe | None
    deferred: float | None = None
    defer_countdown: int = 0
    t_first: float = math.inf
    k: int = 2
    features: Features | None = None
    trace_summary: TraceSummary | None = None
    switch_ns: list[float] = field(default_factory=list)
    confirm_cost_ns: float = 0.0
    preflight_steps: int = 0
    preflight_ns: int = 0
    probe_steps: int = 0
    probe_ns: int = 0

    # -- the steps ---------------------------------------------------------------------

    def features_step(self, host: ProbeHost, pr: Probe, mask_ptr: Any) -> None:
        """The preflight's first two steps, on one thread: the second gives
        events and windows per step and a step's length.  The first is not
        measured: a process's first step is cold (caches, pages, lazily set-up
        buffers) and took 5-30x a warm one, which made tiny steps look long."""
        prev = host._current()
        host._switch(first_candidate(host.rt.sizes.lookahead))
        ev0, win0 = _counters(host.rt) if pr.warm else (0, 0)  # the cold step's go unused
        try:
            t0 = host._clock()
            host._native_step(mask_ptr)
            t1 = host._clock()
        except BaseException:
            host._switch_back(prev)
            raise
        if not pr.warm:
            pr.warm = True
            return
        ev1, win1 = _counters(host.rt)
        self.set_features(host, ev1 - ev0, win1 - win0)
        self.t_first = float(t1 - t0)
        self.k = self.visit_steps(host, self.t_first)
        self.plan_after_features(host, pr)

    def visit_steps(self, host: ProbeHost, step_ns: float) -> int:
        """Timed steps a visit takes at steps of ``step_ns``: enough to last
        ``min_visit_ns``, 2 to 8."""
        return int(min(8, max(2, math.ceil(host.min_visit_ns / max(1.0, step_ns)))))

    def visit_step(self, host: ProbeHost, pr: Probe, mask_ptr: Any) -> None:
        """The first visit in line: switch to its candidate, step (traced or
        timed), and only then take the visit off the queue."""
        visit = pr.queue[0]
        prev = host._current()
        if pr.wait_last is not None:
            self.waits_since(host, pr)
        try:
            switch_ns = host._switch(visit.cand)
        except SeerError as exc:
            # the runtime cannot run this candidate now (out of memory or
            # threads): this step runs untimed where the runtime is, and the
            # candidate is left out of the probe once it has
            host._native_step(mask_ptr)
            self._leave_out(host, pr, visit.cand, exc)
            return
        try:
            if visit.traced:
                ns, summary = self._traced_step(host, visit.cand, mask_ptr)
            else:
                pool = visit.timed and visit.cand.threads > 1
                w0 = _windows(host.rt) if pool else (0, 0)  # outside the timed span
                d0 = self.waits_since(host, pr) if pool else None
                t0 = host._clock()
                host._native_step(mask_ptr)
                ns, summary = float(host._clock() - t0), None
                if pool:
                    w1 = _windows(host.rt)
                    got = pr.alone.setdefault(visit.cand, [0, 0])
                    got[0] += w1[0] - w0[0]
                    got[1] += w1[1] - w0[1]
                    d1 = host.wait_sampler(host.rt) \
                        if d0 is not None and host.wait_sampler is not None else None
                    if d0 is not None and d1 is not None and d1 >= d0:
                        waits = pr.waited.setdefault(visit.cand, [0.0, 0.0, 0.0])
                        waits[0] += d1 - d0
                        waits[1] += 1
                        waits[2] += ns
                        # a wait that ends after this read (a thread still
                        # runnable as the step returned) counts at the next
                        pr.wait_last = (visit.cand, d1)
                if visit.timed and pr.cpu0 is None and host.cpu_sampler is not None:
                    # the processes too: the share, process by process; and
                    # this process's other threads (whose company it is)
                    pr.cpu0 = with_threads(with_processes(host.cpu_sampler(), host.proc_sampler),
                                           host.thread_sampler, host.rt)
        except BaseException:
            host._switch_back(prev)
            raise
        pr.queue.pop(0)
        if switch_ns:  # for what more probe visits would cost (`extend_or_decide`)
            self.switch_ns.append(switch_ns)
        if visit.traced:
            if summary is not None:
                self.trace_summary = summary
            if ns > host.drop_traced * self.t_first:
                if visit.cand in pr.retraced:
                    # twice: even with tracing's cost counted, hopeless: do not time it
                    pr.dropped.add(visit.cand)
                else:
                    # one slow step may be the host's moment (another tenant,
                    # a hiccup of the VM): traced once more before it counts
                    # (one such step dropped parallel-2 in bench company's
                    # runs alone on the 2-core VM, and the serial executor
                    # ran, untimed, until a confirmation seconds later)
                    pr.retraced.add(visit.cand)
                    pr.queue.insert(0, Visit(visit.cand, timed=False, traced=True))
        elif visit.timed:
            # what the user pays: the step and the caller's work before it
            # (beside this candidate's threads: the step before ran on it too,
            # a warm-up's or a timed one); where that is unknown, the median
            # of this candidate's so far
            seen = pr.between.setdefault(visit.cand, [])
            b = host.between_ns
            if b is not None:
                seen.append(b)
            else:
                b = statistics.median(seen) if seen else 0.0
            pr.steps_alone.setdefault(visit.cand, []).append(ns)
            pr.timings.setdefault(visit.cand, []).append(ns + b)
            if not pr.queue or pr.queue[0].cand != visit.cand:  # visit complete
                self._prune_queue(host, pr)

    def waits_since(self, host: ProbeHost, pr: Probe) -> int | None:
        """The pool's threads' waits for a core so far (`ProbeHost.wait_sampler`;
        None: unknown), read before a probe step and at the decision: what
        they waited since the last timed pool step's end (a thread woken for
        that step that got its core only after the step returned) counts to
        that pool's waits."""
        d = host.wait_sampler(host.rt) if host.wait_sampler is not None else None
        if pr.wait_last is not None:
            c, last = pr.wait_last
            pr.wait_last = None
            if d is not None and d >= last:
                pr.waited[c][0] += d - last
        return d

    def _traced_step(self, host: ProbeHost, cand: Candidate,
                     mask_ptr: Any) -> tuple[float, TraceSummary | None]:
        """One step traced on ``cand``: its time and the trace's summary (None
        when the trace buffers could not be had: the probe goes on untraced)."""
        try:
            # the trace buffers are allocated (and their pages touched)
            # outside the timed part: only the step itself is compared
            self._trace_on(host, cand)
        except SeerError as exc:
            log.warning("%s: no trace for the preflight (%s); timing without one",
                        host.rt.model, exc)
            t0 = host._clock()
            host._native_step(mask_ptr)
            return float(host._clock() - t0), None
        try:
            t0 = host._clock()
            host._native_step(mask_ptr)
            t1 = host._clock()
            summary = summarize_trace(host.rt.trace_records(active_only=True))
        finally:
            host.rt.trace(0)
        return float(t1 - t0), summary

    def _trace_on(self, host: ProbeHost, cand: Candidate) -> None:
        """Trace the next step without a record per event (phases' spans with
        their event counts, barrier waits: what `summarize_trace` needs): a
        record per event cost PCS 64x64's preflight a step's time again, and
        copying and summarizing them several more."""
        assert self.features is not None
        f = self.features
        L = host.rt.sizes.lookahead
        # windows of width L a step (and a phase a chunk of speculation)
        windows = (f.step_duration / L if L > 0.0 else f.events_per_step / 256.0) + 2.0
        per_worker = int(min(1 << 16, 8 * (windows + f.num_instances) + 256))
        host.rt.trace(per_worker, events=False)

    def settle(self, host: ProbeHost, pr: Probe) -> bool:
        """Bring ``pr`` to where its next step can run: a stage whose visits
        are done moves on (trace -> timing -> extra rounds or a decision).
        Every step leaves a probe so; this also mends one whose bookkeeping
        was cut short (a KeyboardInterrupt between two of its statements).
        False when the probe decided."""
        if pr.stage != "features" and self.features is None:
            pr.stage, pr.queue = "features", []
        if pr.stage == "trace" and not pr.queue:
            self.plan_timing(host, pr)
        if pr.stage == "timing" and not pr.queue:
            self._extend_or_decide(host, pr)
        return self.probe is pr

    def account(self, pr: Probe, t_out: int, running_ns: float | None) -> None:
        """Count ``pr``'s steps and time (it ended at ``t_out``) into the totals;
        a confirmation's cost beyond its steps' own (steps of ``running_ns``,
        the running choice's) is kept for when the next one may start."""
        ns = t_out - pr.t_start
        self.probe_steps += pr.steps
        self.probe_ns += ns
        if pr.trigger == "confirm" and running_ns is not None:
            self.confirm_cost_ns = max(0.0, ns - pr.steps * running_ns)
        if pr.trigger == "preflight":  # the features steps, and a pool stage put off
            self.preflight_steps += pr.steps
            self.preflight_ns += ns

    # -- the features and the candidates -----------------------------------------------

    def set_features(self, host: ProbeHost, events: int, windows: int) -> None:
        """The run's `Features` now, at ``events`` and
        ``windows`` per step."""
        rt = host.rt
        sz = rt.sizes
        if windows == 0 and self.features is not None:
            windows = int(round(self.features.windows_per_step))  # serial: no windows
        pool = rt.stats()["pool_events"]
        self.features = Features(
            model=rt.model,
            num_entities=sz.num_entities,
            num_agents=sz.num_agents,
            num_instances=rt.num_instances,
            lookahead=sz.lookahead,
            step_duration=sz.step_duration,
            entity_size=sz.entity_size,
            cores=host.cores,
            budget=host.budget_note,
            cache_bytes=host.caches,
            events_per_step=float(events),
            windows_per_step=float(windows),
            alive_agents=int(np.count_nonzero(rt.alive)),
            working_set_bytes=int(rt.num_instances * sz.num_entities * (sz.entity_size + 128)
                                  + pool * 64),
        )

    def candidates(self, host: ProbeHost) -> list[Candidate]:
        """The candidates for the latest features (`candidate_set`)."""
        assert self.features is not None
        return candidate_set(self.features, host.max_threads)

    # -- planning ----------------------------------------------------------------------

    def plan_after_features(self, host: ProbeHost, pr: Probe) -> None:
        """After the features steps: decide at once on tiny steps, put the
        pools' probe off while the run cannot pay for it, else trace (more
        than one thread to consider) or time."""
        pr.candidates = cands = pr.candidates or self.candidates(host)
        if self.t_first < host.tiny_ns and any(c.threads == 1 for c in cands):
            # probing pools costs more than they could win back on such steps
            pr.leave_out_pools([c for c in cands if c.threads > 1], self.t_first)
            # and timing the one-thread candidates too: they differ by a few
            # percent of a tiny step (less than a probe's bookkeeping costs
            # per step, and less than a young process's steps vary), so the
            # serial executor runs untimed; a confirmation re-probe times
            # them once the run has lasted long enough to pay for it
            host._decide(pr)
            return
        if self._defer_pools(host, pr):
            return
        big = max(c.threads for c in pr.candidates)
        if host.trace_enabled and big > 1 and host.rt.trace_capacity == 0:
            pr.stage = "trace"
            # the parallel executor's windows say most about the pools to time;
            # for lookahead 0 the optimistic executor is the only pool
            ex = "parallel" if host.rt.sizes.lookahead > 0.0 else "optimistic"
            # one untraced step first: a pool's first step pays its one-time
            # set-up (threads woken, the optimistic executor's logs and
            # mailboxes), which the traced step must not be judged by
            pr.queue = [Visit(Candidate(ex, big), timed=False),
                        Visit(Candidate(ex, big), timed=False, traced=True)]
        else:
            self.plan_timing(host, pr)

    def plan_timing(self, host: ProbeHost, pr: Probe) -> None:
        """The timing stage's visits (`probe_plan`'s candidates, less those
        dropped), forth and back from the running candidate."""
        assert self.features is not None
        # in company the trace's predictions (made alone) do not hold: a
        # company re-probe times every candidate it has, the serial executor
        # among them (the pool's predicted lead is what company took away)
        plan = list(pr.candidates) if pr.trigger.startswith("company") else probe_plan(
            self.features, self.trace_summary, pr.candidates, host.prune)
        pr.pruned = [c for c in pr.candidates if c not in plan]
        plan = ([c for c in plan if c not in pr.dropped]
                or [c for c in plan if c not in pr.unreachable][:1] or [host._current()])
        pr.candidates = plan
        pr.stage = "timing"
        pr.queue = []
        if len(plan) == 1:
            return
        # tiny steps: one round (what the one-thread candidates differ by is a
        # fraction of a tiny step; every switch between them costs more)
        # back and forth (ABC CBA ABC ...: balanced against a trend such as a
        # warming process, like a rotation) from the running candidate, in
        # executor order: a switch between executors moves every pending event
        # (5 ms on PCS 64x64, two steps' worth) and is made about once a round,
        # where a rotation made one per visit; changing a pool's size is cheap
        cur = host._current()
        plan = sorted(plan, key=lambda c: (c.executor != cur.executor, c != cur,
                                           EXECUTORS.index(c.executor), c.threads))
        prev = cur
        for r in range(1 if pr.tiny else pr.rounds):
            for c in (plan if r % 2 == 0 else plan[::-1]):
                if c != prev:  # a warm-up step after a switch
                    pr.queue.append(Visit(c, timed=False))
                pr.queue.extend(Visit(c, timed=True) for _ in range(self.k))
                prev = c

    def _leave_out(self, host: ProbeHost, pr: Probe, c: Candidate, exc: Exception) -> None:
        log.warning("%s: cannot switch to %s (%s); left out of this probe", host.rt.model,
                    c.label, exc)
        pr.unreachable.add(c)
        pr.dropped.add(c)
        pr.queue = self._without_idle_warmups(host, [v for v in pr.queue if v.cand != c])

    def _without_idle_warmups(self, host: ProbeHost, queue: list[Visit]) -> list[Visit]:
        """``queue`` less the warm-up steps no switch precedes any more (the
        visit between two of a candidate's visits was taken out)."""
        out: list[Visit] = []
        prev = host._current()
        for v in queue:
            if v.timed or v.traced or v.cand != prev:
                out.append(v)
            prev = v.cand
        return out

    def _prune_queue(self, host: ProbeHost, pr: Probe) -> None:
        self._leave_pools_if_tiny(host, pr)
        # dropped after two visits, not one: one slow visit (a transient on the
        # host) dropped the optimistic executor on classic PCS 32x32 in one of
        # five bench runs, where it runs 1.2x the serial executor
        out = {c for c in eliminated(pr.timings, host.drop)
               if len(pr.timings[c]) >= 2 * self.k} - pr.dropped
        if out:
            pr.dropped |= out
            pr.queue = self._without_idle_warmups(
                host, [v for v in pr.queue if v.cand not in pr.dropped])

    def _leave_pools_if_tiny(self, host: ProbeHost, pr: Probe) -> None:
        """Once a one-thread candidate's visit is timed: if its steps take less
        than ``tiny_ns`` (the first step, cold, may not have shown it), the pools
        of several threads are not timed, and one round is enough."""
        if pr.tiny:
            return
        ones = [statistics.median(v) for c, v in pr.steps_alone.items() if c.threads == 1 and v]
        if not ones or min(ones) >= host.tiny_ns:
            return
        pools = [c for c in pr.candidates if c.threads > 1]
        if not pools:
            return
        pr.leave_out_pools(pools, min(ones))
        pr.dropped |= set(pools)
        timed = {c for c in pr.timings if pr.timings[c]}
        keep, seen = [], set()
        for v in pr.queue:  # the first visit of each one-thread candidate not timed yet
            if v.cand.threads > 1 or v.cand in timed:
                continue
            if not v.timed and v.cand in seen:
                break  # a second round starts
            seen.add(v.cand)
            keep.append(v)
        pr.queue = keep

    def _extend_or_decide(self, host: ProbeHost, pr: Probe) -> None:
        if self._time_pruned_serial(host, pr):
            return
        # tiny steps: a close call between one-thread candidates is not worth
        # more steps (what either wins is a fraction of a tiny step)
        # (between the candidates a choice is made from: `choosable`)
        timed = {c: v for c, v in pr.timings.items() if c not in pr.dropped}
        med = choosable({c: float(statistics.median(v)) for c, v in timed.items() if v})
        pair = None if pr.extended or pr.tiny else close_call(
            {c: v for c, v in timed.items() if c in med}, host.tie, recent=self.k,
            medians=med)
        if pair is None:
            host._decide(pr)
            return
        # a close call (or a candidate whose last visit beat the fastest: still
        # warming up): more visits of the two only, forth and back
        pr.extended = True
        self._queue_pair(host, pr, pair, host.extra_rounds)
        # ... if the run can pay for them: the two are within `tie` of each
        # other, and between executors each switch moves every pending event
        # (0.5 ms and a slow step after it on classic PCS 32x32: the extra
        # visits cost more than a short run could win back)
        order = [host._current(), *(v.cand for v in pr.queue)]
        switches = sum(1 for a, b in itertools.pairwise(order) if a.executor != b.executor)
        cost = (switches * (statistics.median(self.switch_ns) if self.switch_ns else 0.0)
                + len(pr.queue) * host.probe_step_ns)
        best = min(statistics.median(pr.timings[c]) for c in pair)
        if (host.probe_share is not None
                and cost > host.probe_share * self._expected_steps(host) * best):
            pr.queue = []
        if not pr.queue:  # no extra rounds (extra_rounds=0, or more than the run can pay)
            host._decide(pr)

    def _queue_pair(self, host: ProbeHost, pr: Probe, pair: Sequence[Candidate],
                    rounds: int) -> None:
        """Queue ``rounds`` rounds of visits of the two candidates of ``pair``,
        forth and back (a warm-up step and ``k`` timed ones a visit; the
        warm-ups no switch precedes left out)."""
        for r in range(rounds):
            for c in (pair if r % 2 == 0 else pair[::-1]):
                pr.queue.append(Visit(c, timed=False))
                pr.queue.extend(Visit(c, timed=True) for _ in range(self.k))
        pr.queue = self._without_idle_warmups(host, pr.queue)

    def _time_pruned_serial(self, host: ProbeHost, pr: Probe) -> bool:
        """The trace predicted a pool far ahead of one thread, so the serial
        executor was not timed (`probe_plan`), yet parallel-1 won, or a pool
        won by less than `SERIAL_RECHECK` x parallel-1: the prediction did not
        hold (company: another pool, another process), and the serial executor
        (5% faster than parallel-1 on one thread, PCS 64x64's median) may beat
        the winner.  Adds rounds of the serial executor and the winner, forth
        and back; True when it did (once a probe)."""
        one = Candidate("parallel", 1)
        timed = {c: statistics.median(v) for c, v in pr.timings.items()
                 if v and c not in pr.dropped}
        if pr.extended or SERIAL not in pr.pruned or one not in timed:
            return False
        best = min(timed, key=lambda c: timed[c])
        if best != one and timed[one] >= SERIAL_RECHECK * timed[best]:
            return False
        pr.extended = pr.trace_missed = True
        pr.pruned.remove(SERIAL)
        pr.candidates.append(SERIAL)
        self._queue_pair(host, pr, [SERIAL, best] if host._current() == best else [best, SERIAL],
                         host.rounds)
        if best == one:
            log.info("%s: parallel-1 won though the trace predicted a pool far ahead: "
                     "timing the serial executor too", host.rt.model)
        else:
            log.info("%s: %s won by only %.2fx over parallel-1 though the trace predicted "
                     "it far ahead: timing the serial executor too", host.rt.model,
                     best.label, timed[one] / timed[best])
        return True

    # -- the pools' probe put off until the run can pay for it --------------------------

    def _pool_probe_cost(self, host: ProbeHost, step_ns: float, n_cands: int) -> float:
        """What probing ``n_cands`` candidates would cost beyond their steps'
        own work (ns): the pools' fixed cost and the controller's per step."""
        steps = 2 + host.rounds * n_cands * (self.visit_steps(host, step_ns) + 1)
        return host.pool_probe_ns + steps * host.probe_step_ns

    def _expected_steps(self, host: ProbeHost) -> int:
        """Steps the run will take at least, as far as one can tell: those run
        so far, and at least an episode (``max_cycles``) once one was reset."""
        mc = getattr(host.rt, "max_cycles", 0)
        run_steps = int(host.rt.stats()["steps"]) - host._steps0
        return max(run_steps, mc if isinstance(mc, int) and mc > 0 else 0)

    def _defer_pools(self, host: ProbeHost, pr: Probe) -> bool:
        """After a preflight's features steps: put the pools' probe off while
        it would cost more than ``probe_share`` of the run's step time (its
        steps so far, an episode at least: `_expected_steps`; the serial
        executor runs untimed meanwhile).  True when put off."""
        if pr.trigger != "preflight" or pr.resumed or host.probe_share is None:
            return False
        pools = [c for c in pr.candidates if c.threads > 1]
        if not pools:
            return False
        t = self.t_first
        cost = self._pool_probe_cost(host, t, len(pr.candidates))
        expected = self._expected_steps(host)
        need = math.ceil(cost / (host.probe_share * t))
        if need <= expected:
            return False
        c = SERIAL if SERIAL in pr.candidates else pr.candidates[0]
        why = (f"{in_words(c).capitalize()} for now, untimed: a step takes {t / 1e3:.1f} us, "
               f"and probing {', '.join(p.label for p in pools)} would cost about "
               f"{cost / 1e6:.1f} ms beyond the steps' own work, over "
               f"{host.probe_share:.0%} of the run's step time so far (an episode at least); "
               "they are probed once "
               f"the run has taken about {need} steps (more if its steps get shorter, none "
               f"if they fall under {host.tiny_ns / 1e3:g} us). Limit: the run so far is too "
               "short to pay for probing the pools")
        self.deferred = t
        host._decide(pr, Decision(c, why + ".", {}, {}, pr.trigger))
        self.defer_countdown = self._next_deferred_check(host, need, expected)
        return True

    def _next_deferred_check(self, host: ProbeHost, need: int, expected: int) -> int:
        """Steps to the next look at a put-off pool probe: when the run will
        have taken the ``need`` steps that pay for it (``expected`` now), at
        most ``check_every`` -- unless looks that often would cost over 1% of
        the steps (the controller's `_check_interval`: a look costs what a
        monitor check does)."""
        return max(1, min(host._check_interval(), need - expected))

    def deferred_check(self, host: ProbeHost, step_ns: float,
                       since: tuple[int, int, int]) -> None:
        """A step of a run whose pool probe was put off (every ``check_every``
        steps and after each reset): start the probe once the run can pay for
        it; settle on the tiny choice if its steps turned out tiny.  ``since``:
        the runtime's (events, windows, steps) at the monitor's mark (the
        provisional decision, or the latest reset), for the features."""
        assert self.deferred is not None and self.features is not None
        assert host.probe_share is not None
        t = self.deferred = min(self.deferred, step_ns)
        cands = self.candidates(host)
        expected = self._expected_steps(host)
        need = math.ceil(self._pool_probe_cost(host, t, len(cands)) / (host.probe_share * t))
        host.countdown = self._next_deferred_check(host, need, expected)
        if t < host.tiny_ns:
            # a young process's steps were slow; warm, they are tiny
            self.deferred = None
            pr = Probe("preflight", host.rounds, resumed=True)
            pr.candidates = cands
            pr.leave_out_pools([c for c in cands if c.threads > 1], t)
            host._decide(pr)
            return
        if need > expected:
            return
        self.deferred = None
        s = host.rt.stats()
        ev0, win0, st0 = since
        steps = max(1, s["steps"] - st0)
        self.set_features(host, int(round((s["events"] - ev0) / steps)),
                          int(round((s["windows"] - win0) / steps)))
        pr = Probe("preflight", host.rounds, resumed=True)
        pr.candidates = cands
        self.t_first = t
        self.k = self.visit_steps(host, t)
        self.probe = pr
        host.state = "preflight"
        log.info("%s: the run can now pay for probing the pools", host.rt.model)
        self.plan_after_features(host, pr)
        host.countdown = 0 if self.probe is not None else host.check_every


def _counters(rt: Any) -> tuple[int, int]:
    s = rt.stats()
    return s["events"], s["windows"]


def _windows(rt: Any) -> tuple[int, int]:
    """Windows so far, and those run on the calling thread alone."""
    s = rt.stats()
    return s["windows"], s.get("alone_windows", 0)


__all__ = ["Probe", "ProbeHost", "Prober", "Visit"]
