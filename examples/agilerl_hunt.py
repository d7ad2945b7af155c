"""AgileRL's IPPO on hunt_v0 (agent groups, action masks, agents that die).

AgileRL pins ``pettingzoo<1.27``, so run it in a venv of its own::

    python -m venv agl && . agl/bin/activate
    pip install torch==2.13.0 agilerl==2.58.0 peft==0.21.0 && pip install -e .
    python examples/agilerl_hunt.py --steps 2000

What the env needs for AgileRL, and what works around AgileRL's own bugs
(2.58, found running this script):

* ``mask_in_infos="only"``: AgileRL reads each agent's mask from
  ``infos[agent]["action_mask"]`` and its ``IPPO.get_action`` asserts that no
  observation holds an ``"action_mask"``; with ``"only"`` the observation (and
  its space) is the Box and the mask is in the infos alone.
* SuperSuit's ``black_death_v3``: without it AgileRL's vector env fills every
  finished agent with NaN observations and rewards and IPPO goes NaN at the
  first death (README, "AgileRL").
* ``peft``: ``from agilerl.algorithms import IPPO`` imports
  ``agilerl.distributed.expert_parallel``, which imports ``peft`` although only
  AgileRL's ``all`` extra declares it (ModuleNotFoundError): install it.
* `MaskedIPPO`: ``IPPO.extract_action_masks`` tests ``None in group_masks``,
  which raises "The truth value of an array ... is ambiguous" on NumPy masks
  (``agilerl/algorithms/ippo.py:466``), so any masked env fails at its first
  action; and it needs a mask for every agent of a group, while its vector env
  hands an agent finished in some sub-envs all-zero rows there and one
  finished in all of them none.  `stack_masks` stacks them as AgileRL does,
  every such row allowing every action (the env ignores those actions).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np


def stack_masks(infos: Mapping[str, Any], groups: list[str],
                group_of: Callable[[str], str]) -> dict[str, np.ndarray | None]:
    """Each group's masks, ``(agents, num_envs, n)`` float32 (AgileRL's
    stacking), from a vector env's ``infos``: the rows of agents finished in a
    sub-env (all zeros) and of agents with no mask (finished in every sub-env)
    allow every action.  None for a group without masks."""
    found: dict[str, list[Any]] = {}
    for agent, info in infos.items():
        if isinstance(info, Mapping):  # Gymnasium's "_<agent>" flags are arrays
            found.setdefault(group_of(agent), []).append(info.get("action_mask"))
    out: dict[str, np.ndarray | None] = {}
    for g in groups:
        known = [np.asarray(m) for m in found.get(g, []) if m is not None]
        if not known:
            out[g] = None
            continue
        rows = np.array([np.ones_like(known[0]) if m is None else np.asarray(m)
                         for m in found[g]], dtype=np.float32)
        rows[~rows.any(axis=-1)] = 1.0
        out[g] = rows
    return out


def main(argv: list[str] | None = None) -> None:  # pragma: no cover (needs AgileRL)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--num-envs", type=int, default=2)
    args = p.parse_args(argv)

    import supersuit as ss
    import torch
    from agilerl.algorithms import IPPO
    from agilerl.training.train_multi_agent_on_policy import train_multi_agent_on_policy
    from agilerl.vector.pz_async_vec_env import AsyncPettingZooVecEnv

    from seer_env.envs import hunt_v0

    class MaskedIPPO(IPPO):
        """IPPO with `stack_masks` for its ``extract_action_masks``."""

        def extract_action_masks(self, infos: Any) -> Any:
            def group_of(agent: str) -> str:
                return self.get_group_id(agent) if self.has_grouped_agents() else agent
            masks = stack_masks(infos, list(self.observation_space), group_of)
            return {g: None if m is None else torch.as_tensor(m) for g, m in masks.items()}

    def make() -> Any:
        return ss.black_death_v3(hunt_v0.parallel_env(mask_in_infos="only", threads=1,
                                                      max_cycles=25))

    env = AsyncPettingZooVecEnv([make for _ in range(args.num_envs)])
    env.reset(seed=0)
    pop = [MaskedIPPO([env.single_observation_space(a) for a in env.agents],
                      [env.single_action_space(a) for a in env.agents],
                      agent_ids=env.agents, learn_step=64, batch_size=32)]
    _, fitness = train_multi_agent_on_policy(env, "hunt_v0", "IPPO", pop,
                                             max_steps=args.steps, evo_steps=200,
                                             verbose=False)
    print("fitness per evaluation:", np.asarray(fitness).tolist())
    env.close()


if __name__ == "__main__":
    main()
