"""Per-event cost of PHOLD (work=0) built three ways, measured in one process.

* ``sdk``: PHOLD's C sources copied to a folder outside the package and built
  with the model SDK (``seer_env.sdk.load``), as a user's model is;
* ``shipped``: the ``phold_v0`` extension built with the package (setup.py);
* ``monolithic`` (optional): the package as it was before models became
  folders -- the runtime and every model compiled into one ``_native``
  extension -- built from the git history (``--monolithic-rev``, default the
  last such commit) with the same compiler flags.

Every configuration steps the same PHOLD (4096 entities, 4 events each,
remote 0.5, lookahead = mean = 1) in blocks of consecutive steps, the blocks
rotated; the figures are medians of ns per event.  Run on a quiet machine::

    python benchmarks/bench_sdk.py [--rounds 15] [--threads 1]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import seer_env
from seer_env import registry, sdk
from seer_env.registry import Runtime

ROOT = Path(__file__).resolve().parent.parent
CFG = dict(num_entities=4096, events_per_entity=4, remote=0.5, mean=1.0, lookahead=1.0, work=0,
           step_duration=8.0)


class Stepper:
    """One configuration: reset once, then blocks of steps; ns per event."""

    def __init__(self, step: Any, events: Any) -> None:
        self.step, self.events = step, events

    def block(self, n: int) -> float:
        e0 = self.events()
        t0 = time.perf_counter_ns()
        for _ in range(n):
            self.step()
        return (time.perf_counter_ns() - t0) / (self.events() - e0)


def runtime_stepper(native: Any, threads: int) -> Stepper:
    rt = Runtime(native, CFG, 1, "serial" if threads == 1 else "parallel", threads)
    rt.reset([1])
    rt.actions[:] = 0
    return Stepper(rt.step, lambda: rt.stats()["events"])


def monolithic_stepper(rev: str, tmp: Path, threads: int) -> Stepper | None:
    """The pre-SDK ``_native`` module of ``rev``, driven through its own cffi API."""
    src = tmp / "mono"
    try:
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"monolithic build skipped: no git history here ({exc})")
        return None
    src.mkdir()
    subprocess.run(["tar", "-x", "-C", str(src)], input=tar, check=True)
    code = ("import sys; sys.path.insert(0, 'native'); from build_ffi import ffibuilder; "
            f"ffibuilder.compile(tmpdir={str(src)!r})")
    subprocess.run([sys.executable, "-c", code], cwd=src, check=True, capture_output=True,
                   env={"SEER_BUILD_ABS": "1", "PATH": "/usr/bin:/bin"})
    so = next((src / "seer_env").glob("_native*.so"))
    # its init function is PyInit__native: a package of its own keeps it apart
    # from the installed seer_env
    pkg = type(sys)("_seer_mono")
    pkg.__path__ = [str(so.parent)]
    sys.modules["_seer_mono"] = pkg
    spec = importlib.util.spec_from_file_location("_seer_mono._native", so)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ffi, lib = mod.ffi, mod.lib
    cfg = ffi.new("seer_phold_config *")
    for k, v in CFG.items():
        setattr(cfg, k, v)
    out = ffi.new("seer_runtime **")
    err = ffi.new("char[]", 512)
    ex = lib.SEER_EXECUTOR_SERIAL if threads == 1 else lib.SEER_EXECUTOR_PARALLEL
    rc = lib.seer_runtime_create(lib.seer_model_ptr_phold(), cfg, ffi.sizeof(cfg[0]), 1, ex,
                                 threads, 0, out, err, 512)
    assert rc == 0, ffi.string(err)
    h = ffi.gc(out[0], lib.seer_runtime_destroy)
    seeds = ffi.new("uint64_t[1]", [1])
    assert lib.seer_runtime_reset(h, seeds, ffi.NULL) == 0
    st = ffi.new("seer_stats *")

    def events() -> int:
        lib.seer_runtime_stats(h, st)
        return int(st.events)

    def step() -> None:
        assert lib.seer_runtime_step(h, ffi.NULL) == 0

    stepper = Stepper(step, events)
    stepper.keep = (mod, h)  # type: ignore[attr-defined]
    return stepper


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--steps", type=int, default=3, help="steps per block")
    p.add_argument("--threads", type=int, default=1, help="1: serial executor")
    p.add_argument("--monolithic-rev", default="06d3f34",
                   help="commit of the monolithic build ('' to skip)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        user = tmpd / "phold_copy"
        user.mkdir()
        for f in registry.get("phold_v0").folder.glob("*.[ch]"):
            shutil.copy(f, user)
        steppers = {
            "sdk": runtime_stepper(sdk.load(user, log=lambda m: None).native, a.threads),
            "shipped": runtime_stepper(registry.native_model("phold_v0"), a.threads),
        }
        if a.monolithic_rev:
            mono = monolithic_stepper(a.monolithic_rev, tmpd, a.threads)
            if mono is not None:
                steppers["monolithic"] = mono
        for s in steppers.values():
            s.block(2)
        samples: dict[str, list[float]] = {k: [] for k in steppers}
        names = list(steppers)
        for r in range(a.rounds):
            for k in names[r % len(names):] + names[:r % len(names)]:
                steppers[k].block(a.steps)  # warm its caches after the others ran
                samples[k].append(steppers[k].block(a.steps))
        med = {k: statistics.median(v) for k, v in samples.items()}
        ex = "serial" if a.threads == 1 else f"parallel-{a.threads}"
        print(f"PHOLD 4096 entities, work=0, {ex}, seer_env {seer_env.__version__}: "
              f"median ns per event over {a.rounds} rotated blocks of {a.steps} steps")
        for k in names:
            print(f"  {k:<11} {med[k]:7.1f} ns/event   ratio to shipped "
                  f"{med[k] / med['shipped']:.3f}   (spread {np.percentile(samples[k], 25):.1f}"
                  f"-{np.percentile(samples[k], 75):.1f})")


if __name__ == "__main__":
    main()
