"""Several envs of one pool configuration in one process, each timed on its own.

Why: two parallel-2 envs of PCS 64x64 made the same way in one process do not
run alike.  Measured on the 2-core VM (2026-12-05): some run 1.05-1.2 ms a
step, others 1.45-1.6, each its own for a while, and a fast one can turn
slow for good -- by itself now and then, more often after a few steps whose
windows all ran on the calling thread (a thread budget of one, a CPU
burner, a probe's visit to the serial executor): over three runs, 3
budget-one steps turned 5 of 7 fast envs slow (3/3, 2/2, 0/2), while 1 of 7
fast envs left alone turned slow.  STPA's choice of a pool then runs behind
the same pool made fresh.  This script shows it: ``--envs`` envs, warmed, then rotated
blocks; each env's median before and after an episode that half of them go
through (``--episode budget``: ``--episode-steps`` steps under
`seer_env.budget.set_thread_budget(1)`, every window on the caller;
``--episode serial``: that many steps on the serial executor and back;
``none``: no episode, the envs as they drift), and the ratio of the slowest
env to the fastest.  A benchmark, never a test: it prints, and ``--json``
writes every block.

What the slow state is not (each tried on 2026-12-05, with this script or
its forerunners): refills of the free lists (an initial stock of 32768
records, none: still two speeds, still turned slow by the episode); the
free records' order (every list put in address order, each thread's records
together: slow envs stayed slow, fast ones turned slow); two records of two
threads on one 128-byte line pair (a 128-byte record stride: every env
~1.35-1.39 ms, one turned slow); the queues' vectors sharing a line with
another thread's data (every vector line-aligned and padded: the episode
still turned 3 of 3 slow); free lists per partition instead of per thread
(every env slow).  Seen: the claims keep their affinity (worker 0 took
partition 0 in 5999 of 6000 windows), but partition 1's act phase runs on
the caller in 42-58% of the steps; during an episode the caller frees
partition 1's records into its own lists.  With those records sent back to
the other thread's lists instead (a debug build; possible only while that
thread takes no part in calls: a budget of one) the episode turned 1 of 7
fast envs slow over three runs (0/3, 1/2, 0/2), but 4 of 6 fast envs left
alone turned slow in those runs: suggestive, no conclusion.

    python benchmarks/bench_pool_modes.py --executor parallel-2 --envs 6
    python benchmarks/bench_pool_modes.py --episode serial --episode-steps 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from seer_env import budget
from seer_env.perf.company import Workload, _Stepper


def _blocks(steppers: list[Any], rounds: int, block: int) -> list[list[float]]:
    """Rotated blocks of ``block`` steps: each env's ms a step, per block."""
    out: list[list[float]] = [[] for _ in steppers]
    n = len(steppers)
    for r in range(rounds):
        for i in [(r + k) % n for k in range(n)]:
            t = time.perf_counter()
            for _ in range(block):
                steppers[i]()
            out[i].append((time.perf_counter() - t) / block * 1e3)
    return out


def _episode(env: Any, stepper: Any, kind: str, steps: int, executor: str) -> None:
    if kind == "budget":
        budget.set_thread_budget(1, "bench_pool_modes episode")
        try:
            for _ in range(steps):
                stepper()
        finally:
            budget.set_thread_budget(None)
    elif kind == "serial":
        name, threads = executor.rsplit("-", 1)
        env.runtime.set_executor("serial", 1)
        for _ in range(steps):
            stepper()
        env.runtime.set_executor(name, int(threads))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executor", default="parallel-2", help="e.g. parallel-2, optimistic-2")
    ap.add_argument("--envs", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--block", type=int, default=60, help="steps a block")
    ap.add_argument("--warm", type=int, default=100, help="steps before the first block")
    ap.add_argument("--episode", choices=("budget", "serial", "none"), default="budget")
    ap.add_argument("--episode-steps", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None, help="write every block here")
    a = ap.parse_args(argv)
    if a.envs < 2 or a.rounds < 1 or a.block < 1:
        ap.error("--envs >= 2, --rounds >= 1 and --block >= 1")
    wl = Workload()
    envs = [wl.make(a.executor) for _ in range(a.envs)]
    steppers = [_Stepper(e) for e in envs]
    for s in steppers:
        for _ in range(a.warm):
            s()
    before = _blocks(steppers, a.rounds, a.block)
    episode = list(range(0, a.envs, 2)) if a.episode != "none" else []
    for i in episode:
        _episode(envs[i], steppers[i], a.episode, a.episode_steps, a.executor)
    after = _blocks(steppers, a.rounds, a.block)
    mb = [statistics.median(b) for b in before]
    ma = [statistics.median(b) for b in after]
    print(f"{a.executor}, {a.envs} envs of {wl.env} {wl.config} in one process; "
          f"episode: {a.episode} ({a.episode_steps} steps) for envs {episode}")
    for i in range(a.envs):
        print(f"  env {i}{'*' if i in episode else ' '}  before {mb[i]:.3f} ms  "
              f"after {ma[i]:.3f} ms  ({mb[i] / ma[i]:.2f}x)")
    print(f"slowest / fastest env: before {max(mb) / min(mb):.2f}, after {max(ma) / min(ma):.2f}")
    for e in envs:
        e.close()
    if a.json:
        a.json.write_text(json.dumps({"executor": a.executor, "episode": a.episode,
                                      "episode_steps": a.episode_steps, "episode_envs": episode,
                                      "before_ms": before, "after_ms": after}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
