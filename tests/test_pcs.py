"""PCS C model on the raw runtime: executors agree bit for bit, classic mode
reproduces the ROSS-Models reference counts, configs are validated."""

from __future__ import annotations

import numpy as np
import pytest
from pcs_helpers import assert_runs_equal, c_config, run_runtime

from seer_env.errors import ConfigError, ExecutorError
from seer_env.registry import Runtime

# the published ROSS-Models PCS counts (envs/pcs_v0/README.md, classic mode):
# base seed, 32x32, run to t = 10000
CLASSIC_REF = {"events": 627_203, "call_attempts": 457_193, "channel_blocks": 5_158,
               "busy_lines": 150_081, "handoff_blocks": 215}


def classic_config(**over: object) -> dict[str, object]:
    cfg = c_config(width=32, height=32, channels=10, portables_per_cell=16, max_guard=2,
                   classic=1, move_mean=4500.0, next_call_mean=360.0, call_time_mean=180.0,
                   report_interval=0.0)
    cfg.update(over)
    return cfg


def totals(rt: Runtime) -> dict[str, int]:
    tot = rt.info[0].sum(axis=0)
    return {n: int(v) for n, v in zip(rt.info_names, tot, strict=True)}


@pytest.mark.parametrize("step_minutes,steps", [(20.0, 500), (10000.0, 1), (312.5, 32)])
def test_classic_reference_counts(step_minutes: float, steps: int) -> None:
    rt = Runtime("pcs", classic_config(step_minutes=step_minutes), 1, "serial", 1)
    rt.reset([0])
    rt.actions[:] = 0
    for _ in range(steps):
        rt.step()
    t = totals(rt)
    assert {k: t[k] for k in CLASSIC_REF} == CLASSIC_REF
    assert int(rt.entity_events(0).sum()) == CLASSIC_REF["events"]
    # every handler schedules exactly one event: 16 portables per cell stay pending
    assert rt.pending_events(0) == 16 * 32 * 32
    assert t["guard_blocks"] == 0
    rt.close()


def test_classic_seed_maps_to_other_stream_and_batch_independence() -> None:
    cfg = classic_config(width=8, height=8, step_minutes=100.0)
    alone = run_runtime(cfg, "serial", 1, [0], 40, action_seed=3)
    batch = run_runtime(cfg, "serial", 1, [5, 0, 6], 40, action_seed=3)
    other = run_runtime(cfg, "serial", 1, [5], 40, action_seed=3)
    assert not np.array_equal(batch[-1][4][0], batch[-1][4][1])  # seed 5 != base seed
    # instance results do not depend on the batch (actions differ per instance,
    # so compare the reset boundary, which precedes any action)
    assert np.array_equal(alone[0][0][0], batch[0][0][1])
    assert np.array_equal(other[0][6][0], batch[0][6][0])


def test_parallel_executor_refuses_classic() -> None:
    with pytest.raises(ExecutorError, match="lookahead 0"):
        Runtime("pcs", classic_config(), 1, "parallel", 2)


# (config overrides, seeds) for the executor matrix
MATRIX = [
    (dict(width=8, height=8), [11, 12, 13]),
    (dict(width=3, height=5, report_interval=7.0, profile_amplitude=0.6, shared_reward=0.4,
          handoff_latency=1.5), [1, 2, 3]),
    (dict(width=6, height=4, report_interval=0.0, move_mean=40.0, channels=3, max_guard=3),
     [7, 8, 9]),
]


@pytest.mark.parametrize("over,seeds", MATRIX)
def test_serial_parallel_bit_identical(over: dict[str, object], seeds: list[int]) -> None:
    cfg = c_config(**over)
    ref = run_runtime(cfg, "serial", 1, seeds, 300, action_seed=42, max_cycles=300)
    for threads in (1, 2):
        par = run_runtime(cfg, "parallel", threads, seeds, 300, action_seed=42, max_cycles=300)
        assert_runs_equal(ref, par, f"parallel threads={threads}")
    # truncation at max_cycles reached every agent
    assert ref[300][3].all() and not ref[299][3].any()


def test_parallel_four_threads_oversubscribed() -> None:
    # few windows per step (h = 10): 4 threads on a 2-core machine stays quick
    cfg = c_config(width=6, height=6, handoff_latency=10.0, report_interval=10.0)
    ref = run_runtime(cfg, "serial", 1, [4, 5, 6], 300, action_seed=9)
    par = run_runtime(cfg, "parallel", 4, [4, 5, 6], 300, action_seed=9)
    assert_runs_equal(ref, par, "parallel threads=4")


def test_instance_independent_of_batch() -> None:
    cfg = c_config(width=4, height=4)
    rng = np.random.default_rng(0)
    acts = rng.integers(0, 4, size=(300, 3, 16)).astype(np.int32)
    results = {}
    for executor, threads, seeds in (("serial", 1, [21, 22, 23]), ("parallel", 2, [21, 22, 23]),
                                     ("serial", 1, [22]), ("parallel", 2, [22])):
        rt = Runtime("pcs", cfg, len(seeds), executor, threads)
        rt.reset(seeds)
        col = 1 if len(seeds) == 3 else 0
        trace = []
        for k in range(300):
            rt.actions[:] = acts[k, :len(seeds)] if len(seeds) == 3 else acts[k, 1:2]
            rt.step()
            trace.append((rt.obs[col].copy(), rt.reward[col].copy(), rt.info[col].copy()))
        results[(executor, len(seeds))] = trace
        rt.close()
    base = results[("serial", 1)]
    for key, trace in results.items():
        for k, (x, y) in enumerate(zip(base, trace, strict=True)):
            for u, v in zip(x, y, strict=True):
                assert np.array_equal(u, v), (key, k)


def test_default_mode_conserves_portables() -> None:
    # reports off: exactly one pending event per portable, always
    cfg = c_config(width=4, height=4, report_interval=0.0, move_mean=30.0)
    rt = Runtime("pcs", cfg, 1, "serial", 1)
    rt.reset([3])
    for _ in range(50):
        rt.actions[:] = 1
        rt.step()
        assert rt.pending_events(0) == 16 * 10
        busy = rt.info[0][:, rt.info_names.index("busy_channels")]
        assert (busy >= 0).all() and (busy <= 6).all()
    t = totals(rt)
    assert t["moves_in"] > 100 and t["handoff_attempts"] > 0
    assert t["handoff_blocks"] <= t["handoff_attempts"]
    rt.close()


def test_full_guard_refuses_every_new_call() -> None:
    # guard = channels: free <= guard always holds, so no call ever starts
    cfg = c_config(width=3, height=3, channels=4, max_guard=4)
    rt = Runtime("pcs", cfg, 1, "serial", 1)
    rt.reset([1])
    for _ in range(30):
        rt.actions[:] = 4
        rt.step()
    t = totals(rt)
    assert t["call_attempts"] > 50
    assert t["channel_blocks"] == t["call_attempts"] == t["guard_blocks"]
    assert t["busy_lines"] == 0 and t["busy_channels"] == 0 and t["handoff_attempts"] == 0
    assert (rt.obs[0][:, 0] == 0).all() and (rt.obs[0][:, 1] == 1).all()
    rt.close()


@pytest.mark.parametrize("over,field", [
    (dict(channels=0), "channels"),
    (dict(handoff_latency=0.0), "handoff_latency"),
    (dict(handoff_latency=-1.0), "handoff_latency"),
    (dict(next_call_mean=-5.0), "next_call_mean"),
    (dict(call_time_mean=0.0), "call_time_mean"),
    (dict(move_mean=-1.0), "move_mean"),
    (dict(width=2048, height=1024), "width \\* height"),
    (dict(max_guard=7), "max_guard"),
    (dict(step_minutes=0.0), "step_minutes"),
    (dict(report_interval=-1.0), "report_interval"),
    (dict(profile_amplitude=1.0), "profile_amplitude"),
    (dict(shared_reward=2.0), "shared_reward"),
])
def test_c_describe_names_the_field(over: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=f"pcs: {field}"):
        Runtime("pcs", c_config(**over), 1, "serial", 1)
