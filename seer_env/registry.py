"""Names of the shipped environments and :func:`make`.

Example::

    import seer_env
    env = seer_env.make("phold_v0", num_entities=32)          # ParallelEnv
    aec = seer_env.make("phold_v0", api="aec")                 # AEC env
    venv = seer_env.make("phold_v0", api="vector", num_envs=8) # batched arrays
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from .errors import ConfigError

ENVS = ("phold_v0", "pcs_v0", "aircraft_v0")


def available() -> list[str]:
    """The env names whose modules import (all shipped envs in a full build)."""
    names = []
    for name in ENVS:
        try:
            env_module(name)
        except ConfigError:
            continue
        names.append(name)
    return names


def env_module(name: str) -> ModuleType:
    """The module ``seer_env.envs.<name>``."""
    if name not in ENVS:
        raise ConfigError(f"unknown env {name!r}; available: {list(ENVS)}")
    try:
        return importlib.import_module(f"seer_env.envs.{name}")
    except ModuleNotFoundError as exc:
        raise ConfigError(f"env {name!r} is not part of this build: {exc}") from None


def make(name: str, api: str = "parallel", num_envs: int = 1, **config: Any) -> Any:
    """Create an env by name.

    Args:
        name: ``"phold_v0"``, ``"pcs_v0"`` or ``"aircraft_v0"``.
        api: ``"parallel"`` (PettingZoo ParallelEnv), ``"aec"`` (PettingZoo AEC) or
            ``"vector"`` (batched arrays over ``num_envs`` instances).
        **config: the env's config (plus ``threads``, ``executor``, ``render_mode``).
    """
    mod = env_module(name)
    if api == "parallel":
        return mod.parallel_env(**config)
    if api == "aec":
        return mod.env(**config)
    if api == "vector":
        return mod.vector_env(num_envs, **config)
    raise ConfigError(f"api={api!r} must be 'parallel', 'aec' or 'vector'")
