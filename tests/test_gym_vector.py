"""The Gymnasium ``VectorEnv`` over agents (``agent_vector_env``), its wrappers, SuperSuit."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import (
    DictInfoToList,
    NormalizeObservation,
    RecordEpisodeStatistics,
    TransformReward,
)

from oracles.pcs_numpy import INFO_NAMES
from seer_env.envs import pcs_v0, phold_v0
from seer_env.errors import ConfigError, InvalidActionError
from seer_env.faces.gym_vector import AgentVectorEnv
from tests.models import ends_terminated, life
from tests.models import load as load_test_model

PCS = dict(width=3, height=2, max_cycles=6, portables_per_cell=8, threads=1)

DYING = load_test_model("dying")


def test_spaces_metadata_and_layout() -> None:
    envs = pcs_v0.agent_vector_env(2, **PCS)
    assert isinstance(envs, gymnasium.vector.VectorEnv)
    assert envs.num_envs == 12 and envs.num_instances == 2 and envs.num_agents == 6
    par = pcs_v0.parallel_env(**PCS)
    assert envs.single_observation_space == par.observation_space("cell_0")
    assert envs.single_action_space == par.action_space("cell_0")
    assert envs.observation_space == gymnasium.vector.utils.batch_space(
        envs.single_observation_space, 12)
    assert envs.action_space == gymnasium.spaces.MultiDiscrete([5] * 12)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert envs.agent_names == par.possible_agents * 2
    obs, infos = envs.reset(seed=1)
    assert obs in envs.observation_space
    assert set(infos) == {"alive", "_alive", "active", "_active"} | {
        k for n in INFO_NAMES for k in (n, f"_{n}")}
    assert all(v.shape == (12,) for v in infos.values())
    with pytest.raises(InvalidActionError, match="shape"):
        envs.step(np.zeros(11, np.int64))
    with pytest.raises(ConfigError, match="copy=False"):
        AgentVectorEnv(pcs_v0.vector_env(1, **PCS))
    envs.close()
    assert envs.closed
    par.close()


@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_equals_batched_api_reshaped(mode: str) -> None:
    envs = pcs_v0.agent_vector_env(2, autoreset_mode=mode, **PCS)
    venv = pcs_v0.vector_env(2, autoreset_mode=mode, **PCS)
    obs, infos = envs.reset(seed=9)
    vobs, vinfos = venv.reset(seed=9)
    assert np.array_equal(obs, vobs.reshape(12, -1))
    rng = np.random.default_rng(2)
    for k in range(15):
        acts = rng.integers(0, 5, size=12)
        if mode == "disabled" and not venv.alive.any(axis=1).all():
            mask = ~venv.alive.any(axis=1)
            obs, infos = envs.reset(options={"reset_mask": np.repeat(mask, 6)})
            vobs, _ = venv.reset(options={"reset_mask": mask})
            assert np.array_equal(obs, vobs.reshape(12, -1))
        got = envs.step(acts)
        want = venv.step(acts.reshape(2, 6))
        for g, w in zip(got[:4], want[:4], strict=True):
            assert g.dtype == w.dtype and np.array_equal(g, w.reshape(g.shape)), k
        for name in ("alive", "active", *INFO_NAMES):
            assert np.array_equal(got[4][name], want[4][name].reshape(12)), (k, name)
        if "final_obs" in want[4]:
            fin = np.repeat(want[4]["_final_obs"], 6)
            assert np.array_equal(got[4]["_final_obs"], fin)
            assert np.array_equal(got[4]["final_obs"], want[4]["final_obs"].reshape(12, -1))
            assert np.array_equal(got[4]["final_info"]["events"],
                                  want[4]["final_info"]["events"].reshape(12))
    envs.close()
    venv.close()


def test_masked_reset_must_select_whole_instances() -> None:
    envs = phold_v0.agent_vector_env(2, num_entities=3, max_cycles=3, threads=1)
    envs.reset(seed=0)
    with pytest.raises(ConfigError, match="whole instances"):
        envs.reset(options={"reset_mask": np.array([True, False, False, False, False, False])})
    with pytest.raises(ConfigError, match="reset_mask"):
        envs.reset(options={"reset_mask": np.ones(5, bool)})
    obs, _ = envs.reset(options={"reset_mask": np.array([False] * 3 + [True] * 3)})
    assert obs.shape == (6, 4)
    envs.close()


def test_record_episode_statistics_exact_on_pcs() -> None:
    envs = RecordEpisodeStatistics(pcs_v0.agent_vector_env(2, **PCS))
    envs.reset(seed=4)
    rng = np.random.default_rng(0)
    returns = np.zeros(12)
    episodes = 0
    for _ in range(20):
        _, rew, term, trunc, infos = envs.step(rng.integers(0, 5, size=12))
        returns += rew
        if "episode" in infos:
            done = term | trunc
            assert np.array_equal(infos["_episode"], done)
            assert np.allclose(infos["episode"]["r"][done], returns[done], rtol=0, atol=1e-5)
            assert (infos["episode"]["l"][done] == PCS["max_cycles"]).all()
            returns[done] = 0.0
            episodes += done.sum()
    # 20 steps: episodes of 6 steps, each after a reset step -> ends at steps 6, 13, 20
    assert episodes == 3 * 12
    assert len(envs.return_queue) == 36
    envs.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_dead_agents_idle_until_their_instance_restarts(
    mode: AutoresetMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    A = 4
    envs = DYING.agent_vector_env(2, num_agents=A, autoreset_mode=mode)
    # Gymnasium's RecordEpisodeStatistics (1.2) counts episodes the NEXT_STEP way
    # only, whatever metadata["autoreset_mode"] says: wrap it in that mode
    stats = mode is AutoresetMode.NEXT_STEP
    if stats:
        envs = RecordEpisodeStatistics(envs)
    obs, infos = envs.reset(seed=[0, 1])
    seeds = [0, 1]
    k = np.zeros(2, int)  # steps since each instance's start
    acts = np.full(2 * A, 2)
    ret = np.zeros(2 * A)
    idle = np.zeros(2 * A, int)
    checked = 0
    pending = np.zeros(2, bool)  # NEXT_STEP: instance resets on this call
    for _ in range(14):
        obs, rew, term, trunc, infos = envs.step(acts)
        for i in range(2):
            if pending[i]:
                k[i] = 0
                pending[i] = False
                assert infos["active"][i * A:(i + 1) * A].all()
                continue
            k[i] += 1
            inst_done = k[i] == max(life(seeds[i], a) for a in range(A))
            restarted = inst_done and mode is AutoresetMode.SAME_STEP
            for a in range(A):
                j = i * A + a
                lives = life(seeds[i], a)
                finished_now = k[i] == lives
                assert term[j] == (finished_now and ends_terminated(seeds[i], a))
                assert trunc[j] == (finished_now and not ends_terminated(seeds[i], a))
                if k[i] <= lives:
                    assert rew[j] == 2 + 0.5 * a
                    ret[j] += rew[j]
                else:  # idle; with SAME_STEP the instance's last step shows the reset obs
                    assert rew[j] == 0 and infos["active"][j] == restarted
                    want = [a, 0, (seeds[i] + 2) % 7] if restarted else [0, 0, 0]
                    assert obs[j].tolist() == want
                    idle[j] += 1
                if finished_now:
                    # exact return; the length counts the idle steps that preceded
                    if stats:
                        assert infos["_episode"][j]
                        assert infos["episode"]["r"][j] == pytest.approx(ret[j])
                        assert infos["episode"]["l"][j] == lives + idle[j]
                    ret[j] = 0.0
                    idle[j] = 0
                    checked += 1
            if inst_done:
                seeds[i] += 2
                if mode is AutoresetMode.NEXT_STEP:
                    pending[i] = True
                else:
                    k[i] = 0
                    rows = slice(i * A, (i + 1) * A)
                    assert infos["_final_obs"][rows].sum() >= 1
                    assert (obs[rows, 1] == 0).all() and (obs[rows, 2] == seeds[i] % 7).all()
            if mode is AutoresetMode.SAME_STEP:
                for a in range(A):
                    j = i * A + a
                    if term[j] or trunc[j]:
                        assert infos["_final_obs"][j] and infos["final_info"]["_active"][j]
                        assert infos["final_obs"][j].tolist() == [a, life(
                            seeds[i] - 2 * inst_done, a), (seeds[i] - 2 * inst_done) % 7]
                        if not inst_done:
                            assert not obs[j].any() and not infos["active"][j]
    assert checked >= 12
    envs.close()


def test_dict_info_to_list_uses_the_masks(monkeypatch: pytest.MonkeyPatch) -> None:
    envs = DictInfoToList(DYING.agent_vector_env(1, num_agents=4))
    _, infos = envs.reset(seed=0)
    assert isinstance(infos, list) and len(infos) == 4
    assert infos[3] == {"alive": True, "active": True, "steps": 0.0, "action_sum": 0.0}
    envs.step(np.array([1, 1, 2, 0]))
    _, _, _, _, infos = envs.step(np.array([1, 1, 2, 0]))  # agents 0, 1 died last step
    assert infos[0] == {"alive": False, "active": False}
    assert infos[2] == {"alive": False, "active": True, "steps": 2.0, "action_sum": 4.0}
    envs.close()


def test_observation_and_reward_wrappers() -> None:
    class Raw(gymnasium.vector.VectorWrapper):
        """Records the raw observations that reach the wrapper above."""

        seen: list[np.ndarray]
        rews: list[np.ndarray]

        def reset(self, **kw: Any) -> Any:
            obs, infos = self.env.reset(**kw)
            self.seen.append(obs.copy())
            return obs, infos

        def step(self, actions: Any) -> Any:
            out = self.env.step(actions)
            self.seen.append(out[0].copy())
            self.rews.append(out[1].copy())
            return out

    raw = Raw(pcs_v0.agent_vector_env(2, **{**PCS, "next_call_mean": 15.0}))
    raw.seen, raw.rews = [], []
    envs = TransformReward(NormalizeObservation(raw), lambda r: 3.0 * r)
    obs, _ = envs.reset(seed=3)
    rng = np.random.default_rng(1)
    for _ in range(9):
        obs, rew, *_ = envs.step(rng.integers(0, 5, size=12))
        assert np.array_equal(rew, 3.0 * raw.rews[-1])
    assert np.concatenate(raw.rews).min() < 0  # some calls were blocked
    rms = envs.env.obs_rms
    allraw = np.concatenate(raw.seen)
    assert rms.count == pytest.approx(len(allraw) + 1e-4)
    assert np.allclose(rms.mean, allraw.mean(axis=0), atol=1e-6)
    want = (raw.seen[-1] - rms.mean) / np.sqrt(rms.var + envs.env.epsilon)
    assert np.allclose(obs, want, atol=1e-5)
    envs.close()


def test_supersuit_markov_vector_env_without_agent_death() -> None:
    ss = pytest.importorskip("supersuit")
    par = pcs_v0.parallel_env(**PCS)
    ref = pcs_v0.parallel_env(**PCS)
    v = ss.pettingzoo_env_to_vec_env_v1(par)
    assert v.num_envs == 6
    obs, infos = v.reset(seed=5)
    robs, rinfos = ref.reset(seed=5)
    names = ref.possible_agents
    assert np.array_equal(obs, np.stack([robs[a] for a in names]))
    assert infos == [rinfos[a] for a in names]
    rng = np.random.default_rng(3)
    for k in range(PCS["max_cycles"]):
        acts = rng.integers(0, 5, size=6)
        obs, rew, term, trunc, infos = v.step(acts)
        robs, rrew, rterm, rtrunc, _ = ref.step(dict(zip(names, acts.tolist(), strict=True)))
        assert np.array_equal(rew, [rrew[a] for a in names]), k
        assert np.array_equal(term, [rterm[a] for a in names])
        assert np.array_equal(trunc, [rtrunc[a] for a in names])
        if k < PCS["max_cycles"] - 1:
            assert np.array_equal(obs, np.stack([robs[a] for a in names]))
    # the episode ended: SuperSuit reset the env itself and kept the final observations
    assert trunc.all() and not ref.agents and len(par.agents) == 6
    for i, a in enumerate(names):
        assert np.array_equal(infos[i]["terminal_observation"], robs[a])
    obs, *_ = v.step(np.zeros(6, np.int64))
    assert obs.shape == (6, *v.observation_space.shape) and len(par.agents) == 6
    v.close()
    ref.close()



def test_supersuit_concat_vec_envs_copies_by_configuration() -> None:
    ss = pytest.importorskip("supersuit")
    par = pcs_v0.parallel_env(**PCS)
    ref = pcs_v0.parallel_env(**PCS)
    # concat_vec_envs pickles the env to make its copies: ours pickle as
    # (name, config), so every copy is the same env, seeded by SuperSuit
    c = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(par), 2, num_cpus=0,
                              base_class="gymnasium")
    assert c.num_envs == 12
    obs, _ = c.reset(seed=5)
    names = ref.possible_agents
    robs, _ = ref.reset(seed=5)
    assert np.array_equal(obs[:6], np.stack([robs[a] for a in names]))
    acts = np.ones(12, np.int64)
    obs, rew, term, trunc, _ = c.step(acts)
    _, rrew, _, _, _ = ref.step({a: 1 for a in names})
    assert np.array_equal(rew[:6], [rrew[a] for a in names])
    assert obs.shape == (12, *par.observation_space(names[0]).shape)
    c.close()
    ref.close()


def test_supersuit_black_death_on_aircraft_runs_to_the_end() -> None:
    ss = pytest.importorskip("supersuit")
    from seer_env.envs import aircraft_v0
    from seer_env.errors import StateError

    env = ss.black_death_v3(aircraft_v0.parallel_env(num_uavs=8, max_cycles=200))
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    steps = 0
    while env.agents and steps < 400:
        obs, *_ = env.step({a: rng.uniform(-1, 1, 3).astype(np.float32) for a in env.agents})
        assert set(obs) >= set(env.agents)  # dead agents get zero observations
        steps += 1
    assert not env.agents and steps < 400
    # the underlying env: an empty step after the end is a no-op, a real one is refused
    base = env.unwrapped
    assert base.step({}) == ({}, {}, {}, {}, {})
    with pytest.raises(StateError, match="the episode is over"):
        base.step({"uav_0": np.zeros(3, np.float32)})


def test_a_grouped_face_stepped_before_reset_or_given_no_mapping_says_so() -> None:
    """A group's VectorEnv stepped before reset() is a StateError in its own
    words (step() and step_async() failed with a bare AssertionError, asking
    for the other groups' actions first; a one-group face's step_async
    named send()); ``others`` returning something other than a mapping is an
    InvalidActionError naming the groups (was: "'int' object is not
    iterable"), and the face steps on once it returns one."""
    from seer_env.envs import hunt_v0
    from seer_env.errors import StateError

    for envs, act in ((hunt_v0.agent_vector_env(2, group="predator"), (2,)),
                      (pcs_v0.agent_vector_env(2, width=2, height=2), ())):
        for call in ("step", "step_async"):
            with pytest.raises(StateError, match=rf": call reset\(\) before {call}\(\)$"):
                getattr(envs, call)(np.zeros((envs.num_envs, *act), np.int64))
        envs.close()
    got: list[Any] = [5]
    envs = hunt_v0.agent_vector_env(2, group="predator", others=lambda obs, infos: got[0])
    envs.reset(seed=0)
    acts = np.zeros((envs.num_envs, 2), np.int64)
    for bad in (5, [np.zeros((2, 2), np.int64)]):
        got[0] = bad
        with pytest.raises(InvalidActionError, match=r"others\(obs, infos\) must return a "
                                                     r"mapping of the other groups' names "
                                                     r"\('prey'\) to their action arrays, got "):
            envs.step(acts)
    n_prey = envs.venv.single_action_spaces["prey"].shape
    got[0] = {"prey": np.zeros((2, *((envs.venv.groups[1].count,) + n_prey)), np.int64)}
    envs.step(acts)
    envs.close()


def test_a_refused_reset_leaves_the_other_groups_generator() -> None:
    """A group's VectorEnv reseeded the other groups' generator before the
    batched env checked the seed: a refused reset (ConfigError) changed the
    run after it, and -1 or 1.5 raised NumPy's errors, not ConfigError."""
    from seer_env.envs import hunt_v0

    def run(bad: Any) -> list[np.ndarray]:
        envs = hunt_v0.agent_vector_env(2, group="predator", threads=1)
        envs.reset(seed=0)
        if bad is not None:
            with pytest.raises(ConfigError, match="seed"):
                envs.reset(seed=bad)
        envs.reset()
        out = []
        for _ in range(4):  # the prey act by the generator: random legal actions
            obs, *_ = envs.step(np.zeros((envs.num_envs, 2), np.int64))
            out.append(obs)
        envs.close()
        return out

    ref = run(None)
    for bad in (2**64, [0, 2**64], -1, 1.5):
        assert all(np.array_equal(x, y) for x, y in zip(ref, run(bad), strict=True)), bad
