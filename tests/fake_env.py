"""A pure-Python stand-in for the native runtime whose agents finish at different steps.

The shipped models finish every agent at once (``max_cycles``), so the Python
layers' handling of agents that die while others live (the batched API, the
Gymnasium agent vector env, the RLlib adapter) is tested on this model, put in
place of :class:`seer_env._runtime.Runtime` with ``monkeypatch``.  It follows
the runtime's buffer semantics (``alive`` = acts next step, ``active`` = this
call's row is real, rows of other agents zeroed, ``reset``/``step`` masks,
actions of agents that are not alive ignored, bad actions rejected before any
state changes).

Dynamics of agent ``a`` in an instance seeded ``s``: it lives
``life = 1 + (s + a // 2) % 4`` steps and then terminates if ``(s + a)`` is even,
else truncates (``max_cycles`` truncates everyone still alive).  So agents
``2j`` and ``2j + 1`` finish in the same step, one terminated and one truncated.
After ``k`` steps its observation is ``[a, k, s % 7]``, its reward
``action + 0.5 * a``, its infos ``[k, sum of its actions]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from seer_env._base import EnvSpec, SeerParallelEnv, SeerVectorEnv
from seer_env._runtime import Sizes
from seer_env.errors import InvalidActionError, StateError

N_ACTIONS = 3


def life(seed: int, agent: int) -> int:
    return 1 + (seed + agent // 2) % 4


def ends_terminated(seed: int, agent: int) -> bool:
    return (seed + agent) % 2 == 0


class FakeRuntime:
    """Same interface as :class:`seer_env._runtime.Runtime` (the parts the envs use)."""

    def __init__(self, model: str, config: dict[str, Any], num_instances: int = 1,
                 executor: str = "parallel", threads: Any = "auto", max_cycles: int = 0) -> None:
        A = int(config["num_agents"])
        B = int(num_instances)
        self.num_instances, self.max_cycles = B, int(max_cycles)
        self.sizes = Sizes(num_entities=A, num_agents=A, obs_dim=3, action_dim=1,
                           action_kind="discrete", action_n=N_ACTIONS, action_low=0.0,
                           action_high=0.0, info_dim=2, state_dim=1, entity_size=8,
                           lookahead=1.0, step_duration=1.0)
        self.info_names = ("steps", "action_sum")
        self.actions = np.zeros((B, A), np.int32)
        self.obs = np.zeros((B, A, 3), np.float32)
        self.reward = np.zeros((B, A), np.float32)
        self.terminated = np.zeros((B, A), bool)
        self.truncated = np.zeros((B, A), bool)
        self.alive = np.zeros((B, A), bool)
        self.active = np.zeros((B, A), bool)
        self.info = np.zeros((B, A, 2), np.float64)
        self.seed = [0] * B
        self.k = np.zeros(B, np.int64)
        self.ready = np.zeros(B, bool)
        self.asum = np.zeros((B, A), np.float64)
        self.closed = False
        self.threads = 1

    def _sel(self, mask: Any) -> np.ndarray:
        if mask is None:
            return np.arange(self.num_instances)
        return np.flatnonzero(np.asarray(mask, bool))

    def reset(self, seeds: list[int], mask: Any = None) -> None:
        for i in self._sel(mask):
            self.seed[i] = int(seeds[i])
            self.k[i] = 0
            self.ready[i] = True
            self.asum[i] = 0
            self.alive[i] = True
            self.active[i] = True
            self.reward[i] = self.terminated[i] = self.truncated[i] = 0
            self._observe(i)

    def _observe(self, i: int) -> None:
        for a in range(self.sizes.num_agents):
            self.obs[i, a] = (a, self.k[i], self.seed[i] % 7) if self.active[i, a] else 0.0
            self.info[i, a] = (self.k[i], self.asum[i, a]) if self.active[i, a] else 0.0

    def step(self, mask: Any = None) -> None:
        sel = self._sel(mask)
        for i in sel:
            if not self.ready[i] or not self.alive[i].any():
                raise StateError(f"instance {i} has no live agent left; reset it first")
            bad = self.alive[i] & ((self.actions[i] < 0) | (self.actions[i] >= N_ACTIONS))
            if bad.any():
                raise InvalidActionError(f"invalid action in instance {i}")
        for i in sel:
            self.k[i] += 1
            s, k = self.seed[i], int(self.k[i])
            for a in range(self.sizes.num_agents):
                was = bool(self.alive[i, a])
                self.active[i, a] = was
                self.reward[i, a] = self.terminated[i, a] = self.truncated[i, a] = 0
                if not was:
                    continue
                act = int(self.actions[i, a])
                self.asum[i, a] += act
                self.reward[i, a] = act + 0.5 * a
                if k >= life(s, a):
                    self.terminated[i, a] = ends_terminated(s, a)
                    self.truncated[i, a] = not ends_terminated(s, a)
                if self.max_cycles and k >= self.max_cycles and not self.terminated[i, a]:
                    self.truncated[i, a] = True
            self._observe(i)
            self.alive[i] &= ~(self.terminated[i] | self.truncated[i])

    def global_state(self, instance: int = 0) -> np.ndarray:
        return np.array([self.k[instance]], np.float32)

    def stats(self) -> dict[str, int]:
        return {"events": 0}

    def close(self) -> None:
        self.closed = True


SPEC = EnvSpec(
    name="fake_v0",
    model="fake",
    defaults={"num_agents": 4, "max_cycles": 0},
    build=lambda cfg: ({"num_agents": cfg["num_agents"]}, cfg["max_cycles"]),
    agent_names=lambda cfg: [f"agent_{i}" for i in range(cfg["num_agents"])],
    obs_bounds=lambda cfg, sz: (np.zeros(3, np.float32), np.full(3, 1e6, np.float32)),
)


def install(monkeypatch: Any) -> None:
    """Make the env layers build :class:`FakeRuntime` (``monkeypatch`` is pytest's)."""
    import seer_env._base

    monkeypatch.setattr(seer_env._base, "Runtime", FakeRuntime)


def parallel_env(**config: Any) -> SeerParallelEnv:
    return SeerParallelEnv(SPEC, **config)


def vector_env(num_envs: int, **config: Any) -> SeerVectorEnv:
    return SeerVectorEnv(SPEC, num_envs, **config)


def agent_vector_env(num_envs: int, **config: Any) -> Any:
    from seer_env import gym_vector

    return gym_vector.agent_vector_env(vector_env, num_envs, **config)
