"""STPA: the selection logic (pure, deterministic given timings/trace/features), the
executor switch, and that ``threads="auto"`` runs give the serial executor's outputs."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import logging
import math
import os
import random
import re
import stat
import statistics
from collections.abc import Callable
from pathlib import Path

import hypothesis
import numpy as np
import pytest
from hypothesis import strategies as st_h

from seer_env import errors
from seer_env._bind.runtime import TRACE_DTYPE, cpu_count
from seer_env.envs import pcs_v0, phold_v0
from seer_env.registry import Runtime
from seer_env.stpa import DecisionCache, FixedChoice, Stpa
from seer_env.stpa_cost import (
    SERIAL,
    Candidate,
    Decision,
    Features,
    Load,
    TraceSummary,
    cache_sizes,
    candidate_set,
    drift,
    in_words,
    neighbours,
    predict_step_ns,
    probe_plan,
    regime,
    select,
    summarize_trace,
)
from tests.pcs_helpers import assert_runs_equal, c_config, run_runtime
from tests.test_runtime import assert_same_trace, phold_cfg, run_trace

P = [Candidate("parallel", p) for p in range(0, 17)]  # P[p] = parallel-p


@pytest.fixture(autouse=True)
def _no_openmp_in_this_process(monkeypatch):
    """STPA's reasons name torch's OpenMP workers where libgomp is loaded in
    the process at its default wait (`openmp_spins_by_default`, read from
    /proc/self/maps at each decision): every test here decides as in a
    process without it, whichever tests imported torch before (a reason
    asserted word for word named torch after test_bench_company's loop)."""
    monkeypatch.setattr("seer_env.stpa.decision.openmp_spins_by_default", lambda: False)


def feats(cores: int = 2, entities: int = 4096, instances: int = 1, lookahead: float = 1.0,
          events_per_step: float = 1e5, windows_per_step: float = 8.0) -> Features:
    return Features(model="phold", num_entities=entities, num_agents=entities,
                    num_instances=instances, lookahead=lookahead, step_duration=8.0,
                    entity_size=32, cores=cores, cache_bytes={"L1d": 32768, "L2": 524288},
                    events_per_step=events_per_step, windows_per_step=windows_per_step,
                    alive_agents=entities, working_set_bytes=1 << 20)


def summary(threads: int = 2, events_per_window: float = 1e4, handler_ns: float = 100.0,
            barrier_ns: float = 5000.0) -> TraceSummary:
    return TraceSummary(threads=threads, windows=8, events=int(8 * events_per_window),
                        events_per_window=events_per_window, handler_ns=handler_ns,
                        window_ns=1e5, barrier_ns=barrier_ns, idle_fraction=0.1,
                        imbalance=1.0)


# -- candidates ---------------------------------------------------------------------


def test_candidate_set_shapes():
    assert candidate_set(feats(cores=4)) == [SERIAL, P[1], P[2], P[3], P[4]]
    assert candidate_set(feats(cores=1)) == [SERIAL, P[1]]
    # lookahead 0: the serial executor, and the optimistic one on 2+ threads
    opt = {p: Candidate("optimistic", p) for p in range(1, 5)}
    assert candidate_set(feats(lookahead=0.0)) == [SERIAL, opt[2]]
    assert candidate_set(feats(lookahead=0.0, cores=4)) == [SERIAL, opt[2], opt[3], opt[4]]
    assert candidate_set(feats(lookahead=0.0, cores=1)) == [SERIAL]
    # a lookahead too small for windows (step 8.0 > 256 L): the optimistic
    # executor joins the parallel one where it splits an instance (p > B)
    assert candidate_set(feats(lookahead=1e-3, cores=4, instances=2)) == [
        SERIAL, P[1], P[2], P[3], opt[3], P[4], opt[4]]
    # never more threads than entities x instances
    assert candidate_set(feats(cores=16, entities=2, instances=1)) == [SERIAL, P[1], P[2]]
    assert candidate_set(feats(cores=16, entities=2, instances=3))[-1] == P[6]
    assert candidate_set(feats(cores=16), max_threads=3)[-1] == P[3]


def test_candidate_labels_round_trip():
    for c in [SERIAL, P[1], P[7], Candidate("optimistic", 3)]:
        assert Candidate.parse(c.label) == c
    with pytest.raises(ValueError):
        Candidate.parse("threads-2")


# -- select -------------------------------------------------------------------------


def test_tiny_env_picks_one_thread():
    """Barriers dominate a tiny step: a one-thread configuration wins."""
    t = {SERIAL: [9.0e3, 9.5e3, 9.2e3], P[1]: [10e3, 10.4e3, 9.9e3],
         P[2]: [31e3, 29e3, 30e3]}
    d = select(t, feats(events_per_step=40, windows_per_step=8))
    assert d.candidate == SERIAL and d.threads == 1 and d.executor == "serial"
    assert d.medians_ns == {"serial": 9.2e3, "parallel-1": 10e3, "parallel-2": 30e3}
    assert d.reason.startswith("The serial executor: its iterations took 9.2 us (median; a "
                               "step and the caller's work before it)")


def test_big_parallel_workload_picks_more_threads():
    t = {SERIAL: [24e6, 25e6, 24.5e6], P[1]: [12.8e6, 12.9e6, 12.7e6],
         P[2]: [7.2e6, 7.1e6, 7.3e6], P[3]: [5.0e6, 5.1e6, 4.9e6], P[4]: [4.0e6, 4.1e6, 3.9e6]}
    d = select(t, feats(cores=4), summary(threads=4))
    assert d.candidate == P[4]
    assert "x the serial executor's rate" in d.reason
    assert "the barriers took" in d.reason and d.reason.endswith(".")


def test_fewer_threads_win_within_margin():
    t = {SERIAL: [1.2e6] * 3, P[1]: [1.25e6] * 3, P[2]: [1.01e6] * 3, P[3]: [1.0e6] * 3}
    assert select(t, feats(cores=4), margin=0.02).candidate == P[2]
    assert select(t, feats(cores=4), margin=0.0).candidate == P[3]
    assert select(t, feats(cores=4), margin=0.25).candidate == SERIAL


def test_select_is_deterministic_and_order_free():
    rng = random.Random(5)
    t = {c: [rng.uniform(1e5, 2e5) for _ in range(6)] for c in [SERIAL, P[1], P[2], P[3]]}
    f, s = feats(cores=3), summary(threads=3)
    ref = select(t, f, s)
    for _ in range(5):
        items = list(t.items())
        rng.shuffle(items)
        shuffled = {c: list(reversed(v)) for c, v in items}
        d = select(shuffled, f, s)
        assert d == ref


def test_select_ties_prefer_fewer_threads_then_serial():
    t = {SERIAL: [1e5], P[1]: [1e5], P[2]: [1e5]}
    assert select(t, feats()).candidate == SERIAL


def test_the_serial_executor_is_the_one_thread_choice_where_it_was_timed():
    """parallel-1 runs the serial executor's events through the pool's phases
    (3-5% slower alone): where it timed faster, the serial executor's sample
    was the noisy one (4 env processes on 2 cores timed parallel-1 9% ahead,
    past the 8% margin it once had, and a process kept it).  The one-thread
    candidates count as one, the serial executor, judged by the better of
    their medians, against the pools too; the reason says so; without a
    serial timing a one-thread pool may be chosen."""
    O1 = Candidate("optimistic", 1)
    t = {SERIAL: [1.05e6] * 3, P[1]: [1.0e6] * 3, P[2]: [1.5e6] * 3}
    d = select(t, feats())
    assert d.candidate == SERIAL
    assert d.reason.startswith(
        "The serial executor: its iterations took 1.05 ms (median; a step and the caller's "
        "work before it), taken as 1.00 ms: the parallel executor on 1 thread ran the same "
        "events through the pool's phases in that time (the one-thread choice is the serial "
        "executor, judged by the better sample), 1.50x faster than the next best (the "
        "parallel executor on 2 threads)."), d.reason
    assert d.medians_ns == {"serial": 1.05e6, "parallel-1": 1.0e6, "parallel-2": 1.5e6}
    assert select({SERIAL: [1.05e6] * 3, O1: [0.99e6] * 3}, feats()).candidate == SERIAL
    assert select({SERIAL: [1.3e6] * 3, P[1]: [1.0e6] * 3}, feats()).candidate == SERIAL
    # a pool is judged against the better one-thread sample
    t = {SERIAL: [1.3e6] * 3, P[1]: [1.0e6] * 3, P[2]: [1.1e6] * 3}
    assert select(t, feats()).candidate == SERIAL
    t = {SERIAL: [1.3e6] * 3, P[1]: [1.0e6] * 3, P[2]: [0.8e6] * 3}
    d = select(t, feats())
    assert d.candidate == P[2] and "; 1.25x the serial executor's rate" in d.reason
    assert select({P[1]: [1.0e6] * 3, P[2]: [1.5e6] * 3}, feats()).candidate == P[1]
    # nor is a one-thread pool kept as the incumbent of a confirmation
    t = {SERIAL: [1.05e6] * 3, P[1]: [1.0e6] * 3}
    assert select(t, feats(), trigger="confirm", incumbent=P[1],
                  hysteresis=0.1).candidate == SERIAL


def test_select_takes_the_serial_executor_untimed_over_another_one_thread_candidate():
    """serial_untimed: the serial executor can run but the probe did not time
    it (pruned for the pools, which company then ruled out): a one-thread
    choice is the serial executor, untimed, and the reason says so (it kept
    parallel-1: PCS 64x64 beside another env process ran 3.5% slower on it).
    Without the flag, where serial was timed, or where a pool wins, nothing
    changes; an incumbent one-thread pool gives way too."""
    O1 = Candidate("optimistic", 1)
    t = {P[1]: [1.5e6] * 3}
    d = select(t, feats(), serial_untimed=True)
    assert d.candidate == SERIAL and d.medians_ns == {"parallel-1": 1.5e6}
    assert d.reason.startswith("The serial executor, untimed: the parallel executor on 1 "
                               "thread took 1.50 ms an iteration (median; a step and the "
                               "caller's work before it), and on one thread the serial "
                               "executor runs the same events without the pool's phases. "
                               "The workload:"), d.reason
    assert select({O1: [1.5e6] * 3}, feats(), serial_untimed=True).candidate == SERIAL
    assert select(t, feats()).candidate == P[1]
    assert select({SERIAL: [1.7e6] * 3, **t}, feats(), serial_untimed=True).candidate == SERIAL
    assert select({P[1]: [1.5e6] * 3, P[2]: [0.9e6] * 3}, feats(),
                  serial_untimed=True).candidate == P[2]
    assert select(t, feats(), trigger="confirm", incumbent=P[1], hysteresis=0.1,
                  serial_untimed=True).candidate == SERIAL


def test_the_serial_executor_untimed_gets_a_limit_from_the_one_thread_timing():
    """The serial executor chosen untimed, with a traced step and a pool that
    was timed and lost by less than its trace's 1.5x: the reason's limit
    compares the pool with the one-thread candidate timed in the serial
    executor's place.  It looked the serial executor's own median up --
    KeyError, and STPA stopped ("failed") in 4 envs stepped in turn."""
    f, s = feats(), summary()
    p2 = predict_step_ns(f, s, P[2])
    t = {P[1]: [1.1 * p2] * 3, P[2]: [1.4 * p2] * 3}
    d = select(t, f, s, serial_untimed=True)
    assert d.candidate == SERIAL
    assert d.reason.endswith("Limit: measured: parallel-2 took 1.27x as long per step."), \
        d.reason
    d = select(t, f, None, serial_untimed=True)
    assert d.reason.endswith("Limit: measured: parallel-2 took 1.27x as long per step (no "
                             "trace to say why)."), d.reason


def test_select_without_timings_uses_prediction_or_default():
    assert select({}, feats()).candidate == SERIAL
    assert select({}, feats(lookahead=0.0)).candidate == SERIAL
    # prediction: lots of parallel work per window -> the largest pool
    d = select({}, feats(cores=4), summary(threads=4, events_per_window=1e4, barrier_ns=3e3))
    assert d.candidate == P[4]
    assert set(d.predicted_ns) == {"serial", "parallel-1", "parallel-2", "parallel-3",
                                   "parallel-4"}


# -- prediction and the probe plan ------------------------------------------------------


def test_predict_step_ns_formula():
    f = feats(events_per_step=1000, windows_per_step=10)
    s = summary(threads=3, events_per_window=100, handler_ns=50.0, barrier_ns=4000.0)
    assert predict_step_ns(f, s, SERIAL) == 50_000.0
    assert predict_step_ns(f, s, P[1]) == 50_000.0
    # 50 us / 2 + the traced step's 8 windows x (4 us / 2 extra threads) x 1
    # extra thread (the features' 10 windows a step are a one-thread count)
    assert predict_step_ns(f, s, P[2]) == 25_000.0 + 16_000.0
    assert predict_step_ns(f, dataclasses.replace(s, windows=0), P[2]) == 25_000.0 + 20_000.0
    # parallelism capped by events per window
    s2 = summary(threads=2, events_per_window=1.5, handler_ns=50.0, barrier_ns=0.0)
    assert predict_step_ns(f, s2, P[4]) == pytest.approx(50_000.0 / 1.5)


def test_probe_plan_skips_hopeless_pools():
    cands = candidate_set(feats(cores=8))
    tiny = feats(cores=8, events_per_step=40, windows_per_step=8)
    s = summary(threads=8, events_per_window=5, handler_ns=50.0, barrier_ns=20_000.0)
    assert probe_plan(tiny, s, cands) == [SERIAL, P[1]]
    big = feats(cores=8, events_per_step=1e6, windows_per_step=8)
    s = summary(threads=8, events_per_window=1.25e5, handler_ns=100.0, barrier_ns=7_000.0)
    plan = probe_plan(big, s, cands)
    # pools predicted over 1.5x faster than one thread: parallel-1 is the
    # one-thread baseline, the serial executor (a switch of executors) is not timed
    assert plan[0] == P[1] and SERIAL not in plan and P[8] in plan and P[2] not in plan
    assert probe_plan(big, None, cands) == cands
    # a pool predicted only 1.2x faster: the serial executor is timed too
    close = summary(threads=2, events_per_window=1.25e5, handler_ns=100.0, barrier_ns=0.0)
    two = candidate_set(feats(cores=2, events_per_step=1e6, windows_per_step=8))
    assert probe_plan(feats(cores=2, events_per_step=1e6, windows_per_step=8),
                      dataclasses.replace(close, windows=8, barrier_ns=4.2e7 / 8 / 1.2),
                      two) == [SERIAL, P[1], P[2]]


def test_summarize_trace_exact():
    def recs(rows):
        a = np.zeros(len(rows), dtype=TRACE_DTYPE)
        for i, (kind, t0, t1, count) in enumerate(rows):
            a[i]["kind"], a[i]["t0_ns"], a[i]["t1_ns"], a[i]["count"] = kind, t0, t1, count
        return a

    w0 = recs([(1, 0, 10, 0), (0, 10, 20, 1), (0, 20, 40, 1), (0, 40, 50, 1), (2, 10, 60, 3),
               (4, 60, 70, 0), (0, 70, 80, 1), (2, 70, 90, 1), (4, 90, 92, 0)])
    w1 = recs([(0, 12, 52, 1), (2, 10, 55, 1), (4, 55, 70, 0), (2, 70, 75, 0),
               (4, 75, 92, 0)])
    s = summarize_trace([w0, w1])
    assert s.threads == 2 and s.windows == 2 and s.events == 5
    assert s.events_per_window == 2.5
    assert s.handler_ns == 10.0  # median of 10, 20, 10, 10, 40
    assert s.window_ns == (50 + 20 + 45 + 5) / 4
    assert s.barrier_ns == min((10 + 2) / 2, (15 + 17) / 2)
    assert s.idle_fraction == pytest.approx(44 / (120 + 44))
    assert s.imbalance == pytest.approx(4 / 2.5)
    # traced without a record per event: a phase's work over its events
    s = summarize_trace([w0[w0["kind"] != 0], w1[w1["kind"] != 0]])
    assert s.events == 0 and s.events_per_window == 2.5 and s.windows == 2
    assert s.handler_ns == (50 + 20 + 45 + 5) / 5


def test_a_trace_without_event_records_keeps_the_phases_and_their_counts():
    """Runtime.trace(events=False), as STPA's preflight traces: no record per
    event, the phases' spans count every event of the step, the outputs are
    unchanged, and a later trace records events again."""
    cfg = phold_cfg(num_entities=64, remote=0.5)
    rt = Runtime("phold", cfg, 1, "parallel", 2, oversubscribe=True)
    ref = Runtime("phold", cfg, 1, "parallel", 2, oversubscribe=True)
    for r in (rt, ref):
        r.reset([5])
        r.actions[:] = 1
        r.step()
    rt.trace(4096, events=False)
    e0 = rt.stats()["events"]
    rt.step()
    ref.step()
    recs = rt.trace_records(active_only=True)
    assert all(int((r["kind"] == 0).sum()) == 0 for r in recs)
    spans = sum(int(r["count"][r["kind"] == 2].sum()) for r in recs)
    assert spans == rt.stats()["events"] - e0 > 0
    assert np.array_equal(rt.obs, ref.obs) and np.array_equal(rt.reward, ref.reward)
    rt.trace(4096)
    rt.step()
    assert sum(int((r["kind"] == 0).sum()) for r in rt.trace_records()) > 0
    rt.close()
    ref.close()


# -- drift ----------------------------------------------------------------------------------


def test_drift_rules():
    base = Load(1000.0, 64)
    assert drift(base, Load(1500.0, 64)) is None
    assert drift(base, Load(700.0, 40)) is None
    assert "events per step" in drift(base, Load(2000.0, 64))
    assert "events per step" in drift(base, Load(499.0, 64))
    assert "live agents" in drift(base, Load(1000.0, 31))
    assert drift(Load(0.0, 4), Load(1.0, 4)) is None  # floor of one event per step
    assert drift(base, Load(1400.0, 64), factor=1.3) is not None


def test_neighbours():
    cands = candidate_set(feats(cores=8))
    assert neighbours(P[4], cands) == [SERIAL, P[1], P[3], P[4], P[5]]
    # the serial executor's: the smallest pool too (a load that grew, company that left)
    assert neighbours(SERIAL, cands) == [SERIAL, P[1], P[2]]
    assert neighbours(P[2], candidate_set(feats(cores=2))) == [SERIAL, P[1], P[2]]
    O2 = Candidate("optimistic", 2)
    assert neighbours(SERIAL, candidate_set(feats(cores=4, lookahead=0.0))) == [SERIAL, O2]
    assert neighbours(SERIAL, candidate_set(feats(cores=1))) == [SERIAL, P[1]]


def test_a_serial_choice_on_tiny_steps_times_the_pools_once_the_load_grows():
    """Tiny steps (10 us) leave the pools untimed and the run on the serial
    executor; the load then grows 90-fold (1 ms steps): the drift re-probe
    times parallel-2 and takes it.  It timed the one-thread candidates alone
    (the serial executor's neighbours, and the pools left out as if the steps
    were still tiny), and the run stayed on one thread for good."""
    rt = _FakeRuntime()
    st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16,
              check_ns=0.0, trace=False, confirm=False, tie=0.0, clock=rt.clock,
              tiny_ns=20_000.0, probe_share=None)
    for _ in range(60):
        rt.step(st)
    assert st.decision.candidate == SERIAL and st.decision.medians_ns == {}
    rt.events_per_step = 10_000
    for _ in range(400):
        rt.step(st)
    assert "events per step" in st.decision.trigger
    assert "parallel-2" in st.decision.medians_ns
    assert st.decision.candidate == P[2] and st.threads == 2, st.reason


# -- the executor switch and auto runs are output-identical ---------------------------


def test_set_executor_mid_run_matches_serial():
    cfg = phold_cfg(num_entities=40, remote=0.7)
    seeds = [3, 4, 5]
    ref = run_trace(cfg, seeds, "serial", 1, 30)
    rt = Runtime("phold", cfg, len(seeds), "parallel", 2, oversubscribe=True)
    rng = np.random.default_rng(0)
    sw = random.Random(1)
    got = []
    from tests.test_runtime import snapshot

    rt.reset(seeds)
    got.append(snapshot(rt))
    for _ in range(30):
        c = sw.choice([SERIAL, P[1], P[2], P[3]])
        rt.set_executor(c.executor, c.threads)
        assert (rt.executor, rt.threads) == (c.executor, c.threads)
        rt.actions[:] = rng.integers(0, 3, size=rt.actions.shape)
        rt.step()
        got.append(snapshot(rt))
    pend = [rt.pending_events(i) for i in range(3)]
    rt.set_executor("serial")
    assert [rt.pending_events(i) for i in range(3)] == pend
    rt.close()
    assert_same_trace(ref, got, "executor switching")


def test_set_executor_errors():
    rt = Runtime("phold", phold_cfg(), 1, "parallel", 1)
    with pytest.raises(errors.ConfigError):
        rt.set_executor("serial", 2)
    with pytest.raises(errors.ConfigError):
        rt.set_executor("gpu")
    rt.close()
    classic = Runtime("pcs", c_config(classic=1), 1, "serial", 1)
    with pytest.raises(errors.ExecutorError):
        classic.set_executor("parallel", 2)
    classic.close()


def _auto_opts():
    # 3 "cores" on any machine so the pool sizes 1..3 are all exercised
    # tiny_ns=0, confirm_budget=0: these tests time every pool and confirm often
    # whatever a step costs (the budgets have tests of their own)
    # and probe_share=None: they probe at once, not when the run could pay for it
    # check_ns=0: checks every check_every steps, whatever a step costs
    # drop_traced=inf: a pool is timed however long its traced step took (3
    # threads on 2 cores, on a busy host, took over 3x the first step once in
    # about 7 runs, and test_auto_phold_identical_to_serial found parallel-3
    # dropped, parallel-1 the only candidate and nothing timed)
    # cpu_sampler: the machine's load unknown, so that a busy host (CI under
    # load) does not make a decision "in company" -- cut to the run's share,
    # or not remembered in the cache -- where a test expects one made alone;
    # wait_sampler: the pool's waits for a core unknown, for the same reason
    return {"cores": 3, "rounds": 2, "check_every": 4, "reprobe_gap": 8, "tiny_ns": 0.0,
            "probe_share": None, "confirm_budget": 0.0, "check_ns": 0.0,
            "drop_traced": math.inf, "cpu_sampler": _load_unknown,
            "wait_sampler": _waits_unknown}


def _waits_unknown(rt):
    """No reading of the pool's waits for a core: no company is seen."""
    return None


def _load_unknown():
    """A `CpuSample` that knows this process's clocks but not the machine's
    busy time: no company is ever seen."""
    import time

    from seer_env.stpa.company import CpuSample

    return CpuSample(time.perf_counter_ns(), time.process_time_ns(), None)


@pytest.mark.parametrize("batch", [1, 3])
def test_auto_phold_identical_to_serial(batch):
    cfg = phold_cfg(num_entities=30, remote=0.6)
    seeds = list(range(7, 7 + batch))
    max_steps = 400
    ref = run_trace(cfg, seeds, "serial", 1, max_steps)
    rt = Runtime("phold", cfg, batch, "parallel", "auto", stpa_options=_auto_opts(),
                 oversubscribe=True)
    st = rt.stpa
    rng = np.random.default_rng(0)
    from tests.test_runtime import snapshot

    got = []
    rt.reset(seeds)
    got.append(snapshot(rt))
    # at least 60 steps, and on until the preflight (whose length depends on
    # how close the timings are) has decided
    for k in range(max_steps):
        if k >= 60 and st.decision is not None:
            break
        rt.actions[:] = rng.integers(0, 3, size=rt.actions.shape)
        rt.step()
        got.append(snapshot(rt))
    ref = ref[:len(got)]
    assert st.state in ("monitor", "probing") and st.decision is not None
    assert st.preflight_steps > 0 and st.preflight_ns > 0
    # one thread: parallel-1 always (the serial executor where no pool is
    # predicted over 1.5x faster: probe_plan)
    assert "parallel-1" in st.timings
    if st.state == "monitor":
        assert (rt.executor, rt.threads) == (st.decision.executor, st.decision.threads)
    assert st.features.num_instances == batch and st.features.cores == 3
    assert st.trace_summary is not None and st.trace_summary.threads == 3
    rt.close()
    assert_same_trace(ref, got, "auto")


def test_auto_pcs_identical_to_serial():
    cfg = c_config()
    ref = run_runtime(cfg, "serial", 1, [1, 2], 50, action_seed=4)
    got = run_runtime(cfg, "parallel", "auto", [1, 2], 50, action_seed=4)
    assert_runs_equal(ref, got, "pcs auto")


def test_auto_is_default_on_envs_and_logged(caplog):
    with caplog.at_level(logging.INFO, logger="seer_env.stpa"):
        env = pcs_v0.parallel_env(width=4, height=4)
        env.reset(seed=1)
        for _ in range(400):  # until the preflight decided (55-150 steps)
            env.step({a: 0 for a in env.agents})
            if env.stpa.decision is not None:
                break
    assert env.stpa is env.runtime.stpa and env.stpa.decision is not None
    assert any("preflight" in r.getMessage() for r in caplog.records)
    env.close()
    fixed = phold_v0.vector_env(2, num_entities=8, threads=2)
    assert fixed.runtime.stpa is None and fixed.runtime.threads == 2
    fixed.close()
    serial = phold_v0.vector_env(2, num_entities=8, executor="serial")
    assert serial.runtime.stpa is None
    serial.close()


@pytest.mark.parametrize("executor", ["parallel", "optimistic", "serial"])
def test_an_executor_given_runs_as_asked_with_threads_auto(executor: str) -> None:
    """executor= given with threads="auto" (the default) runs that executor --
    on every CPU, as "auto" gives the optimistic one -- with no STPA: an explicit
    executor="parallel" could not be told from the default, and STPA moved the
    run to the serial executor."""
    env = pcs_v0.parallel_env(width=4, height=4, executor=executor)
    assert env.runtime.stpa is None and isinstance(env.stpa, FixedChoice)
    want = 1 if executor == "serial" else min(cpu_count(), env.runtime.threads)
    assert (env.stpa.executor, env.stpa.threads) == (executor, want)
    env.reset(seed=0)
    for _ in range(5):
        env.step({a: 0 for a in env.agents})
    assert env.runtime.executor == executor
    if executor != "serial":
        assert ("threads='auto' with an executor given: the thread budget, "
                f"{env.runtime.budget.describe()})") in env.stpa.reason
    env.close()


def test_a_fixed_choice_names_the_budget_that_binds(monkeypatch) -> None:
    """executor= given under SEER_ENV_THREADS=1: the reason said "every CPU"
    and never named the cap; a pool made larger than the budget lends a call
    said nothing of it."""
    from seer_env import budget
    monkeypatch.setenv(budget.ENV_VAR, "1")
    env = pcs_v0.parallel_env(width=4, height=4, executor="parallel")
    assert env.stpa.threads == 1
    assert ("threads='auto' with an executor given: the thread budget, 1 thread: capped by "
            "SEER_ENV_THREADS=1)") in env.stpa.reason
    env.close()
    if budget.usable_cpus() >= 2:
        monkeypatch.delenv(budget.ENV_VAR)
        env = pcs_v0.parallel_env(width=4, height=4, executor="parallel", threads=2)
        assert "each call runs" not in env.stpa.reason
        try:
            budget.set_thread_budget(1)
            assert env.stpa.reason.endswith(
                "; each call runs on at most 1 of its threads while the thread budget is 1 "
                "thread: capped by set_thread_budget(1) (seer_env.budget)"), env.stpa.reason
        finally:
            budget.set_thread_budget(None)
            env.close()


def test_parallel_given_at_lookahead_0_is_refused_as_with_threads_given() -> None:
    from seer_env.errors import ExecutorError

    with pytest.raises(ExecutorError, match="lookahead 0"):
        phold_v0.parallel_env(num_entities=8, lookahead=0.0, executor="parallel")
    auto = phold_v0.parallel_env(num_entities=8, lookahead=0.0)  # STPA: serial to start
    assert auto.runtime.executor == "serial"
    auto.close()


def test_a_pool_capped_at_the_cpus_says_so() -> None:
    env = phold_v0.vector_env(1, num_entities=16, threads=1000)
    st = env.stpa
    assert st.threads == env.runtime.threads <= cpu_count()
    if st.threads < 1000:
        assert f"1000 threads asked, capped at the {st.threads} CPU(s)" in st.reason
    env.runtime.set_threads(1)
    assert "capped" not in env.stpa.reason and "as asked" in env.stpa.reason
    env.close()


def test_fixed_choice_describes_what_runs():
    """env.stpa says what runs and why whether threads was "auto" or given (it
    was None with threads=2, so env.stpa.executor raised AttributeError), and its
    workload figures are the run's, not the first steps'."""
    env = phold_v0.vector_env(1, num_entities=16, threads=2, executor="parallel")
    env.reset(seed=0)
    for _ in range(7):
        env.step(np.zeros((1, 16), np.int64))
    st = env.stpa
    assert isinstance(st, FixedChoice) and st.state == "fixed" and st.deferred is False
    assert (st.executor, st.threads) == ("parallel", env.runtime.threads)
    assert "as asked" in st.reason and "threads='auto' and no executor given" in st.reason
    s = env.runtime.stats()
    assert st.workload["steps"] == 7 == s["steps"]
    assert st.workload["events_per_step"] == s["events"] / 7
    assert st.workload["windows_per_step"] == s["windows"] / 7
    assert st.as_dict()["executor"] == "parallel"
    env.close()
    auto = pcs_v0.parallel_env(width=4, height=4)
    auto.reset(seed=1)
    steps = 0
    while auto.stpa.decision is None and steps < 400:
        auto.step({a: 0 for a in auto.agents})
        steps += 1
    assert auto.stpa is auto.runtime.stpa and auto.stpa.decision is not None
    assert auto.stpa.workload["steps"] == steps
    assert "Limit: " in auto.stpa.reason
    auto.close()


def test_explicit_pool_turns_stpa_off():
    rt = Runtime("phold", phold_cfg(), 1, "parallel", "auto")
    assert rt.stpa is not None
    rt.set_threads(2)
    assert rt.stpa is None and (rt.executor, rt.threads) == ("parallel", 2)
    rt.close()


class _FakeRuntime:
    """Enough of Runtime for the controller: events per step set by the test."""

    model = "fake"
    native = None  # (for the decision cache's key)
    config: dict = {}

    def __init__(self) -> None:
        from seer_env._bind.native import Sizes

        self.sizes = Sizes(64, 8, 1, 1, "discrete", 2, 0.0, 1.0, 0, 0, 16, 1.0, 1.0)
        self.num_instances = 1
        self.executor, self.threads = "parallel", 1
        self.alive = np.ones((1, 8), dtype=bool)
        self.events_per_step = 100
        self.trace_capacity = 0
        self.counts = {"events": 0, "windows": 0, "steps": 0, "pool_events": 100,
                       "alone_windows": 0}
        self.switches: list[tuple[str, int]] = []
        self.now = 0
        self.refuse: BaseException | None = None
        self.fail_switch: set[tuple[str, int]] = set()
        self.first_extra_ns = 0  # added to the first step only (a cold start)
        self.switch_cost_ns = 0  # a switch between executors
        self.serial_factor = 1.1  # the serial executor's cost over parallel-1's
        self.slow: dict[tuple[str, int], int] = {}  # steps to run 3x slower, by candidate
        self.stats_cost_ns = 0  # what reading the counters costs (a check's cost)
        self.slow_factor = 3.0  # how much slower a step of `slow` runs
        self.scales = False  # pools: the work split among the threads
        #: of a pool step's 4 windows, the share its calling thread ran alone
        self.alone_share = 0.0
        #: each of a pool's other threads waits this share of a step for a
        #: core; ``waited_ns``: their waits so far (what ``wait_sampler`` reads)
        self.wait_share = 0.0
        self.waited_ns = 0
        #: by executor: the steps after a switch to it that run
        #: ``untidy_factor`` slower on the records the last configuration
        #: left, unless `tidy_records` puts them in order first (the runtime
        #: orders them itself this many steps on); ``tidied``: its calls
        self.untidy_steps: dict[str, int] = {}
        self.untidy_factor = 1.5
        self.untidy_left = 0
        self.tidied = 0
        #: a pool's first steps after a switch to it that run as they would
        #: alone, whatever ``slow`` says: threads just woken, which the kernel
        #: runs ahead of a busy neighbour for a while
        self.woken_steps = 0
        self.woken_left = 0

    def switch_executor(self, executor: str, threads: int) -> None:
        if (executor, threads) in self.fail_switch:
            raise errors.SeerError("out of memory switching executors")
        if executor != self.executor:
            self.now += self.switch_cost_ns  # moving the pending events
        self.executor, self.threads = executor, threads
        self.switches.append((executor, threads))
        self.untidy_left = self.untidy_steps.get(executor, 0)
        self.woken_left = self.woken_steps if threads > 1 else 0

    def tidy_records(self) -> None:
        self.tidied += 1
        self.untidy_left = 0

    def clock(self) -> int:
        return self.now

    def step_uncontrolled(self, mask_ptr) -> None:
        if self.refuse is not None:  # as the runtime does: refused before anything changes
            raise self.refuse
        # a simulated cost: 100 ns/event on one thread, 70% of it on two threads
        # plus 2 us of barriers, the serial executor 10% slower than parallel-1
        cost = 100.0 * self.events_per_step
        if self.executor == "serial":
            cost *= self.serial_factor
        elif self.threads > 1:
            cost = cost / self.threads + 2000.0 if self.scales else cost * 0.7 + 2000.0
        if self.counts["steps"] == 0:
            cost += self.first_extra_ns
        if self.untidy_left > 0:
            self.untidy_left -= 1
            cost *= self.untidy_factor
        if self.woken_left > 0:
            self.woken_left -= 1
        elif self.slow.get((self.executor, self.threads), 0) > 0:  # a transient
            self.slow[(self.executor, self.threads)] -= 1
            cost *= self.slow_factor
        self.now += int(cost)
        self.counts["events"] += self.events_per_step
        self.counts["windows"] += 4
        if self.threads > 1:
            self.counts["alone_windows"] += round(4 * self.alone_share)
            self.waited_ns += int(self.wait_share * cost * (self.threads - 1))
        self.counts["steps"] += 1

    def stats(self) -> dict[str, int]:
        self.now += self.stats_cost_ns
        return dict(self.counts)

    def trace(self, capacity: int, events: bool = True) -> None:
        # no trace buffers here: the controller times its traced step untraced
        if capacity:
            raise errors.SeerError("no trace buffers in the fake runtime")

    def step(self, st: Stpa) -> None:  # what Runtime.step does
        if st.countdown <= 1:
            st.step(None)
        else:
            self.step_uncontrolled(None)
            st.countdown -= 1


def test_drift_triggers_reprobe_and_backoff():
    rt = _FakeRuntime()
    st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16, check_ns=0.0,
              trace=False, confirm=False, tie=0.0, clock=rt.clock, tiny_ns=0.0, probe_share=None)
    for _ in range(40):
        rt.step(st)
    assert st.state == "monitor" and len(st.history) == 1
    assert st.history[0].trigger == "preflight"
    # 100 events/step: 10 us on parallel-1, 11 us serial, 9 us on two threads
    assert st.decision.candidate == P[2]
    assert st.decision.medians_ns == {"serial": 11000.0, "parallel-1": 10000.0,
                                      "parallel-2": 9000.0}
    rt.events_per_step = 1000  # the workload grows 10x
    for _ in range(40):
        rt.step(st)
    assert len(st.history) == 2 and "events per step" in st.history[1].trigger
    # measured over the check window that saw the change
    assert 100 < st.features.events_per_step <= 1000
    rt.alive[0, :6] = False  # agents die
    for _ in range(60):
        rt.step(st)
    assert len(st.history) == 3 and "live agents" in st.history[2].trigger
    assert st.probe_steps > st.preflight_steps
    # a steady workload does not re-probe
    for _ in range(200):
        rt.step(st)
    assert len(st.history) == 3


def test_confirmation_reprobes_back_off():
    rt = _FakeRuntime()
    st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16, check_ns=0.0,
              trace=False, tie=0.0, clock=rt.clock, tiny_ns=0.0, probe_share=None,
              confirm_budget=0.0)
    steps = 0
    while len(st.history) < 4 and steps < 2000:
        rt.step(st)
        steps += 1
    assert [d.trigger for d in st.history] == ["preflight", "confirm", "confirm", "confirm"]
    assert st.state == "monitor"


def test_a_confirmation_that_would_replace_the_choice_unexplained_is_timed_again():
    """Settled on parallel-2 alone; a confirmation's visits of it run 3x
    slower (a moment of the host's own noise: the pool timed 1.8x slower than
    its trace predicts) with no company to explain it.  The running choice
    stays, and a second confirmation a quarter of a second later decides:
    where the moment passed, parallel-2 stays (it went to one thread for
    hundreds of steps, until the next confirmation; timed again at once, in
    the same moment, the second agreed); where the slowness stays, the second
    confirmation moves the run to one thread."""
    for lasting, want in ((False, 2), (True, 1)):
        rt = _FakeRuntime()
        rt.events_per_step = 1000  # serial 110 us, parallel-1 100 us, parallel-2 72 us
        st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16,
                  check_ns=0.0, trace=False, tie=0.0, clock=rt.clock, confirm_budget=0.0,
                  probe_share=None)
        while st.decision is None:
            rt.step(st)
        assert st.threads == 2
        starts: list[tuple[str, int]] = []
        real = st.monitor.start_probe

        def start(host, why, *a, real=real, starts=starts, rt=rt, lasting=lasting, **k):
            starts.append((why, rt.now))
            if why == "confirm" and len(starts) == 1:  # the first confirmation's moment
                rt.slow[("parallel", 2)] = 10**9 if lasting else 3
            return real(host, why, *a, **k)

        st.monitor.start_probe = start  # type: ignore[method-assign]
        n, kept_between = 0, True
        while len(starts) < 2 and n < 20_000:
            rt.step(st)
            n += 1
            if starts and st.prober.probe is None:  # between the two confirmations
                kept_between &= (rt.executor, rt.threads) == ("parallel", 2)
        assert [w for w, _ in starts] == ["confirm", "confirm"], starts
        assert starts[1][1] - starts[0][1] >= 250_000_000  # a quarter of a second on
        assert kept_between and len(st.history) == 1  # the first changed nothing
        while st.prober.probe is not None:
            rt.step(st)
        assert st.threads == want, (lasting, st.reason)
        assert len(st.history) == 2 and st.history[1].trigger == "confirm"
        assert st.monitor.recheck_steps is None


def test_eliminated_and_close_call():
    from seer_env.stpa_cost import close_call, eliminated

    t = {SERIAL: [100.0, 110.0], P[1]: [90.0, 95.0], P[2]: [200.0, 300.0]}
    assert eliminated(t) == {P[2]}
    assert eliminated(t, drop=4.0) == set()
    assert eliminated({SERIAL: [1.0]}) == set()
    assert close_call(t) is None  # 92.5 vs 105: 13.5% apart, more than 8%
    assert close_call(t, tie=0.2) == (P[1], SERIAL)


def test_confirmation_keeps_the_incumbent_unless_clearly_beaten():
    f = feats()
    one, two = Candidate("parallel", 1), Candidate("parallel", 2)
    close = {one: [100.0, 101.0, 99.0], two: [95.0, 96.0, 94.0]}  # 5% faster
    assert select(close, f).candidate == two
    kept = select(close, f, trigger="confirm", incumbent=one, hysteresis=0.10)
    assert kept.candidate == one and "kept" in kept.reason
    clear = {one: [100.0, 101.0, 99.0], two: [80.0, 81.0, 79.0]}  # 20% faster
    assert select(clear, f, trigger="confirm", incumbent=one,
                  hysteresis=0.10).candidate == two


def test_regime_buckets():
    assert regime(Load(1000.0, 5)) == 10 and regime(Load(0.0, 5)) == 0
    assert regime(Load(1400.0, 5)) == 10 and regime(Load(1500.0, 5)) == 11


def test_a_returning_load_regime_gets_its_choice_back_without_a_probe(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # PHOLD's action sets the delay scale: 1 (x0.5) quadruples the events per
    # step of action 2 (x2.0): two load regimes.  The monitor looks every
    # check_every steps: its own cost-based spacing (one preempted check of
    # a few ms against 22 us steps spaced the next 10k+ steps away) made the
    # test miss the second regime about 1 run in 100 on a loaded host
    from seer_env.stpa.monitor import Monitor

    monkeypatch.setattr(Monitor, "check_interval", lambda self, host: host.check_every)
    rt = Runtime("phold", phold_cfg(num_entities=64, remote=0.5), 1, "parallel", "auto",
                 stpa_options=dict(_auto_opts(), check_every=2, reprobe_gap=0, confirm=False),
                 oversubscribe=True)
    st = rt.stpa

    def run_until(action: int, done, limit: int = 3000) -> None:
        rt.actions[:] = action
        for _ in range(limit):
            rt.step()
            if done():
                return
        raise AssertionError(f"not reached in {limit} steps: {st!r}")

    rt.reset([3])
    run_until(1, lambda: st.state == "monitor")  # the preflight decides
    (first,) = st.regimes
    run_until(2, lambda: st.state == "monitor" and len(st.regimes) == 2)
    probes, switches = len(st.history), st.regime_switches
    running = (rt.executor, rt.threads)
    # a new episode, same seed: its first step is the first regime again,
    # checked after that one step, and it gets its choice back without a probe
    rt.reset([3])
    rt.actions[:] = 1
    rt.step()
    assert len(st.history) == probes and st.state == "monitor"
    assert (rt.executor, rt.threads) == (st.regimes[first].executor, st.regimes[first].threads)
    assert st.regime_switches == switches + (running != (rt.executor, rt.threads))
    rt.close()


def test_lookahead_zero_runs_optimistic_under_auto():
    """Classic PCS (lookahead 0) under threads="auto": the preflight starts on the
    serial executor, times the optimistic executor on 2 threads, and keeps it when
    it is faster (a clock that charges the serial executor double makes it so);
    the outputs are the serial executor's, bit for bit."""
    cfg = c_config(classic=1, width=6, height=6)
    holder: dict[str, Runtime] = {}
    now = [0]

    def clock() -> int:
        rt = holder.get("rt")
        now[0] += 2000 if rt is not None and rt.executor == "serial" else 1000
        return now[0]

    rt = Runtime("pcs", cfg, 1, "parallel", "auto", oversubscribe=True,
                 stpa_options=dict(cores=2, trace=False, confirm=False, clock=clock,
                                   tiny_ns=0.0, probe_share=None))
    holder["rt"] = rt
    ref = Runtime("pcs", cfg, 1, "serial", 1)
    assert rt.executor == "serial" and rt.stpa is not None
    rng = np.random.default_rng(5)
    try:
        rt.reset([3])
        ref.reset([3])
        for _ in range(80):
            acts = rng.integers(0, cfg["max_guard"] + 1, size=rt.actions.shape)
            rt.actions[:] = acts
            ref.actions[:] = acts
            rt.step()
            ref.step()
            assert rt.obs.tobytes() == ref.obs.tobytes()
            assert rt.reward.tobytes() == ref.reward.tobytes()
            assert rt.info.tobytes() == ref.info.tobytes()
        assert rt.stpa.decision is not None
        assert set(rt.stpa.decision.medians_ns) == {"serial", "optimistic-2"}
        assert (rt.executor, rt.threads) == ("optimistic", 2)
        assert rt.entity_states(0) == ref.entity_states(0)
    finally:
        rt.close()
        ref.close()


# -- steps that do not run change nothing ------------------------------------------------


def stpa_state(st: Stpa) -> dict:
    """Everything the controller holds, and where its runtime runs."""
    d = {k: copy.deepcopy(v) for k, v in vars(st).items() if k not in ("rt", "_clock", "caches")}
    d["running"] = (st.rt.executor, st.rt.threads)
    return d


def _fake_stpa(rt: _FakeRuntime, **opts) -> Stpa:
    kw = dict(cores=2, rounds=2, reprobe_rounds=1, check_every=4, reprobe_gap=8, check_ns=0.0,
              trace=False,
              tie=0.2, extra_rounds=2, min_visit_ns=1.0, clock=rt.clock, tiny_ns=0.0,
              probe_share=None, confirm_budget=0.0)
    kw.update(opts)
    return Stpa(rt, **kw)


def _run_fake(refused: dict[int, int], steps: int = 90,
              exc: BaseException | None = None, events: int = 100,
              **opts: object) -> tuple[_FakeRuntime, Stpa]:
    """``steps`` good steps; before good step i, ``refused.get(i, 0)`` steps that
    raise ``exc`` (default: an invalid action), each checked to leave the
    controller exactly as it was."""
    exc = exc if exc is not None else errors.InvalidActionError("refused")
    rt = _FakeRuntime()
    rt.events_per_step = events
    st = _fake_stpa(rt, **opts)
    for i in range(steps):
        for _ in range(refused.get(i, 0)):
            before = stpa_state(st)
            rt.refuse = exc
            with pytest.raises(type(exc)):
                rt.step(st)
            rt.refuse = None
            assert stpa_state(st) == before, f"a refused step before step {i} changed STPA"
        rt.step(st)
    return rt, st


def test_refused_steps_anywhere_change_nothing():
    """A refused step at any point (features, every timing visit, the extra
    rounds of a close call, the monitor's countdown, confirmation re-probes)
    leaves the controller as it was: the run ends in exactly the state of a
    run without them.  (A refused step used to pop its visit and take one off
    the countdown: with the last visit of a stage gone, every later step
    raised IndexError.)"""
    ref_rt, ref = _run_fake({})
    triggers = [d.trigger for d in ref.history]
    assert triggers[0] == "preflight" and "confirm" in triggers[1:]  # and re-probes
    assert ref.history[0].medians_ns.keys() == {"serial", "parallel-1", "parallel-2"}
    for pos in range(90):
        for refused in ({pos: 1}, {pos: 2, pos + 1: 1}):
            rt, st = _run_fake(refused)
            assert stpa_state(st) == stpa_state(ref), refused
            assert rt.counts == ref_rt.counts


def test_refused_steps_change_nothing_while_the_pools_wait_or_steps_are_tiny():
    """The same with the budgets on: the pools' probe put off for about 20
    steps (110 us steps, a 0.12 ms probe, 5%), then run, then the monitor; and
    tiny steps (10 us) decided untimed."""
    budgets = {"probe_share": 0.05, "pool_probe_ns": 100_000.0, "probe_step_ns": 1_000.0}
    for events, opts in ((1000, budgets), (100, {"tiny_ns": 20_000.0, **budgets})):
        ref_rt, ref = _run_fake({}, events=events, **opts)
        if events == 1000:
            assert ref.history[0].reason.startswith("The serial executor for now, untimed")
            assert ref.history[1].trigger == "preflight" and ref.history[1].medians_ns
        else:
            assert ref.history[0].reason.startswith("The serial executor, untimed")
        for pos in range(0, 90, 2):
            rt, st = _run_fake({pos: 1, pos + 1: 2}, events=events, **opts)
            assert stpa_state(st) == stpa_state(ref), (events, pos)
            assert rt.counts == ref_rt.counts


@pytest.mark.parametrize("exc", [errors.Interrupted("SIGINT"), KeyboardInterrupt(),
                                 errors.BudgetError("budget"), errors.ContractViolation("x")],
                         ids=lambda e: type(e).__name__)
def test_failed_and_interrupted_steps_anywhere_change_nothing(exc):
    """The same for a step that fails in the runtime or is interrupted."""
    ref_rt, ref = _run_fake({})
    for pos in range(0, 90, 3):
        rt, st = _run_fake({pos: 1, pos + 1: 1}, exc=exc)
        assert stpa_state(st) == stpa_state(ref), pos
        assert rt.counts == ref_rt.counts


def test_a_mangled_probe_is_mended_by_the_next_step_or_reset():
    """A probe whose bookkeeping was cut short between two statements (a
    KeyboardInterrupt) -- a stage with no visit left -- goes on: the next
    step or reset moves it to its next stage instead of raising IndexError."""
    for stage_steps in (2, 5, 12):
        for mend in ("step", "reset"):
            rt = _FakeRuntime()
            st = _fake_stpa(rt)
            for _ in range(stage_steps):
                rt.step(st)
            assert st.prober.probe is not None and st.prober.probe.stage == "timing"
            st.prober.probe.queue.clear()
            st.countdown = 5
            if mend == "reset":
                st.notify_reset()
                assert st.prober.probe is None or (st.prober.probe.queue and st.countdown == 0)
            for _ in range(60):
                rt.step(st)
            assert st.decision is not None and st.state in ("monitor", "probing")


def test_a_close_call_without_extra_rounds_decides():
    rt = _FakeRuntime()
    st = _fake_stpa(rt, tie=0.5, extra_rounds=0, confirm=False)
    for _ in range(40):
        rt.step(st)  # raised IndexError when the close call queued no visit
    assert st.state == "monitor"
    assert st.decision.candidate == P[2]


def test_a_candidate_the_runtime_cannot_switch_to_is_left_out(caplog):
    rt = _FakeRuntime()
    rt.fail_switch = {("parallel", 2)}
    st = _fake_stpa(rt, confirm=False)
    with caplog.at_level(logging.WARNING, logger="seer_env.stpa"):
        for _ in range(60):
            rt.step(st)  # every call ran a step
    assert rt.counts["steps"] == 60
    assert st.state == "monitor" and st.decision.candidate == SERIAL
    assert set(st.decision.medians_ns) == {"serial", "parallel-1"}
    assert any("cannot switch to parallel-2" in r.getMessage() for r in caplog.records)


def test_a_decision_the_runtime_cannot_switch_to_keeps_the_step(caplog):
    """The switch to the decision follows a step that ran: failing it must not
    fail that step; the runtime stays where it is."""
    rt = _FakeRuntime()
    st = _fake_stpa(rt, tie=0.0, confirm=False)
    calls = 0
    while not ((pr := st.prober.probe) and pr.stage == "timing" and len(pr.queue) == 1):
        rt.step(st)
        calls += 1
    last = pr.queue[0].cand
    assert last == SERIAL  # the second round's order ends on the serial executor
    rt.fail_switch = {("parallel", 1), ("parallel", 2)}
    with caplog.at_level(logging.WARNING, logger="seer_env.stpa"):
        rt.step(st)
    assert st.state == "monitor" and st.decision.candidate == P[2]
    assert (rt.executor, rt.threads) == ("serial", 1)
    assert rt.counts["steps"] == calls + 1
    assert any("cannot switch to parallel-2" in r.getMessage() for r in caplog.records)


def test_the_cost_model_is_apart_from_the_controller_and_stpa_reexports_it() -> None:
    """seer_env.stpa.cost holds the cost model (pure functions of the
    measurements); seer_env.stpa re-exports its public names, and so does
    seer_env.stpa_cost, its old path; the cache and the controller are
    modules of their own."""
    from seer_env import stpa, stpa_cost
    from seer_env.stpa import cache, controller, cost, options

    ctrl = ("Stpa", "attach", "FixedChoice", "describe", "run_workload")
    for name in stpa.__all__:
        home = (controller if name in ctrl else cache if name == "DecisionCache"
                else options if name == "check_options" else cost)
        assert getattr(stpa, name) is getattr(home, name), name
        assert name in home.__all__, name
        if home is cost:
            assert getattr(stpa_cost, name) is getattr(cost, name), name
    assert stpa_cost.__all__ == cost.__all__
    assert not any(hasattr(stpa_cost, name) for name in (*ctrl, "DecisionCache"))


def test_the_reason_names_what_limits_more_threads():
    """Each decision's reason ends with the limiting factor, read from the
    evidence: barriers (too few events per window), idle workers, a pool
    slower than its trace predicts, or the cores themselves."""
    from seer_env.stpa_cost import limiting_factor

    f = feats(cores=4)
    few = summary(threads=4, events_per_window=8.0, handler_ns=100.0, barrier_ns=5000.0)
    why = limiting_factor(f, few, {P[1]: 1e5, P[4]: 2e5}, P[1])
    assert why.startswith("barriers: a window holds 8.0 events (0.2 us of handlers per "
                          "thread on 4 threads), less than its synchronisation (5.0 us)")
    idle = TraceSummary(threads=4, windows=8, events=80000, events_per_window=1e4,
                        handler_ns=100.0, window_ns=1e5, barrier_ns=100.0,
                        idle_fraction=0.45, imbalance=1.8)
    assert limiting_factor(f, idle, {P[1]: 1e5, P[4]: 2e5}, P[1]).startswith(
        "idle workers: they waited 45% of the traced step (the busiest had 1.80x")
    busy = summary(threads=4, events_per_window=1e4, barrier_ns=100.0)
    why = limiting_factor(f, busy, {P[1]: 1e5, P[4]: 3e5}, P[1], {"parallel-4": 1e5})
    assert why.startswith("a slower or busy core: parallel-4 ran 3.0x slower than its trace")
    assert limiting_factor(f, busy, {P[4]: 1e5}, P[4]).startswith("the cores: all 4 usable")
    dec = select({P[1]: [1e5] * 3, P[4]: [2e5] * 3}, f, few)
    assert dec.candidate == P[1] and dec.reason.endswith(
        f"Limit: {limiting_factor(f, few, {P[1]: 1e5, P[4]: 2e5}, P[1], dec.predicted_ns)}.")


# -- decisions remembered across runs ------------------------------------------------------


def _preflight(path, cfg, batch=1, steps=400, **opts):
    """A threads="auto" PHOLD runtime with the decision cache at ``path``, stepped
    until its preflight decided (or ``steps``); returns it open."""
    o = {**_auto_opts(), "confirm": False, "cache": True, "cache_path": path, **opts}
    rt = Runtime("phold", cfg, batch, "parallel", "auto", stpa_options=o, oversubscribe=True)
    rt.reset(list(range(batch)))
    for _ in range(steps):
        if rt.stpa.decision is not None:
            break
        rt.step()
    return rt


def test_a_remembered_decision_skips_the_preflight(tmp_path):
    """The preflight's decision is kept beside the model cache; a later run of the
    same model, configuration, batch, build and machine starts on it at once, with
    no preflight; another configuration or batch finds nothing."""
    from seer_env.stpa import DecisionCache

    path = tmp_path / "stpa.json"
    cfg = phold_cfg(num_entities=30, remote=0.6)
    first = _preflight(path, cfg)
    dec = first.stpa.decision
    assert dec is not None and dec.trigger == "preflight" and not first.stpa.from_cache
    assert first.stpa.preflight_steps > 0
    first.close()
    entries = DecisionCache(path).entries()
    assert len(entries) == 1
    (entry,) = entries.values()
    assert (entry["executor"], entry["threads"]) == (dec.executor, dec.threads)
    again = Runtime("phold", cfg, 1, "parallel", "auto", oversubscribe=True,
                    stpa_options={**_auto_opts(), "cache": True, "cache_path": path})
    st = again.stpa
    assert st.from_cache and st.state == "monitor" and st.decision.trigger == "cache"
    assert (again.executor, again.threads) == (dec.executor, dec.threads)
    assert "remembered from an earlier run" in st.reason
    ref = run_trace(cfg, [0], "serial", 1, 30)
    from tests.test_runtime import snapshot

    rng = np.random.default_rng(0)
    again.reset([0])
    got = [snapshot(again)]
    for _ in range(30):
        again.actions[:] = rng.integers(0, 3, size=again.actions.shape)
        again.step()
        got.append(snapshot(again))
    # no preflight (re-probes of the neighbourhood may follow, as after any decision)
    assert st.preflight_steps == 0 and st.history[0].trigger == "cache"
    again.close()
    assert_same_trace(ref, got, "from the cache")
    for other_cfg, batch in ((phold_cfg(num_entities=31, remote=0.6), 1), (cfg, 2)):
        rt = Runtime("phold", other_cfg, batch, "parallel", "auto", oversubscribe=True,
                     stpa_options={**_auto_opts(), "cache": True, "cache_path": path})
        assert not rt.stpa.from_cache and rt.stpa.state == "preflight"
        rt.close()


def test_a_choice_made_while_the_pools_wait_is_not_remembered(tmp_path):
    """While the pools' probe is put off the running choice is provisional: the
    cache stays empty until the probe has run and decided."""
    from seer_env.stpa import DecisionCache

    path = tmp_path / "stpa.json"
    # a probe estimated at 1 s: put off for thousands of steps
    rt = _preflight(path, phold_cfg(num_entities=30, remote=0.6), probe_share=0.05,
                    pool_probe_ns=1e9)
    st = rt.stpa
    assert st.decision is not None and st.deferred and st.executor == "serial"
    assert "for now, untimed" in st.reason and st.as_dict()["deferred"] is True
    assert DecisionCache(path).entries() == {}
    st.pool_probe_ns = st.probe_step_ns = 0.0  # the run has paid for it now
    rt.actions[:] = 0
    for _ in range(400):
        rt.step()
        if not st.deferred and st.state == "monitor":
            break
    assert not st.deferred and st.state == "monitor" and len(st.history) == 2
    assert st.decision.trigger == "preflight" and "parallel-1" in st.timings
    running = (st.executor, st.threads)
    rt.close()  # a short run's decision is written when the runtime closes
    (entry,) = DecisionCache(path).entries().values()
    assert (entry["executor"], entry["threads"]) == running


def _decided_with_a_cache(path):
    """A fake runtime (110 us serial steps) and its controller, whose
    decision cache is ``path`` (key "k"), stepped until it decided."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000  # 110 us serial steps
    st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16, check_ns=0.0,
              trace=False, tie=0.0, clock=rt.clock, confirm=False, probe_share=None,
              cache_path=path, cache=True)
    st.decisions.cache_key = "k"
    while st.decision is None:
        rt.step(st)
    return rt, st


def test_the_decision_is_written_once_the_run_has_paid_for_it():
    """A cache write costs 0.3-0.8 ms (save_ns): the decision is written at the
    first monitor check after probe_share of the run's step time covers it,
    not at the decision; a run closed before that writes it at close."""
    import tempfile
    from pathlib import Path

    from seer_env.stpa import DecisionCache

    path = Path(tempfile.mkdtemp()) / "d.json"
    rt, st = _decided_with_a_cache(path)
    assert st.decisions.unsaved is not None and DecisionCache(path).entries() == {}
    # 0.8 ms / 5% = 16 ms of steps of the choice (parallel-2: 72 us): 223 steps
    decided = rt.counts["steps"]
    while st.decisions.unsaved is not None:
        rt.step(st)
    assert 223 <= rt.counts["steps"] - decided <= 223 + 64
    assert DecisionCache(path).get("k")["executor"] == "parallel"
    path.unlink()
    st2 = Stpa(_FakeRuntime(), cores=2, rounds=1, trace=False, clock=rt.clock,
               probe_share=None, cache_path=path, cache=True)
    st2.decisions.cache_key = "k2"
    while st2.decision is None:
        st2.rt.step(st2)
    assert DecisionCache(path).entries() == {}
    st2.notify_close()
    assert set(DecisionCache(path).entries()) == {"k2"}


def test_a_decision_due_while_another_process_writes_is_written_at_a_later_check():
    """The mid-run write (inside a step) waits MID_RUN_WAIT_S at most for
    other processes' writes; kept from it, the decision waits for a later
    monitor check and is written there, never over the other writer's."""
    import fcntl
    import tempfile
    from pathlib import Path

    from seer_env.stpa import DecisionCache
    from seer_env.stpa.decision import MID_RUN_WAIT_S

    assert MID_RUN_WAIT_S < DecisionCache.LOCK_WAIT_S
    path = Path(tempfile.mkdtemp()) / "d.json"
    rt, st = _decided_with_a_cache(path)
    decided = rt.counts["steps"]
    with open(path.with_name(path.name + ".lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process's write, long
        for _ in range(223 + 64 + 100):  # past the write's due check (the test above)
            rt.step(st)
        assert st.decisions.unsaved is not None and not path.exists()
    while st.decisions.unsaved is not None:  # the lock is free: the next check writes
        rt.step(st)
    assert rt.counts["steps"] - decided <= 223 + 64 + 100 + 64
    assert DecisionCache(path).get("k")["executor"] == "parallel"


def test_the_cache_key_follows_the_build_and_the_machine(monkeypatch):
    from seer_env.stpa import DecisionCache
    from seer_env.stpa import cache as stpa_mod

    rt = Runtime("phold", phold_cfg(num_entities=30), 1, "parallel", 2)
    k = DecisionCache.key(rt, None, 2, {"L2": 1 << 20})
    assert k == DecisionCache.key(rt, None, 2, {"L2": 1 << 20})
    assert k != DecisionCache.key(rt, None, 4, {"L2": 1 << 20})  # cores
    assert k != DecisionCache.key(rt, None, 2, {"L2": 1 << 21})  # caches
    assert k != DecisionCache.key(rt, 1, 2, {"L2": 1 << 20})  # pool cap
    monkeypatch.setattr(stpa_mod, "__version__", "0.0.0+other")
    assert k != DecisionCache.key(rt, None, 2, {"L2": 1 << 20})  # the package's build
    monkeypatch.undo()
    monkeypatch.setattr(stpa_mod, "cpu_model", lambda: "another CPU")
    assert k != DecisionCache.key(rt, None, 2, {"L2": 1 << 20})  # the machine
    rt.close()


@pytest.mark.parametrize("content", [
    b"\x00\xff not json", b"[]", b'{"version": 99, "entries": {}}',
    b'{"version": %d, "entries": {"k": {"executor": "warp", "threads": 2}}}'
    % DecisionCache.VERSION,
    b'{"version": %d, "entries": []}' % DecisionCache.VERSION, b"",
])
def test_a_corrupted_cache_is_an_empty_one(tmp_path, content):
    """Garbage, another version or invalid entries: ignored (a preflight runs),
    and the next decision rewrites the file whole."""
    from seer_env.stpa import DecisionCache

    path = tmp_path / "stpa.json"
    path.write_bytes(content)
    rt = _preflight(path, phold_cfg(num_entities=30, remote=0.6))
    assert rt.stpa.decision is not None and not rt.stpa.from_cache
    rt.close()
    assert len(DecisionCache(path).entries()) == 1


def test_a_cache_file_of_format_1_is_read_as_empty(tmp_path):
    """Format 1 files may hold decisions made in company (a serial decision
    made beside a busy process, which every later run alone kept): read as
    empty, a preflight runs, and the file is rewritten in the current format."""
    path = tmp_path / "stpa.json"
    cfg = phold_cfg(num_entities=30, remote=0.6)
    rt = _preflight(path, cfg)
    rt.close()
    entries = DecisionCache(path).entries()
    assert len(entries) == 1 and DecisionCache.VERSION == 2
    path.write_text(json.dumps({"version": 1, "entries": entries}))
    rt = _preflight(path, cfg)
    assert rt.stpa.decision is not None and not rt.stpa.from_cache
    rt.close()
    assert json.loads(path.read_text())["version"] == DecisionCache.VERSION
    rt = _preflight(path, cfg)  # and the rewritten file is read
    assert rt.stpa.from_cache
    rt.close()


def test_a_remembered_choice_the_runtime_cannot_take_is_probed_afresh(tmp_path):
    """An entry naming a configuration the runtime refuses (the conservative
    parallel executor for lookahead 0) leaves the run to a normal preflight
    instead of failing its creation."""
    from seer_env.stpa import DecisionCache

    path = tmp_path / "stpa.json"
    cfg = phold_cfg(num_entities=30, remote=0.6, lookahead=0.0)
    opts = {**_auto_opts(), "cache": True, "cache_path": path}
    rt = Runtime("phold", cfg, 1, "parallel", "auto", oversubscribe=True, stpa_options=opts)
    key = rt.stpa.decisions.cache_key
    rt.close()
    DecisionCache(path).put(key, {"executor": "parallel", "threads": 2, "reason": "x",
                                  "medians_ns": {}, "events_per_step": 10.0,
                                  "alive_agents": 30})
    rt = Runtime("phold", cfg, 1, "parallel", "auto", oversubscribe=True, stpa_options=opts)
    assert rt.stpa.state == "preflight" and not rt.stpa.from_cache
    assert rt.executor != "parallel"
    rt.close()


def test_an_unwritable_cache_changes_nothing(tmp_path):
    path = tmp_path / "dir"
    path.mkdir()  # a folder where the file should be: neither read nor written
    rt = _preflight(path, phold_cfg(num_entities=30, remote=0.6))
    assert rt.stpa.decision is not None
    rt.close()
    assert path.is_dir() and not any(path.iterdir())


def test_the_cache_works_across_processes(tmp_path):
    """An env made in a new process starts from the decision an earlier process
    made for the same configuration (the envs' default, SEER_STPA_CACHE on)."""
    import os
    import subprocess
    import sys

    code = (
        "from seer_env.envs import pcs_v0\n"
        "env = pcs_v0.parallel_env(width=4, height=4)\n"
        "# a busy host (CI under load) must not make this a decision in company,\n"
        "# which is not remembered: the machine's load unknown\n"
        "import time\n"
        "from seer_env.stpa.company import CpuSample\n"
        "env.stpa.cpu_sampler = lambda: CpuSample(time.perf_counter_ns(), "
        "time.process_time_ns(), None)\n"
        "env.stpa.cpu_start = None\n"
        "env.stpa.wait_sampler = None\n"
        "env.reset(seed=1)\n"
        "for _ in range(20000):  # until settled (not put off, no probe running)\n"
        "    if not env.agents:\n"
        "        env.reset()\n"
        "    env.step({a: 0 for a in env.agents})\n"
        "    if env.stpa.settled:\n"
        "        break\n"
        "st = env.stpa\n"
        "print(st.from_cache, st.decision.trigger, st.executor, st.threads, st.preflight_steps)\n"
    )
    env = {**os.environ, "SEER_STPA_CACHE": "1",
           "SEER_STPA_CACHE_FILE": str(tmp_path / "d.json")}
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=300, check=True).stdout.split()
            for _ in range(2)]
    assert outs[0][:2] == ["False", "preflight"] and int(outs[0][4]) > 0
    assert outs[1][:2] == ["True", "cache"] and outs[1][4] == "0"
    assert outs[1][2:4] == outs[0][2:4]


def test_tiny_steps_leave_the_pools_untimed():
    """Probing only as much as the run can win back: steps of 10-20 us (the
    fake runtime's) are shorter than a pool's synchronisation could pay for,
    and the one-thread executors differ by a fraction of such a step, so the
    preflight is its two features steps: nothing is timed, no pool is started,
    the serial executor runs and the reason says why.  The same run with
    tiny_ns=0 times parallel-2."""
    rt = _FakeRuntime()
    st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16, check_ns=0.0,
              trace=False, tie=0.0, clock=rt.clock)
    for _ in range(60):
        rt.step(st)
    assert st.decision is not None and st.decision.candidate == SERIAL
    assert st.decision.medians_ns == {} and st.preflight_steps == 2
    assert rt.switches == [("serial", 1)]
    assert st.reason == (
        "The serial executor, untimed: on one thread the executors differ by a few percent "
        "of such a step, less than timing them costs (a confirmation re-probe times them "
        "once the run has lasted long enough to pay for it). Limit: a step takes 11.0 us, "
        "less than 20 us: too short for a pool's synchronisation to pay, so parallel-2 were "
        "not timed.")
    # a drift to steps as short does not re-probe (nothing could win it back)...
    rt.events_per_step = 40
    for _ in range(200):
        rt.step(st)
    assert len(st.history) == 1 and st.state == "monitor"
    # ... a drift to long steps does
    rt.events_per_step = 1000
    for _ in range(200):
        rt.step(st)
    assert len(st.history) > 1 and st.history[1].trigger != "confirm"
    rt = _FakeRuntime()
    st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16, check_ns=0.0,
              trace=False, tie=0.0, clock=rt.clock, tiny_ns=0.0, probe_share=None)
    for _ in range(60):
        rt.step(st)
    assert "parallel-2" in st.decision.medians_ns


def test_a_long_run_of_tiny_steps_times_the_one_thread_executors_once_it_pays():
    """The untimed tiny choice is checked by the confirmation re-probe, which
    waits confirm_budget times its own steps: then serial and parallel-1 are
    timed (never a pool), and the serial executor, timed now, stays (the
    fake's parallel-1 is 10% faster: on one thread the choice is the serial
    executor all the same)."""
    rt = _FakeRuntime()
    st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16, check_ns=0.0,
              trace=False, tie=0.0, clock=rt.clock, hysteresis=0.05, recheck_ns=0.0)
    steps = 0
    while len(st.history) < 2 and steps < 5000:
        rt.step(st)
        steps += 1
    # reprobe_rounds x 3 candidates x (k + 1) steps, k = 8 for 10 us steps
    assert steps >= 50 * 1 * 3 * 9
    dec = st.history[1]
    assert dec.trigger == "confirm" and dec.candidate == SERIAL
    assert set(dec.medians_ns) == {"serial", "parallel-1"}
    assert all(t == 1 for _, t in rt.switches)
    assert (rt.executor, rt.threads) == ("serial", 1)


def test_confirmation_reprobes_wait_for_their_budget():
    """A confirmation re-probe waits confirm_budget times what it costs, in
    steps: reprobe_rounds x 3 candidates x (k + 1) steps, each with the
    controller's bookkeeping (probe_step_ns = 20 us) on the chosen one's 72
    us: with the default 50 and k = 2, at least 50 x 9 x 92 / 72 = 575 steps
    after the preflight (counted in steps alone it was 450, and on tiny steps
    confirming took 9% of the run); without the budget, reprobe_gap."""
    for budget, first_allowed in ((50.0, 575), (0.0, 16)):
        rt = _FakeRuntime()
        rt.events_per_step = 1000  # 100 us steps: not tiny
        st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16,
                  check_ns=0.0, trace=False, tie=0.0, clock=rt.clock, confirm_budget=budget,
                  probe_share=None)
        steps = 0
        while st.decision is None:
            rt.step(st)
            steps += 1
        decided = steps
        assert st._step_ns() == 72_000.0
        while len(st.history) < 2 and steps < 3000:
            rt.step(st)
            steps += 1
        assert st.history[1].trigger == "confirm"
        assert first_allowed <= steps - decided <= first_allowed + 2 * 8 + 20
        if budget:  # the next waits for what the first cost, measured, if more
            assert st.monitor.confirm_wait(st) >= math.ceil(
                50 * st.prober.confirm_cost_ns / 100_000)


def test_monitor_checks_are_spaced_by_what_they_cost_as_measured():
    """Cold between steps, a check cost 60-115 us where check_ns assumed 30: on
    PCS 4x4's 9 us steps the checks took 3% of the run.  The checks' measured
    cost (the last five's median) now spaces them to 1% of the steps: 50 us
    checks on 11 us steps come 455 steps apart."""
    rt = _FakeRuntime()  # 100 events a step: the serial executor 11 us, the choice on one core
    st = Stpa(rt, cores=1, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16,
              check_ns=0.0, trace=False, tie=0.0, clock=rt.clock, tiny_ns=0.0,
              probe_share=None, confirm=False)
    while st.decision is None:
        rt.step(st)
    assert st._check_interval() == 8  # nothing measured yet: check_every
    rt.stats_cost_ns = 50_000
    at = []
    for _ in range(3000):
        if st.countdown <= 1:
            at.append(rt.counts["steps"])
        rt.step(st)
    gaps = [b - a for a, b in itertools.pairwise(at)]
    assert st.decision.candidate == SERIAL
    assert len(gaps) >= 4 and set(gaps) == {455}, gaps  # (no cost measured: 8 apart)
    assert list(st.monitor.check_costs)[-1] == 50_000


def test_tiny_steps_seen_after_a_cold_first_step_still_leave_the_pools():
    """The first step may be slow (cold caches, a pool's set-up): it is not
    measured, the second features step is, and shows steps under tiny_ns, so
    no pool is started and nothing is timed."""
    rt = _FakeRuntime()
    rt.first_extra_ns = 50_000  # the first step takes 60 us
    st = Stpa(rt, cores=2, rounds=3, reprobe_rounds=1, check_every=8, reprobe_gap=16, check_ns=0.0,
              trace=False, tie=0.0, clock=rt.clock)
    steps = 0
    while st.decision is None and steps < 200:
        rt.step(st)
        steps += 1
    assert st.decision is not None and st.decision.candidate == SERIAL
    assert ("parallel", 2) not in rt.switches
    assert "too short for a pool's synchronisation to pay" in st.reason
    assert st.preflight_steps == 2


def _cold_start(**opts):
    """A fake run whose first two steps take 60 us, the rest 10 us."""
    rt = _FakeRuntime()
    rt.first_extra_ns = 50_000
    st = Stpa(rt, cores=2, rounds=3, reprobe_rounds=1, check_every=8, reprobe_gap=16, check_ns=0.0,
              trace=False, tie=0.0, clock=rt.clock, **opts)
    rt.step(st)
    rt.counts["steps"] = 0  # the second step is cold too
    rt.step(st)
    return rt, st


def test_tiny_steps_seen_only_in_a_timed_visit_still_leave_the_pools():
    """Both features steps may be slow (a process warming up): probing at once,
    once a one-thread candidate's timed visit shows steps under tiny_ns, the
    pools are dropped from the probe and one round is enough."""
    rt, st = _cold_start(probe_share=None)
    steps = 2
    while st.decision is None and steps < 200:
        rt.step(st)
        steps += 1
    assert st.decision is not None and set(st.decision.medians_ns) == {"serial", "parallel-1"}
    assert ("parallel", 2) not in rt.switches
    assert "too short for a pool's synchronisation to pay" in st.reason
    # one round: each one-thread candidate timed once (k steps), a warm-up each
    assert st.preflight_steps <= 2 + 2 * (1 + 8)


def test_a_pool_probe_waits_until_the_run_can_pay_for_it():
    """The default: after two 61 us features steps (the fake's serial executor)
    the pools' probe (1 ms fixed, 20 us per probe step, 3 rounds x 3
    candidates x (k + 1) steps with k = 4)
    would cost far more than 5% of the run so far, so the serial executor runs
    untimed; the first check sees 10 us steps and settles on the tiny choice
    without ever starting a pool."""
    rt, st = _cold_start()
    assert st.decision.candidate == SERIAL and st.decision.medians_ns == {}
    assert st.reason.startswith(
        "The serial executor for now, untimed: a step takes 61.0 us, and probing "
        "parallel-2 would cost about 1.9 ms beyond the steps' own work, over 5% of the "
        "run's step time so far (an episode at least); they are probed once the run has "
        "taken about 637 steps "
        "(more if its steps get shorter, none if they fall under 20 us)")
    assert st.preflight_steps == 2
    for _ in range(8):
        rt.step(st)
    assert len(st.history) == 2 and st.decision.candidate == SERIAL
    assert "too short for a pool's synchronisation to pay" in st.reason
    assert ("parallel", 2) not in rt.switches and st.state == "monitor"


def test_a_pool_probe_put_off_starts_once_the_run_has_paid_for_it():
    """110 us steps (the fake's serial executor): the probe (1 ms + 20 us x (2 +
    3 x 3 x 3) steps = 1.58 ms) starts at the first check after 5% of the run's
    step time covers it (288 steps), traces nothing here (trace=False), times the pools and decides;
    the decision is the preflight's, and the preflight's steps add up."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    st = Stpa(rt, cores=2, rounds=3, reprobe_rounds=1, check_every=8, reprobe_gap=16, check_ns=0.0,
              trace=False, tie=0.0, clock=rt.clock, confirm=False)
    rt.step(st)
    rt.step(st)
    assert "about 288 steps" in st.reason and st.decision.medians_ns == {}
    steps = 2
    while st.state != "preflight":
        rt.step(st)
        steps += 1
    assert ("parallel", 2) not in rt.switches and 288 <= steps <= 288 + 8
    while st.state != "monitor":
        rt.step(st)
    assert len(st.history) == 2 and st.decision.trigger == "preflight"
    assert set(st.decision.medians_ns) == {"serial", "parallel-1", "parallel-2"}
    assert st.decision.candidate == P[2]  # 72 us against 100 (the fake's costs)
    # two features steps; round 1 (serial, parallel-1, parallel-2): the serial
    # executor (running: no warm-up) 2, each pool a warm-up and 2; round 2 goes
    # back (parallel-2 running: 2, parallel-1 3, serial 3), round 3 forth from
    # the serial executor (running: 2, its visits back to back); then, after
    # two visits, the serial executor (110 us, over 1.5x the best) is dropped
    # and the pools take 3 each
    assert st.preflight_steps == 2 + (2 + 3 + 3) + (2 + 3 + 3) + (2 + 3 + 3)


def test_looks_at_a_put_off_probe_cost_under_1_percent_of_the_steps():
    """A look at the put-off probe costs what a monitor check does: with 30 us
    looks on 110 us steps, every 8 steps (check_every) they took 3% of the
    steps; spaced by their measured cost they take 1% (28 steps apart), and
    the probe still starts once the run has paid for it (288 steps)."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    st = Stpa(rt, cores=2, rounds=3, reprobe_rounds=1, check_every=8, reprobe_gap=16,
              check_ns=0.0, trace=False, tie=0.0, clock=rt.clock, confirm=False)
    rt.step(st)
    rt.step(st)
    assert st.deferred
    rt.stats_cost_ns = 30_000
    looks, steps = [], 2
    while st.state != "preflight":
        if st.countdown <= 1:
            looks.append(steps)
        rt.step(st)
        steps += 1
    gaps = [b - a for a, b in itertools.pairwise(looks)]
    assert gaps and max(gaps) == 28 and all(g >= 8 for g in gaps), gaps
    assert 288 <= steps <= 288 + 28


def _decided_with_parallel_2_hopeless(slow: int = 3) -> tuple[_FakeRuntime, Stpa]:
    """A run whose parallel-2 runs its first ``slow`` steps (its warm-up and
    both traced steps) 10x slower (720 us, over 3x the first step's 110),
    stepped until STPA decides."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000  # serial 110 us, parallel-1 100 us, parallel-2 72 us
    rt.slow[("parallel", 2)] = slow
    rt.slow_factor = 10.0
    st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16,
              check_ns=0.0, trace=True, tie=0.0, clock=rt.clock, probe_share=None,
              confirm=False)
    while st.decision is None:
        rt.step(st)
    return rt, st


def test_a_pool_whose_traced_step_is_hopeless_is_not_timed():
    """drop_traced: a pool whose traced steps took over 3x the first
    (one-thread) step, twice -- a loaded machine, a hopeless pool -- is
    dropped before its timed visits, and the reason says the pools were not
    timed; the others are timed as usual.  (This fake has no trace buffers:
    the traced step is timed untraced, and the rule reads its time.)"""
    rt, st = _decided_with_parallel_2_hopeless()
    assert set(st.timings) == {"serial", "parallel-1"}  # (it would win at 72 us)
    assert st.decision.candidate.label == "serial"
    assert "the pools with more threads were not timed" in st.reason
    assert rt.slow[("parallel", 2)] == 0  # (the warm-up and the two traced steps)


def test_one_slow_traced_step_is_traced_again_and_the_pool_timed():
    """A pool's traced step over 3x the first step once (the host's moment:
    another tenant, a VM's hiccup), its next traced step as fast as ever:
    the pool is timed and wins.  (One such step dropped parallel-2 in bench
    company's runs alone, and the serial executor ran untimed until a
    confirmation seconds later.)"""
    rt, st = _decided_with_parallel_2_hopeless(slow=2)  # the warm-up and the first trace
    assert rt.slow[("parallel", 2)] == 0
    assert "parallel-2" in st.timings
    assert st.decision.candidate.label == "parallel-2", st.reason


def test_pools_dropped_with_the_serial_executor_pruned_leave_the_serial_executor(monkeypatch):
    """Where the plan pruned the serial executor for a pool predicted far
    ahead (parallel-1 the one-thread baseline) and the pool is then dropped
    (its traced step over 3x the first: another env process probing beside
    this one), the serial executor runs, not parallel-1 (which runs the same
    events through the pool's phases, a few percent slower); the reason says
    why.  (It chose parallel-1, untimed, as "the only candidate left".)"""
    from seer_env.stpa import probe as probe_mod

    real = probe_mod.probe_plan

    def pruning(features, summary, candidates, prune=1.5):
        return [c for c in real(features, summary, candidates, prune) if c != SERIAL]

    monkeypatch.setattr(probe_mod, "probe_plan", pruning)
    _, st = _decided_with_parallel_2_hopeless()
    assert st.decision.candidate == SERIAL and st.executor == "serial"
    assert st.reason.startswith("The serial executor, untimed: the one-thread executor, as the "
                                "pools were dropped (parallel-2 dropped: its traced steps took "
                                "over 3x the first step, twice)")


def test_a_share_no_timed_pool_fits_takes_the_pool_the_trace_predicts_within_it():
    """16 cores, other processes busy on 10: the run's share is 6, but the
    probe timed only the pools the trace put ahead (12-16 threads) and
    parallel-1: the pool within the share the trace predicts fastest runs
    (it fell back to parallel-1: 4 env processes on 16 cores, 0.73x serial
    in aggregate where parallel-4 ran 1.79x).  A share of one, or a pool
    within the share that was timed, leaves the choice alone."""
    from types import SimpleNamespace

    from seer_env.stpa.decision import Decisions

    f = feats(cores=16, events_per_step=46_000.0, windows_per_step=20.0)
    s = summary(threads=16, events_per_window=2300.0, handler_ns=30.0, barrier_ns=2000.0)
    host = SimpleNamespace(prober=SimpleNamespace(features=f, trace_summary=s), margin=0.02)
    one = Decision(P[1], "The parallel executor on 1 thread: ...", {"parallel-1": 1.5e6}, {})
    dec = Decisions._within_share(host, one, {P[1]: [1.5e6]}, 6)
    assert dec.candidate.threads > 1 and dec.candidate.threads <= 6, dec.reason
    assert dec.reason.startswith(f"{in_words(dec.candidate).capitalize()}, untimed: within "
                                 "this run's share of the cores the trace predicts it fastest")
    assert Decisions._within_share(host, one, {P[1]: [1.5e6]}, 1) is one
    assert Decisions._within_share(host, one, {P[1]: [1.5e6], P[4]: [2e6]}, 6) is one
    # the serial executor chosen untimed in parallel-1's place (`select`'s
    # serial_untimed): scaled from parallel-1's iteration all the same (it
    # returned the serial executor: one thread of a share of 6)
    untimed = Decision(SERIAL, "The serial executor, untimed: ...", {"parallel-1": 1.5e6}, {})
    dec2 = Decisions._within_share(host, untimed, {P[1]: [1.5e6]}, 6)
    assert dec2.candidate == dec.candidate, dec2.reason
    assert "scaled from parallel-1's 1.50 ms" in dec2.reason


def test_a_company_look_whose_check_cuts_the_pool_to_the_share_goes_on():
    """A look between the checks that sees the iterations rise runs a full
    check first; when that check cuts the pool to the run's share of the
    cores (other processes busy for the last 100 ms), the look ends there.
    It went on to word a company re-probe from the windows the cut had
    cleared: TypeError ('>=' between None and float), and STPA stopped
    ("failed") in one of three bench runs of 2 env processes."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    co = _Company(rt, work_ns=1_000_000)
    st = _company_stpa(rt, co, check_every=10**6)  # the looks' checks alone
    co.loop(st, 80)
    assert st.settled and st.threads == 2
    rt.now += 150_000_000  # a long pause (a learner's update): the marks can be read
    rt.slow[("parallel", 2)] = 10**9
    rt.slow_factor = 3.0
    co.others = 1.0
    for _ in range(200):
        co.loop(st, 1)
        if st.threads == 1:
            break
    assert st.state != "failed", st.reason
    assert st.threads == 1


def test_fair_cores():
    from seer_env.stpa.company import fair_cores

    assert fair_cores(None, 2) == 2
    assert [fair_cores(x, 2) for x in (0.0, 0.4, 0.6, 1.0, 1.9, 5.0)] == [2, 2, 1, 1, 1, 1]
    assert [fair_cores(x, 8) for x in (0.0, 2.6, 3.0, 7.5)] == [8, 5, 5, 1]


def test_beside_busy_processes_a_run_takes_its_share_of_the_cores():
    """Other processes keep a core busy from the start (another env process,
    a burner): a pool of 2 still wins this run's own iterations (72 us
    against 100, with 1 ms of the caller's work), but on 2 cores the run's
    share is 1, so STPA goes to one thread once the monitor's marks (100 ms
    apart) have seen the load -- the probe, 20 ms, was too short for
    /proc/stat's ticks -- without a probe, and says why; fair_share=False
    keeps the pool; with the machine to itself the pool stays."""
    for others, fair, want in ((1.0, True, 1), (1.0, False, 2), (0.0, True, 2)):
        rt = _FakeRuntime()
        rt.events_per_step = 1000
        co = _Company(rt, work_ns=1_000_000)
        co.others = others
        st = _company_stpa(rt, co, fair_share=fair)
        co.loop(st, 40)
        assert st.settled and st.threads == 2 and st.decision.trigger == "preflight"
        co.loop(st, 360)
        assert st.settled and st.threads == want, (others, fair, st.reason)
        assert (st.decision.trigger == "share") == (want == 1)
        if want == 1:
            assert st.reason.startswith("The serial executor: other processes kept 1.0 of the "
                                        "machine's cores busy after the decision on "
                                        "parallel-2, so this run takes its share of the "
                                        "cores, 1 of 2"), st.reason
            probes = st.probe_steps
            co.loop(st, 200)
            assert st.threads == 1 and st.probe_steps == probes  # no probe, no flip-flop


def test_a_share_of_one_core_takes_the_serial_executor_the_probe_did_not_time(monkeypatch):
    """The plan pruned the serial executor for the pool (its trace far ahead),
    so the probe timed parallel-1 and parallel-2; then other processes keep a
    core busy and the run's share is 1: the serial executor runs, untimed,
    not parallel-1 (which runs the same events through the pool's phases:
    PCS 64x64 beside another env process, 3.5% slower), without a probe."""
    from seer_env.stpa import probe as probe_mod

    real = probe_mod.probe_plan

    def pruning(features, summary, candidates, prune=1.5):
        return [c for c in real(features, summary, candidates, prune) if c != SERIAL]

    monkeypatch.setattr(probe_mod, "probe_plan", pruning)
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    co = _Company(rt, work_ns=100_000)  # parallel-2 1.16x parallel-1: the serial
    # executor stays untimed (a narrower win has it timed too)
    co.others = 1.0
    st = _company_stpa(rt, co)
    co.loop(st, 40)
    assert st.settled and st.threads == 2 and set(st.timings) == {"parallel-1", "parallel-2"}
    co.loop(st, 1800)
    assert st.decision.trigger == "share" and st.decision.candidate == SERIAL, st.reason
    assert st.executor == "serial"
    assert st.reason.startswith("The serial executor: other processes kept 1.0 of the "
                                "machine's cores busy after the decision on parallel-2"), st.reason
    probes = st.probe_steps
    co.loop(st, 1000)
    assert st.executor == "serial" and st.probe_steps == probes


def test_a_confirmation_beside_busy_processes_times_no_pool_beyond_the_share():
    """Other processes keep a core busy: once the run is on its share (one
    thread of 2), its confirmations time the one-thread candidates only --
    parallel-2's steps would run on the others' core and slow them (two env
    processes on 2 cores timed it beside each other's serial steps) -- and
    once the others are gone a confirmation times the pool again and takes
    it back (a serial choice's confirmations timed the one-thread candidates
    alone: the run stayed on one thread for good), and keeps it (decisions in
    quick succession left the monitor's marks a few ms apart, and the next
    read the load since the run began, the others' long gone: back to one
    thread)."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    co = _Company(rt, work_ns=100_000)  # parallel-2: 172 us an iteration, serial 210
    co.others = 1.0
    st = _company_stpa(rt, co, confirm=True, confirm_budget=2.0)
    co.loop(st, 1500)  # the marks, 100 ms apart, see the others' load
    assert st.threads == 1, st.reason
    ran: dict[str, int] = {}
    real = rt.step_uncontrolled

    def counted(mask_ptr) -> None:
        key = "serial" if rt.executor == "serial" else f"{rt.executor}-{rt.threads}"
        ran[key] = ran.get(key, 0) + 1
        real(mask_ptr)

    rt.step_uncontrolled = counted
    n = len(st.history)
    co.loop(st, 10_000)
    assert len([d for d in st.history[n:] if d.trigger == "confirm"]) >= 2, \
        [d.trigger for d in st.history]
    assert ran.get("parallel-1", 0) > 0 and "parallel-2" not in ran, ran
    assert st.threads == 1
    co.others = 0.0
    co.loop(st, 10_000)
    assert ran.get("parallel-2", 0) > 0, ran
    assert st.threads == 2, st.reason


def test_fair_cores_with_each_processs_load_is_max_min_fair():
    """Read process by process, the cores are shared out as the scheduler
    shares them among runnable threads: processes that used less than an
    equal share keep theirs, the rest get the same as this run; CPU no
    process accounts for stays with its owners."""
    from seer_env.stpa.company import fair_cores

    # 8 env processes on 16 cores, the others' probes taking all they could
    assert fair_cores(14.0, 16, [2.0] * 7) == 2
    assert fair_cores(15.5, 16, [4.0, 6.0, 5.5]) == 4
    assert fair_cores(15.9, 16, [15.9]) == 8  # one greedy process: half each
    # the light ones keep what they used; the share of the rest is equal
    assert fair_cores(9.0, 16, [1.0, 8.0]) == 8
    assert fair_cores(3.0, 16, [1.0, 1.0, 1.0]) == 13
    # unaccounted CPU (ended processes, other containers) is left to its owners
    assert fair_cores(15.0, 16, [1.0]) == 1
    assert fair_cores(10.0, 16, []) == 6
    assert fair_cores(None, 16, [3.0]) == 16


@hypothesis.given(
    cores=st_h.integers(1, 64),
    loads=st_h.lists(st_h.floats(0.0, 64.0), max_size=12),
    extra=st_h.floats(0.0, 64.0))
def test_fair_cores_by_process_never_takes_less_than_the_whole_machines_rule(cores, loads, extra):
    """The share process by process is at least the cores less everyone's
    load, at most the cores, one at least; on 2 cores the two rules agree."""
    from seer_env.stpa.company import fair_cores

    others = sum(loads) + extra
    whole, each = fair_cores(others, cores), fair_cores(others, cores, loads)
    assert 1 <= whole <= each <= cores
    if cores <= 2:
        assert each == whole


def test_fair_cores_rounds_a_half_core_alike_by_both_rules():
    """2 cores less 0.5 busy (five processes of 0.1): a share of 2 by both
    rules.  The water-filling's running sums left 1.4999999999999998 and
    rounded it to 1 (Hypothesis found it)."""
    from seer_env.stpa.company import fair_cores

    assert fair_cores(0.5, 2) == fair_cores(0.5, 2, [0.1] * 4) == 2
    assert fair_cores(sum([0.1] * 4) + 0.1, 2, [0.1] * 4) == 2
    assert fair_cores(1.5, 4, [0.1] * 15) == fair_cores(1.5, 4) == 3


def test_other_env_processes_that_probe_at_once_share_the_cores_out():
    """16 cores and 7 other env processes using 1.5-2.5 cores' worth each
    (their own pools, probing as this one): the machine's busy time alone
    says 15 cores are taken and leaves this run one (4 env processes on 16 cores:
    1.15x serial in aggregate where pools of 4 ran 2.01x); read process by
    process, this run's share is an equal one, 2 -- at the probe's decision
    (other processes busy from the start) and at the monitor's marks (a run
    settled on 16 threads alone, then the others start)."""
    for from_start in (True, False):
        for by_process, want in ((True, 2), (False, 1)):
            rt = _FakeRuntime()
            rt.events_per_step, rt.scales = 10_000, True
            co = _Company(rt, work_ns=100_000)
            if from_start:
                co.others, co.peers = 15.0, [1.5, 2.0, 2.0, 2.5, 2.5, 2.0, 2.5]
            st = _company_stpa(rt, co, cores=16,
                               proc_sampler=co.procs if by_process else None)
            for _ in range(2000):
                co.loop(st, 1)
                if st.settled:
                    break
            assert st.settled
            if not from_start:
                assert st.threads > 2
                co.others, co.peers = 15.0, [1.5, 2.0, 2.0, 2.5, 2.5, 2.0, 2.5]
            co.loop(st, 3000)  # 0.5 s: the monitor's marks, 100 ms apart
            assert st.settled and st.threads == want, (from_start, by_process, st.reason)
            if by_process:
                assert "this run takes its share of the cores, 2 of 16, shared out among 8 " \
                    "busy processes" in st.reason, st.reason
            probes = st.probe_steps
            co.loop(st, 3000)
            assert st.threads == want and st.probe_steps == probes  # it stays


def test_process_cpu_ns_reads_every_other_process(tmp_path):
    """utime and stime of each /proc/<pid>/stat but this process's, in ns
    (comm may hold spaces and parentheses); what cannot be read or parsed is
    left out; a /proc that cannot be listed gives None."""
    import os

    from seer_env.stpa.company import process_cpu_ns

    tick = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    rest = " 0 0 0 0 0 0 0 0 0 0 20 0 0 0"

    def write_stat(pid: str, text: str) -> None:
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "stat").write_text(text)

    write_stat("12", "12 (python) R 1 1 1 0 -1 0 0 0 0 0 30 7" + rest)
    write_stat("40", "40 (a (b) c) S 1 1 1 0 -1 0 0 0 0 0 5 5" + rest)
    write_stat("41", "41 (cut")                          # ended while read: left out
    write_stat("42", "42 (x) S 1 1 1 0 -1 0 0 0 0 0 a b" + rest)
    write_stat("99", "99 (me) R 1 1 1 0 -1 0 0 0 0 0 100 100" + rest)
    (tmp_path / "43").mkdir()                      # no stat file
    (tmp_path / "self").mkdir()                    # not a pid
    (tmp_path / "stat").write_text("cpu 1 2 3")
    assert process_cpu_ns(str(tmp_path), self_pid=99) == {12: 37 * tick, 40: 10 * tick}
    assert process_cpu_ns(str(tmp_path / "absent")) is None
    import seer_env.stpa.company as company_mod

    with pytest.MonkeyPatch.context() as mp:  # a crowded host: not read at all
        mp.setattr(company_mod, "MAX_PROCS", 3)
        assert process_cpu_ns(str(tmp_path), self_pid=99) is None
    mine = process_cpu_ns()
    assert mine is not None and os.getpid() not in mine and all(v >= 0 for v in mine.values())


def test_others_loads_counts_the_processes_seen_at_both_marks():
    from seer_env.stpa.company import CpuSample, others_loads

    a = CpuSample(0, 0, 0, {1: 0, 2: 10**8, 3: 5})
    b = CpuSample(10**8, 0, 0, {1: 2 * 10**8, 2: 1.5 * 10**8, 3: 5, 4: 10**9})
    assert others_loads(a, b) == [2.0, 0.5]  # 3 idle, 4 new: left out
    assert others_loads(CpuSample(0, 0, 0), b) is None
    assert others_loads(a, CpuSample(10**7, 0, 0, {})) is None  # under 50 ms


def test_the_reason_gives_events_per_window_as_the_traced_pool_ran_them():
    """The features step runs on one thread, where the parallel executor takes
    each instance whole (one 'window' a step): the reason's events per window
    come from the trace of the pool (PCS 32x32 printed 11179 per window for 20
    windows a step)."""
    f = feats(cores=2, events_per_step=11179.0, windows_per_step=1.0)
    s = summary(threads=2, events_per_window=565.9, barrier_ns=1200.0)
    dec = select({P[1]: [7e5] * 3, P[2]: [4.6e5] * 3}, f, s)
    assert "The workload: 11179 events per step, 565.9 per window;" in dec.reason


def test_the_probe_goes_back_and_forth_to_spare_executor_switches():
    """Rounds visit the candidates forth and back from the running one (serial,
    parallel-1, parallel-2, then parallel-2, parallel-1, serial, ...): the
    serial executor is entered and left about once a round (a switch between
    executors moves every pending event), and a candidate visited twice in a
    row takes no second warm-up step."""
    rt = _FakeRuntime()
    st = Stpa(rt, cores=2, rounds=3, reprobe_rounds=1, check_every=8, reprobe_gap=16,
              check_ns=0.0, trace=False, tie=0.0, drop=100.0, clock=rt.clock, tiny_ns=0.0,
              probe_share=None, confirm=False)
    while st.decision is None:
        rt.step(st)
    assert rt.switches == [("serial", 1), ("parallel", 1), ("parallel", 2), ("parallel", 1),
                           ("serial", 1), ("parallel", 1), ("parallel", 2)]
    # 2 features steps; k = 8 timed steps a visit (10 us steps); a warm-up step
    # after each of the 6 switches of the probe
    assert st.preflight_steps == 2 + 3 * 3 * 8 + 6
    assert st.decision.candidate == P[2]


def test_an_episode_long_enough_to_pay_for_the_probe_is_not_kept_waiting():
    """The run will take at least an episode once one was reset: 110 us steps
    and max_cycles=1000 (110 ms, 5% of it 5.5 ms) pay for the 1.6 ms probe at
    once; max_cycles=100 (0.55 ms) does not, and the probe waits."""
    for mc, waits in ((1000, False), (100, True)):
        rt = _FakeRuntime()
        rt.max_cycles = mc
        rt.events_per_step = 1000
        st = Stpa(rt, cores=2, rounds=3, reprobe_rounds=1, check_every=8, reprobe_gap=16,
                  check_ns=0.0, trace=False, tie=0.0, clock=rt.clock, confirm=False)
        rt.step(st)
        rt.step(st)
        assert st.deferred is waits
        assert (st.state == "preflight") is not waits


def test_a_close_call_gets_more_visits_only_if_the_run_can_pay_for_them():
    """The serial executor 8.5 us and parallel-2 9 us are within tie=0.2: more
    visits of the two settle it, each switch between them moving every
    pending event (1 ms here).  A run of a million-step episode pays for
    them; one of 5000-step episodes does not, and decides at once.  (On one
    thread there is no such pair: the serial executor is the one-thread
    choice, whatever parallel-1's sample.)"""
    steps = {}
    for mc in (10**6, 5000):
        rt = _FakeRuntime()
        rt.max_cycles = mc
        rt.switch_cost_ns = 1_000_000
        rt.serial_factor = 0.85
        st = Stpa(rt, cores=2, rounds=2, reprobe_rounds=1, check_every=8, reprobe_gap=16,
                  check_ns=0.0, trace=False, tie=0.2, extra_rounds=2, clock=rt.clock,
                  tiny_ns=0.0, confirm=False, cache=False)
        while st.decision is None:
            rt.step(st)
        steps[mc] = st.preflight_steps
        assert st.decision.candidate == SERIAL
    # the two extra rounds of the pair: serial (running: no warm-up) 8,
    # parallel-2 1 + 8; back: parallel-2 8, serial 1 + 8
    assert steps[5000] == 54
    assert steps[10**6] == steps[5000] + 8 + 9 + 8 + 9


def test_a_probe_times_each_candidate_on_records_in_order():
    """A switch leaves the event records where the last configuration had
    them, and the steps after it run slower until the runtime orders them
    (here 1.5x for 32 steps, as the serial executor's first steps after
    parallel-2 on PCS 64x64): a probe that timed those steps chose the pool
    (0.70 ms a step against the serial executor's 0.60, timed at 0.90).  The
    controller puts the records in order after each switch it makes
    (`Runtime.tidy_records`), so each candidate is timed as it runs."""
    rt = _FakeRuntime()
    rt.events_per_step = 10_000
    rt.serial_factor = 0.6
    rt.untidy_steps = {"serial": 32}
    st = Stpa(rt, cores=2, rounds=2, reprobe_rounds=1, check_every=8, reprobe_gap=16,
              check_ns=0.0, trace=False, tie=0.0, clock=rt.clock, tiny_ns=0.0, confirm=False,
              cache=False, probe_share=None)
    while st.decision is None:
        rt.step(st)
    assert st.decision.candidate == SERIAL, st.reason
    assert rt.tidied == len(rt.switches) > 2
    assert st.decision.medians_ns["serial"] == 600_000
    assert st.decision.medians_ns["parallel-2"] == 702_000


def _remember_serial(rt: _FakeRuntime, path, medians_ns: dict[str, float],
                     events_per_step: float = 100.0) -> None:
    """A remembered decision for ``rt`` on 2 cores, in the cache at ``path``:
    the serial executor, with the probe's medians ``medians_ns``."""
    from seer_env.stpa import DecisionCache

    key = DecisionCache.key(rt, None, 2, cache_sizes())
    DecisionCache(path).put(key, {
        "executor": "serial", "threads": 1, "reason": "r", "events_per_step": events_per_step,
        "alive_agents": 8, "medians_ns": medians_ns})


def test_a_remembered_close_call_is_confirmed_soon(tmp_path):
    """A decision whose runner-up was within 1.25x (one probe's few samples)
    is confirmed in a run that starts from it once probe_share of the run's
    step time covers the confirmation ((1 ms + 20 us x 2 x 3 x 3 steps) over 5%
    of the remembered 100 us steps: 272 steps), not after confirm_budget x its
    cost in steps (50 x 18 steps x 120 us / 100 us = 1080); the
    confirmation replaces a wrong choice (parallel-2 is 1.5x faster than the
    serial executor here).  A clear decision waits.  The runner-up is one a
    choice could be made from: parallel-1 beside a timed serial executor is
    not a close call (it never replaces it)."""

    for runner_up, first_allowed in ((110_000.0, 272), (500_000.0, 1080)):
        path = tmp_path / f"d{runner_up:.0f}.json"
        rt = _FakeRuntime()
        rt.events_per_step = 1000  # serial 110 us, parallel-1 100 us, parallel-2 72 us
        _remember_serial(rt, path, {"serial": 100_000.0, "parallel-2": runner_up}, 1000.0)
        st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=2, check_every=8, reprobe_gap=16,
                  check_ns=0.0, trace=False, tie=0.0, clock=rt.clock, cache=True,
                  cache_path=path, hysteresis=0.05, recheck_ns=0.0)
        assert st.from_cache and rt.executor == "serial"
        assert st.monitor.close_call_remembered is (runner_up == 110_000.0)
        steps = 0
        while len(st.history) < 2 and steps < 3000:
            rt.step(st)
            steps += 1
        assert st.history[1].trigger == "confirm"
        # a check every 8 steps; the confirmation's own steps (2 rounds of
        # three), twice: a confirmation that replaces the choice with no
        # company to explain it is timed once more, 16 steps on
        # (`Decisions._recheck`)
        assert first_allowed <= steps <= first_allowed + 8 + 2 * (12 + 36) + 16 + 8
        assert st.decision.candidate == P[2] and st.monitor.close_call_remembered is False
    path = tmp_path / "one.json"
    rt = _FakeRuntime()
    _remember_serial(rt, path, {"serial": 100_000.0, "parallel-1": 90_000.0})
    st = Stpa(rt, cores=2, clock=rt.clock, cache=True, cache_path=path, trace=False)
    assert st.from_cache and st.monitor.close_call_remembered is False


def test_a_remembered_choice_run_on_fewer_threads_is_not_trusted(tmp_path):
    """A remembered pool the runtime now runs on fewer threads (a budget
    lowered since, a forged entry: "optimistic-1024" ran as optimistic-2,
    with the entry's reason) is not the decision: a preflight runs."""

    class Capped(_FakeRuntime):
        def switch_executor(self, executor: str, threads: int) -> None:
            super().switch_executor(executor, min(threads, 2))

    from seer_env.stpa import DecisionCache

    for threads, trusted in ((2, True), (3, False), (1024, False)):
        path = tmp_path / f"c{threads}.json"
        rt = Capped()
        DecisionCache(path).put(DecisionCache.key(rt, None, 2, cache_sizes()), {
            "executor": "parallel", "threads": threads, "reason": "The parallel executor: x",
            "events_per_step": 100.0, "alive_agents": 8, "medians_ns": {"serial": 1e5}})
        st = Stpa(rt, cores=2, clock=rt.clock, cache=True, cache_path=path, trace=False)
        assert st.from_cache is trusted, threads
        assert st.state == ("monitor" if trusted else "preflight")


@pytest.mark.parametrize("options, named", [
    ({"rounds": "3"}, "rounds='3'"), ({"rounds": 0}, "rounds=0"), ({"rounds": True}, "rounds=True"),
    ({"margin": None}, "margin=None"), ({"margin": float("nan")}, "margin=nan"),
    ({"check_every": float("inf")}, "check_every=inf"), ({"cores": float("nan")}, "cores=nan"),
    ({"cores": 10**30}, "cores=1000000000000000000000000000000"),
    ({"max_threads": 0}, "max_threads=0"), ({"probe_share": 0}, "probe_share=0"),
    ({"probe_share": float("nan")}, "probe_share=nan"), ({"min_visit_ns": float("inf")},
                                                         "min_visit_ns=inf"),
    ({"drift_factor": 1.0}, "drift_factor=1.0"), ({"alive_drop": 2}, "alive_drop=2"),
    ({"tie": -0.1}, "tie=-0.1"), ({"recheck_ns": float("nan")}, "recheck_ns=nan"),
    ({"confirm": "yes"}, "confirm='yes'"), ({"clock": 3}, "clock=3"),
    ({"cache_path": 7}, "cache_path=7"), ({"roundz": 3}, "'roundz'"), (5, "stpa_options=5"),
    # the controller rounds with these: inf, or a finite time beyond any run, overflowed
    ({"confirm_budget": float("inf")}, "confirm_budget=inf"),
    ({"probe_step_ns": 1e308}, "probe_step_ns=1e+308"),
])
def test_bad_stpa_options_are_refused_before_the_runtime_is_made(options, named):
    """Every bad controller option is a ConfigError naming it, at once (not
    the controller's failure at the first step: ``probe_share=0`` divided by
    zero there, NaN compared false everywhere), from `Runtime` before the
    runtime is made and from `Stpa` itself; fixed threads too (a typo is
    one there as well)."""
    from seer_env.errors import ConfigError

    for threads in ("auto", 2):
        with pytest.raises(ConfigError, match=re.escape(named)):
            Runtime("phold", {"num_entities": 8}, 1, "parallel", threads, stpa_options=options)
    if isinstance(options, dict) and "roundz" not in options:
        with pytest.raises(ConfigError, match=re.escape(named)):
            Stpa(_FakeRuntime(), **options)


def test_every_stpa_option_is_checked_and_the_edges_are_taken():
    """`check_options` knows exactly Stpa's keyword arguments, and the
    values the tests and the docs use are taken (infinite bounds, zero
    budgets, None)."""
    import inspect

    from seer_env.stpa import check_options
    from seer_env.stpa.options import OPTIONS

    assert set(OPTIONS) == set(inspect.signature(Stpa).parameters) - {"runtime"}
    ok = {"drop_traced": float("inf"), "prune": 1e9, "reprobe_gap": 0, "tiny_ns": 0,
          "confirm_budget": 0.0, "check_ns": 0.0, "probe_share": None, "cores": 3,
          "max_threads": None, "cache": None, "cache_path": "x.json", "clock": lambda: 0,
          "confirm": np.bool_(True), "margin": 0.0, "alive_drop": 1.0}
    assert check_options(ok) == ok and check_options(None) == {}
    # NumPy's scalars are taken, and max_threads keys the cache as its int
    st = Stpa(_FakeRuntime(), cores=np.int64(2), max_threads=np.int64(2), margin=np.float32(0.1),
              trace=False)
    assert type(st.max_threads) is int and st.max_threads == 2
    st = Stpa(_FakeRuntime(), cores=2, trace=False, **{k: v for k, v in ok.items()
                                                        if k not in ("cores", "clock")})
    assert st.state == "preflight"


def test_a_corrupted_label_in_a_remembered_decision_is_refused(tmp_path, caplog):
    """A cache entry whose medians name no candidate ("parallel-x") is not
    used (a preflight runs) and nothing fails: STPA read the labels back as
    candidates since this session."""

    path = tmp_path / "bad.json"
    rt = _FakeRuntime()
    _remember_serial(rt, path, {"serial": 100_000.0, "parallel-x": 90_000.0})
    with caplog.at_level(logging.ERROR, logger="seer_env.stpa"):
        st = Stpa(rt, cores=2, clock=rt.clock, cache=True, cache_path=path, trace=False)
    assert not st.from_cache and st.state != "failed"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_candidate_whose_last_visit_beat_the_fastest_is_a_close_call():
    """Medians 10% apart are no close call at ``tie`` 5%; a candidate whose
    last visit (its ``recent`` samples) ran faster than the fastest's median
    is (still warming up, or the host changed under the probe); one whose
    last visit did not, or with no ``recent``, is not."""
    from seer_env.stpa.cost import close_call

    flat = [2.0e6] * 6
    warming = [5.6e6, 3.1e6, 2.5e6, 2.4e6, 1.9e6, 1.8e6]
    assert close_call({SERIAL: flat, P[2]: warming}, 0.05) is None
    assert close_call({SERIAL: flat, P[2]: warming}, 0.05, recent=2) == (SERIAL, P[2])
    assert close_call({SERIAL: flat, P[2]: [2.2e6] * 4 + [2.1e6, 2.0e6]}, 0.05,
                      recent=2) is None
    # the slower of two warming ones counts only where its last visit beat the fastest
    third = Candidate("optimistic", 2)
    assert close_call({SERIAL: flat, P[2]: [2.5e6] * 6, third: warming}, 0.05,
                      recent=2) == (SERIAL, third)
    assert close_call({SERIAL: flat}, 0.05, recent=2) is None


def test_a_pool_still_warming_up_in_the_probe_gets_more_rounds_and_is_chosen():
    """parallel-2's first steps after the switch to it run 3x slower (its
    threads and records settling: on a 2-core VM its steps on PCS 64x64 went
    5.6, 3.1, 2.5, 2.0, 1.9 and 1.8 ms over its first visits, 1.45 over
    time, against the serial executor's flat 2.2): its median loses to one
    thread's, its last visit wins.  More rounds of both follow, and the
    pool is chosen; with the warm-up over before the probe it is chosen
    without them."""
    def decided(slow: int) -> Stpa:
        rt = _FakeRuntime()
        rt.events_per_step = 1000
        rt.scales = True
        rt.slow[("parallel", 2)] = slow  # the warm-up step and two timed ones
        st = _fake_stpa(rt, tie=0.0, extra_rounds=3, confirm=False)
        while st.decision is None or st.state == "probing":
            rt.step(st)
        return st

    st = decided(3)
    p2 = st.history[-1].medians_ns
    assert st.decision.candidate == P[2], st.reason
    assert len(st.timings["parallel-2"]) == 4 + 3 * 2, st.timings  # 2 visits + 3 extra
    assert p2["parallel-2"] < p2["parallel-1"]
    st = decided(0)
    assert st.decision.candidate == P[2] and len(st.timings["parallel-2"]) == 4


def _decided_after_a_slow_serial_visit(serial_factor: float, rounds: int) -> Stpa:
    """One core, 1000 events a step (parallel-1 100 us, the serial executor
    ``serial_factor`` times that): the serial executor's first visit runs its
    2 timed steps 3x slow (a transient on the host); stepped until STPA
    decides."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    rt.serial_factor = serial_factor
    st = Stpa(rt, cores=1, rounds=rounds, reprobe_rounds=1, check_every=8, reprobe_gap=16,
              check_ns=0.0, trace=False, tie=0.0, clock=rt.clock, probe_share=None,
              confirm=False)
    rt.step(st)
    rt.step(st)  # the features steps
    rt.slow[("serial", 1)] = 2  # its first visit's 2 timed steps
    while st.decision is None:
        rt.step(st)
    return st


def test_a_noisy_visit_of_the_serial_executor_gets_more_rounds_before_it_decides():
    """The serial executor runs 3% faster than parallel-1 (the same events
    without the pool's phases), but its one visit was slow (the host's other
    tenants): parallel-1 timed 2.9x faster, which the serial executor and
    parallel-1 cannot differ by.  Both get extra rounds, and the serial
    executor is chosen (a burner beside PCS 64x64 made parallel-1 "1.27x
    faster than the serial executor", and the run kept it)."""
    st = _decided_after_a_slow_serial_visit(serial_factor=0.97, rounds=1)
    assert len(st.timings["serial"]) > 2 and len(st.timings["parallel-1"]) > 2
    assert st.decision.candidate == SERIAL, st.reason


def test_pools_slower_than_their_trace_are_found():
    """A pool whose steps alone ran over 1.5x what the traced step predicts,
    the prediction ahead of the choice's own steps: found, with how much
    slower.  A pool near its prediction, one predicted behind the choice, or
    no trace: none."""
    from types import SimpleNamespace

    from seer_env.stpa.decision import Decisions
    from seer_env.stpa.probe import Probe

    f = feats(events_per_step=46_000.0, windows_per_step=20.0)
    s = summary(threads=2, events_per_window=2300.0, handler_ns=30.0, barrier_ns=1500.0)
    host = SimpleNamespace(prober=SimpleNamespace(features=f, trace_summary=s))
    dec = Decision(SERIAL, "r", {}, {})
    pr = Probe("preflight", 1)
    pr.steps_alone = {SERIAL: [1.4e6] * 2, P[2]: [1.3e6] * 2}  # predicted 702 us
    c, ratio = Decisions._pools_slower_than_traced(host, pr, dec)
    assert c == P[2] and ratio == pytest.approx(1.3e6 / 702_000.0)
    pr.steps_alone = {SERIAL: [1.4e6] * 2, P[2]: [0.8e6] * 2}
    assert Decisions._pools_slower_than_traced(host, pr, dec) is None
    pr.steps_alone = {SERIAL: [0.5e6] * 2, P[2]: [1.3e6] * 2}  # predicted behind serial
    assert Decisions._pools_slower_than_traced(host, pr, dec) is None
    host.prober.trace_summary = None
    pr.steps_alone = {SERIAL: [1.4e6] * 2, P[2]: [1.3e6] * 2}
    assert Decisions._pools_slower_than_traced(host, pr, dec) is None


def test_a_preflight_whose_pool_ran_behind_its_trace_is_timed_again_shortly(monkeypatch):
    """The preflight's pool ran well behind its trace with no company seen (a
    moment of the host's own noise): a confirmation times it again a quarter
    of a second on (16 steps at least), not after the confirmation budget's
    wait, and takes the pool once it runs as it should.  (A run decided in
    such a moment kept the serial executor until its first confirmation.)"""
    from seer_env.stpa.decision import Decisions

    rt = _FakeRuntime()
    rt.events_per_step = 1000  # serial 110 us, parallel-1 100 us, parallel-2 72 us
    rt.slow[("parallel", 2)] = 4  # its preflight visits: 3x
    flagged = {"n": 0}

    def behind(host, pr, dec):
        if pr.trigger == "preflight" and dec.candidate.threads == 1:
            flagged["n"] += 1
            return (P[2], 3.0)
        return None

    monkeypatch.setattr(Decisions, "_pools_slower_than_traced", staticmethod(behind))
    st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16,
              check_ns=0.0, trace=False, tie=0.0, clock=rt.clock, probe_share=None,
              recheck_ns=2_000_000.0)
    while st.decision is None:
        rt.step(st)
    assert st.threads == 1 and flagged["n"] == 1
    assert st.monitor.recheck_steps == 19  # 2 ms in the serial executor's 110 us steps
    steps = 0
    while len(st.history) < 2 and steps < 2000:
        rt.step(st)
        steps += 1
    assert st.history[1].trigger == "confirm" and steps <= 20 + 8 + 20, steps
    assert st.threads == 2, st.reason
    assert flagged["n"] == 1


@pytest.mark.parametrize("share", [0.5, 0.1])
def test_a_pool_whose_threads_waited_for_a_core_saw_company(monkeypatch, share):
    """The preflight's pool ran well behind its trace and its other threads
    waited half of each step for a core (the kernel's run_delay), with no
    other process busy: a thread pool of this process spinning on the cores
    (torch's OpenMP threads at their default wait policy, measured: 0.7-3 ms
    a step of parallel-2 in the torch loop of `bench company`, 0.5 us alone).
    That is company, not a moment of the host's noise: the reason says so
    and no recheck is due a quarter of a second later (it timed the same
    company again, 27-57 steps of a 288-step benchmark).  Waits of a tenth
    of a step are no such sign: the recheck stays."""
    from seer_env.stpa.decision import Decisions

    rt = _FakeRuntime()
    rt.events_per_step = 1000  # serial 110 us, parallel-1 100 us, parallel-2 72 us
    rt.slow[("parallel", 2)] = 4  # its preflight visits: 3x
    rt.wait_share = share
    monkeypatch.setattr(Decisions, "_pools_slower_than_traced", staticmethod(
        lambda host, pr, dec: (P[2], 3.0) if dec.candidate.threads == 1 else None))
    co = _Company(rt)
    st = _company_stpa(rt, co, rounds=1, check_every=8, reprobe_gap=16, confirm=True,
                       recheck_ns=2_000_000.0, wait_sampler=lambda r: r.waited_ns)
    while st.decision is None:
        rt.step(st)
    assert st.threads == 1
    if share >= 0.25:
        assert st.monitor.recheck_steps is None
        assert ("Limit: company: another thread pool in this process spins on the same "
                "cores (parallel-2's other threads waited 108 us a step for a core, its "
                "steps took 216 us; a learner's threads") in st.reason, st.reason
    else:
        assert st.monitor.recheck_steps == 19
        assert "company" not in st.reason


@pytest.mark.parametrize("others,threads", [(0.0, 0.0), (0.1, 0.0), (0.4, 0.0), (0.4, 0.5)])
def test_waits_for_a_core_are_put_on_a_thread_pool_of_this_process_only_where_one_ran(
        monkeypatch, others, threads):
    """The pool's threads waited half of each step for a core, no other
    process busy enough to blame (under half a core): a thread pool of this
    process, where its other threads (neither the caller nor the pool) kept
    half a core busy; where they kept none, not this process's: another
    process part of the time (a burner at half duty kept 0.4 of a core busy
    over a probe on a 2-core VM, and the reason blamed "another thread pool
    in this process" of a process with no other thread busy), or something
    outside it (a virtual machine's host).  Where nothing on the machine was
    busy for long (other processes under a quarter of a core, this process's
    other threads idle), that is a moment of the host's: the decision is
    timed again shortly, as one whose pools ran behind their trace with no
    company seen (alone on a 2-core VM a preflight that saw such waits kept
    the serial executor for the run); a half-duty burner's 0.4 is company."""
    from seer_env.stpa.decision import Decisions

    rt = _FakeRuntime()
    rt.events_per_step = 1000
    rt.slow[("parallel", 2)] = 4
    rt.wait_share = 0.5
    monkeypatch.setattr(Decisions, "_pools_slower_than_traced", staticmethod(
        lambda host, pr, dec: (P[2], 3.0) if dec.candidate.threads == 1 else None))
    co = _Company(rt)
    co.others, co.threads_busy = others, threads
    st = _company_stpa(rt, co, rounds=1, check_every=8, reprobe_gap=16, confirm=True,
                       recheck_ns=2_000_000.0, wait_sampler=lambda r: r.waited_ns,
                       thread_sampler=co.threads)
    rt.now += 100_000_000  # the run's first 0.1 s: long enough to read other processes' load
    while st.decision is None:
        rt.step(st)
    assert st.threads == 1
    waits = "parallel-2's other threads waited 108 us a step for a core, its steps took 216 us"
    if threads:
        assert f"Limit: company: another thread pool in this process spins on the same cores " \
            f"({waits}, while other processes kept 0.4 of the machine's cores busy; a " \
            "learner's threads" in st.reason, st.reason
    elif others:
        assert f"Limit: company: another process holds a core part of the time ({waits}; " \
            f"other processes kept {others:.1f} of the machine's cores busy during the " \
            "probe, this process's other threads 0.0)" in st.reason, st.reason
    else:
        assert f"Limit: company: something outside this process holds a core ({waits}; " \
            "other processes 0.0, this process's other threads 0.0 of the machine's cores " \
            "during the probe" in st.reason, st.reason
    if others < 0.25 and not threads:  # a moment of the host's: timed again shortly
        assert st.monitor.recheck_steps is not None and st.monitor.recheck_chain is not None
    else:  # company all the same
        assert st.monitor.recheck_steps is None


def test_a_moments_waits_for_a_core_leave_the_pool_to_a_recheck(monkeypatch):
    """The preflight's pool waited half of each step for a core with nothing
    on the machine busy (a moment of a virtual machine's host): one thread
    is chosen, and the recheck a little later, the moment gone, takes the
    pool (before it, the run kept one thread until its first confirmation,
    hundreds of steps on: alone, 0.98x serial where parallel-2 ran 1.23x)."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    rt.slow[("parallel", 2)] = 4
    rt.wait_share = 0.5
    _trace_puts_parallel_2_ahead(monkeypatch)
    co = _Company(rt)
    st = _company_stpa(rt, co, rounds=1, check_every=8, reprobe_gap=16, confirm=True,
                       recheck_ns=2_000_000.0, wait_sampler=lambda r: r.waited_ns,
                       thread_sampler=co.threads)
    rt.now += 100_000_000
    while st.decision is None:
        rt.step(st)
    assert st.threads == 1 and "something outside this process holds a core" in st.reason
    rt.wait_share = 0.0  # the moment passes
    at = _decisions_at(st, rt, 60)
    assert [t for _, t in at] == ["confirm"] and st.threads == 2, (at, st.reason)


def test_other_threads_cpu_ns_reads_this_processs_other_threads(tmp_path):
    """Each thread's time on a core (schedstat's first field) by tid, less the
    caller and the runtime's pool; a thread whose file is missing or
    malformed (it ended) is left out; no task folder, or more threads than
    the limit: None.  Between two
    samples, the cores' worth the threads seen at both used."""
    import threading
    import time

    from seer_env.stpa.company import (
        CpuSample,
        other_threads_busy_cores,
        other_threads_cpu_ns,
    )

    class Pool:
        def pool_tids(self):
            return [12]

    for tid, text in (("10", "900 120 4\n"), ("11", "50 30 1\n"), ("12", "70 1 1\n"),
                      ("13", "x y\n"), ("14", "")):
        (tmp_path / tid).mkdir()
        (tmp_path / tid / "schedstat").write_text(text)
    (tmp_path / "15").mkdir()
    assert other_threads_cpu_ns(Pool(), str(tmp_path), caller=11) == {10: 900}
    assert other_threads_cpu_ns(Pool(), str(tmp_path / "gone"), caller=11) is None
    assert other_threads_cpu_ns(Pool(), str(tmp_path), caller=11, limit=5) is None  # 6 threads
    a = CpuSample(0, 0, None, threads={10: 900, 16: 5})
    b = CpuSample(1000, 0, None, threads={10: 1400, 17: 10_000})
    assert other_threads_busy_cores(a, b) == 0.5
    assert other_threads_busy_cores(a, CpuSample(1000, 0, None)) is None
    # this process: a busy thread is seen, the caller is not
    stop = threading.Event()
    spin = threading.Thread(target=lambda: [None for _ in iter(stop.is_set, True)])
    spin.start()
    try:
        while spin.native_id is None:
            time.sleep(0.001)
        t0 = other_threads_cpu_ns(Pool())
        time.sleep(0.05)
        t1 = other_threads_cpu_ns(Pool())
    finally:
        stop.set()
        spin.join()
    assert t0 is not None and t1 is not None
    assert threading.get_native_id() not in t0 and spin.native_id in t0
    assert t1[spin.native_id] > t0[spin.native_id]


def test_a_wait_read_after_the_pool_step_counts_to_the_pool():
    """A thread woken for a pool's step that got its core only after the step
    returned: its wait shows in the next read (before the next probe step,
    or at the decision), and counts to that pool's waits."""
    from seer_env.stpa.probe import Probe, Prober

    reads = iter([150, 400])

    class Host:
        rt = None

        @staticmethod
        def wait_sampler(rt):
            return next(reads)

    pr = Probe("preflight", 1)
    pr.waited[P[2]] = [50.0, 1, 1000.0]
    pr.wait_last = (P[2], 100)
    prober = Prober(pr)
    assert prober.waits_since(Host, pr) == 150
    assert pr.waited[P[2]] == [100.0, 1, 1000.0] and pr.wait_last is None
    assert prober.waits_since(Host, pr) == 400  # nothing open: nothing added
    assert pr.waited[P[2]] == [100.0, 1, 1000.0]


def _trace_puts_parallel_2_ahead(monkeypatch) -> None:
    """The trace predicts parallel-2 ahead of one thread: a decision for one
    thread ran it behind its trace (`Decisions._pools_slower_than_traced`)."""
    from seer_env.stpa.decision import Decisions

    monkeypatch.setattr(Decisions, "_pools_slower_than_traced",
                        staticmethod(lambda host, pr, dec: (P[2], 3.0)
                                     if dec.candidate.threads == 1 else None))


def _decisions_at(st, rt, steps):
    """Step ``rt`` under ``st`` ``steps`` times: (step, trigger) of each decision."""
    at, n = [], len(st.history)
    for i in range(steps):
        rt.step(st)
        at.extend((i, d.trigger) for d in st.history[n:])
        n = len(st.history)
    return at


@pytest.mark.parametrize("recheck_ns", [2_000_000.0, 0.0])
def test_pools_always_behind_their_trace_are_rechecked_at_doubling_waits(monkeypatch,
                                                                          recheck_ns):
    """A trace that always mispredicts the pool (uneven cores, a memory-bound
    pool): the preflight's recheck comes a quarter of a second on (here 2 ms),
    each confirmation that finds the same waits twice the last, and once that
    is longer than the confirmation budget's own wait the confirmations wait
    for their budget as usual (a recheck after every confirmation would
    confirm every quarter of a second for good).  With ``recheck_ns=0`` the
    first waits its fewest steps (16), and the doubling ends all the same."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    _trace_puts_parallel_2_ahead(monkeypatch)
    st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16,
              check_ns=0.0, trace=False, tie=0.0, clock=rt.clock, probe_share=None,
              recheck_ns=recheck_ns)
    rt.slow_factor = 2.0
    rt.slow[("parallel", 2)] = 10**9  # every parallel-2 step 2x: behind one thread
    at = _decisions_at(st, rt, 1500)
    assert [t for _, t in at] == ["preflight"] + ["confirm"] * (len(at) - 1)
    assert st.threads == 1 and 5 <= len(at) < 10, at
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(at)]
    # 2 ms of 110 us steps (19), its confirmation's 8 steps and the check's
    # spacing, then twice as long each time, up to the budget's wait
    assert gaps[0] <= 19 + 8 + 8, gaps
    # (each gap holds its confirmation's steps and the check's spacing too)
    assert len(gaps) >= 4 and all(b >= 1.4 * a for a, b in itertools.pairwise(gaps)), gaps
    assert st.monitor.recheck_chain is None  # the chain ended at the budget's wait


def test_a_pool_behind_its_trace_for_a_while_is_taken_by_a_later_recheck(monkeypatch):
    """The preflight's pool ran behind its trace through the preflight and its
    first recheck (the host slow for longer than a quarter of a second): the
    rechecks after it, twice as far apart each, time it again and take it
    once it runs as it should -- long before the confirmation budget's wait
    (a run decided in such a moment kept the serial executor for it)."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000  # serial 110 us, parallel-1 100 us, parallel-2 72 us
    _trace_puts_parallel_2_ahead(monkeypatch)
    st = Stpa(rt, cores=2, rounds=1, reprobe_rounds=1, check_every=8, reprobe_gap=16,
              check_ns=0.0, trace=False, tie=0.0, clock=rt.clock, probe_share=None,
              recheck_ns=2_000_000.0, hysteresis=0.05)
    # its first 12 steps 3x slower: the preflight's visits and the first
    # rechecks' (it loses them), then as fast as it is
    rt.slow[("parallel", 2)] = 12
    at = _decisions_at(st, rt, 600)
    assert st.threads == 2, (at, st.reason)
    took = next(i for (i, _), d in zip(at, st.history, strict=True) if d.candidate.threads == 2)
    # without the doubling rechecks the first confirmation came some 545
    # steps after the first recheck
    assert took < 400, at


def test_one_slow_visit_does_not_drop_a_candidate():
    """A transient on the host can make one visit of the best candidate 3x
    slow (over the 1.5x drop bound): it is dropped only after two visits, so
    its later visits show it is the fastest, and it is chosen."""
    # serial 80 us, parallel-1 100 us
    st = _decided_after_a_slow_serial_visit(serial_factor=0.8, rounds=3)
    assert st.timings["serial"][:2] == [240_000.0, 240_000.0]
    assert st.decision.candidate == SERIAL


# -- round 4: a cache that cannot hurt a run (issue 33, items 1-4) --------------------------


def _entry(**over):
    e = {"executor": "serial", "threads": 1, "reason": "x", "medians_ns": {},
         "events_per_step": 10.0, "alive_agents": 30, "t": 1.0}
    return {**e, **over}


@pytest.mark.parametrize("bad", [
    {"step_ns": 0.0}, {"step_ns": -5.0}, {"step_ns": float("nan")},
    {"events_per_step": float("inf")}, {"events_per_step": -1.0},
    {"events_per_step": float("nan")}, {"medians_ns": {"serial": -3.0}},
    {"medians_ns": {"serial": 0.0}}, {"medians_ns": {"serial": float("inf")}},
    {"alive_agents": -1}, {"threads": True}, {"t": float("nan")},
    {"events_per_step": True},
])
def test_an_entry_out_of_range_is_ignored_and_a_run_goes_on(tmp_path, bad, caplog):
    """A damaged entry (a zero or negative time, an infinite count, NaN...)
    under the run's own key is left out and logged: the run preflights and
    steps (an entry with step_ns 0 made every later first step raise
    ValueError: cannot convert float NaN to integer)."""
    from seer_env.stpa import DecisionCache

    path = tmp_path / "stpa.json"
    cfg = phold_cfg(num_entities=30, remote=0.6)
    opts = {**_auto_opts(), "cache": True, "cache_path": path}
    rt = Runtime("phold", cfg, 1, "parallel", "auto", oversubscribe=True, stpa_options=opts)
    key = rt.stpa.decisions.cache_key
    rt.close()
    assert DecisionCache.invalid(_entry(**bad)) is not None
    path.write_text(json.dumps({"version": DecisionCache.VERSION,
                                "entries": {key: _entry(**bad)}}))
    with caplog.at_level(logging.INFO, logger="seer_env.stpa"):
        rt = Runtime("phold", cfg, 1, "parallel", "auto", oversubscribe=True,
                     stpa_options=opts)
    assert not rt.stpa.from_cache and rt.stpa.state == "preflight"
    assert any("ignored" in r.getMessage() for r in caplog.records)
    rt.reset([0])
    for _ in range(300):
        rt.step()
    assert rt.stpa.state != "failed"
    rt.close()


def test_writers_in_several_processes_lose_no_entry(tmp_path):
    """Processes writing decisions to one cache at once (RLlib's env runners,
    a process vector env's workers, each closing its envs) each read the
    file, added their entry and replaced it: the last writer's read won, and
    the others' entries were lost (8 processes of 10 entries each kept 13-52
    of the 80).  They take turns: all 80 are kept, and the file is valid."""
    import subprocess
    import sys
    import time

    path = tmp_path / "stpa.json"
    go = time.time() + 3.0  # all start writing at once, once every child is up
    code = (
        "import sys, time\n"
        "from seer_env.stpa import DecisionCache\n"
        "c = DecisionCache(sys.argv[1])\n"
        "e = dict(executor='serial', threads=1, reason='x', medians_ns={},\n"
        "         events_per_step=10.0, alive_agents=3)\n"
        "time.sleep(max(0.0, float(sys.argv[3]) - time.time()))\n"
        "for i in range(10):\n"
        "    c.put(f'{sys.argv[2]}-{i}', e)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), str(p), str(go)])
             for p in range(8)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 8
    assert set(DecisionCache(path).entries()) == {f"{p}-{i}" for p in range(8)
                                                  for i in range(10)}
    assert not [f.name for f in tmp_path.iterdir() if f.name.startswith(".stpa-")]


def test_a_cache_whose_lock_is_held_is_not_written_over_the_holder(tmp_path, monkeypatch):
    """A writer that holds the lock past `DecisionCache.LOCK_WAIT_S` (stopped,
    stuck, or many writers queued on a loaded machine) delays another's write
    by that wait, no more, and that one then writes nothing (put returns
    False): writing anyway replaced the file with a read that missed the
    holder's entry (7 of 80 entries lost once on a loaded 2-core machine).
    A lock file that cannot be made (a folder in its place) does not stop
    the write."""
    import fcntl
    import time

    path = tmp_path / "stpa.json"
    cache = DecisionCache(path)
    assert cache.put("a", _entry()) is True
    monkeypatch.setattr(DecisionCache, "LOCK_WAIT_S", 0.2)
    with open(tmp_path / "stpa.json.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        t0 = time.monotonic()
        assert cache.put("b", _entry()) is False
        assert 0.2 <= time.monotonic() - t0 < 5.0
        assert cache.put("b", _entry(), wait_s=0.0) is False
    assert set(cache.entries()) == {"a"}
    assert cache.put("b", _entry()) is True
    assert set(cache.entries()) == {"a", "b"}
    (tmp_path / "stpa.json.lock").unlink()
    (tmp_path / "stpa.json.lock").mkdir()
    assert cache.put("c", _entry()) is True
    assert set(cache.entries()) == {"a", "b", "c"}


def test_a_decision_without_a_step_time_is_remembered_without_one(tmp_path):
    """A decision made without timing a step has no step time to remember
    (it was written as 0.0); a run started from such an entry steps through
    its confirmation (it computed the confirmation's wait from an infinite
    step time: NaN, and the step raised ValueError)."""
    from seer_env.stpa import DecisionCache

    path = tmp_path / "stpa.json"
    cfg = phold_cfg(num_entities=30, remote=0.6)
    rt = _preflight(path, cfg)
    rt.close()
    ((key, entry),) = DecisionCache(path).entries().items()
    # as a one-candidate model's untimed decision is remembered
    entry = {k: v for k, v in entry.items() if k != "step_ns"}
    path.write_text(json.dumps({"version": DecisionCache.VERSION, "entries": {
        key: {**entry, "executor": "serial", "threads": 1, "medians_ns": {}}}}))
    opts = {**_auto_opts(), "cache": True, "cache_path": path, "confirm_budget": 50.0}
    rt = Runtime("phold", cfg, 1, "parallel", "auto", oversubscribe=True, stpa_options=opts)
    assert rt.stpa.from_cache and rt.stpa.monitor.running_ns is None
    rt.reset([0])
    ref = Runtime("phold", cfg, 1, "serial", 1)
    ref.reset([0])
    for _ in range(1500):  # a confirmation waits 50 x its 18 steps
        rt.step()
        ref.step()
    assert rt.stpa.state != "failed" and len(rt.stpa.history) > 1  # confirmed
    np.testing.assert_array_equal(rt.obs, ref.obs)
    np.testing.assert_array_equal(rt.reward, ref.reward)
    rt.close()
    ref.close()


def test_a_tiny_env_does_not_poison_the_cache(tmp_path):
    """pcs_v0 at 1x1 (and aircraft with one UAV) with the default threads="auto"
    wrote a decision with step_ns 0; every later process's first step then
    raised ValueError and the env said it was interrupted."""
    import subprocess
    import sys

    code = (
        "import time\n"
        "from seer_env.envs import pcs_v0, aircraft_v0\n"
        "from seer_env.stpa.company import CpuSample\n"
        "for env in (pcs_v0.parallel_env(width=1, height=1),\n"
        "            aircraft_v0.parallel_env(num_uavs=1)):\n"
        "    # a busy host (CI under load) must not make these decisions in\n"
        "    # company, which are not remembered: the machine's load unknown\n"
        "    env.stpa.cpu_sampler = lambda: CpuSample(time.perf_counter_ns(), "
        "time.process_time_ns(), None)\n"
        "    env.stpa.cpu_start = None\n"
        "    env.stpa.wait_sampler = None\n"
        "    env.reset(seed=0)\n"
        "    for _ in range(400):\n"
        "        if not env.agents:\n"
        "            env.reset()\n"
        "        env.step({a: env.action_space(a).sample() for a in env.agents})\n"
        "    print(env.stpa.from_cache, env.stpa.state)\n"
        "    env.close()\n"
    )
    env = {**os.environ, "SEER_STPA_CACHE": "1",
           "SEER_STPA_CACHE_FILE": str(tmp_path / "d.json")}
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=300) for _ in range(2)]
    for o in outs:
        assert o.returncode == 0, o.stderr[-3000:]
    assert outs[1].stdout.split() == ["True", "monitor", "True", "monitor"]
    from seer_env.stpa import DecisionCache

    for e in DecisionCache(tmp_path / "d.json").entries().values():
        assert e.get("step_ns") is None or e["step_ns"] > 0


def test_a_deeply_nested_or_huge_cache_file_is_an_empty_one(tmp_path):
    """A JSON file nested deeper than the parser's recursion (RecursionError
    crashed make()) or larger than any cache of ours is ignored."""
    from seer_env.stpa import DecisionCache

    path = tmp_path / "stpa.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    assert DecisionCache(path).entries() == {}
    rt = _preflight(path, phold_cfg(num_entities=30, remote=0.6))
    assert rt.stpa.decision is not None and not rt.stpa.from_cache
    rt.close()
    assert len(DecisionCache(path).entries()) == 1  # replaced by a good one
    path.write_bytes(b" " * (DecisionCache.MAX_BYTES + 1))
    assert DecisionCache(path).entries() == {}


def test_a_cache_file_whose_size_stat_does_not_tell_is_read_only_so_far(tmp_path, monkeypatch):
    """A file whose size fstat gives as 0 (procfs: SEER_STPA_CACHE_FILE
    naming /proc/self/pagemap, gigabytes of it) was read to its end: minutes
    and all the memory there was.  The read stops past MAX_BYTES."""
    import json

    from seer_env.stpa import DecisionCache
    from seer_env.stpa import cache as cache_mod

    path = tmp_path / "d.json"
    good = json.dumps({"version": DecisionCache.VERSION, "entries": {"k": _entry()}})
    path.write_text(good)
    assert list(DecisionCache(path).entries()) == ["k"]
    path.write_text(good + " " * DecisionCache.MAX_BYTES)
    real = os.fstat

    def fstat_says_zero(fd):
        st = real(fd)
        return os.stat_result((*st[:6], 0, *st[7:]))  # st_size, as procfs gives it
    monkeypatch.setattr(cache_mod.os, "fstat", fstat_says_zero)
    assert DecisionCache(path).entries() == {}


def test_the_cache_is_only_a_regular_file(tmp_path):
    """SEER_STPA_CACHE_FILE naming a FIFO blocked make() forever; naming a
    character device replaced it with a regular file.  Neither is read nor
    replaced; a symbolic link to a regular file is followed."""
    from seer_env.stpa import DecisionCache

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    dev = tmp_path / "null"
    os.symlink("/dev/null", dev)  # a character device, as a user's path might name it
    for path in (fifo, Path("/dev/null"), dev):
        c = DecisionCache(path)
        assert c.entries() == {}
        c.put("k", _entry())
        assert c.entries() == {}
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and os.path.islink(dev)
    # the env is made (not blocked) and runs with the FIFO named by the variable
    import subprocess
    import sys

    code = ("from seer_env.envs import phold_v0\n"
            "env = phold_v0.parallel_env(num_entities=30)\n"
            "env.reset(seed=0)\n"
            "for _ in range(50):\n"
            "    env.step({a: env.action_space(a).sample() for a in env.agents})\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "SEER_STPA_CACHE": "1",
                                           "SEER_STPA_CACHE_FILE": str(fifo)})
    assert out.returncode == 0 and out.stdout.split() == ["ok"], out.stderr[-3000:]
    # a link to a regular file: the file is replaced, the link stays
    real = tmp_path / "real.json"
    real.write_text("")
    link = tmp_path / "link.json"
    os.symlink(real, link)
    DecisionCache(link).put("k", _entry())
    assert os.path.islink(link) and set(DecisionCache(real).entries()) == {"k"}


def test_settled_waits_for_the_probe_after_the_pools_waited(tmp_path):
    """Why the cache missed across processes on a loaded machine: a first step
    slowed by the load is over tiny_ns, so the pools' probe was put off; once
    it started, `deferred` was False while the provisional decision still
    stood, and a run that stopped there (the test's loop did) had decided
    nothing to remember.  `settled` is False until the probe has decided."""
    from seer_env.stpa import DecisionCache

    path = tmp_path / "stpa.json"
    rt = _preflight(path, phold_cfg(num_entities=30, remote=0.6), probe_share=0.05,
                    pool_probe_ns=1e9)
    st = rt.stpa
    assert st.deferred and not st.settled and st.as_dict()["settled"] is False
    st.pool_probe_ns = st.probe_step_ns = 0.0
    rt.actions[:] = 0
    seen_probing = False
    for _ in range(400):
        rt.step()
        if not st.deferred and st.state == "preflight":
            seen_probing = True
            assert not st.settled and "for now" in st.reason
        if st.settled:
            break
    assert seen_probing and st.settled and st.state == "monitor"
    rt.close()
    assert len(DecisionCache(path).entries()) == 1


def test_a_failing_controller_costs_no_step(monkeypatch, caplog):
    """A bug in STPA's bookkeeping (here: its monitor check raising) is
    logged and stops the controller; the step it happened in is not lost and
    the outputs stay those of the serial executor."""
    cfg = phold_cfg(num_entities=30, remote=0.6)
    rt = Runtime("phold", cfg, 1, "parallel", "auto", oversubscribe=True,
                 stpa_options={**_auto_opts(), "cache": False, "check_every": 2})
    ref = Runtime("phold", cfg, 1, "serial", 1)
    for r in (rt, ref):
        r.reset([3])
    st = rt.stpa
    for _ in range(200):
        rt.step()
        ref.step()
        if st.state == "monitor":
            break
    assert st.state == "monitor"

    # a bug raised inside a library the controller calls (the standard library's)
    monkeypatch.setattr(st, "_check_drift", lambda *a, **k: statistics.median([]))
    with caplog.at_level(logging.ERROR, logger="seer_env.stpa"):
        for _ in range(50):
            rt.step()
            ref.step()
    assert st.state == "failed" and st.settled
    assert "StatisticsError: no median for empty data" in st.reason
    assert st.decision.trigger == "failed"
    assert any("STPA failed" in r.getMessage() for r in caplog.records)
    assert rt.stats()["steps"] == ref.stats()["steps"]
    np.testing.assert_array_equal(rt.obs, ref.obs)
    np.testing.assert_array_equal(rt.reward, ref.reward)
    rt.reset([4])  # notify_reset is quiet once failed
    rt.step()
    rt.close()
    ref.close()


def test_an_exception_of_the_callers_code_during_the_bookkeeping_is_the_callers(monkeypatch):
    """An exception the caller's own code raises while the controller does its
    bookkeeping -- a signal handler, run between two bytecodes of any frame
    (a timeout's alarm raising TimeoutError) -- propagates to the caller, as
    an interrupt does, and the controller goes on; it was taken for the
    controller's failure: swallowed (the caller's timeout lost), the step
    run, STPA stopped for the run (15 of 15 envs under a random alarm)."""
    cfg = phold_cfg(num_entities=30, remote=0.6)
    rt = Runtime("phold", cfg, 1, "parallel", "auto", oversubscribe=True,
                 stpa_options={**_auto_opts(), "cache": False, "check_every": 2})
    rt.reset([3])
    st = rt.stpa
    for _ in range(200):
        rt.step()
        if st.state == "monitor":
            break
    assert st.state == "monitor"
    calls = []

    def alarm(*a, **k):  # the caller's handler, as Python runs it mid-bookkeeping
        calls.append(1)
        raise TimeoutError("the caller's timeout")

    monkeypatch.setattr(st, "_check_drift", alarm)
    with pytest.raises(TimeoutError, match="the caller's timeout"):
        for _ in range(50):
            rt.step()
    assert calls == [1] and st.state == "monitor", st.reason
    monkeypatch.undo()
    for _ in range(20):
        rt.step()
    assert st.state == "monitor" and not any(d.trigger == "failed" for d in st.history)
    # the rule, on tracebacks: the innermost frame's file decides
    from seer_env.stpa.company import raised_by_caller

    try:
        statistics.median([])
    except statistics.StatisticsError as exc:
        assert not raised_by_caller(exc)
    try:
        alarm()
    except TimeoutError as exc:
        assert raised_by_caller(exc)
    assert not raised_by_caller(ValueError("no traceback"))
    rt.close()


def test_a_callers_oserror_during_a_proc_read_is_not_taken_for_an_unreadable_file(
        tmp_path, monkeypatch):
    """The company readers take an OSError for a /proc file they cannot read
    (no evidence, None); a TimeoutError -- an OSError -- that a signal
    handler raised during the read is the caller's and propagates (it was
    swallowed: 2 of 249 alarms under a random timer)."""
    import seer_env.stpa.company as company

    assert company.process_cpu_ns(str(tmp_path / "missing")) is None  # unreadable: None

    def alarm(*a, **k):
        raise TimeoutError("the caller's timeout")

    monkeypatch.setattr(company.os, "listdir", alarm)
    with pytest.raises(TimeoutError, match="the caller's timeout"):
        company.process_cpu_ns(str(tmp_path))


def test_a_reason_from_an_empty_trace_says_so():
    """A traced step that handled no event predicts nothing: the reason said
    "parallel-2 ran 143723.5x slower than its trace predicts" from it.  Now it
    says the trace was empty, predicts nothing and prunes no candidate."""
    f = feats(cores=2, events_per_step=0.0)
    empty = summarize_trace([np.zeros(0, dtype=TRACE_DTYPE)] * 2)
    assert empty.empty and not summarize_trace([]).events_per_window
    dec = select({SERIAL: [9e3, 9e3], P[1]: [9e3, 9e3], P[2]: [4e4, 4e4]}, f, empty)
    assert dec.predicted_ns == {}
    assert "slower than its trace predicts" not in dec.reason
    assert dec.reason.endswith(
        "Limit: measured: parallel-2 took 4.44x as long per step (the traced step had no "
        "events, so its trace says nothing).")
    assert probe_plan(f, empty, [SERIAL, P[1], P[2]]) == [SERIAL, P[1], P[2]]


def test_an_unexpected_error_in_a_step_is_not_called_an_interrupt(monkeypatch):
    """A step cut short by an error that is no SeerError leaves the env
    needing reset(), and says so without blaming a KeyboardInterrupt (it said
    'interrupted (KeyboardInterrupt)' after STPA's ValueError)."""
    env = phold_v0.parallel_env(num_entities=8, threads=1)
    env.reset(seed=0)

    def boom(*a, **k):
        raise ValueError("unexpected")

    monkeypatch.setattr(env.runtime, "step", boom)
    with pytest.raises(ValueError, match="unexpected"):
        env.step({a: 0 for a in env.agents})
    monkeypatch.undo()
    with pytest.raises(errors.StateError) as info:
        env.step({a: 0 for a in env.agents})
    assert "KeyboardInterrupt" not in str(info.value)
    assert "cut short" in str(info.value) and "call reset()" in str(info.value)
    env.reset(seed=0)
    env.step({a: 0 for a in env.agents})
    env.close()


def test_a_failing_start_from_the_cache_leaves_a_plain_preflight(tmp_path, monkeypatch, caplog):
    """A bug while starting from a remembered decision changes nothing of the
    controller: the run preflights as if there were no cache (the runtime is
    put back on the features steps' executor) and the env is made."""
    from seer_env.stpa import DecisionCache, decision

    path = tmp_path / "stpa.json"
    cfg = phold_cfg(num_entities=30, remote=0.6)
    _preflight(path, cfg).close()
    assert len(DecisionCache(path).entries()) == 1

    def boom(*a, **k):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(decision, "regime", boom)
    opts = {**_auto_opts(), "cache": True, "cache_path": path}
    with caplog.at_level(logging.ERROR, logger="seer_env.stpa"):
        rt = Runtime("phold", cfg, 1, "parallel", "auto", oversubscribe=True,
                     stpa_options=opts)
    st = rt.stpa
    assert any("decision cache failed" in r.getMessage() for r in caplog.records)
    assert st.cache is None and not st.from_cache and st.state == "preflight"
    assert st.decision is None and st.history == [] and st.monitor.running_ns is None
    assert st.regimes == {} and st.monitor.baseline is None and not st.monitor.close_call_remembered
    monkeypatch.undo()
    rt.reset([0])
    for _ in range(200):
        rt.step()
    assert st.decision is not None and st.decision.trigger == "preflight"
    rt.close()


# -- company: STPA times what the user pays ------------------------------------------------


class _Company:
    """A training loop's company on the fake runtime: the caller's own work
    between steps (``work_ns`` beside one thread, ``spin`` times more beside a
    pool whose threads fight the caller's), a CPU burner that makes a pool's
    steps ``burner`` times slower from a step on, and what other processes'
    load a `CpuSample` reports."""

    def __init__(self, rt: _FakeRuntime, work_ns: int = 0, spin: float = 1.0) -> None:
        self.rt, self.work_ns, self.spin = rt, work_ns, spin
        #: the caller's work runs ``spin`` slower beside a pool only once its
        #: threads have run a while (not before a step of a just-woken pool:
        #: `_FakeRuntime.woken_steps`)
        self.spin_after_woken = False
        self.others = 0.0  # cores' worth other processes use
        #: of ``others``, the cores' worth the VM's host steals (other guests)
        self.steal = 0.0
        self.busy = self.last = 0
        self.steal_ns = 0.0
        #: other processes' own loads (cores each; their sum within ``others``)
        self.peers: list[float] = []
        self.peer_ns: list[float] = []
        #: cores' worth this process's other threads use (one thread, tid 7)
        self.threads_busy = 0.0
        self.thread_ns = 0.0

    def loop(self, st: Stpa, steps: int) -> None:
        """``steps`` iterations: the caller's work, then a step."""
        for _ in range(steps):
            pool = self.rt.threads > 1 and not (self.spin_after_woken and self.rt.woken_left > 0)
            self.rt.now += int(self.work_ns * (self.spin if pool else 1.0))
            self.rt.step(st)

    def sample(self):
        from seer_env.stpa.company import CpuSample

        # the machine's busy time: ours (a core's worth while we run) plus
        # others', at the rate in force since the last sample
        self._advance()
        return CpuSample(self.rt.now, self.rt.now, int(self.busy), steal_ns=int(self.steal_ns))

    def _advance(self) -> None:
        now = self.rt.now
        self.peer_ns += [0.0] * (len(self.peers) - len(self.peer_ns))
        for i, x in enumerate(self.peers):
            self.peer_ns[i] += (now - self.last) * x
        self.busy += (now - self.last) * (1.0 + self.others)
        self.steal_ns += (now - self.last) * self.steal
        self.thread_ns += (now - self.last) * self.threads_busy
        self.last = now

    def procs(self) -> dict[int, int]:
        """Every other process's CPU time so far, by pid (`process_cpu_ns`)."""
        self._advance()
        return {1000 + i: int(ns) for i, ns in enumerate(self.peer_ns)}

    def threads(self, rt) -> dict[int, int]:
        """This process's other threads' time so far (`other_threads_cpu_ns`)."""
        self._advance()
        return {7: int(self.thread_ns)}


def _company_stpa(rt: _FakeRuntime, company: _Company, **opts: object) -> Stpa:
    kw = dict(cores=2, rounds=2, reprobe_rounds=1, check_every=64, reprobe_gap=64, check_ns=0.0,
              trace=False, tie=0.0, clock=rt.clock, tiny_ns=0.0, probe_share=None,
              confirm=False, cpu_sampler=company.sample)
    kw.update(opts)
    return Stpa(rt, **kw)


def _loop_to_next_decision(st: Stpa, co: _Company, limit: int) -> int:
    """Iterations of ``co``'s loop, one at a time, until ``st`` has settled
    on a decision after those it has now (at most ``limit``); how many ran."""
    decisions = len(st.history)
    n = 0
    while n < limit and not (st.settled and len(st.history) > decisions):
        co.loop(st, 1)
        n += 1
    return n


def _settled_on_the_pool(work_ns: int = 1_000_000, waits: bool = False
                         ) -> tuple[_FakeRuntime, _Company, Stpa]:
    """A run of 110 us steps (72 us on parallel-2) with a policy's forward of
    ``work_ns`` between them (``waits``: the pool's waits for a core read,
    `_company_wait_stpa`), settled on parallel-2 after 80 iterations."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    co = _Company(rt, work_ns=work_ns)
    st = _company_wait_stpa(rt, co) if waits else _company_stpa(rt, co)
    co.loop(st, 80)
    assert st.settled and st.threads == 2
    return rt, co, st


class _SharedClockFake(_FakeRuntime):
    """A fake runtime whose clock is shared with others: envs of one process
    stepped in turn, each one's iterations holding the others' steps."""

    def __init__(self, clock: list[int]) -> None:
        self._shared = clock
        super().__init__()

    @property
    def now(self) -> int:  # type: ignore[override]
        return self._shared[0]

    @now.setter
    def now(self, v: int) -> None:
        self._shared[0] = v


def _round_robin(n: int) -> tuple[list[int], list[_SharedClockFake], list[Stpa],
                                  Callable[[int], None]]:
    """``n`` envs of one process stepped in turn by one thread, on one clock:
    the clock, the runtimes, their controllers and ``rounds(k)``, which steps
    each env ``k`` times in turn (counting every call, as Runtime.step does)."""
    import seer_env._bind.runtime as bind

    clock = [0]
    rts = [_SharedClockFake(clock) for _ in range(n)]
    sts = []
    for rt in rts:
        rt.events_per_step = 1000
        sts.append(Stpa(rt, cores=2, rounds=2, reprobe_rounds=1, check_every=64,
                        reprobe_gap=64, check_ns=0.0, trace=False, tie=0.0, clock=rt.clock,
                        tiny_ns=0.0, probe_share=None, confirm=False, cache=False))

    def rounds(k: int) -> None:
        for _ in range(k):
            for rt, st in zip(rts, sts, strict=True):
                bind._CALLS[0] += 1
                rt.step(st)

    return clock, rts, sts, rounds


def test_envs_stepped_in_turn_do_not_reprobe_each_other():
    """Two envs stepped in turn by one thread, both settled on parallel-2
    (72 us steps).  The other env's steps run twice as long for a while (its
    own probe, a heavier load) and this env's 10% longer beside it: the round
    rose by half, but no choice of this env changes the other's steps, so no
    company re-probe (4 envs of a round-robin loop re-probed each other in
    turn: 11 company re-probes in 600 rounds, every one keeping parallel-2,
    auto 1.44x serial where parallel-2 ran 1.61x).  Its own steps 60% slower
    (a burner took the pool's core) still re-probe."""
    _, rts, sts, rounds = _round_robin(2)

    rounds(200)
    assert all(st.settled and st.threads == 2 for st in sts)
    n0 = len(sts[0].history)
    rts[1].slow[("parallel", 2)], rts[1].slow_factor = 10**6, 2.0
    rts[0].slow[("parallel", 2)], rts[0].slow_factor = 10**6, 1.1
    rounds(400)
    assert len(sts[0].history) == n0, [d.trigger for d in sts[0].history[n0:]]
    rts[0].slow_factor = 1.6
    rounds(400)
    assert any(d.trigger.startswith("company: iterations took")
               for d in sts[0].history[n0:]), [d.trigger for d in sts[0].history]


@pytest.mark.parametrize("moment", [200, 10**6])
def test_envs_stepped_in_turn_reprobe_for_company_one_at_a_time(moment):
    """Two envs stepped in turn, both on parallel-2, whose pools slow
    together (a moment of the host's, or a burner that stays): one re-probes
    for company; the other's windows in which it probed do not count, and it
    judges afresh once that probe is done -- the moment over by then, it
    does not re-probe (both envs of `bench company`'s envs-2 re-probed in one
    block, each timing beside the other's probe steps, and one ended on the
    serial executor); company that stays, it re-probes in its turn.  Never
    two company re-probes at once."""
    _, rts, sts, rounds = _round_robin(2)
    rounds(200)
    assert all(st.settled and st.threads == 2 for st in sts)
    for rt in rts:
        rt.slow[("parallel", 2)], rt.slow_factor = moment, 1.6
    both = 0
    for _ in range(600):
        rounds(1)
        probing = [st.prober.probe is not None and st.prober.probe.trigger.startswith("company")
                   for st in sts]
        both += all(probing)
    probes = sorted(st.monitor.company_probes for st in sts)
    assert both == 0
    assert probes == ([0, 1] if moment < 10**6 else [1, 1]), probes


def test_a_pool_that_slows_the_callers_work_loses_its_probe():
    """The pool's step alone is faster (PCS-like: 72 us against 110), but the
    caller's work between steps (a torch policy) takes 400 us beside one
    thread and 480 beside the pool's threads: per iteration the pool loses,
    so STPA keeps one thread and says why (timed alone, it chose the pool)."""
    for work, spin, want in ((0, 1.0, 2), (400_000, 1.2, 1)):
        rt = _FakeRuntime()
        rt.events_per_step = 1000
        co = _Company(rt, work, spin)
        st = _company_stpa(rt, co)
        co.loop(st, 60)
        assert st.settled and st.threads == want, (work, st.reason)
        if want == 1:
            assert "Limit: company: another thread pool in this process spins on the same " \
                "cores (the caller's work between steps took 480 us beside parallel-2's " \
                "threads, 400 us beside" in st.reason, st.reason
            # the medians are the iterations: the step and the caller's work before it
            assert st.decision.medians_ns["parallel-2"] == 72_000 + 480_000
            assert st.monitor.running_ns == (110_000 if st.executor == "serial" else 100_000)


def test_the_callers_work_slower_beside_the_pool_is_company_only_where_other_threads_ran():
    """As above (the caller's work 400 us beside one thread, 480 beside the
    pool's threads): where this process's other threads -- neither the
    caller nor the pool -- kept half a core busy (a learner's thread pool),
    the reason says "another thread pool in this process"; where they kept
    none, the slowdown is the pool's own cost, which its iterations count
    (one thread is chosen all the same), and no company: on a 2-core VM the
    caller's 81 us of Python between steps took 127 beside parallel-2's
    threads alone on the machine, and company re-probes, taking that for
    company, held the pool to its steps of a slow moment and left it."""
    for threads, named in ((0.5, True), (0.0, False)):
        rt = _FakeRuntime()
        rt.events_per_step = 1000
        co = _Company(rt, 400_000, 1.2)
        co.threads_busy = threads
        st = _company_stpa(rt, co, thread_sampler=co.threads)
        co.loop(st, 60)
        assert st.settled and st.threads == 1, (threads, st.reason)
        assert ("Limit: company: another thread pool in this process spins on the same cores "
                "(the caller's work between steps took 480 us beside parallel-2's threads"
                in st.reason) == named, st.reason
        assert ("company" in st.reason) == named, st.reason


def test_other_runtimes_calls_between_steps_are_not_the_callers_work():
    """Envs stepped in turn: between two steps of this run the others step,
    and their time is no work of this run's caller that its pool could slow.
    Counted as the caller's work, the envs' probes blamed each other's pools
    ("another thread pool in this process spins on the same cores") and the
    envs of a round-robin loop settled on one thread, 1.09x serial where
    fixed pools ran 2.09x.  The same loop as in the test above (the work
    between steps 1.2x slower beside the pool), with another runtime called
    between the steps: the steps alone decide, and the pool wins."""
    from seer_env._bind import runtime as rtmod

    for other_env, want in ((0, 1), (1, 2)):
        rt = _FakeRuntime()
        rt.events_per_step = 1000
        co = _Company(rt, 400_000, 1.2)
        st = _company_stpa(rt, co)
        for _ in range(60):
            rt.now += int(co.work_ns * (co.spin if rt.threads > 1 else 1.0))
            rtmod._CALLS[0] += 1 + other_env  # this run's step, as Runtime.step counts it
            rt.step(st)
        assert st.settled and st.threads == want, (other_env, st.reason)
        assert ("another thread pool" in st.reason) == (want == 1)


def test_company_that_comes_after_the_decision_is_left_within_a_few_windows():
    """A pool chosen alone; then a CPU burner makes its steps 3x slower: the
    looks between the checks see the iterations rise, a company re-probe
    times the pool against one thread and falls back, well before the next
    full check (64 steps); the reason names the company."""
    rt, co, st = _settled_on_the_pool()
    assert "found no free core" not in st.reason
    rt.slow[("parallel", 2)] = 10**9  # the burner from here on
    rt.slow_factor = 3.0
    rt.alone_share = 0.75  # ... and the pool's second thread rarely runs
    co.others = 1.0
    n = _loop_to_next_decision(st, co, 200)
    assert st.threads == 1 and n <= 40, (n, st.reason)
    assert st.history[-1].trigger.startswith("company: iterations took")
    assert "parallel-2's other threads found no free core (75% of its windows ran on the " \
        "calling thread alone); another process holds a core (other processes kept 1.0 of " \
        "the machine's cores busy during the probe; this run may use 2); so this run takes " \
        "its share of the cores, 1 of 2" in st.reason, st.reason
    assert st.monitor.company_probes == 1
    # the company leaves: the pool is not hopeless, a confirmation times it again
    assert ("parallel", 2) not in {(c.executor, c.threads) for c in st.monitor.hopeless}


def test_a_company_fallback_no_company_explains_is_rechecked_soon(monkeypatch):
    """A pool chosen alone; then its steps run 3x slower with no company to
    see (no other process busy, no waits for a core: the host's other
    tenants), and a company re-probe falls back to one thread.  The host
    calms down: the fallback, its pool behind its trace, is timed again a
    recheck's wait on (here 5 ms: some 40 iterations) and the pool comes
    back, where it waited for the confirmation budget (some 650 iterations)."""
    _trace_puts_parallel_2_ahead(monkeypatch)
    rt = _FakeRuntime()
    rt.events_per_step = 1000  # serial 110 us, parallel-2 72 us
    co = _Company(rt, work_ns=50_000)
    st = _company_stpa(rt, co, confirm=True, recheck_ns=5_000_000.0)
    co.loop(st, 80)
    assert st.settled and st.threads == 2
    rt.slow[("parallel", 2)], rt.slow_factor = 10**9, 3.0  # the host slow
    fell = _loop_to_next_decision(st, co, 200)
    assert st.threads == 1 and st.history[-1].trigger.startswith("company"), st.reason
    rt.slow[("parallel", 2)] = 0  # ... and calm again
    back = 0
    while st.threads == 1 and back < 1000:
        co.loop(st, 1)
        back += 1
    assert st.threads == 2 and back <= 150, (fell, back, [d.trigger[:20] for d in st.history])


def _burner_beside_the_pool(rt: _FakeRuntime, company: bool) -> None:
    """From here on parallel-2's steps take 2x -- except a visit's first
    steps, whose threads, just woken, the kernel runs ahead of the burner --
    and, with ``company``, its other thread waits half of each step for a
    core (the kernel's run_delay, `wait_sampler`)."""
    rt.slow[("parallel", 2)], rt.slow_factor = 10**9, 2.0
    rt.woken_steps = 5
    rt.wait_share = 0.5 if company else 0.0


def _company_wait_stpa(rt: _FakeRuntime, co: _Company) -> Stpa:
    return _company_stpa(rt, co, reprobe_rounds=3, wait_sampler=lambda r: r.waited_ns)


def test_a_company_reprobe_holds_the_running_pool_to_its_steps_over_time():
    """A pool chosen alone (72 us steps, the serial executor 110, the
    caller's work 50 us between them); then a burner beside it
    (`_burner_beside_the_pool`).  A company re-probe's short visits time the
    pool's step at 72 us; the looks saw it at 144.  Counted at its visits,
    every re-probe kept the pool (bench company's burner-50: auto 0.82-0.88x
    serial); held to the steps it gave over time, the run falls back to one
    thread, the iterations are those steps and the caller's work, and the
    reason says so.  The same slowdown with no company seen by the probe
    (no waits for a core, no other process: what a moment of the host's
    that passes looks like) holds nothing: the visits decide and keep the
    pool.  Where
    the pool's steps before the re-probe were no slower than its visits,
    nothing is held."""
    for company in (True, False):
        rt, co, st = _settled_on_the_pool(50_000, waits=True)
        _burner_beside_the_pool(rt, company)
        _loop_to_next_decision(st, co, 400)
        assert st.history[-1].trigger.startswith("company: iterations took"), \
            [d.trigger for d in st.history]
        if company:
            assert st.threads == 1, st.reason
            assert "Counted: parallel-2 at its steps before this re-probe, 144.0 us, not its " \
                "visits' 72.0 us" in st.reason, st.reason
            assert "Limit: company: " in st.reason
            assert 194_000 <= st.decision.medians_ns["parallel-2"] <= 195_000
        else:
            assert st.threads == 2 and "Counted" not in st.reason, st.reason

    from seer_env.stpa.cost import SERIAL, Candidate
    from seer_env.stpa.decision import held_to_sustained

    p2 = Candidate("parallel", 2)
    timings = {SERIAL: [110_000.0], p2: [72_000.0, 75_000.0]}
    assert held_to_sustained(timings, {p2: 73_000.0}) == (timings, "")
    assert held_to_sustained(timings, {}) == (timings, "")
    held, words = held_to_sustained(timings, {p2: 144_000.0})
    assert held == {SERIAL: [110_000.0], p2: [144_000.0, 144_000.0]} and words


def test_a_pool_slow_from_its_decision_on_is_reprobed_and_left():
    """A burner beside the pool from the start (`_burner_beside_the_pool`):
    the probe's visits catch parallel-2's threads just woken, ahead of the
    burner, and time its step at 72 us (the serial executor 110, parallel-1
    100); from the decision on it takes 144.  Its iterations are as slow
    from the first look on, so they never rise: its own steps, a quarter
    slower than probed and slower than one thread's, start the company
    re-probe, which holds it to them, and the run goes to one thread."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    co = _Company(rt, 50_000)
    _burner_beside_the_pool(rt, True)
    st = _company_wait_stpa(rt, co)
    n = 0
    while n < 2000 and not (st.settled and st.history
                            and st.history[-1].trigger.startswith("company")):
        co.loop(st, 1)
        n += 1
    assert st.history[0].candidate.label == "parallel-2", st.history[0].reason
    assert st.monitor.company_probes == 1, [d.trigger for d in st.history]
    trigger = st.history[-1].trigger
    assert trigger.startswith("company: iterations took") and \
        trigger.endswith("; its steps 144.0 us, 72.0 us when probed"), trigger
    assert st.threads == 1, st.reason
    assert "Counted: parallel-2 at its steps before this re-probe, 144.0 us" in st.reason


def test_a_pool_chosen_in_company_is_held_to_one_threads_iterations_from_the_start():
    """The caller's work most of an iteration (500 us; the serial executor's
    step 110, parallel-1's 100) and a burner beside the pool from the start:
    the probe's visits time parallel-2's step at 72 us (its threads just
    woken), 144 from the decision on.  Its iterations, 644 us against 572
    when probed, never rise past their own first windows, nor a quarter past
    the probe's, but lose to one thread's 600 from the start: chosen with
    company seen, the pool is re-probed and left.  Without company seen (a
    moment of the host's) the same pool is not re-probed for it."""
    for company in (True, False):
        rt = _FakeRuntime()
        rt.events_per_step = 1000
        co = _Company(rt, 500_000)
        _burner_beside_the_pool(rt, company)
        st = _company_wait_stpa(rt, co)
        co.loop(st, 600)
        first = st.history[0]
        assert first.candidate.label == "parallel-2", first.reason
        assert st.monitor.company_probes == (1 if company else 0), \
            [d.trigger for d in st.history]
        if company:
            trigger = st.history[-1].trigger
            assert trigger.startswith("company: iterations took 644.0 us on parallel-2") \
                and "(600.0 us on one thread)" in trigger, trigger
            assert st.threads == 1, st.reason
            assert not st.monitor.chosen_in_company
        else:
            assert st.threads == 2 and not st.monitor.chosen_in_company


def test_a_company_reprobe_holds_the_running_pool_to_its_iterations_over_time():
    """A pool chosen alone (72 us steps, the caller's work 500 us); then
    company that, once the pool's threads have run a while, slows their
    steps (1.15x: 82.8 us, still faster than one thread's 100) and the
    caller's own work beside them (1.6x), and makes them wait for a core:
    the pool's iterations take 882.8 us, one thread's 600.  A company
    re-probe's visits catch the pool's threads just woken (the caller's work
    as fast as beside one thread); counted at them with its steps held to
    82.8, the pool's iteration is 582.8 us and it stays; held to the
    iterations the looks saw, the run falls back to one thread and the
    reason says so."""
    rt, co, st = _settled_on_the_pool(500_000, waits=True)
    co.spin, co.spin_after_woken = 1.6, True
    rt.slow[("parallel", 2)], rt.slow_factor = 10**9, 1.15
    rt.woken_steps, rt.wait_share = 5, 0.5
    _loop_to_next_decision(st, co, 600)
    dec = st.history[-1]
    # the looks' median when the re-probe began (their windows may straddle
    # the change), as the trigger says it
    seen = dec.trigger.split("iterations took ", 1)[1].split(" on parallel-2", 1)[0]
    assert dec.trigger.startswith("company: iterations took") and float(seen[:-3]) > 630, \
        dec.trigger
    assert dec.candidate.threads == 1, dec.reason
    assert f"parallel-2 at its iterations before this re-probe, {seen}, not its visits' " \
        "582.8 us" in dec.reason, dec.reason


def test_load_that_comes_and_goes_faster_than_a_window_starts_no_company_reprobe():
    """A CPU burner at half duty with a short period (3 of every 8 steps the
    pool's steps run 2.2x longer): on average the pool still beats one
    thread (204 us iterations against 210), but windows of a few steps saw
    the burner's on-phases now and then and re-probed as if company had
    come; a look spans at least `COMPANY_SPAN_NS` of iterations, so its
    windows average the load out.  A burner that stays on still gets a
    re-probe."""
    from seer_env.stpa.monitor import COMPANY_SPAN_NS

    rt = _FakeRuntime()
    rt.events_per_step = 1000
    co = _Company(rt, work_ns=100_000)
    st = _company_stpa(rt, co, check_every=4096)
    co.loop(st, 200)
    assert st.settled and st.threads == 2, st.reason
    rt.slow_factor = 2.2
    for i in range(3000):
        rt.slow[("parallel", 2)] = 1 if i % 8 < 3 else 0
        co.loop(st, 1)
    assert st.monitor.company_probes == 0, [d.trigger for d in st.history]
    assert st.threads == 2
    # the looks: at least COMPANY_SPAN_NS of iterations apart
    assert st.monitor.next_countdown(st) * st.monitor.last_iter_ns >= COMPANY_SPAN_NS
    rt.slow[("parallel", 2)] = 10**9
    co.loop(st, 600)
    assert st.monitor.company_probes == 1


def test_company_looks_cost_nothing_on_one_thread_and_stay_spaced():
    """One thread running: no looks between the checks (the controller comes
    only at the full checks, 1024 steps apart); a pool: a look every
    `COMPANY_SPAN_NS` of iterations (139 steps of 72 us; a look's 3 us stays
    under half a percent from 9 steps on, and none comes closer than 4), or
    at the checks where they come sooner (64 steps)."""
    from seer_env.stpa.monitor import COMPANY_SPAN_NS

    span = math.ceil(COMPANY_SPAN_NS / 72_000)
    assert span == 139
    for cap, check, lo, hi in ((1, 1024, 1024, 1024), (None, 1024, 4, span),
                               (None, 64, 64, 64)):
        rt = _FakeRuntime()
        rt.events_per_step = 1000
        co = _Company(rt)
        st = _company_stpa(rt, co, max_threads=cap, check_every=check, reprobe_gap=check)
        co.loop(st, 200)
        assert st.settled and st.threads == (cap or 2)
        calls: list[int] = []
        real = st.step
        st.step = lambda m, real=real, calls=calls, rt=rt: (  # type: ignore[method-assign]
            calls.append(rt.counts["steps"]), real(m))[1]
        co.loop(st, 3000)
        gaps = {b - a for a, b in itertools.pairwise(calls)}
        assert gaps and lo <= min(gaps) and max(gaps) == hi, (cap, check, sorted(gaps))


def test_a_remembered_pool_is_confirmed_at_once_in_company(tmp_path):
    """A decision remembered from a run alone (parallel-2, 72 us iterations) is
    kept without a probe in a run alone as it was, and confirmed at once in
    company: other processes holding a core (once the machine's load can be
    read, 50 ms in), or iterations slower than remembered (a training loop's
    policy between the steps)."""
    import unittest.mock as mock

    from seer_env.stpa import DecisionCache

    path = tmp_path / "cache.json"
    entry = {"executor": "parallel", "threads": 2, "reason": "r", "events_per_step": 1000.0,
             "alive_agents": 8, "step_ns": 72_000.0,
             "medians_ns": {"serial": 110_000.0, "parallel-1": 100_000.0,
                            "parallel-2": 72_000.0}}
    for others, work, probed_by in ((0.0, 0, None), (1.0, 0, 800), (0.0, 1_000_000, 40)):
        path.unlink(missing_ok=True)
        DecisionCache(path).put("k", entry)
        rt = _FakeRuntime()
        rt.events_per_step = 1000
        co = _Company(rt, work)
        co.others = others
        with mock.patch.object(DecisionCache, "key", staticmethod(lambda *a: "k")):
            st = _company_stpa(rt, co, cache=True, cache_path=path)
        assert st.from_cache and st.threads == 2
        n = 0
        while n < 1500 and st.prober.probe is None:
            co.loop(st, 1)
            n += 1
        if probed_by is None:
            assert st.prober.probe is None and len(st.history) == 1
        else:
            assert st.prober.probe is not None and st.prober.probe.trigger == "confirm"
            assert n <= probed_by, (others, work, n)


def test_a_decision_made_in_company_is_not_remembered(tmp_path):
    """A preflight beside other processes that keep a core busy (a burner:
    its probe too short to see them), or one whose pools slowed the caller's
    work (a torch loop's spinning threads), decides for the moment: written
    to the cache, every later run alone started on it and never timed the
    pools again (PCS 64x64 decided serial beside a burner and later runs
    alone stayed serial, 1.8x slower than parallel-2).  Alone, the decision
    is remembered as before."""
    import unittest.mock as mock

    from seer_env.stpa import DecisionCache

    for others, work, spin, kept in ((0.0, 0, 1.0, True), (1.0, 0, 1.0, False),
                                     (0.0, 400_000, 1.2, False)):
        path = tmp_path / f"cache-{others}-{work}.json"
        rt = _FakeRuntime()
        rt.events_per_step = 1000
        co = _Company(rt, work, spin)
        co.others = others
        with mock.patch.object(DecisionCache, "key", staticmethod(lambda *a: "k")):
            st = _company_stpa(rt, co, cache=True, cache_path=path)
            co.loop(st, 1000)  # 72 ms and more: the load since the start can be read
            assert st.settled
            st.save_decision()
        got = DecisionCache(path).get("k")
        assert (got is not None) is kept, (others, work, st.reason)
        if kept:
            assert (got["executor"], got["threads"]) == (st.executor, st.threads)


def test_a_company_reprobe_times_the_serial_executor_the_trace_pruned():
    """Alone, a trace predicting the pool far ahead leaves the serial executor
    untimed (parallel-1 is the one-thread baseline); in company that lead is
    what was lost, so the company re-probe times every candidate it has, the
    serial executor among them."""
    from seer_env.stpa_cost import probe_plan

    rt, co, st = _settled_on_the_pool()
    st.prober.trace_summary = summary(threads=2, events_per_window=1000, barrier_ns=100.0)
    assert SERIAL not in probe_plan(st.features, st.prober.trace_summary,
                                     [SERIAL, P[1], P[2]], st.prune)
    rt.slow[("parallel", 2)] = 10**9
    n = 0
    while st.prober.probe is None and n < 100:
        co.loop(st, 1)
        n += 1
    pr = st.prober.probe
    assert pr is not None and pr.trigger.startswith("company")
    assert {v.cand for v in pr.queue} == {SERIAL, P[1], P[2]}


def _serial_pruned_by_the_trace(serial_factor: float, slow_factor: float,
                                iterations: int, handler_ns: float = 100.0,
                                **opts: object) -> Stpa:
    """A run whose trace predicts parallel-2 far ahead of one thread (the
    preflight prunes the serial executor), with parallel-2's steps
    ``slow_factor`` x 72 us and the serial executor ``serial_factor`` x
    parallel-1's, in a loop of 100 us of the caller's work: its controller
    after ``iterations`` iterations."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    rt.serial_factor = serial_factor
    rt.slow[("parallel", 2)], rt.slow_factor = 10**9, slow_factor
    co = _Company(rt, work_ns=100_000)
    st = _company_stpa(rt, co, **opts)
    st.prober.trace_summary = summary(threads=2, events_per_window=1000, barrier_ns=100.0,
                                      handler_ns=handler_ns)
    co.loop(st, iterations)
    return st


def test_when_the_trace_prediction_fails_the_serial_executor_is_timed_too():
    """The trace predicts the pool far ahead of one thread, so the preflight
    leaves the serial executor untimed; but the pool ran 3x slower than that
    (company), and parallel-1 won: the one-thread choice is then made between
    both executors, and the serial executor (10% faster here) is chosen."""
    st = _serial_pruned_by_the_trace(serial_factor=0.9, slow_factor=3.0, iterations=120)
    assert st.settled, st.reason
    assert st.decision.candidate == SERIAL, st.reason
    assert set(st.decision.medians_ns) == {"serial", "parallel-1", "parallel-2"}


def test_a_pool_that_wins_narrowly_with_the_serial_executor_pruned_has_it_timed_too():
    """The trace predicts the pool far ahead of one thread, so the preflight
    leaves the serial executor untimed; in company parallel-2 then wins by
    only 1.05x over parallel-1 (a torch loop's preflight chose parallel-2
    at 1.07x and ran at 0.93x the serial executor): the serial executor is
    timed against it and, 7.5% faster than parallel-1 here, chosen.  A pool
    that wins by more (1.16x) is chosen without it."""
    for slow_factor, want in ((1.25, SERIAL), (1.0, P[2])):
        st = _serial_pruned_by_the_trace(serial_factor=0.85, slow_factor=slow_factor,
                                         iterations=200)
        assert st.settled, st.reason
        assert st.decision.candidate == want, st.reason
        timed = {"serial", "parallel-1", "parallel-2"} if want == SERIAL \
            else {"parallel-1", "parallel-2"}
        assert set(st.decision.medians_ns) == timed, st.decision.medians_ns


def test_a_preflight_whose_pool_missed_its_trace_narrowly_is_rechecked(caplog):
    """The trace predicts parallel-2 far ahead of one thread, but in the
    preflight's moment it runs 1.25x slower than that (under the 1.5x that
    says "slower than its trace"), and the serial executor is chosen with no
    company seen: the choice is timed again shortly and, the moment gone,
    the pool comes back (alone on a 2-core VM such a preflight kept the
    serial executor for the run).  A pool that keeps losing is rechecked at
    doubling intervals until the confirmations' own pace is shorter, not for
    good."""
    caplog.set_level(logging.INFO, logger="seer_env.stpa")
    # a trace that predicts parallel-2's step at 71 us (1.27x under its 90)
    st = _serial_pruned_by_the_trace(serial_factor=0.85, slow_factor=1.25, iterations=200,
                                     handler_ns=140.0, confirm=True)
    assert "than its trace predicts with no company seen" not in caplog.text, caplog.text
    assert st.decision.candidate == SERIAL and st.decision.trigger == "preflight", st.reason
    assert st.monitor.recheck_steps is not None, caplog.text
    assert "parallel-2 left for serial" in caplog.text and "timed again in" in caplog.text
    rt, co = st.rt, st.cpu_sampler.__self__
    rt.slow.clear()  # the moment passes
    n = _loop_to_next_decision(st, co, 5000)
    assert st.threads == 2 and st.decision.candidate == P[2], (n, st.reason)
    # a pool that always loses (its steps 1.25x the trace's for good)
    st = _serial_pruned_by_the_trace(serial_factor=0.85, slow_factor=1.25, iterations=200,
                                     handler_ns=140.0, confirm=True)
    co = st.cpu_sampler.__self__
    waits = []
    for _ in range(6):
        waits.append(st.monitor.recheck_steps)
        _loop_to_next_decision(st, co, 5000)
        assert st.decision.candidate == SERIAL, st.reason
    # (here the confirmations' own wait is shorter than twice the first
    # recheck's: the chain ends at once)
    assert waits[0] is not None and waits[1:] == [None] * 5, waits


@pytest.mark.parametrize("others,steal", [(0.0, 0.0), (1.0, 0.0), (1.0, 0.8)])
def test_a_company_reprobe_that_leaves_the_pool_with_no_company_seen_is_rechecked(others, steal,
                                                                                   caplog):
    """The pool's iterations and steps slow (a moment of the host's: nothing
    else on the machine busy), a company re-probe times the pool behind one
    thread and takes one thread: that is timed again a little later (alone
    on a 2-core VM such a re-probe left parallel-2 for the serial executor
    for the run), and, the moment gone, the pool comes back.  Where another
    process holds a core the run takes its share, one thread, as before,
    with no recheck; where most of that load is the host's steal time (a
    virtual machine's other guests), the reason names the host instead."""
    caplog.set_level(logging.INFO, logger="seer_env.stpa")
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    co = _Company(rt, work_ns=100_000)
    co.others = 0.0
    st = _company_stpa(rt, co, confirm=True, recheck_ns=2_000_000.0, check_every=8)
    co.loop(st, 80)
    assert st.settled and st.threads == 2
    # the learner's forward grows to 3 ms (a probe's steps span the 50 ms
    # that other processes' load is read over), and the pool's steps slow
    co.others, co.steal, co.work_ns = others, steal, 3_000_000
    rt.slow[("parallel", 2)], rt.slow_factor = 10**9, 2.0
    n = 0
    while st.monitor.company_probes == 0 and n < 2000:
        co.loop(st, 1)
        n += 1
    assert st.monitor.company_probes == 1
    _loop_to_next_decision(st, co, 200)
    assert st.threads == 1 and st.decision.trigger.startswith("company"), st.reason
    if others:
        host = "the virtual machine's host holds a core (steal time 0."
        assert (host in st.reason) == bool(steal), st.reason
        assert ("another process holds a core" in st.reason) != bool(steal), st.reason
        assert st.monitor.recheck_steps is None and st.monitor.recheck_chain is None
        return
    assert st.monitor.recheck_steps is not None and st.monitor.recheck_chain is not None
    assert "parallel-2 left for serial (its iterations 1.0" in caplog.text, caplog.text
    assert "with no company seen: timed again in" in caplog.text, caplog.text
    rt.slow.clear()  # the moment passes
    at = _decisions_at(st, rt, 60)
    assert [t for _, t in at] == ["confirm"] and st.threads == 2, (at, st.reason)


def test_iterations_that_slow_with_our_steps_as_they_were_start_no_company_reprobe():
    """The caller's own work doubles after the decision (a heavier update,
    another env of the loop probing) while this run's steps stay as they
    were: no choice of ours mends that, so no company re-probe starts; when
    the pool's steps slow as well, one does."""
    rt, co, st = _settled_on_the_pool()
    co.work_ns = 2_000_000
    co.loop(st, 60)
    assert st.prober.probe is None and st.monitor.company_probes == 0
    rt.slow[("parallel", 2)] = 10**9
    co.loop(st, 60)
    assert st.monitor.company_probes == 1


def test_a_pause_between_iterations_starts_no_company_reprobe():
    """The caller stops calling for a while (an evaluation, the learner's
    update, the other configurations of a benchmark's rotation) and the
    first steps after it run cold (caches, parked workers): the window that
    spans the pause and the one after it say nothing of company.  Counted,
    the pause's window and one cold one made the median of three, and envs
    of a round-robin loop re-probed after each pause (bench company envs-4
    on a quiet host: 3 company re-probes in 7 rounds, auto 1.58x serial where
    parallel-2 ran 1.70x).  Ten pauses of 200 ms, each followed by a window
    of steps 20x slower: no company re-probe, the pool kept."""
    rt, co, st = _settled_on_the_pool()
    co.loop(st, 40)
    decisions = len(st.history)
    for _ in range(10):
        rt.now += 200_000_000  # the pause
        rt.slow[("parallel", 2)], rt.slow_factor = 8, 20.0  # ... and cold steps
        co.loop(st, 100)
    assert st.monitor.company_probes == 0, [d.trigger for d in st.history]
    assert len(st.history) == decisions and st.threads == 2


def test_a_pause_is_judged_against_the_windows_themselves():
    """The first windows after a decision judge each other (the decision's
    iteration is one step of this run, a window of a round-robin loop holds
    the other envs' steps too): a pause among them and the cold window after
    it are left out; then the windows counted are the measure; a slowdown of
    three windows in a row counts."""
    from seer_env.stpa.monitor import COMPANY_WINDOWS, Monitor

    assert COMPANY_WINDOWS == 3
    m = Monitor(gap=0)
    m.iter_decided_ns = 1_000_000.0  # a round of 4 envs' steps is 4x that: no pause
    ms = 1_000_000.0
    assert not m._look(3.9 * ms, 4.0, 0.9 * ms) and not m._look(4.0 * ms, 4.0, 0.9 * ms)
    assert m._look(4.1 * ms, 4.0, 1.0 * ms)
    assert list(m.windows) == [3.9 * ms, 4.0 * ms, 4.1 * ms]
    assert list(m.shared) == [True] * 3 and list(m.step_samples) == [0.9 * ms, 0.9 * ms, ms]
    # a pause (other envs stepped for 120 ms), a cold window, then as before
    m = Monitor(gap=0)
    looks = [m._look(x * ms, 100.0 if x > 100 else 4.0, x * ms / 4) for x in (120.0, 4.6, 4.0)]
    assert looks == [False, False, True] and list(m.windows) == [4.0 * ms]
    assert list(m.step_samples) == [1.0 * ms]
    assert m._look(3.9 * ms, 4.0, None)  # judged by the windows counted
    assert not m._look(30.0 * ms, 1.0, None)  # a pause ...
    assert not m._look(4.5 * ms, 4.0, None)  # ... and the cold window after it
    assert m._look(4.1 * ms, 4.0, None)
    assert list(m.windows) == [4.0 * ms, 3.9 * ms, 4.1 * ms]
    # 5x slower, window after window: a slowdown, counted at the third
    assert [m._look(20.0 * ms, 4.0, None) for _ in range(3)] == [False, False, True]
    assert list(m.windows) == [20.0 * ms] * 3
    # a pause as the last of the first windows: the next one is a cold one
    m = Monitor(gap=0)
    assert [m._look(x * ms, 1.0, None) for x in (1.0, 1.1, 50.0, 1.3, 1.0)] == \
        [False, False, True, False, True]
    assert list(m.windows) == [1.0 * ms, 1.1 * ms, 1.0 * ms]
    m.restart_windows()
    assert not m.windows and not m.pending and not m.paused and not m.after_pause


def test_envs_of_a_round_robin_loop_start_no_company_reprobe_after_pauses():
    """4 envs stepped in turn, each on its pool; the loop stops for 300 ms
    every 120 rounds (a benchmark's other configurations ran) and the first
    12 steps of each env after it run 3x slower (cold): no company re-probe
    in any env (before pauses were left out: one in each env)."""
    clock, rts, sts, rounds = _round_robin(4)

    rounds(200)
    assert all(st.settled and st.threads == 2 for st in sts)
    for _ in range(8):
        clock[0] += 300_000_000
        for rt in rts:
            rt.slow[("parallel", 2)], rt.slow_factor = 12, 3.0
        rounds(120)
    assert [st.monitor.company_probes for st in sts] == [0, 0, 0, 0]
    assert all(st.threads == 2 for st in sts)


def test_one_envs_own_steps_slower_in_a_round_robin_loop_start_no_company_reprobe():
    """4 envs stepped in turn, each on its pool; then one env's own steps run
    40% slower for good (the host's noise, where its memory lies) while the
    rounds rise by a tenth: its iterations hold the other envs' steps, so
    they are held to their own first windows after the decision, not to the
    decision's iteration (one step of this env's: a round of 4 is always 4x
    over it), and no company re-probe starts.  Real company -- every env's
    pool slower, the rounds up by half -- still starts one in each."""
    clock, rts, sts, rounds = _round_robin(4)
    rounds(200)
    assert all(st.settled and st.threads == 2 for st in sts)
    rts[0].slow[("parallel", 2)], rts[0].slow_factor = 10**9, 1.4
    rounds(400)
    assert [st.monitor.company_probes for st in sts] == [0, 0, 0, 0]
    for rt in rts:
        rt.slow[("parallel", 2)], rt.slow_factor = 10**9, 2.0
    rounds(400)
    assert all(st.monitor.company_probes >= 1 for st in sts), \
        [st.monitor.company_probes for st in sts]


def test_company_slower_than_a_pause_is_still_left_within_a_few_windows():
    """A pool's iterations 5x slower from a step on (no caller's work: the
    steps are the iterations) look like pauses window after window: after
    three of them in a row they are company, and a company re-probe falls
    back within a few windows (the one under way when the company came, of
    steps counted at the iterations before, lasts 5x its span)."""
    from seer_env.stpa.monitor import COMPANY_SPAN_NS

    rt = _FakeRuntime()
    rt.events_per_step = 1000
    co = _Company(rt)
    st = _company_stpa(rt, co)
    co.loop(st, 120)
    assert st.settled and st.threads == 2
    rt.slow[("parallel", 2)], rt.slow_factor = 10**9, 5.0
    co.others = 1.0
    t0 = rt.now
    n = _loop_to_next_decision(st, co, 1000)
    assert st.threads == 1 and rt.now - t0 <= 10 * COMPANY_SPAN_NS, (n, rt.now - t0, st.reason)
    assert st.history[-1].trigger.startswith("company: iterations took")


def test_iterations_pool_the_callers_work_unless_a_candidate_changes_it():
    from seer_env.stpa.company import iterations

    alone = {SERIAL: [100.0e3, 102.0e3], P[2]: [60.0e3, 62.0e3]}
    # the caller's work wanders by 5% from sample to sample: the one-thread
    # candidates' median (400 us) for all
    noisy = {SERIAL: [380.0e3, 420.0e3], P[2]: [410.0e3, 430.0e3]}
    it = iterations(alone, noisy, {SERIAL: [0.0], P[2]: [0.0]})
    assert it[SERIAL] == [100.0e3 + 400.0e3, 102.0e3 + 400.0e3]
    assert it[P[2]] == [60.0e3 + 400.0e3, 62.0e3 + 400.0e3]
    # no one-thread candidate timed: everyone's median
    it = iterations({P[2]: [60.0e3]}, {P[2]: [410.0e3, 430.0e3]}, {P[2]: [0.0]})
    assert it[P[2]] == [60.0e3 + 420.0e3]
    # the one-thread candidates' own samples differ by noise alone (a torch
    # forward wandering): never their own, so parallel-1 does not beat the
    # serial executor on a slow sample of the caller's work
    wander = {SERIAL: [500.0e3, 520.0e3], P[1]: [380.0e3, 390.0e3]}
    it = iterations({SERIAL: [100.0e3], P[1]: [104.0e3]}, wander, {SERIAL: [0.0], P[1]: [0.0]})
    assert it[SERIAL][0] < it[P[1]][0]
    # beside the pool it really runs 40% slower: the pool's own counts
    slowed = {SERIAL: [400.0e3, 400.0e3], P[2]: [560.0e3, 560.0e3], P[1]: [400.0e3]}
    it = iterations({**alone, P[1]: [90.0e3]}, slowed,
                    {SERIAL: [0.0], P[2]: [0.0], P[1]: [0.0], P[3]: [7.0]})
    assert it[P[2]] == [620.0e3, 622.0e3] and it[SERIAL] == [500.0e3, 502.0e3]
    assert it[P[3]] == [7.0]  # timed without the split: as timed
    assert iterations({}, {}, {SERIAL: [5.0]}) == {SERIAL: [5.0]}


def test_a_pool_found_hopeless_is_left_out_of_one_confirmation_only():
    """A pool that ran 5x slower during the preflight (a moment of company)
    is left out of the next confirmation, and timed again by the one after:
    it wins back its place once the moment has passed."""
    rt = _FakeRuntime()
    rt.events_per_step = 1000
    rt.slow[("parallel", 2)] = 3  # its steps of the preflight only (a warm-up, 2 timed)
    rt.slow_factor = 5.0
    st = _fake_stpa(rt, rounds=1, confirm=True, confirm_budget=0.0, reprobe_gap=8,
                    check_every=4, tie=0.0, recheck_ns=0.0)
    probes: list = []
    for _ in range(400):
        rt.step(st)
        pr = st.prober.probe
        if pr is not None and pr.trigger == "confirm" and (not probes or probes[-1] is not pr):
            probes.append(pr)
    first = st.history[0]
    assert first.candidate != P[2]
    confirms = [set(pr.candidates) for pr in probes]
    assert len(confirms) >= 2
    assert P[2] not in confirms[0] and P[2] in confirms[1]
    assert st.decision.candidate == P[2]  # back once timed in a quiet moment


def test_one_preempted_check_does_not_space_the_next_checks_far_apart() -> None:
    """The monitor spaces its checks so that they cost at most 1% of the steps;
    a check preempted for 5 ms (a loaded host) beside 20 us ones must not push
    the next check 25k steps away: the least cost counts while fewer than 3
    are known, then their median."""
    from types import SimpleNamespace

    from seer_env.stpa.monitor import Monitor

    host = SimpleNamespace(check_every=16, check_ns=8_000.0, _step_ns=lambda: 20_000.0)
    m = Monitor(gap=0)
    assert m.check_interval(host) == 40  # 8 us floor / (1% of 20 us)
    m.check_costs.extend([20_000.0, 5_000_000.0])
    assert m.check_interval(host) == 100  # the least: 20 us
    m.check_costs.append(30_000.0)
    assert m.check_interval(host) == 150  # the median of 3: 30 us
    m.check_costs.extend([5_000_000.0, 6_000_000.0])
    assert m.check_interval(host) == 25_000  # most checks cost 5 ms: they are spaced


def test_company_words_name_a_pool_whose_windows_ran_alone_only_in_company():
    """A pool whose windows mostly ran on the calling thread alone (its other
    threads got no core) is named where there is company to blame; without
    any, it says nothing: the threads of a pool also miss the windows of
    steps too short for them to wake in time, on an idle machine."""
    from seer_env.stpa.company import ALONE_MOST, company_words

    assert company_words(None, 2, {}, None, {"parallel-2": 0.95}) == ""
    assert company_words(0.1, 2, {}, None, {"parallel-2": 0.95}) == ""
    said = company_words(0.9, 2, {}, None, {"parallel-2": 0.8, "parallel-3": 0.95,
                                            "optimistic-2": ALONE_MOST - 0.01})
    assert said.startswith("parallel-3's other threads found no free core (95% of its "
                           "windows ran on the calling thread alone); another process holds "
                           "a core (other processes kept 0.9 of"), said
    # below ALONE_MOST: the company words alone
    assert company_words(0.9, 2, {}, None, {"parallel-2": ALONE_MOST - 0.01}) == \
        company_words(0.9, 2, {}, None)
    # an in-process pool that slowed the caller's work is company too
    spin = company_words(None, 2, {"serial": 400e3, "parallel-2": 480e3}, "serial",
                         {"parallel-2": 0.6})
    assert spin.startswith("parallel-2's other threads found no free core (60% of")
    assert "another thread pool in this process spins on the same cores" in spin


def test_company_words_name_torchs_spin_setting_where_libgomp_spins_by_default():
    """Where another thread pool of this process is the company and GNU
    OpenMP (torch's CPU pool) is loaded at its default wait, the words name
    the setting that shortens its spin; not where a spin count or a wait
    policy is set, libgomp is not loaded or the company is another process."""
    from seer_env.stpa.company import company_words, openmp_spins_by_default

    maps = ("7f3c2a000000-7f3c2a040000 r-xp 00000000 08:01 123 "
            "/venv/lib/python3.11/site-packages/torch/lib/libgomp-a34b3233.so.1\n")
    assert openmp_spins_by_default(maps, {}) is True
    assert openmp_spins_by_default(maps, {"GOMP_SPINCOUNT": "300000"}) is False
    assert openmp_spins_by_default(maps, {"OMP_WAIT_POLICY": "ACTIVE"}) is False
    assert openmp_spins_by_default("7f.. r-xp /usr/lib/libm.so.6\n", {}) is False
    assert isinstance(openmp_spins_by_default(), bool)  # this process, as it is
    between = {"serial": 400e3, "parallel-2": 480e3}
    spin = company_words(None, 2, between, "serial", openmp_spins=True)
    assert "another thread pool in this process spins on the same cores" in spin
    assert "GOMP_SPINCOUNT=30000 set before torch is imported" in spin, spin
    assert "GOMP_SPINCOUNT" not in company_words(None, 2, between, "serial")
    waited = company_words(0.0, 2, {}, None, waited={"parallel-2": (712e3, 1491e3)},
                           openmp_spins=True)
    assert "GOMP_SPINCOUNT=30000" in waited, waited
    assert "GOMP_SPINCOUNT" not in company_words(0.9, 2, {}, None, openmp_spins=True)


def test_company_words_name_a_pool_whose_threads_waited_for_a_core():
    """A pool's other threads that waited a quarter of its steps' time for a
    core (runnable, not running) had company: another process where one was
    busy, else a thread of this process (a learner's pool spinning); shorter
    waits say nothing."""
    from seer_env.stpa.company import WAITED_MOST, company_words

    waited = {"parallel-2": (712e3, 1491e3), "parallel-3": (10e3, 1000e3)}
    inproc = company_words(0.0, 2, {}, None, waited=waited)
    assert inproc == (
        "another thread pool in this process spins on the same cores (parallel-2's other "
        "threads waited 712 us a step for a core, its steps took 1491 us, while other "
        "processes kept 0.0 of the machine's cores busy; a learner's threads between "
        "operations: the Performance page, \"What to set when training on CPU\")")
    # other processes unknown: the words do not claim they were idle
    assert company_words(None, 2, {}, None, waited=waited).startswith(
        "another thread pool in this process spins on the same cores (parallel-2's other "
        "threads waited 712 us a step for a core, its steps took 1491 us; a learner's")
    # another process busy: it is the one to blame, the waits lead
    assert company_words(1.0, 2, {}, None, {"parallel-2": 0.9}, waited) == (
        "parallel-2's other threads waited 712 us a step for a core, its steps took "
        "1491 us; parallel-2's other threads found no free core (90% of its windows ran on "
        "the calling thread alone); another process holds a core (other processes kept "
        "1.0 of the machine's cores busy during the probe; this run may use 2)")
    # the caller's work slower too: one in-process sentence, the waits lead
    both = company_words(0.0, 2, {"serial": 400e3, "parallel-2": 480e3}, "serial",
                         waited=waited)
    assert both.startswith("parallel-2's other threads waited 712 us a step for a core")
    assert both.count("another thread pool in this process") == 1
    # under WAITED_MOST of the step (or no steps): nothing
    short = {"parallel-2": (WAITED_MOST * 1000e3 - 1, 1000e3), "parallel-3": (5e3, 0.0)}
    assert company_words(0.0, 2, {}, None, {"parallel-2": 0.9}, short) == ""


def test_the_hosts_steal_time_is_read_and_named(tmp_path, monkeypatch):
    """``/proc/stat``'s steal field is read with the busy time (part of it),
    as cores' worth between two samples; a line without it, malformed or
    missing, is no evidence (None).  Where most of the other processes' load
    is steal, the words name the virtual machine's host, not a process."""
    import seer_env.stpa.company as company
    from seer_env.stpa.company import STEAL_MOST, CpuSample, company_words, cpu_sample, steal_cores

    stat = tmp_path / "stat"
    monkeypatch.setattr(company, "_STAT", str(stat))
    monkeypatch.setattr(company, "_hz", lambda: 100)
    stat.write_text("cpu  100 5 20 900 7 1 2 30 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
    got = cpu_sample()
    assert (got.machine_busy_ns, got.steal_ns) == (158 * 10**7, 30 * 10**7)
    stat.write_text("cpu  100 5 20 900 7 1 2\n")   # no steal field (old kernels)
    got = cpu_sample()
    assert (got.machine_busy_ns, got.steal_ns) == (128 * 10**7, None)
    for bad in ("cpu  1 2 3 4 5 6 7 x\n", "intr 5\n", ""):
        stat.write_text(bad)
        got = cpu_sample()
        assert (got.machine_busy_ns, got.steal_ns) == (None, None), bad
    stat.unlink()
    assert cpu_sample().steal_ns is None

    a = CpuSample(0, 0, 0, steal_ns=10**8)
    assert steal_cores(a, CpuSample(10**8, 0, 0, steal_ns=14 * 10**7)) == pytest.approx(0.4)
    assert steal_cores(a, CpuSample(10**7, 0, 0, steal_ns=2 * 10**8)) is None  # < 50 ms
    assert steal_cores(a, CpuSample(10**8, 0, 0)) is None
    assert steal_cores(a, CpuSample(10**8, 0, 0, steal_ns=0)) == 0.0  # never negative

    host = company_words(1.0, 2, {}, None, steal=0.8)
    assert host == ("the virtual machine's host holds a core (steal time 0.8 of the "
                    "machine's cores: the host ran other guests on this machine's virtual "
                    "CPUs during the probe, other processes 0.2; this run may use 2)")
    # steal under half the others' load, or under STEAL_MOST, or unknown: a process
    for steal in (0.4, None):
        assert company_words(1.0, 2, {}, None, steal=steal).startswith(
            "another process holds a core (other processes kept 1.0"), steal
    assert company_words(STEAL_MOST * 1.5, 2, {}, None, steal=STEAL_MOST * 0.9) == ""
    # no load at all, the steal alone, says nothing of company either
    assert company_words(0.0, 2, {}, None, steal=0.0) == ""
    # a pool's waits with no process busy: the host, part of the time
    waited = {"parallel-2": (712e3, 1491e3)}
    part = company_words(0.2, 2, {}, None, waited=waited, in_process=0.0, steal=0.15)
    assert part.startswith("the virtual machine's host holds a core part of the time "
                           "(parallel-2's other threads waited 712 us"), part
    assert company_words(0.2, 2, {}, None, waited=waited, in_process=0.0, steal=0.05
                         ).startswith("another process holds a core part of the time")


def test_sched_delay_ns_sums_the_threads_waits(tmp_path):
    """run_delay (schedstat's second field) of each thread, summed; a thread
    not started (tid 0), a missing, unreadable or malformed file, or no
    thread at all is no evidence (None), never an error."""
    import threading

    from seer_env.stpa.company import sched_delay_ns

    for tid, text in (("7", "900 120 4\n"), ("8", "50 30 1\n"), ("9", "50\n"),
                      ("10", "a b c\n"), ("11", "1 -5 2\n")):
        (tmp_path / tid).mkdir()
        (tmp_path / tid / "schedstat").write_text(text)
    (tmp_path / "12").mkdir()
    task = str(tmp_path)
    assert sched_delay_ns([7, 8], task) == 150
    assert sched_delay_ns([7], task) == 120
    for bad in ([7, 9], [10], [11], [12], [13], [0], [7, 0]):
        assert sched_delay_ns(bad, task) is None, bad
    assert sched_delay_ns([], task) is None
    mine = sched_delay_ns([threading.get_native_id()])
    assert mine is None or mine >= 0  # None: a kernel without schedstat


def test_worker_tids_name_the_pools_running_threads():
    """The kernel ids of the pool's threads other than the caller's: one for
    parallel-2 (a thread of this process), none on one thread; they follow
    the pool's size (0 for a thread not started yet: the first call may end
    before it runs).  `pool_tids` names the parked ones too."""
    import os
    import time

    rt = Runtime("phold", phold_cfg(num_entities=8), 1, "parallel", 2, oversubscribe=True)
    try:
        rt.reset([0])

        def started(n: int) -> list[int]:
            for _ in range(2000):
                tids = rt.worker_tids()
                assert len(tids) == n and all(t >= 0 for t in tids), tids
                if all(tids):
                    return tids
                rt.step()
                time.sleep(0.001)
            raise AssertionError(f"workers not started: {tids}")

        tids = started(1)
        assert str(tids[0]) in os.listdir("/proc/self/task")
        assert rt.pool_tids() == tids
        rt.switch_executor("serial", 1)
        assert rt.worker_tids() == []
        assert rt.pool_tids() == tids  # parked, not gone: STPA leaves them out of "others"
        rt.switch_executor("parallel", 3)
        assert set(started(2)) <= {int(t) for t in os.listdir("/proc/self/task")}
        assert rt.pool_tids() == rt.worker_tids()
    finally:
        rt.close()


def test_the_limit_compares_with_the_iteration_the_serial_choice_was_judged_by():
    """Where parallel-1 timed faster than the serial executor, the serial
    choice is judged by parallel-1's sample (`choosable`); the reason's limit
    ("measured: parallel-2 took ...x as long") compares with that iteration
    too, not with the serial executor's own slower sample."""
    from seer_env.stpa.cost import select

    timings = {Candidate("serial", 1): [1200.0] * 3, P[1]: [1000.0] * 3, P[2]: [1500.0] * 3}
    dec = select(timings, feats(cores=4), None, 0.0)
    assert dec.candidate == Candidate("serial", 1)
    assert "measured: parallel-2 took 1.50x as long per step" in dec.reason, dec.reason


def test_a_budget_lowered_after_the_env_was_made_bounds_the_choice() -> None:
    """set_thread_budget(1) after a threads="auto" runtime was made: STPA kept
    the cores it read at creation, probed and chose a pool of 2, and said
    another process held a core.  It reads the budget again when it changes:
    a decision made before re-probes within it."""
    from seer_env import budget
    from seer_env.budget import usable_cpus
    if usable_cpus() < 2:
        pytest.skip("needs 2 usable cores")
    rt = _FakeRuntime()
    rt.scales = True  # a pool of 2 halves a step: the choice alone
    st = _fake_stpa(rt, cores=None)
    try:
        for _ in range(40):
            rt.step(st)
        assert (st.executor, st.threads) == ("parallel", 2), st.reason
        budget.set_thread_budget(1)
        assert st.cores == 1 and "capped by set_thread_budget(1)" in st.budget_note
        for _ in range(60):
            rt.step(st)
        assert st.threads == 1, st.reason
        triggers = [d.trigger for d in st.history]
        at = triggers.index("the thread budget changed")
        assert all(d.candidate.threads == 1 for d in st.history[at:]), triggers
        assert "the thread budget: 1 thread: capped by set_thread_budget(1)" in \
            st.history[at].reason, st.history[at].reason
    finally:
        budget.set_thread_budget(None)
    assert st.cores == usable_cpus() and st.budget_note == ""


def test_a_budget_lowered_below_the_running_pool_re_probes_every_pool_within_it(
        monkeypatch) -> None:
    """8 cores, a pool of 8 chosen, then a budget of 4: the re-probe timed the
    running choice's neighbours within the budget, the one-thread candidates
    alone, and left the pools of 2 to 4 out."""
    from seer_env import budget
    from seer_env.budget import ThreadBudget
    from seer_env.stpa import controller

    rt = _FakeRuntime()
    rt.scales = True
    rt.budget = ThreadBudget(threads=8, cpus=8)
    st = _fake_stpa(rt, cores=None)
    for _ in range(400):
        rt.step(st)
        if st.decision is not None:
            break
    assert st.executor == "parallel" and st.threads > 4, st.reason
    monkeypatch.setattr(controller, "thread_budget",
                        lambda: ThreadBudget(threads=4, cpus=8, cap=4, cap_source="a test"))
    budget.lease.forget()
    for _ in range(400):
        rt.step(st)
        if "the thread budget changed" in [d.trigger for d in st.history]:
            break
    triggers = [d.trigger for d in st.history]
    at = triggers.index("the thread budget changed")
    assert st.history[at].candidate == controller.Candidate("parallel", 4), \
        st.history[at].reason
    assert st.history[at].medians_ns.keys() >= {"parallel-2", "parallel-3", "parallel-4"}
