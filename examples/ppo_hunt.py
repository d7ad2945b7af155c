"""PPO with masked logits on hunt_v0's predators, in CleanRL's single-file style.

One policy network drives every predator of every hunt instance (parameter
sharing): the env is ``hunt_v0.agent_vector_env(group="predator")``, a Gymnasium
``VectorEnv`` whose sub-envs are the predators; the prey move uniformly at random
within their masks (the face's default).  A predator's action is
``MultiDiscrete([5, 2])`` (move, signal), so the policy outputs 5 + 2 logits, two
categorical heads.  The env's action masks (``infos["action_mask"]``, 5 move bytes
then 2 signal bytes) forbid moves into obstacles and off the bounded grid:

* ``--masks`` (default): the logits of forbidden choices are set to ``-1e8``
  before sampling and in the log-probabilities and entropies PPO uses (a
  per-component masked categorical, as CleanRL's invalid-action-masking PPO);
  the env enforces the masks (a forbidden move would raise).
* ``--no-masks``: plain logits, and the env runs with ``enforce_masks=False``: a
  forbidden move is a stay that costs ``forbidden_penalty``; the policy has to
  learn the obstacles from its observation window.

At the end it evaluates, on held-out seeds, the trained policy (greedy), the
random-within-masks policy, and the fraction of forbidden moves each attempted.

Run (about 2-3 minutes on 2 cores)::

    pip install torch                     # (CPU is enough)
    python examples/ppo_hunt.py                   # masked logits
    python examples/ppo_hunt.py --no-masks        # the baseline without masks

CI smoke mode (a few updates, tiny sizes)::

    python examples/ppo_hunt.py --smoke [--no-masks]

The training loop is ``examples/ppo.py``'s (``ppo.train(..., agent=, masked=True)``
keeps each sample's mask row and hands it to the agent); this script adds the
masked two-head agent, the hunt setting and the evaluation.  It runs with
autoreset ``NEXT_STEP`` (``examples/ppo.py --env hunt_v0`` runs the same group
with ``SAME_STEP``): the step after an episode ends resets the instance and
ignores the actions, so :class:`Decisions` marks the samples of that step (and of
idle predators) inactive, and the loop drops them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cpu_training  # noqa: F401  (before torch: its OpenMP workers spin briefly)
import gymnasium
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ppo  # noqa: E402  (the generic PPO of examples/ppo.py: MLP and training loop)

from seer_env.envs import hunt_v0  # noqa: E402

# --- arguments ----------------------------------------------------------------------------


@dataclass
class Args(ppo.Args):
    env: str = "hunt_v0"
    updates: int = 150
    """PPO iterations (rollout + update)"""
    num_instances: int = 32
    """hunt instances stepped together; sub-envs = num_instances * predators"""
    num_steps: int = 64
    """steps per rollout per sub-env"""
    gamma: float = 0.97
    ent_coef: float = 0.01
    masks: bool = True
    """masked logits and enforced masks (--no-masks: plain logits, enforce_masks=False)"""
    eval_instances: int = 32
    eval_steps: int = 200
    json_out: str = ""
    """optional path for the results as JSON"""


#: The hunt setting: a bounded 8x8 grid with obstacles (so masks matter at the
#: walls and obstacles), 3 predators, 2 random prey, episodes of at most 50 steps.
ENV_CONFIG = dict(
    width=8,
    height=8,
    torus=0,
    obstacle_density=0.2,
    num_predators=3,
    num_prey=2,
    view=2,
    max_cycles=50,
    threads=1,
)

#: A predator's action components: move (stay/N/E/S/W), signal (0/1).
NVEC = (5, 2)


def parse_args(argv: list[str] | None = None) -> Args:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = Args()
    for name, value in vars(defaults).items():
        if name in ("config", "env", "masks"):
            continue
        if isinstance(value, bool):
            p.add_argument(f"--{name.replace('_', '-')}", type=lambda s: s.lower() in
                           ("1", "true", "yes"), default=value)
        else:
            p.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    p.add_argument("--masks", action=argparse.BooleanOptionalAction, default=True,
                   help="masked logits, masks enforced (default); --no-masks: plain logits, "
                        "enforce_masks=False")
    p.add_argument("--smoke", action="store_true", help="CI mode: 3 updates, tiny sizes")
    ns = p.parse_args(argv)
    smoke = ns.__dict__.pop("smoke")
    args = Args(**vars(ns))
    if smoke:
        args.updates, args.num_instances, args.num_steps = 3, 4, 24
        args.eval_instances, args.eval_steps = 2, 30
    return args


# --- agent: two categorical heads, masked logits -------------------------------------------


class MaskedAgent(nn.Module):
    """Actor-critic for a ``MultiDiscrete(nvec)`` action: one categorical per
    component over its slice of the logits.  With ``use_masks``, the logits of
    the choices a mask row forbids (0) are ``-1e8``: they are never sampled and
    have probability 0 in the log-probabilities and entropies."""

    discrete = True  # integer actions (ppo.train's rollout storage)

    def __init__(self, obs_dim: int, nvec: tuple[int, ...], use_masks: bool) -> None:
        super().__init__()
        self.nvec = [int(k) for k in nvec]
        self.use_masks = use_masks
        self.critic = ppo._mlp(obs_dim, 1, 1.0)
        self.actor = ppo._mlp(obs_dim, sum(self.nvec), 0.01)

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def logits(self, x: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        out = self.actor(x)
        if self.use_masks and mask is not None:
            out = out.masked_fill(~mask, -1e8)
        return torch.split(out, self.nvec, dim=1)

    def get_action_and_value(
        self, x: torch.Tensor, action: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        dists = [Categorical(logits=lg) for lg in self.logits(x, mask)]
        if action is None:
            action = torch.stack([d.sample() for d in dists], dim=1)
        logprob = sum(d.log_prob(action[:, i]) for i, d in enumerate(dists))
        entropy = sum(d.entropy() for d in dists)
        return action, logprob, entropy, self.critic(x)  # type: ignore[return-value]

    def greedy(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            parts = self.logits(torch.as_tensor(obs), torch.as_tensor(mask != 0))
        return torch.stack([lg.argmax(dim=1) for lg in parts], dim=1).numpy()


def random_within_masks(rng: np.random.Generator):  # type: ignore[no-untyped-def]
    """``policy(obs, mask)``: each component uniform among the choices its mask allows."""
    def policy(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        out, off = np.zeros((len(obs), len(NVEC)), np.int64), 0
        for j, k in enumerate(NVEC):
            m = mask[:, off:off + k] != 0
            out[:, j] = np.where(m, rng.random(m.shape), -1.0).argmax(axis=1)
            off += k
        return out
    return policy


# --- env: decisions and forbidden moves ----------------------------------------------------


class Decisions(gymnasium.vector.VectorWrapper):
    """The predator VectorEnv as ``ppo.train`` reads it, counting forbidden moves.

    ``infos["active"]`` becomes ``active & alive``: a sample is a decision only
    if its predator acts in the next step.  Under ``NEXT_STEP`` autoreset that
    drops, besides idle sub-envs, the step after an episode's end (it resets the
    instance and ignores the actions).  ``moves`` / ``forbidden`` count the
    decisions and those whose move the mask forbade (checked against the mask
    row the action was chosen from)."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.moves = 0
        self.forbidden = 0

    def _decisions(self, infos: dict[str, Any]) -> dict[str, Any]:
        infos["active"] = infos["active"] & infos["alive"]
        self._acting = infos["active"]
        self._mask = infos["action_mask"] != 0
        return infos

    def reset(self, **kw: Any) -> tuple[np.ndarray, dict[str, Any]]:
        obs, infos = self.env.reset(**kw)
        return obs, self._decisions(infos)

    def step(self, actions: Any) -> tuple[Any, ...]:
        moves = np.asarray(actions)[:, 0]
        allowed = self._mask[np.arange(len(moves)), moves]
        self.moves += int(self._acting.sum())
        self.forbidden += int((self._acting & ~allowed).sum())
        *out, infos = self.env.step(actions)
        return (*out, self._decisions(infos))


def make_envs(instances: int, masks: bool) -> Decisions:
    return Decisions(hunt_v0.agent_vector_env(instances, group="predator",
                                              enforce_masks=masks, **ENV_CONFIG))


# --- evaluation ----------------------------------------------------------------------------


def evaluate(policy, args: Args, masks: bool, seed: int = 10_000  # type: ignore[no-untyped-def]
             ) -> tuple[float, float]:
    """Mean predator reward per agent-step of ``policy(obs, mask) -> actions`` on
    held-out seeds, and the fraction of its moves that the masks forbade."""
    envs = make_envs(args.eval_instances, masks)
    obs, infos = envs.reset(seed=seed)
    total, count = 0.0, 0
    for _ in range(args.eval_steps):
        acting = infos["active"]
        obs, reward, term, trunc, infos = envs.step(policy(obs, infos["action_mask"]))
        total += float(reward[acting].sum())
        count += int(acting.sum())
    envs.close()
    return total / max(count, 1), envs.forbidden / max(envs.moves, 1)


# --- training ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(args.torch_threads)
    t_start = time.time()
    envs = make_envs(args.num_instances, args.masks)
    n = envs.num_envs
    obs_dim = envs.single_observation_space.shape[0]
    print(f"{envs.env}: obs_dim={obs_dim}, action {envs.single_action_space}, "
          f"masks {'on' if args.masks else 'off (enforce_masks=False)'}, "
          f"batch={n * args.num_steps}", flush=True)

    seen = [0, 0]

    def log(line: str) -> None:  # ppo.train's update line + this rollout's forbidden moves
        moves, forb = envs.moves - seen[0], envs.forbidden - seen[1]
        seen[:] = envs.moves, envs.forbidden
        print(f"{line}  forbidden {forb / max(moves, 1):.4f}", flush=True)

    torch.manual_seed(args.seed)  # the initial weights
    agent = MaskedAgent(obs_dim, NVEC, args.masks)
    agent, curve = ppo.train(envs, args, log=log, agent=agent, masked=args.masks)
    envs.close()
    train_time = time.time() - t_start

    rand, rand_forb = evaluate(random_within_masks(np.random.default_rng(args.seed)), args, True)
    trained, forb = evaluate(agent.greedy, args, args.masks)
    res: dict[str, Any] = {"masks": args.masks, "seed": args.seed, "updates": args.updates,
                           "random": rand, "trained": trained, "forbidden": forb,
                           "random_forbidden": rand_forb, "curve": curve,
                           "train_time": train_time}
    if not args.masks:  # the same policy with the masks applied at evaluation only
        agent.use_masks = True
        res["trained_masked_eval"], _ = evaluate(agent.greedy, args, True)
        agent.use_masks = False
        print(f"  (the no-mask policy with masked logits at evaluation: "
              f"{res['trained_masked_eval']:.5f})")
    res["wall_time"] = time.time() - t_start
    print(f"held-out mean predator reward per agent-step ({args.eval_instances} instances x "
          f"{args.eval_steps} steps): random-within-masks policy {rand:.5f}, "
          f"PPO policy (greedy) {trained:.5f}; forbidden moves attempted {forb:.4f} "
          f"(masks {'on' if args.masks else 'off'}); training {train_time:.0f}s, "
          f"wall time {res['wall_time']:.0f}s", flush=True)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(res, f)
    return res


if __name__ == "__main__":
    main()
