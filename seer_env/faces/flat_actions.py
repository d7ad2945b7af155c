"""``flatten_actions=True``: each multi-discrete group seen as one ``Discrete``.

A group whose agents choose ``MultiDiscrete(nvec)`` actions is handed out as
``Discrete(prod(nvec))``: the joint action ``j`` stands for the components
``np.unravel_index(j, nvec)`` (C order: the first component varies slowest,
``j = c0 * nvec[1] * ... + c1 * nvec[2] * ... + ... + c_last``), and the
joint mask allows ``j`` exactly when every component's mask allows its part
(a component forbidden forbids every joint action that uses it).  The model
still sees the components, so the outputs of a joint action are those of the
multi-part action it stands for, bit for bit.  Libraries whose policies handle
one categorical action only (BenchMARL's, PettingZoo's
``performance_benchmark``) then run on such a model:

```python
from seer_env.envs import hunt_v0

env = hunt_v0.parallel_env(flatten_actions=True)
env.action_space("predator_0")            # Discrete(10): MultiDiscrete([5, 2]) flattened
obs, infos = env.reset(seed=0)
obs["predator_0"]["action_mask"].shape    # (10,): the joint mask
```

Every face takes the option (``parallel_env``, ``env``, ``vector_env``,
``agent_vector_env``, `SeerTorchEnv`, the RLlib adapter's ``env_config``);
groups of other action kinds are unchanged.  `Flat` is one group's
translation; `flat_groups` the face's groups with it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError, InvalidActionError

__all__ = ["MAX_JOINT_ACTIONS", "Flat", "flat_groups"]

#: The most joint actions a flattened group may have: its mask rows (one
#: byte per joint action and agent) grow with the product of ``nvec``.
MAX_JOINT_ACTIONS = 1 << 16


@dataclass(frozen=True)
class Flat:
    """One multi-discrete group's joint actions: ``nvec`` the components'
    choices, ``n`` their product."""

    nvec: tuple[int, ...]

    @property
    def n(self) -> int:
        """The number of joint actions, ``prod(nvec)``."""
        return int(np.prod(self.nvec))

    def joint_mask(self, raw: np.ndarray) -> np.ndarray:
        """The joint mask (bool ``(..., n)``) from the runtime's mask rows
        ``raw`` (``(..., >= sum(nvec))``: the components' masks one after
        another): True where every component's choice is allowed."""
        out: np.ndarray | None = None
        off = 0
        for k in self.nvec:
            part = np.asarray(raw[..., off:off + k]) != 0
            off += k
            out = part if out is None else (out[..., :, None] & part[..., None, :]).reshape(
                *part.shape[:-1], -1)
        assert out is not None
        return out

    def components(self, joint: np.ndarray) -> np.ndarray:
        """The components (``(..., len(nvec))`` int64) of joint actions
        ``joint`` (ints in ``[0, n)``, checked by the caller)."""
        parts = np.unravel_index(np.asarray(joint, np.int64), self.nvec)
        return np.stack(parts, axis=-1)

    def checked_components(self, joint: Any, what: str) -> np.ndarray:
        """`components` of ``joint`` after checking each is in ``[0, n)``
        (`InvalidActionError` naming ``what``, e.g. "action for 'predator_0'",
        otherwise)."""
        arr = np.asarray(joint)
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= self.n):
            bad = arr[(arr < 0) | (arr >= self.n)].reshape(-1)[:5].tolist()
            raise InvalidActionError(
                f"{what} {bad if arr.ndim else int(arr)} outside [0, {self.n}) (flatten_actions: "
                f"joint actions of MultiDiscrete({list(self.nvec)}))")
        return self.components(arr)

    def refuse_forbidden(self, joint: np.ndarray, raw_mask: np.ndarray, alive: np.ndarray,
                         what: str | Callable[[tuple[int, ...]], str]) -> None:
        """`InvalidActionError` where a live agent's joint action is one its
        joint mask forbids (``joint`` ints checked in range, ``raw_mask`` the
        runtime's mask rows of the same agents, ``alive`` which of them act):
        the message names the joint action and the components it stands for
        (``what``, or ``what(index)``, names the agent at that index of ``joint``)."""
        jm = self.joint_mask(raw_mask)
        j = np.asarray(joint, np.int64)
        ok = np.take_along_axis(jm, j[..., None], axis=-1)[..., 0] | ~np.asarray(alive, bool)
        if ok.all():
            return
        idx = tuple(int(x) for x in np.argwhere(~ok)[0])
        v = int(j[idx])
        comps = [int(c) for c in self.components(np.int64(v))]
        who = what if isinstance(what, str) else what(idx)
        raise InvalidActionError(
            f"{who} is {v}, which its joint action mask forbids (flatten_actions: {v} "
            f"stands for the components {comps} of MultiDiscrete({list(self.nvec)}); a joint "
            "action is allowed when every component's mask allows its part)")

    def joint(self, components: np.ndarray) -> np.ndarray:
        """The joint actions of ``components`` (``(..., len(nvec))``): the inverse
        of `components`."""
        c = np.asarray(components, np.int64)
        return np.ravel_multi_index(tuple(c[..., j] for j in range(len(self.nvec))),
                                    self.nvec)


def flat_groups(groups: Sequence[Any], model: str) -> tuple[tuple[Any, ...], dict[int, Flat]]:
    """The face's groups with every multi-discrete group flattened (its
    descriptor now a discrete one of ``prod(nvec)`` actions, with a mask row of
    as many bytes where it has masks), and the translations by group index.
    A product over `MAX_JOINT_ACTIONS` is a `ConfigError` naming the group."""
    out = []
    flat: dict[int, Flat] = {}
    for i, g in enumerate(groups):
        if g.action_kind != "multi_discrete":
            out.append(g)
            continue
        f = Flat(tuple(int(k) for k in g.nvec))
        if f.n > MAX_JOINT_ACTIONS:
            raise ConfigError(
                f"{model}: flatten_actions=True: group {g.name!r} has MultiDiscrete"
                f"({list(f.nvec)}) actions, {f.n} joint actions; at most "
                f"{MAX_JOINT_ACTIONS} can be flattened (use the multi-discrete actions)")
        flat[i] = f
        out.append(dataclasses.replace(g, action_kind="discrete", action_dim=1, action_n=f.n,
                                       nvec=(), mask_len=f.n if g.mask_len else 0))
    return tuple(out), flat
