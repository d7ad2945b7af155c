"""STPA's decisions: choosing from a probe, starting from a remembered choice,
and remembering the preflight's.

`Decisions.decide` ends a probe: it chooses from the probe's timings (`select`
with the cost model; a confirmation keeps the running choice unless another is
clearly faster) or takes the choice a probe was put off with, says why in
words, switches the runtime to it and starts the monitor afresh
(`seer_env.stpa.monitor`).  A preflight's decision is kept for the decision
cache (`Decisions.remember`) and written once the run has paid for the write
(`Decisions.save_if_paid`, at a monitor check) or when the runtime closes; a
later run of the same model, configuration, build and machine starts from it
without a preflight (`Decisions.start_from_cache`).

`Decisions` holds the latest decision, every decision so far, the latest
probe's timings and the cache; like the prober and the monitor it keeps no
reference to the controller: the calls get it as ``host``, typed by
`DecisionHost` (a `typing.Protocol`: the monitor's `MonitorHost` and what
deciding needs more).  The controller's decision hook, for one:

```python
def _decide(self, pr, provisional=None):      # on Stpa
    self.decisions.decide(self, pr, provisional)
```

In the layers of `seer_env.stpa`: below the controller
(`seer_env.stpa.controller`), above the monitor, the probe
(`seer_env.stpa.probe`), the decision cache (`seer_env.stpa.cache`) and the
cost model (`seer_env.stpa.cost`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from ..errors import SeerError
from .cache import DecisionCache, save_at_exit, saved
from .company import (
    MIN_SPAN_NS,
    OTHERS_BUSY,
    CpuSample,
    between_medians,
    company_words,
    fair_cores,
    iterations,
    openmp_spins_by_default,
    other_threads_busy_cores,
    others_busy_cores,
    others_loads,
    passing_company,
    steal_cores,
    with_processes,
    with_threads,
)
from .cost import (
    SERIAL,
    Candidate,
    Decision,
    Load,
    candidate_set,
    choice_ns,
    choosable,
    eliminated,
    in_words,
    limiting_factor,
    own_or_stand_in,
    predict_step_ns,
    regime,
    select,
)
from .monitor import RECHECK_STEPS, Monitor, MonitorHost
from .probe import Probe

#: seconds a write of the decision at a monitor check (mid-run, inside a
#: step) waits at most for other processes' writes: it is tried again later
MID_RUN_WAIT_S = 0.05

log = logging.getLogger("seer_env.stpa")


def _share_words(share: int, cores: int, loads: list[float] | None = None) -> str:
    """Why a run takes ``share`` of its ``cores``, in the words of a reason
    (``loads``: the other processes' own, where they were read)."""
    busy = sum(x >= OTHERS_BUSY for x in loads) if loads else 0
    among = (f", shared out among {busy + 1} busy processes (each keeps what it used up to "
             "an equal share)" if busy > 1 else "")
    return (f"this run takes its share of the cores, {share} of {cores}{among} (a pool on "
            "theirs would win its own iterations a little and slow theirs more; "
            "fair_share=False takes them all)")


class DecisionHost(MonitorHost, Protocol):
    """What deciding needs of the controller (`Stpa`) beyond what the monitor
    does: the monitor, the options of the choice and of the cache's write,
    and the controller's own write of its decision (`Stpa.save_decision`)."""

    monitor: Monitor
    margin: float
    hysteresis: float
    recheck_ns: float
    save_ns: float
    cpu_start: CpuSample | None

    def save_decision(self, wait_s: float | None = None) -> None: ...


#: a pool whose steps ran this many times slower than its traced step predicts,
#: with no company seen, is timed again shortly after the decision
SLOWER_THAN_TRACED = 1.5


def held_to_sustained(steps: dict[Candidate, list[float]],
                      sustained: dict[Candidate, float], what: str = "steps"
                      ) -> tuple[dict[Candidate, list[float]], str]:
    """A company re-probe's ``steps`` (each candidate's timed steps alone,
    ns; or, ``what="iterations"``, its iterations) with the running pool's
    held to its ``sustained`` figure (`Probe.sustained`,
    `Probe.sustained_iter`) where that was slower than its visits, and what
    that changed, in words ("" where nothing).

    A visit of a few steps catches a pool's threads just woken, which the
    kernel runs ahead of a busy neighbour for a while (a sleeper's credit):
    beside a CPU burner at half duty, parallel-2's visits took 1.64-1.95 ms
    an iteration on PCS 64x64 (2 cores) where it ran 2.0-2.45 ms between
    the looks, the serial executor 2.0; every company re-probe kept it, and
    auto ran 0.82-0.88x serial.  What the pool gave over time is what the
    user pays for it.

    ```python
    from seer_env.stpa.cost import SERIAL, Candidate

    p2 = Candidate("parallel", 2)
    held_to_sustained({SERIAL: [2.0e6], p2: [1.9e6, 1.8e6]}, {p2: 2.4e6})[0][p2]
    # [2400000.0, 2400000.0]
    ```
    """
    out = dict(steps)
    words = []
    for c, ns in sustained.items():
        v = out.get(c)
        if not v:
            continue
        visits = statistics.median(v)
        if ns <= visits:
            continue
        words.append(f"{c.label} at its {what} before this re-probe, {choice_ns(ns)}, not "
                     f"its visits' {choice_ns(visits)} (threads just woken run "
                     "ahead of company for a moment)")
        out[c] = [max(t, ns) for t in v]
    return out, "; ".join(words)


@dataclass
class Decisions:
    """The controller's decisions and the decision cache.

    Attributes:
        decision: the latest `Decision` (None during the first preflight).
        history: every Decision, oldest first.
        timings: ns per timed step by candidate label, of the latest probe.
        from_cache: the run started from a remembered decision (no preflight).
        cache: the `DecisionCache` (None when off).
        cache_key: this run's key in it.
        unsaved: a decision the cache has not got yet (its entry).
        save_from: ... written at the first monitor check from this step of
            the run on.
    """

    decision: Decision | None = None
    history: list[Decision] = field(default_factory=list)
    timings: dict[str, list[float]] = field(default_factory=dict)
    from_cache: bool = False
    cache: DecisionCache | None = None
    cache_key: str = ""
    unsaved: dict[str, Any] | None = None
    save_from: int = 0

    # -- deciding ----------------------------------------------------------------------

    def decide(self, host: DecisionHost, pr: Probe,
               provisional: Decision | None = None) -> None:
        """Choose from ``pr``'s timings (or take ``provisional``, a choice made
        while the pools' probe is put off) and switch to the choice."""
        others, loads, company, passing = None, None, "", False
        if provisional is None:
            # the clocks now, once: what other processes and this process's
            # other threads did since the probe's marks
            now = host.cpu_sampler() if host.cpu_sampler is not None else None
            others, loads, steal = self._others(host, pr, now)
            host.prober.waits_since(host, pr)  # the last pool step's late waits
            company, passing = self._company(host, pr, others, now, steal)
        # the running pool held to its steps over time only where this probe
        # saw company too: a moment of the host's own that slowed the steps
        # before a re-probe and passed left the pool's old steps against the
        # others' fresh ones (alone, a replica went to the serial executor
        # for the run, 1.12x serial where parallel-2 ran 1.42x)
        steps_alone, held = held_to_sustained(pr.steps_alone, pr.sustained) \
            if company else (pr.steps_alone, "")
        timings = {c: v for c, v in iterations(steps_alone, pr.between, pr.timings).items()
                   if c not in pr.unreachable}
        if company and pr.sustained_iter:
            timings, held_iter = held_to_sustained(timings, pr.sustained_iter, "iterations")
            held = "; ".join(w for w in (held, held_iter) if w)
        # other processes' cores are left to them: the pools of more threads
        # than this run's share are not chosen (`fair_cores`)
        share = fair_cores(others, host.cores, loads) if host.fair_share else host.cores
        within = {c: v for c, v in timings.items() if c.threads <= share}
        capped = within and len(within) < len(timings)
        timed = timings
        if capped:
            timings = within
        dec = self._choose(host, pr, timings, provisional, company)
        if capped:
            assert others is not None
            dec = self._within_share(host, dec, timings, share)
            dec = dataclasses.replace(
                dec, reason=dec.reason.rsplit(" Limit: ", 1)[0]
                + " Limit: company: "
                + (company or f"other processes kept {others:.1f} of the machine's cores busy")
                + f"; so {_share_words(share, host.cores, loads)}.")
        if held:
            head, sep, tail = dec.reason.rpartition(" Limit: ")
            dec = dataclasses.replace(dec, reason=f"{head} Counted: {held}.{sep}{tail}"
                                      if sep else f"{dec.reason} Counted: {held}.")
        if self._recheck(host, pr, dec, bool(company) or share < host.cores):
            return
        monitor = host.monitor
        same = self.decision is not None and dec.candidate == self.decision.candidate
        self.decision = dec
        # the step alone (what tiny steps and the checks' spacing are about);
        # the decision's medians are the user's iterations
        alone = pr.steps_alone.get(dec.candidate) or (
            # the serial executor chosen untimed: a one-thread pool's steps
            # (the same events, through the pool's phases) bound its own
            min((v for c, v in pr.steps_alone.items() if c.threads == 1 and v),
                key=statistics.median, default=None) if dec.candidate == SERIAL else None)
        monitor.running_ns = statistics.median(alone) if alone else dec.medians_ns.get(
            dec.candidate.label, pr.step_ns if pr.tiny and not timings else None)
        monitor.start_iterations(host, dec, timings, steps_alone)
        self._pool_before(monitor, dec, timed, bool(capped) or bool(company))
        self.history.append(dec)
        self.timings = {c.label: v for c, v in pr.timings.items()}
        # pools far off the pace (or dropped after their first step) are left out
        # of the next confirmation re-probe (`Monitor.hopeless`) -- unless company
        # slowed them, which may leave (the next confirmation times them then)
        monitor.hopeless = (pr.dropped - set(pr.timings)) | eliminated(pr.timings, 3.0) \
            if not company else set(pr.unreachable)
        host._switch_after(dec.candidate)
        host.prober.probe = None
        host.state = "monitor"
        s = host.rt.stats()
        monitor.restart(host, pr, dec.candidate, same, s)
        # a pool chosen in company is held to one thread's iterations from
        # the first window on (`Monitor.window`); not once a company re-probe
        # kept it (its visits and the looks disagree: they would re-probe it
        # again and again)
        monitor.chosen_in_company = dec.candidate.threads > 1 and not same \
            and (bool(company) or share < host.cores)
        # after the preflight or a company re-probe, and after the
        # confirmations that follow while they find the same: each waits
        # twice the last (a quarter of a second, then half, one, two ...)
        # until the confirmation budget's own wait is shorter; a trace that
        # always mispredicts (uneven cores, a memory-bound pool) costs a few
        # confirmations, not one every quarter of a second for good
        first = pr.trigger == "preflight" or pr.trigger.startswith("company")
        chain = first or (pr.trigger == "confirm" and monitor.recheck_chain is not None)
        # (company that can only have been a moment of the host's, a pool's
        # waits for a core with nothing on the machine busy for long, is no
        # company here: alone on a 2-core VM a preflight saw parallel-2's
        # threads wait 930 us a step with other processes at 0.1 of a core,
        # chose the serial executor and kept it for the run, 0.98x serial
        # where parallel-2 ran 1.23x)
        unexplained = not ((company and not passing) or share < host.cores or not chain)
        slow = self._pools_slower_than_traced(host, pr, dec) if unexplained else None
        # (a company re-probe, begun because the pool's iterations and steps
        # slowed, that leaves the pool with no company seen: the slowdown was
        # a moment of the host's too, whatever the trace says; and so is a
        # pool that loses again at a recheck of the chain: alone on a 2-core
        # VM such a re-probe chose the serial executor at 1.07x parallel-2's
        # iteration, and the run kept it, 1.02x serial where parallel-2 ran
        # 1.36x)
        # A preflight's too where the trace had predicted a pool far ahead
        # and the timings did not bear it out (`Probe.trace_missed`): alone
        # on a 2-core VM a preflight in such a moment timed parallel-2 1.21x
        # the serial executor's iteration, under the 1.5x past its trace that
        # says `SLOWER_THAN_TRACED`, and kept the serial executor for the
        # run (`bench company`'s alone row: auto 1.42x the serial
        # executor where parallel-2 ran 1.58x).  Not where the trace put the
        # pools behind: their loss was foretold
        lost = self._pool_lost_unexplained(pr, dec) \
            if unexplained and slow is None and (pr.trigger != "preflight"
                                                 or pr.trace_missed) else None
        step = max(monitor.running_ns or host._step_ns(), 1.0)
        steps = max(RECHECK_STEPS, math.ceil(host.recheck_ns / step)) if first \
            else 2 * (monitor.recheck_chain or 0)
        if (slow is not None or lost is not None) and steps and (
                first or steps < max(monitor.gap, monitor.confirm_wait(host))):
            # pools well behind their trace with no company seen: a moment of
            # the host's own noise (its other tenants), which passes; they are
            # timed again shortly (a run decided in such a moment kept the
            # serial executor until its first confirmation, hundreds of steps;
            # one that lasted past the first recheck, for seconds)
            monitor.recheck_steps = monitor.recheck_chain = steps
            what = (f"{slow[0].label} ran {slow[1]:.1f}x slower than its trace predicts"
                    if slow is not None else f"{lost[0].label} left for {dec.candidate.label} "
                    f"(its iterations {lost[1]:.2f}x theirs)" if lost is not None else "")
            log.info("%s (%s): %s with no company seen%s: timed again in %d steps",
                     host.rt.model, pr.trigger, what, " but a moment's" if company else "", steps)
        else:
            monitor.recheck_chain = None
        if pr.trigger == "preflight" and host.prober.deferred is None:
            if company or share < host.cores:
                # the moment's company, not the model's: a later run alone
                # would start on it and never time the pools again
                log.info("%s: the decision is not remembered: made in company", host.rt.model)
            else:
                self.remember(host, dec, s["steps"] - host._steps0)
        log.info("%s (%s): %s", host.rt.model, pr.trigger, dec.reason)
        log.debug("features %s; trace %s; medians %s", host.prober.features,
                  host.prober.trace_summary, dec.medians_ns)

    @staticmethod
    def _pools_slower_than_traced(host: DecisionHost, pr: Probe, dec: Decision
                                  ) -> tuple[Candidate, float] | None:
        """A pool with more threads than the choice whose steps alone ran over
        ``SLOWER_THAN_TRACED`` times what the traced step predicts for it, where
        the prediction put it ahead of the choice's own steps: the pool and
        how much slower.  None otherwise (no trace, no such pool)."""
        features, summary = host.prober.features, host.prober.trace_summary
        if features is None or summary is None or summary.empty:
            return None
        mine = pr.steps_alone.get(dec.candidate)
        if not mine:
            return None
        own = statistics.median(mine)
        worst: tuple[Candidate, float] | None = None
        for c, v in pr.steps_alone.items():
            if c.threads <= dec.candidate.threads or not v:
                continue
            pred = predict_step_ns(features, summary, c)
            if not 0.0 < pred < own:
                continue
            ratio = statistics.median(v) / pred
            if ratio > SLOWER_THAN_TRACED and (worst is None or ratio > worst[1]):
                worst = (c, ratio)
        return worst

    @staticmethod
    def _pool_lost_unexplained(pr: Probe, dec: Decision) -> tuple[Candidate, float] | None:
        """A pool the choice, of fewer threads, was taken over: at a company
        re-probe the pool that ran before it (``pr.sustained``), at another
        re-probe the fastest pool it timed; the pool and its iterations' time
        over the choice's (1.0 where either was not timed).  None where no
        such pool was (the choice is the pool, or no pool was timed)."""
        med = {c: statistics.median(v) for c, v in pr.timings.items() if v}
        pools = [c for c in (pr.sustained if pr.trigger.startswith("company") else med)
                 if c.threads > dec.candidate.threads]
        if not pools:
            return None
        pool = min(pools, key=lambda c: med.get(c, math.inf))
        mine = med.get(dec.candidate)
        return pool, (med[pool] / mine if pool in med and mine else 1.0)

    @staticmethod
    def _pool_before(monitor: Monitor, dec: Decision, timed: dict[Candidate, list[float]],
                     company: bool) -> None:
        """Which pool company kept the run from (`Monitor.pool_before`): the
        fastest the probe timed with more threads than the choice, where the
        share left it out or company was seen; none once a pool runs or the
        pools lost with no company; as it was where the probe timed none."""
        pools = {c: statistics.median(v) for c, v in timed.items()
                 if v and c.threads > dec.candidate.threads}
        if dec.candidate.threads > 1 or (pools and not company):
            monitor.pool_before = None
        elif pools:
            monitor.pool_before = min(pools, key=lambda c: (pools[c], c.threads))

    def _recheck(self, host: DecisionHost, pr: Probe, dec: Decision, company: bool) -> bool:
        """A confirmation that would replace the running choice where no
        company explains the change is timed once more before it is trusted:
        the running choice stays, and a confirmation ``recheck_ns`` later (a
        quarter of a second; at once, it ran in the same noisy moment and
        agreed) decides whatever it finds (True: kept for now).  A moment of
        the host's own noise (parallel-2 timed 1.8x slower than its trace
        predicts, alone) moved a run alone to the serial executor until the
        next confirmation, hundreds of steps later."""
        incumbent, m = self.decision, host.monitor
        # a second confirmation, `Monitor.recheck_steps` after the first, decides
        if (pr.trigger != "confirm" or incumbent is None or m.recheck_steps is not None
                or company or dec.candidate == incumbent.candidate):
            return False
        log.info("%s (confirm): %s timed ahead of the running %s with no company to explain "
                 "it: kept, timed again shortly", host.rt.model, dec.candidate.label,
                 incumbent.candidate.label)
        host._switch_after(incumbent.candidate)
        host.prober.probe = None
        host.state = "monitor"
        s = host.rt.stats()
        m.steps_since_probe = 0
        m.mark = (s["events"], s["windows"], s["steps"])
        step = m.running_ns or host._step_ns()
        m.recheck_steps = max(RECHECK_STEPS, math.ceil(host.recheck_ns / max(step, 1.0)))
        m.restart_windows()
        return True

    @staticmethod
    def _within_share(host: DecisionHost, dec: Decision,
                      timings: dict[Candidate, list[float]], share: int) -> Decision:
        """Where the share binds and the probe timed no pool within it (it
        timed the pools the trace put ahead, larger ones: 4 env processes on
        16 cores each fell back to one thread with a share of 6), the pool
        within the share the trace predicts fastest, when that prediction,
        scaled by the one-thread candidate's measured iteration, beats it by
        more than the margin.  A prediction in company can be far off: the
        monitor compares the pool's iterations with one thread's and
        re-probes when it loses."""
        features, summary = host.prober.features, host.prober.trace_summary
        if share <= 1 or dec.candidate.threads > 1 or features is None or summary is None \
                or summary.empty or any(c.threads > 1 for c in timings):
            return dec
        pools = [c for c in candidate_set(features, share) if c.threads > 1]
        one = Candidate("parallel", 1)
        got = own_or_stand_in(dec.medians_ns, dec.candidate)
        if not pools or got is None:
            return dec
        label, base = got
        pred = {c: predict_step_ns(features, summary, c) for c in pools}
        best = min(pools, key=lambda c: (pred[c], c.threads))
        est = base * pred[best] / max(predict_step_ns(features, summary, one), 1.0)
        if est >= base * (1.0 - host.margin):
            return dec
        return Decision(best, f"{in_words(best).capitalize()}, untimed: within this run's "
                        f"share of the cores the trace predicts it fastest ({choice_ns(est)} "
                        f"an iteration, scaled from {label}'s {choice_ns(base)}); the probe "
                        "had timed the larger pools only.", dec.medians_ns,
                        {c.label: v for c, v in pred.items()}, dec.trigger)

    @staticmethod
    def _others(host: DecisionHost, pr: Probe, now: CpuSample | None
                ) -> tuple[float | None, list[float] | None, float | None]:
        """Cores' worth of CPU other processes used over ``pr``'s timed steps
        or, where that is too short for /proc/stat's ticks to say, since the
        monitor's last mark, or since the run began, up to ``now`` (None:
        unknown); each other process's share of it where the mark read
        them (`others_loads`); and, of it, the host's steal time over the
        same span (`steal_cores`)."""
        if now is None:
            return None, None, None
        m = host.monitor
        for mark in (pr.cpu0, m.cpu_mark, m.cpu_mark_before, host.cpu_start):
            if mark is not None:
                others = others_busy_cores(mark, now)
                if others is not None:
                    steal = steal_cores(mark, now)
                    if mark.procs is not None:
                        now = with_processes(now, host.proc_sampler)
                    return others, others_loads(mark, now), steal
        return None, None, None

    def take_share(self, host: DecisionHost, others: float,
                   loads: list[float] | None = None) -> bool:
        """Beside other processes that kept ``others`` cores busy between the
        monitor's marks (``loads``: each one's, where the marks read them):
        where the running choice has more threads than this
        run's share of the cores (`fair_cores`; with ``fair_share``), the
        fastest candidate the last probe timed within the share (the serial
        executor where it timed none; on one thread the serial executor
        where the probe did not time it, `select`'s ``serial_untimed``)
        runs from the next step, without a
        probe (the next confirmation times the pools again).  True when it
        switched."""
        dec = self.decision
        share = fair_cores(others, host.cores, loads)
        if dec is None or not host.fair_share or dec.candidate.threads <= share:
            return False
        features, summary = host.prober.features, host.prober.trace_summary
        timed = {Candidate.parse(k): [v] for k, v in dec.medians_ns.items()}
        within = {c: v for c, v in timed.items() if c.threads <= share}
        c = SERIAL
        if within and features is not None:
            # the fastest timed within the share, or the pool within it the
            # trace predicts fastest where only larger pools were timed
            c = self._within_share(host, select(within, features, summary, host.margin,
                                                serial_untimed=SERIAL not in host.monitor.hopeless),
                                   within, share).candidate
        reason = (f"{in_words(c).capitalize()}: other processes kept {others:.1f} of the "
                  f"machine's cores busy after the decision on {dec.candidate.label}, so "
                  f"{_share_words(share, host.cores, loads)}; the next confirmation times "
                  "the pools again.")
        new = Decision(c, reason, dec.medians_ns, dec.predicted_ns, "share")
        self.decision = new
        self.history.append(new)
        host._switch_after(c)
        monitor = host.monitor
        got = own_or_stand_in(dec.medians_ns, c)
        if got is not None:
            monitor.running_ns = got[1]
        # the pool the share cut, timed again by the confirmations (within the share)
        monitor.pool_before = dec.candidate if c.threads < dec.candidate.threads else None
        monitor.iter_decided_ns = dec.medians_ns.get(c.label)
        if monitor.baseline is not None:  # a returning load regime gets this choice back
            monitor.regimes[regime(monitor.baseline)] = c
        log.info("%s (share): %s", host.rt.model, reason)
        return True

    def _company(self, host: DecisionHost, pr: Probe, others: float | None,
                 now: CpuSample | None, steal: float | None = None) -> tuple[str, bool]:
        """The company ``pr`` saw, in words (`seer_env.stpa.company`): other
        processes' load over its timed steps (``others``; ``steal`` of it
        the host's steal time), the caller's work
        between steps slower beside a pool than beside one thread, a pool's
        threads waiting for a core (``pr.waited``, the last pool step's late
        waits read by the caller), and whether this process's other threads
        were busy from the probe's first timed step to ``now``; "" for none.
        And whether that company can only have been a moment of the host's
        (`passing_company`).  Reads ``pr``, changes nothing."""
        medians = between_medians(pr.between)
        ones = sorted((c for c in medians if c.threads == 1), key=lambda c: medians[c])
        # the pools against the one-thread candidate whose caller's work was quickest
        between = {c.label: v for c, v in medians.items() if c.threads > 1 or c == ones[0]} \
            if ones else {}
        alone = {c.label: a / w for c, (w, a) in pr.alone.items() if w}
        waited = {c.label: (d / (n * (c.threads - 1)), t / n)
                  for c, (d, n, t) in pr.waited.items() if n and c.threads > 1}
        # this process's other threads over the probe's timed steps, up to
        # ``now``: whether a thread pool of this process could be the company
        in_process = other_threads_busy_cores(
            pr.cpu0, with_threads(now, host.thread_sampler, host.rt)) \
            if pr.cpu0 is not None and now is not None else None
        words = company_words(others, host.cores, between, ones[0].label if ones else None,
                              alone, waited, openmp_spins=openmp_spins_by_default(),
                              in_process=in_process, steal=steal)
        return words, bool(words) and passing_company(others, in_process)

    def _choose(self, host: DecisionHost, pr: Probe, timings: dict[Candidate, list[float]],
                provisional: Decision | None, company: str = "") -> Decision:
        """The decision ``pr`` comes to from ``timings`` (its own, less the
        candidates the runtime could not switch to), with its reason; where
        ``company`` (in words) kept a pool from winning, the reason's limit
        says so."""
        features, summary = host.prober.features, host.prober.trace_summary
        assert features is not None
        tiny_why = (f"a step takes {pr.step_ns / 1e3:.1f} us, less than "
                    f"{host.tiny_ns / 1e3:g} us: too short for a pool's synchronisation to "
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
            # the pools dropped, the serial executor (which the plan pruned for
            # them) rather than another on one thread: that one runs the same
            # events through the pool's phases, a few percent slower
            one = bool(pr.dropped) and c.threads == 1 and c != SERIAL \
                and SERIAL in candidate_set(features)
            if one:
                c = SERIAL
            if pr.dropped:
                why = (f"{in_words(c).capitalize()}, untimed: the one-thread executor, as "
                       "the pools were dropped (" if one else f"{c.label}: the only candidate "
                       "left (")
                if slow:
                    why += (", ".join(sorted(d.label for d in slow))
                            + f" dropped: its traced steps took over {host.drop_traced:g}x "
                            "the first step, twice")
                if pr.unreachable:
                    why += ("; " if slow else "") + ", ".join(
                        sorted(d.label for d in pr.unreachable)) + ": the runtime could not switch"
                why += ")"
            elif pr.pruned:
                pred = {d.label: predict_step_ns(features, summary, d)
                        for d in [c, *pr.pruned]} if summary else {}
                why = (f"{c.label}: the only candidate timed ("
                       + ", ".join(f"{d.label} predicted {pred[d.label] / pred[c.label]:.2f}x "
                                   "its step time" if pred else d.label
                                   for d in pr.pruned)
                       + f" from the traced step, over the {host.prune:g}x pruning bound)")
            else:
                why = (f"{c.label}: the only candidate "
                       f"(lookahead {features.lookahead:g}, {host.cores} core(s))")
            why += f". Limit: {limiting_factor(features, summary, {}, c)}."
            dec = Decision(c, why, {}, {}, pr.trigger)
        else:
            confirm = pr.trigger == "confirm" and self.decision is not None
            dec = select(timings, features, summary, host.margin,
                         pr.trigger,
                         incumbent=cast(Decision, self.decision).candidate if confirm
                         else None,
                         hysteresis=host.hysteresis if confirm else 0.0,
                         serial_untimed=SERIAL not in pr.unreachable)
            if pr.tiny and dec.candidate.threads == 1:
                dec = dataclasses.replace(
                    dec, reason=dec.reason.rsplit(" Limit: ", 1)[0] + f" Limit: {tiny_why}.")
            elif company and any(c.threads > dec.candidate.threads for c in timings):
                dec = dataclasses.replace(
                    dec, reason=dec.reason.rsplit(" Limit: ", 1)[0]
                    + f" Limit: company: {company}.")
        return dec

    # -- the decision cache ------------------------------------------------------------

    def start_from_cache(self, host: DecisionHost) -> None:
        """Start on a decision remembered for this model, configuration, batch,
        build and machine: no preflight (the confirmation re-probes still run)."""
        assert self.cache is not None
        e = self.cache.get(self.cache_key)
        if e is None:
            return
        c = Candidate(e["executor"], e["threads"])
        try:
            host._switch(c)
        except SeerError as exc:
            log.info("%s: remembered choice %s not possible now (%s): preflight",
                     host.rt.model, c.label, exc)
            return
        if (host.rt.executor, host.rt.threads) != (c.executor, c.threads):
            # the runtime ran it on fewer threads (a budget since lowered): not
            # the remembered decision, which a preflight here makes afresh
            log.info("%s: remembered choice %s runs as %s-%d now: preflight",
                     host.rt.model, c.label, host.rt.executor, host.rt.threads)
            return
        # everything that could fail first: the controller's state changes
        # only once nothing is left to fail (the caller then goes on as if
        # there were no cache)
        # the runner-up among what a choice is made from (`choosable`: not
        # parallel-1 beside a timed serial executor)
        timed = {Candidate.parse(k): float(v) for k, v in e["medians_ns"].items()}
        others = sorted(v for k, v in choosable(timed).items() if k != c)
        mine = e["medians_ns"].get(c.label)
        med = mine or e.get("step_ns")
        running = float(med) if isinstance(med, (int, float)) and 0 < med < math.inf else None
        dec = Decision(c, f"{e['reason']} (remembered from an earlier run of this model "
                       "and configuration on this machine: no preflight)",
                       dict(e["medians_ns"]), {}, "cache")
        baseline = Load(float(e["events_per_step"]), int(e["alive_agents"]))
        kind = regime(baseline)
        s = host.rt.stats()
        monitor, prober = host.monitor, host.prober
        monitor.close_call_remembered = bool(
            mine and others and others[0] <= DecisionCache.CLOSE * mine)
        if running is not None:
            monitor.running_ns = running
            prober.k = prober.visit_steps(host, running)
        self.decision = dec
        self.history.append(dec)
        self.timings = {}
        self.from_cache = True
        prober.probe = None
        host.state = "monitor"
        monitor.baseline = baseline
        monitor.regimes[kind] = c
        monitor.mark = (s["events"], s["windows"], s["steps"])
        # made alone, perhaps: confirmed at once in company (`Monitor.window`)
        monitor.restart_windows()
        monitor.iter_decided_ns = float(mine) if isinstance(mine, (int, float)) and mine > 0 \
            else None
        monitor.one_iter_ns = None
        monitor.remembered = c.threads > 1
        monitor.cpu_mark = host.cpu_sampler() if host.cpu_sampler is not None else None
        host.countdown = monitor.next_countdown(host)
        log.info("%s (cache): %s", host.rt.model, dec.reason)

    def remember(self, host: DecisionHost, dec: Decision, run_steps: int) -> None:
        """Keep ``dec`` (made ``run_steps`` into the run) for the cache: written
        by a monitor check once the run has paid for the write (``save_ns``
        within ``probe_share`` of its step time), else when the runtime closes
        or the interpreter exits."""
        features = host.prober.features
        if self.cache is None or features is None:
            return
        # the step time only where one was measured: a decision made without
        # timing anything (a model with one candidate) has none
        step_ns = host._step_ns()
        self.unsaved = {
            "executor": dec.candidate.executor, "threads": dec.candidate.threads,
            "reason": dec.reason, "medians_ns": dict(dec.medians_ns),
            "step_ns": step_ns if 0.0 < step_ns < math.inf else None,
            "events_per_step": features.events_per_step,
            "alive_agents": features.alive_agents}
        share = host.probe_share if host.probe_share is not None else 0.05
        self.save_from = run_steps + math.ceil(
            host.save_ns / share / max(1.0, min(step_ns, 1e12)))
        save_at_exit(host)

    def save_if_paid(self, host: DecisionHost, run_steps: int) -> None:
        """At a monitor check ``run_steps`` into the run: write the decision
        kept for the cache if the run has paid for the write by now."""
        if self.unsaved is not None and run_steps >= self.save_from:
            start = host.cpu_start
            if host.cpu_sampler is not None and start is not None and \
                    host.cpu_sampler().wall_ns - start.wall_ns < MIN_SPAN_NS:
                return  # the load since the run began cannot be read yet: a later check
            host.save_decision(MID_RUN_WAIT_S)

    def save(self, host: DecisionHost, wait_s: float | None = None) -> None:
        """Write the decision kept for the cache now, if there is one (for
        ``host``, whose write at exit is then off).  ``wait_s``: how long to
        wait for other processes' writes (`DecisionCache.put`); given, a
        write they kept from it is kept for a later check, close or exit."""
        entry, self.unsaved = self.unsaved, None
        saved(host)
        if entry is not None and self.cache is not None:
            others = self._others_since_start(host)
            if others is not None and others >= OTHERS_BUSY:
                # other processes kept cores busy around the decision, which
                # its probe was too short to see: a pool that lost to them
                # would be remembered as slower than it is (PCS 64x64 decided
                # beside a burner: serial, and every later run alone started
                # on serial and stayed there, 1.8x slower than the pool)
                log.info("%s: the decision is not remembered: other processes kept "
                         "%.1f cores busy since the run began", host.rt.model, others)
                return
            if not self.cache.put(self.cache_key, entry, wait_s) and wait_s is not None:
                self.unsaved = entry  # others were writing: a later check, close or exit
                save_at_exit(host)

    @staticmethod
    def _others_since_start(host: DecisionHost) -> float | None:
        """Cores' worth of CPU other processes used since the run began (None:
        unknown, or too short to say)."""
        if host.cpu_sampler is None or host.cpu_start is None:
            return None
        return others_busy_cores(host.cpu_start, host.cpu_sampler())


__all__ = ["DecisionHost", "Decisions"]
