"""The checker's runs: a model run on an executor with its outputs kept
(`run_model`), and the first difference between two runs (`first_difference`).

Part of [`seer_env.check`][seer_env.check] (its module docstring tells the whole story).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._bind.native import NativeModel
from ..errors import SeerError
from ..registry import Runtime
from . import bounds as check_bounds

# -- driving runs -----------------------------------------------------------------------


@dataclass
class _Run:
    """Every output of every step of one run (and where it stopped, if it failed)."""

    steps: list[dict[str, np.ndarray]]
    error: BaseException | None = None


def _grab(rt: Runtime) -> dict[str, np.ndarray]:
    B = rt.num_instances
    return {
        "obs": rt.obs.copy(), "reward": rt.reward.copy(), "terminated": rt.terminated.copy(),
        "truncated": rt.truncated.copy(), "info": rt.info.copy(), "alive": rt.alive.copy(),
        "active": rt.active.copy(), "mask": rt.mask.copy(),
        "state": np.stack([np.frombuffer(rt.entity_states(i), np.uint8) for i in range(B)]),
        "global": np.stack([rt.global_state(i) for i in range(B)]),
    }


#: Where a run is, for `run_model`'s ``progress``: creating its runtime,
#: resetting (all instances at step 0, the masked ones after step k), stepping,
#: reading the outputs (global_state runs then); and, after it, the checker
#: inspecting its outputs (``Pass.inspect``).
CREATE, RESET, STEP, OUTPUTS, INSPECT = 0, 1, 2, 3, 4


def run_model(native: NativeModel, config: Mapping[str, Any], *, executor: str, threads: int,
              batch: int, seed: int, steps: int, action_seed: int, check: int = 0,
              shuffle_seed: int = 0, reset_every: int = 17,
              progress: Callable[[int, int], None] | None = None) -> _Run:
    """One run: reset, ``steps`` random-action steps with masked resets every
    ``reset_every`` steps (0: none) and autoresets of finished instances.

    ``progress(k, stage)`` is called before each stage of step ``k`` (0: the
    first reset): `CREATE`, `RESET`, `STEP`, `OUTPUTS`.
    """
    note = progress or (lambda k, stage: None)
    out: list[dict[str, np.ndarray]] = []
    note(0, CREATE)
    rt = Runtime(native, config, batch, executor, threads, None, check=check,
                 shuffle_seed=shuffle_seed, oversubscribe=True)
    rng = np.random.default_rng(action_seed)
    seeds = [seed + i for i in range(batch)]
    try:
        note(0, RESET)
        rt.reset(seeds)
        note(0, OUTPUTS)
        out.append(_grab(rt))
        for k in range(1, steps + 1):
            # Box values spill past the bounds: the runtime's clipping is exercised too
            rt.actions[:] = check_bounds.random_actions(rng, rt, spill=0.25)
            finished = ~rt.alive.any(axis=1)
            forced = np.zeros(batch, bool)
            if reset_every and k % reset_every == 0:
                forced[k // reset_every % batch] = True
            again = finished | forced
            if (~again).any():
                note(k, STEP)
                rt.step(~again)
            if again.any():
                note(k, RESET)
                rt.reset([s + 7919 * k for s in seeds], again)
            note(k, OUTPUTS)
            out.append(_grab(rt))
    except SeerError as exc:
        return _Run(out, exc)
    finally:
        rt.close()
    return _Run(out)


def first_difference(a: _Run, b: _Run, native: NativeModel, entity_size: int,
                     names: Sequence[str]) -> str | None:
    """Where two runs first differ (bit for bit), in words, with the hooks
    that made the difference where the outputs tell; None when identical."""
    for k, (x, y) in enumerate(zip(a.steps, b.steps, strict=False)):
        for key in ("obs", "reward", "terminated", "truncated", "info", "alive", "active",
                    "mask", "global", "state"):
            u, v = x[key], y[key]
            ub = u.view(np.uint8) if u.dtype.kind == "f" else u
            vb = v.view(np.uint8) if v.dtype.kind == "f" else v
            if np.array_equal(ub, vb):
                continue
            if key == "state":
                inst = int(np.argwhere((u != v).any(axis=1))[0][0])
                return (f"step {k}, instance {inst}: "
                        f"{_state_difference(k, u[inst], v[inst], native, entity_size)}")
            idx = tuple(int(i) for i in np.argwhere(
                (u.view(np.uint32 if u.dtype.itemsize == 4 else np.uint64) if u.dtype.kind == "f"
                 else u) != (v.view(np.uint32 if v.dtype.itemsize == 4 else np.uint64)
                             if v.dtype.kind == "f" else v))[0])
            inst = idx[0]
            if key == "global":
                text = f"step {k}, instance {inst}, global[{idx[1]}]"
            else:
                agent = names[idx[1]] if len(idx) > 1 and idx[1] < len(names) else "-"
                elem = list(idx[2:]) if len(idx) > 2 else ""
                text = f"step {k}, instance {inst}, agent {agent}, {key}{elem}"
            text += f": {u[idx].item()!r} vs {v[idx].item()!r}"
            su, sv = x["state"][inst], y["state"][inst]
            if not np.array_equal(su, sv):
                return (f"{text}; {_state_difference(k, su, sv, native, entity_size, 'too')}")
            hook = ("global_state" if key == "global" else
                    "observe (or the boundary hook, whose instance data it may read)")
            return (f"{text}; the entity states are equal: {hook} computed it from something "
                    "else")
    if len(a.steps) != len(b.steps):
        return f"one run stopped after {min(len(a.steps), len(b.steps)) - 1} steps"
    return None


def _state_difference(k: int, u: np.ndarray, v: np.ndarray, native: NativeModel,
                      entity_size: int, too: str = "") -> str:
    """Which entity's state differs first between two instances' state bytes,
    which fields, and which hooks wrote it."""
    dt = native.state_dtype(entity_size)
    su = np.frombuffer(u.tobytes(), dtype=dt)
    sv = np.frombuffer(v.tobytes(), dtype=dt)
    e = int(np.argwhere(su.view(np.uint8).reshape(len(su), -1) !=
                        sv.view(np.uint8).reshape(len(sv), -1))[0][0])
    fields = [n for n in (dt.names or ()) if su[e][n].tobytes() != sv[e][n].tobytes()]
    what = f" (fields {', '.join(fields)})" if fields else ""
    diff = f"the state of entity {e} differs{' ' + too if too else ''}{what}"
    if k == 0:
        return f"{diff} after the reset: its init call wrote other values"
    return (f"{diff} after step {k}: its act or handle calls in that step wrote other values "
            "(or another entity's handler wrote there)")
