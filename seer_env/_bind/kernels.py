"""The env faces' per-step kernels: ``seer_env._fast``'s, or NumPy stand-ins.

A step of the dict API turns a dict of actions into the runtime's action
buffer and its output buffers into five dicts keyed by agent; a step of the
batched API copies the buffers into fresh arrays.  ``seer_env._fast`` (a
plain CPython extension built with the package) does each in one C call.
This module is the one interface `seer_env.env` calls, whichever runs:

* `vec_outputs` -- a batched call's outputs, and the finished instances;
* `dict_outputs` -- a ParallelEnv call's five dicts, and how many agents finished;
* `copy_actions` -- batched actions into the action buffer;
* `dict_actions` -- a dict of actions into the action buffer;
* `finished` -- which instances have no live agent.

Each is ``_fast``'s function where the extension imports, else the NumPy
function of the same name here (`NUMPY`), whose results are the same
for every input the env passes.  The two action kernels may decline (return
False): the C ones decline anything unusual, the NumPy ones everything, and
the env's own checked path then writes the actions or raises the precise
error.  Tests run both: they patch this module's names with `NUMPY`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

try:  # the kernels in C (built with the package)
    from .. import _fast  # type: ignore[attr-defined]  # a C extension: no source, no stub
except ImportError:  # pragma: no cover - a source tree without built extensions
    _fast = None

#: The kernels, each a name of this module.
NAMES = ("vec_outputs", "dict_outputs", "copy_actions", "dict_actions", "finished")


# -- the batched API --------------------------------------------------------------------


def view_or_copy(a: np.ndarray, copy: bool) -> np.ndarray:
    """A fresh copy of ``a`` (``copy`` true), else a read-only view of it."""
    if copy:
        return a.copy()
    v = a.view()
    v.flags.writeable = False
    return v


def batched_infos(bufs: tuple[Any, ...], copy: bool) -> dict[str, Any]:
    """The infos of a batched call from the runtime's buffers ``bufs`` (as for
    `vec_outputs`): ``alive`` and ``active`` (copies, or read-only views),
    then each info value as a C-contiguous ``(B, A)`` view of one fresh
    ``(n_info, B, A)`` copy."""
    _, _, _, _, alive, active, info, names = bufs
    infos: dict[str, Any] = {"alive": view_or_copy(alive, copy),
                             "active": view_or_copy(active, copy)}
    if names:
        # one copy, laid out (n_info, B, A): each value a C-contiguous (B, A)
        # view of it, as _fast.vec_outputs's arrays are C-contiguous
        inf = np.ascontiguousarray(info.transpose(2, 0, 1))
        for j, name in enumerate(names):
            infos[name] = inf[j]
    return infos


def finished_numpy(alive: np.ndarray, out: np.ndarray) -> int:
    """``out[i]`` = no agent of instance ``i`` is ``alive`` (bool ``(B, A)``);
    returns how many instances finished (``_fast.finished``)."""
    np.logical_not(alive.any(axis=1), out=out)
    return int(out.sum())


def vec_outputs_numpy(bufs: tuple[Any, ...], copy: bool, fin: np.ndarray | None
                      ) -> tuple[tuple[Any, ...], int]:
    """``((obs, reward, terminated, truncated, infos), n)`` of a batched call
    from ``bufs = (obs, reward, terminated, truncated, alive, active, info,
    info_names)``: copies (``copy`` true) or read-only views of the first
    four, `batched_infos`; ``fin``, if given, receives the finished
    instances and ``n`` counts them (0 without ``fin``)."""
    obs, reward, terminated, truncated = bufs[:4]
    out = (view_or_copy(obs, copy), view_or_copy(reward, copy),
           view_or_copy(terminated, copy), view_or_copy(truncated, copy),
           batched_infos(bufs, copy))
    return out, 0 if fin is None else finished_numpy(bufs[4], fin)


def copy_actions_numpy(src: Any, dst: np.ndarray) -> bool:
    """Declines (False): the env's checked path copies the batched actions."""
    return False


# -- the dict API -----------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def infos_builder(keys: tuple[str, ...]
                  ) -> Callable[[Sequence[str], list[list[float]]], dict[str, dict[str, float]]]:
    """A function ``(names, columns) -> {names[j]: {keys[i]: columns[i][j]}}``:
    a generated dict comprehension with a dict display per agent (the
    technique of namedtuple), about twice as fast as ``dict(zip(keys, row))``
    per agent and without a Python call per agent.  ``keys`` are strings
    (the env checks them)."""
    if not keys:
        return lambda names, cols: {n: {} for n in names}
    args = ", ".join(f"v{i}" for i in range(len(keys)))
    body = ", ".join(f"{k!r}: v{i}" for i, k in enumerate(keys))
    ns: dict[str, Any] = {}
    src = (f"def build(names, cols):\n"
           f"    return {{n: {{{body}}} for n, {args} in zip(names, *cols)}}")
    exec(src, ns)
    fn: Callable[[Sequence[str], list[list[float]]], dict[str, dict[str, float]]] = ns["build"]
    return fn


def flags(names: Sequence[str], flags: np.ndarray) -> dict[str, bool]:
    """{name: bool}; the common all-False case without a per-agent zip."""
    if not flags.any():
        return dict.fromkeys(names, False)
    return dict(zip(names, flags.tolist(), strict=True))


def dict_outputs_numpy(names: Sequence[str], rows: np.ndarray, bufs: tuple[Any, ...]
                       ) -> tuple[tuple[dict[str, Any], ...], int]:
    """``((observations, rewards, terminations, truncations, infos), done)`` of
    a ParallelEnv call for the agents ``names``, whose rows of the buffers
    ``bufs = (obs (A, D), reward (A,), terminated (A,), truncated (A,), info
    (A, info_dim), cols, keys, template)`` are ``rows``: each observation a
    row of one fresh ``(n, D)`` array, float rewards, bool flags,
    ``{keys[k]: info[row, cols[k]]}`` per agent; ``done`` counts the agents
    whose flags are set (``_fast.dict_outputs``)."""
    obs, reward, terminated, truncated, info, cols, keys, _ = bufs
    names = tuple(names)  # read as it is at the call
    # every agent live (the common case): slices instead of fancy indexing
    sel: Any = slice(None) if len(rows) == len(reward) else rows
    obs_arr = obs[sel].copy()  # a copy: safe to keep past the next step
    infos: dict[str, dict[str, Any]]
    if keys:
        # one list per info key, turned into per-agent dicts by one
        # generated dict comprehension (no per-agent row or call)
        infos = infos_builder(keys)(names, info[sel][:, list(cols)].T.tolist())
    else:
        infos = {n: {} for n in names}
    term, trunc = terminated[sel], truncated[sel]
    return (
        dict(zip(names, obs_arr, strict=True)),
        dict(zip(names, reward[sel].tolist(), strict=True)),
        flags(names, term),
        flags(names, trunc),
        infos,
    ), int((term | trunc).sum())


def dict_actions_numpy(actions: dict[Any, Any], names: Sequence[str], rows: np.ndarray,
                       dst: np.ndarray, dim: int, discrete: bool) -> bool:
    """Declines (False): the env's own path writes the dict's actions."""
    return False


#: The NumPy kernels, by name: what this module's names are without the extension.
NUMPY: dict[str, Callable[..., Any]] = {
    "vec_outputs": vec_outputs_numpy,
    "dict_outputs": dict_outputs_numpy,
    "copy_actions": copy_actions_numpy,
    "dict_actions": dict_actions_numpy,
    "finished": finished_numpy,
}

#: Whether the kernels are ``seer_env._fast``'s (the extension imports).
NATIVE = _fast is not None

_impl: dict[str, Callable[..., Any]] = (
    {name: getattr(_fast, name) for name in NAMES} if _fast is not None else NUMPY)
vec_outputs: Callable[..., Any] = _impl["vec_outputs"]
dict_outputs: Callable[..., Any] = _impl["dict_outputs"]
copy_actions: Callable[..., Any] = _impl["copy_actions"]
dict_actions: Callable[..., Any] = _impl["dict_actions"]
finished: Callable[..., Any] = _impl["finished"]
