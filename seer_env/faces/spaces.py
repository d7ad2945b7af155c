"""The action spaces and action values of the faces: Gymnasium spaces per group,
`MultiDiscreteMasked`, and the checks that turn a user's action into the
runtime's.

Part of `seer_env.faces` (`seer_env.env`, its old path, re-exports the public names).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np

from ..errors import (
    InvalidActionError,
)

if TYPE_CHECKING:  # pragma: no cover
    pass


def _as_array(agent: str, a: Any) -> np.ndarray:
    """``np.asarray(a)``; what it raises (ragged nesting, an ``__array__`` that
    fails: the value's own code) as an InvalidActionError naming the agent."""
    try:
        return np.asarray(a)
    except Exception as exc:
        raise InvalidActionError(
            f"action for {agent!r} cannot be read as an array: {exc!r}") from exc


def _discrete_value(agent: str, a: Any, n: int) -> int:
    arr = _as_array(agent, a)
    if arr.shape not in ((), (1,)):
        raise InvalidActionError(
            f"action for {agent!r} must be a scalar int, got shape {arr.shape}"
        )
    if arr.dtype.kind not in "iu":  # bool, timedelta, float, complex, object: no
        raise InvalidActionError(
            f"action for {agent!r} must be an integer, got dtype {arr.dtype} ({a!r})"
        )
    v = int(arr.reshape(()))
    if not -(2**31) <= v < 2**31:
        # The range check against [0, n) happens in C; this only keeps the
        # value representable in the runtime's int32 buffer.
        raise InvalidActionError(f"action for {agent!r} is {v}, outside [0, {n})")
    return v


#: what a mask-bound space reads its agent's mask now through (None: no mask now)
MaskSource = Callable[[], "np.ndarray | None"]


class _BoundToMask:
    """What the mask-bound spaces share: the binding (a Gymnasium space's
    one argument, then ``mask_source``), the agent's current mask
    (`mask_now`), which `sample` without a mask of its own draws within, and
    pickling without the binding (a copy samples like a plain space)."""

    _mask_source: MaskSource | None = None

    def __init__(self, n_or_nvec: Any, mask_source: MaskSource | None = None,
                 seed: int | np.random.Generator | None = None) -> None:
        super().__init__(n_or_nvec, seed=seed)  # type: ignore[call-arg]
        self._mask_source = mask_source

    def _mask_for_sample(self, mask: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The mask `sample` draws within: the caller's, else (nothing else
        given) the agent's now."""
        if mask is None and not args and kwargs.get("probability") is None:
            return self.mask_now()
        return mask

    def mask_now(self) -> np.ndarray | None:
        """The agent's mask as the env holds it now (int8, 1 = allowed), or
        None: unbound, before ``reset()``, after ``close()``, or a finished agent."""
        src = self._mask_source
        return None if src is None else src()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_mask_source", None)
        return state


class DiscreteMasked(_BoundToMask, gymnasium.spaces.Discrete):
    """A ``Discrete`` bound to one agent of a masked group: `sample()` without
    a mask draws within the agent's current mask, so a checker or test that
    samples plain actions (RLlib's env checker, PettingZoo's seed and
    max-cycles tests) draws legal ones.  ``sample(mask=...)`` with a mask of
    the caller's behaves as Gymnasium's; equality, ``n``, ``contains`` and
    seeding are a plain ``Discrete``'s, and a pickled or deep-copied one is
    unbound (it samples like a plain ``Discrete``):

    ```python
    space = env.action_space("predator_0")   # DiscreteMasked(5)
    space.sample()                           # within the agent's mask now
    space.sample(mask=np.ones(5, np.int8))   # within the caller's
    ```
    """

    def sample(self, mask: Any = None, *args: Any, **kwargs: Any) -> np.int64:
        return super().sample(self._mask_for_sample(mask, args, kwargs), *args, **kwargs)


class MultiDiscreteMasked(_BoundToMask, gymnasium.spaces.MultiDiscrete):
    """A ``MultiDiscrete`` whose `sample` also takes the mask as the
    agents' observations carry it: one flat ``int8`` array, every component's
    choices one after another (the layout MaskablePPO and RLlib's action
    masking read).  Gymnasium's own form, a tuple of one mask per component,
    works as well.  Bound to an agent (the dict faces' spaces), `sample()`
    without a mask draws within the agent's current mask, as `DiscreteMasked`
    does; everything else is a plain ``MultiDiscrete``:

    ```python
    space = env.action_space("runner_0")      # MultiDiscreteMasked([3 2])
    space.sample()                            # within runner_0's mask now
    space.sample(mask=obs["runner_0"]["action_mask"])   # 5 bytes: 3 + 2
    ```
    """

    def sample(self, mask: Any = None, *args: Any, **kwargs: Any) -> np.ndarray:
        mask = self._mask_for_sample(mask, args, kwargs)
        nvec = self.nvec
        if isinstance(mask, np.ndarray) and nvec.ndim == 1 and mask.shape == (int(nvec.sum()),):
            mask = tuple(np.split(mask.astype(np.int8), np.cumsum(nvec)[:-1].tolist()))
        return super().sample(mask, *args, **kwargs)


def bound_action_space(g: Any, mask_source: MaskSource) -> gymnasium.Space:
    """The action space of one agent of the masked group ``g``, bound to its
    mask (``mask_source``); a group without masks gets its shared space."""
    if g.action_kind == "discrete":
        return DiscreteMasked(g.action_n, mask_source)
    return MultiDiscreteMasked(np.array(g.nvec, dtype=np.int64), mask_source)


def _group_action_space(g: Any) -> gymnasium.Space:
    """The action space of a group (``seer_env._bind.runtime.Group``)."""
    if g.action_kind == "discrete":
        return gymnasium.spaces.Discrete(g.action_n)
    if g.action_kind == "multi_discrete":
        space = np.array(g.nvec, dtype=np.int64)
        return MultiDiscreteMasked(space) if g.mask_len else gymnasium.spaces.MultiDiscrete(space)
    return gymnasium.spaces.Box(g.action_low, g.action_high, shape=(g.action_dim,),
                                dtype=np.float32)


def _group_value(agent: str, a: Any, g: Any) -> Any:
    """One agent's action as its group's buffer row takes it (ranges and masks
    are checked by the runtime, before anything changes)."""
    if g.action_kind == "discrete":
        return _discrete_value(agent, a, g.action_n)
    if g.action_kind == "box":
        return _box_value(agent, a, g.action_dim)
    arr = _as_array(agent, a)
    if arr.shape != (g.action_dim,):
        raise InvalidActionError(
            f"action for {agent!r} must have shape ({g.action_dim},) (one choice per "
            f"component of MultiDiscrete{list(g.nvec)}), got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise InvalidActionError(
            f"action for {agent!r} must be integers, got dtype {arr.dtype} ({a!r})")
    if arr.size and (int(arr.min()) < -(2**31) or int(arr.max()) >= 2**31):
        raise InvalidActionError(f"action for {agent!r} is {arr.tolist()}, outside "
                                 f"MultiDiscrete{list(g.nvec)}")
    return arr.astype(np.int32)


def _box_value(agent: str, a: Any, dim: int) -> np.ndarray:
    arr = _as_array(agent, a)
    if arr.shape != (dim,):
        raise InvalidActionError(
            f"action for {agent!r} must have shape ({dim},), got {arr.shape}"
        )
    if arr.dtype.kind not in "fiu":  # bool, timedelta, complex, object: no
        raise InvalidActionError(f"action for {agent!r} has dtype {arr.dtype}; need float")
    return _to_float32(arr)


_F32_MAX = float(np.finfo(np.float32).max)
_INT_TYPES = {int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64}


def _to_float32(arr: np.ndarray) -> np.ndarray:
    """Cast to float32 keeping finite values finite (C clips them to the Box and
    rejects NaN/inf, so a huge finite float64 must not turn into inf here)."""
    arr = np.asarray(arr, dtype=np.float64)
    return np.where(np.isfinite(arr), np.clip(arr, -_F32_MAX, _F32_MAX), arr).astype(np.float32)
