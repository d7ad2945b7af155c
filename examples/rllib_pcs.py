"""PPO on PCS with RLlib (new API stack): one shared policy, remote env runners.

Every cell of the PCS torus is an agent mapped to the same policy ("shared").
The env runners are Ray actors: on a laptop they are local processes, on a Ray
cluster (``ray start --head`` on one machine, ``ray start --address=...`` on the
others, then run this script with ``--address auto``) they spread across
machines; nothing else changes.

Run::

    pip install -e '.[rllib]'
    python examples/rllib_pcs.py --iterations 5 --env-runners 2

Each env runner steps its own PCS env (``threads=1``: one CPU per runner);
for big grids give runners more CPUs (``num_cpus_per_env_runner``) and the env
``threads=N``.
"""

from __future__ import annotations

import argparse
import time

import ray
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from seer_env.rllib import SeerMultiAgentEnv, shared_policy


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=5, help="training iterations")
    p.add_argument("--env-runners", type=int, default=2, help="remote env runners")
    p.add_argument("--width", type=int, default=4, help="PCS grid width")
    p.add_argument("--height", type=int, default=4, help="PCS grid height")
    p.add_argument("--batch", type=int, default=1000, help="env steps per training batch")
    p.add_argument("--address", default=None,
                   help="Ray cluster address ('auto' to join a running cluster); "
                        "default: start a local Ray")
    args = p.parse_args()

    if args.address:
        ray.init(address=args.address)
    else:
        # "local": a new Ray of its own, even where a cluster runs on this machine
        ray.init(address="local", num_cpus=args.env_runners + 1, include_dashboard=False)
    env_config = {"env": "pcs_v0", "width": args.width, "height": args.height,
                  "max_cycles": 72, "profile_amplitude": 0.8, "next_call_mean": 180.0,
                  "move_mean": 300.0, "threads": 1}
    config = (
        PPOConfig()
        .environment(SeerMultiAgentEnv, env_config=env_config)
        .env_runners(num_env_runners=args.env_runners)
        .multi_agent(**shared_policy("shared"))
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            "shared": RLModuleSpec(model_config={"fcnet_hiddens": [64, 64]})}))
        .training(train_batch_size_per_learner=args.batch, minibatch_size=args.batch // 4,
                  num_epochs=4, lr=1e-3)
    )
    algo = config.build_algo()
    for i in range(args.iterations):
        t0 = time.perf_counter()
        res = algo.train()
        er = res["env_runners"]
        print(f"iteration {i + 1}: {time.perf_counter() - t0:.1f} s, "
              f"env steps {er['num_env_steps_sampled']}, "
              f"agent steps {er['num_module_steps_sampled']['shared']}, "
              f"episode return mean {er.get('episode_return_mean', float('nan')):.3f}")
    algo.stop()
    ray.shutdown()


if __name__ == "__main__":
    main()
