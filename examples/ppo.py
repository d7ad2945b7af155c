"""PPO with parameter sharing on any seer env, in CleanRL's single-file style.

One policy network drives every agent of every instance: the env is the
model's ``agent_vector_env``, a Gymnasium ``VectorEnv`` whose sub-envs are the
agents (``num_instances x agents``).  Works for shipped envs and for your own
model folders, discrete (categorical policy), multi-discrete (one categorical
per component) or Box actions (Gaussian policy; the env clips actions to its
bounds); with action masks the logits of forbidden choices are masked.
Samples of agents that died while their instance goes on (``infos["active"]``
False) are left out of the loss.

A model with agent groups trains one group (``--group NAME``; the first group
by default): its agents share the policy and the other groups act uniformly at
random within their masks (the per-group VectorEnv's default).

Run::

    pip install torch                    # (CPU is enough)
    python examples/ppo.py --env pcs_v0 --set width=6 --set height=6
    python examples/ppo.py --env examples/traffic --updates 30
    python examples/ppo.py --env path/to/mymodel --smoke      # a few updates
    python examples/ppo.py --env hunt_v0 --group prey         # one group of a grouped model

At the end it compares the trained policy (greedy) with a random policy on
held-out seeds.  Structure (CleanRL's ``ppo.py``): arguments, environment,
agent, rollout storage, then the loop: collect ``num_steps`` steps from all
sub-envs, compute GAE advantages, run ``update_epochs`` epochs of
clipped-surrogate minibatch updates.  ``autoreset_mode="same_step"``: the
observation returned with a done flag is already the next episode's, as
CleanRL's loop assumes.
"""

from __future__ import annotations

import argparse
import ast
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import cpu_training  # noqa: F401  (before torch: its OpenMP workers spin briefly)
import gymnasium
import numpy as np
import torch
import torch.nn as nn
from gymnasium.spaces import Discrete, MultiDiscrete
from torch.distributions.categorical import Categorical
from torch.distributions.normal import Normal

import seer_env

# --- arguments ----------------------------------------------------------------------------


@dataclass
class Args:
    env: str = "pcs_v0"
    """env name or model folder path"""
    seed: int = 1
    updates: int = 50
    """PPO iterations (rollout + update)"""
    num_instances: int = 4
    """instances stepped together; sub-envs = num_instances * agents"""
    num_steps: int = 64
    """steps per rollout per sub-env"""
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
    reward_scale: float = 1.0
    """rewards are multiplied by this for learning (reports use raw rewards)"""
    eval_instances: int = 4
    eval_steps: int = 128
    torch_threads: int = 2
    group: str = ""
    """the group to train, for a model with agent groups (default: its first)"""
    config: dict[str, Any] = field(default_factory=dict)
    """env config (--set key=value)"""


def parse_args(argv: list[str] | None = None) -> Args:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = Args()
    for name, value in vars(defaults).items():
        if name == "config":
            continue
        flag = f"--{name.replace('_', '-')}"
        if isinstance(value, bool):
            p.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=value)
        else:
            p.add_argument(flag, type=type(value), default=value)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="env config value (repeatable)")
    p.add_argument("--smoke", action="store_true", help="CI mode: 3 short updates, tiny eval")
    ns = p.parse_args(argv)
    smoke = ns.__dict__.pop("smoke")
    sets = ns.__dict__.pop("set")
    args = Args(**vars(ns))
    for item in sets:
        k, v = item.split("=", 1)
        try:
            args.config[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            args.config[k] = v
    if smoke:
        args.updates, args.num_steps, args.eval_instances, args.eval_steps = 3, 24, 2, 24
    return args


# --- agent (CleanRL's MLP actor-critic) ----------------------------------------------------


def layer_init(layer: nn.Linear, std: float = float(np.sqrt(2)), bias: float = 0.0) -> nn.Linear:
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias)
    return layer


def _mlp(n_in: int, n_out: int, std: float) -> nn.Sequential:
    return nn.Sequential(layer_init(nn.Linear(n_in, 64)), nn.Tanh(),
                         layer_init(nn.Linear(64, 64)), nn.Tanh(),
                         layer_init(nn.Linear(64, n_out), std=std))


class Agent(nn.Module):
    """Actor-critic for one agent's observation: a categorical policy
    (``Discrete``), one categorical per component over its slice of the logits
    (``MultiDiscrete``, CleanRL's ``ppo_multidiscrete``) or a Gaussian (Box).
    A mask row (1 = allowed; a multi-discrete action's components one after
    another) gives the logits of forbidden choices ``-1e8``: never sampled,
    probability 0 in the log-probabilities and entropies."""

    def __init__(self, obs_dim: int, action_space: gymnasium.Space) -> None:
        super().__init__()
        #: integer actions (the rollout stores them as long)
        self.discrete = isinstance(action_space, (Discrete, MultiDiscrete))
        if isinstance(action_space, Discrete):
            self.nvec: list[int] | None = None
            n_out = int(action_space.n)
        elif isinstance(action_space, MultiDiscrete):
            self.nvec = [int(k) for k in np.asarray(action_space.nvec).reshape(-1)]
            n_out = sum(self.nvec)
        else:
            self.nvec = None
            n_out = int(np.prod(action_space.shape))
        self.critic = _mlp(obs_dim, 1, 1.0)
        self.actor = _mlp(obs_dim, n_out, 0.01)
        if not self.discrete:
            self.logstd = nn.Parameter(torch.zeros(1, n_out))

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def _logits(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        out = self.actor(x)
        if mask is not None:  # forbidden choices (mask False) get no probability
            out = out.masked_fill(~mask, -1e8)
        return out

    def get_action_and_value(
        self, x: torch.Tensor, action: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        if self.nvec is not None:  # one categorical per component
            parts = torch.split(self._logits(x, mask), self.nvec, dim=1)
            dists = [Categorical(logits=lg) for lg in parts]
            if action is None:
                action = torch.stack([d.sample() for d in dists], dim=1)
            logprob = torch.stack([d.log_prob(action[:, i]) for i, d in enumerate(dists)])
            entropy = torch.stack([d.entropy() for d in dists])
            return action, logprob.sum(0), entropy.sum(0), self.critic(x)
        if self.discrete:
            d: Any = Categorical(logits=self._logits(x, mask))
        else:
            out = self.actor(x)
            d = Normal(out, self.logstd.expand_as(out).exp())
        if action is None:
            action = d.sample()
        logprob, entropy = d.log_prob(action), d.entropy()
        if not self.discrete:
            logprob, entropy = logprob.sum(1), entropy.sum(1)
        return action, logprob, entropy, self.critic(x)

    def greedy(self, obs: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        with torch.no_grad():
            x = torch.as_tensor(obs)
            if not self.discrete:
                return self.actor(x).numpy()
            out = self._logits(x, None if mask is None else torch.as_tensor(mask != 0))
            if self.nvec is not None:
                parts = torch.split(out, self.nvec, dim=1)
                return torch.stack([lg.argmax(dim=1) for lg in parts], dim=1).numpy()
        return out.argmax(dim=1).numpy()


def random_policy(space: gymnasium.Space, rng: np.random.Generator
                  ) -> Callable[..., np.ndarray]:
    """``policy(obs, mask=None)``: uniformly random actions of ``space``, each
    (component) among the choices its mask row allows."""
    nvec = [int(space.n)] if isinstance(space, Discrete) else \
        [int(k) for k in np.asarray(space.nvec).reshape(-1)] \
        if isinstance(space, MultiDiscrete) else None

    def policy(o: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        if nvec is None:  # Box
            return rng.uniform(space.low, space.high,
                               size=(len(o), *space.shape)).astype(np.float32)
        if mask is None:
            mask = np.ones((len(o), sum(nvec)), np.int8)
        out, off = np.zeros((len(o), len(nvec)), np.int64), 0
        for j, k in enumerate(nvec):  # argmax of noise on the allowed choices
            allowed = mask[:, off:off + k] != 0
            out[:, j] = np.where(allowed, rng.random(allowed.shape), -1.0).argmax(axis=1)
            off += k
        return out[:, 0] if isinstance(space, Discrete) else out
    return policy


# --- evaluation ----------------------------------------------------------------------------


def evaluate(policy: Callable[..., np.ndarray], make_envs: Callable[[int], Any],
             instances: int, steps: int, seed: int = 10_000) -> float:
    """Mean reward per agent-step of ``policy(obs) -> actions`` over held-out seeds
    (samples of idle sub-envs, ``infos["active"]`` False, left out).  For a model
    with action masks the policy is called ``policy(obs, infos["action_mask"])``."""
    envs = make_envs(instances)
    obs, infos = envs.reset(seed=seed)
    total, count = 0.0, 0
    for _ in range(steps):
        acts = policy(obs, infos["action_mask"]) if "action_mask" in infos else policy(obs)
        obs, reward, term, trunc, infos = envs.step(acts)
        active = infos["active"]
        total += float(reward[active].sum())
        count += int(active.sum())
    envs.close()
    return total / max(count, 1)


# --- training ------------------------------------------------------------------------------


def train(envs: Any, args: Args, log: Callable[[str], None] = print, agent: Any = None,
          masked: bool = False) -> tuple[Any, list[tuple[int, float]]]:
    """PPO on ``envs`` (a Gymnasium VectorEnv with ``infos["active"]``); returns the
    agent and the learning curve (agent steps, mean raw reward per valid sample).

    ``agent``: the actor-critic to train (default: an :class:`Agent` for the env's
    spaces; another needs ``discrete``, ``get_value`` and ``get_action_and_value``).
    ``masked``: the rollout keeps ``infos["action_mask"]`` (as bool) and passes each
    sample's row as ``get_action_and_value(x, action, mask)`` when acting and in the
    update (an agent that masks its logits: ``examples/ppo_hunt.py``)."""
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    t_start = time.time()
    n = envs.num_envs
    obs_dim = envs.single_observation_space.shape[0]
    if agent is None:
        agent = Agent(obs_dim, envs.single_action_space)
    act_shape = envs.single_action_space.shape  # () for Discrete
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    batch_size = n * args.num_steps
    minibatch_size = max(1, batch_size // args.num_minibatches)

    # rollout storage
    obs = torch.zeros((args.num_steps, n, obs_dim))
    actions = torch.zeros((args.num_steps, n, *act_shape),
                          dtype=torch.long if agent.discrete else torch.float32)
    logprobs = torch.zeros((args.num_steps, n))
    rewards = torch.zeros((args.num_steps, n))
    dones = torch.zeros((args.num_steps, n))
    values = torch.zeros((args.num_steps, n))
    valid = torch.zeros((args.num_steps, n), dtype=torch.bool)

    next_obs_np, infos = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs_np)
    next_done = torch.zeros(n)
    next_valid = torch.as_tensor(infos["active"])
    if masked:
        masks = torch.ones((args.num_steps, n, infos["action_mask"].shape[1]), dtype=torch.bool)
        next_mask = torch.as_tensor(infos["action_mask"] != 0)
    mask_kw: dict[str, Any] = {}
    curve: list[tuple[int, float]] = []
    global_step = 0

    for update in range(1, args.updates + 1):
        if args.anneal_lr:
            frac = 1.0 - (update - 1.0) / args.updates
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate
        raw_reward_sum, raw_count = 0.0, 0
        for step in range(args.num_steps):
            global_step += n
            obs[step], dones[step], valid[step] = next_obs, next_done, next_valid
            if masked:
                masks[step] = mask_kw["mask"] = next_mask
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, **mask_kw)
            values[step] = value.flatten()
            actions[step], logprobs[step] = action, logprob
            next_obs_np, reward, term, trunc, infos = envs.step(action.numpy())
            raw_reward_sum += float(reward[valid[step].numpy()].sum())
            raw_count += int(valid[step].sum())
            rewards[step] = torch.as_tensor(reward) * args.reward_scale
            next_obs = torch.as_tensor(next_obs_np)
            next_done = torch.as_tensor(term | trunc, dtype=torch.float32)
            next_valid = torch.as_tensor(infos["active"])
            if masked:
                next_mask = torch.as_tensor(infos["action_mask"] != 0)
        curve.append((global_step, raw_reward_sum / max(raw_count, 1)))

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
        b_actions = actions.reshape((-1, *act_shape))[keep]
        b_logprobs = logprobs.reshape(-1)[keep]
        b_advantages = advantages.reshape(-1)[keep]
        b_returns = returns.reshape(-1)[keep]
        b_values = values.reshape(-1)[keep]
        if masked:
            b_masks = masks.reshape((-1, masks.shape[2]))[keep]
        m = len(b_obs)

        clipfracs = []
        for _epoch in range(args.update_epochs):
            b_inds = torch.randperm(m)
            for start in range(0, m, minibatch_size):
                mb = b_inds[start:start + minibatch_size]
                if masked:
                    mask_kw["mask"] = b_masks[mb]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb], b_actions[mb], **mask_kw)
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
        log(f"update {update:3d}  step {global_step:8d}  mean reward {curve[-1][1]:.5f}  "
            f"v_loss {v_loss.item():.4f}  kl {approx_kl.item():.4f}  "
            f"clipfrac {np.mean(clipfracs):.3f}  ev {explained_var:.3f}  "
            f"{time.time() - t_start:.0f}s")
    return agent, curve


def groups_of(model: Any, config: dict[str, Any]) -> list[str]:
    """The model's agent group names under ``config`` (one for a model without groups)."""
    probe = model.vector_env(1, threads=1, **config)
    try:
        return [g.name for g in probe.groups]
    finally:
        probe.close()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    model = seer_env.registry.get(args.env)
    groups = groups_of(model, args.config)
    group: dict[str, Any] = {}
    if len(groups) > 1 or args.group:
        name = args.group or groups[0]
        if name not in groups:
            raise SystemExit(f"--group {name!r}: {model.name}'s groups are {groups}")
        if len(groups) > 1:
            group = {"group": name}
            print(f"{model.name} has agent groups {groups}: training {name!r} (--group to "
                  "choose); the others act uniformly at random within their masks", flush=True)

    def make_envs(instances: int, **kw: Any) -> Any:
        return model.agent_vector_env(instances, **{"threads": 1, **group, **args.config, **kw})

    envs = make_envs(args.num_instances, autoreset_mode="same_step")
    print(f"{model.name}: {envs.num_envs} sub-envs, obs {envs.single_observation_space.shape}, "
          f"action {envs.single_action_space}", flush=True)
    t0 = time.time()
    rand_policy = random_policy(envs.single_action_space, np.random.default_rng(args.seed))
    # a model with action masks: the policy's logits are masked (a forbidden
    # action would be refused)
    _, first = envs.reset(seed=args.seed)
    masked = "action_mask" in first
    agent, curve = train(envs, args, log=lambda s: print(s, flush=True), masked=masked)
    envs.close()
    rand = evaluate(rand_policy, make_envs, args.eval_instances, args.eval_steps)
    trained = evaluate(agent.greedy, make_envs, args.eval_instances, args.eval_steps)
    print(f"held-out mean reward per agent-step: random policy {rand:.5f}, "
          f"PPO policy (greedy) {trained:.5f}; wall time {time.time() - t0:.0f}s")
    return {"curve": curve, "random": rand, "trained": trained}


if __name__ == "__main__":
    main()
