"""PCS benchmark (a script, not a test): step latency and events/s.

Runs, in one process and one sitting so the ratios compare like with like:
  * default mode, grids 16x16 / 32x32 / 64x64, load reports on and off:
    serial executor, parallel executor with 1 and 2 threads, the NumPy port
    (fewer steps), and the PettingZoo dict API over the batched API (serial);
  * classic mode (serial executor only) at 32x32 and 64x64: events/s over the
    reference horizon t = 10000 (the figure PDES engines publish).
Each figure is the median of ``--reps`` timed runs.  Usage::

    python benchmarks/bench_pcs.py            # full table (a few minutes)
    python benchmarks/bench_pcs.py --quick    # fewer steps
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oracles.pcs_numpy import PcsOracle  # noqa: E402
from seer_env._runtime import Runtime  # noqa: E402
from seer_env.envs import pcs_v0  # noqa: E402


def c_config(w: int, reports: bool, classic: bool = False) -> dict[str, Any]:
    return dict(width=w, height=w, channels=10, portables_per_cell=16, max_guard=4,
                classic=int(classic), move_mean=4500.0, next_call_mean=360.0,
                call_time_mean=180.0, handoff_latency=1.0,
                report_interval=10.0 if reports and not classic else 0.0,
                step_minutes=20.0, handoff_weight=10.0, shared_reward=0.0,
                profile_amplitude=0.0)


def time_runtime(cfg: dict[str, Any], executor: str, threads: int, steps: int,
                 warm: int = 5) -> tuple[float, float]:
    """(seconds per step, events per second) over ``steps`` steps after ``warm``."""
    rt = Runtime("pcs", cfg, 1, executor, threads)
    rt.reset([1])
    rt.actions[:] = 1
    for _ in range(warm):
        rt.step()
    e0 = int(rt.entity_events(0).sum())
    t0 = time.perf_counter()
    for _ in range(steps):
        rt.step()
    dt = time.perf_counter() - t0
    ev = int(rt.entity_events(0).sum()) - e0
    rt.close()
    return dt / steps, ev / dt


def time_oracle(cfg: dict[str, Any], steps: int, warm: int = 2) -> tuple[float, float]:
    o = PcsOracle(cfg)
    o.reset(1)
    acts = np.ones(cfg["width"] * cfg["height"], dtype=np.int32)
    for _ in range(warm):
        o.step(acts)
    e0 = int(o.entity_events().sum())
    t0 = time.perf_counter()
    for _ in range(steps):
        o.step(acts)
    dt = time.perf_counter() - t0
    return dt / steps, (int(o.entity_events().sum()) - e0) / dt


def time_dict_api(w: int, reports: bool, steps: int) -> tuple[float, float]:
    """(dict API s/step, batched API s/step), serial executor, same config."""
    kw = dict(width=w, height=w, report_interval=10.0 if reports else None,
              executor="serial", max_cycles=0)
    env = pcs_v0.parallel_env(**kw)
    env.reset(seed=1)
    acts = {a: 1 for a in env.possible_agents}
    for _ in range(3):
        env.step(acts)
    t0 = time.perf_counter()
    for _ in range(steps):
        env.step(acts)
    t_dict = (time.perf_counter() - t0) / steps
    env.close()
    venv = pcs_v0.vector_env(1, copy=True, **kw)
    venv.reset(seed=1)
    a = np.ones((1, w * w), dtype=np.int64)
    for _ in range(3):
        venv.step(a)
    t0 = time.perf_counter()
    for _ in range(steps):
        venv.step(a)
    t_vec = (time.perf_counter() - t0) / steps
    venv.close()
    return t_dict, t_vec


def time_classic(w: int) -> float:
    """Events/s of classic mode run to t = 10000 (500 steps of 20 minutes)."""
    rt = Runtime("pcs", c_config(w, False, classic=True), 1, "serial", 1)
    rt.reset([0])
    rt.actions[:] = 0
    t0 = time.perf_counter()
    for _ in range(500):
        rt.step()
    dt = time.perf_counter() - t0
    ev = int(rt.entity_events(0).sum())
    rt.close()
    return ev / dt


def med(fn: Any, reps: int) -> tuple[float, float]:
    runs = [fn() for _ in range(reps)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and repetitions")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    reps = 1 if args.quick else args.reps
    print(f"machine: {platform.processor() or platform.machine()}, "
          f"{len(os.sched_getaffinity(0))} CPUs usable, Python {platform.python_version()}")
    print("default mode: D = 20 min/step, h = 1 min, C = 10, P = 16; medians of "
          f"{reps} run(s)\n")
    hdr = (f"{'grid':>6} {'reports':>7} | {'serial ms':>9} {'par1 ms':>8} {'par2 ms':>8} "
           f"{'par2/ser':>8} | {'numpy ms':>9} {'C/numpy':>8} | {'Mev/s ser':>9} "
           f"{'Mev/s par2':>10} | {'dict us/agent':>13}")
    print(hdr)
    print("-" * len(hdr))
    for w in (16, 32, 64):
        steps = (200 if w < 64 else 60) // (4 if args.quick else 1)
        for reports in (True, False):
            cfg = c_config(w, reports)
            ser = med(lambda: time_runtime(cfg, "serial", 1, steps), reps)  # noqa: B023
            p1 = med(lambda: time_runtime(cfg, "parallel", 1, steps), reps)  # noqa: B023
            p2 = med(lambda: time_runtime(cfg, "parallel", 2, steps), reps)  # noqa: B023
            npy = med(lambda: time_oracle(cfg, {16: 6, 32: 3, 64: 1}[w]), 1)  # noqa: B023
            npy_s, ratio = f"{npy[0] * 1e3:9.1f}", f"{npy[0] / ser[0]:7.0f}x"
            td, tv = med(lambda: time_dict_api(w, reports, steps), reps)  # noqa: B023
            per_agent = (td - tv) / (w * w) * 1e6
            print(f"{w:>3}x{w:<2} {'on' if reports else 'off':>7} | {ser[0] * 1e3:9.3f} "
                  f"{p1[0] * 1e3:8.3f} {p2[0] * 1e3:8.3f} {ser[0] / p2[0]:7.2f}x | "
                  f"{npy_s} {ratio} | {ser[1] / 1e6:9.2f} {p2[1] / 1e6:10.2f} | "
                  f"{per_agent:13.3f}")
    print("\nclassic mode (serial executor, t = 0..10000, base seed):")
    for w in (32, 64):
        r = statistics.median(time_classic(w) for _ in range(reps))
        print(f"  {w}x{w}: {r / 1e6:.2f} M events/s")


if __name__ == "__main__":
    main()
