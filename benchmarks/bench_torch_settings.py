"""What to set for torch when training on CPU beside the env: the whole
iteration of `seer-env bench company`'s torch loop, in milliseconds, under
torch's defaults, ``OMP_WAIT_POLICY=PASSIVE``, ``OMP_NUM_THREADS=1`` and
``GOMP_SPINCOUNT=30000`` (libgomp's workers spin a tenth of their default
300,000 rounds after each operation before they sleep: on an Intel Xeon a
default spin lasted some 5 ms of CPU after a forward pass, longer than a PCS
64x64 step).

The setting is read once, when torch loads libgomp, so each one needs a
process of its own: every round runs ``seer-env bench company --situations
torch`` once per setting, in turn (the order rotates from round to round),
and the figures are medians over the rounds.  Ratios inside one run (the
company table's) compare the env's executors under one setting; this
compares the settings themselves, which is what a user choosing one pays.
A round whose host check (parallel-2 alone against serial, before and
after) read under ``--host-min`` had the host's other tenants in it: it is
kept in the file but left out of the medians, unless no round was clean.

    .venv/bin/python benchmarks/bench_torch_settings.py                 # 6 rounds
    .venv/bin/python benchmarks/bench_torch_settings.py --rounds 10 \
        -o benchmarks/results/torch_settings.json
    .venv/bin/python benchmarks/bench_torch_settings.py --settings default,spin_30k

A script, not a test: it prints a table and writes every run's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SETTINGS: dict[str, dict[str, str]] = {
    "default": {},
    "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
    "one_thread": {"OMP_NUM_THREADS": "1"},
    "spin_30k": {"GOMP_SPINCOUNT": "30000"},
}
#: what a setting sets, cleared from the caller's environment for every run
VARIABLES = ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "GOMP_SPINCOUNT")
LABELS = ("serial", "parallel-2", "optimistic-2", "auto")


def run_one(setting: str, rounds: int) -> dict[str, Any]:
    """One ``bench company --situations torch`` run under ``setting``: its
    host check and each executor's ms per iteration."""
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(SETTINGS[setting])
    env.setdefault("SEER_STPA_CACHE", "0")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        subprocess.run([sys.executable, "-m", "seer_env.cli", "bench", "company", "--situations",
                        "torch", "--rounds", str(rounds), "-o", str(out)],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        res = json.loads(out.read_text())
    h = res["host_check"]
    ex = res["situations"]["torch"]["executors"]
    return {"host_check": min(h["before"]["ratio"], h["after"]["ratio"]),
            "ms": {k: ex[k]["s"] * 1e3 for k in LABELS if k in ex},
            "auto_chose": res["situations"]["torch"]["auto"].get("choice"),
            "cpu": res.get("machine", {}).get("cpu")}


def summarize(runs: dict[str, list[dict[str, Any]]], host_min: float) -> dict[str, Any]:
    """Medians per setting and executor over the clean rounds (all where none
    was clean), and each against the defaults' serial executor."""
    n = min(len(v) for v in runs.values())
    clean = [i for i in range(n) if all(runs[s][i]["host_check"] >= host_min for s in runs)]
    use = clean or list(range(n))
    med = {s: {k: statistics.median(runs[s][i]["ms"][k] for i in use) for k in LABELS}
           for s in runs}
    base = med["default"]["serial"] if "default" in med else None
    return {"rounds": n, "clean_rounds": len(clean), "used_rounds": len(use),
            "median_ms": med,
            "vs_default_serial": {s: {k: base / v for k, v in m.items()} for s, m in med.items()}
            if base else {},
            "best_ms": {s: min(m.values()) for s, m in med.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6, help="rounds of the settings")
    ap.add_argument("--settings", default=",".join(SETTINGS),
                    help=f"the settings compared, of {', '.join(SETTINGS)}")
    ap.add_argument("--bench-rounds", type=int, default=7,
                    help="rotated blocks of each bench company run (its --rounds)")
    ap.add_argument("--host-min", type=float, default=1.7,
                    help="a round counts where every run's host check read at least this")
    ap.add_argument("-o", "--output", type=Path, default=None)
    a = ap.parse_args(argv)
    order = [s for s in a.settings.split(",") if s]
    unknown = [s for s in order if s not in SETTINGS]
    if unknown or not order:
        ap.error(f"--settings: unknown {unknown}; choose from {', '.join(SETTINGS)}")
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in order}
    for r in range(a.rounds):
        for s in order[r % len(order):] + order[:r % len(order)]:
            runs[s].append(run_one(s, a.bench_rounds))
        print(f"round {r + 1}/{a.rounds}: host check "
              + ", ".join(f"{s} {runs[s][-1]['host_check']:.2f}" for s in order),
              file=sys.stderr)
    summary = summarize(runs, a.host_min)
    print(f"{'ms per iteration':18s}" + "".join(f"{k:>14s}" for k in LABELS))
    for s, m in summary["median_ms"].items():
        print(f"{s:18s}" + "".join(f"{m[k]:14.2f}" for k in LABELS))
    print(f"(medians of {summary['used_rounds']} of {summary['rounds']} rounds; "
          f"{summary['clean_rounds']} with a quiet host)")
    if a.output:
        cpus = sorted({r["cpu"] for v in runs.values() for r in v if r.get("cpu")})
        a.output.write_text(json.dumps({"benchmark": "torch_settings", "cpu": cpus,
                                        "runs": runs, "summary": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
