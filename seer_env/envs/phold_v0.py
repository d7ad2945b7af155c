"""PHOLD as an environment: the standard PDES benchmark, exposed through the same API.

Each entity is an agent.  On each event an entity schedules one new event, to
itself or, with probability ``remote``, to a uniformly random entity, at
``(t + lookahead) + scale * Exp(mean)``.  An agent's action (``Discrete(3)``)
sets ``scale`` (0: 1.0, 1: 0.5, 2: 2.0) for its future events; its observation
is ``[events handled last step / events_per_entity, log1p(total handled),
checksum bits / 2**24, work accumulator]`` and its reward the first of those.

Example::

    from seer_env.envs import phold_v0
    env = phold_v0.parallel_env(num_entities=64, remote=0.5, threads=2)
    obs, infos = env.reset(seed=1)
    obs, rew, term, trunc, infos = env.step({a: 0 for a in env.agents})
"""

from __future__ import annotations

from typing import Any

from pettingzoo.utils import parallel_to_aec

from .. import gym_vector
from .._base import EnvSpec, SeerParallelEnv, SeerVectorEnv
from ..errors import ConfigError

DEFAULTS: dict[str, Any] = {
    "num_entities": 64,
    "events_per_entity": 4,
    "remote": 0.5,
    "mean": 1.0,
    "lookahead": 0.5,
    "work": 0,
    "step_duration": 4.0,
    "max_cycles": 100,
}


def _int(cfg: dict[str, Any], key: str, lo: int, hi: int) -> int:
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"phold_v0: {key}={v!r} must be an int")
    if not lo <= v <= hi:
        raise ConfigError(f"phold_v0: {key}={v} must be in [{lo}, {hi}]")
    return v


def _float(cfg: dict[str, Any], key: str) -> float:
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"phold_v0: {key}={v!r} must be a number")
    return float(v)


def _build(cfg: dict[str, Any]) -> tuple[dict[str, Any], int]:
    fields = {
        "num_entities": _int(cfg, "num_entities", 1, 1 << 22),
        "events_per_entity": _int(cfg, "events_per_entity", 1, 1024),
        "remote": _float(cfg, "remote"),
        "mean": _float(cfg, "mean"),
        "lookahead": _float(cfg, "lookahead"),
        "work": _int(cfg, "work", 0, 100_000_000),
        "step_duration": _float(cfg, "step_duration"),
    }
    return fields, _int(cfg, "max_cycles", 0, 2**62)


SPEC = EnvSpec(
    name="phold_v0",
    model="phold",
    defaults=DEFAULTS,
    build=_build,
    agent_names=lambda cfg: [f"entity_{i}" for i in range(cfg["num_entities"])],
)


def parallel_env(**config: Any) -> SeerParallelEnv:
    """PHOLD as a PettingZoo ParallelEnv (config keys: see ``DEFAULTS``)."""
    return SeerParallelEnv(SPEC, **config)


def vector_env(num_envs: int, **config: Any) -> SeerVectorEnv:
    """``num_envs`` PHOLD instances stepped together as arrays."""
    return SeerVectorEnv(SPEC, num_envs, **config)


def agent_vector_env(num_envs: int, **config: Any) -> gym_vector.AgentVectorEnv:
    """Every agent of ``num_envs`` PHOLD instances as one sub-env of a Gymnasium VectorEnv."""
    return gym_vector.agent_vector_env(vector_env, num_envs, **config)


def env(**config: Any) -> Any:
    """PHOLD as a PettingZoo AEC env."""
    return parallel_to_aec(parallel_env(**config))
