"""Overlap the policy's forward pass with the env: EnvPool's double buffering.

A CleanRL-style rollout loop calls the policy, then the env, then the policy
again: one of the two always waits.  With the batched env's asynchronous API
(``send``/``recv``, ``batch_size``) the instances are split in two halves: while
one half steps on a background thread (the native call releases the GIL), the
policy computes the actions of the other::

    venv = pcs_v0.vector_env(16, batch_size=8, width=16, height=16)
    venv.async_reset(seed=0)
    while True:
        obs, rew, term, trunc, infos = venv.recv()   # the half that finished
        venv.send(policy(obs), infos["env_id"])      # the other half steps meanwhile

Each instance still steps exactly as it would synchronously (same seeds, same
actions: same outputs); only the waiting goes.  This script runs both loops
with the same policy (an MLP shared by every PCS cell, in torch) and the same
number of agent-steps, and prints each loop's agent-steps per second (one
"frame" per agent per step) and their ratio: medians of a few rotated
repetitions in one warm process.  The policy's size is chosen so that its
forward pass over every instance takes about as long as the env's step
(``--hidden`` sets it instead), the case where overlapping gains most: up to
2x on 2 cores, when the second core is free.  ``--policy wait`` spends the
forward pass's time waiting instead (as a policy on an accelerator leaves the
CPU to the env), which needs no second core.

Run (about a minute on 2 cores; the README's figure)::

    pip install -e '.[train]'          # torch
    python examples/async_rollout.py

CI smoke mode (tiny sizes)::

    python examples/async_rollout.py --smoke
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

import cpu_training_async  # noqa: F401  (before torch: its OpenMP workers sleep, not spin)
import numpy as np
import torch

from seer_env.envs import pcs_v0
from seer_env.faces import SeerVectorEnv


@dataclass
class Args:
    num_envs: int = 16  # PCS instances (two halves of num_envs // 2 in the async loop)
    size: int = 16  # PCS grid: size x size cells, one agent each
    steps: int = 150  # synchronous steps per run (the async loop makes as many agent-steps)
    hidden: int = 0  # the policy's hidden width (0: as long as the env's step)
    repeats: int = 5  # runs of each loop, in alternating order
    seed: int = 0
    torch_threads: int = 1  # the policy's threads (the env's: one, the serial executor)
    # "mlp": the torch MLP on the CPU; "wait": the MLP's time spent waiting instead (a
    # policy on an accelerator, which leaves the CPU to the env meanwhile)
    policy: str = "mlp"
    smoke: bool = False
    json: str = ""  # write the figures to this results file (as benchmarks/results/ holds)


def parse() -> Args:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Args()).items():
        if isinstance(default, bool):
            p.add_argument(f"--{name.replace('_', '-')}", action="store_true")
        else:
            p.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    args = Args(**vars(p.parse_args()))
    if args.json:
        from seer_env.perf.bench import require_results_path

        require_results_path(args.json, __file__.rsplit("/", 1)[-1])
    if args.smoke:
        args.num_envs, args.size, args.steps, args.repeats = 4, 4, 6, 1
        args.hidden = args.hidden or 16
    if args.num_envs < 2 or args.num_envs % 2:
        p.error("--num-envs must be even (two halves)")
    if args.policy not in ("mlp", "wait"):
        p.error("--policy must be 'mlp' or 'wait'")
    return args


def make_env(args: Args, batch_size: int | None = None) -> SeerVectorEnv:
    return pcs_v0.vector_env(args.num_envs, width=args.size, height=args.size,
                             executor="serial", threads=1, batch_size=batch_size)


class Policy(torch.nn.Module):
    """An MLP over one agent's observation, shared by every agent; actions are
    sampled from its logits."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: int) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(obs_dim, hidden), torch.nn.Tanh(),
            torch.nn.Linear(hidden, hidden), torch.nn.Tanh(),
            torch.nn.Linear(hidden, n_actions))

    @torch.inference_mode()
    def act(self, obs: np.ndarray) -> np.ndarray:
        """``(n, A, obs_dim)`` observations -> ``(n, A)`` actions."""
        logits = self.net(torch.from_numpy(obs).reshape(-1, obs.shape[-1]))
        actions = torch.distributions.Categorical(logits=logits).sample()
        return actions.reshape(obs.shape[:2]).numpy()


class WaitPolicy:
    """The MLP's forward time spent waiting (``time.sleep`` leaves the CPU, as a
    forward pass on an accelerator does); random actions."""

    def __init__(self, n_actions: int, seconds_per_row: float, seed: int) -> None:
        self.n_actions, self.per_row = n_actions, seconds_per_row
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray) -> np.ndarray:
        time.sleep(self.per_row * obs.shape[0] * obs.shape[1])
        return self.rng.integers(0, self.n_actions, obs.shape[:2])


def sync_rollout(venv: SeerVectorEnv, policy: Policy | WaitPolicy, steps: int, seed: int
                 ) -> tuple[int, float]:
    """The usual loop: policy, then env, ``steps`` times; (agent-steps, seconds)."""
    t0 = time.perf_counter()
    obs, _ = venv.reset(seed=seed)
    for _ in range(steps):
        obs, rew, term, trunc, infos = venv.step(policy.act(obs))
    return steps * venv.num_envs * venv.num_agents, time.perf_counter() - t0


def async_rollout(venv: SeerVectorEnv, policy: Policy | WaitPolicy, steps: int, seed: int
                  ) -> tuple[int, float]:
    """Double buffering: each half steps while the policy acts for the other;
    as many agent-steps as :func:`sync_rollout`'s; (agent-steps, seconds)."""
    t0 = time.perf_counter()
    venv.async_reset(seed=seed)
    sent = 0
    while sent < steps * venv.num_envs:
        obs, rew, term, trunc, infos = venv.recv()  # batch_size instances
        ids = infos["env_id"]
        venv.send(policy.act(obs), ids)
        sent += len(ids)
    for _ in range(venv.num_envs // venv.batch_size):  # the last steps' outputs
        venv.recv()
    return sent * venv.num_agents, time.perf_counter() - t0


def per_call(fn: object, n: int) -> float:
    """Seconds per call of ``fn()`` (best of three runs of ``n`` calls)."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()  # type: ignore[operator]
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def main() -> None:
    args = parse()
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    sync_env = make_env(args)
    async_env = make_env(args, batch_size=args.num_envs // 2)
    obs, _ = sync_env.reset(seed=args.seed)
    n_actions = int(sync_env.single_action_space.n)
    zeros = np.zeros((args.num_envs, sync_env.num_agents), np.int64)
    t_env = per_call(lambda: sync_env.step(zeros), 3 if args.smoke else 20)
    if args.hidden:
        mlp = Policy(obs.shape[-1], n_actions, args.hidden)
    else:  # the width whose forward pass takes about as long as the env's step
        best = None
        for hidden in (16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024):
            cand = Policy(obs.shape[-1], n_actions, hidden)
            t = per_call(lambda c=cand: c.act(obs), 10)
            if best is None or abs(np.log(t / t_env)) < abs(np.log(best[1] / t_env)):
                best = (cand, t)
            if t > 2 * t_env:
                break
        assert best is not None
        mlp = best[0]
    t_pol = per_call(lambda: mlp.act(obs), 3 if args.smoke else 20)
    hidden = mlp.net[0].out_features
    print(f"PCS {args.size}x{args.size}, {args.num_envs} instances x {sync_env.num_agents} "
          f"agents: env step {t_env * 1e3:.2f} ms, policy forward (hidden {hidden}) "
          f"{t_pol * 1e3:.2f} ms, over every instance")
    policy: Policy | WaitPolicy = mlp
    if args.policy == "wait":
        policy = WaitPolicy(n_actions, t_pol / obs.shape[0] / obs.shape[1], args.seed)
        print("the policy waits as long as its forward pass takes (--policy wait)")
    steps = args.steps
    sync_rollout(sync_env, policy, max(1, steps // 10), args.seed)  # warm-up
    async_rollout(async_env, policy, max(1, steps // 10), args.seed)
    sync_fps, async_fps, ratios = [], [], []
    cores: dict[str, list[float]] = {"sync": [], "async": []}
    for rep in range(args.repeats):
        runs = {}
        order = ("sync", "async") if rep % 2 == 0 else ("async", "sync")
        for which in order:
            cpu = time.process_time()  # every thread's CPU time: the cores the loop got
            if which == "sync":
                frames, secs = sync_rollout(sync_env, policy, steps, args.seed + rep)
            else:
                frames, secs = async_rollout(async_env, policy, steps, args.seed + rep)
            runs[which] = frames / secs
            cores[which].append((time.process_time() - cpu) / secs)
            print(f"  {which}: {frames} agent-steps in {secs:.3f} s, "
                  f"{cores[which][-1]:.2f} cores busy")
        sync_fps.append(runs["sync"])
        async_fps.append(runs["async"])
        ratios.append(runs["async"] / runs["sync"])
        print(f"repetition {rep + 1}: sync {runs['sync']:,.0f} frames/s, async "
              f"{runs['async']:,.0f} frames/s ({ratios[-1]:.2f}x)")
    s, a = statistics.median(sync_fps), statistics.median(async_fps)
    print(f"median: sync {s:,.0f} frames/s, async {a:,.0f} frames/s: "
          f"{statistics.median(ratios):.2f}x the synchronous loop "
          f"({args.repeats} repetitions, {steps} steps of {args.num_envs} instances each); "
          f"cores busy: sync {statistics.median(cores['sync']):.2f}, async "
          f"{statistics.median(cores['async']):.2f} (overlapping needs a second core free)")
    sync_env.close()
    async_env.close()
    if args.json:
        from seer_env.perf.bench import results_file, write_results

        write_results(args.json, results_file(
            "examples/async_rollout.py",
            {"sync_fps": sync_fps, "async_fps": async_fps, "ratios": ratios, "cores": cores},
            {"async_vs_sync": statistics.median(ratios),
             "cores_busy_sync": statistics.median(cores["sync"]),
             "cores_busy_async": statistics.median(cores["async"]),
             "env_step_ms": t_env * 1e3, "policy_ms": t_pol * 1e3},
            args=vars(args)))
        print(f"results: {args.json}")


if __name__ == "__main__":
    main()
