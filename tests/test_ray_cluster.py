"""Beyond one machine, on Ray: a two-node cluster on this machine
(``ray.cluster_utils.Cluster``, one CPU per node) runs RLlib's PPO with an
env runner on each node (Hunt: groups, masks, flattened actions; RLlib's
action-masking module) and TorchRL's Ray collector with a collector on each
node over ``SeerTorchEnv``, two iterations each; ``check_nodes`` names a
node that cannot make the env (where ``build_algo`` itself only says
"IndexError: list index out of range")."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.rllib")

from ray.cluster_utils import Cluster  # noqa: E402

from seer_env import rllib  # noqa: E402
from seer_env.errors import ConfigError, StateError  # noqa: E402


def test_check_nodes_needs_a_cluster() -> None:
    if ray.is_initialized():
        pytest.skip("a Ray session is open")
    with pytest.raises(StateError, match=r"ray.init"):
        rllib.check_nodes({"env": "pcs_v0"})


@pytest.fixture(scope="module")
def two_nodes(ray_turn: None) -> Iterator[Cluster]:
    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "object_store_memory": 100 * 1024**2})
    cluster.add_node(num_cpus=1, object_store_memory=100 * 1024**2)
    ray.init(address=cluster.address, log_to_driver=False)
    cluster.wait_for_nodes()
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def test_rllib_env_runners_on_two_nodes(two_nodes: Cluster) -> None:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )

    cfg = {"env": "hunt_v0", "threads": 1, "max_cycles": 20, "flatten_actions": True,
           "observation_key": "observations"}
    hosts = rllib.check_nodes(cfg)
    assert len(hosts) == 2  # both nodes make the env
    small = {"fcnet_hiddens": [16]}
    config = (
        PPOConfig()
        .environment(rllib.SeerMultiAgentEnv, env_config=cfg)  # RLlib's env checker on
        # one CPU each, one CPU per node: one runner on each node
        .env_runners(num_env_runners=2, num_cpus_per_env_runner=1, rollout_fragment_length=50)
        .multi_agent(**rllib.group_policies(cfg))
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            g: RLModuleSpec(module_class=ActionMaskingTorchRLModule, model_config=small)
            for g in ("predator", "prey")}))
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
    )
    algo = config.build_algo()
    try:
        nodes = algo.env_runner_group.foreach_env_runner(
            lambda r: ray.get_runtime_context().get_node_id(), local_env_runner=False)
        assert len(set(nodes)) == 2  # the runners are on two nodes
        for _ in range(2):  # masks enforced: an action they forbid would fail it
            res = algo.train()
            assert res["env_runners"]["num_env_steps_sampled"] >= 200
    finally:
        algo.stop()


def test_torchrls_ray_collector_on_two_nodes(two_nodes: Cluster) -> None:
    pytest.importorskip("torchrl")
    from torchrl.collectors.distributed import RayCollector

    from seer_env.torchrl import SeerTorchEnv

    make = functools.partial(SeerTorchEnv, "pcs_v0", num_envs=2, threads=1, width=4,
                             height=4, max_cycles=20, seed=0)
    col = RayCollector([make, make], policy=None, frames_per_batch=80, total_frames=160,
                       remote_configs={"num_cpus": 1})
    try:
        batches, nodes = [], set()
        for td in col:
            batches.append(td)
            # one CPU each, one CPU per node: the two collectors are on two nodes
            nodes |= {ray.get(c.__ray_call__.remote(
                lambda self: ray.get_runtime_context().get_node_id()))
                for c in col.remote_collectors}
        assert len(nodes) == 2
    finally:
        col.shutdown()
    assert len(batches) == 2
    for td in batches:
        assert td.numel() == 80
        obs = td["cell", "observation"]
        assert obs.shape[-2:] == (16, 14) and np.isfinite(obs.numpy()).all()


def test_check_nodes_names_the_node_that_cannot_make_the_env(two_nodes: Cluster) -> None:
    with pytest.raises(ConfigError, match=r"cannot be made on 2 of 2 Ray node\(s\): node .*"
                       r"no such model folder on .*runtime_env"):
        rllib.check_nodes({"env": "/nonexistent/mymodel", "threads": 1})
    with pytest.raises(ConfigError, match="unknown config key"):
        rllib.check_nodes({"env": "pcs_v0", "widht": 4})
