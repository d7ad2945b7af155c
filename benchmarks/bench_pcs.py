"""PCS benchmark (a script, not a test): step latency and events/s.

Runs, in one process and one sitting so the ratios compare like with like:
  * default mode, grids 16x16 / 32x32 / 64x64, load reports on and off: the
    serial executor, the parallel executor with 1 and 2 threads and the NumPy
    port step the *same* episode (same seed, same actions: every one of them
    handles the same events, bit for bit) in lockstep, in blocks of steps,
    each step timed on its own; a figure is the median of the per-step times
    (see lockstep() for why);
  * the PettingZoo dict API over the batched API (serial executor), also in
    lockstep, per agent and step;
  * classic mode (serial executor only) at 32x32 and 64x64: events/s over the
    reference horizon t = 10000 (the figure PDES engines publish).
Usage::

    python benchmarks/bench_pcs.py            # full table (a few minutes)
    python benchmarks/bench_pcs.py --quick    # fewer steps
    python benchmarks/bench_pcs.py --json benchmarks/results/pcs.json
                                              # and the results file the docs cite
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
from seer_env.envs import pcs_v0  # noqa: E402
from seer_env.registry import Runtime  # noqa: E402


def c_config(w: int, reports: bool, classic: bool = False) -> dict[str, Any]:
    return dict(width=w, height=w, channels=10, portables_per_cell=16, max_guard=4,
                classic=int(classic), move_mean=4500.0, next_call_mean=360.0,
                call_time_mean=180.0, handoff_latency=1.0,
                report_interval=10.0 if reports and not classic else 0.0,
                step_minutes=20.0, handoff_weight=10.0, shared_reward=0.0,
                profile_amplitude=0.0)


def lockstep(cfg: dict[str, Any], rounds: int, block: int, skip: int,
             warm: int = 5) -> dict[str, list[float]]:
    """Per-step seconds of serial / parallel-1 / parallel-2 and the NumPy port
    stepping one episode in lockstep: each round, each runner takes ``block``
    consecutive steps (the order rotating every round), of which the first
    ``skip`` are not counted; plus the events of each counted step (key
    "events").

    Why blocks and skips: a runner's events are touched about once every ten
    steps, so after another runner has flushed the caches it takes a few
    dozen steps to be as fast as when a user steps one env in a loop
    (stepping the runners alternately every step measured cold steps, up to
    twice as slow).  Why lockstep at all: a burst of load on this shared
    machine then hits every runner alike instead of one configuration's run.
    """
    rts = {"serial": Runtime("pcs", cfg, 1, "serial", 1),
           "par1": Runtime("pcs", cfg, 1, "parallel", 1),
           "par2": Runtime("pcs", cfg, 1, "parallel", 2)}
    oracle = PcsOracle(cfg)
    oracle.reset(1)
    acts = np.ones(cfg["width"] * cfg["height"], dtype=np.int32)
    for rt in rts.values():
        rt.reset([1])
        rt.actions[:] = 1
    for _ in range(warm):
        oracle.step(acts)
        for rt in rts.values():
            rt.step()
    times: dict[str, list[float]] = {k: [] for k in (*rts, "numpy", "events")}
    runners: dict[str, Any] = {**{k: rt.step for k, rt in rts.items()},
                               "numpy": lambda: oracle.step(acts)}
    order = list(runners)
    for _ in range(rounds):
        order = order[1:] + order[:1]
        for name in order:
            for j in range(block):
                e0 = int(rts["serial"].entity_events(0).sum()) if name == "serial" else 0
                t0 = time.perf_counter()
                runners[name]()
                dt = time.perf_counter() - t0
                if j < skip:
                    continue
                times[name].append(dt)
                if name == "serial":
                    times["events"].append(float(rts["serial"].entity_events(0).sum() - e0))
    for rt in rts.values():
        rt.close()
    return times


def dict_vs_batched(w: int, reports: bool, rounds: int, warm: int = 3) -> tuple[float, float]:
    """Median (dict API, batched API) seconds per step, serial executor, the two
    envs stepping the same episode in alternating blocks of 5 steps."""
    kw = dict(width=w, height=w, report_interval=10.0 if reports else None,
              executor="serial", max_cycles=0)
    env = pcs_v0.parallel_env(**kw)
    env.reset(seed=1)
    venv = pcs_v0.vector_env(1, copy=True, **kw)
    venv.reset(seed=1)
    acts = {a: 1 for a in env.possible_agents}
    a = np.ones((1, w * w), dtype=np.int64)
    td: list[float] = []
    tv: list[float] = []
    for _ in range(warm):
        env.step(acts)
        venv.step(a)
    for k in range(rounds):  # blocks of 5 steps each, as in lockstep()
        for fn, out, arg in ((env.step, td, acts), (venv.step, tv, a))[:: 1 if k % 2 else -1]:
            for _ in range(5):
                t0 = time.perf_counter()
                fn(arg)
                out.append(time.perf_counter() - t0)
    env.close()
    venv.close()
    return statistics.median(td), statistics.median(tv)


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and repetitions")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of the classic runs")
    ap.add_argument("--json", default="", help="write the figures to this JSON file "
                    "(stamped with the commit and the machine; a summary the docs cite)")
    args = ap.parse_args()
    rows: dict[str, dict[str, float]] = {}
    if args.json:
        from seer_env.perf.bench import require_results_path

        require_results_path(args.json, __file__.rsplit("/", 1)[-1])
    reps = 1 if args.quick else args.reps
    scale = 4 if args.quick else 1
    print(f"machine: {platform.processor() or platform.machine()}, "
          f"{len(os.sched_getaffinity(0))} CPUs usable, Python {platform.python_version()}")
    print("default mode: D = 20 min/step, h = 1 min, C = 10, P = 16; medians of per-step "
          "times, every runner stepping the same episode in lockstep (blocks of steps, "
          "see lockstep())\n")
    hdr = (f"{'grid':>6} {'reports':>7} | {'serial ms':>9} {'par1 ms':>8} {'par2 ms':>8} "
           f"{'par2/ser':>8} | {'numpy ms':>9} {'C/numpy':>8} | {'Mev/s ser':>9} "
           f"{'Mev/s par2':>10} | {'dict us/agent':>13}")
    print(hdr)
    print("-" * len(hdr))
    for w in (16, 32, 64):
        rounds, block, skip = {16: (4, 40, 20), 32: (3, 40, 20), 64: (3, 25, 10)}[w]
        steps = rounds * block
        for reports in (True, False):
            t = lockstep(c_config(w, reports), max(1, rounds // scale), block, skip)
            m = {k: statistics.median(v) for k, v in t.items()}
            ev = m["events"]
            td, tv = dict_vs_batched(w, reports, max(2, steps // 10))
            per_agent = (td - tv) / (w * w) * 1e6
            print(f"{w:>3}x{w:<2} {'on' if reports else 'off':>7} | {m['serial'] * 1e3:9.3f} "
                  f"{m['par1'] * 1e3:8.3f} {m['par2'] * 1e3:8.3f} "
                  f"{m['serial'] / m['par2']:7.2f}x | {m['numpy'] * 1e3:9.1f} "
                  f"{m['numpy'] / m['serial']:7.0f}x | {ev / m['serial'] / 1e6:9.2f} "
                  f"{ev / m['par2'] / 1e6:10.2f} | {per_agent:13.3f}")
            rows[f"{w}_reports_{'on' if reports else 'off'}"] = {
                "serial_ms": m["serial"] * 1e3, "par1_ms": m["par1"] * 1e3,
                "par2_ms": m["par2"] * 1e3, "numpy_ms": m["numpy"] * 1e3,
                "par2_vs_serial": m["serial"] / m["par2"],
                "c_vs_numpy": m["numpy"] / m["serial"],
                "serial_mev_per_s": ev / m["serial"] / 1e6,
                "dict_us_per_agent": per_agent}
    print("\nclassic mode (serial executor, t = 0..10000, base seed):")
    classic = {}
    for w in (32, 64):
        r = statistics.median(time_classic(w) for _ in range(reps))
        classic[w] = r / 1e6
        print(f"  {w}x{w}: {r / 1e6:.2f} M events/s")
    if args.json:
        from seer_env.perf.bench import results_file, write_results

        summary: dict[str, float] = {f"classic_mev_per_s_{w}": v for w, v in classic.items()}
        for k, row in rows.items():
            summary[f"par2_vs_serial_{k}"] = row["par2_vs_serial"]
            summary[f"c_vs_numpy_{k}"] = row["c_vs_numpy"]
        per_agent = [row["dict_us_per_agent"] for row in rows.values()]
        summary["dict_us_per_agent_min"] = min(per_agent)
        summary["dict_us_per_agent_max"] = max(per_agent)
        write_results(args.json, results_file(
            "bench_pcs.py", {"default": rows, "classic_mev_per_s": classic}, summary,
            quick=args.quick))
        print(f"results: {args.json}")


if __name__ == "__main__":
    main()
