"""The batched env's arrays in and out of its runtime's buffers.

`SeerVectorEnv` (`seer_env.faces.vector`) keeps the state of its instances
(resets, autoresets, seeds, sends in flight, snapshots); what it reads from
its users and hands back to them goes through these functions, each a
function of its runtime (a `Runtime`) and the arguments of the call:

* `write_group_actions`, `write_flat_actions` -- actions checked and written
  into the action buffer (every array checked before any is written; for a
  whole batch of a flat model the env tries the C kernel first);
* `instance_ids` -- the ``env_ids`` of a ``send``, checked;
* `by_group` -- a call's outputs as a structured model gives them (the
  action masks in ``infos``; with groups, everything split by group);
* `final_outputs` -- SAME_STEP's final observations and infos, in the same
  layout;
* `gather` -- the rows of the instances a ``recv`` returns.

```python
import numpy as np
from seer_env.envs import phold_v0
from seer_env.faces.vector_arrays import write_flat_actions

venv = phold_v0.vector_env(4, num_entities=16)
venv.reset(seed=0)
write_flat_actions(venv.runtime, np.zeros((2, 16), np.int64), np.array([1, 3]))
```

Part of `seer_env.faces`; a split of the batched env by concern.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .._bind import kernels as _kernels
from ..errors import InvalidActionError
from .flat_actions import Flat
from .spaces import _to_float32

if TYPE_CHECKING:  # pragma: no cover
    from .._bind.runtime import Runtime

__all__ = ["by_group", "gather", "instance_ids", "write_flat_actions", "write_group_actions"]


def write_group_actions(rt: Runtime, name: str, actions: Any,
                        rows: np.ndarray | None = None,
                        flat: Mapping[int, Flat] | None = None) -> None:
    """Actions of a structured model (``name``: the model's, for the messages):
    one array per group (a dict keyed by group name; a model with one group also
    takes the array itself), ``(B, count)`` ints (discrete), ``(B, count,
    components)`` ints (multi-discrete) or ``(B, count, dim)`` floats (box).
    Every array is checked before any is written.  ``rows``: the instances the
    actions are for (``send``; ``B`` is their number), else all.  ``flat``:
    the groups flattened (``flatten_actions``), whose arrays are ``(B, count)``
    joint actions, checked and written as their components."""
    groups = rt.sizes.groups
    flat = flat or {}
    names = [g.name for g in groups]
    if not len(groups) > 1 and not isinstance(actions, Mapping):
        actions = {names[0]: actions}
    if not isinstance(actions, Mapping):
        raise InvalidActionError(
            f"{name}: actions must be a dict group -> array with the "
            f"groups {names}, got {type(actions).__name__}")
    try:
        keys = list(actions)
    except Exception as exc:
        raise InvalidActionError(f"the actions' keys cannot be read: {exc!r}") from exc
    if sorted(map(str, keys)) != sorted(names) or len(keys) != len(names):
        raise InvalidActionError(
            f"{name}: actions must have one array per group {names}, got "
            f"keys {keys}")
    staged = []
    for gi, g in enumerate(groups):
        try:
            arr = np.asarray(actions[g.name])
        except Exception as exc:
            raise InvalidActionError(
                f"actions of group {g.name!r} cannot be read as an array: {exc!r}") from exc
        B = rt.num_instances if rows is None else len(rows)
        f = flat.get(gi)
        # a flattened group's arrays are (B, count) joint actions: checked as
        # a discrete group's, then as joint actions, and staged as components
        kind = "discrete" if f is not None else g.action_kind
        want = (B, g.count) if kind == "discrete" else (B, g.count, g.action_dim)
        if kind == "box":
            if arr.dtype.kind not in "fiu":
                raise InvalidActionError(
                    f"actions of group {g.name!r} must be real numbers, got {arr.dtype}")
        elif arr.dtype.kind not in "iu":
            raise InvalidActionError(
                f"actions of group {g.name!r} must be integers, got dtype {arr.dtype}")
        if arr.shape != want:
            raise InvalidActionError(
                f"actions of group {g.name!r} must have shape {want}, got {arr.shape}")
        if f is not None:  # in [0, prod(nvec)), and allowed by the joint masks
            comps = f.checked_components(arr, f"{name}: actions of group {g.name!r}:")
            if g.mask_len and rt.enforce_masks:  # named as the joint action given
                sel = slice(None) if rows is None else rows
                f.refuse_forbidden(arr, rt.mask[sel, g.first:g.first + g.count],
                                   rt.alive[sel, g.first:g.first + g.count],
                                   _batched_agent(name, g.name, rows))
            staged.append(comps)
            continue
        if kind != "box" and arr.size and (arr.min() < -(2**31) or arr.max() >= 2**31):
            raise InvalidActionError(f"actions of group {g.name!r} out of int32 range")
        staged.append(_to_float32(arr) if g.action_kind == "box" else arr)
    for view, arr in zip(rt.group_actions, staged, strict=True):
        if rows is None:
            view[...] = arr
        else:
            view[rows] = arr


def _batched_agent(model: str, group: str, rows: np.ndarray | None
                   ) -> Callable[[tuple[int, ...]], str]:
    """Names the agent at ``(row, i)`` of a group's action array."""
    def what(at: tuple[int, ...]) -> str:
        inst = at[0] if rows is None else int(rows[at[0]])
        return f"{model}: the action of {group}_{at[1]} of instance {inst}"
    return what


def write_flat_actions(rt: Runtime, actions: Any, rows: np.ndarray | None = None) -> None:
    """Actions of a model without groups, masks or multi-discrete actions, checked:
    ``(B, A)`` ints or ``(B, A, dim)`` floats (``rows`` as `write_group_actions`'s)."""
    sz = rt.sizes
    try:
        arr = np.asarray(actions)
    except Exception as exc:  # ragged nested sequences, an __array__ that fails
        raise InvalidActionError(f"actions cannot be read as an array: {exc!r}") from exc
    B = rt.num_instances if rows is None else len(rows)
    if sz.action_kind == "discrete":
        want: tuple[int, ...] = (B, sz.num_agents)
        if arr.dtype.kind not in "iu":  # not bool, timedelta, complex, object
            raise InvalidActionError(f"actions must be integers, got dtype {arr.dtype}")
    else:
        want = (B, sz.num_agents, sz.action_dim)
        if arr.dtype.kind not in "fiu":
            raise InvalidActionError(f"actions must be real numbers, got dtype {arr.dtype}")
    if arr.shape != want:
        raise InvalidActionError(f"actions must have shape {want}, got {arr.shape}")
    if sz.action_kind == "discrete" and arr.size and (
        arr.min() < -(2**31) or arr.max() >= 2**31
    ):
        raise InvalidActionError("discrete actions out of int32 range")
    val = arr if sz.action_kind == "discrete" else _to_float32(arr)
    if rows is None:
        rt.actions[:] = val
    else:
        rt.actions[rows] = val


def instance_ids(env_ids: Any, all_ids: np.ndarray, name: str) -> np.ndarray:
    """``env_ids`` as an int32 array of distinct instance ids (None: a copy of
    ``all_ids``, every instance's id)."""
    if env_ids is None:
        return all_ids.copy()
    num_envs = len(all_ids)
    try:
        ids = np.asarray(env_ids)
    except Exception as exc:
        raise InvalidActionError(f"env_ids cannot be read as an array: {exc!r}") from exc
    if ids.ndim == 0:
        ids = ids.reshape(1)
    if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
        raise InvalidActionError(
            f"env_ids must be a non-empty 1-D array of ints (instance ids), got "
            f"{ids.dtype} {ids.shape}")
    bad = ids[(ids < 0) | (ids >= num_envs)]
    if bad.size:
        raise InvalidActionError(
            f"{name}: env_ids {bad.tolist()} are not instances "
            f"(num_envs={num_envs}: ids 0..{num_envs - 1})")
    ids = ids.astype(np.int32)
    counts = np.bincount(ids, minlength=num_envs)
    if len(ids) != num_envs - int((counts == 0).sum()):  # a repeated id
        raise InvalidActionError(
            f"{name}: env_ids {np.flatnonzero(counts > 1).tolist()} appear "
            "more than once in one send()")
    return ids


def _split(groups: Any, a: np.ndarray | None, dim: str | None = None) -> dict[str, Any] | None:
    """``(B, A, ...)`` rows split by group: ``{name: (B, count, ...)}`` views
    (``dim``: the group's width of the last axis, e.g. ``"obs_dim"``); None
    stays None (a reset has no rewards)."""
    if a is None:
        return None
    return {g.name: a[:, g.first:g.first + g.count] if dim is None else
            a[:, g.first:g.first + g.count, :getattr(g, dim)] for g in groups}


def _group_infos(groups: Any, alive: np.ndarray, active: np.ndarray,
                 info: np.ndarray) -> dict[str, Any]:
    """A model with groups: ``alive`` and ``active`` by group, and each group's
    own info values (``infos[group][name]``, ``(B, count)``) from ``info``
    ``(B, A, info_dim)``."""
    grouped: dict[str, Any] = {"alive": _split(groups, alive), "active": _split(groups, active)}
    for g in groups:
        grouped[g.name] = {k: info[:, g.first:g.first + g.count, j]
                           for j, k in enumerate(g.info_names)}
    return grouped


def final_outputs(rt: Runtime, obs: np.ndarray, alive: np.ndarray, active: np.ndarray,
                  info: np.ndarray) -> tuple[Any, dict[str, Any]]:
    """SAME_STEP's ``infos["final_obs"]`` and ``infos["final_info"]`` from the
    final step's rows (``(B, A, ...)`` copies; zeros in the rows of instances
    that did not finish): the flat arrays and infos of a one-group model, or,
    with groups, the observations and infos split by group as `by_group`
    splits a step's (``final_info["alive"][group]``,
    ``final_info[group][name]``)."""
    groups = rt.sizes.groups
    if len(groups) > 1:
        return _split(groups, obs, "obs_dim"), _group_infos(groups, alive, active, info)
    final: dict[str, Any] = {"alive": alive, "active": active}
    for j, name in enumerate(rt.info_names):
        final[name] = info[:, :, j]
    return obs, final


#: the keys SAME_STEP adds to a step's infos (already in the model's layout)
_FINAL_KEYS = ("final_obs", "_final_obs", "final_info", "_final_info")


def by_group(out: tuple[Any, ...], rt: Runtime, copy: bool, rows: np.ndarray | None = None,
             flat: Mapping[int, Flat] | None = None) -> tuple[Any, ...]:
    """A structured model's outputs: the action masks in ``infos`` and, for a
    model with groups, every array split by group (dicts keyed by group
    name; each group's own observation and info elements).  ``rows``: the
    instances ``out`` holds (``recv``), else all of them (then ``copy``, the
    env's, says whether the arrays added are copies or read-only views).
    SAME_STEP's final observations and infos (`final_outputs`) pass through.
    ``flat``: the groups flattened (``flatten_actions``), whose masks are their
    joint masks (new arrays)."""
    obs, rew, term, trunc, infos = out
    sz = rt.sizes
    groups = sz.groups
    flat = flat or {}
    if not len(groups) > 1:
        if sz.mask_dim:
            raw = rt.mask if rows is None else rt.mask[rows]
            infos["action_mask"] = flat[0].joint_mask(raw) if flat else \
                _kernels.view_or_copy(raw, copy) if rows is None else raw
        return obs, rew, term, trunc, infos

    info = rt.info[rows] if rows is not None else rt.info.copy() if copy \
        else _kernels.view_or_copy(rt.info, copy)
    grouped = _group_infos(groups, infos["alive"], infos["active"], info)
    if sz.mask_dim:
        mask = _kernels.view_or_copy(rt.mask, copy) if rows is None else rt.mask[rows]
        grouped["action_mask"] = {
            g.name: mask[:, g.first:g.first + g.count, :g.mask_len] if gi not in flat else
            flat[gi].joint_mask(mask[:, g.first:g.first + g.count]) for gi, g in enumerate(groups)
            if g.mask_len}
    for k in _FINAL_KEYS:
        if k in infos:
            grouped[k] = infos[k]
    return (_split(groups, obs, "obs_dim"), _split(groups, rew), _split(groups, term),
            _split(groups, trunc), grouped)


def gather(rt: Runtime, ids: np.ndarray, finals: dict[int, tuple[np.ndarray, ...]]
           ) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
    """A ``recv``'s outputs, always copies: rows ``ids`` of the runtime's
    buffers (and, SAME_STEP, the final rows of the instances their step
    finished, ``finals``), before `by_group`."""
    lo = int(ids[0])
    if int(ids[-1]) - lo == len(ids) - 1 and (len(ids) < 3 or (np.diff(ids) == 1).all()):
        sel: Any = slice(lo, lo + len(ids))  # consecutive ids (two halves): block copies

        def take(a: np.ndarray) -> np.ndarray:
            return a[sel].copy()
    else:
        sel = ids

        def take(a: np.ndarray) -> np.ndarray:
            return a[sel]  # fancy indexing: a copy
    obs, rew, term, trunc = take(rt.obs), take(rt.reward), take(rt.terminated), \
        take(rt.truncated)
    infos: dict[str, Any] = {"alive": take(rt.alive), "active": take(rt.active)}
    info_names = rt.info_names
    if not len(rt.sizes.groups) > 1:
        inf = rt.info[sel].transpose(2, 0, 1).copy(order="C")  # a copy, always
        for j, name in enumerate(info_names):
            infos[name] = inf[j]
    if finals:
        fin = np.array([i in finals for i in ids.tolist()])
        final_obs = np.zeros_like(obs)
        final_alive = np.zeros_like(infos["alive"])
        final_active = np.zeros_like(infos["active"])
        final_inf = np.zeros((len(ids), *rt.info.shape[1:]), rt.info.dtype)
        for k, i in enumerate(ids.tolist()):
            if i in finals:
                o, r, te, tr, al, ac, inf_i = finals[i]
                rew[k], term[k], trunc[k], final_obs[k] = r, te, tr, o
                final_alive[k], final_active[k], final_inf[k] = al, ac, inf_i
        final_obs, final_info = final_outputs(rt, final_obs, final_alive, final_active,
                                              final_inf)
        infos["final_obs"], infos["_final_obs"] = final_obs, fin
        infos["final_info"], infos["_final_info"] = final_info, fin.copy()
    return obs, rew, term, trunc, infos
