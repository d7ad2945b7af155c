"""What an RLlib configuration takes from seer_env, without Ray: the policy
mappings for ``AlgorithmConfig.multi_agent`` and the warning of an env that
never truncates an episode.  [`seer_env.adapters.rllib`][seer_env.adapters.rllib]
(the adapter, which imports Ray) and its short path ``seer_env.rllib`` (which
does not) re-export them:

```python
from ray.rllib.algorithms.ppo import PPOConfig
from seer_env.rllib import group_policies, shared_policy

config = PPOConfig()
config.multi_agent(**shared_policy("shared"))                 # one policy for all
config.multi_agent(**group_policies({"env": "hunt_v0"}))      # one per agent group
```
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..budget import set_thread_budget, thread_budget
from ..errors import ConfigError
from ..registry import make

__all__ = ["shared_policy", "group_policies", "UntruncatedEpisodesWarning", "ray_assigned_cpus",
           "take_ray_cpus"]


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


def ray_assigned_cpus() -> float | None:
    """The CPUs Ray assigned to this process's worker (an env runner is an
    actor with ``num_cpus_per_env_runner`` CPUs, 1 by default); None outside
    a Ray worker (the driver, the local env runner) or where none were
    assigned."""
    try:
        import ray

        if not ray.is_initialized():
            return None
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
    except Exception:  # the driver (Ray asserts it is a worker), an older Ray
        return None
    return float(cpus) if cpus else None


def take_ray_cpus() -> int | None:
    """Cap the process's thread budget (`seer_env.budget`) at the CPUs Ray
    assigned to this env runner, rounded up (``num_cpus_per_env_runner=0.5``
    gives 1), unless it is lower already (a container's quota,
    ``SEER_ENV_THREADS``).  Returns the budget's threads where Ray assigned
    CPUs, else None (nothing changed).  Every runtime of the runner's process
    then shares those CPUs: several envs per runner
    (``num_envs_per_env_runner``) and STPA's pools stay within what Ray
    reserved, instead of each taking every core of the node.  A cap it set
    before in this process (another env of the runner, or an earlier task of
    a Ray worker that Ray reuses) gives way to this call's CPUs, and is
    lifted where Ray assigned none.

    ```python
    config.env_runners(num_env_runners=4, num_cpus_per_env_runner=2)
    # in each runner: thread_budget().describe() ==
    #   "2 threads: capped by Ray: 2 CPU(s) assigned to this env runner ..."
    ```
    """
    cpus = ray_assigned_cpus()
    now = thread_budget()
    if now.cap is not None and now.cap_source.startswith(_RAY_SOURCE):
        # a cap of ours from an earlier task of this (reused) Ray worker, or
        # an earlier env of this runner: this call's CPUs decide
        set_thread_budget(None)
        now = thread_budget()
    if cpus is None:
        return None
    n = max(1, math.ceil(cpus - 1e-9))
    if now.threads <= n:
        return now.threads
    set_thread_budget(n, source=f"{_RAY_SOURCE}{cpus:g} CPU(s) assigned to this "
                                f"{_ray_worker_kind()}")
    return n


#: how a cap `take_ray_cpus` set begins (`ThreadBudget.cap_source`)
_RAY_SOURCE = "Ray: "


def _ray_worker_kind() -> str:
    """What this Ray worker is, for the budget's words: an actor (an env
    runner) or a task."""
    try:
        import ray

        actor = ray.get_runtime_context().get_actor_id()
    except Exception:  # an older Ray
        actor = "?"
    return "env runner (num_cpus_per_env_runner)" if actor else "Ray task (num_cpus)"

