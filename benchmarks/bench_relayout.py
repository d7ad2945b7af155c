"""Pending events moved into address order (``SEER_RELAYOUT``): paired, in one process.

For each executor, envs made with the relayout off (``SEER_RELAYOUT=0``) and
envs made with it on (``SEER_RELAYOUT=1``: the serial executor's events
relaid whatever their size, which by default happens only where they outgrow
a core's L2, as on PCS 64x64 but not 32x32; a pool's at its orderings, as
by default), alike otherwise, step in rotated blocks of consecutive steps; a
configuration's figure is the median of its blocks, its ratio on/off time
(below 1: the relayout is faster).  Alone and
beside a CPU burner process at 100% duty.  Then the serial executor after a
pool (40 steps of parallel-2, a switch to serial, 100 steps) against a
serial env that never left it, both with it on and both with it off; and
what a reset of the serial executor costs with and without it.

    python benchmarks/bench_relayout.py                 # PCS 64x64 and 32x32
    python benchmarks/bench_relayout.py --json benchmarks/results/relayout.json

A benchmark, never a test: it prints ratios and asserts nothing.  A host
check (parallel-2 against serial alone, rotated blocks) runs first and last:
on a quiet 2-core machine it is about 1.6-1.8.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from seer_env.perf.company import Stepper, Workload


def make_with(wl: Workload, label: str, name: str, value: str | None) -> Stepper:
    """A stepper of ``label`` made with the variable ``name`` (a runtime
    reads it when it is made) set to ``value`` (None: unset); the process's
    own value back after."""
    old = os.environ.pop(name, None)
    if value is not None:
        os.environ[name] = value
    try:
        return Stepper(wl.make(label))
    finally:
        os.environ.pop(name, None)
        if old is not None:
            os.environ[name] = old


def _make(wl: Workload, label: str, relayout: str | None) -> Stepper:
    """A stepper of ``label`` made with SEER_RELAYOUT=relayout (None: unset)."""
    return make_with(wl, label, "SEER_RELAYOUT", relayout)


def _blocks(groups: Mapping[str, Sequence[Callable[[], None]]], rounds: int,
            block: int) -> dict[str, float]:
    """Median ms per step of each group's steppers, rotated blocks."""
    items = [(name, s) for name, ss in groups.items() for s in ss]
    times: dict[str, list[float]] = {name: [] for name in groups}
    for r in range(rounds):
        order = items if r % 2 == 0 else items[::-1]
        for name, s in order:
            t0 = time.perf_counter()
            for _ in range(block):
                s()
            times[name].append((time.perf_counter() - t0) / block * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


@contextmanager
def _burner() -> Iterator[None]:
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        yield
    finally:
        p.kill()
        p.wait()


def host_check(rounds: int = 6) -> float:
    """parallel-2 against serial alone (serial's time over the pool's)."""
    wl = Workload()
    st = {label: Stepper(wl.make(label)) for label in ("serial", "parallel-2")}
    for s in st.values():
        for _ in range(50):
            s()
    m = _blocks({k: [v] for k, v in st.items()}, rounds, 100)
    for s in st.values():
        s.venv.close()
    return m["serial"] / m["parallel-2"]


def paired(wl: Workload, label: str, rounds: int, block: int) -> dict[str, float]:
    """Two envs off and two on (SEER_RELAYOUT=0 / 1), warmed 50 steps: the
    medians and on/off."""
    groups: dict[str, list[Stepper]] = {
        "off": [_make(wl, label, "0") for _ in range(2)],
        "on": [_make(wl, label, "1") for _ in range(2)]}
    for _ in range(50):
        for ss in groups.values():
            for s in ss:
                s()
    m = _blocks(groups, rounds, block)
    for ss in groups.values():
        for s in ss:
            s.venv.close()
    return {"off_ms": m["off"], "on_ms": m["on"], "ratio": m["on"] / m["off"]}


def after_pool(wl: Workload, relayout: str | None, rounds: int, block: int) -> dict[str, float]:
    """The serial executor after 40 steps of parallel-2 against a fresh one."""
    a = _make(wl, "parallel-2", relayout)
    b = _make(wl, "serial", relayout)
    for _ in range(40):
        a()
    a.venv.runtime.set_executor("serial")
    for _ in range(100):
        a()
        b()
    m = _blocks({"after": [a], "fresh": [b]}, rounds, block)
    a.venv.close()
    b.venv.close()
    return {"after_ms": m["after"], "fresh_ms": m["fresh"], "ratio": m["after"] / m["fresh"]}


def reset_cost(wl: Workload, resets: int = 10) -> dict[str, float]:
    """Median ms of a reset of the serial executor, off and on."""
    st = {"off": _make(wl, "serial", "0"), "on": _make(wl, "serial", "1")}
    times: dict[str, list[float]] = {k: [] for k in st}
    for r in range(resets):
        for name, s in st.items():
            for _ in range(5):
                s()
            t0 = time.perf_counter()
            s.venv.reset(seed=r)
            times[name].append((time.perf_counter() - t0) * 1e3)
    for s in st.values():
        s.venv.close()
    return {f"{k}_ms": statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="64,32", help="PCS grid sizes (default 64,32)")
    ap.add_argument("--labels", default="serial,parallel-2,optimistic-2")
    ap.add_argument("--rounds", type=int, default=12, help="rotated rounds (default 12)")
    ap.add_argument("--block", type=int, default=40, help="steps a block (default 40)")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    out: dict[str, Any] = {"host_check_before": host_check()}
    print(f"host check (parallel-2 / serial alone): {out['host_check_before']:.2f}")
    for size in (int(x) for x in a.sizes.split(",")):
        wl = Workload(config={"width": size, "height": size})
        key = f"pcs{size}"
        res: dict[str, Any] = out.setdefault(key, {})
        for situation in ("alone", "burner"):
            with _burner() if situation == "burner" else _nothing():
                for label in a.labels.split(","):
                    r = paired(wl, label, a.rounds, a.block)
                    res.setdefault(situation, {})[label] = r
                    print(f"{key} {situation:6s} {label:13s} off {r['off_ms']:.3f} ms  "
                          f"on {r['on_ms']:.3f} ms  on/off {r['ratio']:.3f}", flush=True)
                for name, rl in (("after_pool_on", "1"), ("after_pool_off", "0")):
                    r = after_pool(wl, rl, a.rounds, a.block)
                    res.setdefault(situation, {})[name] = r
                    print(f"{key} {situation:6s} {name:15s} serial after a pool "
                          f"{r['after_ms']:.3f} ms, fresh {r['fresh_ms']:.3f} ms: "
                          f"{r['ratio']:.3f}", flush=True)
        res["reset"] = reset_cost(wl)
        rc = res["reset"]
        print(f"{key} reset: off {rc['off_ms']:.2f} ms, on {rc['on_ms']:.2f} ms")
    out["host_check_after"] = host_check()
    print(f"host check (parallel-2 / serial alone): {out['host_check_after']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
            f.write("\n")
    return 0


@contextmanager
def _nothing() -> Iterator[None]:
    yield


if __name__ == "__main__":
    raise SystemExit(main())
