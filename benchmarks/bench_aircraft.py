"""Aircraft step latency: serial vs parallel executor vs the NumPy port, and the cost split.

A script, not a test.  Every figure comes from this one run: the executors
step in lockstep (same seed, same actions, so bit-identical states and the same
live UAVs), each step timed separately, and the ratios are of medians.

    .venv/bin/python benchmarks/bench_aircraft.py                 # N = 32, 256, 1024
    .venv/bin/python benchmarks/bench_aircraft.py --sizes 256 --steps 60 --json out.json

Columns: median milliseconds per step of ``Runtime.step`` (the native call, GIL
released) for the serial executor and the parallel executor with 1 and 2
threads, and of ``AircraftNumpy.step``.  The cost split (parallel executor,
1 thread) takes differences of configurations: physics = msg_every=0 and
num_rays=0; messaging = (num_rays=0) - physics; sensing = full - (num_rays=0);
Python = ``ParallelEnv.step`` (dict API, 2 threads) - ``Runtime.step`` (2 threads).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracles.aircraft_numpy import AircraftNumpy  # noqa: E402
from seer_env.envs import aircraft_v0  # noqa: E402
from seer_env.registry import Runtime  # noqa: E402
from seer_env.sdk import describe_config  # noqa: E402


def actions_for(rng: np.random.Generator, obs: np.ndarray) -> np.ndarray:
    """Noisy station keeping (damp horizontal velocity, hold altitude), shape (..., 3).

    Keeps most UAVs alive (so N=256 and N=1024 lose a similar fraction) without
    gathering them: the density, hence the messages per UAV, stays that of the
    spawn (the arena grows with N).
    """
    a = 0.5 * rng.uniform(-1.0, 1.0, size=obs.shape[:-1] + (3,))
    a[..., 0] -= 1.5 * obs[..., 3]
    a[..., 1] -= 1.5 * obs[..., 4]
    a[..., 2] += 2.0 * (0.45 - obs[..., 2]) - 2.0 * obs[..., 5]
    return a.astype(np.float32)


def machine() -> str:
    model = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return (f"{model}, {ncpu} CPUs available, load average {load[0]:.2f}, "
            f"Python {platform.python_version()}, NumPy {np.__version__}")


def lockstep(n: int, runs: dict[str, tuple[str, int]], steps: int, warmup: int,
             seed: int = 1, **extra: Any) -> tuple[dict[str, list[float]], float, float]:
    """Step times of several executors stepping the same episode, the mean number
    of live UAVs and the events handled per measured step."""
    cfg = describe_config(aircraft_v0.MODEL, dict(num_uavs=n, **extra))
    rts = {k: Runtime("aircraft", cfg, 1, ex, th) for k, (ex, th) in runs.items()}
    for rt in rts.values():
        rt.reset([seed])
    first = next(iter(rts.values()))
    rng = np.random.default_rng(seed)
    times: dict[str, list[float]] = {k: [] for k in rts}
    live = []
    order = list(rts)
    ev0 = 0
    for k in range(warmup + steps):
        if k == warmup:
            ev0 = first.stats()["events"]
        act = actions_for(rng, first.obs)
        order = order[1:] + order[:1]  # rotate who goes first
        for name in order:
            rt = rts[name]
            rt.actions[:] = act
            t0 = time.perf_counter()
            rt.step()
            dt = time.perf_counter() - t0
            if k >= warmup:
                times[name].append(dt)
        live.append(int(first.alive.sum()))
        if not first.alive.any():
            break
    events = (first.stats()["events"] - ev0) / max(1, len(live) - warmup)
    for rt in rts.values():
        rt.close()
    mean_live = float(np.mean(live[warmup:])) if len(live) > warmup else float("nan")
    return times, mean_live, events


def numpy_port(n: int, steps: int, seed: int = 1) -> list[float]:
    cfg = describe_config(aircraft_v0.MODEL, dict(num_uavs=n))
    sim = AircraftNumpy(cfg, seed)
    out = sim.reset()
    rng = np.random.default_rng(seed)
    ts = []
    for _ in range(steps):
        act = actions_for(rng, out["obs"])
        t0 = time.perf_counter()
        out = sim.step(act)
        ts.append(time.perf_counter() - t0)
    return ts


def python_overhead(n: int, steps: int, warmup: int, seed: int = 1) -> tuple[float, float]:
    """(median ParallelEnv.step, median Runtime.step inside it) in seconds, 2 threads."""
    env = aircraft_v0.parallel_env(num_uavs=n, threads=2, max_cycles=0)
    obs, _ = env.reset(seed=seed)
    rt = env.runtime
    inner: list[float] = []
    outer: list[float] = []
    real_step = rt.step

    def timed_step(mask: Any = None) -> None:
        t0 = time.perf_counter()
        real_step(mask)
        inner.append(time.perf_counter() - t0)

    rt.step = timed_step  # type: ignore[method-assign]
    rng = np.random.default_rng(seed)
    for _ in range(warmup + steps):
        if not env.agents:
            break
        o = np.stack([obs[a] for a in env.agents])
        act = dict(zip(env.agents, actions_for(rng, o), strict=True))
        t0 = time.perf_counter()
        obs, *_ = env.step(act)
        outer.append(time.perf_counter() - t0)
    env.close()
    return float(np.median(outer[warmup:])), float(np.median(inner[warmup:]))


def med_ms(ts: list[float]) -> float:
    return 1e3 * float(np.median(ts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[32, 256, 1024])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--numpy-steps", type=int, default=0,
                    help="NumPy port steps (default: 20 / 8 / 3 for N <= 32 / 256 / more)")
    ap.add_argument("--json", type=str, default="")
    args = ap.parse_args()
    if args.json:
        from seer_env.perf.bench import require_results_path

        require_results_path(args.json, __file__.rsplit("/", 1)[-1])
    print(f"# Aircraft step latency; machine: {machine()}")
    print("# defaults: substeps=10, msg_every=2, num_rays=16, comm_radius=60, "
          "arena side max(200, 40*sqrt(N)) (constant density)")
    runs = {"serial": ("serial", 1), "par1": ("parallel", 1), "par2": ("parallel", 2)}
    results: dict[int, dict[str, Any]] = {}
    hdr = (f"{'N':>5} {'live':>6} {'events':>7} {'serial':>8} {'par1':>8} {'par2':>8} {'numpy':>9} "
           f"{'par2/ser':>8} {'np/ser':>7} {'np/par2':>7} | {'phys':>6} {'msg':>6} "
           f"{'sense':>6} {'python':>6}  (ms)")
    print(hdr)
    for n in args.sizes:
        times, live, events = lockstep(n, runs, args.steps, args.warmup)
        r: dict[str, Any] = {k: med_ms(v) for k, v in times.items()}
        r.update({f"{k}_min": 1e3 * min(v) for k, v in times.items()})
        r["live"] = live
        r["events"] = events
        nsteps = args.numpy_steps or (20 if n <= 32 else 8 if n <= 256 else 3)
        r["numpy"] = med_ms(numpy_port(n, nsteps))
        split_runs = {"phys": ("parallel", 1)}
        phys, _, _ = lockstep(n, split_runs, args.steps, args.warmup, msg_every=0, num_rays=0)
        norays, _, _ = lockstep(n, split_runs, args.steps, args.warmup, num_rays=0)
        r["physics"] = med_ms(phys["phys"])
        r["messaging"] = med_ms(norays["phys"]) - r["physics"]
        r["sensing"] = r["par1"] - med_ms(norays["phys"])
        outer, inner = python_overhead(n, args.steps, args.warmup)
        r["python"] = 1e3 * (outer - inner)
        r["env_step_par2"] = 1e3 * outer
        results[n] = r
        print(f"{n:>5} {live:>6.0f} {events:>7.0f} {r['serial']:>8.3f} {r['par1']:>8.3f} "
              f"{r['par2']:>8.3f} "
              f"{r['numpy']:>9.2f} {r['serial'] / r['par2']:>7.2f}x "
              f"{r['numpy'] / r['serial']:>6.1f}x {r['numpy'] / r['par2']:>6.1f}x | "
              f"{r['physics']:>6.3f} {r['messaging']:>6.3f} {r['sensing']:>6.3f} "
              f"{r['python']:>6.3f}", flush=True)
    if 256 in results and 1024 in results:
        a, b = results[256], results[1024]
        print("\n# N=1024 vs N=256 step cost (target <= 5x):  " + ", ".join(
            f"{k} {b[k] / a[k]:.2f}x" for k in ("serial", "par1", "par2")))
        print("#   per live UAV: " + ", ".join(
            f"{k} {(b[k] / b['live']) / (a[k] / a['live']):.2f}x"
            for k in ("serial", "par1", "par2"))
            + "; per event: " + ", ".join(
            f"{k} {(b[k] / b['events']) / (a[k] / a['events']):.2f}x"
            for k in ("serial", "par1", "par2")))
    if 1024 in results:
        r = results[1024]
        print(f"# N=1024 parallel 2 threads vs serial (target >= 1.8x): "
              f"{r['serial'] / r['par2']:.2f}x (vs parallel 1 thread: "
              f"{r['par1'] / r['par2']:.2f}x); best steps (min, not a median): "
              f"{r['serial_min'] / r['par2_min']:.2f}x")
    if 256 in results:
        r = results[256]
        print(f"# N=256 C vs NumPy port (target >= 20x): serial {r['numpy'] / r['serial']:.1f}x,"
              f" parallel 2 threads {r['numpy'] / r['par2']:.1f}x")
    if args.json:
        from seer_env.perf.bench import results_file, write_results

        summary: dict[str, float] = {}
        for n, r in results.items():
            summary[f"par2_vs_serial_{n}"] = r["serial"] / r["par2"]
            summary[f"c_vs_numpy_serial_{n}"] = r["numpy"] / r["serial"]
            summary[f"c_vs_numpy_par2_{n}"] = r["numpy"] / r["par2"]
        if 256 in results and 1024 in results:
            summary["n1024_vs_n256_serial"] = results[1024]["serial"] / results[256]["serial"]
        write_results(args.json, results_file(
            "bench_aircraft.py", {str(k): v for k, v in results.items()}, summary))


if __name__ == "__main__":
    main()
