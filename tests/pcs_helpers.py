"""Helpers shared by the PCS tests: C config dicts and runs of the raw runtime."""

from __future__ import annotations

from typing import Any

import numpy as np

from seer_env.registry import Runtime


def c_config(**over: Any) -> dict[str, Any]:
    """A full ``seer_pcs_config`` dict (small, busy defaults), overridden by ``over``."""
    cfg: dict[str, Any] = dict(
        width=5, height=4, channels=6, portables_per_cell=10, max_guard=3, classic=0,
        move_mean=120.0, next_call_mean=60.0, call_time_mean=60.0, handoff_latency=1.0,
        report_interval=10.0, step_minutes=20.0, handoff_weight=10.0, shared_reward=0.0,
        profile_amplitude=0.0,
    )
    cfg.update(over)
    return cfg


def run_runtime(cfg: dict[str, Any], executor: str, threads: int, seeds: list[int],
                steps: int, action_seed: int, max_cycles: int = 0
                ) -> list[tuple[np.ndarray, ...]]:
    """Reset with ``seeds`` and take ``steps`` random guard steps; returns, per
    boundary (reset included), copies of every output plus global states and raw
    entity states of every instance."""
    rt = Runtime("pcs", cfg, len(seeds), executor, threads, max_cycles)
    rng = np.random.default_rng(action_seed)
    out = []

    def grab() -> tuple[np.ndarray, ...]:
        gs = np.stack([rt.global_state(i) for i in range(len(seeds))])
        es = np.stack([np.frombuffer(rt.entity_states(i), np.uint8) for i in range(len(seeds))])
        ev = np.stack([rt.entity_events(i) for i in range(len(seeds))])
        return (rt.obs.copy(), rt.reward.copy(), rt.terminated.copy(), rt.truncated.copy(),
                rt.info.copy(), gs, es, ev)

    try:
        rt.reset(seeds)
        out.append(grab())
        for _ in range(steps):
            rt.actions[:] = rng.integers(0, cfg["max_guard"] + 1, size=rt.actions.shape)
            rt.step()
            out.append(grab())
    finally:
        rt.close()
    return out


def assert_runs_equal(a: list[tuple[np.ndarray, ...]], b: list[tuple[np.ndarray, ...]],
                      what: str) -> None:
    """Every output of every step equal bit for bit (NaN-free, so array_equal is exact)."""
    assert len(a) == len(b)
    names = ("obs", "reward", "terminated", "truncated", "info", "state", "entity_states",
             "entity_events")
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        for name, u, v in zip(names, x, y, strict=True):
            assert u.dtype == v.dtype and u.shape == v.shape, (what, k, name)
            assert np.array_equal(u.view(np.uint8), v.view(np.uint8)), (
                f"{what}: first difference at boundary {k}, field {name}"
            )
