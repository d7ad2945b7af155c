"""The BenchMARL task (``seer_env.benchmarl``) under BenchMARL 1.5.2 and
TorchRL 0.11 -- run by ``tests/in_benchmarl_venv/run.sh`` in a venv of their own
(skipped in the main venv, which has no BenchMARL).  Every algorithm family
runs two iterations on PCS (discrete), Aircraft (Box actions, agents that
die) and Hunt (two groups, masks, multi-discrete actions flattened):
MAPPO, IPPO, and an off-policy one (QMIX for discrete actions, MASAC for
continuous); the specs the task gives are the env's, unbatched."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("benchmarl")

from benchmarl.algorithms import IppoConfig, MappoConfig, MasacConfig, QmixConfig  # noqa: E402
from benchmarl.experiment import Experiment, ExperimentConfig  # noqa: E402
from benchmarl.models.mlp import MlpConfig  # noqa: E402

from seer_env.benchmarl import SeerTask, SeerTaskClass, task  # noqa: E402
from seer_env.errors import ConfigError  # noqa: E402
from seer_env.torchrl import SeerTorchEnv  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

SMALL: dict[str, dict[str, Any]] = {
    "pcs_v0": {"width": 4, "height": 4, "max_cycles": 30},
    "aircraft_v0": {"num_uavs": 4, "max_cycles": 30},
    "hunt_v0": {"max_cycles": 30},
}


def _config(tmp_path: Path) -> ExperimentConfig:
    cfg = ExperimentConfig.get_from_yaml()
    cfg.max_n_iters = 2
    cfg.loggers = []
    cfg.checkpoint_interval = 0
    cfg.create_json = False
    cfg.render = False
    cfg.save_folder = str(tmp_path)
    cfg.on_policy_collected_frames_per_batch = 120
    cfg.on_policy_n_envs_per_worker = 4
    cfg.on_policy_n_minibatch_iters = 1
    cfg.on_policy_minibatch_size = 60
    cfg.off_policy_collected_frames_per_batch = 120
    cfg.off_policy_n_envs_per_worker = 4
    cfg.off_policy_n_optimizer_steps = 2
    cfg.off_policy_train_batch_size = 32
    cfg.off_policy_init_random_frames = 0
    cfg.evaluation = True
    cfg.evaluation_interval = 120
    cfg.evaluation_episodes = 2
    return cfg


@pytest.mark.parametrize("env", sorted(SMALL))
@pytest.mark.parametrize("algo", ["mappo", "ippo", "off-policy"])
def test_two_iterations_of_each_algorithm_family(env: str, algo: str, tmp_path: Path) -> None:
    t = getattr(SeerTask, env.upper()).get_task({**SMALL[env], "threads": 1})
    continuous = env == "aircraft_v0"
    assert t.supports_continuous_actions() is continuous
    assert t.supports_discrete_actions() is not continuous
    algorithm = {"mappo": MappoConfig, "ippo": IppoConfig,
                 "off-policy": MasacConfig if continuous else QmixConfig}[algo]
    ex = Experiment(task=t, algorithm_config=algorithm.get_from_yaml(),
                    model_config=MlpConfig.get_from_yaml(),
                    critic_model_config=MlpConfig.get_from_yaml(), seed=0,
                    config=_config(tmp_path))
    ex.run()
    assert ex.n_iters_performed == 2 and ex.total_frames == 240
    assert math.isfinite(float(ex.mean_return))


def test_the_specs_are_the_envs_unbatched_with_hunts_actions_flattened() -> None:
    t = SeerTask.HUNT_V0.get_task({"threads": 1, "return_state": True})
    env = t.get_env_fun(num_envs=3, continuous_actions=False, seed=0, device="cpu")()
    assert isinstance(env, SeerTorchEnv) and env.batch_size == (3,)
    assert t.group_map(env) == env.group_map == {
        "predator": ["predator_0", "predator_1", "predator_2"], "prey": ["prey_0", "prey_1"]}
    obs = t.observation_spec(env)
    assert set(obs.keys()) == {"predator", "prey"}
    assert obs["predator", "observation"].shape == (3, 83)
    assert set(obs["prey"].keys()) == {"observation"}  # no alive mask, no action mask, no info
    act = t.action_spec(env)
    assert act["predator", "action"].shape == (3,) and act["predator", "action"].space.n == 10
    assert act["prey", "action"].space.n == 5
    masks = t.action_mask_spec(env)
    assert masks["predator", "action_mask"].shape == (3, 10)  # the joint mask
    assert masks["prey", "action_mask"].shape == (2, 5)
    assert t.state_spec(env)["state"].shape == env.full_observation_spec_unbatched[
        "state"].shape
    assert set(t.info_spec(env)["prey"].keys()) == {"info"}
    assert t.max_steps(env) == env.venv.max_cycles and not t.has_render(env)
    with pytest.raises(ConfigError, match="asked for continuous actions"):
        t.get_env_fun(num_envs=1, continuous_actions=True, seed=0, device="cpu")
    env.close()
    # multi-discrete kept when the config says so
    keep = SeerTask.HUNT_V0.get_task({"threads": 1, "flatten_actions": False})
    env = keep.get_env_fun(num_envs=1, continuous_actions=False, seed=0, device="cpu")()
    assert keep.action_spec(env)["predator", "action"].shape == (3, 2)
    env.close()
    assert SeerTask.PCS_V0.get_task(None).config == {"env": "pcs_v0"}
    assert SeerTask.PCS_V0.get_task({"max_steps": 7}).max_steps(None) == 7


def test_a_users_model_folder_is_a_task_and_mixed_action_kinds_are_refused() -> None:
    from seer_env import sdk

    t = task(ROOT / "tests" / "models" / "dying", num_agents=4, threads=1)
    assert isinstance(t, SeerTaskClass) and t.name == "DYING"
    assert t.supports_discrete_actions() and not t.supports_continuous_actions()
    env = t.get_env_fun(num_envs=2, continuous_actions=False, seed=1, device="cpu")()
    td = env.rollout(5, break_when_any_done=False)
    assert td.batch_size == (2, 5)
    env.close()
    teams = task(ROOT / "tests" / "models" / "teams", threads=1)  # Box, Discrete, multi-discrete
    assert not teams.supports_discrete_actions() and not teams.supports_continuous_actions()
    for continuous in (False, True):
        with pytest.raises(ConfigError, match="groups have \\['box', 'discrete'\\] actions"):
            teams.get_env_fun(num_envs=1, continuous_actions=continuous, seed=0, device="cpu")
    assert sdk  # the SDK's models load the same way (task(folder) above)


def test_a_two_group_masked_model_of_our_own_trains_under_mappo(tmp_path: Path) -> None:
    """The ``teams`` test model without its Box group: hunters (Discrete,
    masked) and runners (MultiDiscrete([3, 2]), masked, flattened to 6 joint
    actions); masks enforced, so a forbidden action would fail the run."""
    t = task(ROOT / "tests" / "models" / "teams", num_scouts=0, life=20, threads=1)
    assert t.supports_discrete_actions()
    ex = Experiment(task=t, algorithm_config=MappoConfig.get_from_yaml(),
                    model_config=MlpConfig.get_from_yaml(),
                    critic_model_config=MlpConfig.get_from_yaml(), seed=0,
                    config=_config(tmp_path))
    ex.run()
    assert ex.n_iters_performed == 2 and math.isfinite(float(ex.mean_return))


def test_a_task_naming_an_unknown_model_or_option_says_so() -> None:
    with pytest.raises(ConfigError, match="unknown env 'nosuch_v0'"):
        task("nosuch_v0")
    with pytest.raises(ConfigError, match="no such model folder"):
        task("/nonexistent/mymodel")
    bad = SeerTask.HUNT_V0.get_task({"widht": 8})
    with pytest.raises(ConfigError, match=r"unknown config key\(s\) \['widht'\]"):
        bad.supports_discrete_actions()
    with pytest.raises(ConfigError, match=r"unknown config key\(s\) \['widht'\]"):
        bad.get_env_fun(num_envs=1, continuous_actions=False, seed=0, device="cpu")


def test_the_short_path_gives_the_adapters_classes() -> None:
    import pickle

    import seer_env.adapters.benchmarl as adapter
    import seer_env.benchmarl as short

    assert (short.SeerTask, short.SeerTaskClass, short.task) == (
        adapter.SeerTask, adapter.SeerTaskClass, adapter.task)
    t = short.SeerTask.PHOLD_V0.get_task({"num_entities": 8})
    assert pickle.loads(pickle.dumps(t)) == t  # BenchMARL pickles tasks into its runs


def test_the_docs_benchmarl_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The docs' blocks marked ``needs: benchmarl`` (skipped in the main venv by
    tests/test_docs_examples.py) run here, each in a fresh namespace."""
    from tests.test_docs_examples import PAGES, page_blocks

    monkeypatch.chdir(tmp_path)
    ran = []
    for page in PAGES:
        for b in page_blocks(page)[1]:
            if b["mark"] == ("needs", "benchmarl"):
                where = f"{page.relative_to(ROOT)}:{b['line']}"
                exec(compile(str(b["body"]), where, "exec"), {"__name__": "__main__"})
                ran.append(where)
    assert len(ran) >= 2, ran  # the README's and the Training page's
