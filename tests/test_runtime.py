"""The runtime on PHOLD: serial vs parallel determinism, batch invariance, the
independent Python oracle, contract checks and error handling."""

from __future__ import annotations

import os

import numpy as np
import pytest

from oracles.phold_py import PholdPy
from oracles.rng import seed_state
from seer_env import errors
from seer_env._bind.runtime import rng_seed_state
from seer_env.registry import Runtime
from tests.models import load as load_test_model

PROBE = load_test_model("probe").native


def phold_cfg(**kw):
    cfg = dict(num_entities=24, events_per_entity=2, remote=0.5, mean=1.0, lookahead=0.5,
               work=3, step_duration=2.0)
    cfg.update(kw)
    return cfg


def run_trace(cfg, seeds, executor, threads, steps, action_seed=0, max_cycles=0,
              before_step=None, stats=None):
    """Every boundary output and every entity state of every step
    (``before_step(k)`` first, if given; ``stats``: a dict the runtime's
    final stats go into)."""
    rt = Runtime("phold", cfg, len(seeds), executor, threads, max_cycles)
    rng = np.random.default_rng(action_seed)
    trace = []
    try:
        rt.reset(seeds)
        trace.append(snapshot(rt))
        for k in range(steps):
            if before_step:
                before_step(k)
            rt.actions[:] = rng.integers(0, 3, size=rt.actions.shape)
            rt.step()
            trace.append(snapshot(rt))
        if stats is not None:
            stats.update(rt.stats())
    finally:
        rt.close()
    return trace


def snapshot(rt):
    return (
        rt.obs.copy(), rt.reward.copy(), rt.terminated.copy(), rt.truncated.copy(),
        rt.alive.copy(), rt.info.copy(),
        tuple(rt.entity_states(i) for i in range(rt.num_instances)),
        tuple(rt.entity_events(i).tobytes() for i in range(rt.num_instances)),
    )


def assert_same_trace(ref, got, label):
    assert len(ref) == len(got)
    for k, (a, b) in enumerate(zip(ref, got, strict=True)):
        for j, (x, y) in enumerate(zip(a, b, strict=True)):
            if isinstance(x, np.ndarray):
                assert x.tobytes() == y.tobytes(), f"{label}: step {k} field {j} differs"
            else:
                assert x == y, f"{label}: step {k} entity states/events differ"


@pytest.mark.parametrize("remote", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("batch", [1, 2, 5])
def test_determinism_matrix(remote, batch):
    """Serial vs parallel (1, 2, 3, 4, 8 threads): bit-identical at every step."""
    cfg = phold_cfg(remote=remote)
    n_runs = -(-10 // batch)  # at least 10 instance seeds per cell of the matrix
    for r in range(n_runs):
        seeds = [1000 * r + 17 * i + 3 for i in range(batch)]
        ref = run_trace(cfg, seeds, "serial", 1, 100, action_seed=r)
        for threads in (1, 2, 3, 4, 8):
            got = run_trace(cfg, seeds, "parallel", threads, 100, action_seed=r)
            assert_same_trace(ref, got, f"remote={remote} batch={batch} threads={threads}")


def test_determinism_with_varied_lookahead_and_sizes():
    for n, L, mean, D in [(1, 0.25, 1.0, 1.0), (3, 0.1, 0.5, 1.0), (200, 1.5, 0.2, 3.0)]:
        cfg = phold_cfg(num_entities=n, lookahead=L, mean=mean, step_duration=D)
        ref = run_trace(cfg, [5, 6], "serial", 1, 30)
        for threads in (2, 5):
            assert_same_trace(ref, run_trace(cfg, [5, 6], "parallel", threads, 30), f"n={n}")


@pytest.mark.parametrize("executor,threads", [("serial", 1), ("parallel", 3)])
def test_batch_invariance(executor, threads):
    cfg = phold_cfg()
    alone = run_trace(cfg, [42], executor, threads, 40, action_seed=9)
    # The batch runs instance 2 with the same actions as the lone run.
    rt = Runtime("phold", cfg, 4, executor, threads)
    rng = np.random.default_rng(9)
    other = np.random.default_rng(1)
    rt.reset([7, 8, 42, 9])
    got = [rt.obs[2].copy()]
    for _ in range(40):
        a = other.integers(0, 3, size=rt.actions.shape)
        a[2] = rng.integers(0, 3, size=(1, cfg["num_entities"]))[0]
        rt.actions[:] = a
        rt.step()
        got.append(rt.obs[2].copy())
        assert rt.entity_states(2) == alone[len(got) - 1][6][0]
    rt.close()
    for k, (ref, g) in enumerate(zip(alone, got, strict=True)):
        assert ref[0][0].tobytes() == g.tobytes(), f"step {k}"


def test_masked_step_and_reset_leave_other_instances_alone():
    cfg = phold_cfg()
    rt = Runtime("phold", cfg, 3, "parallel", 2)
    rt.reset([1, 2, 3])
    rt.actions[:] = 0
    rt.step()
    before = rt.entity_states(1)
    rt.step([True, False, True])
    assert rt.entity_states(1) == before
    assert [rt.step_index(i) for i in range(3)] == [2, 1, 2]
    rt.reset([0, 0, 11], [False, False, True])
    assert rt.step_index(2) == 0 and rt.step_index(0) == 2
    rt.close()


@pytest.mark.parametrize("remote", [0.0, 0.7])
def test_phold_matches_independent_python_oracle(remote):
    cfg = phold_cfg(num_entities=12, remote=remote, work=5)
    for executor, threads in (("serial", 1), ("parallel", 2)):
        rt = Runtime("phold", cfg, 1, executor, threads)
        rt.reset([77])
        py = PholdPy(seed=77, **cfg)
        rng = np.random.default_rng(3)
        for _ in range(25):
            a = rng.integers(0, 3, size=cfg["num_entities"])
            rt.actions[0] = a
            rt.step()
            py.step(a)
            obs, rew = py.observe()
            assert rt.obs[0].tobytes() == obs.tobytes()
            assert rt.reward[0].tobytes() == rew.tobytes()
            assert rt.info[0][:, 0].tolist() == [float(h) for h in py.handled]
            assert rt.info[0][:, 2].tolist() == [float(c >> 11) for c in py.checksum]
            assert rt.pending_events(0) == len(py.queue)
        rt.close()


def test_rng_seeding_matches_documented_algorithm():
    for seed, e in [(0, 0), (1, 5), (2**64 - 1, 123456), (987654321, 16777215)]:
        assert list(rng_seed_state(seed, e)) == seed_state(seed, e)


def test_max_cycles_truncates_everyone():
    rt = Runtime("phold", phold_cfg(), 1, "parallel", 2, max_cycles=3)
    rt.reset([0])
    rt.actions[:] = 0
    for k in range(3):
        assert rt.alive[0].all()
        rt.step()
        assert rt.truncated[0].all() == (k == 2)
    assert not rt.alive[0].any()
    with pytest.raises(errors.StateError, match="no live agent"):
        rt.step()
    rt.reset([0])
    rt.step()
    rt.close()


# ---- contract checks ---------------------------------------------------------

PROBE_MODES = {
    1: (errors.ContractViolation, ["time in the past", "t=1.25 < now=2.25"]),
    2: (errors.ContractViolation, ["inside the lookahead", "for entity 2",
                                   "t=2.375 < now + lookahead = 2.25 + 0.25"]),
    3: (errors.ContractViolation, ["unknown target", "for entity 9", "target 9 >= num_entities 4"]),
    4: (errors.ContractViolation, ["payload too large", "16 bytes > payload_size 8"]),
    5: (errors.ContractViolation, ["non-finite event time", "t=nan"]),
    6: (errors.ModelError, ["returned 7", "PROBE_TICK", "t=2.25"]),
    8: (errors.ContractViolation, ["outside init/act/handle", "in boundary at t=3"]),
    # the runtime copied size bytes from NULL: a segfault
    9: (errors.ContractViolation, ["NULL payload", "payload is NULL with size 4"]),
    # a restore refuses such an event: so does scheduling it
    10: (errors.ContractViolation, ["unknown event type", "type 2 >= event_type_count 2"]),
}


@pytest.mark.parametrize("executor", ["serial", "parallel", "parallel-alone"])
@pytest.mark.parametrize("mode", sorted(PROBE_MODES))
def test_contract_violation_is_reported(executor, mode, request):
    """parallel-alone: the windows after the first run on the caller's
    thread alone (test_windows_run_alone_when_no_other_thread_comes)."""
    if executor == "parallel-alone":
        request.getfixturevalue("budget_of_one")
        executor = "parallel"
    cls, fragments = PROBE_MODES[mode]
    cfg = dict(num_entities=4, mode=mode, at_step=2, culprit=1, lookahead=0.25)
    rt = Runtime(PROBE, cfg, 2, executor, 3 if executor == "parallel" else 1)
    rt.reset([0, 1])
    rt.step()
    rt.step()
    with pytest.raises(cls) as info:
        rt.step()
    msg = str(info.value)
    assert "model 'probe'" in msg and "entity 1 of instance" in msg
    if mode != 6:
        assert "PROBE_" in msg
    if mode in (1, 2, 3, 4, 5, 9, 10):
        assert "handling event type 0 (PROBE_TICK) at t=2.25" in msg
    for frag in fragments:
        assert frag in msg, (frag, msg)
    # The failed instances must be reset before they run again, and the
    # refusal says why.
    with pytest.raises(errors.StateError, match="needs a reset: its last call failed") as again:
        rt.step()
    assert fragments[0] in str(again.value)
    rt.reset([0, 1])
    rt.step()
    assert rt.obs[0, 0, 0] > 0
    rt.close()


@pytest.mark.parametrize("executor", ["serial", "parallel"])
def test_contract_violation_in_init(executor):
    cfg = dict(num_entities=4, mode=7, at_step=0, culprit=2, lookahead=0.25)
    rt = Runtime(PROBE, cfg, 1, executor, 2 if executor == "parallel" else 1)
    with pytest.raises(errors.ContractViolation,
                       match=r"entity 2 of instance 0, in init at t=0.*PROBE_PING.*entity 3"):
        rt.reset([0])
    rt.close()


def test_parallel_refuses_zero_lookahead():
    with pytest.raises(errors.ExecutorError, match="lookahead 0"):
        Runtime("phold", phold_cfg(lookahead=0.0), 1, "parallel", 2)
    rt = Runtime("phold", phold_cfg(lookahead=0.0), 1, "serial", 1)
    rt.reset([0])
    rt.step()
    rt.close()


# ---- configuration and call-order errors ------------------------------------

@pytest.mark.parametrize("kw,match", [
    (dict(num_entities=0), "num_entities=0"),
    (dict(remote=1.5), "remote=1.5"),
    (dict(mean=-1.0), "mean=-1"),
    (dict(mean=float("nan")), "mean=nan"),
    (dict(lookahead=-0.5), "lookahead=-0.5"),
    (dict(step_duration=0.0), "step_duration=0"),
    (dict(events_per_entity=0), "events_per_entity=0"),
])
def test_invalid_config_names_the_field(kw, match):
    with pytest.raises(errors.ConfigError, match=match):
        Runtime("phold", phold_cfg(**kw), 1, "serial", 1)


def test_invalid_runtime_arguments():
    with pytest.raises(errors.ConfigError, match="unknown env 'nope'"):
        Runtime("nope", {}, 1)
    with pytest.raises(errors.ConfigError, match="unknown config key 'bogus'"):
        Runtime("phold", dict(phold_cfg(), bogus=1), 1)
    with pytest.raises(errors.ConfigError, match="num_entities"):
        Runtime("phold", dict(phold_cfg(), num_entities="x"), 1)
    with pytest.raises(errors.ConfigError, match="executor"):
        Runtime("phold", phold_cfg(), 1, "gpu")
    with pytest.raises(errors.ConfigError, match="threads"):
        Runtime("phold", phold_cfg(), 1, "parallel", 0)
    with pytest.raises(errors.ConfigError, match="serial"):
        Runtime("phold", phold_cfg(), 1, "serial", 2)
    with pytest.raises(errors.ConfigError, match="num_instances"):
        Runtime("phold", phold_cfg(), 0)


def test_the_largest_pool_is_the_runtimes_own_rule():
    """SEER_MAX_THREADS (seer_runtime.h) is the one bound of a pool: the
    Python layer reads it from the runtime, and the runtime itself refuses a
    thread more wherever a pool is sized."""
    from seer_env._bind.runtime import max_threads
    from seer_env.stpa import check_options

    top = max_threads()
    assert top >= 64
    with pytest.raises(errors.ConfigError, match=rf"threads={top + 1} must be in \[1, {top}\]"):
        Runtime("phold", phold_cfg(), 1, "parallel", top + 1)
    with pytest.raises(errors.ConfigError, match=rf"max_threads.*\[1, {top}\]"):
        check_options({"max_threads": top + 1})
    check_options({"max_threads": top})
    rt = Runtime("phold", phold_cfg(), 1, "parallel", 2)
    with pytest.raises(errors.ConfigError, match=rf"must be in \[1, {top}\]"):
        rt.set_threads(top + 1)
    lib = rt.lib
    with rt._call() as h:  # the runtime's own checks, under the Python layer's
        assert lib.seer_runtime_set_threads(h, top + 1) == lib.SEER_E_ARG
        assert f"threads={top + 1} must be in [1, {top}]" in rt.ffi.string(
            lib.seer_runtime_error(h)).decode()
        assert lib.seer_runtime_set_executor(h, lib.SEER_EXECUTOR_PARALLEL, top + 1) \
            == lib.SEER_E_ARG
        assert lib.seer_runtime_set_call_threads(h, top + 1) == lib.SEER_E_ARG
        assert f"call threads={top + 1} must be in [0, {top}]" in rt.ffi.string(
            lib.seer_runtime_error(h)).decode()
        assert lib.seer_runtime_set_call_threads(h, top) == lib.SEER_OK
        assert lib.seer_runtime_set_call_threads(h, 0) == lib.SEER_OK
    rt.reset([1])
    rt.actions[:] = 0
    rt.step()  # the refused calls left it as it was
    assert rt.threads == 2
    rt.close()


def test_call_order_and_closed_runtime():
    rt = Runtime("phold", phold_cfg(), 1, "parallel", 2)
    with pytest.raises(errors.StateError, match="before reset"):
        rt.step()
    rt.reset([1])
    rt.close()
    rt.close()  # idempotent
    with pytest.raises(errors.ClosedError):
        rt.step()
    with pytest.raises(errors.ClosedError):
        rt.reset([1])
    with pytest.raises(errors.ClosedError):
        rt.tidy_records()


def test_invalid_discrete_action_changes_nothing():
    cfg = phold_cfg()
    a = Runtime("phold", cfg, 2, "parallel", 2)
    b = Runtime("phold", cfg, 2, "parallel", 2)
    a.reset([1, 2])
    b.reset([1, 2])
    a.actions[:] = 1
    a.actions[1, 5] = 3  # out of range for Discrete(3)
    with pytest.raises(errors.InvalidActionError,
                       match="'entity_5' \\(agent 5 of instance 1\\): 3 is outside"):
        a.step()
    a.actions[1, 5] = -1
    with pytest.raises(errors.InvalidActionError):
        a.step()
    for rt in (a, b):
        rt.actions[:] = 1
        rt.step()
    assert a.obs.tobytes() == b.obs.tobytes()
    assert a.entity_states(1) == b.entity_states(1)
    a.close()
    b.close()


@pytest.fixture
def budget_of_one():
    """Every call of the process gets its caller's thread only (a pool's
    other threads never come, as on a loaded machine where they are not
    scheduled); lifted afterwards."""
    from seer_env import budget

    budget.set_thread_budget(1)
    try:
        yield budget
    finally:
        budget.set_thread_budget(None)


@pytest.mark.parametrize("threads,batch", [(2, 1), (3, 3), (8, 1)])
def test_windows_run_alone_when_no_other_thread_comes(budget_of_one, threads, batch):
    """The caller's thread holds every partition of a window when no other
    thread came for one: it runs the step's further windows alone
    (parallel.c), each counted in ``alone_windows``, bit-identical to the
    serial executor; lifting the budget midway lets the pool share them
    again."""
    cfg = phold_cfg(num_entities=40, remote=0.7)
    seeds = [4 + i for i in range(batch)]
    ref = run_trace(cfg, seeds, "serial", 1, 30, action_seed=3)
    capped: dict = {}
    got = run_trace(cfg, seeds, "parallel", threads, 15, action_seed=3, stats=capped)
    assert_same_trace(ref[:16], got, f"threads={threads} alone")
    # every step's windows after its first ran alone
    assert capped["steps"] == 15 and capped["windows"] > 15
    assert capped["alone_windows"] == capped["windows"] - 15, capped

    def lift(k):
        if k == 15:
            budget_of_one.set_thread_budget(None)

    whole: dict = {}
    got = run_trace(cfg, seeds, "parallel", threads, 30, action_seed=3, stats=whole,
                    before_step=lambda k: budget_of_one.set_thread_budget(1) if k == 0 else lift(k))
    assert_same_trace(ref, got, f"threads={threads} lifted")
    assert 0 < whole["alone_windows"] < whole["windows"]


def test_set_threads_mid_run_keeps_results():
    cfg = phold_cfg()
    ref = run_trace(cfg, [4, 5], "serial", 1, 20)
    rt = Runtime("phold", cfg, 2, "parallel", 1, oversubscribe=True)
    rng = np.random.default_rng(0)
    rt.reset([4, 5])
    for k in range(20):
        rt.set_threads([1, 2, 4, 3][k % 4])
        rt.actions[:] = rng.integers(0, 3, size=rt.actions.shape)
        rt.step()
        assert rt.obs.tobytes() == ref[k + 1][0].tobytes()
    assert rt.threads == 3
    rt.close()


SETTLE_STEPS = 16  # SEER_SETTLE_STEPS (native/runtime/pool.h)


@pytest.mark.parametrize("path", [
    [("parallel", 2), ("parallel", 1)],
    [("optimistic", 2), ("optimistic", 1)],
    [("parallel", 2), ("serial", 1), ("parallel", 1)],
    [("parallel", 3), ("optimistic", 2), ("parallel", 2)],
    [("parallel", 1), ("parallel", 3)],
    [("serial", 1), ("optimistic", 1), ("parallel", 2)],
], ids=lambda p: "-".join(f"{e}{t}" for e, t in p))
def test_a_switched_runtime_runs_as_one_made_so(path):
    """After switches of executor and threads, a runtime works on the
    partitions of one created with its executor and threads once the new
    configuration has lasted SETTLE_STEPS steps: the same windows per step
    (and the same outputs all along).  A pool of 2 parked down to 1 kept its 2
    partitions and stepped them window by window: 9% slower on PCS 64x64."""
    cfg = phold_cfg(num_entities=64)
    executor, threads = path[-1]
    fresh = Runtime("phold", cfg, 1, executor, threads, oversubscribe=True)
    rt = Runtime("phold", cfg, 1, *path[0], oversubscribe=True)
    for r in (fresh, rt):
        r.reset([7])
        r.actions[:] = 0
    for ex, th in path[1:]:
        rt.set_executor(ex, th)
        for r in (fresh, rt):
            r.step()
        assert rt.obs.tobytes() == fresh.obs.tobytes()
    assert (rt.executor, rt.threads) == (executor, threads)
    for _ in range(SETTLE_STEPS):
        for r in (fresh, rt):
            r.step()
        assert rt.obs.tobytes() == fresh.obs.tobytes()
    w0 = {id(r): r.stats()["windows"] for r in (fresh, rt)}
    for _ in range(4):
        for r in (fresh, rt):
            r.step()
        assert rt.obs.tobytes() == fresh.obs.tobytes()
    assert rt.stats()["windows"] - w0[id(rt)] == fresh.stats()["windows"] - w0[id(fresh)]
    fresh.close()
    rt.close()


def test_switches_back_and_forth_keep_the_partitions_until_one_lasts():
    """STPA's probe visits switch between pool sizes every few steps: the
    partitions stay (a cut moves every pending event and makes the pool anew,
    2.5 ms on PCS 64x64) until a size has lasted SETTLE_STEPS steps."""
    cfg = phold_cfg(num_entities=64)
    rt = Runtime("phold", cfg, 1, "parallel", 2, oversubscribe=True)
    rt.reset([7])
    rt.actions[:] = 0

    def windows(steps):
        w = rt.stats()["windows"]
        for _ in range(steps):
            rt.step()
        return rt.stats()["windows"] - w

    two = windows(4)  # a pool of 2: windows between its partitions
    assert two > 4
    for _ in range(6):  # visits of 3 steps: parallel-1, parallel-2, ...
        rt.set_threads(1)
        assert windows(3) == two * 3 // 4  # still the 2 partitions' windows
        rt.set_threads(2)
        assert windows(3) == two * 3 // 4
    rt.set_threads(1)
    windows(SETTLE_STEPS)
    assert windows(4) == 4  # settled: one partition, one 'window' a step
    rt.close()


# Event records are reused.  In the second configuration half of PHOLD's
# events go to an entity of the other partition; their records flow from
# the thread that schedules them to the one that handles them and go back
# to their home thread's lists when the call ends (events.c), so the
# records in circulation stop growing once warm.  Each thread's home grows
# to what it needs when it handles the most (the caller alone, a thread
# budget of one: warmed here too; the other thread alone when the caller is
# descheduled, or either thread's list doubling its stock after a call it
# ran dry in: not forceable, and on a loaded machine -- the suite beside
# another -- up to 4 blocks more came in 300 steps, with or without the
# pending events' relayouts), never with the steps: records that never go
# home grow by over a hundred blocks in these 300 steps (checked).
BLOCK_RECORDS = ((1 << 18) - 64) // 64  # a block of PHOLD's 64-byte records (events.c)


@pytest.mark.parametrize("cfg, seed, warm, steps", [
    (phold_cfg(num_entities=64), 3, 5, 50),
    (phold_cfg(num_entities=2048, events_per_entity=4, work=0, step_duration=8.0), 5, 30, 300),
], ids=["small", "between-partitions"])
def test_event_pool_is_reused(cfg, seed, warm, steps):
    rt = Runtime("phold", cfg, 1, "parallel", 2)
    rt.reset([seed])
    rt.actions[:] = 0
    for capped in (0, 1, 0):  # warm: both threads, the caller alone, both
        with rt._call() as h:
            rt.lib.seer_runtime_set_call_threads(h, capped)
        for _ in range(warm):
            rt.step()
    allocated = rt.stats()["pool_events"]
    for _ in range(steps):
        rt.step()
    assert allocated <= rt.stats()["pool_events"] <= allocated + 8 * BLOCK_RECORDS
    assert rt.pending_events(0) == cfg["num_entities"] * cfg["events_per_entity"]
    rt.close()


# -- the pool's workers off the caller's CPU between a training loop's calls -------------------


def _keep_off_runtime(monkeypatch: pytest.MonkeyPatch) -> Runtime:
    # work=20: PHOLD steps long enough (about a millisecond) that the gaps
    # of back-to-back steps are a small part of the time; no alone stretches
    # (native/runtime/company.c), whose calls leave the workers out: a
    # worker woken late after the caller's sleeps would begin one (the
    # runtime reads SEER_POOL_ALONE as it is made)
    monkeypatch.setenv("SEER_POOL_ALONE", "0")
    rt = Runtime("phold", phold_cfg(num_entities=64, work=20), 1, "parallel", 2,
                 oversubscribe=True)
    rt.reset([0])
    return rt


def _started_worker(rt: Runtime) -> int:
    for _ in range(2000):
        tids = rt.worker_tids()
        if tids and tids[0]:
            return tids[0]
        rt.step()
    raise AssertionError("the worker never started")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nowhere to keep off")
def test_workers_keep_off_the_callers_cpu_between_a_loops_calls(monkeypatch):
    """Calls a small part of the time (a policy's work between them): the
    worker may run on every CPU the caller may but the one the caller ran
    on at the call's start; calls back to back again: everywhere.  Outputs
    do not depend on it (the determinism tests run both)."""
    import time

    rt = _keep_off_runtime(monkeypatch)
    try:
        tid = _started_worker(rt)
        mine = os.sched_getaffinity(0)
        # back to back, the worker runs on every CPU of the caller's (the
        # steps that started it may have had gaps already, on a loaded host:
        # then it starts kept off, and the first of these puts it back)
        for _ in range(300):
            if os.sched_getaffinity(tid) == mine:
                break
            rt.step()
        assert os.sched_getaffinity(tid) == mine
        for _ in range(6):
            time.sleep(0.02)  # the caller's work: far longer than a step
            rt.step()
        kept = os.sched_getaffinity(tid)
        assert len(kept) == len(mine) - 1 and kept < mine, (kept, mine)
        for _ in range(300):  # back to back: the kernel places it again
            rt.step()
            if os.sched_getaffinity(tid) == mine:
                break
        assert os.sched_getaffinity(tid) == mine
    finally:
        rt.close()


def test_workers_run_where_the_kernel_puts_them_when_told(monkeypatch):
    """SEER_KEEP_OFF_CALLER=0 (read when the runtime is made): the workers'
    CPUs are never touched."""
    import time

    monkeypatch.setenv("SEER_KEEP_OFF_CALLER", "0")
    rt = _keep_off_runtime(monkeypatch)
    try:
        tid = _started_worker(rt)
        mine = os.sched_getaffinity(0)
        for _ in range(6):
            time.sleep(0.02)
            rt.step()
        assert os.sched_getaffinity(tid) == mine
    finally:
        rt.close()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nowhere to keep off")
def test_workers_get_back_their_own_cpus_not_the_callers(monkeypatch):
    """A caller pinned to one CPU after the pool started (the workers keep
    the CPUs they were made with): kept off, a worker runs on its own CPUs
    but the caller's; let go, on all of its own again -- not on the
    caller's one CPU."""
    import time

    mine = os.sched_getaffinity(0)
    rt = _keep_off_runtime(monkeypatch)
    try:
        tid = _started_worker(rt)
        own = os.sched_getaffinity(tid)
        pin = min(own)
        os.sched_setaffinity(0, {pin})
        for _ in range(6):
            time.sleep(0.02)
            rt.step()
        assert os.sched_getaffinity(tid) == own - {pin}
        for _ in range(300):
            rt.step()
            if os.sched_getaffinity(tid) == own:
                break
        assert os.sched_getaffinity(tid) == own
    finally:
        os.sched_setaffinity(0, mine)
        rt.close()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nowhere to keep off")
def test_a_pools_first_call_in_a_loop_keeps_off_at_once(monkeypatch):
    """The steps of any executor count: a loop that ran on the serial
    executor (STPA's probe, its visits of a few steps each) switches to a
    pool whose very first call keeps the worker off the caller's CPU (its
    traced step, timed in the probe, is that call)."""
    import time

    rt = _keep_off_runtime(monkeypatch)
    try:
        tid = _started_worker(rt)
        own = os.sched_getaffinity(tid)
        rt.switch_executor("serial", 1)
        for _ in range(4):
            time.sleep(0.02)
            rt.step()
        assert os.sched_getaffinity(tid) == own  # no pool call yet
        rt.switch_executor("parallel", 2)
        time.sleep(0.02)
        rt.step()
        kept = os.sched_getaffinity(tid)
        assert len(kept) == len(own) - 1 and kept < own, (kept, own)
    finally:
        rt.close()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nowhere to keep off")
def test_a_users_affinity_for_a_worker_outlasts_the_keep_off(monkeypatch):
    """The worker's own CPUs are read afresh each time it is kept off: a
    user who narrowed them since (taskset on the process's threads) gets
    them back when the keep-off lets go, not the CPUs it had before."""
    import time

    rt = _keep_off_runtime(monkeypatch)
    try:
        tid = _started_worker(rt)
        # the worker's own CPUs: the process's, which it was made with (read
        # from the worker, they were {1} once under load: the steps that
        # started it had gaps enough to keep it off the caller's CPU already)
        own = os.sched_getaffinity(0)

        def paused(n: int) -> None:
            for _ in range(n):
                time.sleep(0.02)
                rt.step()

        def back_to_back(want: set[int]) -> None:
            for _ in range(300):
                rt.step()
                if os.sched_getaffinity(tid) == want:
                    return
            raise AssertionError(f"{os.sched_getaffinity(tid)} != {want}")

        paused(6)
        assert os.sched_getaffinity(tid) < own
        back_to_back(own)
        mine = {max(own)}
        os.sched_setaffinity(tid, mine)  # the user's
        paused(6)
        for _ in range(30):  # back to back: let go (the ring holds 3 steps)
            rt.step()
        assert os.sched_getaffinity(tid) == mine
    finally:
        rt.close()
