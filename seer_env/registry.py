"""Names of the shipped environments and :func:`make`.

Example::

    import seer_env
    env = seer_env.make("phold_v0", num_entities=32)          # ParallelEnv
    aec = seer_env.make("phold_v0", api="aec")                 # AEC env
    venv = seer_env.make("phold_v0", api="vector", num_envs=8) # batched arrays
    gym_venv = seer_env.make("pcs_v0", api="agent_vector", num_envs=4)  # Gymnasium VectorEnv

``import seer_env`` also registers every shipped env in PettingZoo's registry
(PettingZoo >= 1.26 has one) as ``seer_env/<name>``, both ``"parallel"`` and
``"aec"``::

    import pettingzoo, seer_env
    env = pettingzoo.make("parallel", "seer_env/pcs_v0", width=4, height=4)
"""

from __future__ import annotations

import importlib
import importlib.util
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


APIS = ("parallel", "aec", "vector", "agent_vector")


def make(name: str, api: str = "parallel", num_envs: int = 1, **config: Any) -> Any:
    """Create an env by name.

    Args:
        name: ``"phold_v0"``, ``"pcs_v0"`` or ``"aircraft_v0"``.
        api: ``"parallel"`` (PettingZoo ParallelEnv), ``"aec"`` (PettingZoo AEC),
            ``"vector"`` (batched arrays over ``num_envs`` instances) or
            ``"agent_vector"`` (a Gymnasium ``VectorEnv`` with one sub-env per agent
            of each of ``num_envs`` instances, see :mod:`seer_env.gym_vector`).
        **config: the env's config (plus ``threads``, ``executor``, ``render_mode``;
            ``copy`` and ``autoreset_mode`` for the vector APIs).
    """
    if api not in APIS:
        raise ConfigError(f"api={api!r} must be one of {list(APIS)}")
    mod = env_module(name)
    if api == "parallel":
        return mod.parallel_env(**config)
    if api == "aec":
        return mod.env(**config)
    if api == "vector":
        return mod.vector_env(num_envs, **config)
    return mod.agent_vector_env(num_envs, **config)


#: Namespace of our ids in PettingZoo's registry.
PETTINGZOO_NAMESPACE = "seer_env"


def register_pettingzoo() -> list[str]:
    """Register the shipped envs in PettingZoo's registry (``pettingzoo.make``).

    Each env whose module exists in this build is registered as
    ``seer_env/<name>`` (PettingZoo normalizes ``pcs_v0`` to ``pcs-v0``) in the
    ``"parallel"`` and ``"aec"`` registries, with a lazy ``"module:function"``
    entry point.  Called by ``import seer_env``; harmless to call again.
    Returns the ids registered (empty if PettingZoo has no registry).
    """
    try:
        import pettingzoo
    except ImportError:  # pragma: no cover - pettingzoo is a dependency
        return []
    register = getattr(pettingzoo, "register", None)
    if register is None:  # PettingZoo < 1.26: no registry; use seer_env.make
        return []
    ids = []
    for name in ENVS:
        module = f"seer_env.envs.{name}"
        if importlib.util.find_spec(module) is None:
            continue
        env_id = f"{PETTINGZOO_NAMESPACE}/{name}"
        for kind, fn in (("parallel", "parallel_env"), ("aec", "env")):
            registry = getattr(pettingzoo, f"{kind}_registry", {})
            if env_id.replace("_v", "-v") in registry:
                continue
            register(kind, env_id, entry_point=f"{module}:{fn}")
        ids.append(env_id)
    return ids
