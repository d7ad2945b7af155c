"""What each pass of the contract checker (``seer-env check``) costs.

Checks two models with the checker's defaults and times each pass (the time
between the checker's progress callbacks: a pass's runs, the serial reference
runs it compares them with, and -- since the checker runs the model in a
child process -- the transfer of the runs' outputs)::

    python benchmarks/bench_check.py [--rounds 3] [--steps N] [--quick] [--rev REV]

* ``template``: the model ``seer-env new`` writes (seer_env/templates/c_model),
  with ``num_agents=6`` as its own test checks it;
* ``pcs16``: ``pcs_v0`` with ``width=16, height=16``.

Prints one line per model and pass (median seconds over the rounds) and the
whole check's wall time.  ``--rev REV`` times the checker of another commit
(its ``seer_env/check.py``, loaded beside this package; e.g. the one before
the checker ran models in a child process) with the same arguments.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import statistics
import subprocess
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


def _checker(rev: str | None) -> Any:
    """``seer_env.check`` here, or the check function of commit ``rev``."""
    if rev is None:
        return seer_env.check
    src = subprocess.run(["git", "show", f"{rev}:seer_env/check.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "check_rev.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("seer_env._check_rev", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.check


def _once(check: Any, model: Any, config: dict, steps: int | None, quick: bool
          ) -> tuple[dict[str, float], float, str]:
    times: dict[str, float] = defaultdict(float)
    last = [time.perf_counter()]

    def log(msg: str) -> None:
        now = time.perf_counter()
        times[msg.split(":", 1)[0]] += now - last[0]
        last[0] = now

    kw: dict[str, Any] = dict(progress=False, log=log)
    if steps is not None:
        kw["steps"] = steps
    if quick:
        kw["quick"] = True
    t0 = time.perf_counter()
    rep = check(model, config, **kw)
    total = time.perf_counter() - t0
    return dict(times), total, " ".join(f"{p.name}={p.runs}x{p.steps}" for p in rep.passes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=None,
                    help="steps per run (default: the checker's default)")
    ap.add_argument("--quick", action="store_true", help="check(quick=True)")
    ap.add_argument("--rev", default=None, help="time the checker of this git commit")
    a = ap.parse_args()
    check = _checker(a.rev)
    with tempfile.TemporaryDirectory() as tmp:
        template = sdk.load(sdk.new("bench_check_m", Path(tmp)))
        models = [("template", template, {"num_agents": 6}),
                  ("pcs16", "pcs_v0", {"width": 16, "height": 16})]
        print("check() parameters:", inspect.signature(check))
        for label, model, config in models:
            _once(check, model, config, 2, False)  # warm-up: build, caches
            rounds = [_once(check, model, config, a.steps, a.quick) for _ in range(a.rounds)]
            passes = sorted({p for r in rounds for p in r[0]}, key=list(rounds[0][0]).index)
            for p in passes:
                med = statistics.median(r[0].get(p, 0) for r in rounds)
                print(f"{label:<9} {p:<10} {med:8.3f} s")
            print(f"{label:<9} {'total':<10} {statistics.median(r[1] for r in rounds):8.3f} s"
                  f"   ({rounds[0][2]})")


if __name__ == "__main__":
    main()
