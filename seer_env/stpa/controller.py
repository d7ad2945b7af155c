"""STPA's controller: `Stpa` runs a runtime's steps, probes the candidates
(preflight, confirmations, drift re-probes), decides with the cost model
(`seer_env.stpa.cost`) and watches the workload; `FixedChoice` stands for it
where the configuration was given.  See `seer_env.stpa` for the whole story.

The top of the `seer_env.stpa` package: above the decision cache
(`seer_env.stpa.cache`) and the cost model.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
import logging
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from .._bind.runtime import EXECUTORS, Runtime, cpu_count
from ..errors import SeerError
from .cache import DecisionCache, cache_wanted, save_at_exit, saved
from .cost import (
    SERIAL,
    Candidate,
    Decision,
    Features,
    Load,
    TraceSummary,
    cache_sizes,
    candidate_set,
    close_call,
    drift,
    eliminated,
    first_candidate,
    in_words,
    limiting_factor,
    neighbours,
    predict_step_ns,
    probe_plan,
    regime,
    select,
    summarize_trace,
)

log = logging.getLogger("seer_env.stpa")

#: a countdown no run reaches (a failed controller is never called again)
_NEVER = 1 << 62


# -- the controller ----------------------------------------------------------------


@dataclass
class _Visit:
    cand: Candidate
    timed: bool
    traced: bool = False


@dataclass
class _Probe:
    trigger: str
    rounds: int
    extended: bool = False
    dropped: set[Candidate] = field(default_factory=set)
    candidates: list[Candidate] = field(default_factory=list)
    queue: list[_Visit] = field(default_factory=list)
    timings: dict[Candidate, list[float]] = field(default_factory=dict)
    stage: str = "features"
    warm: bool = False  # the features stage's first (untimed, cold) step ran
    resumed: bool = False  # a preflight's pool stage, started once the run could pay
    mark: tuple[int, int] = (0, 0)  # (events, steps) when a re-probe began
    t_start: int = 0
    steps: int = 0
    unreachable: set[Candidate] = field(default_factory=set)  # switching to them failed
    pruned: list[Candidate] = field(default_factory=list)  # predicted too slow to time
    tiny: list[Candidate] = field(default_factory=list)  # left out: the steps are too short
    step_ns: float = 0.0  # ... this short

    def leave_out_pools(self, pools: list[Candidate], step_ns: float) -> None:
        """Steps of ``step_ns`` are too short for ``pools`` to pay: not timed."""
        self.tiny = pools
        self.step_ns = step_ns
        self.candidates = [c for c in self.candidates if c not in pools]


class _Running:
    """What `Stpa` and `FixedChoice` both say of ``self.rt``: the executor and
    pool running now, and the run's workload so far."""

    rt: Any

    @property
    def threads(self) -> int:
        """Pool size running now."""
        return self.rt.threads

    @property
    def executor(self) -> str:
        """Executor running now."""
        return self.rt.executor

    @property
    def workload(self) -> dict[str, float]:
        """The run's workload so far ([`run_workload`][seer_env.stpa.run_workload]), not
        the preflight's."""
        return run_workload(self.rt)


class Stpa(_Running):
    """The controller attached to a ``threads="auto"`` parallel Runtime (``runtime.stpa``).

    Args:
        runtime: the Runtime it drives (it calls ``set_executor`` between steps).
        rounds: timing rounds of the preflight (each visits every planned candidate).
        reprobe_rounds: rounds of a drift re-probe.
        min_visit_ns: a visit times enough steps to last about this long (2..8 steps).
        margin: fewer threads win within this fraction of the fastest median.
        prune: pools predicted slower than ``prune`` x the best are not timed.
        check_every: steps between drift checks once decided.
        drift_factor: re-probe when events per step move by this factor (`drift`).
        alive_drop: re-probe when fewer than this fraction of the agents live (`drift`).
        reprobe_gap: steps after a probe before a re-probe may start; doubles
            each time a re-probe confirms the choice.
        max_threads: cap on pool sizes (default: usable cores).
        trace: run one traced step to summarize (skipped when the user traces).
        cores: cores to assume (default: usable cores; tests pass their own).
        drop: after each visit, candidates slower than ``drop`` x the best median
            so far are not visited again (`eliminated`).
        drop_traced: a pool whose traced step took more than ``drop_traced`` x the
            first (one-thread) step is not timed (a loaded machine, a hopeless pool).
        tie: when the two fastest medians are within ``tie``, ``extra_rounds``
            alternating visits of those two follow (`close_call`).
        confirm: re-probe the neighbourhood of the choice every ``reprobe_gap``
            steps even without drift (the gap doubles after each confirmation),
            for workloads that change slowly as the simulation warms up.
        hysteresis: a confirmation re-probe replaces the running choice only
            with a candidate faster by more than this fraction.
        tiny_ns: a step shorter than this (the preflight's first, or the running
            choice's median) leaves the pools of several threads untimed: their
            synchronisation costs about as much as the whole step, so timing them
            costs more than they could win back.
        confirm_budget: a confirmation re-probe waits at least this many times
            what it costs, in steps (about 2% of the run's time at most goes to
            confirming).
        probe_share: the pools are probed (traced and timed) only once the
            probe's estimated cost is at most this share of the run's step time
            (its steps so far, counting at least an episode of ``max_cycles``
            steps); until then the serial executor runs untimed.  Steps of a
            millisecond are probed at once, steps of 50 us after a few hundred,
            and a short run of short steps never pays for a probe it could not
            win back.  None: probe at once.
        pool_probe_ns: a pool probe's fixed cost (a pool's first step starts
            its threads, about 0.3 ms here; the traced step about 0.7 ms).
        probe_step_ns: the controller's own cost per probe step (switching,
            timing and bookkeeping in Python, about 20 us here).
        check_ns: a monitor check's own cost before one is measured (60-115 us
            here, with the code cache-cold between steps; the checks' measured
            cost when it is more): checks are at least ``check_every`` steps
            apart, and far enough apart to cost under 1% of the steps.
        save_ns: writing a decision to the cache (0.3-0.8 ms here): done once
            ``probe_share`` (5% if None) of the run's step time covers it, else
            when the runtime closes or the interpreter exits.
        clock: a monotonic ns clock (default ``time.perf_counter_ns``; tests
            pass a simulated one).
        cache: remember the preflight's decision across processes and start
            from a remembered one ([DecisionCache][seer_env.stpa.DecisionCache]);
            default on unless ``SEER_STPA_CACHE=0``.
        cache_path: the cache's file (default: beside the built models).

    Attributes:
        decision: the latest [`Decision`][seer_env.stpa.Decision] (None during the first preflight).
        history: every Decision, oldest first.
        features: the latest [`Features`][seer_env.stpa.Features].
        trace_summary: the latest `TraceSummary` (None without a trace).
        timings: ns per timed step by candidate label, of the latest probe.
        regimes: the choice made for each load regime ([`regime`][seer_env.stpa.regime]), which
            a returning regime gets back without a probe.
        regime_switches: how often that happened.
        state: ``"preflight"``, ``"probing"`` (drift re-probe) or ``"monitor"``.
        preflight_steps: steps of the first preflight.
        preflight_ns: its wall time (switches, tracing and Python included).
        probe_steps: steps of every probe so far.
        probe_ns: their wall time.
        from_cache: the run started from a remembered decision (no preflight).
    """

    def __init__(self, runtime: Any, rounds: int = 3, reprobe_rounds: int = 2,
                 min_visit_ns: float = 200_000.0, margin: float = 0.02, prune: float = 1.5,
                 check_every: int = 64, drift_factor: float = 2.0, alive_drop: float = 0.5,
                 reprobe_gap: int = 256, max_threads: int | None = None, trace: bool = True,
                 cores: int | None = None, drop: float = 1.5, drop_traced: float = 3.0,
                 tie: float = 0.10, extra_rounds: int = 6, confirm: bool = True,
                 hysteresis: float = 0.10, tiny_ns: float = 20_000.0,
                 confirm_budget: float = 50.0, probe_share: float | None = 0.05,
                 pool_probe_ns: float = 1_000_000.0, probe_step_ns: float = 20_000.0,
                 check_ns: float = 100_000.0, save_ns: float = 800_000.0,
                 clock: Callable[[], int] | None = None,
                 cache: bool | None = None, cache_path: Path | None = None) -> None:
        self.rt = runtime
        self.rounds = int(rounds)
        self.reprobe_rounds = int(reprobe_rounds)
        self.min_visit_ns = float(min_visit_ns)
        self.margin = float(margin)
        self.prune = float(prune)
        self.check_every = int(check_every)
        self.drift_factor = float(drift_factor)
        self.alive_drop = float(alive_drop)
        self.reprobe_gap = int(reprobe_gap)
        self.max_threads = max_threads
        self.trace_enabled = bool(trace)
        self.drop = float(drop)
        self.drop_traced = float(drop_traced)
        self.tie = float(tie)
        self.hysteresis = float(hysteresis)
        self.extra_rounds = int(extra_rounds)
        self.confirm = bool(confirm)
        self.tiny_ns = float(tiny_ns)
        self.confirm_budget = float(confirm_budget)
        self.probe_share = None if probe_share is None else float(probe_share)
        self.pool_probe_ns = float(pool_probe_ns)
        self.probe_step_ns = float(probe_step_ns)
        self.check_ns = float(check_ns)
        self.save_ns = float(save_ns)
        # the pools' probe put off until the run can pay for it: the
        # shortest step seen meanwhile (ns); None when not put off
        self._deferred: float | None = None
        self._defer_countdown = 0
        self._unsaved: dict[str, Any] | None = None  # a decision the cache has not got yet
        self._switch_ns: list[float] = []  # executor switches made, how long each took
        # the last monitor checks' own cost (ns): cold between steps, a check
        # took 60-115 us where a warm one takes 8 (check_ns is the floor)
        self._check_costs: collections.deque[float] = collections.deque(maxlen=5)
        self._confirm_cost_ns = 0.0  # the last confirmation's cost beyond its steps' own
        self._close_call_remembered = False  # started from a close call: confirm it soon
        self._save_from = 0  # ... written at the first check from this step on
        self._steps0 = int(runtime.stats()["steps"])
        self._t_first = math.inf
        self._clock = clock or time.perf_counter_ns
        self._hopeless: set[Candidate] = set()
        self.cores = int(cores) if cores else cpu_count()
        self.caches = cache_sizes()
        self.decision: Decision | None = None
        self.history: list[Decision] = []
        self.features: Features | None = None
        self.trace_summary: TraceSummary | None = None
        self.timings: dict[str, list[float]] = {}
        self.state = "preflight"
        self.preflight_steps = 0
        self.preflight_ns = 0
        self.probe_steps = 0
        self.probe_ns = 0
        # Runtime.step calls step() when this is 1 or less, and takes one off
        # after every other step that ran (a refused step changes nothing)
        self.countdown = 0
        self._probe: _Probe | None = _Probe("preflight", self.rounds)
        self._k = 2
        # the running choice's step (its median, or the untimed features step
        # a tiny decision was made from); None when not measured
        self._running_ns: float | None = None
        self._baseline: Load | None = None
        self._steps_since_probe = 0
        self._gap = self.reprobe_gap
        self._mark = (0, 0, 0)  # (events, windows, steps) at the last check
        self.regimes: dict[int, Candidate] = {}
        self.regime_switches = 0
        self.cache: DecisionCache | None = None
        self._cache_key = ""
        self.from_cache = False
        self._ran = self._native_failed = False  # see `step`
        if cache_wanted(cache):
            self.cache = DecisionCache(cache_path)
            try:
                self._cache_key = DecisionCache.key(runtime, max_threads, self.cores,
                                                    self.caches)
                self._start_from_cache()
            except Exception as exc:  # a bug here must not stop the env being made
                # (`_start_from_cache` changes nothing until nothing can fail)
                log.error("%s: STPA's decision cache failed (%s: %s): preflight",
                          runtime.model, type(exc).__name__, exc, exc_info=exc)
                self.cache = None
        if self._probe is not None:
            # the features steps' executor from the start: the switch (and a
            # second executor's first steps) are not the run's
            with contextlib.suppress(SeerError):
                self._switch(first_candidate(self.rt.sizes.lookahead))

    # -- public views -------------------------------------------------------------

    @property
    def deferred(self) -> bool:
        """The pools' probe is put off until the run can pay for it
        (``probe_share``); the running choice is provisional meanwhile."""
        return self._deferred is not None

    @property
    def settled(self) -> bool:
        """A decision is in force and final for now: no probe is running
        (the preflight's, a confirmation's or a drift's) and none is put off
        (`deferred`).  While the preflight's pool probe runs, the decision is
        still the provisional one it was put off with, and ``deferred`` is
        already False: wait for ``settled`` to see the preflight's outcome.

        Example:

        ```python
        while not env.stpa.settled:
            env.step(policy(obs))
        print(env.stpa.executor, env.stpa.threads)
        ```
        """
        return (self.decision is not None and self._probe is None
                and self._deferred is None)

    @property
    def reason(self) -> str:
        """Why the running configuration was chosen (the latest decision's reason,
        which ends with what limits more threads)."""
        return self.decision.reason if self.decision else "preflight in progress"

    def as_dict(self) -> dict[str, Any]:
        """Everything as plain data (for JSON reports)."""
        return {
            "state": self.state,
            "executor": self.executor,
            "threads": self.threads,
            "decision": self.decision.as_dict() if self.decision else None,
            "history": [d.as_dict() for d in self.history],
            "features": self.features.as_dict() if self.features else None,
            "trace_summary": self.trace_summary.as_dict() if self.trace_summary else None,
            "timings_ns": {k: list(v) for k, v in self.timings.items()},
            "preflight_steps": self.preflight_steps,
            "preflight_ns": self.preflight_ns,
            "probe_steps": self.probe_steps,
            "probe_ns": self.probe_ns,
            "regimes": {str(k): c.label for k, c in sorted(self.regimes.items())},
            "regime_switches": self.regime_switches,
            "from_cache": self.from_cache,
            "deferred": self.deferred,
            "settled": self.settled,
            "workload": self.workload,
        }

    def __repr__(self) -> str:
        return f"Stpa(state={self.state!r}, {self.executor}, threads={self.threads}, " \
               f"reason={self.reason!r})"

    # -- the step hook ---------------------------------------------------------------

    def step(self, mask_ptr: Any) -> None:
        """Run one real step of the runtime (called by ``Runtime.step``).

        A step the runtime refuses or fails (an invalid action, an error in a
        handler, an interrupt: any exception) changes nothing here: the visit
        it was to run stays first in line, no counter moves, and a switch made
        for it is undone, so the next step runs that visit again.  The
        bookkeeping happens only once the step has run.

        The controller's own failure (an exception of its bookkeeping, or of
        a switch or trace it asked for) never costs the step: it is logged,
        the controller stops (``state`` "failed", the runtime stays where it
        is, the reason says why) and the step runs, once.
        """
        if self.state == "failed":
            self._native_step(mask_ptr)
            self.countdown = _NEVER
            return
        try:
            self._step(mask_ptr)
        except Exception as exc:
            if self._native_failed:  # the step itself failed: the caller's to see
                raise
            self._fail(exc)
            if not self._ran:
                self._native_step(mask_ptr)
        finally:
            self._ran = self._native_failed = False  # for the next call

    def _fail(self, exc: BaseException) -> None:
        """Stop controlling after the controller's own failure ``exc``."""
        log.error("%s: STPA failed (%s: %s); the run goes on where it is, uncontrolled",
                  self.rt.model, type(exc).__name__, exc, exc_info=exc)
        self._probe = None
        self._deferred = None
        self._unsaved = None
        saved(self)
        self.state = "failed"
        self.countdown = _NEVER
        try:
            c = self._current()
        except Exception:  # the runtime cannot say: report the last choice
            c = self.decision.candidate if self.decision is not None else SERIAL
        dec = Decision(c, f"{in_words(c).capitalize()}: where the run was when the "
                       f"controller failed ({type(exc).__name__}: {exc}); nothing is "
                       "probed or switched from then on.", {}, {}, "failed")
        self.decision = dec
        self.history.append(dec)

    def _step(self, mask_ptr: Any) -> None:
        pr = self._probe
        if pr is not None and not self._settle(pr):  # mended into a decision
            self._account(pr, self._clock())
            pr = None
        if pr is None:
            if self._deferred is not None:
                t0 = self._clock()
                self._native_step(mask_ptr)
                t1 = self._clock()
                self._deferred_check(float(t1 - t0))
                if self._deferred is not None:
                    self._check_costs.append(float(self._clock() - t1))
                return
            self._native_step(mask_ptr)
            t0 = self._clock()
            self._check_drift()
            if self._probe is None:  # spaced by what the checks cost (`_check_interval`)
                self._check_costs.append(float(self._clock() - t0))
                self.countdown = self._check_interval()
            return
        t_in = self._clock()
        if pr.stage == "features":
            self._features_step(pr, mask_ptr)
        else:
            self._visit_step(pr, mask_ptr)
        # the step ran: from here on only bookkeeping
        if pr.steps == 0:
            pr.t_start = t_in
        pr.steps += 1
        self._settle(pr)
        t_out = self._clock()
        if self._probe is None:  # decided in this call: account the whole probe
            self._account(pr, t_out)
        self.countdown = (0 if self._probe is not None else self._defer_countdown
                          if self._deferred is not None else self._check_interval())

    def _features_step(self, pr: _Probe, mask_ptr: Any) -> None:
        """The preflight's first two steps, on one thread: the second gives
        events and windows per step and a step's length.  The first is not
        measured: a process's first step is cold (caches, pages, lazily set-up
        buffers) and took 5-30x a warm one, which made tiny steps look long."""
        prev = self._current()
        self._switch(first_candidate(self.rt.sizes.lookahead))
        ev0, win0 = self._counters() if pr.warm else (0, 0)  # the cold step's go unused
        try:
            t0 = self._clock()
            self._native_step(mask_ptr)
            t1 = self._clock()
        except BaseException:
            self._switch_back(prev)
            raise
        if not pr.warm:
            pr.warm = True
            return
        ev1, win1 = self._counters()
        self._set_features(ev1 - ev0, win1 - win0)
        self._t_first = float(t1 - t0)
        self._k = self._visit_steps(self._t_first)
        self._plan_after_features(pr)

    def _visit_steps(self, step_ns: float) -> int:
        """Timed steps a visit takes at steps of ``step_ns``: enough to last
        ``min_visit_ns``, 2 to 8."""
        return int(min(8, max(2, math.ceil(self.min_visit_ns / max(1.0, step_ns)))))

    def _visit_step(self, pr: _Probe, mask_ptr: Any) -> None:
        """The first visit in line: switch to its candidate, step (traced or
        timed), and only then take the visit off the queue."""
        visit = pr.queue[0]
        prev = self._current()
        try:
            switch_ns = self._switch(visit.cand)
        except SeerError as exc:
            # the runtime cannot run this candidate now (out of memory or
            # threads): this step runs untimed where the runtime is, and the
            # candidate is left out of the probe once it has
            self._native_step(mask_ptr)
            self._leave_out(pr, visit.cand, exc)
            return
        try:
            if visit.traced:
                ns, summary = self._traced_step(visit.cand, mask_ptr)
            else:
                t0 = self._clock()
                self._native_step(mask_ptr)
                ns, summary = float(self._clock() - t0), None
        except BaseException:
            self._switch_back(prev)
            raise
        pr.queue.pop(0)
        if switch_ns:  # for what more probe visits would cost (`_extend_or_decide`)
            self._switch_ns.append(switch_ns)
        if visit.traced:
            if summary is not None:
                self.trace_summary = summary
            if ns > self.drop_traced * self._t_first:
                # even with tracing's cost counted, hopeless: do not time it
                pr.dropped.add(visit.cand)
        elif visit.timed:
            pr.timings.setdefault(visit.cand, []).append(ns)
            if not pr.queue or pr.queue[0].cand != visit.cand:  # visit complete
                self._prune_queue(pr)

    def _traced_step(self, cand: Candidate, mask_ptr: Any) -> tuple[float, TraceSummary | None]:
        """One step traced on ``cand``: its time and the trace's summary (None
        when the trace buffers could not be had: the probe goes on untraced)."""
        try:
            # the trace buffers are allocated (and their pages touched)
            # outside the timed part: only the step itself is compared
            self._trace_on(cand)
        except SeerError as exc:
            log.warning("%s: no trace for the preflight (%s); timing without one",
                        self.rt.model, exc)
            t0 = self._clock()
            self._native_step(mask_ptr)
            return float(self._clock() - t0), None
        try:
            t0 = self._clock()
            self._native_step(mask_ptr)
            t1 = self._clock()
            summary = summarize_trace(self.rt.trace_records(active_only=True))
        finally:
            self.rt.trace(0)
        return float(t1 - t0), summary

    def _settle(self, pr: _Probe) -> bool:
        """Bring ``pr`` to where its next step can run: a stage whose visits
        are done moves on (trace -> timing -> extra rounds or a decision).
        Every step leaves a probe so; this also mends one whose bookkeeping
        was cut short (a KeyboardInterrupt between two of its statements).
        False when the probe decided."""
        if pr.stage != "features" and self.features is None:
            pr.stage, pr.queue = "features", []
        if pr.stage == "trace" and not pr.queue:
            self._plan_timing(pr)
        if pr.stage == "timing" and not pr.queue:
            self._extend_or_decide(pr)
        return self._probe is pr

    # -- the decision cache -------------------------------------------------------------

    def _start_from_cache(self) -> None:
        """Start on a decision remembered for this model, configuration, batch,
        build and machine: no preflight (the confirmation re-probes still run)."""
        assert self.cache is not None
        e = self.cache.get(self._cache_key)
        if e is None:
            return
        c = Candidate(e["executor"], e["threads"])
        try:
            self._switch(c)
        except SeerError as exc:
            log.info("%s: remembered choice %s not possible now (%s): preflight",
                     self.rt.model, c.label, exc)
            return
        # everything that could fail first: the controller's state changes
        # only once nothing is left to fail (the caller then goes on as if
        # there were no cache)
        others = sorted(v for k, v in e["medians_ns"].items() if k != c.label)
        mine = e["medians_ns"].get(c.label)
        med = mine or e.get("step_ns")
        running = float(med) if isinstance(med, (int, float)) and 0 < med < math.inf else None
        dec = Decision(c, f"{e['reason']} (remembered from an earlier run of this model "
                       "and configuration on this machine: no preflight)",
                       dict(e["medians_ns"]), {}, "cache")
        baseline = Load(float(e["events_per_step"]), int(e["alive_agents"]))
        kind = regime(baseline)
        s = self.rt.stats()
        self._close_call_remembered = bool(
            mine and others and others[0] <= DecisionCache.CLOSE * mine)
        if running is not None:
            self._running_ns = running
            self._k = self._visit_steps(running)
        self.decision = dec
        self.history.append(dec)
        self.timings = {}
        self.from_cache = True
        self._probe = None
        self.state = "monitor"
        self._baseline = baseline
        self.regimes[kind] = c
        self._mark = (s["events"], s["windows"], s["steps"])
        self.countdown = self._check_interval()
        log.info("%s (cache): %s", self.rt.model, dec.reason)

    def _remember(self, dec: Decision, run_steps: int) -> None:
        """Keep ``dec`` (made ``run_steps`` into the run) for the cache: written
        by a monitor check once the run has paid for the write (``save_ns``
        within ``probe_share`` of its step time), else when the runtime closes
        or the interpreter exits."""
        if self.cache is None or self.features is None:
            return
        # the step time only where one was measured: a decision made without
        # timing anything (a model with one candidate) has none
        step_ns = self._step_ns()
        self._unsaved = {
            "executor": dec.candidate.executor, "threads": dec.candidate.threads,
            "reason": dec.reason, "medians_ns": dict(dec.medians_ns),
            "step_ns": step_ns if 0.0 < step_ns < math.inf else None,
            "events_per_step": self.features.events_per_step,
            "alive_agents": self.features.alive_agents}
        share = self.probe_share if self.probe_share is not None else 0.05
        self._save_from = run_steps + math.ceil(
            self.save_ns / share / max(1.0, min(step_ns, 1e12)))
        save_at_exit(self)

    def save_decision(self) -> None:
        """Write the latest preflight decision to the cache now if it is not
        yet (called when the runtime closes and at exit)."""
        entry, self._unsaved = self._unsaved, None
        saved(self)
        if entry is not None and self.cache is not None:
            self.cache.put(self._cache_key, entry)

    def notify_close(self) -> None:
        """The runtime is closing (called by ``Runtime.close``)."""
        self.save_decision()

    def _step_ns(self) -> float:
        """The running choice's step (ns): measured, else the features step's."""
        return self._running_ns if self._running_ns is not None else self._t_first

    # -- internals --------------------------------------------------------------------

    def _native_step(self, mask_ptr: Any) -> None:
        """The runtime's step (``_ran`` once it ran, ``_native_failed`` when it
        raised: `step` tells the step's own failure from the controller's)."""
        try:
            self.rt.step_uncontrolled(mask_ptr)
        except BaseException:
            self._native_failed = True
            raise
        self._ran = True

    def _counters(self) -> tuple[int, int]:
        s = self.rt.stats()
        return s["events"], s["windows"]

    def _switch(self, c: Candidate) -> float:
        """Run on ``c`` from the next step; the time a switch between executors
        took (it moves every pending event), else 0."""
        if self.rt.executor != c.executor:
            t0 = self._clock()
            self.rt.switch_executor(c.executor, c.threads)
            return float(self._clock() - t0)
        if self.rt.threads != c.threads:
            self.rt.switch_executor(c.executor, c.threads)
        return 0.0

    def _switch_back(self, prev: Candidate) -> None:
        """Undo the switch made for a step that did not run.  Best effort: the
        step's own error is the one raised; should the switch back fail, the
        runtime stays where it is, which the retried visit switches to anyway."""
        with contextlib.suppress(SeerError):
            if self._current() != prev:
                self._switch(prev)

    def _switch_after(self, c: Candidate) -> None:
        """A switch after a step that ran (a decision, a returning regime): a
        runtime that cannot switch now keeps its configuration (outputs do not
        depend on it) instead of failing the step that already happened."""
        try:
            self._switch(c)
        except SeerError as exc:
            log.warning("%s: cannot switch to %s (%s); staying on %s", self.rt.model,
                        c.label, exc, self._current().label)

    def _leave_out(self, pr: _Probe, c: Candidate, exc: Exception) -> None:
        log.warning("%s: cannot switch to %s (%s); left out of this probe", self.rt.model,
                    c.label, exc)
        pr.unreachable.add(c)
        pr.dropped.add(c)
        pr.queue = self._without_idle_warmups([v for v in pr.queue if v.cand != c])

    def _set_features(self, events: int, windows: int) -> None:
        rt = self.rt
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
            cores=self.cores,
            cache_bytes=self.caches,
            events_per_step=float(events),
            windows_per_step=float(windows),
            alive_agents=int(np.count_nonzero(rt.alive)),
            working_set_bytes=int(rt.num_instances * sz.num_entities * (sz.entity_size + 128)
                                  + pool * 64),
        )

    def _candidates(self) -> list[Candidate]:
        assert self.features is not None
        return candidate_set(self.features, self.max_threads)

    def _plan_after_features(self, pr: _Probe) -> None:
        pr.candidates = cands = pr.candidates or self._candidates()
        if self._t_first < self.tiny_ns and any(c.threads == 1 for c in cands):
            # probing pools costs more than they could win back on such steps
            pr.leave_out_pools([c for c in cands if c.threads > 1], self._t_first)
            # and timing the one-thread candidates too: they differ by a few
            # percent of a tiny step (less than a probe's bookkeeping costs
            # per step, and less than a young process's steps vary), so the
            # serial executor runs untimed; a confirmation re-probe times
            # them once the run has lasted long enough to pay for it
            self._decide(pr)
            return
        if self._defer_pools(pr):
            return
        big = max(c.threads for c in pr.candidates)
        if self.trace_enabled and big > 1 and self.rt.trace_capacity == 0:
            pr.stage = "trace"
            # the parallel executor's windows say most about the pools to time;
            # for lookahead 0 the optimistic executor is the only pool
            ex = "parallel" if self.rt.sizes.lookahead > 0.0 else "optimistic"
            # one untraced step first: a pool's first step pays its one-time
            # set-up (threads woken, the optimistic executor's logs and
            # mailboxes), which the traced step must not be judged by
            pr.queue = [_Visit(Candidate(ex, big), timed=False),
                        _Visit(Candidate(ex, big), timed=False, traced=True)]
        else:
            self._plan_timing(pr)

    def _pool_probe_cost(self, step_ns: float, n_cands: int) -> float:
        """What probing ``n_cands`` candidates would cost beyond their steps'
        own work (ns): the pools' fixed cost and the controller's per step."""
        steps = 2 + self.rounds * n_cands * (self._visit_steps(step_ns) + 1)
        return self.pool_probe_ns + steps * self.probe_step_ns

    def _run_steps(self) -> int:
        return int(self.rt.stats()["steps"]) - self._steps0

    def _expected_steps(self) -> int:
        """Steps the run will take at least, as far as one can tell: those run
        so far, and at least an episode (``max_cycles``) once one was reset."""
        mc = getattr(self.rt, "max_cycles", 0)
        return max(self._run_steps(), mc if isinstance(mc, int) and mc > 0 else 0)

    def _defer_pools(self, pr: _Probe) -> bool:
        """After a preflight's features steps: put the pools' probe off while
        it would cost more than ``probe_share`` of the run's step time (its
        steps so far, an episode at least: `_expected_steps`; the serial
        executor runs untimed meanwhile).  True when put off."""
        if pr.trigger != "preflight" or pr.resumed or self.probe_share is None:
            return False
        pools = [c for c in pr.candidates if c.threads > 1]
        if not pools:
            return False
        t = self._t_first
        cost = self._pool_probe_cost(t, len(pr.candidates))
        expected = self._expected_steps()
        need = math.ceil(cost / (self.probe_share * t))
        if need <= expected:
            return False
        c = SERIAL if SERIAL in pr.candidates else pr.candidates[0]
        why = (f"{in_words(c).capitalize()} for now, untimed: a step takes {t / 1e3:.1f} us, "
               f"and probing {', '.join(p.label for p in pools)} would cost about "
               f"{cost / 1e6:.1f} ms beyond the steps' own work, over "
               f"{self.probe_share:.0%} of the run's step time so far (an episode at least); "
               "they are probed once "
               f"the run has taken about {need} steps (more if its steps get shorter, none "
               f"if they fall under {self.tiny_ns / 1e3:g} us). Limit: the run so far is too "
               "short to pay for probing the pools")
        self._deferred = t
        self._decide(pr, Decision(c, why + ".", {}, {}, pr.trigger))
        self._defer_countdown = self._next_deferred_check(need, expected)
        return True

    def _next_deferred_check(self, need: int, expected: int) -> int:
        """Steps to the next look at a put-off pool probe: when the run will
        have taken the ``need`` steps that pay for it (``expected`` now), at
        most ``check_every`` -- unless looks that often would cost over 1% of
        the steps (`_check_interval`: a look costs what a monitor check does)."""
        return max(1, min(self._check_interval(), need - expected))

    def _deferred_check(self, step_ns: float) -> None:
        """A step of a run whose pool probe was put off (every ``check_every``
        steps and after each reset): start the probe once the run can pay for
        it; settle on the tiny choice if its steps turned out tiny."""
        assert self._deferred is not None and self.features is not None
        assert self.probe_share is not None
        t = self._deferred = min(self._deferred, step_ns)
        cands = self._candidates()
        expected = self._expected_steps()
        need = math.ceil(self._pool_probe_cost(t, len(cands)) / (self.probe_share * t))
        self.countdown = self._next_deferred_check(need, expected)
        if t < self.tiny_ns:
            # a young process's steps were slow; warm, they are tiny
            self._deferred = None
            pr = _Probe("preflight", self.rounds, resumed=True)
            pr.candidates = cands
            pr.leave_out_pools([c for c in cands if c.threads > 1], t)
            self._decide(pr)
            return
        if need > expected:
            return
        self._deferred = None
        s = self.rt.stats()
        ev0, win0, st0 = self._mark
        steps = max(1, s["steps"] - st0)
        self._set_features(int(round((s["events"] - ev0) / steps)),
                           int(round((s["windows"] - win0) / steps)))
        pr = _Probe("preflight", self.rounds, resumed=True)
        pr.candidates = cands
        self._t_first = t
        self._k = self._visit_steps(t)
        self._probe = pr
        self.state = "preflight"
        log.info("%s: the run can now pay for probing the pools", self.rt.model)
        self._plan_after_features(pr)
        self.countdown = 0 if self._probe is not None else self.check_every

    def _trace_on(self, cand: Candidate) -> None:
        """Trace the next step without a record per event (phases' spans with
        their event counts, barrier waits: what `summarize_trace` needs): a
        record per event cost PCS 64x64's preflight a step's time again, and
        copying and summarizing them several more."""
        assert self.features is not None
        f = self.features
        L = self.rt.sizes.lookahead
        # windows of width L a step (and a phase a chunk of speculation)
        windows = (f.step_duration / L if L > 0.0 else f.events_per_step / 256.0) + 2.0
        per_worker = int(min(1 << 16, 8 * (windows + f.num_instances) + 256))
        self.rt.trace(per_worker, events=False)

    def _plan_timing(self, pr: _Probe) -> None:
        assert self.features is not None
        plan = probe_plan(self.features, self.trace_summary, pr.candidates, self.prune)
        pr.pruned = [c for c in pr.candidates if c not in plan]
        plan = ([c for c in plan if c not in pr.dropped]
                or [c for c in plan if c not in pr.unreachable][:1] or [self._current()])
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
        cur = self._current()
        plan = sorted(plan, key=lambda c: (c.executor != cur.executor, c != cur,
                                           EXECUTORS.index(c.executor), c.threads))
        prev = cur
        for r in range(1 if pr.tiny else pr.rounds):
            for c in (plan if r % 2 == 0 else plan[::-1]):
                if c != prev:  # a warm-up step after a switch
                    pr.queue.append(_Visit(c, timed=False))
                pr.queue.extend(_Visit(c, timed=True) for _ in range(self._k))
                prev = c

    def _without_idle_warmups(self, queue: list[_Visit]) -> list[_Visit]:
        """``queue`` less the warm-up steps no switch precedes any more (the
        visit between two of a candidate's visits was taken out)."""
        out: list[_Visit] = []
        prev = self._current()
        for v in queue:
            if v.timed or v.traced or v.cand != prev:
                out.append(v)
            prev = v.cand
        return out

    def _prune_queue(self, pr: _Probe) -> None:
        self._leave_pools_if_tiny(pr)
        # dropped after two visits, not one: one slow visit (a transient on the
        # host) dropped the optimistic executor on classic PCS 32x32 in one of
        # five bench runs, where it runs 1.2x the serial executor
        out = {c for c in eliminated(pr.timings, self.drop)
               if len(pr.timings[c]) >= 2 * self._k} - pr.dropped
        if out:
            pr.dropped |= out
            pr.queue = self._without_idle_warmups(
                [v for v in pr.queue if v.cand not in pr.dropped])

    def _leave_pools_if_tiny(self, pr: _Probe) -> None:
        """Once a one-thread candidate's visit is timed: if its steps take less
        than ``tiny_ns`` (the first step, cold, may not have shown it), the pools
        of several threads are not timed, and one round is enough."""
        if pr.tiny:
            return
        ones = [statistics.median(v) for c, v in pr.timings.items() if c.threads == 1 and v]
        if not ones or min(ones) >= self.tiny_ns:
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

    def _extend_or_decide(self, pr: _Probe) -> None:
        # tiny steps: a close call between one-thread candidates is not worth
        # more steps (what either wins is a fraction of a tiny step)
        pair = None if pr.extended or pr.tiny else close_call(
            {c: v for c, v in pr.timings.items() if c not in pr.dropped}, self.tie)
        if pair is None:
            self._decide(pr)
            return
        # a close call: more visits of the two fastest only, forth and back
        pr.extended = True
        for r in range(self.extra_rounds):
            for c in (pair if r % 2 == 0 else pair[::-1]):
                pr.queue.append(_Visit(c, timed=False))
                pr.queue.extend(_Visit(c, timed=True) for _ in range(self._k))
        pr.queue = self._without_idle_warmups(pr.queue)
        # ... if the run can pay for them: the two are within `tie` of each
        # other, and between executors each switch moves every pending event
        # (0.5 ms and a slow step after it on classic PCS 32x32: the extra
        # visits cost more than a short run could win back)
        order = [self._current(), *(v.cand for v in pr.queue)]
        switches = sum(1 for a, b in itertools.pairwise(order) if a.executor != b.executor)
        cost = (switches * (statistics.median(self._switch_ns) if self._switch_ns else 0.0)
                + len(pr.queue) * self.probe_step_ns)
        best = min(statistics.median(pr.timings[c]) for c in pair)
        if self.probe_share is not None and cost > self.probe_share * self._expected_steps() * best:
            pr.queue = []
        if not pr.queue:  # no extra rounds (extra_rounds=0, or more than the run can pay)
            self._decide(pr)

    def _tiny_now(self, now: Load) -> bool:
        """Is a step at load ``now`` shorter than ``tiny_ns`` (the running
        choice's median, scaled by the events per step since it was measured)?"""
        assert self.decision is not None and self._baseline is not None
        running = self._running_ns
        if running is None or self._baseline.events_per_step <= 0:
            return False
        return running * now.events_per_step / self._baseline.events_per_step < self.tiny_ns

    def _confirm_wait(self) -> float:
        """Steps a confirmation re-probe waits at least: ``confirm_budget`` times
        what it would cost, in steps of the running choice.  It takes its rounds
        of warm-up and timed visits of the running choice and its neighbours,
        each step with the controller's bookkeeping (``probe_step_ns``) on top,
        and the switches between executors of each round.  Counted in steps
        alone, it waited 50 confirmations' steps, and on steps of 10 us, where
        the bookkeeping is twice the step, confirming took 9% of a long run
        of PCS 4x4.  With ``confirm_budget`` = 50, confirming takes 2% of the
        run's time at most.  A
        remembered close call (the runner-up within ``CLOSE`` of the choice,
        on one earlier probe's few samples) is confirmed sooner: once
        ``probe_share`` of the run's step time covers the confirmation."""
        steps = self.reprobe_rounds * 3 * (self._k + 1)
        t = max(1.0, self._step_ns())
        if not math.isfinite(t):
            # no step was timed (a run started from a remembered decision
            # without a step time): the confirmation's steps, confirm_budget
            # times over
            return math.ceil(self.confirm_budget * steps)
        if self._close_call_remembered and self.probe_share is not None:
            cost = self.pool_probe_ns + steps * self.probe_step_ns
            return math.ceil(cost / (self.probe_share * t))
        # what confirming costs: estimated (its steps whole, as if each ran on
        # a candidate no faster than the choice, with their bookkeeping, and
        # a round's switches between executors), or as the last confirmation
        # measured it beyond its steps' own work, whichever is more
        switch = statistics.median(self._switch_ns) if self._switch_ns else 0.0
        cost = max(steps * (t + self.probe_step_ns) + 2 * self.reprobe_rounds * switch,
                   self._confirm_cost_ns)
        return math.ceil(self.confirm_budget * cost / t)

    def _current(self) -> Candidate:
        return Candidate(self.rt.executor, self.rt.threads)

    def _decide(self, pr: _Probe, provisional: Decision | None = None) -> None:
        """Choose from ``pr``'s timings (or take ``provisional``, a choice made
        while the pools' probe is put off) and switch to the choice."""
        assert self.features is not None
        timings = {c: v for c, v in pr.timings.items() if c not in pr.unreachable}
        tiny_why = (f"a step takes {pr.step_ns / 1e3:.1f} us, less than "
                    f"{self.tiny_ns / 1e3:g} us: too short for a pool's synchronisation to "
                    "pay, so " + ", ".join(d.label for d in pr.tiny) + " were not timed"
                    ) if pr.tiny else ""
        if provisional is not None:
            dec = provisional
        elif not timings and pr.tiny:
            c = SERIAL if SERIAL in pr.candidates else pr.candidates[0]
            if len(pr.candidates) == 1:
                why = f"{c.label}: the only one-thread candidate"
            else:
                why = (f"{in_words(c).capitalize()}, untimed: on one thread the "
                       "executors differ by a few percent of such a step, less than "
                       "timing them costs (a confirmation re-probe times them once the "
                       "run has lasted long enough to pay for it)")
            dec = Decision(c, f"{why}. Limit: {tiny_why}.", {}, {}, pr.trigger)
        elif len(pr.candidates) == 1 and not timings:
            c = pr.candidates[0]
            slow = pr.dropped - pr.unreachable
            if pr.dropped:
                why = f"{c.label}: the only candidate left ("
                if slow:
                    why += (", ".join(sorted(d.label for d in slow))
                            + f" dropped: its traced step took over {self.drop_traced:g}x "
                            "the first step")
                if pr.unreachable:
                    why += ("; " if slow else "") + ", ".join(
                        sorted(d.label for d in pr.unreachable)) + ": the runtime could not switch"
                why += ")"
            elif pr.pruned:
                pred = {d.label: predict_step_ns(self.features, self.trace_summary, d)
                        for d in [c, *pr.pruned]} if self.trace_summary else {}
                why = (f"{c.label}: the only candidate timed ("
                       + ", ".join(f"{d.label} predicted {pred[d.label] / pred[c.label]:.2f}x "
                                   "its step time" if pred else d.label
                                   for d in pr.pruned)
                       + f" from the traced step, over the {self.prune:g}x pruning bound)")
            else:
                why = (f"{c.label}: the only candidate "
                       f"(lookahead {self.features.lookahead:g}, {self.cores} core(s))")
            why += f". Limit: {limiting_factor(self.features, self.trace_summary, {}, c)}."
            dec = Decision(c, why, {}, {}, pr.trigger)
        else:
            confirm = pr.trigger == "confirm" and self.decision is not None
            dec = select(timings, self.features, self.trace_summary, self.margin,
                         pr.trigger,
                         incumbent=cast(Decision, self.decision).candidate if confirm
                         else None,
                         hysteresis=self.hysteresis if confirm else 0.0)
            if pr.tiny and dec.candidate.threads == 1:
                dec = dataclasses.replace(
                    dec, reason=dec.reason.rsplit(" Limit: ", 1)[0] + f" Limit: {tiny_why}.")
        same = self.decision is not None and dec.candidate == self.decision.candidate
        self.decision = dec
        self._running_ns = dec.medians_ns.get(dec.candidate.label,
                                              pr.step_ns if pr.tiny and not timings else None)
        self.history.append(dec)
        self.timings = {c.label: v for c, v in pr.timings.items()}
        # pools far off the pace (or dropped after their first step) are left out
        # of confirmation re-probes until the workload drifts
        self._hopeless = (pr.dropped - set(pr.timings)) | eliminated(pr.timings, 3.0)
        self._switch_after(dec.candidate)
        self._probe = None
        self.state = "monitor"
        s = self.rt.stats()
        ev0, st0 = pr.mark
        if s["steps"] > st0 and pr.trigger not in ("preflight", "confirm"):
            # a drift re-probe: the new load as its own steps ran it (the check
            # that saw the drift may have caught the change half-way)
            self._baseline = Load((s["events"] - ev0) / (s["steps"] - st0),
                                  int(np.count_nonzero(self.rt.alive)))
        else:
            self._baseline = Load(self.features.events_per_step, self.features.alive_agents)
        self._steps_since_probe = 0
        if pr.trigger != "preflight":
            self._gap = min(1 << 14, self._gap * 2) if same else self.reprobe_gap
            self._close_call_remembered = False  # confirmed (or replaced)
        self._mark = (s["events"], s["windows"], s["steps"])
        self.regimes[regime(self._baseline)] = dec.candidate
        if pr.trigger == "preflight" and self._deferred is None:
            self._remember(dec, s["steps"] - self._steps0)
        log.info("%s (%s): %s", self.rt.model, pr.trigger, dec.reason)
        log.debug("features %s; trace %s; medians %s", self.features,
                  self.trace_summary, dec.medians_ns)

    def _account(self, pr: _Probe, t_out: int) -> None:
        ns = t_out - pr.t_start
        self.probe_steps += pr.steps
        self.probe_ns += ns
        if pr.trigger == "confirm" and self._running_ns is not None:
            self._confirm_cost_ns = max(0.0, ns - pr.steps * self._running_ns)
        if pr.trigger == "preflight":  # the features steps, and a pool stage put off
            self.preflight_steps += pr.steps
            self.preflight_ns += ns

    def notify_reset(self) -> None:
        """The runtime was reset (called by ``Runtime.reset``): the load is likely
        back to an episode's start, so the next step's load is checked at once.
        During a probe the next step goes on with it (a probe cut short is
        mended first: `_settle`)."""
        if self.state == "failed":
            return
        try:
            self._notify_reset()
        except Exception as exc:
            self._fail(exc)

    def _notify_reset(self) -> None:
        pr = self._probe
        if pr is None and self._deferred is None and self._running_ns is not None \
                and self._running_ns < self.tiny_ns:
            # tiny steps: no pool could pay, so a new episode's load waits for
            # the next periodic check (a check costs a few tiny steps)
            return
        if pr is not None and not self._settle(pr):
            self._account(pr, self._clock())
        if self._probe is None:
            s = self.rt.stats()
            self._mark = (s["events"], s["windows"], s["steps"])
            self.countdown = 1
        else:
            self.countdown = 0

    def _check_interval(self) -> int:
        """Steps between two monitor checks: ``check_every``, or more where a
        check's own cost (the last checks' median as measured, ``check_ns``
        at least) would be over 1% of the steps'."""
        t = self._step_ns()
        if not 0.0 < t < math.inf:
            return self.check_every
        cost = max(self.check_ns, statistics.median(self._check_costs)) if self._check_costs \
            else self.check_ns
        return max(self.check_every, math.ceil(cost / (0.01 * t)))

    def _check_drift(self) -> None:
        """A monitor check (`step` spaces the next by what this one cost)."""
        s = self.rt.stats()
        if self._unsaved is not None and s["steps"] - self._steps0 >= self._save_from:
            self.save_decision()
        ev0, win0, st0 = self._mark
        steps = s["steps"] - st0
        if steps <= 0:
            return
        self._steps_since_probe += steps
        self._mark = (s["events"], s["windows"], s["steps"])
        now = Load((s["events"] - ev0) / steps, int(np.count_nonzero(self.rt.alive)))
        assert self._baseline is not None
        why = drift(self._baseline, now, self.drift_factor, self.alive_drop)
        # a regime seen before, other than the running one's (a drift within the
        # regime -- live agents dropped at the same events per step -- probes)
        known = (self.regimes.get(regime(now))
                 if why is not None and regime(now) != regime(self._baseline) else None)
        if known is not None:
            # a regime seen before: its choice at once, no probe
            if known != self._current():
                self._switch_after(known)
                self.regime_switches += 1
                log.info("%s: load regime %d again (%s): back to %s", self.rt.model,
                         regime(now), why, known.label)
            self._baseline = now
            return
        if why is not None and self._tiny_now(now):
            # steps this short: no pool could win back what a drift re-probe
            # costs (a confirmation, which waits for its budget, still times
            # the one-thread candidates below)
            self._baseline = now
            self.regimes[regime(now)] = self._current()
            return
        if why is not None:
            # a drift re-probe that kept the choice doubles the wait before
            # the next one (a workload that keeps swinging -- episodes that end
            # and restart -- does not re-probe every reprobe_gap steps)
            if self._steps_since_probe < self._gap:
                return
            log.info("%s: workload drift (%s): re-probing", self.rt.model, why)
        else:
            if (not self.confirm
                    or self._steps_since_probe < max(self._gap, self._confirm_wait())):
                return
            why = "confirm"
        windows = (s["windows"] - win0) / steps
        self._set_features(int(round(now.events_per_step * 1)),
                           int(round(windows)))
        assert self.features is not None and self.decision is not None
        pr = _Probe(why, self.reprobe_rounds, mark=(s["events"], s["steps"]))
        pr.candidates = neighbours(self.decision.candidate, self._candidates())
        running = self._running_ns
        if running is not None and running < self.tiny_ns:
            pr.leave_out_pools([c for c in pr.candidates
                                if c.threads > 1 and c != self.decision.candidate], running)
        if why == "confirm":
            pr.candidates = [c for c in pr.candidates if c not in self._hopeless]
        self._probe = pr
        self.state = "probing"
        self._plan_timing(pr)
        if not pr.queue:
            self._decide(pr)
        else:
            self.countdown = 0


def run_workload(runtime: Any) -> dict[str, float]:
    """The workload of ``runtime``'s run so far, from its counters: steps,
    events and windows (speculation phases, for the optimistic executor) per
    step, events rolled back per event handled, and steps run serially after
    an abandoned speculation."""
    s = runtime.stats()
    steps = max(1, s["steps"])
    return {"steps": float(s["steps"]), "events_per_step": s["events"] / steps,
            "windows_per_step": s["windows"] / steps,
            "rolled_back_per_event": s["events_rolled_back"] / max(1, s["events"]),
            "serial_steps": float(s["serial_steps"])}


class FixedChoice(_Running):
    """What runs when the executor and pool were given (``threads=N``, or an
    executor STPA does not choose for): ``env.stpa`` is one of these instead of an
    [`Stpa`][seer_env.stpa.Stpa], with the same read-only face:

    ```python
    env = pcs_v0.parallel_env(width=32, height=32, threads=2)
    print(env.stpa.executor, env.stpa.threads, env.stpa.reason)
    print(env.stpa.workload["events_per_step"])
    ```
    """

    state = "fixed"
    decision = None
    deferred = False
    settled = True
    history: tuple[Decision, ...] = ()

    def __init__(self, runtime: Any) -> None:
        self.rt = runtime

    @property
    def reason(self) -> str:
        """Why this configuration runs: it was asked for."""
        c = Candidate(self.executor, self.threads)
        asked = getattr(self.rt, "requested_threads", None)
        how = "as asked"
        if self.executor != "serial" and isinstance(asked, str):
            how = "as asked (threads='auto' with an executor given: every CPU)"
        elif isinstance(asked, int) and asked > self.threads:
            how = (f"{asked} threads asked, capped at the {self.threads} CPU(s) this process "
                   "may run on (more threads than CPUs only wait for each other)")
        return (f"{in_words(c).capitalize()}, {how}: STPA chooses only with threads='auto' "
                "and no executor given")

    def as_dict(self) -> dict[str, Any]:
        """Everything as plain data (for JSON reports)."""
        return {"state": self.state, "executor": self.executor, "threads": self.threads,
                "reason": self.reason, "workload": self.workload}

    def __repr__(self) -> str:
        return f"FixedChoice({self.executor}, threads={self.threads})"


def describe(runtime: Any) -> Stpa | FixedChoice:
    """What chooses ``runtime``'s executor and pool: its [`Stpa`][seer_env.stpa.Stpa]
    controller (``threads="auto"``), else a [`FixedChoice`][seer_env.stpa.FixedChoice]
    saying what was asked for."""
    return runtime.stpa if runtime.stpa is not None else FixedChoice(runtime)


def attach(runtime: Runtime, **options: Any) -> Stpa | None:
    """Attach an [`Stpa`][seer_env.stpa.Stpa] controller (``options``: its keyword arguments)
    to ``runtime`` if it asked for one (``threads="auto"`` with the parallel
    executor: `Runtime.auto_threads`); returns it, else None."""
    if not runtime.auto_threads:
        return None
    st = Stpa(runtime, **options)
    runtime.attach(st)
    return st


__all__ = ["Stpa", "FixedChoice", "attach", "describe", "run_workload"]
