"""The RLlib adapter: its quirk fixes, RLlib's env checker, PPO on remote env runners.

Skipped where Ray is not installed; ``run_tests.sh`` installs ``.[rllib]`` so CI
runs all of it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest

from tests.models import load as load_test_model

SMALL_PCS = {"env": "pcs_v0", "width": 3, "height": 3, "max_cycles": 20, "threads": 1}

DYING = load_test_model("dying")


def test_module_imports_without_ray() -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "import seer_env.rllib as r\n"
        "print(sorted(r.shared_policy('p')['policies']))\n"
        "try:\n    r.SeerMultiAgentEnv\nexcept ImportError:\n    print('needs ray')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["['p']", "needs", "ray"]


ray = pytest.importorskip("ray")
from ray.rllib.env.multi_agent_env import MultiAgentEnv  # noqa: E402
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv  # noqa: E402
from ray.rllib.utils.pre_checks.env import check_multiagent_environments  # noqa: E402

from seer_env import rllib  # noqa: E402


def test_adapter_types_order_and_checker() -> None:
    env = rllib.SeerMultiAgentEnv(SMALL_PCS)
    assert isinstance(env, MultiAgentEnv)
    names = [f"cell_{i}" for i in range(9)]
    assert env.possible_agents == names and env.agents == []
    check_multiagent_environments(env)  # RLlib's own checker; raises on any problem
    obs, infos = env.reset(seed=3)
    assert list(obs) == names == env.agents and set(infos) == set(obs)
    for _ in range(20):
        acts = {a: env.get_action_space(a).sample() for a in env.agents}
        obs, rew, term, trunc, infos = env.step(acts)
        assert list(obs) == list(rew) == names and set(infos) == set(obs)
        assert all(type(v) is float for v in rew.values())
        assert all(type(v) is bool for d in (term, trunc) for v in d.values())
        assert all(type(v) is float for d in infos.values() for v in d.values())
        assert all(o in env.get_observation_space(a) for a, o in obs.items())
    assert trunc["__all__"] is True and term["__all__"] is False
    # the episode is over: no agent alive, `agents` the last step's (RLlib's checker)
    assert env.agents == names and env.agents_alive == []
    env.close()


def test_an_episode_whose_last_agents_terminate_at_max_cycles_is_terminated() -> None:
    """Every prey caught in the max_cycles step: each agent is terminated and
    truncated; the episode terminated (nothing to bootstrap), as the TorchRL
    face's root flags say.  `truncateds["__all__"]` won before."""
    cfg = dict(width=3, height=3, view=1, num_predators=4, num_prey=1,
               obstacle_density=0.0, max_cycles=1)
    env = rllib.SeerMultiAgentEnv({"env": "hunt_v0", **cfg})
    rng = np.random.default_rng(0)
    for seed in range(200):
        env.reset(seed=seed)
        acts = {a: (np.array([rng.integers(5), 0]) if a.startswith("predator")
                    else int(rng.integers(5))) for a in env.agents_alive}
        _, _, term, trunc, _ = env.step(acts)
        mine = [a for a in term if a != "__all__"]
        if all(term[a] for a in mine):
            break
    else:
        pytest.fail("no seed caught every prey in the one step")
    assert all(trunc[a] for a in mine)  # max_cycles: truncated too
    assert term["__all__"] is True and trunc["__all__"] is False
    env.close()


def test_rllib_checker_passes_when_its_step_ends_the_episode() -> None:
    """RLlib's checker steps once after reset and wants the step's keys in
    `agents`: with `agents` emptied at the episode's end, an episode that its
    one step ended (max_cycles=1; every prey of a small Hunt grid caught)
    failed it, and with it the build of RLlib's env runners."""
    env = rllib.SeerMultiAgentEnv({**SMALL_PCS, "max_cycles": 1})
    check_multiagent_environments(env)
    obs, _ = env.reset(seed=1)
    obs, _, term, trunc, _ = env.step({a: 0 for a in env.agents_alive})
    assert trunc["__all__"] and not term["__all__"] and env.agents_alive == []
    assert env.agents == list(obs) == env.possible_agents
    env.reset(seed=2)  # a new episode: the live agents again
    assert env.agents == env.agents_alive == env.possible_agents
    env.close()


@pytest.mark.parametrize("in_infos", [True, "only"])
def test_masks_in_infos_reach_rllib_as_arrays(in_infos: Any) -> None:
    """A ParallelEnv option, ``mask_in_infos``, through the adapter: the masks
    reach the infos as arrays (``float()`` of each raised TypeError on every
    reset, and the env was unusable); the numbers stay Python floats."""
    from seer_env.envs import hunt_v0

    def legal(space: Any, mask: np.ndarray) -> Any:
        """A random action the flat ``mask`` allows (each part's mask its own)."""
        mask = mask.astype(np.int8)
        if hasattr(space, "nvec"):
            return space.sample(tuple(np.split(mask, np.cumsum(space.nvec)[:-1])))
        return space.sample(mask)

    env = rllib.SeerMultiAgentEnv({"env": "hunt_v0", "width": 5, "height": 5,
                                   "mask_in_infos": in_infos})
    check_multiagent_environments(env)
    par = hunt_v0.parallel_env(width=5, height=5, mask_in_infos=in_infos)
    obs, infos = env.reset(seed=3)
    want_obs, want_infos = par.reset(seed=3)
    for _ in range(3):
        for a, d in infos.items():
            assert isinstance(d["action_mask"], np.ndarray), a
            assert np.array_equal(d["action_mask"], want_infos[a]["action_mask"]), a
            assert all(type(v) is float for k, v in d.items() if k != "action_mask"), d
            if in_infos is True:
                assert np.array_equal(obs[a]["action_mask"], d["action_mask"])
        acts = {a: legal(env.action_spaces[a], want_infos[a]["action_mask"])
                for a in env.agents_alive}
        obs, _, _, _, infos = env.step(acts)
        want_obs, _, _, _, want_infos = par.step(acts)
    env.close()
    par.close()


def test_all_flags_when_agents_finish_differently(monkeypatch: pytest.MonkeyPatch) -> None:
    env = rllib.SeerMultiAgentEnv({"env": str(DYING.folder), "num_agents": 4})
    theirs = ParallelPettingZooEnv(DYING.parallel_env(num_agents=4))
    # seed 0: agents 0 (terminated) and 1 (truncated) finish after step 1;
    # agents 2 (terminated) and 3 (truncated) after step 2
    env.reset(seed=0)
    theirs.reset(seed=0)
    acts = {f"agent_{i}": 1 for i in range(4)}
    _, rew, term, trunc, _ = env.step(acts)
    assert term == {"agent_0": True, "agent_1": False, "agent_2": False, "agent_3": False,
                    "__all__": False}
    assert trunc == {"agent_0": False, "agent_1": True, "agent_2": False, "agent_3": False,
                     "__all__": False}
    # agents 0 and 1 finished in this step: the results speak of them (RLlib's
    # checker requires their keys in `agents`); 2 and 3 are alive
    assert env.agents == ["agent_0", "agent_1", "agent_2", "agent_3"]
    assert env.agents_alive == ["agent_2", "agent_3"]
    obs, rew, term, trunc, infos = env.step({"agent_2": 0, "agent_3": 2})
    assert list(obs) == ["agent_2", "agent_3"] and set(infos) == set(obs)
    assert rew == {"agent_2": 1.0, "agent_3": 3.5}
    assert term == {"agent_2": True, "agent_3": False, "__all__": False}
    assert trunc == {"agent_3": True, "agent_2": False, "__all__": True}
    # the episode is over: none alive, `agents` the last step's
    assert env.agents == ["agent_2", "agent_3"] and env.agents_alive == []
    # RLlib's ParallelPettingZooEnv never ends this episode
    theirs.step(acts)
    *_, t_term, t_trunc, _ = theirs.step({"agent_2": 0, "agent_3": 2})
    assert not t_term["__all__"] and not t_trunc["__all__"]
    env.close()


def test_rllib_checker_passes_when_an_agent_dies_in_its_step() -> None:
    """RLlib's env checker takes one step after reset and requires every key of
    its results in env.agents: an agent that dies in that step (its final
    observation is returned) made it fail while `agents` held the live ones
    only (hunt_v0's prey, caught at random in the checker's step)."""
    env = rllib.SeerMultiAgentEnv({"env": str(DYING.folder), "num_agents": 4})
    env.reset(seed=0)
    orig = env.reset
    env.reset = lambda **kw: orig(seed=0)  # agents 0 and 1 finish in the first step
    check_multiagent_environments(env)
    env.close()


def test_snapshot_and_restore_keep_the_agents_just_finished() -> None:
    """The adapter's snapshot is the ParallelEnv's plus the agents that finished
    in the last step (``agents`` still names them): a restore gives them back."""
    import pickle

    from seer_env.errors import SnapshotError

    env = rllib.SeerMultiAgentEnv({"env": str(DYING.folder), "num_agents": 6, "threads": 1})
    env.reset(seed=3)

    def play() -> list[Any]:
        out = []
        for k in range(3):
            if not env.agents_alive:
                break
            out.append((env.step({a: k % 3 for a in env.agents_alive}), list(env.agents)))
        return out

    env.step({a: 0 for a in env.agents_alive})
    env.step({a: 0 for a in env.agents_alive})
    agents = list(env.agents)
    assert set(agents) != set(env.agents_alive)  # an agent finished in the last step
    snap = env.snapshot()
    first = play()
    obs, infos = env.restore(pickle.loads(pickle.dumps(snap)))
    assert list(env.agents) == agents and sorted(obs) == sorted(env.agents_alive)
    again = play()
    assert len(again) == len(first) > 0
    for (x, ax), (y, ay) in zip(first, again, strict=True):
        assert ax == ay
        for d, e in zip(x, y, strict=True):
            assert d.keys() == e.keys()
            assert all(np.array_equal(d[k], e[k]) for k in d)
    with pytest.raises(SnapshotError, match="adapter's snapshot"):
        env.restore(env.par_env.snapshot())


def test_env_config_needs_env_name() -> None:
    with pytest.raises(ValueError, match="env_config needs 'env'"):
        rllib.SeerMultiAgentEnv({"width": 3})


@pytest.fixture(scope="module")
def ray_session(ray_turn: None) -> Any:
    ray.init(address="local", num_cpus=3, include_dashboard=False,
             object_store_memory=150 * 1024**2,
             log_to_driver=False)
    yield
    ray.shutdown()


def _ppo_two_iterations(env_config: dict[str, Any]) -> list[dict[str, Any]]:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    config = (
        PPOConfig()
        .environment(rllib.SeerMultiAgentEnv, env_config=env_config)
        .env_runners(num_env_runners=2, rollout_fragment_length=50)
        .multi_agent(**rllib.shared_policy("shared"))
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            "shared": RLModuleSpec(model_config={"fcnet_hiddens": [16, 16]})}))
        .training(train_batch_size_per_learner=400, minibatch_size=200, num_epochs=1)
    )
    assert config.enable_rl_module_and_learner and config.enable_env_runner_and_connector_v2
    assert not config.disable_env_checking  # RLlib runs its env checker in each runner
    algo = config.build_algo()
    try:
        runners = algo.env_runner_group
        assert runners.num_remote_env_runners() == 2
        results = []
        for _ in range(2):
            t0 = time.perf_counter()
            res = algo.train()
            res["_wall_s"] = time.perf_counter() - t0
            results.append(res)
        # the remote runners (other processes) hold our env
        kinds = runners.foreach_env_runner(
            lambda r: type(r.env.unwrapped.envs[0].unwrapped).__name__
            if hasattr(r.env.unwrapped, "envs") else type(r.env.unwrapped).__name__,
            local_env_runner=False)
        assert kinds == ["SeerMultiAgentEnv"] * 2
        # each runner got one CPU from Ray: its process's budget is one thread
        # (on this 2-core machine it is 2 otherwise), and the driver's is untouched
        from seer_env.budget import thread_budget

        budgets = runners.foreach_env_runner(lambda r: thread_budget().describe(),
                                             local_env_runner=False)
        assert budgets == ["1 thread: capped by Ray: 1 CPU(s) assigned to this env runner "
                           "(num_cpus_per_env_runner)"] * 2
        assert thread_budget().cap is None
        return results
    finally:
        algo.stop()


@pytest.mark.parametrize("env_config", [
    SMALL_PCS,
    pytest.param({"env": "aircraft_v0", "threads": 1}, id="aircraft"),
    {"env": "phold_v0", "num_entities": 8, "max_cycles": 25, "threads": 1},
])
def test_ppo_two_iterations_on_remote_env_runners(ray_session: Any,
                                                  env_config: dict[str, Any]) -> None:
    from seer_env.registry import env_module

    mod = env_module(env_config["env"])
    n_agents = len(mod.parallel_env(**{k: v for k, v in env_config.items()
                                       if k != "env"}).possible_agents)
    results = _ppo_two_iterations(env_config)
    for i, res in enumerate(results):
        assert res["training_iteration"] == i + 1
        er = res["env_runners"]
        assert er["num_env_steps_sampled"] >= 400
        module_steps = er["num_module_steps_sampled"]["shared"]
        env_steps = er["num_env_steps_sampled"]
        if env_config["env"] == "aircraft_v0":
            # UAVs die mid-episode: every live UAV stepped, at least one per env step
            assert env_steps <= module_steps <= n_agents * env_steps
        else:
            # every agent stepped each env step: one shared policy saw them all
            assert module_steps == n_agents * env_steps
        assert np.isfinite(er["episode_return_mean"])
        assert "shared" in res["learners"]
        print(f"{env_config['env']}: iteration {i + 1} took {res['_wall_s']:.1f} s")


def _legal(space: Any, mask: np.ndarray, rng: np.random.Generator) -> Any:
    """A uniformly random action the mask allows (a multi-discrete one component by component)."""
    if hasattr(space, "nvec"):
        out, off = [], 0
        for k in space.nvec:
            out.append(rng.choice(np.flatnonzero(mask[off:off + k])))
            off += int(k)
        return np.array(out, dtype=np.int64)
    return int(rng.choice(np.flatnonzero(mask)))


def test_hunt_episodes_end_for_rllib_with_both_groups_and_their_returns() -> None:
    """Every Hunt episode ends for RLlib's own episode bookkeeping (its
    MultiAgentEpisode is done: ``__all__``) within max_cycles steps, prey dying
    one by one and the predators with the last of them, and the return RLlib
    computes is the rewards' sum, finite: an iteration in which an episode
    ends has a finite episode_return_mean."""
    from ray.rllib.env.multi_agent_episode import MultiAgentEpisode

    cfg = {"env": "hunt_v0", "observation_key": "observations", "threads": 1,
           "max_cycles": 60}
    env = rllib.SeerMultiAgentEnv(cfg)
    mapping = rllib.group_policies(cfg)["policy_mapping_fn"]
    rng = np.random.default_rng(0)
    ends = {"caught": 0, "truncated": 0}
    for seed in range(30):
        ep = MultiAgentEpisode(observation_space=env.observation_spaces,
                               action_space=env.action_spaces,
                               agent_to_module_mapping_fn=mapping)
        obs, infos = env.reset(seed=seed)
        ep.add_env_reset(observations=obs, infos=infos)
        total, steps, finished = 0.0, 0, []
        while not ep.is_done:
            assert steps < 60, "the episode outlasted max_cycles"
            acts = {a: _legal(env.action_spaces[a], obs[a]["action_mask"], rng)
                    for a in env.agents_alive}
            obs, rew, term, trunc, infos = env.step(acts)
            ep.add_env_step(observations=obs, actions=acts, rewards=rew, infos=infos,
                            terminateds=term, truncateds=trunc)
            assert all(np.isfinite(r) for r in rew.values())
            total += sum(rew.values())
            finished += [a for a in obs if term[a] or trunc[a]]
            steps += 1
        assert term["__all__"] or trunc["__all__"]
        assert env.agents_alive == [] and sorted(finished) == sorted(env.possible_agents)
        assert set(obs) == set(env.agents)  # the last step's agents
        ends["truncated" if trunc["__all__"] else "caught"] += 1
        assert ep.get_return() == pytest.approx(total, abs=1e-9)
        modules = {sa.module_id for sa in ep.agent_episodes.values()}
        assert modules == {"predator", "prey"}
    assert ends["caught"] > 0 and ends["truncated"] > 0  # both ways of ending were seen
    env.close()


def test_max_cycles_zero_warns_that_episodes_are_never_truncated() -> None:
    """With max_cycles=0 an episode ends only when every agent terminates: RLlib's
    episode_return_mean is NaN in every iteration in which none ends (no error):
    PPO on Hunt 16 x 16 with catch_need=2 and max_cycles=0 ended no episode in
    five iterations of 400 steps."""
    import warnings

    with pytest.warns(rllib.UntruncatedEpisodesWarning,
                      match=r"^hunt_v0: max_cycles=0, so the runtime truncates no episode.*"
                            r"episode_return_mean .* NaN"):
        env = rllib.SeerMultiAgentEnv({"env": "hunt_v0", "max_cycles": 0, "threads": 1})
    env.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the model's own max_cycles (100): no warning
        rllib.SeerMultiAgentEnv({"env": "hunt_v0", "threads": 1}).close()
