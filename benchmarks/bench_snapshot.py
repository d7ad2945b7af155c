"""What a snapshot costs: ``Runtime.snapshot`` / ``Runtime.restore`` against a plain
copy of the entity states and against a step.

A script, not a test; the figures are medians of ``--reps`` repetitions, and the
ratios are the claim (the machine may be shared)::

    .venv/bin/python benchmarks/bench_snapshot.py               # PCS 64x64, Aircraft 1024
    .venv/bin/python benchmarks/bench_snapshot.py --reps 50 --warm 20

Columns, per model: the snapshot's size (and the entity states' and pending
events' share of it), the median time of ``Runtime.entity_states`` (one copy of
every entity's state into a ``bytes``: the floor a snapshot cannot go under),
of ``Runtime.snapshot``, of ``Runtime.restore``, and of one step on the serial
executor before and after restores (a restored env must step as fast as the
original); then snapshot and restore as multiples of the state copy and of a
step.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from seer_env.registry import Runtime  # noqa: E402

MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "PCS 64x64": ("pcs", {"width": 64, "height": 64}),
    "Aircraft 1024": ("aircraft", {"num_uavs": 1024, "num_targets": 256}),
}


def median_s(fn: Callable[[], Any], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def step_s(rt: Runtime, rng: np.random.Generator, reps: int) -> float:
    times = []
    for _ in range(reps):
        if rt.sizes.action_kind == "discrete":
            rt.actions[:] = rng.integers(0, rt.sizes.action_n, rt.actions.shape)
        else:
            rt.actions[:] = rng.uniform(-1, 1, rt.actions.shape).astype(np.float32)
        t0 = time.perf_counter()
        rt.step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(label: str, name: str, cfg: dict[str, Any], reps: int, warm: int) -> dict[str, float]:
    rt = Runtime(name, cfg, 1, "serial", 1)
    rng = np.random.default_rng(0)
    rt.reset([1])
    step_s(rt, rng, warm)  # past the start-up transient; queues and free lists warm
    snap = rt.snapshot(0)
    states = rt.sizes.num_entities * rt.sizes.entity_size
    res = {
        "bytes": len(snap),
        "state_bytes": states,
        "pending": rt.pending_events(0),
        "step_before": step_s(rt, rng, reps),
    }
    snap = rt.snapshot(0)
    res["copy"] = median_s(lambda: rt.entity_states(0), reps)
    res["snapshot"] = median_s(lambda: rt.snapshot(0), reps)
    res["restore"] = median_s(lambda: rt.restore(0, snap), reps)
    rt.restore(0, snap)
    res["step_after"] = step_s(rt, rng, reps)
    rt.close()
    return res


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--warm", type=int, default=10, help="steps before measuring")
    args = p.parse_args(argv)
    ms = 1e3
    for label, (name, cfg) in MODELS.items():
        r = bench(label, name, cfg, args.reps, args.warm)
        print(f"{label}: snapshot {r['bytes'] / 2**20:.2f} MiB (entity states "
              f"{r['state_bytes'] / 2**20:.2f} MiB, {r['pending']} pending events)")
        print(f"  entity_states copy {r['copy'] * ms:8.3f} ms")
        print(f"  snapshot()         {r['snapshot'] * ms:8.3f} ms   "
              f"{r['snapshot'] / r['copy']:5.2f}x the copy, "
              f"{r['snapshot'] / r['step_before']:5.2f}x a step")
        print(f"  restore()          {r['restore'] * ms:8.3f} ms   "
              f"{r['restore'] / r['copy']:5.2f}x the copy, "
              f"{r['restore'] / r['step_before']:5.2f}x a step")
        print(f"  step (serial)      {r['step_before'] * ms:8.3f} ms before restores, "
              f"{r['step_after'] * ms:.3f} ms after ({r['step_after'] / r['step_before']:.2f}x)")


if __name__ == "__main__":
    main()
