"""A/B of two builds alone on a quiet machine: ms per step of each executor.

Runs the same measurement under two Python interpreters (two venvs, each with
its own build of seer_env installed), alternating processes A B A B ... so a
drift of the machine hits both alike, and prints each configuration's median
over the processes and the paired ratio B/A (above 1: B is slower).  What it
measures, in each process: the batched API on one instance of each workload,
every configuration made and warmed, then blocks of consecutive steps whose
order rotates each round; a process's figure is the median of its blocks.

    python benchmarks/ab_alone.py /path/to/venv_a/bin/python .venv/bin/python \
        --pairs 5 --blocks 9

A benchmark, never a test: it prints ratios and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

#: (workload, env config, executor, threads)
CONFIGS = [
    ("pcs64", {"width": 64, "height": 64}, "serial", 1),
    ("pcs64", {"width": 64, "height": 64}, "parallel", 2),
    ("pcs64", {"width": 64, "height": 64}, "optimistic", 2),
    ("pcs32", {"width": 32, "height": 32}, "serial", 1),
    ("pcs32", {"width": 32, "height": 32}, "parallel", 2),
    ("pcs32", {"width": 32, "height": 32}, "optimistic", 2),
]

_CHILD = r"""
import json, statistics, sys, time
import numpy as np
from seer_env.envs import pcs_v0
configs, blocks, block = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
envs = []
for name, cfg, ex, th in configs:
    env = pcs_v0.vector_env(1, executor=ex, threads=th, **cfg)
    env.reset(seed=1)
    acts = np.zeros(env.runtime.actions.shape, int)
    for _ in range(64):
        env.step(acts)
    envs.append((env, acts))
times = [[] for _ in envs]
order = list(range(len(envs)))
for r in range(blocks):
    for k in order[r % len(order):] + order[:r % len(order)]:
        env, acts = envs[k]
        t0 = time.perf_counter()
        for _ in range(block):
            env.step(acts)
        times[k].append((time.perf_counter() - t0) / block * 1e3)
print(json.dumps([statistics.median(t) for t in times]))
for env, _ in envs:
    env.close()
"""


def _run(python: str, blocks: int, block: int) -> list[float]:
    # run outside any checkout: ``python -c`` puts the working directory first
    # on the path, where a checkout's seer_env/ would shadow the build's
    with tempfile.TemporaryDirectory() as cwd:
        out = subprocess.run([os.path.abspath(python), "-c", _CHILD, json.dumps(CONFIGS),
                              str(blocks), str(block)], capture_output=True, text=True, cwd=cwd)
    if out.returncode != 0:
        raise SystemExit(f"{python} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("python_a", help="interpreter of build A (the baseline)")
    ap.add_argument("python_b", help="interpreter of build B")
    ap.add_argument("--pairs", type=int, default=5, help="A/B process pairs (default 5)")
    ap.add_argument("--blocks", type=int, default=9, help="timed blocks per config (default 9)")
    ap.add_argument("--block", type=int, default=32, help="steps per block (default 32)")
    ap.add_argument("--only", default="", help="configs whose label contains this "
                    "(e.g. 'pcs32 parallel'; default all)")
    args = ap.parse_args(argv)
    global CONFIGS
    CONFIGS = [c for c in CONFIGS if args.only in f"{c[0]} {c[2]}-{c[3]}"]
    a_runs, b_runs = [], []
    for i in range(args.pairs):
        first, second = (args.python_a, args.python_b) if i % 2 == 0 else \
            (args.python_b, args.python_a)
        r1 = _run(first, args.blocks, args.block)
        r2 = _run(second, args.blocks, args.block)
        a, b = (r1, r2) if i % 2 == 0 else (r2, r1)
        a_runs.append(a)
        b_runs.append(b)
        print(f"pair {i + 1}/{args.pairs} done", file=sys.stderr)
    print(f"{'config':<22} {'A ms/step':>10} {'B ms/step':>10} {'B/A (paired median)':>20}")
    for k, (name, _cfg, ex, th) in enumerate(CONFIGS):
        a = statistics.median(r[k] for r in a_runs)
        b = statistics.median(r[k] for r in b_runs)
        ratio = statistics.median(rb[k] / ra[k] for ra, rb in zip(a_runs, b_runs, strict=True))
        print(f"{name + ' ' + ex + '-' + str(th):<22} {a:>10.3f} {b:>10.3f} {ratio:>20.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
