"""PHOLD written in Python (examples/phold_py, compiled with Numba) against
the C model it ports (phold_v0), measured in one process.

Prints, as medians over rotated blocks of consecutive steps:

* ns per event of the Python-API model and of the C model, serial and on
  the parallel executor (2 threads), and their ratios (goal: within 1.5x);
* the parallel(2)/serial speedup of each;
* ns per event of the independent pure-Python port (``oracles/phold_py.py``,
  a heap-based loop: what a model written in plain Python costs);
* the first-build time of the Python model (Numba compiling every handler,
  in a fresh cache, in a subprocess) and the time to load it from the cache.

Run on a quiet machine::

    python benchmarks/bench_pymodel.py [--rounds 9] [--work 0] \
        [--out benchmarks/results/pymodel.json]

``--out`` writes the figures, stamped with the machine, its load before and
after, the commit and the configuration; the docs state them from that file
(``benchmarks/results_marks.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import seer_env  # noqa: E402
from seer_env.perf.bench import commit, machine  # noqa: E402
from seer_env.registry import Runtime  # noqa: E402


def stepper(native: Any, cfg: dict, threads: int) -> Any:
    rt = Runtime(native, cfg, 1, "serial" if threads == 1 else "parallel", threads)
    rt.reset([1])
    rt.actions[:] = 0

    def block(n: int) -> float:
        e0 = rt.stats()["events"]
        t0 = time.perf_counter_ns()
        for _ in range(n):
            rt.step()
        return (time.perf_counter_ns() - t0) / (rt.stats()["events"] - e0)

    return block, rt


def oracle_ns(cfg: dict, steps: int) -> float:
    from oracles.phold_py import PholdPy

    p = PholdPy(cfg["num_entities"], cfg["events_per_entity"], cfg["remote"], cfg["mean"],
                cfg["lookahead"], cfg["work"], cfg["step_duration"], 1)
    actions = [0] * cfg["num_entities"]
    e0 = sum(p.handled)
    t0 = time.perf_counter_ns()
    for _ in range(steps):
        p.step(actions)
    return (time.perf_counter_ns() - t0) / (sum(p.handled) - e0)


_BUILD = """
import time, sys
t0 = time.perf_counter()
import seer_env
m = seer_env.sdk.load(sys.argv[1], build=False)
where = m.build()
print(f"{where} {time.perf_counter() - t0:.3f}")
"""


def build_times() -> tuple[float, float]:
    """Seconds to build the Python model in a fresh cache, then to load it
    from that cache (each in a new interpreter, imports included)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SEER_ENV_CACHE=cache)
        out = []
        for expect in ("built", "cache"):
            r = subprocess.run([sys.executable, "-c", _BUILD, str(ROOT / "examples/phold_py")],
                               env=env, capture_output=True, text=True, check=True)
            where, secs = r.stdout.split()[-2:]
            assert where == expect, (where, expect, r.stdout, r.stderr)
            out.append(float(secs))
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--block", type=int, default=30, help="steps per block")
    ap.add_argument("--entities", type=int, default=4096)
    ap.add_argument("--work", type=int, default=0)
    ap.add_argument("--no-build", action="store_true", help="skip the build-time figures")
    ap.add_argument("--out", type=Path, help="write the figures to this JSON file")
    a = ap.parse_args()
    load_before = list(os.getloadavg())
    cfg = dict(num_entities=a.entities, events_per_entity=4, remote=0.5, mean=1.0,
               lookahead=1.0, work=a.work, step_duration=8.0)
    py = seer_env.sdk.load(ROOT / "examples/phold_py").native
    c = seer_env.registry.native_model("phold_v0")
    runs = {}
    keep = []
    for name, native in (("python", py), ("c", c)):
        for threads in (1, 2):
            block, rt = stepper(native, cfg, threads)
            keep.append(rt)
            block(5)  # warm
            runs[(name, threads)] = (block, [])
    for _ in range(a.rounds):
        for block, res in runs.values():
            res.append(block(a.block))
    # the runs step identically: same events, same outputs
    assert np.array_equal(keep[0].obs, keep[2].obs) and np.array_equal(keep[1].obs, keep[3].obs)
    med = {k: statistics.median(v[1]) for k, v in runs.items()}
    print(f"PHOLD {a.entities} entities, work={a.work}: ns per event (median of {a.rounds} "
          f"blocks of {a.block} steps, rotated)")
    for t in (1, 2):
        label = "serial" if t == 1 else "parallel(2)"
        print(f"  {label:12s} python {med[('python', t)]:7.1f}  c {med[('c', t)]:7.1f}  "
              f"python/c {med[('python', t)] / med[('c', t)]:.3f}")
    for name in ("python", "c"):
        print(f"  speedup parallel(2)/serial, {name}: {med[(name, 1)] / med[(name, 2)]:.2f}x")
    orc = oracle_ns(cfg, 2 if a.entities >= 1024 else 10)
    print(f"  pure-Python port (oracles/phold_py.py): {orc:,.0f} ns/event = "
          f"{orc / med[('python', 1)]:.0f}x the Python-API model (serial)")
    res: dict[str, Any] = {
        "benchmark": "pymodel", "seer_env": seer_env.__version__, **commit(),
        "machine": machine(), "load_avg_before": load_before,
        "workload": {"model": "phold", "config": cfg, "rounds": a.rounds, "block": a.block},
        "ns_per_event": {f"{n}_{'serial' if t == 1 else 'parallel2'}": round(v, 1)
                         for (n, t), v in med.items()},
        "serial_ratio": med[("python", 1)] / med[("c", 1)],
        "parallel_ratio": med[("python", 2)] / med[("c", 2)],
        "speedup_python": med[("python", 1)] / med[("python", 2)],
        "speedup_c": med[("c", 1)] / med[("c", 2)],
        "pure_python_x": orc / med[("python", 1)],
    }
    if not a.no_build:
        first, cached = build_times()
        print(f"  first build (Numba compiles 7 handlers, fresh cache): {first:.1f} s; "
              f"load from the cache: {cached:.1f} s (interpreter start and imports included)")
        res.update(first_build_s=first, cached_load_s=cached)
    res["load_avg_after"] = list(os.getloadavg())
    if a.out:
        a.out.write_text(json.dumps(res, indent=1) + "\n")
        print(f"  wrote {a.out}")


if __name__ == "__main__":
    main()
