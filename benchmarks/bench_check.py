"""What each pass of the contract checker (``seer-env check``) costs.

Checks two models with the checker's defaults and times each pass (the time
between the checker's progress callbacks: a pass's runs, the serial reference
runs it compares them with, and -- since the checker runs the model in a
child process -- the transfer of the runs' outputs)::

    python benchmarks/bench_check.py [--rounds 3] [--steps N]

* ``template``: the model ``seer-env new`` writes (seer_env/templates/c_model),
  with ``num_agents=6`` as its own test checks it;
* ``pcs16``: ``pcs_v0`` with ``width=16, height=16``.

Prints one line per model and pass (median seconds over the rounds) and the
whole check's wall time.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import seer_env  # noqa: E402
from seer_env import sdk  # noqa: E402


def _once(model: Any, config: dict, steps: int | None) -> tuple[dict[str, float], float, str]:
    times: dict[str, float] = defaultdict(float)
    last = [time.perf_counter()]

    def log(msg: str) -> None:
        now = time.perf_counter()
        times[msg.split(":", 1)[0]] += now - last[0]
        last[0] = now

    kw: dict[str, Any] = dict(progress=False, log=log)
    if steps is not None:
        kw["steps"] = steps
    t0 = time.perf_counter()
    rep = seer_env.check(model, config, **kw)
    total = time.perf_counter() - t0
    return dict(times), total, " ".join(f"{p.name}={p.runs}x{p.steps}" for p in rep.passes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=None,
                    help="steps per run (default: the checker's default)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        template = sdk.load(sdk.new("bench_check_m", Path(tmp)))
        models = [("template", template, {"num_agents": 6}),
                  ("pcs16", "pcs_v0", {"width": 16, "height": 16})]
        print("check() parameters:", inspect.signature(seer_env.check))
        for label, model, config in models:
            _once(model, config, 2)  # warm-up: build, caches
            rounds = [_once(model, config, a.steps) for _ in range(a.rounds)]
            passes = sorted({p for r in rounds for p in r[0]}, key=list(rounds[0][0]).index)
            for p in passes:
                med = statistics.median(r[0].get(p, 0) for r in rounds)
                print(f"{label:<9} {p:<10} {med:8.3f} s")
            print(f"{label:<9} {'total':<10} {statistics.median(r[1] for r in rounds):8.3f} s"
                  f"   ({rounds[0][2]})")


if __name__ == "__main__":
    main()
