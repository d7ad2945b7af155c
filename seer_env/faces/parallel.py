"""`SeerParallelEnv`: the PettingZoo ``ParallelEnv`` every model gets.

Part of `seer_env.faces` (`seer_env.env`, its old path, re-exports the public names).
"""

from __future__ import annotations

import collections
import functools
import itertools
import os
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv

from .._bind import kernels as _kernels
from .._bind.gate import close_now, exclusive
from .._bind.runtime import yes_no
from ..errors import (
    ConfigError,
    InvalidActionError,
    SeerError,
    SnapshotError,
    StateError,
    UnknownAgentError,
)
from .common import (
    _CUT_SHORT_RESET,
    _CUT_SHORT_RESTORE,
    _CUT_SHORT_STEP,
    _SeerEnvCommon,
    check_options,
    next_seed,
    raised_by_seer,
)
from .snapshot import EnvSnapshot, generator_of
from .spaces import (
    _INT_TYPES,
    _box_value,
    _discrete_value,
    _group_value,
    _to_float32,
    bound_action_space,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..model import Model


class SeerParallelEnv(_SeerEnvCommon, ParallelEnv):
    """A PettingZoo ``ParallelEnv`` whose steps run on the seer runtime.

    Example:

    ```python
    from seer_env.envs import phold_v0
    env = phold_v0.parallel_env(num_entities=16, max_cycles=10)
    obs, infos = env.reset(seed=3)
    while env.agents:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        obs, rewards, terminations, truncations, infos = env.step(actions)
    env.close()
    ```

    Returned observations are fresh arrays (not overwritten by later steps).
    ``env.runtime`` is the underlying [`Runtime`][seer_env.registry.Runtime].

    Actions are checked before anything changes: an unknown or finished
    agent, a missing live agent, a wrong shape or dtype, a discrete value
    outside ``[0, n)`` or a NaN/inf raises
    [`InvalidActionError`][seer_env.errors.InvalidActionError] and the env is as before.
    Box actions: finite values outside the space's bounds are **clipped** to
    them (the action space says ``Box(low, high)``; the runtime clips).

    ``observation_spaces`` / ``action_spaces`` map every possible agent to its
    space (the same object ``observation_space(agent)`` returns).  An env is
    used by one thread at a time: a call from a second thread while another
    is inside one raises [`StateError`][seer_env.errors.StateError]; ``close()`` may
    come from any thread at any time (see `close`), after which every
    call raises [`ClosedError`][seer_env.errors.ClosedError].  A call cut short by
    Ctrl-C (KeyboardInterrupt) after it changed the runtime leaves the env
    needing ``reset()``: every other call raises StateError until then.

    ``env.agents`` is the env's answer, not its state: the env keeps its own
    record of the live agents (a user or wrapper changing the list changes
    nothing inside).

    A masked agent's observation is PettingZoo's dict, ``{"observation": ...,
    "action_mask": ...}`` (int8, 1 = allowed).  With ``mask_in_infos=True``
    the mask is in its infos too, ``infos[agent]["action_mask"]`` (a copy of
    its own), where some libraries read it; with ``mask_in_infos="only"`` it is
    in the infos alone and the observation (and its space) is the Box, as
    AgileRL requires (its ``get_action`` refuses observations holding a mask):

    ```python
    from seer_env.envs import hunt_v0

    env = hunt_v0.parallel_env(mask_in_infos=True)
    obs, infos = env.reset(seed=0)
    masks = {a: infos[a]["action_mask"] for a in env.agents if "action_mask" in infos[a]}
    ```
    """

    #: PettingZoo's metadata; each model's env class has its own
    #: (`env_class`): name, render modes and fps.
    metadata: dict[str, Any] = {"name": "seer", "render_modes": [], "render_fps": 10,
                                "is_parallelizable": True}

    def __init__(self, model: Model, **config: Any) -> None:
        self._init_config = dict(config)
        in_infos = config.pop("mask_in_infos", False)
        #: each masked agent's mask also in its infos (``infos[agent]["action_mask"]``):
        #: False, True, or "only" (in its infos and not in its observation)
        self.mask_in_infos: bool | str
        if isinstance(in_infos, str) and in_infos == "only":
            self.mask_in_infos = in_infos
        else:
            try:  # the one yes/no rule of every face option (0 and 1 too)
                self.mask_in_infos = yes_no("mask_in_infos", in_infos)
            except ConfigError:
                raise ConfigError(f"mask_in_infos={in_infos!r} must be True, False or "
                                  "'only'") from None
        self._setup(model, 1, config)
        self.agents: list[str] = []
        if self.mask_in_infos == "only":  # the observation is the Box alone
            self._group_obs_spaces = [sp["observation"] if isinstance(sp, gymnasium.spaces.Dict)
                                      else sp for sp in self._group_obs_spaces]
        if self._structured:
            self.observation_spaces = {a: self._group_obs_spaces[self._group_of[i]]
                                       for i, a in enumerate(self.possible_agents)}
            self.action_spaces = {a: self._agent_action_space(i)
                                  for i, a in enumerate(self.possible_agents)}
        else:
            self.observation_spaces = dict.fromkeys(self.possible_agents, self._obs_space)
            self.action_spaces = dict.fromkeys(self.possible_agents, self._act_space)
        self.info_keys = self._choose_info_keys(config.get("info_keys"))
        self._info_cols = np.array(
            [self.info_names.index(k) for k in self.info_keys], dtype=np.intp
        )
        for k in self.info_keys:
            if not isinstance(k, str):
                raise ConfigError(f"info name {k!r} is not a string")
        self._needs_reset = True
        #: the seed a reset() without one takes: None until a reset (then the
        #: model's default or a fresh one), then the sequence of the last (`next_seed`)
        self._seed_next: int | None = None
        self._np_random: np.random.Generator | None = None  # `np_random`
        self._window: Any = None
        self._names = np.array(self.possible_agents, dtype=object)
        self._all_names = tuple(self.possible_agents)
        #: the live agents (what self.agents shows): a tuple nothing else holds,
        #: so user code run by a hostile action key cannot change it under us
        self._live_names: tuple[str, ...] = ()
        # the runtime's buffers, instance 0 (the arrays live as long as the env)
        rt = self.runtime
        self._act_row = rt.actions[0]
        self._out_rows = (rt.obs[0], rt.reward[0], rt.terminated[0], rt.truncated[0],
                          rt.info[0])
        # dict_outputs's buffers, columns, keys and per-agent info template
        self._out_spec = (*self._out_rows, tuple(int(c) for c in self._info_cols),
                          tuple(self.info_keys), dict.fromkeys(self.info_keys))

    def _choose_info_keys(self, keys: Any) -> tuple[str, ...]:
        if keys is None:
            keys = self.seer_model.dict_info_keys
        if keys is None or keys == "all":
            return tuple(self.info_names)
        if isinstance(keys, str):
            raise ConfigError(f"info_keys={keys!r} must be 'all' or a list of names")
        try:
            keys = tuple(keys)
        except TypeError:
            raise ConfigError(f"info_keys={keys!r} must be 'all' or a list of names") from None
        bad = [k for k in keys if k not in self.info_names]
        if bad:
            raise ConfigError(f"info_keys {bad} unknown; available: {list(self.info_names)}")
        return keys

    def __reduce__(self) -> tuple[Any, tuple[Any, dict[str, Any]]]:
        """Pickle as (the model's reference, config): the copy is a fresh env of the same
        configuration (call ``reset`` on it), which is what process-based vector
        wrappers (SuperSuit's ``concat_vec_envs_v1``, Ray) need."""
        m = self.seer_model
        ref = m.reference or functools.partial(type(m), m.folder, m.name)
        return (_rebuild_parallel_env, (ref, self._init_config))

    # -- spaces ---------------------------------------------------------------

    def observation_space(self, agent: str) -> gymnasium.Space:
        """``agent``'s observation space (its group's; a finished agent keeps it)."""
        i = self._agent_idx(agent)
        return self._group_obs_spaces[self._group_of[i]] if self._structured else self._obs_space

    def action_space(self, agent: str) -> gymnasium.Space:
        """``agent``'s action space (its group's; a finished agent keeps it).
        In a masked group it is the agent's own, bound to its mask: ``sample()``
        draws within the mask the agent has now (`DiscreteMasked`,
        `MultiDiscreteMasked`), so code that samples plain actions (RLlib's
        env checker, PettingZoo's tests) draws legal ones; Gymnasium's
        ``sample(mask=...)`` is as it was."""
        i = self._agent_idx(agent)
        return self.action_spaces[self._all_names[i]] if self._structured else self._act_space

    def _agent_action_space(self, i: int) -> gymnasium.Space:
        """Agent ``i``'s action space: its group's, or, in a masked group of
        discrete or multi-discrete actions, one of its own bound to its mask."""
        gi = int(self._group_of[i])
        g = self.groups[gi]
        if not g.mask_len or g.action_kind not in ("discrete", "multi_discrete"):
            return self._group_act_spaces[gi]
        ref = weakref.ref(self)

        def mask_now() -> np.ndarray | None:
            env = ref()
            if env is None or env._needs_reset or env.runtime.closed \
                    or not env.runtime.alive[0, i]:
                return None
            return env._mask_rows(gi, env.runtime.mask[0][i]).astype(np.int8)

        return bound_action_space(g, mask_now)

    def group_of(self, agent: str) -> str:
        """The name of ``agent``'s group (``"agents"`` for a model without groups)."""
        return self.groups[self._group_of[self._agent_idx(agent)]].name

    @property
    def np_random(self) -> np.random.Generator:
        """A NumPy generator for the wrappers that draw randomness of their
        own from the env (SuperSuit's ``frame_skip_v0`` reads
        ``env.unwrapped.np_random``, as of a Gymnasium env): seeded by each
        reset with that reset's seed, so a seeded run draws the same numbers
        on every executor; a random one before the first reset.  The model's
        own randomness never comes from it (its streams are the runtime's)."""
        if self._np_random is None:
            self._np_random = np.random.default_rng()
        return self._np_random

    @property
    def state_space(self) -> gymnasium.Space:
        """The space of `state()`: a float32 Box of the model's state_dim."""
        return self._state_space

    def _agent_idx(self, agent: str) -> int:
        try:
            return self.agent_index[agent]
        except (KeyError, TypeError):
            raise UnknownAgentError(f"{self.seer_model.name}: unknown agent {agent!r}") from None

    # -- episode --------------------------------------------------------------

    @exclusive
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Start a new episode: every agent is live again (`agents` is `possible_agents`).

        Args:
            seed: the episode's seed, an int in ``[0, 2**64)``; the same seed
                gives the same episode on every executor and thread count.
                None: the next seed of this env's own sequence, once a
                reset has started one (as a Gymnasium env's generator goes
                on: ``reset(seed=s)`` once, then ``reset()``, replays the
                same episodes in every run); at the env's first reset the
                model's default seed where it has one (PCS in classic
                mode: 0), else a fresh random one.
            options: accepted for PettingZoo's signature (a dict or None);
                no key is read.

        Returns:
            ``(observations, infos)``, dicts keyed by agent name: fresh
            observation arrays, and each agent's info values.

        Raises:
            ConfigError: a seed that is not an int in range, options that are
                not a dict (its keys are not read); the env is as before.
            ClosedError: the env was closed.
        """
        self._check_open("reset")
        check_options(options)
        seeds = self._seeds(seed, 1) if seed is not None or self._seed_next is None \
            else [self._seed_next]
        cut = self._interrupted
        self._interrupted = _CUT_SHORT_RESET  # until Python has caught up
        try:
            self.runtime.reset(seeds)
        except SeerError as exc:
            if raised_by_seer(exc):  # the runtime reports the truth (and marks its instances)
                self._interrupted = cut
            raise
        self._seed_next = next_seed(seeds[0])
        self._np_random = np.random.default_rng(seeds[0])
        self._live_names = self._all_names
        self._live_idx = np.arange(len(self._all_names))
        self.agents = list(self._all_names)
        self._needs_reset = False
        (obs, _, _, _, infos), _ = self._outputs(self._live_idx)
        self._interrupted = ""
        if self.render_mode == "human":
            self._render()
        return obs, infos

    def _write_actions(self, actions: Mapping[str, Any]) -> None:
        """Check the actions' structure and write them into the runtime's buffer.

        Value checks (range, NaN/inf) happen in C, before any state changes.
        """
        sz = self.sizes
        names = self._live_names
        if self._structured:  # each agent's group's kind: agent by agent
            self._write_actions_checked(actions)
            return
        # exactly the live agents with plain values: one pass in C
        if type(actions) is dict and _kernels.dict_actions(
                actions, names, self._live_idx, self._act_row, sz.action_dim,
                sz.action_kind == "discrete"):
            return
        if not isinstance(actions, Mapping):
            raise InvalidActionError(
                f"actions must be a dict agent -> action, got {type(actions).__name__}"
            )
        # Fast path: exactly the live agents, homogeneous well-typed values.
        # (A Mapping's own methods are user code: anything they raise takes
        # the checked path, which says what was wrong.)
        try:
            vals = [actions[a] for a in names] if len(actions) == len(names) else None
        except Exception:
            vals = None
        if vals is not None and self._fast_types(vals):
            try:
                arr = np.asarray(vals)
            except ValueError:  # ragged shapes: let the slow path say which
                arr = None
            if arr is not None and self._fast_ok(arr):
                if sz.action_kind == "discrete":
                    self.runtime.actions[0][self._live_idx] = arr.reshape(-1)
                else:
                    self.runtime.actions[0][self._live_idx] = _to_float32(arr)
                return
        self._write_actions_checked(actions)

    def _fast_types(self, vals: list[Any]) -> bool:
        """Values whose types cannot hide a wrong dtype once stacked (bools
        stacked with ints become ints, so they take the checked path)."""
        if self.sizes.action_kind == "discrete":
            return set(map(type, vals)) <= _INT_TYPES
        return all(type(v) is np.ndarray and v.dtype.kind == "f" for v in vals)

    def _fast_ok(self, arr: np.ndarray) -> bool:
        sz = self.sizes
        n = len(self._live_names)
        if sz.action_kind == "discrete":
            return (
                arr.dtype.kind in "iu"
                and arr.shape in ((n,), (n, 1))
                and (n == 0 or (int(arr.min()) >= -(2**31) and int(arr.max()) < 2**31))
            )
        return arr.dtype.kind in "fiu" and arr.shape == (n, sz.action_dim)

    def check_action(self, agent: str, action: Any) -> None:
        """Raise `InvalidActionError` if ``action`` is not one ``agent`` may
        take now (unknown or finished agent, wrong shape or dtype, out of range,
        NaN); the AEC form checks each action as it comes."""
        self._agent_idx(agent)
        if agent not in self._live_names:
            raise InvalidActionError(
                f"{self.seer_model.name}: agent {agent!r} is done or the episode has not "
                "started, and cannot act")
        sz = self.sizes
        if self._structured:
            self._check_group_action(agent, action)
            return
        if sz.action_kind == "discrete":
            v = _discrete_value(agent, action, sz.action_n)
            if not 0 <= v < sz.action_n:
                raise InvalidActionError(
                    f"{self.seer_model.name}: action for {agent!r} is {v}, outside "
                    f"[0, {sz.action_n})")
        else:
            arr = _box_value(agent, action, sz.action_dim)
            if not np.isfinite(arr).all():
                raise InvalidActionError(
                    f"{self.seer_model.name}: action for {agent!r} is {arr.tolist()}: "
                    "actions must be finite")

    def _check_group_action(self, agent: str, action: Any) -> None:
        """check_action for an agent of a structured model: its group's kind,
        range and (unless ``enforce_masks=False``) its current mask."""
        i = self._agent_idx(agent)
        g = self.groups[self._group_of[i]]
        model = self.seer_model.name
        v = _group_value(agent, action, g)
        if g.action_kind == "box":
            if not np.isfinite(v).all():
                raise InvalidActionError(
                    f"{model}: action for {agent!r} is {v.tolist()}: actions must be finite")
            return
        parts = [int(v)] if g.action_kind == "discrete" else [int(x) for x in v]
        sizes = [g.action_n] if g.action_kind == "discrete" else list(g.nvec)
        mask = None
        if g.mask_len and self.runtime.enforce_masks:
            mask = self.runtime.mask[0, i] if not self._flat else \
                self._mask_rows(int(self._group_of[i]), self.runtime.mask[0, i])
        off = 0
        for j, (x, n) in enumerate(zip(parts, sizes, strict=True)):
            what = "" if g.action_kind == "discrete" else f" component {j}"
            if not 0 <= x < n:
                raise InvalidActionError(
                    f"{model}: action for {agent!r}{what} is {x}, outside [0, {n})")
            if mask is not None and not mask[off + x]:
                raise InvalidActionError(
                    f"{model}: action for {agent!r}{what} is {x}, which its action mask "
                    f"forbids at step {self.runtime.step_index(0)}")
            off += n

    def _write_actions_checked(self, actions: Mapping[str, Any]) -> None:
        """Agent by agent, with a message naming the first bad agent or value.

        The actions' keys and a Mapping's methods are user code: what they
        raise (an Exception) becomes an InvalidActionError naming the agent."""
        model = self.seer_model.name
        names = self._live_names
        try:
            keys = list(actions)
        except Exception as exc:
            raise InvalidActionError(f"{model}: the actions' keys cannot be read: {exc!r}") \
                from exc
        # Keys of agents no longer live (finished earlier in the episode or in
        # the last step) are ignored, values and all, as PettingZoo's own envs
        # do: loops that act on every observation they got work.  Unknown
        # names are refused.
        for agent in keys:
            try:
                known = agent in self.agent_index
            except TypeError:  # unhashable
                known = False
            except Exception as exc:
                raise InvalidActionError(
                    f"{model}: the action key {agent!r} cannot be compared with the agents' "
                    f"names: {exc!r}") from exc
            if not known:
                raise UnknownAgentError(f"{model}: unknown agent {agent!r}")
        sz = self.sizes
        rows = []
        missing = []
        for agent in names:
            try:
                value = actions[agent]
            except KeyError:
                missing.append(agent)
                continue
            except Exception as exc:
                raise InvalidActionError(
                    f"{model}: reading the action for {agent!r} failed: {exc!r}") from exc
            if self._structured:
                rows.append(_group_value(agent, value, self.groups[self._group_of[
                    self.agent_index[agent]]]))
            elif sz.action_kind == "discrete":
                rows.append(_discrete_value(agent, value, sz.action_n))
            else:
                rows.append(_box_value(agent, value, sz.action_dim))
        if missing:
            raise InvalidActionError(
                f"{model}: missing actions for live agent(s) {missing[:5]}"
                + (" ..." if len(missing) > 5 else "")
            )
        if self._structured:  # each into its group's view of the buffer
            views = self.runtime.group_actions
            if not self._flat:
                for a, row in zip(self._live_idx.tolist(), rows, strict=True):
                    gi = self._group_of[a]
                    views[gi][0, a - self.groups[gi].first] = row
            else:  # flatten_actions: a flattened group's joint actions as components
                rt = self.runtime
                for agent, a, row in zip(names, self._live_idx.tolist(), rows, strict=True):
                    gi = self._group_of[a]
                    f = self._flat.get(gi)
                    if f is None:
                        views[gi][0, a - self.groups[gi].first] = row
                        continue
                    comps = f.checked_components(row, f"{model}: action for {agent!r} is")
                    if self.groups[gi].mask_len and rt.enforce_masks:
                        f.refuse_forbidden(np.array([row]), rt.mask[0, a:a + 1],
                                           np.ones(1, bool), f"{model}: action for {agent!r}")
                    views[gi][0, a - self.groups[gi].first] = comps
        elif rows:
            self.runtime.actions[0][self._live_idx] = np.asarray(rows)

    @exclusive
    def step(self, actions: Mapping[str, Any]) -> tuple[
        dict[str, np.ndarray],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """Apply one action per live agent and run the step's events; returns
        ``(observations, rewards, terminations, truncations, infos)`` for the
        agents live when the call started (those that finish in it report their
        flags, then leave `agents`).

        ``actions`` must name every live agent.  Actions for agents that are
        no longer live (finished earlier in the episode, or in the last step)
        are ignored, values and all, as PettingZoo's own envs do, so a loop
        keyed by the last observations works:

        ```python
        obs, infos = env.reset(seed=0)
        while env.agents:
            actions = {a: env.action_space(a).sample() for a in obs}
            obs, rewards, terminations, truncations, infos = env.step(actions)
        ```

        Unknown agent names, a missing live agent, wrong shapes or dtypes,
        out-of-range values and NaN raise `InvalidActionError` before
        anything changes."""
        self._check_open("step")
        if self._needs_reset:
            raise StateError(f"{self.seer_model.name}: call reset() before step()")
        if not self._live_names:
            self._step_after_the_end(actions)
            return {}, {}, {}, {}, {}
        self._write_actions(actions)
        # set before the native step: a KeyboardInterrupt anywhere from here
        # until Python has caught up leaves the env needing reset()
        self._interrupted = _CUT_SHORT_STEP
        try:
            self.runtime.step()
        except SeerError as exc:  # the runtime reports the truth itself (nothing changed,
            if raised_by_seer(exc):  # or its instances need a reset and say so)
                self._interrupted = ""
            raise
        live_idx = self._live_idx
        out, ndone = self._outputs(live_idx)
        if ndone:
            _, _, term, trunc, _ = self._out_rows
            done = term[live_idx] | trunc[live_idx]
            self._live_idx = live_idx[~done]
            self._live_names = tuple(self._names[self._live_idx].tolist())
            self.agents = list(self._live_names)
        self._interrupted = ""
        if self.render_mode == "human":
            self._render()
        return out

    def _step_after_the_end(self, actions: Any) -> None:
        """A step once every agent finished: empty dicts for empty actions
        (wrappers that step until their own notion of the end, such as
        SuperSuit's black_death, get empty dicts back), else StateError."""
        name = self.seer_model.name
        if isinstance(actions, Mapping):
            try:
                if not actions:
                    return
                some = list(itertools.islice(iter(actions), 3))
            except Exception:
                some = []
            raise StateError(f"{name}: the episode is over (every agent finished); actions "
                             f"for {some} cannot be applied: call reset()")
        raise StateError(f"{name}: the episode is over; call reset()")

    def _outputs(self, live_idx: np.ndarray) -> tuple[tuple[dict, dict, dict, dict, dict], int]:
        """Dicts for the agents ``live_idx`` (alive when the call started: the
        agents of ``self._live_names``, which is only replaced after this
        call), and how many of them finished."""
        if self._structured:
            return self._group_outputs(live_idx)
        # one pass (in C where _fast is built), the observations' copy included
        return _kernels.dict_outputs(
            self._live_names, live_idx, self._out_spec)

    def _group_outputs(self, live_idx: np.ndarray) -> tuple[tuple[dict, dict, dict, dict, dict],
                                                              int]:
        """_outputs for a structured model: each agent's observation is its
        group's elements (with its action mask, PettingZoo's observation dict,
        for a masked group), its infos its group's values."""
        rt = self.runtime
        names = self._live_names
        obs: dict[str, Any] = {}
        infos: dict[str, dict[str, Any]] = {}
        keys = set(self.info_keys)
        rows = live_idx.tolist()
        ob, mk, info = rt.obs[0], rt.mask[0], rt.info[0]
        in_infos = self.mask_in_infos
        only = in_infos == "only"
        flat = bool(self._flat)
        for name, a in zip(names, rows, strict=True):
            g = self.groups[self._group_of[a]]
            o = ob[a, :g.obs_dim].copy()
            infos[name] = {k: float(info[a, j]) for j, k in enumerate(g.info_names) if k in keys}
            if g.mask_len:
                m = (mk[a, :g.mask_len] if not flat else
                     self._mask_rows(self._group_of[a], mk[a])).astype(np.int8)
                if only:
                    obs[name] = o
                    infos[name]["action_mask"] = m
                else:
                    obs[name] = {"observation": o, "action_mask": m}
                    if in_infos:  # a copy of its own: a reader may change one
                        infos[name]["action_mask"] = m.copy()
            else:
                obs[name] = o
        term, trunc = rt.terminated[0][live_idx], rt.truncated[0][live_idx]
        return (
            obs,
            dict(zip(names, rt.reward[0][live_idx].tolist(), strict=True)),
            _kernels.flags(list(names), term),
            _kernels.flags(list(names), trunc),
            infos,
        ), int((term | trunc).sum())

    @exclusive
    def state(self) -> np.ndarray:
        """The global state (a fresh float32 array in `state_space`), for a
        centralised critic; `StateError` before the first `reset()`."""
        self._check_open("state")
        if self._needs_reset:
            raise StateError(f"{self.seer_model.name}: call reset() before state()")
        return self.runtime.global_state(0)

    # -- snapshots ---------------------------------------------------------------

    @exclusive
    def snapshot(self) -> EnvSnapshot:
        """The env's whole state now, as an `EnvSnapshot` (opaque,
        picklable) that `restore` returns to, here or in a new env of the
        same model and configuration (any executor and thread count):

        ```python
        obs, infos = env.reset(seed=0)
        snap = env.snapshot()
        a = env.step(actions)
        env.restore(snap)
        b = env.step(actions)        # the same outputs as a, bit for bit
        ```

        Raises `StateError` before ``reset()`` and
        `ClosedError` after ``close()``."""
        return self._snapshot_of("parallel", (0,), {
            "live": self._live_names, "seed_next": self._seed_next,
            "np_random": None if self._np_random is None
            else self._np_random.bit_generator.state})

    @exclusive
    def restore(self, snap: EnvSnapshot) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Go back to ``snap`` (from `snapshot` of this env or of one of the
        same model and configuration); returns ``(observations, infos)`` of the
        live agents, as at that moment.  Steps from here are those the env
        made after the snapshot, bit for bit, and so are the episodes of
        ``reset()`` without a seed (the env's seed sequence travels with
        it) and the draws of `np_random` (its generator's state too: a
        wrapper's own randomness, SuperSuit's frame skips, replays).
        Another model, configuration or face, or damaged bytes, raise
        `SnapshotError` and leave the env unchanged; a never-reset env may
        be restored."""
        self._check_open("restore")
        self._check_parallel_snapshot(snap, "parallel")
        return self._restore_unchecked(snap)

    def _check_parallel_snapshot(self, snap: Any, face: str) -> None:
        """Everything of a ParallelEnv's snapshot checked, nothing changed: its
        live agents are this model's, each once, and those alive in its bytes."""
        self._check_snapshot(snap, face)
        name = self.seer_model.name
        live = snap.state.get("live")
        # (the seed sequence and np_random's state came after 0.3.0: an older
        # snapshot has neither)
        seed_next = snap.state.get("seed_next")
        if len(snap.instances) != 1 \
                or set(snap.state) - {"seed_next", "np_random"} != {"live"} \
                or type(live) is not tuple or not (
                    seed_next is None or type(seed_next) is int and 0 <= seed_next < 2**64):
            raise SnapshotError(f"{name}: the snapshot is malformed (a ParallelEnv's holds "
                                "one instance, its live agents, its next seed and its "
                                "np_random's state)")
        generator_of(snap.state.get("np_random"), name)
        idx = [self.agent_index.get(a) if type(a) is str else None for a in live]
        unknown = [a for a, i in zip(live, idx, strict=True) if i is None]
        if unknown:
            raise SnapshotError(f"{name}: the snapshot's live agents {unknown[:5]!r} are not "
                                "agents of this model")
        if len(set(live)) != len(live):
            twice = sorted((a for a, c in collections.Counter(live).items() if c > 1),
                           key=lambda a: self.agent_index[a])
            raise SnapshotError(f"{name}: the snapshot names live agent(s) {twice[:5]!r} more "
                                "than once")
        (alive,) = self._check_instances([(0, snap.instances[0])])
        if not np.array_equal(np.asarray(idx, dtype=np.intp), np.flatnonzero(alive)):
            want = tuple(self.possible_agents[i] for i in np.flatnonzero(alive))
            ended = [a for a in live if not alive[self.agent_index[a]]]
            have = set(live)
            left = [a for a in want if a not in have]
            raise SnapshotError(
                f"{name}: the snapshot's live agents do not agree with its runtime state: "
                + (f"{ended[:5]!r} live but finished there; " if ended else "")
                + (f"{left[:5]!r} alive there but not live; " if left else "")
                + ("" if ended or left else "not in the agents' order; ")
                + "it was changed after snapshot() made it")

    def _restore_unchecked(self, snap: EnvSnapshot) -> tuple[dict[str, np.ndarray],
                                                             dict[str, dict[str, Any]]]:
        cut = self._interrupted
        self._interrupted = _CUT_SHORT_RESTORE  # until Python has caught up
        try:
            self.runtime.restore(0, snap.instances[0])
        except SeerError as exc:  # checked already: out of memory, and nothing changed
            if raised_by_seer(exc):
                self._interrupted = cut
            raise
        live: tuple[str, ...] = snap.state["live"]
        if "seed_next" in snap.state:  # the sequence goes on as it would have there
            self._seed_next = snap.state["seed_next"]
        if "np_random" in snap.state:  # and so do a wrapper's draws
            self._np_random = generator_of(snap.state["np_random"], self.seer_model.name)
        self._live_names = live
        self._live_idx = np.array([self.agent_index[a] for a in live], dtype=np.intp)
        self.agents = list(live)
        self._needs_reset = False
        self._interrupted = ""
        (obs, _, _, _, infos), _ = self._outputs(self._live_idx)
        return obs, infos

    @exclusive
    def render(self) -> np.ndarray | None:
        """The current frame: an ``(H, W, 3)`` uint8 array with
        ``render_mode="rgb_array"``; shown in a window with ``"human"`` (returns
        None); None with a warning without a render mode."""
        return self._render()

    def _render(self) -> np.ndarray | None:
        self._check_open("render")
        if self.render_mode is None:
            gymnasium.logger.warn("render() called with render_mode=None")
            return None
        if self._needs_reset:
            raise StateError(f"{self.seer_model.name}: call reset() before render()")
        assert self.seer_model.render is not None
        frame = self.seer_model.render(self)
        if self.render_mode == "rgb_array":
            return frame
        self._show(frame)
        return None

    def _show(self, frame: np.ndarray) -> None:
        """Show a frame in a window (pygame) where a display exists."""
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            if not getattr(self, "_warned_display", False):
                gymnasium.logger.warn("render_mode='human' but no display: frames not shown")
                self._warned_display = True
            return
        try:
            import pygame
        except ImportError:
            raise StateError("render_mode='human' needs pygame (pip install pygame)") from None
        if self._window is None:
            pygame.init()
            self._window = pygame.display.set_mode((frame.shape[1], frame.shape[0]))
            pygame.display.set_caption(self.seer_model.name)
        surf = pygame.surfarray.make_surface(np.transpose(frame, (1, 0, 2)))
        self._window.blit(surf, (0, 0))
        pygame.event.pump()
        pygame.display.flip()

    def close(self) -> None:
        """Free the env; safe at any time, from any thread; again: nothing.

        From the moment it is called every other call raises
        [`ClosedError`][seer_env.errors.ClosedError].  A call running on another
        thread ends normally first (close() waits for it).  On the thread
        inside a call -- a signal handler (``signal.signal(SIGINT, ...)``) or a
        callback, which Python runs between two bytecodes of that call --
        close() returns at once and the env is closed when the call ends; the
        call then raises ClosedError (or the exception it was raising, such as
        a KeyboardInterrupt)."""
        self._busy.close(close_now, self)

    def _close_now(self) -> None:
        if self._window is not None:
            import pygame

            pygame.display.quit()
            self._window = None
        self.runtime.close()
        self._needs_reset = True


def env_class(model: Model, base: type[SeerParallelEnv]) -> type[SeerParallelEnv]:
    """``base`` specialised for ``model``: a subclass named after it whose class
    attribute ``metadata`` is the model's (as PettingZoo envs declare it)."""
    meta = {
        "name": model.name,
        "render_modes": ["rgb_array", "human"] if model.render else [],
        "render_fps": model.render_fps,
        "is_parallelizable": True,
    }
    return type(f"{model.name}_ParallelEnv", (base,),
                {"metadata": meta, "__module__": base.__module__,
                 "__doc__": base.__doc__})


def _rebuild_parallel_env(ref: Callable[[], Model], config: dict[str, Any]) -> SeerParallelEnv:
    """An unpickled env: a fresh one of the same configuration, of the model
    ``ref()`` (the model's picklable reference, `Model.reference`)."""
    env: SeerParallelEnv = ref().parallel_env(**config)
    return env
