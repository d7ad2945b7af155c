"""Several envs of one pool configuration in one process, each timed on its own.

Why: two parallel-2 envs of PCS 64x64 made the same way in one process did
not run alike.  Measured on the 2-core VM (2026-12-05): some ran 1.05-1.2 ms
a step, others 1.45-1.6, each its own for a while, and a fast one could turn
slow for good -- by itself now and then, more often after a few steps whose
windows all ran on the calling thread (a thread budget of one, a CPU burner,
a probe's visit to the serial executor) or a reset: over three runs, 3
budget-one steps turned 5 of 7 fast envs slow, while 1 of 7 fast envs left
alone turned slow.  STPA's choice of a pool then ran behind the same pool
made fresh.

What it was: the two threads' event records side by side in memory.  A
record went back to the list of the thread that handled it, whoever had
allocated it, so records flowed between the threads' lists (events between
partitions, partition 1's act phase run by the caller, every partition run
by the caller, a reset freeing every pending event); in the slow envs the
other line of a free record's 128-byte pair was on the other thread's list
in 12-48% of the cases, in the fast ones in none, and the phases' own time
was half as much again for the same events on both threads.  Every record
now goes back to its block's home worker (``native/runtime/events.c``):
in the same hour no env ran slow (0 of 18, 3 runs).  The host matters: from 18:00
that day the old runtime showed no slow envs either (8 of 8 and 6 of 6
within 1.12-1.32 ms).  What the script still shows: an env runs some 5-10%
slower after a few hundred steps or an episode than fresh, its free lists
out of address order until the pool orders them (where a step's records
outgrow the cache).

This script shows both: ``--envs`` envs, warmed, then rotated blocks; each
env's median before and after an episode that half of them go through
(``--episode budget``: ``--episode-steps`` steps under
`seer_env.budget.set_thread_budget(1)`, every window on the caller;
``--episode serial``: that many steps on the serial executor and back;
``--episode reset``: a reset; ``none``: no episode, the envs as they drift),
and the ratio of the slowest env to the fastest.  A benchmark, never a test:
it prints, and ``--json`` writes every block.

Shown not to be the cause, before the homes (each tried on 2026-12-05):
refills of the free lists; the free records' order; the queues' vectors
sharing a line with another thread's data; huge pages for the records
(still two speeds); malloc's mmap threshold; keeping the workers off the
caller's CPU.

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
from seer_env.perf.company import Stepper, Workload


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
    elif kind == "reset":
        env.reset(seed=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executor", default="parallel-2", help="e.g. parallel-2, optimistic-2")
    ap.add_argument("--envs", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--block", type=int, default=60, help="steps a block")
    ap.add_argument("--warm", type=int, default=100, help="steps before the first block")
    ap.add_argument("--episode", choices=("budget", "serial", "reset", "none"), default="budget")
    ap.add_argument("--episode-steps", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None, help="write every block here")
    a = ap.parse_args(argv)
    if a.envs < 2 or a.rounds < 1 or a.block < 1:
        ap.error("--envs >= 2, --rounds >= 1 and --block >= 1")
    wl = Workload()
    envs = [wl.make(a.executor) for _ in range(a.envs)]
    steppers = [Stepper(e) for e in envs]
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
