"""STPA's monitor: the checks after a decision.

Once a probe has decided, the controller runs the chosen configuration and,
every ``check_every`` steps (further apart where a check would cost over 1% of
the steps: `Monitor.check_interval`), checks the run's load against the load
the choice was made at (`Monitor.check`):

* a load regime seen before (`regime`) gets its choice back without a probe;
* a drift (`drift`: events per step changed by ``drift_factor``, or fewer than
  ``alive_drop`` of the agents alive) starts a re-probe of the running choice
  and its neighbours, at most every ``gap`` steps (the gap doubles each time a
  re-probe keeps the choice), and none where steps are too short for a pool
  to pay;
* with no drift, a confirmation re-probe starts once the run has paid for it
  (`Monitor.confirm_wait`), leaving out the pools found hopeless (once: the
  next confirmation times them again).

Between the checks, while a pool runs, the controller looks every few steps
(`Monitor.window`: a clock read, far under 1% of the steps; at least
`COMPANY_SPAN_NS` of iterations apart, so that load that comes and goes faster
averages out) at what the user pays per iteration, step call to step call.
Company that comes after the decision (a CPU burner, another env process, a
learner's threads) shows as iterations slower than the decision's: once the
last three windows' median is ``COMPANY_RISE`` over the first windows' after
the decision and over the one-thread candidate's iteration at the decision (or
``COMPANY_LOSS`` over both, where the caller's work is most of an iteration),
a company re-probe times the pool against one thread and falls back within a
few windows when the pool loses. A window that spans a pause of the caller's
(an evaluation, the learner's update: over `PAUSE_FACTOR` times the windows so
far) and the cold one after it are left out (`Monitor._look`), and so are the
windows in which another run of this process probed (`process_probe_steps`):
the run judges on new windows once that probe is done, so the envs of one
loop, which see a moment of the host's together, re-probe one at a time. A decision
remembered from an earlier run (the decision cache) is confirmed at once when
the run's iterations are slower than the remembered ones or other processes
hold a core: made alone, it is not trusted in company.

`Monitor` holds what the checks compare and count: the load and step time of
the running choice, the counters at the last check, the steps since the last
probe, the choice for each load regime.  Like the prober it keeps no reference
to the controller: the calls get it as ``host``, typed by `MonitorHost` (a
`typing.Protocol`, the probe's `ProbeHost` and what a check needs more).  The
controller's monitor step, for one:

```python
s = controller.rt.stats()
controller.monitor.check(controller, s)    # may start a re-probe
controller.countdown = controller.monitor.check_interval(controller)
```

In the layers of `seer_env.stpa`: below the decisions (`seer_env.stpa.decision`,
which start the monitor afresh after each decision: `Monitor.restart`), above
the probe (`seer_env.stpa.probe`), whose re-probes it starts.
"""

from __future__ import annotations

import collections
import logging
import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .._bind.runtime import process_calls
from .company import (
    MIN_SPAN_NS,
    OTHERS_BUSY,
    CpuSample,
    fair_cores,
    others_busy_cores,
    others_loads,
    with_processes,
)
from .cost import Candidate, Decision, Load, choice_ns, drift, neighbours, regime
from .probe import Probe, ProbeHost, Prober, note_probe_step, process_probe_steps

log = logging.getLogger("seer_env.stpa")

#: a pool's iterations this much slower than just after its decision (and than
#: one thread's at the decision) start a company re-probe
COMPANY_RISE = 0.25
#: ... or this much slower than one thread's iterations at the decision
COMPANY_LOSS = 0.05
#: windows (of several steps) the company check takes a median of
COMPANY_WINDOWS = 3
#: steps after a decision before the first company re-probe may start (doubles
#: each time one keeps the pool)
COMPANY_GAP = 16
#: the monitor's marks of the machine's load (`seer_env.stpa.company`) are
#: taken at full checks at least this far apart (ns)
MARK_AGE_NS = 100_000_000
#: the fewest steps before a confirmation that would have replaced the running
#: choice, unexplained, is timed again (`Stpa`'s ``recheck_ns`` apart)
RECHECK_STEPS = 16
#: what a look between the checks costs (a clock read and a few operations in
#: Python), for spacing them under half a percent of the iterations
WINDOW_NS = 3_000.0
#: a look between the checks spans at least this much of the iterations: load
#: that comes and goes faster (a CPU burner at half duty with a 10 ms period,
#: a learner's bursts) averages out within a window, where windows of a few
#: steps saw its on-phases now and then and re-probed as if company had come
#: (`bench company`'s burner-50 row).  Company is then left within three
#: windows and the re-probe, whatever the step's length
COMPANY_SPAN_NS = 10_000_000.0
#: a window whose iterations took this many times the windows' so far spans a
#: pause of the caller's (an evaluation, the learner's update): it and the
#: window after it (cold steps) are left out of the company check, unless
#: COMPANY_WINDOWS of them come in a row (no pause: a slowdown; `Monitor._look`).
#: Company slows a pool's iterations by less (a CPU burner beside parallel-2:
#: about 2x)
PAUSE_FACTOR = 4.0


class MonitorHost(ProbeHost, Protocol):
    """What the monitor needs of the controller (`Stpa`)
    beyond what the probe does: the prober, the running decision, the options
    the checks read, a switch after a step that ran, and the running choice's
    step time."""

    prober: Prober
    fair_share: bool
    drift_factor: float
    alive_drop: float
    confirm: bool
    reprobe_rounds: int
    reprobe_gap: int
    check_ns: float
    confirm_budget: float

    @property
    def decision(self) -> Decision | None: ...

    def _switch_after(self, c: Candidate) -> None: ...

    def _step_ns(self) -> float: ...

    def _take_share(self, others: float, loads: list[float] | None = None) -> bool: ...


@dataclass
class Monitor:
    """What the checks after a decision compare and count.

    Attributes:
        gap: steps after a probe before a drift re-probe may start (doubles
            each time a re-probe keeps the choice; ``reprobe_gap`` again after
            one that changed it).
        baseline: the load the running choice was made at (or last checked at).
        running_ns: the running choice's step (its median, or the untimed
            features step a tiny decision was made from); None when not measured.
        hopeless: pools far off the pace (or dropped after their first step),
            left out of the next confirmation re-probe; its decision, which
            did not time them, finds none hopeless, so the one after times
            them again (a moment of company -- another process, a learner
            warming up -- can make pools look hopeless that are not).
        mark: the runtime's (events, windows, steps) at the last check.
        steps_since_probe: steps counted by the checks since the last probe.
        check_costs: the last checks' own cost (ns): cold between steps, a
            check took 60-115 us where a warm one takes 8 (``check_ns`` is the
            floor).
        close_call_remembered: the run started from a remembered close call:
            it is confirmed soon.
        regimes: the choice made for each load regime.
        regime_switches: how often a returning regime got its choice back.
        recheck_steps: steps after a confirmation that would have replaced the
            running choice, unexplained, before the one that decides
            (`Decisions._recheck`), or after a decision whose pools ran well
            behind their trace (`Decisions.decide`); None otherwise.
        recheck_chain: the steps of the last such recheck after a decision
            whose pools ran behind their trace: the next, should its
            confirmation find the same, waits twice as many (until the
            confirmation budget's wait is shorter); None when no such chain
            runs.
        pool_before: the pool company kept this run from (the one running
            when the share cut it, or the fastest the probe timed beyond the
            share or beside a learner's pool); the confirmations of a choice
            with fewer threads time it again, within the share (the choice's
            neighbours need not reach it: parallel-8 cut to the serial
            executor on 16 cores).  None when the choice was not company's.
    """

    gap: int
    baseline: Load | None = None
    running_ns: float | None = None
    hopeless: set[Candidate] = field(default_factory=set)
    mark: tuple[int, int, int] = (0, 0, 0)
    steps_since_probe: int = 0
    check_costs: collections.deque[float] = field(
        default_factory=lambda: collections.deque(maxlen=5))
    close_call_remembered: bool = False
    regimes: dict[int, Candidate] = field(default_factory=dict)
    regime_switches: int = 0
    recheck_steps: int | None = None
    recheck_chain: int | None = None
    pool_before: Candidate | None = None
    # -- the user's iterations between the checks (`window`) --
    since: int = 0
    to_check: int = 0
    t_mark: int | None = None
    windows: collections.deque[float] = field(
        default_factory=lambda: collections.deque(maxlen=COMPANY_WINDOWS))
    step_samples: collections.deque[float] = field(
        default_factory=lambda: collections.deque(maxlen=COMPANY_WINDOWS))
    # per window: other runtimes of this process were called in it
    shared: collections.deque[bool] = field(
        default_factory=lambda: collections.deque(maxlen=COMPANY_WINDOWS))
    calls_mark: int = 0  # the process's calls (`process_calls`) at t_mark
    # the process's probe steps (`process_probe_steps`) at t_mark: a mark in a
    # count of the whole process's, no part of this run's state
    probes_mark: int = field(default=0, compare=False)
    # windows that spanned a pause, in a row, and the first windows after a
    # decision, not yet judged (`_look`): (iteration ns, shared, step ns); the
    # window after a pause is a cold one
    paused: list[tuple[float, bool, float | None]] = field(default_factory=list)
    pending: list[tuple[float, bool, float | None]] = field(default_factory=list)
    after_pause: bool = False
    last_iter_ns: float | None = None  # the last window's iterations (ns each)
    iter_base_ns: float | None = None
    iter_decided_ns: float | None = None
    one_iter_ns: float | None = None
    one_step_ns: float | None = None
    # the running pool was chosen with company seen (its probe's company
    # words, or a share that binds), and not kept by a company re-probe: its
    # iterations are held to one thread's from the first window on
    # (`window`'s ``lost``)
    chosen_in_company: bool = False
    iter_steps: int = 0
    company_gap: int = COMPANY_GAP
    company_probes: int = 0
    remembered: bool = False
    cpu_mark: CpuSample | None = None
    cpu_mark_before: CpuSample | None = None

    def restart(self, host: MonitorHost, pr: Probe, chosen: Candidate, same: bool,
                s: dict[str, Any]) -> None:
        """After ``pr`` decided on ``chosen`` (``same``: the choice it had),
        with the runtime's counters ``s``: the load to compare from now on,
        the gap to the next re-probe, the choice for the load's regime."""
        ev0, st0 = pr.mark
        if s["steps"] > st0 and pr.trigger not in ("preflight", "confirm"):
            # a drift re-probe: the new load as its own steps ran it (the check
            # that saw the drift may have caught the change half-way)
            self.baseline = Load((s["events"] - ev0) / (s["steps"] - st0),
                                 int(np.count_nonzero(host.rt.alive)))
        else:
            features = host.prober.features
            assert features is not None
            self.baseline = Load(features.events_per_step, features.alive_agents)
        self.steps_since_probe = 0
        self.recheck_steps = None
        if pr.trigger != "preflight":
            self.gap = min(1 << 14, self.gap * 2) if same else host.reprobe_gap
            self.close_call_remembered = False  # confirmed (or replaced)
        self.mark = (s["events"], s["windows"], s["steps"])
        self.regimes[regime(self.baseline)] = chosen
        if pr.trigger.startswith("company"):
            self.company_gap = min(1 << 14, self.company_gap * 2) if same else COMPANY_GAP
        self.remembered = False
        self.restart_windows()
        # a mark at least MARK_AGE_NS after the last: decisions in quick
        # succession (a recheck, a confirmation that changed the choice) left
        # the two marks a few ms apart, too close to read the load between
        # them, and the decision after read it since the run began instead (a
        # load long gone: back to one thread just after taking the pool back)
        if host.cpu_sampler is None:
            self.cpu_mark_before = self.cpu_mark = None
        else:
            sample = host.cpu_sampler()
            if self.cpu_mark is None or sample.wall_ns - self.cpu_mark.wall_ns >= MARK_AGE_NS:
                self.cpu_mark_before, self.cpu_mark = self.cpu_mark, sample

    def restart_windows(self) -> None:
        """Look at the iterations afresh: after a decision or a reset (the
        next look starts a window, the next check is a full one)."""
        self.t_mark = None
        self.windows.clear()
        self.shared.clear()
        self.step_samples.clear()
        self.paused.clear()
        self.pending.clear()
        self.after_pause = False
        self.last_iter_ns = None
        self.iter_base_ns = None
        self.iter_steps = 0
        self.since = 1
        self.to_check = 1

    def start_iterations(self, host: MonitorHost, dec: Decision,
                         timings: dict[Candidate, list[float]],
                         steps: dict[Candidate, list[float]] | None = None) -> None:
        """What the iterations are compared with after ``dec``: its own
        iteration (the median the probe timed) and the fastest one-thread
        candidate's; and the fastest one-thread candidate's step alone
        (``steps``: the probe's, by candidate)."""
        def fastest_one(by: dict[Candidate, list[float]]) -> float | None:
            ones = [statistics.median(v) for c, v in by.items() if c.threads == 1 and v]
            return min(ones) if ones else None

        self.iter_decided_ns = dec.medians_ns.get(dec.candidate.label)
        self.one_iter_ns = fastest_one(timings)
        self.one_step_ns = fastest_one(steps or {})

    def next_countdown(self, host: MonitorHost) -> int:
        """Steps to the controller's next look: the next full check
        (`check_interval`) or, while a pool runs, a window: 4 steps at least,
        enough for a look to cost under half a percent of the iterations, and
        `COMPANY_SPAN_NS` of them once a window has said how long they take
        (the decision's iteration leaves out the caller's work where it was
        remembered: the first window is a short one)."""
        per = 0
        if host._current().threads > 1:
            t = self.last_iter_ns or self.iter_decided_ns or host._step_ns()
            span = COMPANY_SPAN_NS if self.last_iter_ns else 0.0
            per = max(4, math.ceil(WINDOW_NS / (0.005 * t)),
                      math.ceil(span / t)) if 0.0 < t < math.inf else 0
        if self.to_check <= 0:
            n = self.check_interval(host)
            # a whole number of windows to the full check: no look a step
            # apart (and none between checks closer than a window)
            per = per if per < n else 0
            self.to_check = -(-n // per) * per if per else n
        n = min(self.to_check, per) if per else self.to_check
        self.since = n
        return n

    def window(self, host: MonitorHost, t_in: int, step_ns: float | None = None) -> bool:
        """A look between the checks at ``t_in`` (the controller's entry, the
        step just run, which took ``step_ns`` alone): the iterations since
        the last look, a company re-probe if they say so.  True when a full
        check is due now."""
        n, self.since = self.since, 0
        self.to_check -= n
        self.iter_steps += n
        calls = process_calls()
        probes = process_probe_steps()
        looked = True
        if self.t_mark is not None and n > 0:
            # other runtimes of this process called since the last look: the
            # iterations hold their steps (the other envs of a round-robin
            # loop), which no choice of ours changes
            self.last_iter_ns = (t_in - self.t_mark) / n
            if probes != self.probes_mark:
                # ... and another run of this process probed (this run's own
                # probes restart the windows): its visits and switches are in
                # the iterations and on the cores, and what the windows saw
                # before may be the moment that began its re-probe (the envs
                # of a loop see a moment of the host's together: both envs of
                # `bench company`'s envs-2 re-probed for company in one block,
                # one ended on the serial executor).  Judged afresh once it is
                # done, on new windows: one re-probe at a time in a process
                self.windows.clear()
                self.shared.clear()
                self.step_samples.clear()
                looked = False
            else:
                looked = self._look(self.last_iter_ns, (calls - self.calls_mark) / n, step_ns)
        elif step_ns is not None:
            self.step_samples.append(step_ns)
        self.t_mark = t_in
        self.calls_mark = calls
        self.probes_mark = probes
        if not looked or len(self.windows) < COMPANY_WINDOWS \
                or host._current().threads <= 1 or host.prober.probe is not None:
            return self.to_check <= 0
        now = statistics.median(self.windows)
        if self.remembered:
            # until the machine's load can be read (MIN_SPAN_NS after the
            # start), the iterations alone can call for a confirmation
            others = None
            mark = self.cpu_mark
            if mark is None or host.cpu_sampler is None:
                self.remembered = False
            elif t_in - mark.wall_ns >= MIN_SPAN_NS:
                others = others_busy_cores(mark, host.cpu_sampler())
                self.remembered = False
            seen = self.iter_decided_ns
            if (seen and now > seen * (1 + COMPANY_RISE)) or \
                    (others is not None and others >= OTHERS_BUSY):
                self.remembered = False
                why = (f"other processes kept {others:.1f} cores busy" if others is not None
                       and others >= OTHERS_BUSY else
                       f"iterations took {choice_ns(now)}, {choice_ns(seen or 0.0)} when "
                       "remembered")
                log.info("%s: remembered choice in company (%s): confirming it now",
                         host.rt.model, why)
                self.start_probe(host, "confirm", host.rt.stats())
                return False
        if self.iter_base_ns is None:
            self.iter_base_ns = now
            return self.to_check <= 0
        one, base = self.one_iter_ns, self.iter_base_ns
        # ... and only when this run's own steps slowed too: company that came
        # after the decision (a burner, another process, a learner's pool)
        # takes our pool's cores; iterations that slowed with our steps as
        # they were are the caller's own business (another env of the loop
        # probing, a heavier update), which no choice of ours can mend
        # (by a quarter where the iterations hold other envs' steps: one env
        # of a round-robin loop probing slowed the others' steps 5-15% and the
        # round by a quarter, and they re-probed each other in turn)
        alone = self.running_ns
        shared = any(self.shared)
        slower = COMPANY_RISE if shared else COMPANY_LOSS
        # the pool's own steps at the looks (their median; `steps_now` once
        # there are COMPANY_WINDOWS of them)
        steps_med = statistics.median(self.step_samples) if self.step_samples else None
        steps_now = steps_med if len(self.step_samples) == COMPANY_WINDOWS else None
        if alone is not None and steps_now is not None and steps_now <= alone * (1 + slower):
            return self.to_check <= 0
        rose = now > base * (1 + COMPANY_RISE) and (one is None or now > one)
        # ... or, by less, past what one thread gave at the decision: where the
        # caller's own work is most of an iteration, a pool that lost its
        # cores adds a smaller share to it.  Not where the iterations hold
        # other envs' steps: 4 envs of a round-robin loop, each round 10%
        # slower while one of them probed, re-probed each other in turn (11
        # company re-probes in 600 rounds, every one keeping parallel-2)
        # Where the decision saw company, from the first window on: its
        # visits may have caught the pool's threads just woken (torch's loop:
        # parallel-2 timed at 2.78 ms an iteration, 3.57 on one thread, then
        # 3.2-4.2 ms from the decision on), and iterations as slow from the
        # start never rise past their own first windows
        lost = one is not None and now > one * (1 + COMPANY_LOSS) \
            and (now > base * (1 + COMPANY_LOSS) or self.chosen_in_company) and not shared
        # ... or the pool's own steps, since the decision, slower by a
        # quarter than the probe timed them and than one thread's were, the
        # iterations by a quarter than the probe's: a
        # decision whose visits caught the pool's threads just woken ahead of
        # company (torch's spinning OpenMP workers, a burner) -- its
        # iterations were as slow from the first window on, so they never rose.
        # Not while a confirmation's recheck is due: it times them anyway.
        # Where the iterations hold other envs' steps (a round-robin loop)
        # the decision's iteration, one step of this run's, says nothing of
        # them: they are held to their own first windows after the decision
        # instead (held to the decision's, a round of 4 envs was always 4x
        # over it, and one env's steps a quarter slower -- the host's noise,
        # the other envs' probes -- started a company re-probe in most runs
        # of `bench company`'s envs-4 on a 2-core VM, where no company was)
        decided = base if shared else self.iter_decided_ns
        slowed = alone is not None and steps_now is not None and self.recheck_steps is None \
            and self.one_step_ns is not None and decided is not None \
            and steps_now > alone * (1 + COMPANY_RISE) and steps_now > self.one_step_ns \
            and now > decided * (1 + COMPANY_RISE)
        if (rose or lost or slowed) and self.iter_steps >= self.company_gap:
            s = host.rt.stats()
            self.check(host, s)  # a drift first: it says more than company does
            if host.prober.probe is not None or self.iter_base_ns is None:
                return False  # a drift re-probe, or the pool cut to the share (windows afresh)
            why = (f"company: iterations took {choice_ns(now)} on {host._current().label}, "
                   f"{choice_ns(self.iter_base_ns)} after the decision"
                   + (f" ({choice_ns(one)} on one thread)" if one is not None else "")
                   + (f"; its steps {choice_ns(steps_now)}, {choice_ns(alone)} when probed"
                      if slowed and steps_now is not None and alone is not None else ""))
            log.info("%s: %s: re-probing", host.rt.model, why)
            self.company_probes += 1
            # the running pool's own steps as the looks saw them, and its
            # iterations where they held only this run's steps (where other
            # envs' steps are in them, the steps alone: the probe counts the
            # caller's work its own way)
            held = {host._current(): steps_med} if steps_med is not None else None
            held_iter = {host._current(): now} if not shared else None
            self.start_probe(host, why, s, sustained=held, sustained_iter=held_iter)
            return False
        return self.to_check <= 0

    def _look(self, iteration_ns: float, calls_per_step: float, step_ns: float | None) -> bool:
        """One window's iterations (``iteration_ns`` each; ``calls_per_step``:
        the process's step calls per step of this run in it, over 1 where
        other runtimes were called: the envs of a round-robin loop; ``step_ns``:
        the step just run, alone) into what the company check compares;
        False where nothing was added.

        A window over `PAUSE_FACTOR` times the windows' so far (the first
        ones' after the decision, else those counted since) spans a pause of
        the caller's (an evaluation, the learner's update, the other
        configurations of a benchmark's rotation), and the steps after a
        pause run cold (caches, parked workers): that window and the next are
        left out.  Counted, a pause's window and one cold one made the median
        of three, and each pause started a company re-probe (`bench company`'s
        envs-4 row).  `COMPANY_WINDOWS` such
        windows in a row are no pause but a slowdown: they all count (as soon
        as they would have).  The first windows after a decision judge each
        other (against the fastest of them): the decision's own iteration is
        one step of this run and the caller's work, where a window of a
        round-robin loop holds the other envs' steps too."""
        got = (iteration_ns, calls_per_step > 1.0, step_ns)
        ref = self.iter_base_ns or (statistics.median(self.windows) if self.windows else None)
        if ref is None:
            self.pending.append(got)
            if len(self.pending) < COMPANY_WINDOWS:
                return False
            low = min(w[0] for w in self.pending)
            keep = []
            for w in self.pending:
                if w[0] > PAUSE_FACTOR * low:
                    self.after_pause = True  # and the window after it ran cold
                elif self.after_pause:
                    self.after_pause = False
                else:
                    keep.append(w)
            self.pending = []
            return self._count(keep)
        if iteration_ns > PAUSE_FACTOR * ref:
            self.paused.append(got)
            if len(self.paused) < COMPANY_WINDOWS:
                self.after_pause = True
                return False
            slow, self.paused, self.after_pause = self.paused, [], False
            return self._count(slow)
        self.paused = []
        if self.after_pause:  # its steps ran cold
            self.after_pause = False
            return False
        return self._count([got])

    def _count(self, windows: list[tuple[float, bool, float | None]]) -> bool:
        """Count ``windows`` (iteration ns, shared, step ns) into the company
        check; False where there were none."""
        for it, shared, step in windows:
            self.windows.append(it)
            self.shared.append(shared)
            if step is not None:
                self.step_samples.append(step)
        return bool(windows)

    def share_now(self, host: MonitorHost) -> int | None:
        """This run's share of the cores (`fair_cores`) beside the other
        processes' load between the monitor's last two marks (each one's
        where the marks read them); None where unknown or ``fair_share`` is
        off."""
        prev, mark = self.cpu_mark_before, self.cpu_mark
        if not host.fair_share or prev is None or mark is None:
            return None
        others = others_busy_cores(prev, mark)
        if others is None:
            return None
        return fair_cores(others, host.cores, others_loads(prev, mark))

    def check_interval(self, host: MonitorHost) -> int:
        """Steps between two monitor checks: ``check_every``, or more where a
        check's own cost (the last checks' median as measured, their least
        while there are fewer than 3; ``check_ns`` at least) would be over 1%
        of the steps'."""
        t = host._step_ns()
        if not 0.0 < t < math.inf:
            return host.check_every
        costs = self.check_costs
        # the median of the last checks, the least of them while there are
        # fewer than 3: one check preempted for a few ms (a loaded host) must
        # not space the next ones 10k+ steps apart
        seen = statistics.median(costs) if len(costs) >= 3 else min(costs) if costs else 0.0
        cost = max(host.check_ns, seen)
        return max(host.check_every, math.ceil(cost / (0.01 * t)))

    def tiny_now(self, host: MonitorHost, now: Load) -> bool:
        """Is a step at load ``now`` shorter than ``tiny_ns`` (the running
        choice's median, scaled by the events per step since it was measured)?"""
        assert host.decision is not None and self.baseline is not None
        running = self.running_ns
        if running is None or self.baseline.events_per_step <= 0:
            return False
        return running * now.events_per_step / self.baseline.events_per_step < host.tiny_ns

    def confirm_wait(self, host: MonitorHost) -> float:
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
        prober = host.prober
        steps = host.reprobe_rounds * 3 * (prober.k + 1)
        t = max(1.0, host._step_ns())
        if not math.isfinite(t):
            # no step was timed (a run started from a remembered decision
            # without a step time): the confirmation's steps, confirm_budget
            # times over
            return math.ceil(host.confirm_budget * steps)
        if self.close_call_remembered and host.probe_share is not None:
            cost = host.pool_probe_ns + steps * host.probe_step_ns
            return math.ceil(cost / (host.probe_share * t))
        # what confirming costs: estimated (its steps whole, as if each ran on
        # a candidate no faster than the choice, with their bookkeeping, and
        # a round's switches between executors), or as the last confirmation
        # measured it beyond its steps' own work, whichever is more
        switch = statistics.median(prober.switch_ns) if prober.switch_ns else 0.0
        cost = max(steps * (t + host.probe_step_ns) + 2 * host.reprobe_rounds * switch,
                   prober.confirm_cost_ns)
        return math.ceil(host.confirm_budget * cost / t)

    def check(self, host: MonitorHost, s: dict[str, Any]) -> None:
        """A monitor check at the runtime's counters ``s``: a returning regime's
        choice, a drift re-probe or a confirmation (the controller spaces the
        next check by what this one cost)."""
        ev0, win0, st0 = self.mark
        steps = s["steps"] - st0
        if steps <= 0:
            return
        self.steps_since_probe += steps
        self.mark = (s["events"], s["windows"], s["steps"])
        if host.cpu_sampler is not None and not self.remembered:
            # two marks, the newer at least MARK_AGE_NS after the older: a
            # probe's company is measured over one at least that long
            sample = host.cpu_sampler()
            if self.cpu_mark is None or sample.wall_ns - self.cpu_mark.wall_ns >= MARK_AGE_NS:
                prev = self.cpu_mark
                # other processes' load between the marks: a pool of more
                # threads than this run's share of the cores gives way
                # (a decision whose probe was too short to see the load)
                others = others_busy_cores(prev, sample) if prev is not None else None
                threads = host._current().threads
                cut = (others is not None and threads > 1 and host.fair_share
                       and fair_cores(others, host.cores) < threads)
                if cut:
                    # shared out process by process (`fair_cores`): each
                    # one's load is read at the marks while the load would
                    # cut the pool -- the first such mark waits for the next
                    sample = with_processes(sample, host.proc_sampler)
                self.cpu_mark_before, self.cpu_mark = prev, sample
                loads = others_loads(prev, sample) if prev is not None else None
                wait = loads is None and sample.procs is not None
                if cut and not wait and others is not None \
                        and host._take_share(others, loads):
                    self.restart_windows()
                    return
        now = Load((s["events"] - ev0) / steps, int(np.count_nonzero(host.rt.alive)))
        assert self.baseline is not None
        why = drift(self.baseline, now, host.drift_factor, host.alive_drop)
        # a regime seen before, other than the running one's (a drift within the
        # regime -- live agents dropped at the same events per step -- probes)
        known = (self.regimes.get(regime(now))
                 if why is not None and regime(now) != regime(self.baseline) else None)
        if known is not None:
            # a regime seen before: its choice at once, no probe
            if known != host._current():
                host._switch_after(known)
                self.regime_switches += 1
                log.info("%s: load regime %d again (%s): back to %s", host.rt.model,
                         regime(now), why, known.label)
            self.baseline = now
            return
        if why is not None and self.tiny_now(host, now):
            # steps this short: no pool could win back what a drift re-probe
            # costs (a confirmation, which waits for its budget, still times
            # the one-thread candidates below)
            self.baseline = now
            self.regimes[regime(now)] = host._current()
            return
        if why is not None:
            # a drift re-probe that kept the choice doubles the wait before
            # the next one (a workload that keeps swinging -- episodes that end
            # and restart -- does not re-probe every reprobe_gap steps)
            if self.steps_since_probe < self.gap:
                return
            log.info("%s: workload drift (%s): re-probing", host.rt.model, why)
        else:
            if (not host.confirm
                    or self.steps_since_probe < (
                        self.recheck_steps if self.recheck_steps is not None
                        else max(self.gap, self.confirm_wait(host)))):
                return
            why = "confirm"
        self.start_probe(host, why, s, now, (s["windows"] - win0) / steps)

    def start_probe(self, host: MonitorHost, why: str, s: dict[str, Any],
                    now: Load | None = None, windows: float | None = None,
                    sustained: dict[Candidate, float] | None = None,
                    sustained_iter: dict[Candidate, float] | None = None) -> None:
        """Start a re-probe (``why``: "confirm", a drift or company in words)
        of the running choice and its neighbours, at the runtime's counters
        ``s`` (the load ``now`` and ``windows`` per step since the last check,
        where known; else the running choice's); ``sustained`` and
        ``sustained_iter``: the running pool's steps and iterations as the
        looks saw them (`Probe.sustained`, `Probe.sustained_iter`)."""
        prober = host.prober
        note_probe_step()  # begun: the other runs' next looks see it
        if now is None or windows is None:
            assert self.baseline is not None
            f = prober.features
            now = self.baseline
            windows = f.windows_per_step if f is not None else 1.0
        prober.set_features(host, int(round(now.events_per_step * 1)),
                            int(round(windows)))
        decision = host.decision
        assert prober.features is not None and decision is not None
        pr = Probe(why, host.reprobe_rounds, mark=(s["events"], s["steps"]),
                   sustained=dict(sustained or {}), sustained_iter=dict(sustained_iter or {}))
        allowed = prober.candidates(host)
        # a running pool the budget no longer allows: every candidate within
        # it (its neighbours would be the one-thread ones alone)
        pr.candidates = (neighbours(decision.candidate, allowed)
                         if decision.candidate in allowed else allowed)
        running = self.running_ns
        base = self.baseline
        if running is not None and base is not None and base.events_per_step > 0:
            # the running choice's step at the load now (a drift: the load grew
            # from tiny steps, whose pools were left out, to ones pools can pay)
            running *= now.events_per_step / base.events_per_step
        if running is not None and running < host.tiny_ns:
            pr.leave_out_pools([c for c in pr.candidates
                                if c.threads > 1 and c != decision.candidate], running)
        if why == "confirm":
            pr.candidates = [c for c in pr.candidates if c not in self.hopeless]
            # the pools beyond this run's share of the cores (other processes
            # kept the rest busy between the last marks) are not timed: their
            # steps would run on the others' cores and slow them, and the share
            # would leave them out of the decision anyway (two env processes
            # on 2 cores: each confirmation timed parallel-2 beside the other's
            # serial steps).  A later confirmation times them once the others
            # are gone; the running choice is always timed.
            share = self.share_now(host)
            cur = host._current()
            pool = self.pool_before
            if pool is not None and pool.threads > cur.threads and pool not in pr.candidates \
                    and pool not in self.hopeless and pool in prober.candidates(host):
                # the pool company kept the run from, timed again (within the
                # share, as below): the others may be gone
                pr.candidates.append(pool)
            beyond = [c for c in pr.candidates if share is not None and c.threads > share
                      and c != cur]
            if beyond:
                pr.candidates = [c for c in pr.candidates if c not in beyond]
                log.info("%s: confirming without %s: other processes keep all but %d of "
                         "the %d cores busy", host.rt.model,
                         ", ".join(c.label for c in beyond), share, host.cores)
        self.t_mark = None
        prober.probe = pr
        host.state = "probing"
        prober.plan_timing(host, pr)
        if not pr.queue:
            host._decide(pr)
        else:
            host.countdown = 0


__all__ = ["Monitor", "MonitorHost"]
