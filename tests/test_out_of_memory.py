"""Out of memory making an env: `OutOfMemoryError` (a SeerError and a MemoryError)
naming what could not be allocated and its bytes, nothing of the env kept, and a
smaller env working afterwards in the same process.

The real failures run in a child process under an address-space limit
(``RLIMIT_AS``) set just above what the child uses before it makes the env; the
faces' own buffers, smaller than the runtime's (so a limit reaches the runtime's
first), fail on demand in-process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import seer_env
from seer_env._bind import runtime as _runtime
from seer_env.errors import OutOfMemoryError, SeerError

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="RLIMIT_AS and /proc/self/status are Linux's")

# The child: warms up (imports, the model's build, a small env), then limits its
# address space to what it uses now + MARGIN bytes and makes the big env.
CHILD = r"""
import json, resource, sys
import seer_env
from seer_env._bind import runtime as _runtime
from seer_env.envs import pcs_v0
from seer_env.registry import memory_estimate

face, big, margin = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]

def small_env_works():
    env = pcs_v0.parallel_env(width=6, height=6, executor="serial", threads=1)
    obs, _ = env.reset(seed=1)
    obs, *_ = env.step({a: 0 for a in env.agents})
    env.close()
    return len(obs)

def vm_bytes():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))

small_env_works()
B = big.pop("num_envs", 1)
parts = memory_estimate("pcs_v0", big, B)
host = sum(v for k, v in parts.items() if k.endswith(("buffer", "flags", "masks")))
extra = {"host+4MiB": host + (4 << 20)}.get(margin) or int(margin)
base = vm_bytes()
resource.setrlimit(resource.RLIMIT_AS, (base + extra, resource.RLIM_INFINITY))
live = len(_runtime._live_runtimes)
out = {"raised": None}
try:
    if face == "vector":
        env = pcs_v0.vector_env(B, executor="serial", threads=1, **big)
    else:
        env = pcs_v0.parallel_env(executor="serial", threads=1, **big)
except BaseException as exc:
    out = {"raised": type(exc).__name__, "message": str(exc),
           "memory_error": isinstance(exc, MemoryError),
           "seer_error": isinstance(exc, seer_env.SeerError)}
out["live_runtimes_kept"] = len(_runtime._live_runtimes) - live
out["vm_growth"] = vm_bytes() - base
out["small_env_agents"] = small_env_works()  # under the same limit
print(json.dumps(out))
"""


def _child(face: str, big: dict[str, int], margin: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", CHILD, face, json.dumps(big), margin],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_host_buffer_out_of_memory_names_the_buffer_and_closes_nothing_half_made() -> None:
    # 8 instances of a 256 x 256 grid: the action buffer (2 MiB) fits in the
    # 16 MiB allowed, the observation buffer (8 x 65,536 agents x 14 floats) does not
    out = _child("vector", {"num_envs": 8, "width": 256, "height": 256}, str(16 << 20))
    assert out["raised"] == "OutOfMemoryError"
    assert out["memory_error"] and out["seer_error"]
    obs_bytes = 8 * 65536 * 14 * 4
    assert out["message"].startswith(
        f"pcs: out of memory allocating the runtime's observation buffer 'obs' ({obs_bytes} "
        "bytes, (8, 65536, 14) float32); this configuration takes about ")
    assert out["live_runtimes_kept"] == 0
    assert out["vm_growth"] < 1 << 20  # the action buffer made before was freed
    assert out["small_env_agents"] == 36


def test_runtime_out_of_memory_names_its_parts_and_bytes() -> None:
    # the host buffers fit (with 4 MiB to spare); the runtime's own memory
    # (entity states alone: 65,536 x 264 bytes) does not
    out = _child("parallel", {"width": 256, "height": 256}, "host+4MiB")
    assert out["raised"] == "OutOfMemoryError"
    assert out["memory_error"] and out["seer_error"]
    msg = out["message"]
    assert msg.startswith("pcs: out of memory creating the runtime: the runtime's native "
                          "memory (entity states 17301504 bytes, pending events "), msg
    assert "could not be allocated; this configuration takes about " in msg
    assert out["live_runtimes_kept"] == 0
    assert out["vm_growth"] < 1 << 20  # the host buffers went with the failed runtime
    assert out["small_env_agents"] == 36


def test_status_out_of_memory_is_out_of_memory_error() -> None:
    from seer_env._bind.native import error_for
    from seer_env.registry import native_model

    lib = native_model("pcs_v0").lib
    exc = error_for(lib, lib.SEER_E_NOMEM, "out of memory moving instance 0's events")
    assert type(exc) is OutOfMemoryError and isinstance(exc, MemoryError)
    assert isinstance(exc, SeerError)


def _fail_on(monkeypatch: pytest.MonkeyPatch, module: Any, what: str) -> None:
    """Make ``module.alloc_zeros`` run out of memory (for real: a 1 PiB array)
    when it allocates ``what``."""
    real = _runtime.alloc_zeros

    def alloc(owner: str, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        return real(owner, name, (1 << 50,) if name == what else shape, dtype)

    monkeypatch.setattr(module, "alloc_zeros", alloc)


def _runtimes_made_since(before: list[Any]) -> list[Any]:
    """The runtimes not closed that were made after ``before`` was taken.

    A count would do only on a quiet heap: an earlier test's env dropped
    unclosed in a reference cycle leaves the set when the collector runs,
    which may be in the middle of a test (the count then read one fewer)."""
    return [r for r in _runtime._live_runtimes if all(r is not b for b in before)]


@pytest.mark.parametrize("what", ["the autoreset flags", "the final-step rewards",
                                  "the final-step truncations", "the pending-instance flags"])
def test_vector_face_buffer_out_of_memory_closes_the_runtime(
        monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    from seer_env.envs import pcs_v0
    from seer_env.faces import common as env_mod

    live = list(_runtime._live_runtimes)  # strong references: none leaves mid-test
    _fail_on(monkeypatch, env_mod, what)
    with pytest.raises(OutOfMemoryError) as info:
        pcs_v0.vector_env(2, width=3, height=3, threads=1)
    assert str(info.value) == (f"pcs_v0: out of memory allocating {what} "
                               f"({1 << 50 if 'rewards' not in what else 4 << 50} bytes, "
                               f"({1 << 50},) {'float32' if 'rewards' in what else 'bool'})")
    del info
    assert _runtimes_made_since(live) == []  # the runtime made before was closed
    monkeypatch.undo()
    venv = pcs_v0.vector_env(2, width=3, height=3, threads=1)
    venv.reset(seed=0)
    venv.close()


def test_agent_vector_face_out_of_memory_closes_the_batched_env(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from seer_env.envs import pcs_v0
    from seer_env.faces import gym_vector

    live = list(_runtime._live_runtimes)  # strong references: none leaves mid-test
    _fail_on(monkeypatch, gym_vector, "the all-agents mask")
    with pytest.raises(OutOfMemoryError, match=r"^pcs_v0: out of memory allocating the "
                       r"all-agents mask \(1125899906842624 bytes"):
        pcs_v0.agent_vector_env(2, width=3, height=3, threads=1)
    assert _runtimes_made_since(live) == []


def test_torchrl_face_out_of_memory_closes_the_batched_env(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torchrl")
    from seer_env.adapters import torchrl as torchrl_mod

    live = list(_runtime._live_runtimes)  # strong references: none leaves mid-test
    _fail_on(monkeypatch, torchrl_mod, "the truncations of group 'cell'")
    with pytest.raises(OutOfMemoryError, match=r"^pcs_v0: out of memory allocating the "
                       r"truncations of group 'cell' \(1125899906842624 bytes"):
        torchrl_mod.SeerTorchEnv("pcs_v0", 2, width=3, height=3, threads=1)
    assert _runtimes_made_since(live) == []


def test_out_of_memory_error_is_public() -> None:
    assert issubclass(seer_env.errors.OutOfMemoryError, (SeerError, MemoryError))
    assert "OutOfMemoryError" in seer_env.errors.__all__
