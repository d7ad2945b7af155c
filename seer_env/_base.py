"""Generic PettingZoo / batched environments over a native model.

An env module (``seer_env/envs/<name>_v0.py``) describes itself with an
:class:`EnvSpec` and gets both faces from here::

    SPEC = EnvSpec(name="phold_v0", model="phold", defaults={...}, build=_build,
                   agent_names=lambda cfg: [f"entity_{i}" for i in range(cfg["num_entities"])])

    def parallel_env(**config) -> SeerParallelEnv:
        return SeerParallelEnv(SPEC, **config)

    def vector_env(num_envs: int, **config) -> SeerVectorEnv:
        return SeerVectorEnv(SPEC, num_envs, **config)

Every step is one native call; Python only validates the actions' structure
(agents, shapes, dtypes) and copies the outputs the user keeps.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv

from ._runtime import Runtime, Sizes
from .errors import ClosedError, ConfigError, InvalidActionError, StateError

#: Keys every env accepts besides its own config.
COMMON_KEYS = ("threads", "executor", "render_mode")

_MAX_SEED = 2**64 - 1


@dataclass(frozen=True)
class EnvSpec:
    """What an env module tells the generic layer.

    Attributes:
        name: versioned env name, e.g. ``"pcs_v0"``.
        model: C model name (``seer_model_<model>``, ``seer_<model>_config``).
        defaults: every Python config key with its default (threads, executor and
            render_mode excluded: the base handles them).
        build: validated Python config -> (C config struct fields, max_cycles);
            raises :class:`~seer_env.errors.ConfigError` naming the bad key.
        agent_names: config -> agent names, index i naming agent/entity i.
        obs_bounds: optional (config, sizes) -> (low, high) of the observation Box.
        default_seed: optional config -> seed used by ``reset(seed=None)``
            (None: draw a fresh random seed).
        render: optional env -> (H, W, 3) uint8 frame of instance 0.
        render_fps: frames per second advertised in ``metadata``.
    """

    name: str
    model: str
    defaults: Mapping[str, Any]
    build: Callable[[dict[str, Any]], tuple[dict[str, Any], int]]
    agent_names: Callable[[dict[str, Any]], list[str]]
    obs_bounds: Callable[[dict[str, Any], Sizes], tuple[np.ndarray, np.ndarray]] | None = None
    default_seed: Callable[[dict[str, Any]], int | None] | None = None
    render: Callable[[Any], np.ndarray] | None = None
    render_fps: int = 10
    extra: Mapping[str, Any] = field(default_factory=dict)

    def resolve(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Defaults overlaid with ``config``; unknown keys raise ConfigError."""
        unknown = sorted(set(config) - set(self.defaults) - set(COMMON_KEYS))
        if unknown:
            raise ConfigError(
                f"{self.name}: unknown config key(s) {unknown}; "
                f"valid keys: {sorted(set(self.defaults) | set(COMMON_KEYS))}"
            )
        cfg = dict(self.defaults)
        cfg.update({k: v for k, v in config.items() if k not in COMMON_KEYS})
        return cfg


def _seed_value(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ConfigError(f"seed={seed!r} must be an int (or None)")
    if not 0 <= int(seed) <= _MAX_SEED:
        raise ConfigError(f"seed={seed} must be in [0, 2**64)")
    return int(seed)


def _fresh_seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


def _spaces(spec: EnvSpec, cfg: dict[str, Any], sz: Sizes) -> tuple[gymnasium.Space, ...]:
    if spec.obs_bounds is not None:
        low, high = spec.obs_bounds(cfg, sz)
        obs = gymnasium.spaces.Box(
            np.asarray(low, np.float32), np.asarray(high, np.float32), dtype=np.float32
        )
    else:
        obs = gymnasium.spaces.Box(-np.inf, np.inf, shape=(sz.obs_dim,), dtype=np.float32)
    if sz.action_kind == "discrete":
        act: gymnasium.Space = gymnasium.spaces.Discrete(sz.action_n)
    else:
        act = gymnasium.spaces.Box(
            sz.action_low, sz.action_high, shape=(sz.action_dim,), dtype=np.float32
        )
    return obs, act


class _SeerEnvCommon:
    """Construction shared by the ParallelEnv and the batched env."""

    spec_: EnvSpec
    runtime: Runtime

    def _setup(self, spec: EnvSpec, num_instances: int, config: Mapping[str, Any]) -> None:
        self.spec_ = spec
        self.config = spec.resolve(config)
        self.threads = config.get("threads", "auto")
        self.executor = config.get("executor", "parallel")
        self.render_mode = config.get("render_mode")
        if self.render_mode is not None and self.render_mode not in ("rgb_array", "human"):
            raise ConfigError(
                f"render_mode={self.render_mode!r} must be None, 'rgb_array' or 'human'"
            )
        if self.render_mode is not None and spec.render is None:
            raise ConfigError(f"{spec.name} cannot render")
        c_fields, max_cycles = spec.build(self.config)
        self.runtime = Runtime(
            spec.model, c_fields, num_instances, self.executor, self.threads, max_cycles
        )
        self.max_cycles = max_cycles
        self.sizes = self.runtime.sizes
        self.possible_agents = list(spec.agent_names(self.config))
        if len(self.possible_agents) != self.sizes.num_agents:
            raise ConfigError(
                f"{spec.name}: {len(self.possible_agents)} agent names for "
                f"{self.sizes.num_agents} agents"
            )
        self.agent_index = {a: i for i, a in enumerate(self.possible_agents)}
        self._obs_space, self._act_space = _spaces(spec, self.config, self.sizes)
        self.info_names = self.runtime.info_names

    def _seeds(self, seed: int | None, n: int) -> list[int]:
        """Seeds of n instances: ``seed + i`` (mod 2**64), or the spec's default."""
        if seed is None and self.spec_.default_seed is not None:
            seed = self.spec_.default_seed(self.config)
        base = _fresh_seed() if seed is None else _seed_value(seed)
        return [(base + i) & _MAX_SEED for i in range(n)]


class SeerParallelEnv(_SeerEnvCommon, ParallelEnv):
    """A PettingZoo ``ParallelEnv`` whose steps run on the seer runtime.

    Example::

        from seer_env.envs import phold_v0
        env = phold_v0.parallel_env(num_entities=16, max_cycles=10)
        obs, infos = env.reset(seed=3)
        while env.agents:
            actions = {a: env.action_space(a).sample() for a in env.agents}
            obs, rewards, terminations, truncations, infos = env.step(actions)
        env.close()

    Returned observations are fresh arrays (not overwritten by later steps).
    ``env.runtime`` is the underlying :class:`~seer_env._runtime.Runtime`.
    """

    def __init__(self, spec: EnvSpec, **config: Any) -> None:
        self._setup(spec, 1, config)
        self.metadata = {
            "name": spec.name,
            "render_modes": ["rgb_array", "human"] if spec.render else [],
            "render_fps": spec.render_fps,
            "is_parallelizable": True,
        }
        self.agents: list[str] = []
        self._needs_reset = True
        self._window: Any = None
        self._names = np.array(self.possible_agents, dtype=object)

    # -- spaces ---------------------------------------------------------------

    def observation_space(self, agent: str) -> gymnasium.Space:
        self._agent_idx(agent)
        return self._obs_space

    def action_space(self, agent: str) -> gymnasium.Space:
        self._agent_idx(agent)
        return self._act_space

    @property
    def state_space(self) -> gymnasium.Space:
        return gymnasium.spaces.Box(
            -np.inf, np.inf, shape=(self.sizes.state_dim,), dtype=np.float32
        )

    def _agent_idx(self, agent: str) -> int:
        try:
            return self.agent_index[agent]
        except (KeyError, TypeError):
            raise InvalidActionError(f"{self.spec_.name}: unknown agent {agent!r}") from None

    # -- episode --------------------------------------------------------------

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        self.runtime.reset(self._seeds(seed, 1))
        self.agents = list(self.possible_agents)
        self._needs_reset = False
        self._last_live = np.ones(len(self.agents), dtype=bool)
        obs, _, _, _, infos = self._outputs(self._last_live)
        if self.render_mode == "human":
            self.render()
        return obs, infos

    def _write_actions(self, actions: Mapping[str, Any]) -> None:
        rt = self.runtime
        if not isinstance(actions, Mapping):
            raise InvalidActionError(
                f"actions must be a dict agent -> action, got {type(actions).__name__}"
            )
        live = set(self.agents)
        for agent in actions:
            if agent not in self.agent_index:
                raise InvalidActionError(f"{self.spec_.name}: unknown agent {agent!r}")
            if agent not in live:
                raise InvalidActionError(
                    f"{self.spec_.name}: agent {agent!r} is done (terminated or truncated) "
                    "and cannot act"
                )
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise InvalidActionError(
                f"{self.spec_.name}: missing actions for live agent(s) {missing[:5]}"
                + (" ..." if len(missing) > 5 else "")
            )
        sz = self.sizes
        if sz.action_kind == "discrete":
            buf = np.zeros(sz.num_agents, dtype=np.int32)
            for agent, a in actions.items():
                buf[self.agent_index[agent]] = _discrete_value(agent, a, sz.action_n)
            rt.actions[0] = buf
        else:
            buf = np.zeros((sz.num_agents, sz.action_dim), dtype=np.float32)
            for agent, a in actions.items():
                buf[self.agent_index[agent]] = _box_value(agent, a, sz.action_dim)
            rt.actions[0] = buf

    def step(self, actions: Mapping[str, Any]) -> tuple[
        dict[str, np.ndarray],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        if self.runtime.closed:
            raise ClosedError(f"{self.spec_.name}: step() on a closed env")
        if self._needs_reset:
            raise StateError(f"{self.spec_.name}: call reset() before step()")
        if not self.agents:
            raise StateError(f"{self.spec_.name}: the episode is over; call reset()")
        self._write_actions(actions)
        live = self.runtime.alive[0].copy()
        self.runtime.step()
        out = self._outputs(live)
        rt = self.runtime
        done = (rt.terminated[0] | rt.truncated[0]) & live
        if done.any():
            self.agents = [a for a in self.agents if not done[self.agent_index[a]]]
        if self.render_mode == "human":
            self.render()
        return out

    def _outputs(self, live: np.ndarray) -> tuple[dict, dict, dict, dict, dict]:
        rt = self.runtime
        idx = np.flatnonzero(live)
        names = self._names[idx].tolist()
        obs_arr = rt.obs[0][idx]  # fancy indexing copies: safe to keep
        rew = rt.reward[0][idx].tolist()
        term = rt.terminated[0][idx].tolist()
        trunc = rt.truncated[0][idx].tolist()
        info_rows = rt.info[0][idx].tolist()
        keys = self.info_names
        obs = dict(zip(names, obs_arr))
        return (
            obs,
            dict(zip(names, rew)),
            dict(zip(names, term)),
            dict(zip(names, trunc)),
            {n: dict(zip(keys, row)) for n, row in zip(names, info_rows)},
        )

    def state(self) -> np.ndarray:
        if self._needs_reset:
            raise StateError(f"{self.spec_.name}: call reset() before state()")
        return self.runtime.global_state(0)

    def render(self) -> np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called with render_mode=None")
            return None
        if self._needs_reset:
            raise StateError(f"{self.spec_.name}: call reset() before render()")
        assert self.spec_.render is not None
        frame = self.spec_.render(self)
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
            import pygame  # type: ignore[import-not-found]
        except ImportError:
            raise StateError("render_mode='human' needs pygame (pip install pygame)") from None
        if self._window is None:
            pygame.init()
            self._window = pygame.display.set_mode((frame.shape[1], frame.shape[0]))
            pygame.display.set_caption(self.spec_.name)
        surf = pygame.surfarray.make_surface(np.transpose(frame, (1, 0, 2)))
        self._window.blit(surf, (0, 0))
        pygame.event.pump()
        pygame.display.flip()

    def close(self) -> None:
        if self._window is not None:
            import pygame  # type: ignore[import-not-found]

            pygame.display.quit()
            self._window = None
        self.runtime.close()
        self._needs_reset = True


def _discrete_value(agent: str, a: Any, n: int) -> int:
    arr = np.asarray(a)
    if arr.shape not in ((), (1,)):
        raise InvalidActionError(
            f"action for {agent!r} must be a scalar int, got shape {arr.shape}"
        )
    if not (np.issubdtype(arr.dtype, np.integer) and arr.dtype != np.bool_):
        raise InvalidActionError(
            f"action for {agent!r} must be an integer, got dtype {arr.dtype} ({a!r})"
        )
    v = int(arr.reshape(()))
    if not -(2**31) <= v < 2**31:
        # The range check against [0, n) happens in C; this only keeps the
        # value representable in the runtime's int32 buffer.
        raise InvalidActionError(f"action for {agent!r} is {v}, outside [0, {n})")
    return v


def _box_value(agent: str, a: Any, dim: int) -> np.ndarray:
    arr = np.asarray(a)
    if arr.shape != (dim,):
        raise InvalidActionError(
            f"action for {agent!r} must have shape ({dim},), got {arr.shape}"
        )
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise InvalidActionError(f"action for {agent!r} has dtype {arr.dtype}; need float")
    if arr.dtype == np.bool_:
        raise InvalidActionError(f"action for {agent!r} has dtype bool; need float")
    return _to_float32(arr)


_F32_MAX = float(np.finfo(np.float32).max)


def _to_float32(arr: np.ndarray) -> np.ndarray:
    """Cast to float32 keeping finite values finite (C clips them to the Box and
    rejects NaN/inf, so a huge finite float64 must not turn into inf here)."""
    arr = np.asarray(arr, dtype=np.float64)
    return np.where(np.isfinite(arr), np.clip(arr, -_F32_MAX, _F32_MAX), arr).astype(np.float32)


class SeerVectorEnv(_SeerEnvCommon):
    """``num_envs`` independent instances stepped together, as arrays.

    Shapes: observations ``(num_envs, num_agents, obs_dim)``; rewards,
    terminations, truncations and ``infos["alive"]`` ``(num_envs, num_agents)``.
    Actions: ``(num_envs, num_agents)`` ints or ``(num_envs, num_agents, dim)``
    floats; entries of agents that are not alive are ignored.

    Autoreset (Gymnasium's next-step mode): after an instance's last live agent
    finishes, the next ``step`` resets that instance instead of stepping it
    (its actions are ignored) and returns its reset observations with zero
    rewards.

    Example::

        from seer_env.envs import phold_v0
        venv = phold_v0.vector_env(4, num_entities=16)
        obs, infos = venv.reset(seed=0)
        obs, rew, term, trunc, infos = venv.step(np.zeros((4, 16), np.int64))

    Returned arrays are copies unless ``copy=False`` was given, in which case
    they are views of the runtime's buffers, overwritten by the next call.
    """

    def __init__(self, spec: EnvSpec, num_envs: int, copy: bool = True, **config: Any) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
            raise ConfigError(f"num_envs={num_envs!r} must be a positive int")
        if num_envs < 1:
            raise ConfigError(f"num_envs={num_envs} must be >= 1")
        self._setup(spec, int(num_envs), config)
        self.num_envs = int(num_envs)
        self.copy = bool(copy)
        self.single_observation_space = self._obs_space
        self.single_action_space = self._act_space
        self._needs_reset = True
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._next_seeds: list[int] = []

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        seeds = self._seeds(seed, self.num_envs)
        self.runtime.reset(seeds)
        self._next_seeds = [(s + self.num_envs) & _MAX_SEED for s in seeds]
        self._needs_reset = False
        self._autoreset[:] = False
        rt = self.runtime
        return self._arr(rt.obs), self._infos()

    def _arr(self, a: np.ndarray) -> np.ndarray:
        return a.copy() if self.copy else a

    def _infos(self) -> dict[str, np.ndarray]:
        rt = self.runtime
        infos = {"alive": self._arr(rt.alive), "active": self._arr(rt.active)}
        for j, name in enumerate(self.info_names):
            infos[name] = rt.info[:, :, j].copy()
        return infos

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        rt = self.runtime
        if rt.closed:
            raise ClosedError(f"{self.spec_.name}: step() on a closed env")
        if self._needs_reset:
            raise StateError(f"{self.spec_.name}: call reset() before step()")
        sz = self.sizes
        arr = np.asarray(actions)
        if sz.action_kind == "discrete":
            want: tuple[int, ...] = (self.num_envs, sz.num_agents)
            if not np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_:
                raise InvalidActionError(f"actions must be integers, got dtype {arr.dtype}")
        else:
            want = (self.num_envs, sz.num_agents, sz.action_dim)
            if not np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_:
                raise InvalidActionError(f"actions must be floats, got dtype {arr.dtype}")
        if arr.shape != want:
            raise InvalidActionError(f"actions must have shape {want}, got {arr.shape}")
        if sz.action_kind == "discrete" and (arr.min() < -(2**31) or arr.max() >= 2**31):
            raise InvalidActionError("discrete actions out of int32 range")
        stepping = ~self._autoreset
        rt.actions[:] = arr if sz.action_kind == "discrete" else _to_float32(arr)
        if stepping.any():
            rt.step(stepping)
        if self._autoreset.any():
            idx = np.flatnonzero(self._autoreset)
            seeds = [0] * self.num_envs
            for i in idx:
                seeds[i] = self._next_seeds[i]
                self._next_seeds[i] = (self._next_seeds[i] + self.num_envs) & _MAX_SEED
            rt.reset(seeds, self._autoreset)
        self._autoreset = ~rt.alive.any(axis=1)
        return (
            self._arr(rt.obs),
            self._arr(rt.reward),
            self._arr(rt.terminated),
            self._arr(rt.truncated),
            self._infos(),
        )

    def state(self) -> np.ndarray:
        """Global states, shape (num_envs, state_dim)."""
        return np.stack([self.runtime.global_state(i) for i in range(self.num_envs)])

    def close(self) -> None:
        self.runtime.close()
        self._needs_reset = True
