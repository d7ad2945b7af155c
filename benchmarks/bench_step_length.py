"""Step length against cost per event (a script, not a test): the guide's
"Choosing the step length" figures (docs/writing-a-model.md).

The model `seer-env new` writes (a token ring: 256 agents, lookahead L = 1,
every agent passing right, agents never done), built in a temporary folder,
stepped with step lengths D = 0.25, 1, 4 and 16: the parallel executor on 2
threads against the serial executor, in rotated blocks of steps in one
process; the median ns per event of each.  A step shorter than L is one
window; longer steps give D/L windows, so the pools' fixed cost per step
spreads over more events.

    python benchmarks/bench_step_length.py [--rounds 7] [--json FILE]

(``--json benchmarks/results/step_length.json``: the results file the guide
cites.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from seer_env import sdk  # noqa: E402

LENGTHS = (0.25, 1.0, 4.0, 16.0)
AGENTS = 256


def _key(d: float) -> str:
    """A step length as a results key (a span's key cannot hold a dot)."""
    return f"d{d:g}".replace(".", "p")


def bench(rounds: int, block_events: int = 200_000) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = sdk.build(sdk.new("ringbench", tmp))
        for d in LENGTHS:
            cfg = dict(num_agents=AGENTS, lookahead=1.0, step_duration=d, goal=1_000_000,
                       max_cycles=0)
            envs = {"serial": model.vector_env(1, executor="serial", threads=1, **cfg),
                    "parallel-2": model.vector_env(1, executor="parallel", threads=2, **cfg)}
            right = np.ones((1, AGENTS), np.int64)  # everyone passes right
            for e in envs.values():
                e.reset(seed=0)
                for _ in range(20):
                    e.step(right)
            per_step = envs["serial"].runtime.stats()["events"] / envs["serial"].runtime.stats()[
                "steps"]
            block = max(5, int(block_events / max(1.0, per_step)))
            ns: dict[str, list[float]] = {k: [] for k in envs}
            for r in range(rounds):
                order = list(envs) if r % 2 == 0 else list(envs)[::-1]
                for k in order:
                    rt = envs[k].runtime
                    ev0 = rt.stats()["events"]
                    t0 = time.perf_counter_ns()
                    for _ in range(block):
                        envs[k].step(right)
                    ns[k].append((time.perf_counter_ns() - t0) / (rt.stats()["events"] - ev0))
            windows = envs["parallel-2"].runtime.stats()
            out[_key(d)] = {"step_duration": d, "events_per_step": per_step,
                            "windows_per_step": windows["windows"] / max(1, windows["steps"]),
                            "ns_per_event": {k: statistics.median(v) for k, v in ns.items()}}
            for e in envs.values():
                e.close()
            row = out[_key(d)]
            print(f"D = {d:g}: {per_step:.0f} events a step, "
                  f"{row['windows_per_step']:.1f} windows; ns per event: serial "
                  f"{row['ns_per_event']['serial']:.0f}, parallel-2 "
                  f"{row['ns_per_event']['parallel-2']:.0f}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", default="", help="write the figures to this results file")
    args = ap.parse_args()
    if args.json:
        from seer_env.perf.bench import require_results_path

        require_results_path(args.json, __file__.rsplit("/", 1)[-1])
    res = bench(args.rounds)
    if args.json:
        from seer_env.perf.bench import results_file, write_results

        summary = {f"{k}_{ex.replace('-', '')}_ns_per_event": v
                   for k, row in res.items() for ex, v in row["ns_per_event"].items()}
        summary.update({f"{k}_events_per_step": row["events_per_step"] for k, row in res.items()})
        write_results(args.json, results_file("bench_step_length.py", res, summary,
                                              rounds=args.rounds))
        print(f"results: {args.json}")


if __name__ == "__main__":
    main()
