"""Alone stretches (``SEER_POOL_ALONE``): paired, in one process.

For parallel-2 and optimistic-2, two envs made with the stretches off
(``SEER_POOL_ALONE=0``) and two with them on (the default), and two serial
envs, step in rotated blocks of consecutive steps; a configuration's figure
is the median of its blocks: its ratio on/off (below 1: the stretches are
faster) and each one's ratio to the serial executor (serial's time over
theirs, above 1: faster than serial), with the share of the timed steps the
envs with stretches ran alone.  Alone, beside a CPU burner process at 50%
duty, and at 100%; ``torch``: in `bench company`'s training loop (a torch
policy's forward on CPU before every step, an update every 16; the figures
are per iteration).  ``--var`` compares another of the runtime's switches
the same way (``SEER_POOL_ALONE_CPUS``: a stretch's end looking at the
caller's CPUs).

    python benchmarks/bench_alone.py
    python benchmarks/bench_alone.py --json benchmarks/results/alone.json
    python benchmarks/bench_alone.py --var SEER_POOL_ALONE_CPUS --warm 300 --rounds 16 \
        --situations alone,burner-50,burner-100,torch --json benchmarks/results/alone_cpus.json

A benchmark, never a test: it prints ratios and asserts nothing.  A host
check (parallel-2 against serial alone, rotated blocks) runs first and last:
on a quiet 2-core machine it is about 1.6-1.8.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench_relayout import _blocks, _nothing, host_check, make_with

from seer_env.perf.company import Policy, Stepper, TrainingLoop, Workload, burner

Run = Stepper | TrainingLoop
UPDATE_EVERY = 16  # the training loop's updates (bench company's default)


def _make(wl: Workload, label: str, var: str, value: str | None,
          policy: Policy | None) -> Run:
    """A stepper of ``label`` made with ``var``=value (None: unset); with a
    ``policy``, a training loop's iteration around it."""
    s = make_with(wl, label, var, value)
    return s if policy is None else TrainingLoop(s.venv, policy, UPDATE_EVERY)


def _alone_steps(ss: list[Run]) -> int:
    return sum(s.venv.runtime.stats()["alone_steps"] for s in ss)


def paired(wl: Workload, labels: list[str], rounds: int, block: int, var: str = "SEER_POOL_ALONE",
           torch: bool = False, warm: int = 50) -> dict[str, Any]:
    """Serial, and each label off (``var``=0) and on, warmed ``warm`` steps
    each (beside a burner a stretch's length doubles to 256 in some 300):
    medians, ratios."""
    policy = Policy(wl.make("serial")) if torch else None
    groups: dict[str, list[Run]] = {
        "serial": [_make(wl, "serial", var, None, policy) for _ in range(2)]}
    for label in labels:
        groups[f"{label} off"] = [_make(wl, label, var, "0", policy) for _ in range(2)]
        groups[f"{label} on"] = [_make(wl, label, var, None, policy) for _ in range(2)]
    for _ in range(warm):
        for ss in groups.values():
            for s in ss:
                s()
    before = {k: _alone_steps(ss) for k, ss in groups.items()}
    m = _blocks(groups, rounds, block)
    out: dict[str, Any] = {"serial_ms": m["serial"]}
    for label in labels:
        on, off = m[f"{label} on"], m[f"{label} off"]
        steps = _alone_steps(groups[f"{label} on"]) - before[f"{label} on"]
        out[label] = {"off_ms": off, "on_ms": on, "on_over_off": on / off,
                      "off_vs_serial": m["serial"] / off, "on_vs_serial": m["serial"] / on,
                      "alone_share": steps / (2 * rounds * block)}
    for ss in groups.values():
        for s in ss:
            s.venv.close()
    return out


@contextmanager
def _situation(name: str) -> Iterator[None]:
    if name in ("alone", "torch"):
        with _nothing():
            yield
    else:
        with burner(int(name.rsplit("-", 1)[1]) / 100.0):
            yield


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--labels", default="parallel-2,optimistic-2")
    ap.add_argument("--situations", default="alone,burner-50,burner-100")
    ap.add_argument("--rounds", type=int, default=12, help="rotated rounds (default 12)")
    ap.add_argument("--block", type=int, default=32, help="steps a block (default 32)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--warm", type=int, default=50, help="steps each env is warmed (default 50)")
    ap.add_argument("--var", default="SEER_POOL_ALONE",
                    help="the switch compared, =0 (off) against unset (default SEER_POOL_ALONE)")
    a = ap.parse_args(argv)
    out: dict[str, Any] = {"var": a.var, "host_check_before": host_check()}
    print(f"host check (parallel-2 / serial alone): {out['host_check_before']:.2f}")
    wl = Workload()
    for situation in a.situations.split(","):
        with _situation(situation):
            r = paired(wl, a.labels.split(","), a.rounds, a.block, a.var,
                       situation == "torch", a.warm)
        out[situation] = r
        for label in a.labels.split(","):
            x = r[label]
            print(f"{situation:10s} {label:13s} vs serial: off {x['off_vs_serial']:.2f}x  "
                  f"on {x['on_vs_serial']:.2f}x  on/off time {x['on_over_off']:.3f}  "
                  f"alone {x['alone_share']:.0%} of the steps", flush=True)
    out["host_check_after"] = host_check()
    print(f"host check (parallel-2 / serial alone): {out['host_check_after']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
