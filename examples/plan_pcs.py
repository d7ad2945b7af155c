"""A rollout planner over PCS guard levels that looks ahead with snapshot/restore.

At every step the planner takes a snapshot of the env, and for each candidate
guard level (the same level in every cell) restores it and plays that level
for ``--horizon`` steps, summing the network's rewards; then it restores the
snapshot once more and takes the best candidate's first step for real.  The
snapshot holds the env's random streams too, so a rollout is the exact future
of that plan, not a sample: the planner is a lookahead search with a perfect
model, the env itself.  It is compared with a random policy and with every
fixed guard level on the same seed (the same call arrivals)::

    python examples/plan_pcs.py                  # 6x6 cells, 36 steps, about a second
    python examples/plan_pcs.py --horizon 4      # a shorter look ahead: myopic
    python examples/plan_pcs.py --horizon 6 --width 8 --height 8

Each env is a PettingZoo ``ParallelEnv``; ``env.snapshot()`` and
``env.restore(snap)`` are all the planner needs (any seer_env env has them).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from seer_env.envs import pcs_v0

#: A loaded network (few channels, mobile users): guarding channels for
#: handoffs pays, up to a point -- the best fixed guard level is in the middle.
ENV_CONFIG = dict(channels=5, move_mean=300.0)


def make(args: argparse.Namespace) -> Any:
    return pcs_v0.parallel_env(width=args.width, height=args.height, max_cycles=args.steps,
                               executor="serial", **ENV_CONFIG)


def total(rewards: dict[str, float]) -> float:
    return float(sum(rewards.values()))


def run_policy(args: argparse.Namespace, policy: Any) -> float:
    """The episode's total reward under ``policy(env, rng) -> actions``."""
    env = make(args)
    env.reset(seed=args.seed)
    rng = np.random.default_rng(args.seed)
    score = 0.0
    while env.agents:
        _, rew, *_ = env.step(policy(env, rng))
        score += total(rew)
    env.close()
    return score


def plan(args: argparse.Namespace) -> tuple[float, int, float]:
    """The planner's episode: total reward, restores made, seconds taken."""
    env = make(args)
    env.reset(seed=args.seed)
    levels = range(env.action_space(env.possible_agents[0]).n)
    score, restores, t0 = 0.0, 0, time.perf_counter()
    while env.agents:
        snap = env.snapshot()
        best, best_value = 0, -np.inf
        for g in levels:
            env.restore(snap)
            restores += 1
            value = 0.0
            for _ in range(args.horizon):
                if not env.agents:
                    break
                _, rew, *_ = env.step(dict.fromkeys(env.agents, g))
                value += total(rew)
            if value > best_value:
                best, best_value = g, value
        env.restore(snap)
        restores += 1
        _, rew, *_ = env.step(dict.fromkeys(env.agents, best))
        score += total(rew)
    env.close()
    return score, restores, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--width", type=int, default=6)
    p.add_argument("--height", type=int, default=6)
    p.add_argument("--steps", type=int, default=36, help="steps of the episode")
    p.add_argument("--horizon", type=int, default=8, help="steps each rollout looks ahead")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--smoke", action="store_true", help="a tiny run (CI)")
    args = p.parse_args(argv)
    if args.smoke:
        args.width, args.height, args.steps, args.horizon = 4, 4, 12, 6
    n = args.width * args.height
    rand = run_policy(args, lambda env, rng: {a: int(rng.integers(
        env.action_space(a).n)) for a in env.agents})
    print(f"PCS {args.width}x{args.height}, {args.steps} steps, seed {args.seed}: "
          f"mean reward per cell and step")
    print(f"  random policy       {rand / (n * args.steps):9.4f}")
    n_levels = make(args).action_space("cell_0").n
    fixed = [run_policy(args, lambda env, rng, g=g: dict.fromkeys(env.agents, g))
             for g in range(n_levels)]
    for g, v in enumerate(fixed):
        print(f"  fixed guard {g}       {v / (n * args.steps):9.4f}")
    score, restores, secs = plan(args)
    print(f"  planner (horizon {args.horizon}) {score / (n * args.steps):9.4f}   "
          f"({restores} restores, {secs:.2f} s)")


if __name__ == "__main__":
    main()
