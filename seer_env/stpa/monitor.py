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
  (`Monitor.confirm_wait`), leaving out the pools found hopeless.

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

from .cost import Candidate, Decision, Load, drift, neighbours, regime
from .probe import Probe, ProbeHost, Prober

log = logging.getLogger("seer_env.stpa")


class MonitorHost(ProbeHost, Protocol):
    """What the monitor needs of the controller (`Stpa`)
    beyond what the probe does: the prober, the running decision, the options
    the checks read, a switch after a step that ran, and the running choice's
    step time."""

    prober: Prober
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
            left out of confirmation re-probes until the workload drifts.
        mark: the runtime's (events, windows, steps) at the last check.
        steps_since_probe: steps counted by the checks since the last probe.
        check_costs: the last checks' own cost (ns): cold between steps, a
            check took 60-115 us where a warm one takes 8 (``check_ns`` is the
            floor).
        close_call_remembered: the run started from a remembered close call:
            it is confirmed soon.
        regimes: the choice made for each load regime.
        regime_switches: how often a returning regime got its choice back.
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
        if pr.trigger != "preflight":
            self.gap = min(1 << 14, self.gap * 2) if same else host.reprobe_gap
            self.close_call_remembered = False  # confirmed (or replaced)
        self.mark = (s["events"], s["windows"], s["steps"])
        self.regimes[regime(self.baseline)] = chosen

    def check_interval(self, host: MonitorHost) -> int:
        """Steps between two monitor checks: ``check_every``, or more where a
        check's own cost (the last checks' median as measured, ``check_ns``
        at least) would be over 1% of the steps'."""
        t = host._step_ns()
        if not 0.0 < t < math.inf:
            return host.check_every
        cost = max(host.check_ns, statistics.median(self.check_costs)) if self.check_costs \
            else host.check_ns
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
                    or self.steps_since_probe < max(self.gap, self.confirm_wait(host))):
                return
            why = "confirm"
        windows = (s["windows"] - win0) / steps
        prober = host.prober
        prober.set_features(host, int(round(now.events_per_step * 1)),
                            int(round(windows)))
        decision = host.decision
        assert prober.features is not None and decision is not None
        pr = Probe(why, host.reprobe_rounds, mark=(s["events"], s["steps"]))
        pr.candidates = neighbours(decision.candidate, prober.candidates(host))
        running = self.running_ns
        if running is not None and running < host.tiny_ns:
            pr.leave_out_pools([c for c in pr.candidates
                                if c.threads > 1 and c != decision.candidate], running)
        if why == "confirm":
            pr.candidates = [c for c in pr.candidates if c not in self.hopeless]
        prober.probe = pr
        host.state = "probing"
        prober.plan_timing(host, pr)
        if not pr.queue:
            host._decide(pr)
        else:
            host.countdown = 0


__all__ = ["Monitor", "MonitorHost"]
