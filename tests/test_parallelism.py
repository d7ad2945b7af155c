"""The parallelism report: exact on a hand-made trace, consistent on a real one."""

from __future__ import annotations

import numpy as np
import pytest

from seer_env._bind.runtime import trace_dtype, trace_kinds
from seer_env.perf import parallelism

K = {v: k for k, v in trace_kinds().items()}


def _rec(kind: str, t0: int, t1: int, sim: float = 0.0, entity: int = 0, count: int = 0
         ) -> tuple:
    return (t0, t1, sim, K[kind], 0, entity, 0, count, 0)


def test_exact_on_a_hand_made_trace():
    # two workers, two windows (sim 0 and 1).  Window 0: worker 0 handles
    # entity 1 (300 ns) and entity 2 (100 ns), worker 1 entity 3 (200 ns);
    # window 1: worker 0 entity 1 twice (100 + 100 ns).  Window spans equal
    # the handler time (no overhead).  One act phase of 40 ns.
    w0 = np.array([_rec("window", 0, 400, 0.0, count=2), _rec("event", 0, 300, 0.0, 1),
                   _rec("event", 300, 400, 0.5, 2), _rec("window", 1000, 1200, 1.0, count=2),
                   _rec("event", 1000, 1100, 1.0, 1), _rec("event", 1100, 1200, 1.2, 1),
                   _rec("act", 2000, 2040)], dtype=trace_dtype())
    w1 = np.array([_rec("window", 0, 200, 0.0, count=1), _rec("event", 0, 200, 0.3, 3)],
                  dtype=trace_dtype())
    rep = parallelism.analyze([w0, w1], steps=1)
    assert (rep.windows, rep.events) == (2, 5)
    assert rep.work_ns == 800.0 and rep.critical_ns == 300.0 + 200.0
    assert rep.phase_ns == 40.0
    # T threads: max(600/T, 300) + max(200/T, 200) + 40/T
    assert rep.predict_ns(1) == 600 + 200 + 40
    assert rep.predict_ns(2) == 300 + 200 + 20
    assert rep.predict_ns(64) == pytest.approx(300 + 200 + 40 / 64)
    assert rep.ideal_speedup() == 800 / 500
    assert rep.critical_bound_share[2] == 0.5  # window 1: 200 > 200/2
    assert rep.hot_entities[0][:2] == (0, 1) and rep.hot_entities[0][2] == pytest.approx(0.625)
    assert parallelism.imbalance([w0, w1]) == pytest.approx(((2 / 1.5) + 2) / 2 / 1)
    # weighted by events: (2 + 2) / (1.5 + 1)
    assert parallelism.imbalance([w0, w1], weighted=True) == pytest.approx(4 / 2.5)
    # window time per event: worker 0 (400 + 200) / 4, worker 1 200 / 1
    assert parallelism.worker_ns_per_event([w0, w1]) == [150.0, 200.0]
    assert parallelism.worker_ns_per_event([w0[w0["kind"] == K["act"]], w1]) == [200.0]
    rep.barrier_ns = 10.0
    assert rep.predict_ns(4) == pytest.approx(max(150, 300) + 200 + 10 + 2 * 10 * 2)


def test_bursts_count_events_sharing_a_simulated_instant():
    # 70 events at t=5 of instance 0 (a burst), 30 at t=5 of instance 1 (not
    # one: instants are per instance), 10 at distinct times; two steps
    def ev(t: float, inst: int) -> tuple:
        return (0, 1, t, K["event"], inst, 0, 0, 1, 0)
    w0 = np.array([ev(5.0, 0)] * 40 + [ev(5.0, 1)] * 30 + [ev(0.1 * i, 0) for i in range(10)],
                  dtype=trace_dtype())
    w1 = np.array([ev(5.0, 0)] * 30, dtype=trace_dtype())
    share, per_step = parallelism.bursts([w0, w1], steps=2)
    assert share == pytest.approx(70 / 110) and per_step == 0.5
    assert parallelism.bursts([w0, w1], steps=2, min_events=71) == (0.0, 0.0)
    assert parallelism.bursts([], steps=1) == (0.0, 0.0)


def test_pcs_load_reports_are_bursts_and_phold_has_none():
    # every PCS cell's report timer fires at k * report_interval, and the
    # reports land L later: most of a default step is bursts
    from seer_env.registry import Runtime
    for env, cfg, lo, hi in (("pcs", {"width": 16, "height": 16}, 0.5, 1.0),
                             ("phold", {"num_entities": 256}, 0.0, 0.0)):
        rt = Runtime(env, cfg, 1, "parallel", 2, 0)
        rt.reset([0])
        rt.actions[:] = 0
        rt.trace(1 << 20)
        for _ in range(3):
            rt.step()
        share, per_step = parallelism.bursts(rt.trace_records(active_only=True), steps=3)
        rt.close()
        assert lo <= share <= hi, (env, share)
        assert (per_step >= 2) == (env == "pcs"), (env, per_step)


def test_measure_on_phold_is_consistent():
    rep = parallelism.measure("phold_v0", {"num_entities": 256, "work": 50}, steps=4,
                              warmup=2, rounds=3)
    assert rep.steps == 4 and rep.windows >= 4 * 4 and rep.events > 0
    assert rep.critical_ns < rep.work_ns  # 256 independent entities per window
    assert rep.predict_ns(64) <= rep.predict_ns(1) or rep.barrier_ns > 0
    assert set(rep.measured_ns) == {1, 2}
    text = rep.table()
    assert "threads  predicted" in text and "64" in text
    assert rep.burst_share == 0.0 and "bursts" not in text
    assert 1 <= len(rep.worker_ns_per_event) <= 2
    assert all(x > 0 for x in rep.worker_ns_per_event)
    # None when one worker took every window (a loaded machine)
    assert (rep.weighted_imbalance is None) == (rep.partition_imbalance is None)
    assert rep.weighted_imbalance is None or rep.weighted_imbalance >= 1.0



def test_lookahead_zero_is_measured_on_the_optimistic_executor():
    # classic PCS: no windows; the speculation phase is one window per step
    rep = parallelism.measure("pcs_v0", {"classic": True, "width": 16, "height": 16},
                              steps=4, warmup=2, rounds=3, oversubscribe=True)
    assert rep.steps == 4 and rep.windows == 4 and rep.events > 0
    assert 0 < rep.critical_ns < rep.work_ns  # 256 cells, none busy all step
    assert set(rep.measured_ns) == {1, 2}
    assert rep.ideal_speedup() > 2.0
