"""The short path of the RLlib adapter,
[`seer_env.adapters.rllib`][seer_env.adapters.rllib], importable without Ray:
the helpers (``shared_policy``, ``group_policies``, ``env_creator``,
``UntruncatedEpisodesWarning``) are here at once, and ``SeerMultiAgentEnv``
(an RLlib ``MultiAgentEnv``) is the adapter's own class, imported with Ray the
first time the name is looked up:

```python
from seer_env.rllib import SeerMultiAgentEnv   # the same class as
from seer_env.adapters.rllib import SeerMultiAgentEnv
```

Without Ray, looking ``SeerMultiAgentEnv`` up (or calling ``env_creator``)
raises [`MissingExtraError`][seer_env.errors.MissingExtraError] (an
``ImportError``: ``pip install 'seer_env[rllib]'``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .adapters.rllib_config import (
    UntruncatedEpisodesWarning,
    group_policies,
    ray_assigned_cpus,
    shared_policy,
    take_ray_cpus,
)

__all__ = ["SeerMultiAgentEnv", "shared_policy", "group_policies", "env_creator",  # noqa: F822
           "UntruncatedEpisodesWarning", "ray_assigned_cpus", "take_ray_cpus", "check_nodes"]


def env_creator(env_config: Mapping[str, Any]) -> Any:
    """``SeerMultiAgentEnv(env_config)``; for ``ray.tune.registry.register_env``.

    The adapter's [`env_creator`][seer_env.adapters.rllib.env_creator], called
    through this path so that importing it needs no Ray."""
    from .adapters.rllib import env_creator

    return env_creator(env_config)


def check_nodes(env_config: Mapping[str, Any], timeout_s: float = 120.0) -> dict[str, str]:
    """Make the env on every node of the Ray cluster; a `ConfigError` names each
    node that cannot.  The adapter's
    [`check_nodes`][seer_env.adapters.rllib.check_nodes], called through this
    path so that importing it needs no Ray."""
    from .adapters.rllib import check_nodes

    return check_nodes(env_config, timeout_s)


def __getattr__(name: str) -> Any:
    # SeerMultiAgentEnv subclasses RLlib's MultiAgentEnv: its module imports Ray,
    # so it is imported when the name is first looked up, not with this module
    if name == "SeerMultiAgentEnv":
        from .adapters.rllib import SeerMultiAgentEnv

        globals()["SeerMultiAgentEnv"] = SeerMultiAgentEnv
        return SeerMultiAgentEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
