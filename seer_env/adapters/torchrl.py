"""TorchRL face: a native TorchRL ``EnvBase`` over the batched runtime.

``SeerTorchEnv(env, num_envs=B, device="cpu", **config)`` steps ``B``
instances of a model in one runtime ([`SeerVectorEnv`][seer_env.env.SeerVectorEnv],
``copy=False``, ``autoreset_mode="disabled"``: TorchRL drives the resets) and
speaks TorchRL's multi-agent conventions (those of its ``PettingZooWrapper``
and ``VmasWrapper``): batch size ``(B,)``, one entry per agent group:

```python
from seer_env.torchrl import SeerTorchEnv
env = SeerTorchEnv("hunt_v0", num_envs=8, threads=2)
td = env.rollout(100, break_when_any_done=False)   # random actions within the masks
td["predator", "observation"]       # (8, 100, 3, 83)   float32
td["next", "predator", "reward"]    # (8, 100, 3, 1)    float32
td["predator", "action_mask"]       # (8, 100, 3, 7)    bool (MultiDiscrete([5, 2]))
td["next", "done"]                  # (8, 100, 1)       bool
```

This module imports torch, tensordict and TorchRL (``pip install
'seer_env[torchrl]'``; without them, importing it raises
[`MissingExtraError`][seer_env.errors.MissingExtraError], an ``ImportError``).
``import seer_env`` never needs them, nor does ``seer_env.torchrl``, the
short path above, until ``SeerTorchEnv`` is first looked up there.

**Groups** (the keys of ``env.group_map``, agent names as lists, in the
model's agent order):

* a model with agent groups (``hunt_v0``): the model's groups, named as the
  model names them (TorchRL's prefix rule finds the same ones there);
* a model without groups (PCS, Aircraft, PHOLD): one group, named after the
  agents' common name prefix -- each agent name with its trailing ``_<digits>``
  parts removed (``cell_3_4`` and ``cell_52`` -> ``cell``, ``uav_7`` ->
  ``uav``, ``entity_0`` -> ``entity``); ``"agents"`` (VMAS's fallback, and the
  model's own name for the group) where the agents have no common prefix.
  TorchRL's ``PettingZooWrapper`` strips one ``_<int>`` only (names like
  ``cell_<row>_<col>`` would make one group per row there; PCS's agents are
  ``cell_<index>``, so both rules find one group); here a group is always one
  of the runtime's contiguous blocks of agent rows.

**Keys** (``n`` = agents of the group ``g``; every entry has the rows of
all ``B`` instances first):

* ``(g, "observation")`` ``(B, n, obs_dim)`` float32 (zeros for an agent
  that was not active in the call);
* ``(g, "action")``: ``(B, n)`` int64 (Discrete, ``Categorical``), ``(B, n, k)``
  int64 (MultiDiscrete, ``MultiCategorical``), ``(B, n, dim)`` float32 (Box,
  ``Bounded``);
* ``("next", g, "reward")`` ``(B, n, 1)`` float32;
* ``(g, "done" | "terminated" | "truncated")`` ``(B, n, 1)`` bool, sticky: an
  agent that finished keeps its flags until its instance resets (the batched
  env reports them once; TorchRL's value targets want them on every later
  step too);
* ``(g, "mask")`` ``(B, n)`` bool: the agent is alive (its next action
  counts), False for dead agents, as ``PettingZooWrapper(use_mask=True)``;
* ``(g, "action_mask")`` ``(B, n, N)`` bool, masked groups only: True =
  allowed (a MultiDiscrete's components one after another); all True for dead
  agents, as in ``PettingZooWrapper``, so masked distributions never see an
  empty row;
* ``(g, "info", name)`` ``(B, n)`` float64: the model's info values
  (``return_info=False`` leaves them out);
* ``"done" | "terminated" | "truncated"`` ``(B, 1)`` bool: the instance
  finished (no agent alive; agents that die early do not end it, unlike
  ``PettingZooWrapper``'s ``done_on_any``); ``terminated`` when every agent
  terminated, else ``truncated`` (``done = terminated | truncated``);
* ``"state"`` ``(B, state_dim)`` float32, the global state, with
  ``return_state=True``.

Actions follow TorchRL's ``PettingZooWrapper`` (the same spec conversion,
``torchrl.envs.libs.gym._gym_to_torchrl_spec_transform``):
``categorical_actions=True`` (default) gives ``Categorical``/``MultiCategorical``
index actions, ``False`` ``OneHot``/``MultiOneHot`` ones; a MultiDiscrete with
equal choices per component (``[3, 3]``) is a stack of ``Categorical``/``OneHot``
as there, and its action mask is then ``(B, n, k, N)``.  A masked group's
``action_mask`` is also set on its action spec (``update_mask``), so
``env.rand_action()`` and ``env.rollout()`` without a policy draw within the
masks.  Unlike ``PettingZooWrapper`` the observation is the Box itself (not
``(g, "observation", "observation")``): the mask is beside it, not in it.
TorchRL's own batched envs (``SerialEnv``, ``ParallelEnv``) over a masked
``SeerTorchEnv`` do not carry the sub-envs' mask updates into their own spec
(TorchRL 0.14): their ``rand_action()`` and policy-less ``rollout()`` draw
forbidden actions, which the sub-envs refuse (``InvalidActionError``), and
with ``MultiOneHot`` actions TorchRL's ``ParallelEnv`` fails expanding the mask.
A policy that reads ``(g, "action_mask")`` from the tensordict is unaffected;
for random rollouts, batch inside one env (``num_envs=B``: its instances step
on the runtime's threads) rather than with TorchRL's batched envs.  The same
holds for a ``TransformedEnv`` (any transform: its spec is its own) and for a
collector given ``policy=None`` (its random policy keeps the spec it was made
with), as for TorchRL's ``PettingZooWrapper``: give the ``TransformedEnv``
TorchRL's ``ActionMask`` transform, one per masked group, and a collector a
policy that draws from the env's spec as it is at each step:

```python
from torchrl.collectors import Collector    # SyncDataCollector before TorchRL 0.11
from torchrl.envs import Compose, StepCounter, TransformedEnv
from torchrl.envs.transforms import ActionMask
from seer_env.torchrl import SeerTorchEnv

base = SeerTorchEnv("hunt_v0", num_envs=2, max_cycles=40)
env = TransformedEnv(base, Compose(
    *(ActionMask((g, "action"), (g, "action_mask")) for g in base.group_map),
    StepCounter()))
td = env.rollout(30, break_when_any_done=False)       # within the masks
collector = Collector(env, lambda td: env.rand_action(td),
                      frames_per_batch=100, total_frames=200)
frames = sum(batch.numel() for batch in collector)
collector.shutdown()
```

**Resets** are TorchRL's: ``_reset`` with a ``"_reset"`` entry ``(B, 1)``
resets those instances (the batched env's ``reset(options={"reset_mask":
...})``), without one every instance.  A ``(g, "_reset")`` entry alone cannot
be honoured (agents do not restart one by one) and raises ``ConfigError``;
TorchRL's collectors and rollouts send the root entry, since the root done
entries exist.  Seeds: ``env.set_seed(s)`` (or ``seed=`` here) seeds instance
``i`` with ``s + i`` at the next full reset; every later reset of an instance
(partial or full) continues from its seed ``+ B``, as the batched env's
autoresets do, so a seeded run is reproducible whatever TorchRL resets when.

**Memory**: each step's outputs are copied once from the runtime's buffers
(NumPy views, ``copy=False``) into fresh tensors, on ``device`` (``.to`` for a
device other than the CPU); arrays the batched env already hands over fresh
(its info values for a model without groups) are shared with
``torch.from_numpy`` without a copy.  Actions go the other way without a copy
(``tensor.numpy()``) into the batched env, which checks them.  Nothing in the
step path loops over agents.

**Errors**: a missing group action, an action key of a group that does not
exist, a wrong shape or dtype, a value out of range, NaN/inf, a forbidden
masked action, a one-hot action that is not one-hot: ``InvalidActionError``
(a [`SeerError`][seer_env.errors.SeerError]), raised before anything changes (the
env can go on stepping).  A tensordict of the wrong batch size is refused by
TorchRL itself (``RuntimeError``).
"""

from __future__ import annotations

import dataclasses
import functools
from importlib.util import find_spec
from typing import Any, cast

import numpy as np

from .._bind.runtime import alloc_zeros
from ..errors import ConfigError, InvalidActionError, MissingExtraError, SnapshotError, StateError
from ..faces import EnvSnapshot
from ..faces.common import seed_value
from ..faces.snapshot import check_intact
from ..model import Model
from ..registry import get as _get_model
from .torchrl_groups import group_names

# TorchRL's own wrappers check their library with find_spec; this module
# subclasses EnvBase, so without the extra it cannot be imported at all
if _missing := [m for m in ("torch", "tensordict", "torchrl") if find_spec(m) is None]:
    raise MissingExtraError(
        f"seer_env.adapters.torchrl (SeerTorchEnv) needs torch, tensordict and TorchRL; "
        f"not installed: {', '.join(_missing)}.  Install them with: "
        f"pip install 'seer_env[torchrl]'")

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Categorical, Composite, MultiOneHot, Unbounded
from torchrl.envs import EnvBase
from torchrl.envs.libs.gym import _gym_to_torchrl_spec_transform, set_gym_backend

__all__ = ["SeerTorchEnv", "group_names"]


def _checked_seed(seed: Any) -> int | None:
    """``seed`` as the batched env takes it (None, or an int in [0, 2**64));
    `ConfigError` otherwise."""
    return None if seed is None else seed_value(seed)


def _host(a: np.ndarray, dtype: Any = None, share: bool = False) -> np.ndarray:
    """``a`` as an array a tensor may keep: a copy (C order, ``dtype``
    converted in the same pass), or ``a`` itself where ``share`` says the
    batched env handed it over fresh -- it makes every view of the
    runtime's buffers read-only, so a fresh array is also writable."""
    if share and a.flags.writeable and a.flags.c_contiguous and (
            dtype is None or a.dtype == dtype):
        return a
    return np.array(a, dtype=dtype, order="C")


class _G:
    """One TorchRL group: the model's group ``g`` under the name ``key``."""

    def __init__(self, key: str, g: Any, agents: list[str], act_spec: Any,
                 categorical: bool) -> None:
        self.key, self.model_name, self.agents = key, g.name, agents
        self.count, self.kind, self.mask_len = g.count, g.action_kind, g.mask_len
        self.info_names = tuple(g.info_names)
        self.nvec = tuple(g.nvec)
        # how the spec encodes the action (PettingZooWrapper's choice)
        self.onehot = not categorical and self.kind != "box"
        self.multi_onehot = isinstance(act_spec, MultiOneHot)
        # one agent's action as the spec has it: a one-hot's trailing axes
        self.act_shape = tuple(int(d) for d in act_spec.shape)
        # a homogeneous MultiDiscrete is a stack of Categorical/OneHot: its
        # mask (the components' masks one after another) is (k, N)
        self.mask_shape: tuple[int, ...] | None = None
        if self.mask_len:
            if self.kind == "multi_discrete" and not isinstance(
                    act_spec, MultiOneHot) and not hasattr(act_spec, "nvec"):
                self.mask_shape = (len(self.nvec), self.nvec[0])
            else:
                self.mask_shape = (self.mask_len,)


class SeerTorchEnv(EnvBase):
    """A seer_env model as a batched TorchRL env (see
    [`seer_env.adapters.torchrl`][seer_env.adapters.torchrl]).

    Args:
        env: a model name (``"pcs_v0"``, a declared model, a model folder's
            path) or a `Model`.
        num_envs: instances stepped together: the env's batch size ``(num_envs,)``.
        device: where the tensors go (``"cpu"``).
        categorical_actions: index actions (``Categorical``), else one-hot.
        return_state: add ``"state"`` ``(B, state_dim)``, the model's global
            state (one native call per instance per step; computed once per
            step, `state` returns the same tensor).
        return_info: add ``(group, "info", name)`` for the model's info values.
        seed: the seed of the first reset (instance ``i`` gets ``seed + i``).
        **config: the model's configuration and the runtime's keys
            (``threads``, ``executor``, ``max_cycles``, ``enforce_masks``, ...).
    """

    def __init__(self, env: str | Model, num_envs: int = 1, *, device: Any = "cpu",
                 categorical_actions: bool = True, return_state: bool = False,
                 return_info: bool = True, seed: int | None = None,
                 **config: Any) -> None:
        for k in ("copy", "autoreset_mode"):
            if k in config:
                raise ConfigError(
                    f"{k}= is set by SeerTorchEnv (copy=False, autoreset_mode='disabled': "
                    "TorchRL resets finished instances)")
        seed = _checked_seed(seed)  # checked before anything is made
        try:
            dev = torch.device(device)
            if dev.type == "cuda" and not torch.cuda.is_available():
                raise RuntimeError("CUDA is not available in this torch build or machine")
            if dev.type == "cuda" and (dev.index or 0) >= torch.cuda.device_count():
                raise RuntimeError(f"this machine has {torch.cuda.device_count()} CUDA "
                                   "device(s)")
        except (RuntimeError, TypeError, ValueError) as exc:
            raise ConfigError(f"device={device!r} is not a device torch can use here: "
                              f"{exc}") from None
        model = env if isinstance(env, Model) else _get_model(env)
        self._venv: Any = None
        venv = model.vector_env(num_envs, copy=False, autoreset_mode="disabled", **config)
        # a finished instance is refused with TorchRL's way to reset it
        venv._reset_advice = ("TorchRL's reset of those instances (env.reset(td) with a "
                              "'_reset' entry, e.g. td.set('_reset', td['done']); "
                              "env.step_and_maybe_reset() does it)")
        try:
            super().__init__(device=device, batch_size=torch.Size([venv.num_envs]))
            self._venv = venv
            self._setup_specs(venv, categorical_actions, return_state, return_info)
        except BaseException:
            venv.close()
            raise
        self._seed = seed
        self._started = False
        self._state_cache: Any = None
        # what a pickled copy is made from (`__reduce__`)
        self._init_args = dict(num_envs=num_envs, device=str(dev),
                               categorical_actions=categorical_actions,
                               return_state=return_state, return_info=return_info, seed=seed,
                               **config)

    def __reduce__(self) -> tuple[Any, tuple[Any, dict[str, Any]]]:
        """Pickle (and deep-copy) as the other faces do: by the model's
        reference and the constructor's arguments, the copy a fresh env of
        the same configuration, batch and seed (its state travels with
        `snapshot`), as a process-based collector ships it:

        ```python
        copy = pickle.loads(pickle.dumps(env))   # SeerTorchEnv, not started
        ```
        """
        m: Model = self.seer_model
        ref = m.reference or functools.partial(type(m), m.folder, m.name)
        return (_rebuild_torch_env, (ref, dict(self._init_args)))

    # -- construction ---------------------------------------------------------

    @set_gym_backend("gymnasium")
    def _setup_specs(self, venv: Any, categorical: bool, return_state: bool,
                     return_info: bool) -> None:
        dev = self.device
        B = venv.num_envs
        self.num_envs = B
        self.seer_model = venv.seer_model
        self.return_state, self.return_info = bool(return_state), bool(return_info)
        self.categorical_actions = bool(categorical)
        groups = list(venv.groups)
        agents = list(venv.possible_agents)
        keys = group_names([g.name for g in groups],
                           agents, [g.count for g in groups])
        self._grouped = len(groups) > 1
        self._structured = bool(venv.structured)
        self.group_map = {k: agents[g.first:g.first + g.count]
                          for k, g in zip(keys, groups, strict=True)}
        self.agent_names = agents
        self._groups: list[_G] = []
        obs_spec = Composite(device=dev)
        act_spec = Composite(device=dev)
        rew_spec = Composite(device=dev)
        bool_spec = {"n": 2, "dtype": torch.bool, "device": dev}
        done_spec = Composite({k: Categorical(shape=(1,), **bool_spec)
                               for k in ("done", "terminated", "truncated")}, device=dev)
        for key, g in zip(keys, groups, strict=True):
            n = g.count
            a = _gym_to_torchrl_spec_transform(
                venv.single_action_spaces[g.name], remap_state_to_observation=False,
                categorical_action_encoding=categorical, device=dev)
            o = _gym_to_torchrl_spec_transform(
                venv.single_observation_spaces[g.name], remap_state_to_observation=False,
                device=dev)
            grp = _G(key, g, self.group_map[key], a, categorical)
            self._groups.append(grp)
            act_spec[key] = Composite({"action": a}, device=dev).expand(n)
            og = Composite({"observation": o}, device=dev).expand(n).clone()
            og["mask"] = Categorical(shape=(n,), **bool_spec)
            if grp.mask_shape is not None:
                og["action_mask"] = Categorical(shape=(n, *grp.mask_shape), **bool_spec)
            if self.return_info and grp.info_names:
                og["info"] = Composite(
                    {k: Unbounded(shape=(n,), dtype=torch.float64, device=dev)
                     for k in grp.info_names}, shape=(n,), device=dev)
            obs_spec[key] = og
            rew_spec[key] = Composite(
                {"reward": Unbounded(shape=(n, 1), dtype=torch.float32, device=dev)},
                shape=(n,), device=dev)
            done_spec[key] = Composite({k: Categorical(shape=(n, 1), **bool_spec)
                                        for k in ("done", "terminated", "truncated")},
                                       shape=(n,), device=dev)
        if self.return_state:
            obs_spec["state"] = _gym_to_torchrl_spec_transform(
                venv.state_space, remap_state_to_observation=False, device=dev)
        self.full_action_spec_unbatched = act_spec
        self.full_observation_spec_unbatched = obs_spec
        self.full_reward_spec_unbatched = rew_spec
        self.full_done_spec_unbatched = done_spec
        # sticky per-agent flags: (B, n) per group, cleared by a reset
        name = self.seer_model.name  # out of memory: __init__ closes the batched env
        self._term = [alloc_zeros(name, f"the terminations of group {g.key!r}",
                                  (B, g.count), bool) for g in self._groups]
        self._trunc = [alloc_zeros(name, f"the truncations of group {g.key!r}",
                                   (B, g.count), bool) for g in self._groups]
        self._group_keys = {g.key for g in self._groups}
        self._cpu = torch.device(dev).type == "cpu"

    # -- TorchRL's hooks ------------------------------------------------------

    def _set_seed(self, seed: int | None) -> None:
        # checked before it is kept: a bad seed raises here, where it was
        # given, and leaves the env as it was (kept unchecked, every later
        # reset failed on it)
        self._seed = _checked_seed(seed)

    def _actions(self, td: TensorDictBase) -> Any:
        """The batched env's actions from ``td``: one array per group
        (tensors' memory, no copy); the batched env checks the values."""
        for k in td.keys():
            if k not in self._group_keys and isinstance(k, str):
                v = td.get(k)
                if isinstance(v, TensorDictBase) and "action" in v.keys():
                    raise InvalidActionError(
                        f"{self.seer_model.name}: actions for group {k!r}, which does not "
                        f"exist; the groups are {list(self.group_map)}")
        out = {}
        for g in self._groups:
            sub = td.get(g.key, None)
            if sub is not None and not isinstance(sub, TensorDictBase):
                raise InvalidActionError(
                    f"{self.seer_model.name}: td[{g.key!r}] is a {type(sub).__name__}; the "
                    f"group's actions go in a tensordict there, at ({g.key!r}, 'action')")
            t = None if sub is None else sub.get("action", None)
            if t is None:
                raise InvalidActionError(
                    f"{self.seer_model.name}: no actions for group {g.key!r} (expected "
                    f"({g.key!r}, 'action') in the tensordict)")
            if not isinstance(t, torch.Tensor):
                raise InvalidActionError(
                    f"actions of group {g.key!r} must be a tensor, got {type(t).__name__}")
            t = t.detach()
            if t.device.type != "cpu":
                t = t.cpu()
            if g.onehot:
                t = self._from_onehot(g, t)
            try:
                arr = t.numpy()
            except (TypeError, RuntimeError) as exc:
                raise InvalidActionError(
                    f"actions of group {g.key!r} cannot be read ({t.dtype}): {exc}") from exc
            out[g.model_name] = arr
        if not self._structured:
            return out[self._groups[0].model_name]
        return out

    def _from_onehot(self, g: _G, t: Any) -> Any:
        """One-hot actions of ``g`` as indices (checked: exactly one 1 per choice)."""
        if t.dtype == torch.bool:
            t = t.to(torch.uint8)
        if t.is_floating_point() or t.is_complex():
            raise InvalidActionError(
                f"one-hot actions of group {g.key!r} must be integers or bools, "
                f"got {t.dtype}")
        k = len(g.act_shape)
        if t.ndim < k or tuple(t.shape[t.ndim - k:]) != g.act_shape:
            raise InvalidActionError(
                f"one-hot actions of group {g.key!r} must end in axes of {g.act_shape} "
                f"(the action spec's), got shape {tuple(t.shape)}")
        parts = t.split(list(g.nvec), dim=-1) if g.multi_onehot else [t]
        for p in parts:
            if p.ndim < 3 or not bool(((p == 0) | (p == 1)).all()) or not bool(
                    (p.sum(-1) == 1).all()):
                raise InvalidActionError(
                    f"actions of group {g.key!r} must be one-hot along the last axis")
        if g.multi_onehot:
            return torch.stack([p.argmax(-1) for p in parts], dim=-1)
        return t.argmax(-1)

    def _tensor(self, a: np.ndarray, dtype: Any = None, share: bool = False) -> Any:
        t = torch.from_numpy(_host(a, dtype, share))
        return t if self._cpu else t.to(self.device, non_blocking=True)

    def _split(self, x: Any) -> list[Any]:
        """Per group (a model without groups: the array itself)."""
        if self._grouped:
            return [x[g.model_name] for g in self._groups]
        if isinstance(x, dict):  # masks of a one-group model come as an array too
            return [x[self._groups[0].model_name]]
        return [x]

    def _output(self, obs: Any, rew: Any, term: Any, trunc: Any, infos: dict[str, Any],
                ) -> TensorDictBase:
        B = self.num_envs
        dev = self.device
        out: dict[str, Any] = {}
        obs_g, alive_g = self._split(obs), self._split(infos["alive"])
        rew_g = None if rew is None else self._split(rew)
        if term is not None:
            for st, f in zip(self._term, self._split(term), strict=True):
                st |= f
            for st, f in zip(self._trunc, self._split(trunc), strict=True):
                st |= f
        masks = infos.get("action_mask")
        any_alive = np.zeros(B, bool)
        all_term = np.ones(B, bool)
        for i, g in enumerate(self._groups):
            alive = alive_g[i]
            any_alive |= alive.any(axis=1)
            all_term &= self._term[i].all(axis=1)
            term_t = self._tensor(self._term[i]).unsqueeze(-1)
            trunc_t = self._tensor(self._trunc[i]).unsqueeze(-1)
            mask_t = self._tensor(alive, bool)
            src: dict[str, Any] = {
                "observation": self._tensor(obs_g[i]),
                "done": term_t | trunc_t,
                "terminated": term_t,
                "truncated": trunc_t,
                "mask": mask_t,
            }
            if rew_g is not None:
                src["reward"] = self._tensor(rew_g[i]).unsqueeze(-1)
            if g.mask_shape is not None:
                # a group with masks: infos carry them
                am = self._tensor(cast(np.ndarray, masks[g.model_name]
                                       if isinstance(masks, dict) else masks), bool)
                am |= ~mask_t.unsqueeze(-1)  # dead agents: every action allowed
                am = am.reshape(B, g.count, *g.mask_shape)
                src["action_mask"] = am
                self.input_spec["full_action_spec", g.key, "action"].update_mask(am.clone())
            if self.return_info and g.info_names:
                vals = infos[g.model_name] if self._grouped else infos
                src["info"] = TensorDict._new_unsafe(
                    {k: self._tensor(vals[k], share=True) for k in g.info_names},
                    batch_size=torch.Size([B, g.count]), device=dev)
            out[g.key] = TensorDict._new_unsafe(
                src, batch_size=torch.Size([B, g.count]), device=dev)
        done = ~any_alive
        terminated = done & all_term
        out["done"] = self._tensor(done).unsqueeze(-1)
        out["terminated"] = self._tensor(terminated).unsqueeze(-1)
        out["truncated"] = self._tensor(done & ~terminated).unsqueeze(-1)
        self._state_cache = None
        if self.return_state:
            out["state"] = self.state()
        return TensorDict._new_unsafe(out, batch_size=torch.Size([B]), device=dev)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self._started:
            raise StateError(f"{self.seer_model.name}: call reset() before step()")
        actions = self._actions(tensordict)
        obs, rew, term, trunc, infos = self._venv.step(actions)
        return self._output(obs, rew, term, trunc, infos)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any
               ) -> TensorDictBase:
        seed = kwargs.pop("seed", None)
        kwargs.pop("set_state", None)
        if kwargs:
            raise ConfigError(f"reset() got unexpected arguments {sorted(kwargs)}")
        mask = None
        if tensordict is not None:
            r = tensordict.get("_reset", None)
            if r is None and any(tensordict.get((g.key, "_reset"), None) is not None
                                 for g in self._groups):
                raise ConfigError(
                    f"{self.seer_model.name}: a group's '_reset' without the root "
                    "'_reset' (B, 1): instances reset whole, agents do not restart alone")
            if r is not None:
                r = r.detach().cpu().reshape(-1).numpy().astype(bool)
                if r.shape != (self.num_envs,):
                    raise ConfigError(
                        f"'_reset' must have {self.num_envs} entries, got {r.shape}")
                if not r.all():
                    mask = r
        if seed is not None:
            self._seed = _checked_seed(seed)
        venv = self._venv
        if mask is not None and not mask.any():
            obs, infos = venv.reset(options={"reset_mask": mask})
        elif mask is not None or self._started and self._seed is None:
            full = np.ones(self.num_envs, bool) if mask is None else mask
            obs, infos = venv.reset(options={"reset_mask": full})
            mask = full
        else:  # the first reset, or a full one after set_seed: seeds s + i
            obs, infos = venv.reset(seed=self._seed)
            self._seed = None
            self._started = True
        sel = slice(None) if mask is None else mask
        for st in (*self._term, *self._trunc):
            st[sel] = False
        return self._output(obs, None, None, None, infos)

    # -- snapshot and restore ---------------------------------------------------

    def snapshot(self) -> Any:
        """Every instance's whole state, and this face's own (the per-agent
        done flags it keeps sticky, whether it was reset, a seed set for
        the next reset), as an [`EnvSnapshot`][seer_env.env.EnvSnapshot]:

        ```python
        snap = env.snapshot()
        a = env.rollout(10, policy, auto_reset=False)
        env.restore(snap)
        b = env.rollout(10, policy, auto_reset=False)   # equal to a, bit for bit
        ```

        Restores into this env or a new `SeerTorchEnv` of the same model and
        configuration (any executor, thread count and device)."""
        if not self._started:
            raise StateError(f"{self.seer_model.name}: call reset() before snapshot()")
        snap = self._venv.snapshot()
        mine = {"venv": snap.state, "term": [t.copy() for t in self._term],
                "trunc": [t.copy() for t in self._trunc],
                "groups": [g.key for g in self._groups], "seed": self._seed}
        return dataclasses.replace(snap, face="torchrl", state=mine)

    def restore(self, snap: Any) -> TensorDictBase:
        """Go back to a [`snapshot`][seer_env.adapters.torchrl.SeerTorchEnv.snapshot];
        returns the tensordict ``reset()`` would (observations, masks and
        done flags of that moment).  A snapshot of another model,
        configuration or face, or damaged bytes, raise `SnapshotError` and
        change nothing."""
        name = self.seer_model.name
        if not isinstance(snap, EnvSnapshot) or snap.face != "torchrl":
            what = snap.face if isinstance(snap, EnvSnapshot) else type(snap).__name__
            raise SnapshotError(f"{name}: restore() takes a SeerTorchEnv's snapshot(), "
                                f"got {what!r}")
        check_intact(snap, name)
        st = snap.state
        B = self.num_envs
        shapes = [(B, g.count) for g in self._groups]
        try:
            seed = _checked_seed(st["seed"])
            ok = (st["groups"] == [g.key for g in self._groups]
                  and all(np.asarray(a).shape == sh and np.asarray(a).dtype == bool
                          for key in ("term", "trunc")
                          for a, sh in zip(st[key], shapes, strict=True)))
        except (TypeError, KeyError, ValueError, ConfigError):
            ok = False
        if not ok:
            raise SnapshotError(f"{name}: the snapshot is malformed, or of an env with "
                                f"other groups or another number of instances")
        obs, infos = self._venv.restore(
            dataclasses.replace(snap, face="vector", state=st["venv"]))
        for mine, theirs in zip((*self._term, *self._trunc), (*st["term"], *st["trunc"]),
                                strict=True):
            mine[:] = theirs
        self._seed = seed
        self._started = True
        return self._output(obs, None, None, None, infos)

    # -- the rest --------------------------------------------------------------

    def state(self) -> Any:
        """``(B, state_dim)`` float32: the instances' global states now
        (computed once per step or reset)."""
        if self._state_cache is None:
            self._state_cache = self._tensor(self._venv.state())
        return self._state_cache

    @property
    def venv(self) -> Any:
        """The batched env underneath ([`SeerVectorEnv`][seer_env.env.SeerVectorEnv])."""
        return self._venv

    def close(self, *, raise_if_closed: bool = True) -> None:
        self.is_closed = True
        if self._venv is not None:
            self._venv.close()

    def __repr__(self) -> str:
        return (f"SeerTorchEnv({self.seer_model.name!r}, num_envs={self.num_envs}, "
                f"groups={ {k: len(v) for k, v in self.group_map.items()} }, "
                f"device={self.device})")


def _rebuild_torch_env(ref: Any, args: dict[str, Any]) -> SeerTorchEnv:
    """An unpickled `SeerTorchEnv`: a fresh one made with the same arguments."""
    return SeerTorchEnv(ref(), **args)
