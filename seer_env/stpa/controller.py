"""STPA's controller: `Stpa` runs a runtime's steps, probes the candidates
(preflight, confirmations, drift re-probes), decides with the cost model
(`seer_env.stpa.cost`) and watches the workload; `FixedChoice` stands for it
where the configuration was given.  See `seer_env.stpa` for the whole story.

`Stpa` is the facade: its public face (the attributes, `settled`, `reason`,
`as_dict`), the step hook the runtime calls (`Stpa.step`) with the handling of
its own failures, and the runtime's switches between steps.  The work is done
by three parts, each holding its own state, which the controller hands itself
to (as ``host``, typed in each part by a `typing.Protocol`):

* `seer_env.stpa.probe`: the probe in progress and its steps (`Prober`);
* `seer_env.stpa.monitor`: the checks after a decision (`Monitor`);
* `seer_env.stpa.decision`: deciding, and the decision cache (`Decisions`).

The top of the `seer_env.stpa` package: above those parts, the decision cache
(`seer_env.stpa.cache`) and the cost model.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._bind.runtime import Runtime, cpu_count, process_calls
from ..budget import lease, thread_budget
from ..errors import SeerError
from .cache import DecisionCache, cache_wanted, saved
from .company import (
    CpuSample,
    cpu_sample,
    other_threads_cpu_ns,
    pool_wait_ns,
    process_cpu_ns,
    raised_by_caller,
    with_processes,
)
from .cost import (
    SERIAL,
    Candidate,
    Decision,
    Features,
    TraceSummary,
    cache_sizes,
    first_candidate,
    in_words,
)
from .decision import Decisions
from .monitor import Monitor
from .options import OPTIONS, check_options
from .probe import Probe, Prober, note_probe_step

log = logging.getLogger("seer_env.stpa")

#: a countdown no run reaches (a failed controller is never called again)
_NEVER = 1 << 62


# -- the controller ----------------------------------------------------------------


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
            first (one-thread) step is traced once more, and where that one
            does too it is not timed (a loaded machine, a hopeless pool).
        tie: when the two fastest medians are within ``tie``, ``extra_rounds``
            alternating visits of those two follow (`close_call`).
        confirm: re-probe the neighbourhood of the choice every ``reprobe_gap``
            steps even without drift (the gap doubles after each confirmation),
            for workloads that change slowly as the simulation warms up.
        hysteresis: a confirmation re-probe replaces the running choice only
            with a candidate faster by more than this fraction.
        recheck_ns: a confirmation that would replace the running choice with
            no company to explain it keeps the choice, and another, this long
            later (16 steps at least), decides (a moment of the host's noise
            lasts: timed again at once, in the same moment, it agreed).
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
        cpu_sampler: what the probe reads to see other processes' load
            (`seer_env.stpa.company.cpu_sample`: this process's CPU time and
            the machine's busy time); default that with the default clock,
            none with a clock of the caller's (a simulated clock's run has no
            company to compare with the machine's).
        proc_sampler: what reads every other process's CPU time where the
            machine is busy, to share the cores out process by process
            (`seer_env.stpa.company.process_cpu_ns`, from ``/proc``); default
            that with the default clock, none with a clock of the caller's.
        wait_sampler: what reads, from the runtime, how long its pool's other
            threads have waited for a core so far (ns; None: unknown), read
            around the pools' timed probe steps: threads that wait a quarter
            of the steps' time found their cores taken (another process, or a
            thread pool of this one spinning between its operations)
            (`seer_env.stpa.company.pool_wait_ns`, from ``/proc``); default
            that with the default clock, none with a clock of the caller's.
        thread_sampler: what reads, given the runtime, this process's other
            threads' time on a core (ns by tid; not the caller's, not the
            pool's), where a probe's timed steps begin and at its decision:
            a pool's waits for a core are put on a thread pool of this
            process only where its other threads were busy
            (`seer_env.stpa.company.other_threads_cpu_ns`, from ``/proc``);
            default that with the default clock, none with a clock of the
            caller's.
        fair_share: beside other processes that keep cores busy during a probe,
            choose no pool of more threads than this run's share of the cores
            (`seer_env.stpa.company.fair_cores`: the cores less the others'
            load, rounded), as OpenMP's dynamic teams do: a pool on their cores
            wins its own iterations a little and slows theirs more.  Where
            each process's load is read, a max-min fair share: processes
            that used less keep theirs, the others (env processes that adapt
            as this one) get an equal share each.  False:
            the fastest iteration of this run alone decides.
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
                 recheck_ns: float = 250_000_000.0,
                 confirm_budget: float = 50.0, probe_share: float | None = 0.05,
                 pool_probe_ns: float = 1_000_000.0, probe_step_ns: float = 20_000.0,
                 check_ns: float = 100_000.0, save_ns: float = 800_000.0,
                 clock: Callable[[], int] | None = None,
                 cpu_sampler: Callable[[], CpuSample] | None = None,
                 proc_sampler: Callable[[], Mapping[int, int] | None] | None = None,
                 wait_sampler: Callable[[Any], int | None] | None = None,
                 thread_sampler: Callable[[Any], Mapping[int, int] | None] | None = None,
                 fair_share: bool = True,
                 cache: bool | None = None, cache_path: Path | None = None) -> None:
        # a bad option is the caller's mistake: a ConfigError naming it, now
        check_options({k: v for k, v in locals().items() if k in OPTIONS})
        self.rt = runtime
        self.rounds = int(rounds)
        self.reprobe_rounds = int(reprobe_rounds)
        self.min_visit_ns = float(min_visit_ns)
        self.margin = float(margin)
        self.fair_share = bool(fair_share)
        self.prune = float(prune)
        self.check_every = int(check_every)
        self.drift_factor = float(drift_factor)
        self.alive_drop = float(alive_drop)
        self.reprobe_gap = int(reprobe_gap)
        # an int (a NumPy one would make another cache key: its repr)
        self.max_threads = max_threads = None if max_threads is None else int(max_threads)
        self.trace_enabled = bool(trace)
        self.drop = float(drop)
        self.drop_traced = float(drop_traced)
        self.tie = float(tie)
        self.hysteresis = float(hysteresis)
        self.recheck_ns = float(recheck_ns)
        self.extra_rounds = int(extra_rounds)
        self.confirm = bool(confirm)
        self.tiny_ns = float(tiny_ns)
        self.confirm_budget = float(confirm_budget)
        self.probe_share = None if probe_share is None else float(probe_share)
        self.pool_probe_ns = float(pool_probe_ns)
        self.probe_step_ns = float(probe_step_ns)
        self.check_ns = float(check_ns)
        self.save_ns = float(save_ns)
        self._steps0 = int(runtime.stats()["steps"])
        self._clock: Callable[[], int] = clock or time.perf_counter_ns
        self.cpu_sampler: Callable[[], CpuSample] | None = (
            cpu_sampler if cpu_sampler is not None or clock is not None else cpu_sample)
        self.proc_sampler: Callable[[], Mapping[int, int] | None] | None = (
            proc_sampler if proc_sampler is not None or clock is not None else process_cpu_ns)
        self.wait_sampler: Callable[[Any], int | None] | None = (
            wait_sampler if wait_sampler is not None or clock is not None else pool_wait_ns)
        self.thread_sampler: Callable[[Any], Mapping[int, int] | None] | None = (
            thread_sampler if thread_sampler is not None or clock is not None
            else other_threads_cpu_ns)
        # the machine's load since the run began: what a first probe, too short
        # for /proc/stat's ticks, reads the company from
        self.cpu_start: CpuSample | None = (
            with_processes(self.cpu_sampler(), self.proc_sampler)
            if self.cpu_sampler is not None else None)
        # the process's thread budget (seer_env.budget) when not given: the
        # affinity mask, the cgroup's quota and SEER_ENV_THREADS
        budget = getattr(runtime, "budget", None)
        self._cores_given = int(cores) if cores else None
        self._budget_gen = lease.generation
        self._cores = (self._cores_given or
                       (budget.threads if budget else cpu_count()))
        self._budget_note = (budget.describe() if budget is not None and not cores
                             and budget.binding != "cpus" else "")
        self.caches = cache_sizes()
        self.state = "preflight"
        # Runtime.step calls step() when this is 1 or less, and takes one off
        # after every other step that ran (a refused step changes nothing)
        self.countdown = 0
        # the parts, each with its own state: the probe in progress (the
        # preflight's, from the first step), the checks after a decision, the
        # decisions and their cache
        self.prober = Prober(Probe("preflight", self.rounds))
        self.monitor = Monitor(gap=self.reprobe_gap)
        self.decisions = Decisions()
        self._ran = self._native_failed = False  # see `step`
        # the caller's own work between two steps (`ProbeHost.between_ns`):
        # from the end of one call of the controller to the start of the next,
        # known only where no step ran in between without it
        self.between_ns: float | None = None
        self._t_exit: int | None = None
        self._calls_exit = 0  # the process's calls (`process_calls`) at _t_exit
        self._t_in = 0  # the clock when the controller's running call began
        if cache_wanted(cache):
            self.decisions.cache = DecisionCache(cache_path)
            try:
                self.decisions.cache_key = DecisionCache.key(runtime, max_threads, self.cores,
                                                             self.caches)
                self.decisions.start_from_cache(self)
            except Exception as exc:  # a bug here must not stop the env being made
                # (`start_from_cache` changes nothing until nothing can fail)
                log.error("%s: STPA's decision cache failed (%s: %s): preflight",
                          runtime.model, type(exc).__name__, exc, exc_info=exc)
                self.decisions.cache = None
        if self.prober.probe is not None:
            # the features steps' executor from the start: the switch (and a
            # second executor's first steps) are not the run's
            with contextlib.suppress(SeerError):
                self._switch(first_candidate(self.rt.sizes.lookahead))

    # -- what the parts hold (the Attributes above) --------------------------------------

    @property
    def cores(self) -> int:
        """The cores this run may use: ``cores`` where given, else the
        process's thread budget (`seer_env.budget`), read again after it
        changed (`set_thread_budget` after the env was made)."""
        if self._cores_given is None and lease.generation != self._budget_gen:
            self._budget_gen = lease.generation
            with contextlib.suppress(SeerError):  # a bad SEER_ENV_THREADS: kept as it was
                b = thread_budget()
                self._cores = b.threads
                self._budget_note = b.describe() if b.binding != "cpus" else ""
                if self.decisions.cache is not None:  # decisions under it: its own key
                    with contextlib.suppress(Exception):
                        self.decisions.cache_key = DecisionCache.key(
                            self.rt, self.max_threads, self._cores, self.caches)
        return self._cores

    @property
    def budget_note(self) -> str:
        """The budget in words where it, not the CPUs, sets `cores` ("" otherwise)."""
        _ = self.cores  # read again where the budget changed
        return self._budget_note

    @property
    def decision(self) -> Decision | None:
        return self.decisions.decision

    @property
    def history(self) -> list[Decision]:
        return self.decisions.history

    @property
    def timings(self) -> dict[str, list[float]]:
        return self.decisions.timings

    @property
    def from_cache(self) -> bool:
        return self.decisions.from_cache

    @property
    def cache(self) -> DecisionCache | None:
        return self.decisions.cache

    @property
    def features(self) -> Features | None:
        return self.prober.features

    @property
    def trace_summary(self) -> TraceSummary | None:
        return self.prober.trace_summary

    @property
    def preflight_steps(self) -> int:
        return self.prober.preflight_steps

    @property
    def preflight_ns(self) -> int:
        return self.prober.preflight_ns

    @property
    def probe_steps(self) -> int:
        return self.prober.probe_steps

    @property
    def probe_ns(self) -> int:
        return self.prober.probe_ns

    @property
    def regimes(self) -> dict[int, Candidate]:
        return self.monitor.regimes

    @property
    def regime_switches(self) -> int:
        return self.monitor.regime_switches

    # -- public views -------------------------------------------------------------

    @property
    def deferred(self) -> bool:
        """The pools' probe is put off until the run can pay for it
        (``probe_share``); the running choice is provisional meanwhile."""
        return self.prober.deferred is not None

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
        return (self.decision is not None and self.prober.probe is None
                and self.prober.deferred is None)

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
        is, the reason says why) and the step runs, once.  An exception the
        caller's code raised meanwhile (a signal handler: a timeout's
        ``TimeoutError``) is the caller's: it propagates, as an interrupt
        does (`seer_env.stpa.company.raised_by_caller`).
        """
        if self.state == "failed":
            self._native_step(mask_ptr)
            self.countdown = _NEVER
            return
        before = (self.between_ns, self._t_exit, self._t_in)
        t_in = self._t_in = self._clock()
        # the caller's own work since our last step -- unknown where another
        # runtime of this process was called meanwhile (this call counts once
        # for a Runtime): the other envs of a round-robin loop, whose steps no
        # choice of ours changes, taken for the caller's work, made the envs'
        # probes blame each other's pools ("another thread pool spins ...")
        others = process_calls() - self._calls_exit > 1
        self.between_ns = None if self._t_exit is None or others \
            else float(t_in - self._t_exit)
        self._t_exit = None
        try:
            self._step(mask_ptr)
        except Exception as exc:
            # the step itself failed, or the caller's code (a signal handler)
            # raised during our bookkeeping: the caller's to see
            if self._native_failed or raised_by_caller(exc):
                raise
            self._fail(exc)
            if not self._ran:
                self._native_step(mask_ptr)
        finally:
            if not self._ran:  # refused: as if the call had not been made
                self.between_ns, self._t_exit, self._t_in = before
            elif self.countdown <= 1:  # the next step comes here too: time the caller's work
                self._t_exit = self._clock()
                self._calls_exit = process_calls()
            self._ran = self._native_failed = False  # for the next call

    def _fail(self, exc: BaseException) -> None:
        """Stop controlling after the controller's own failure ``exc``."""
        log.error("%s: STPA failed (%s: %s); the run goes on where it is, uncontrolled",
                  self.rt.model, type(exc).__name__, exc, exc_info=exc)
        self.prober.probe = None
        self.prober.deferred = None
        self.decisions.unsaved = None
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
        self.decisions.decision = dec
        self.decisions.history.append(dec)

    def _step(self, mask_ptr: Any) -> None:
        prober = self.prober
        pr = prober.probe
        if pr is not None and not prober.settle(self, pr):  # mended into a decision
            prober.account(pr, self._clock(), self.monitor.running_ns)
            pr = None
        if pr is None:
            if prober.deferred is not None:
                t0 = self._clock()
                self._native_step(mask_ptr)
                t1 = self._clock()
                prober.deferred_check(self, float(t1 - t0), self.monitor.mark)
                if prober.deferred is not None:
                    self.monitor.check_costs.append(float(self._clock() - t1))
                return
            t_step = self._clock()
            self._native_step(mask_ptr)
            t0 = self._clock()
            # a look at the user's iterations and this step (a company
            # re-probe if both slowed), then, when due, a full check
            if self.monitor.window(self, self._t_in, float(t0 - t_step)) \
                    and prober.probe is None:
                self._check_drift()
                if prober.probe is None:  # spaced by what the checks cost (`_check_interval`)
                    self.monitor.check_costs.append(float(self._clock() - t0))
            if prober.probe is None:
                self.countdown = self.monitor.next_countdown(self)
            return
        t_in = self._clock()
        if pr.stage == "features":
            prober.features_step(self, pr, mask_ptr)
        else:
            prober.visit_step(self, pr, mask_ptr)
        # the step ran: from here on only bookkeeping
        if pr.steps == 0:
            pr.t_start = t_in
        pr.steps += 1
        note_probe_step()
        prober.settle(self, pr)
        t_out = self._clock()
        if prober.probe is None:  # decided in this call: account the whole probe
            prober.account(pr, t_out, self.monitor.running_ns)
        self.countdown = (0 if prober.probe is not None else prober.defer_countdown
                          if prober.deferred is not None else self.monitor.next_countdown(self))

    def _check_drift(self) -> None:
        """A monitor check (`step` spaces the next by what this one cost): the
        decision written to the cache once the run has paid for it, then the
        monitor's check (`Monitor.check`)."""
        s = self.rt.stats()
        self.decisions.save_if_paid(self, s["steps"] - self._steps0)
        if self._current().threads > self.cores and self.monitor.baseline is not None:
            # the budget shrank below the running pool (set_thread_budget
            # after the decision): choose again within it
            log.info("%s: the thread budget is now %d thread(s): re-probing", self.rt.model,
                     self.cores)
            self.monitor.start_probe(self, "the thread budget changed", s)
            return
        self.monitor.check(self, s)

    def _decide(self, pr: Probe, provisional: Decision | None = None) -> None:
        """End ``pr`` with a decision (`Decisions.decide`; the parts call this)."""
        self.decisions.decide(self, pr, provisional)

    def _take_share(self, others: float, loads: list[float] | None = None) -> bool:
        """Beside other processes' load, the running pool cut to this run's
        share of the cores (`Decisions.take_share`; the monitor calls this)."""
        return self.decisions.take_share(self, others, loads)

    def _check_interval(self) -> int:
        """Steps between two monitor checks (`Monitor.check_interval`)."""
        return self.monitor.check_interval(self)

    def _step_ns(self) -> float:
        """The running choice's step (ns): measured, else the features step's."""
        running = self.monitor.running_ns
        return running if running is not None else self.prober.t_first

    # -- the runtime's end and resets -----------------------------------------------------

    def save_decision(self, wait_s: float | None = None) -> None:
        """Write the latest preflight decision to the cache now if it is not
        yet (called when the runtime closes and at exit, and at a monitor
        check once the run has paid for it: there it waits ``wait_s`` at most
        for other processes' writes, and tries again later)."""
        self.decisions.save(self, wait_s)

    def notify_close(self) -> None:
        """The runtime is closing (called by ``Runtime.close``)."""
        self.save_decision()

    def notify_reset(self) -> None:
        """The runtime was reset (called by ``Runtime.reset``): the load is likely
        back to an episode's start, so the next step's load is checked at once.
        During a probe the next step goes on with it (a probe cut short is
        mended first: `Prober.settle`)."""
        self._t_exit = None  # a reset is not the caller's work between two steps
        if self.state == "failed":
            return
        try:
            self._notify_reset()
        except Exception as exc:
            self._fail(exc)

    def _notify_reset(self) -> None:
        prober, monitor = self.prober, self.monitor
        pr = prober.probe
        if pr is None and prober.deferred is None and monitor.running_ns is not None \
                and monitor.running_ns < self.tiny_ns:
            # tiny steps: no pool could pay, so a new episode's load waits for
            # the next periodic check (a check costs a few tiny steps)
            return
        if pr is not None and not prober.settle(self, pr):
            prober.account(pr, self._clock(), monitor.running_ns)
        if prober.probe is None:
            s = self.rt.stats()
            monitor.mark = (s["events"], s["windows"], s["steps"])
            monitor.restart_windows()  # a new episode's iterations, checked at once
            self.countdown = 1
        else:
            self.countdown = 0

    # -- the runtime's steps and switches -------------------------------------------------

    def _native_step(self, mask_ptr: Any) -> None:
        """The runtime's step (``_ran`` once it ran, ``_native_failed`` when it
        raised: `step` tells the step's own failure from the controller's)."""
        try:
            self.rt.step_uncontrolled(mask_ptr)
        except BaseException:
            self._native_failed = True
            raise
        self._ran = True

    def _current(self) -> Candidate:
        return Candidate(self.rt.executor, self.rt.threads)

    def _switch(self, c: Candidate) -> float:
        """Run on ``c`` from the next step, its event records where a while on
        it would put them (`Runtime.tidy_records`: the steps a probe times
        right after a switch are then what ``c`` runs at, not what it runs at
        on the records the last configuration left); the time a switch
        between executors took (it moves every pending event), else 0."""
        if self.rt.executor != c.executor:
            t0 = self._clock()
            self.rt.switch_executor(c.executor, c.threads)
            self.rt.tidy_records()
            return float(self._clock() - t0)
        if self.rt.threads != c.threads:
            self.rt.switch_executor(c.executor, c.threads)
            self.rt.tidy_records()
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
        made = getattr(self.rt, "budget", None)  # the budget when the runtime was made
        how = "as asked"
        if self.executor != "serial" and isinstance(asked, str):
            how = ("as asked (threads='auto' with an executor given: the thread budget, "
                   f"{made.describe()})" if made is not None else
                   "as asked (threads='auto' with an executor given: every usable CPU)")
        elif isinstance(asked, int) and asked > self.threads:
            how = (f"{asked} threads asked, capped at the {self.threads} CPU(s) this process "
                   "may run on (more threads than CPUs only wait for each other)")
        text = (f"{in_words(c).capitalize()}, {how}: STPA chooses only with threads='auto' "
                "and no executor given")
        try:
            now = thread_budget()
        except SeerError:  # a bad SEER_ENV_THREADS: the next env made reports it
            now = None
        if now is not None and self.threads > now.threads:
            # the pool was made larger than the budget lends a call now
            text += (f"; each call runs on at most {now.threads} of its threads while the "
                     f"thread budget is {now.describe()} (seer_env.budget)")
        return text

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
