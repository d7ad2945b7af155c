"""What a snapshot costs: ``Runtime.snapshot`` / ``Runtime.restore`` against a plain
copy of the entity states and against a step.

A script, not a test; the figures are medians of ``--reps`` repetitions, and the
ratios are the claim (the machine may be shared)::

    .venv/bin/python benchmarks/bench_snapshot.py               # PCS 64x64, Aircraft 1024
    .venv/bin/python benchmarks/bench_snapshot.py --reps 50 --warm 20

Columns, per model: the snapshot's size (and the entity states' and pending
events' share of it), the median time of ``Runtime.entity_states`` (one copy of
every entity's state into a ``bytes``) and of one copy of as many bytes as the
snapshot holds (the floor for copying the states and the pending events),
of ``Runtime.snapshot``, of ``Runtime.restore``, and of a step on the serial
executor; then snapshot and restore as multiples of the state copy and of a
step; and the same steps from the snapshot again after a restore and in a new
runtime restored from it (a restored env must step as fast as the original).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import seer_env  # noqa: E402
from seer_env.perf.bench import commit, machine  # noqa: E402
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


def random_actions(rt: Runtime, rng: np.random.Generator) -> np.ndarray:
    if rt.sizes.action_kind == "discrete":
        return rng.integers(0, rt.sizes.action_n, rt.actions.shape).astype(rt.actions.dtype)
    return rng.uniform(-1, 1, rt.actions.shape).astype(np.float32)


def steps_s(rt: Runtime, actions: list[np.ndarray]) -> float:
    """Median seconds of one step, over the steps with these actions."""
    times = []
    for a in actions:
        rt.actions[:] = a
        t0 = time.perf_counter()
        rt.step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(name: str, cfg: dict[str, Any], reps: int, warm: int) -> dict[str, float]:
    rt = Runtime(name, cfg, 1, "serial", 1)
    rng = np.random.default_rng(0)
    rt.reset([1])
    steps_s(rt, [random_actions(rt, rng) for _ in range(warm)])  # past the start-up
    snap = rt.snapshot(0)
    src = np.frombuffer(snap, np.uint8)
    dst = np.empty_like(src)
    res: dict[str, float] = {
        "bytes": len(snap),
        "state_bytes": rt.sizes.num_entities * rt.sizes.entity_size,
        "pending": rt.pending_events(0),
        "copy": median_s(lambda: rt.entity_states(0), reps),
        # the floor for states *and* events: copying as many bytes as the snapshot
        # into a buffer that exists already
        "memcpy": median_s(lambda: np.copyto(dst, src), reps),
        "snapshot": median_s(lambda: rt.snapshot(0), reps),
        "restore": median_s(lambda: rt.restore(0, snap), reps),
    }
    # the same steps from the snapshot: in the original runtime (restored just
    # now), again after a restore, and in a new runtime restored from it
    actions = [random_actions(rt, rng) for _ in range(reps)]
    rt.restore(0, snap)
    res["step"] = steps_s(rt, actions)
    rt.restore(0, snap)
    res["step_restored"] = steps_s(rt, actions)
    fresh = Runtime(name, cfg, 1, "serial", 1)
    fresh.reset([2])
    fresh.restore(0, snap)
    res["step_fresh"] = steps_s(fresh, actions)
    fresh.close()
    rt.close()
    return res


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--warm", type=int, default=10, help="steps before measuring")
    p.add_argument("--out", type=Path, help="write the figures to this JSON file (the docs "
                   "state them from benchmarks/results/snapshot.json)")
    args = p.parse_args(argv)
    ms = 1e3
    out: dict[str, Any] = {"benchmark": "snapshot", "seer_env": seer_env.__version__,
                           **commit(), "machine": machine(),
                           "load_avg_before": list(os.getloadavg()), "reps": args.reps,
                           "models": {}}
    for label, (name, cfg) in MODELS.items():
        r = bench(name, cfg, args.reps, args.warm)
        key = label.lower().replace(" ", "_")  # pcs_64x64, aircraft_1024
        out["models"][key] = {"label": label, "model": name, "config": cfg,
                              **{k: float(v) for k, v in r.items()},
                              "snapshot_ms": r["snapshot"] * ms, "restore_ms": r["restore"] * ms,
                              "snapshot_steps": r["snapshot"] / r["step"],
                              "restore_steps": r["restore"] / r["step"],
                              "restored_step_ratio": r["step_restored"] / r["step"],
                              "fresh_step_ratio": r["step_fresh"] / r["step"],
                              "mib": r["bytes"] / 2**20}
        print(f"{label}: snapshot {r['bytes'] / 2**20:.2f} MiB (entity states "
              f"{r['state_bytes'] / 2**20:.2f} MiB, {int(r['pending'])} pending events)")
        print(f"  entity_states copy {r['copy'] * ms:8.3f} ms; a copy of the snapshot's bytes "
              f"{r['memcpy'] * ms:.3f} ms")
        for what in ("snapshot", "restore"):
            print(f"  {what + '()':<18} {r[what] * ms:8.3f} ms   "
                  f"{r[what] / r['copy']:6.2f}x the state copy, "
                  f"{r[what] / r['memcpy']:5.2f}x the byte copy, "
                  f"{r[what] / r['step']:5.2f}x a step")
        print(f"  step (serial)      {r['step'] * ms:8.3f} ms; the same steps after a restore "
              f"{r['step_restored'] / r['step']:.2f}x, in a new runtime restored from the "
              f"snapshot {r['step_fresh'] / r['step']:.2f}x")
    out["load_avg_after"] = list(os.getloadavg())
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
