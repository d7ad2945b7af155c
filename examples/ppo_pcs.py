"""PPO with parameter sharing on PCS, in CleanRL's single-file style.

One policy network drives every cell of every PCS instance: the env is
``pcs_v0.agent_vector_env``, a Gymnasium ``VectorEnv`` whose sub-envs are the
cells (``num_instances x cells``).  The cells learn when to keep guard channels
for handoffs: the reward is ``-(blocked new calls + 10 x dropped handoffs)``
per portable, and the best guard depends on the load, which follows a daily
profile.  Before and after training the script evaluates the learned policy and
every fixed-guard policy (guard = 0..max_guard in every cell, all the time) on
the same held-out seeds, prints the mean reward per cell-step and writes a
learning-curve PNG.

Run (2-5 minutes on 2 cores; result and curve: README, docs/ppo_pcs.png)::

    pip install -e '.[train]'          # torch and matplotlib
    python examples/ppo_pcs.py --out ppo_pcs.png

CI smoke mode (a few updates, small eval)::

    python examples/ppo_pcs.py --smoke --out /tmp/ppo_smoke.png

The agent and the training loop are ``examples/ppo.py``'s (CleanRL's ``ppo.py``
for every seer env); this script adds the PCS setting, the fixed-guard
baselines and the plot.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import cpu_training  # noqa: F401  (before torch: its OpenMP workers spin briefly)
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ppo  # noqa: E402  (the generic PPO of examples/ppo.py: agent and training loop)

from seer_env.envs import pcs_v0  # noqa: E402

# --- arguments ----------------------------------------------------------------------------


@dataclass
class Args(ppo.Args):
    env: str = "pcs_v0"
    updates: int = 200
    """PPO iterations (rollout + update)"""
    num_instances: int = 8
    """PCS instances stepped together; sub-envs = num_instances * cells"""
    num_steps: int = 72
    """steps per rollout per sub-env (72 x 20 minutes = one simulated day)"""
    reward_scale: float = 20.0
    """rewards are multiplied by this for learning (reports use raw rewards)"""
    eval_instances: int = 16
    eval_days: int = 2
    out: str = "ppo_pcs.png"
    json_out: str = ""
    """optional path for the results as JSON"""


#: The PCS setting: a 6x6 torus, a daily load profile, frequent moves (handoffs).
ENV_CONFIG = dict(
    width=6,
    height=6,
    profile_amplitude=0.8,
    next_call_mean=180.0,
    move_mean=300.0,
    max_cycles=72,
    threads=1,
)


def parse_args() -> Args:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = Args()
    for name, value in vars(defaults).items():
        if name in ("config", "env"):
            continue
        if isinstance(value, bool):
            p.add_argument(f"--{name.replace('_', '-')}", type=lambda s: s.lower() in
                           ("1", "true", "yes"), default=value)
        else:
            p.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    p.add_argument("--smoke", action="store_true", help="CI mode: 3 updates, tiny eval")
    ns = p.parse_args()
    smoke = ns.__dict__.pop("smoke")
    args = Args(**vars(ns))
    if smoke:
        args.updates, args.num_steps, args.eval_instances, args.eval_days = 3, 24, 2, 1
    return args


# --- evaluation ----------------------------------------------------------------------------


def evaluate(policy, args: Args, seed: int = 10_000) -> float:  # type: ignore[no-untyped-def]
    """Mean reward per cell-step of ``policy(obs) -> actions`` over held-out days."""
    envs = pcs_v0.agent_vector_env(args.eval_instances, **ENV_CONFIG)
    obs, infos = envs.reset(seed=seed)
    total, count = 0.0, 0
    for _ in range(args.eval_days * ENV_CONFIG["max_cycles"]):
        obs, reward, term, trunc, infos = envs.step(policy(obs))
        total += float(reward.sum())
        count += reward.size
    envs.close()
    return total / count


# --- training ------------------------------------------------------------------------------


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.torch_threads)
    t_start = time.time()

    envs = pcs_v0.agent_vector_env(args.num_instances, autoreset_mode="same_step", **ENV_CONFIG)
    n = envs.num_envs
    obs_dim = envs.single_observation_space.shape[0]
    n_actions = int(envs.single_action_space.n)
    print(f"{envs}: obs_dim={obs_dim}, actions={n_actions}, batch={n * args.num_steps}")

    baselines = {g: evaluate(lambda o, g=g: np.full(len(o), g), args) for g in range(n_actions)}
    for g, r in baselines.items():
        print(f"fixed guard {g}: mean reward {r:.5f}")

    torch.manual_seed(args.seed)  # the initial weights ppo.train starts from
    untrained = evaluate(ppo.Agent(obs_dim, envs.single_action_space).greedy, args)
    agent, curve = ppo.train(envs, args, log=lambda s: print(s, flush=True))
    envs.close()
    trained = evaluate(agent.greedy, args)
    best_g = max(baselines, key=lambda g: baselines[g])
    print(f"\nheld-out mean reward per cell-step ({args.eval_instances} instances x "
          f"{args.eval_days} days):")
    print(f"  untrained policy (greedy): {untrained:.5f}")
    for g, r in baselines.items():
        print(f"  fixed guard {g}:            {r:.5f}")
    print(f"  PPO policy (greedy):       {trained:.5f}  "
          f"({'beats' if trained > baselines[best_g] else 'does not beat'} the best fixed "
          f"guard {best_g}: {baselines[best_g]:.5f})")
    print(f"wall time {time.time() - t_start:.0f}s")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    xs, ys = zip(*curve, strict=True)
    ax.plot(xs, ys, label="PPO (training rollouts, sampled actions)")
    for g, r in baselines.items():
        ax.axhline(r, ls="--", lw=0.8, color=f"C{g + 1}", label=f"fixed guard {g} (held-out)")
    ax.axhline(trained, color="k", lw=1.2, label="PPO greedy (held-out)")
    ax.set_xlabel("agent steps")
    ax.set_ylabel("mean reward per cell-step")
    ax.set_title("PPO with parameter sharing on pcs_v0 (6x6, daily load profile)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"learning curve written to {args.out}")
    if args.json_out:
        from seer_env.perf.bench import results_file, write_results

        summary: dict[str, float] = {f"fixed_guard_{g}": r for g, r in baselines.items()}
        summary.update(untrained=untrained, trained=trained, best_fixed_guard=best_g,
                       best_fixed=baselines[best_g],
                       # how much less loss than the baseline (rewards are negative)
                       gain_vs_no_guard=1.0 - trained / baselines[0],
                       gain_vs_best_fixed=1.0 - trained / baselines[best_g],
                       wall_s=time.time() - t_start)
        write_results(args.json_out, results_file(
            "examples/ppo_pcs.py",
            {"baselines": baselines, "untrained": untrained, "trained": trained,
             "curve": curve, "best_fixed_guard": best_g}, summary, args=vars(args)))


if __name__ == "__main__":
    main()
