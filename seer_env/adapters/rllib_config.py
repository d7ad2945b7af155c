"""What an RLlib configuration takes from seer_env, without Ray: the policy
mappings for ``AlgorithmConfig.multi_agent`` and the warning of an env that
never truncates an episode.  [`seer_env.adapters.rllib`][seer_env.adapters.rllib]
(the adapter, which imports Ray) and its short path ``seer_env.rllib`` (which
does not) re-export them:

```python
from seer_env.rllib import group_policies, shared_policy
config.multi_agent(**shared_policy("shared"))                 # one policy for all
config.multi_agent(**group_policies({"env": "hunt_v0"}))      # one per agent group
```
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from ..registry import make

__all__ = ["shared_policy", "group_policies", "UntruncatedEpisodesWarning"]


def shared_policy(policy_id: str = "shared") -> dict[str, Any]:
    """Arguments for ``AlgorithmConfig.multi_agent``: every agent maps to one policy.

    Example: ``config.multi_agent(**shared_policy("shared"))``.
    """

    def mapping(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
        return policy_id

    return {"policies": {policy_id}, "policy_mapping_fn": mapping}


def group_policies(env_config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Arguments for ``AlgorithmConfig.multi_agent``: one policy per agent group,
    named ``prefix + group``; every agent maps to its group's.

    ``env_config`` is the env's (``{"env": name, **config}``: the groups and
    their sizes may depend on the configuration).  A model without groups gives
    one policy, ``prefix + "agents"``.  Example:

    ```python
    config.multi_agent(**group_policies({"env": "hunt_v0", "num_prey": 4}))
    ```
    """
    cfg = dict(env_config)
    if "env" not in cfg:
        raise ConfigError("env_config needs 'env', e.g. {'env': 'hunt_v0', ...}")
    name = cfg.pop("env")
    cfg.pop("observation_key", None)
    env = make(name, api="parallel", **{**cfg, "threads": 1})
    try:
        of = {a: prefix + env.group_of(a) for a in env.possible_agents}
        groups = [prefix + g.name for g in env.groups]
    finally:
        env.close()

    def mapping(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
        try:
            return of[agent_id]
        except KeyError:
            raise ConfigError(f"{name}: no agent {agent_id!r}") from None

    return {"policies": set(groups), "policy_mapping_fn": mapping}


class UntruncatedEpisodesWarning(UserWarning):
    """``max_cycles=0``: the env never truncates an episode (see the module
    docstring of `seer_env.adapters.rllib`, "episode_return_mean is NaN")."""
