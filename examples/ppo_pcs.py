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

Structure (CleanRL's ``ppo.py``): arguments, environment, agent, rollout
storage, then the loop: collect ``num_steps`` steps from all sub-envs, compute
GAE advantages, run ``update_epochs`` epochs of clipped-surrogate minibatch
updates.  Differences: ``autoreset_mode="same_step"`` (the observation returned
with a done flag is already the next episode's, as CleanRL's loop assumes), and
samples whose observation is padding (``infos["active"]`` False: an agent that
died while its instance goes on; PCS cells never do) are left out of the loss.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

from seer_env.envs import pcs_v0

# --- arguments ----------------------------------------------------------------------------


@dataclass
class Args:
    seed: int = 1
    total_updates: int = 200
    """PPO iterations (rollout + update)"""
    num_instances: int = 8
    """PCS instances stepped together; sub-envs = num_instances * cells"""
    num_steps: int = 72
    """steps per rollout per sub-env (72 x 20 minutes = one simulated day)"""
    learning_rate: float = 1e-3
    anneal_lr: bool = True
    gamma: float = 0.95
    gae_lambda: float = 0.9
    num_minibatches: int = 4
    update_epochs: int = 8
    clip_coef: float = 0.2
    ent_coef: float = 0.003
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    reward_scale: float = 20.0
    """rewards are multiplied by this for learning (reports use raw rewards)"""
    eval_instances: int = 16
    eval_days: int = 2
    torch_threads: int = 2
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
        args.total_updates, args.num_steps, args.eval_instances, args.eval_days = 3, 24, 2, 1
    return args


# --- agent (CleanRL's MLP actor-critic) ----------------------------------------------------


def layer_init(layer: nn.Linear, std: float = float(np.sqrt(2)), bias: float = 0.0) -> nn.Linear:
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, n_actions), std=0.01),
        )

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(
        self, x: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        probs = Categorical(logits=self.actor(x))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


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


def greedy(agent: Agent):  # type: ignore[no-untyped-def]
    def act(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return agent.actor(torch.as_tensor(obs)).argmax(dim=1).numpy()
    return act


# --- training ------------------------------------------------------------------------------


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    t_start = time.time()

    envs = pcs_v0.agent_vector_env(args.num_instances, autoreset_mode="same_step", **ENV_CONFIG)
    n = envs.num_envs
    obs_dim = envs.single_observation_space.shape[0]
    n_actions = int(envs.single_action_space.n)
    batch_size = n * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    print(f"{envs}: obs_dim={obs_dim}, actions={n_actions}, batch={batch_size}")

    baselines = {g: evaluate(lambda o, g=g: np.full(len(o), g), args) for g in range(n_actions)}
    for g, r in baselines.items():
        print(f"fixed guard {g}: mean reward {r:.5f}")

    agent = Agent(obs_dim, n_actions)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    untrained = evaluate(greedy(agent), args)

    # rollout storage
    obs = torch.zeros((args.num_steps, n, obs_dim))
    actions = torch.zeros((args.num_steps, n), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, n))
    rewards = torch.zeros((args.num_steps, n))
    dones = torch.zeros((args.num_steps, n))
    values = torch.zeros((args.num_steps, n))
    valid = torch.zeros((args.num_steps, n), dtype=torch.bool)

    next_obs_np, infos = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs_np)
    next_done = torch.zeros(n)
    next_valid = torch.as_tensor(infos["active"])
    curve: list[tuple[int, float]] = []
    global_step = 0

    for update in range(1, args.total_updates + 1):
        if args.anneal_lr:
            frac = 1.0 - (update - 1.0) / args.total_updates
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate
        raw_reward_sum = 0.0
        for step in range(args.num_steps):
            global_step += n
            obs[step], dones[step], valid[step] = next_obs, next_done, next_valid
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step] = value.flatten()
            actions[step], logprobs[step] = action, logprob
            next_obs_np, reward, term, trunc, infos = envs.step(action.numpy())
            raw_reward_sum += float(reward.sum())
            rewards[step] = torch.as_tensor(reward) * args.reward_scale
            next_obs = torch.as_tensor(next_obs_np)
            next_done = torch.as_tensor(term | trunc, dtype=torch.float32)
            next_valid = torch.as_tensor(infos["active"])
        curve.append((global_step, raw_reward_sum / batch_size))

        # GAE (CleanRL): dones[t] marks obs[t] as the first of an episode
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = torch.zeros(n)
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal, nextvalues = 1.0 - next_done, next_value
                else:
                    nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
                advantages[t] = lastgaelam
            returns = advantages + values

        # flatten, dropping padding samples
        keep = valid.reshape(-1)
        b_obs = obs.reshape((-1, obs_dim))[keep]
        b_actions = actions.reshape(-1)[keep]
        b_logprobs = logprobs.reshape(-1)[keep]
        b_advantages = advantages.reshape(-1)[keep]
        b_returns = returns.reshape(-1)[keep]
        b_values = values.reshape(-1)[keep]
        m = len(b_obs)

        clipfracs = []
        for _epoch in range(args.update_epochs):
            b_inds = torch.randperm(m)
            for start in range(0, m, minibatch_size):
                mb = b_inds[start:start + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb], b_actions[mb])
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
                mb_adv = b_advantages[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss1 = -mb_adv * ratio
                pg_loss2 = -mb_adv * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()
                v_loss = 0.5 * ((newvalue.view(-1) - b_returns[mb]) ** 2).mean()
                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        y_pred, y_true = b_values.numpy(), b_returns.numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        print(f"update {update:3d}  step {global_step:8d}  mean reward {curve[-1][1]:.5f}  "
              f"v_loss {v_loss.item():.4f}  kl {approx_kl.item():.4f}  "
              f"clipfrac {np.mean(clipfracs):.3f}  ev {explained_var:.3f}  "
              f"{time.time() - t_start:.0f}s", flush=True)

    envs.close()
    trained = evaluate(greedy(agent), args)
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
        with open(args.json_out, "w") as f:
            json.dump({"baselines": baselines, "untrained": untrained, "trained": trained,
                       "curve": curve, "best_fixed_guard": best_g}, f)


if __name__ == "__main__":
    main()
