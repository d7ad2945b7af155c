"""Agent groups, action masks and multi-discrete actions on every face: the
PettingZoo ParallelEnv and AEC env (each agent its group's spaces, masks in
PettingZoo's observation dicts), the batched API (arrays per group), the
per-group Gymnasium VectorEnv and the RLlib adapter; PettingZoo's own API
tests.  The model is the ``teams`` test model (tests/models/teams/teams.c)."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test

from seer_env.env import MultiDiscreteMasked
from seer_env.errors import ConfigError, InvalidActionError
from tests.models import load as load_test_model
from tests.test_groups_native import expected_mask

TEAMS = load_test_model("teams")
NAMES = ["hunter_0", "hunter_1", "runner_0", "runner_1", "runner_2", "scout_0"]


def legal(env: Any, obs: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """One action per agent that its observation's mask allows."""
    out = {}
    for a, o in obs.items():
        space = env.action_space(a)
        space.seed(int(rng.integers(1 << 31)))
        out[a] = space.sample(mask=o["action_mask"]) if isinstance(o, dict) else space.sample()
    return out


def test_each_agent_gets_its_groups_spaces() -> None:
    env = TEAMS.parallel_env(threads=1)
    assert env.possible_agents == NAMES
    assert [env.group_of(a) for a in NAMES] == ["hunter"] * 2 + ["runner"] * 3 + ["scout"]
    h, r, s = (env.observation_space(a) for a in ("hunter_0", "runner_0", "scout_0"))
    assert isinstance(h, gymnasium.spaces.Dict) and set(h.spaces) == {"observation",
                                                                      "action_mask"}
    assert h["observation"].shape == (3,) and h["action_mask"] == gymnasium.spaces.Box(
        0, 1, (5,), np.int8)
    assert r["observation"].shape == (2,) and r["action_mask"].shape == (5,)
    assert s == gymnasium.spaces.Box(0.0, 20.0, (4,), np.float32)  # no mask: a plain Box
    assert env.action_space("hunter_1") == gymnasium.spaces.Discrete(5)
    md = env.action_space("runner_2")
    assert isinstance(md, MultiDiscreteMasked) and md.nvec.tolist() == [3, 2]
    assert env.action_space("scout_0") == gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
    assert env.observation_spaces["runner_1"] is r and env.action_spaces["scout_0"] is \
        env.action_space("scout_0")
    # the concatenated mask samples only allowed choices
    mask = np.array([0, 1, 0, 1, 0], np.int8)
    md.seed(0)
    assert {tuple(md.sample(mask=mask)) for _ in range(20)} == {(1, 0)}
    env.close()


def test_observations_carry_each_groups_elements_and_its_mask() -> None:
    env = TEAMS.parallel_env(threads=1, strict=1)
    obs, infos = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for k in range(4):
        assert list(obs) == NAMES
        for i, a in enumerate(NAMES[:5]):
            assert obs[a]["action_mask"].dtype == np.int8
            assert obs[a]["action_mask"].tolist() == expected_mask(i, k, strict=True).astype(
                int).tolist()[: 5]
            assert obs[a] in env.observation_space(a)
        assert obs["hunter_1"]["observation"].tolist() == [1.0, k, 3 % 5]
        assert obs["runner_0"]["observation"].tolist() == [2.0, k]
        assert obs["scout_0"].tolist() == [5.0, k, 3 % 3, 1.0]
        assert infos["hunter_0"] == {"steps": float(k)} and set(infos["runner_1"]) == {
            "steps", "c0"} and infos["scout_0"] == {}
        obs, rew, term, trunc, infos = env.step(legal(env, obs, rng))
    env.close()


@pytest.mark.parametrize("cfg", [{}, {"num_scouts": 0, "strict": 1}, {"solo": 1},
                                 {"life": 2, "executor": "parallel", "threads": 2}])
def test_pettingzoo_api_tests_pass(cfg: dict[str, Any]) -> None:
    cfg = {"threads": 1, **cfg}
    parallel_api_test(TEAMS.parallel_env(**cfg), num_cycles=40)
    api_test(TEAMS.env(**cfg), num_cycles=40)


def test_a_forbidden_action_is_refused_and_nothing_changes() -> None:
    env, twin = TEAMS.parallel_env(threads=1), TEAMS.parallel_env(threads=1)
    obs, _ = env.reset(seed=5)
    twin.reset(seed=5)
    acts = legal(env, obs, np.random.default_rng(1))
    bad = dict(acts, hunter_1=1)  # (0 + 1) % 5: forbidden at step 0
    with pytest.raises(InvalidActionError, match=r"'hunter_1'.*step 0: 1 is forbidden"):
        env.step(bad)
    bad = dict(acts, runner_0=np.array([2, 0]))  # component 0: (0 + 2) % 3
    with pytest.raises(InvalidActionError, match=r"'runner_0'.*component 0 is 2"):
        env.step(bad)
    for wrong, match in [(np.array([1]), r"shape \(2,\)"), (np.array([0.5, 1.0]), "integers"),
                         (3, r"shape \(2,\)")]:
        with pytest.raises(InvalidActionError, match=match):
            env.step(dict(acts, runner_1=wrong))
    with pytest.raises(InvalidActionError, match=r"scout_0.*shape \(2,\)"):
        env.step(dict(acts, scout_0=np.zeros(3, np.float32)))
    a = env.step(acts)
    b = twin.step(acts)
    for x, y in zip(a, b, strict=True):
        assert repr(x) == repr(y)


def test_the_aec_env_checks_masks_as_each_action_comes() -> None:
    aec = TEAMS.env(threads=1)
    aec.reset(seed=2)
    agent = aec.agent_selection
    assert agent == "hunter_0"
    obs = aec.observe(agent)
    assert obs["action_mask"].tolist() == [0, 1, 1, 1, 1]
    with pytest.raises(InvalidActionError, match=r"'hunter_0' is 0, which its action mask "
                                                 r"forbids at step 0"):
        aec.step(0)
    aec.step(1)
    assert aec.agent_selection == "hunter_1"


def test_enforce_masks_false_lets_forbidden_actions_reach_the_model() -> None:
    env = TEAMS.parallel_env(threads=1, enforce_masks=False)
    obs, _ = env.reset(seed=5)
    acts = legal(env, obs, np.random.default_rng(1))
    acts["hunter_1"] = 1
    _, rew, *_ = env.step(acts)
    assert rew["hunter_1"] == pytest.approx(1.0 + 1 / 8)


@pytest.mark.parametrize("value", ["false", "no", 0.0, None, [], 2])
def test_enforce_masks_takes_a_bool_only(value: object) -> None:
    """bool("false") is True and bool(None) is False: read by its truth, a
    string asked to turn the masks off kept them on and None turned them off.
    Anything but a bool (or 0/1, the models' bool rule) is refused."""
    with pytest.raises(ConfigError, match=r"enforce_masks=.* must be a bool"):
        TEAMS.parallel_env(threads=1, enforce_masks=value)


@pytest.mark.parametrize("value", [np.False_, 0])
def test_enforce_masks_false_spelled_as_numpy_or_int(value: object) -> None:
    env = TEAMS.parallel_env(threads=1, enforce_masks=value)
    assert env.runtime.enforce_masks is False
    obs, _ = env.reset(seed=5)
    acts = legal(env, obs, np.random.default_rng(1))
    acts["hunter_1"] = 1  # forbidden by its mask, let through
    env.step(acts)


def test_cli_reads_enforce_masks_false_as_false() -> None:
    from seer_env.cli import _parse_sets

    assert _parse_sets(["enforce_masks=false", "threads=1"]) == {
        "enforce_masks": False, "threads": 1}
    assert _parse_sets(["enforce_masks=on"], "hunt_v0") == {"enforce_masks": True}


def test_the_batched_api_returns_arrays_per_group() -> None:
    B = 3
    venv = TEAMS.vector_env(B, threads=1)
    obs, infos = venv.reset(seed=1)
    assert {k: v.shape for k, v in obs.items()} == {
        "hunter": (B, 2, 3), "runner": (B, 3, 2), "scout": (B, 1, 4)}
    assert {k: v.shape for k, v in infos["action_mask"].items()} == {
        "hunter": (B, 2, 5), "runner": (B, 3, 5)}
    assert infos["action_mask"]["hunter"].dtype == np.bool_
    assert set(infos["runner"]) == {"steps", "c0"} and infos["scout"] == {}
    assert venv.single_action_spaces["runner"].nvec.tolist() == [3, 2]
    assert venv.single_observation_spaces["hunter"].shape == (3,)
    par = TEAMS.parallel_env(threads=1)
    pobs, _ = par.reset(seed=1)
    assert obs["runner"][0, 1].tolist() == pobs["runner_1"]["observation"].tolist()
    assert infos["action_mask"]["runner"][0, 1].tolist() == pobs["runner_1"][
        "action_mask"].astype(bool).tolist()
    acts = {"hunter": np.ones((B, 2), np.int64), "runner": np.ones((B, 3, 2), np.int64),
            "scout": np.zeros((B, 1, 2), np.float32)}
    acts["hunter"][:, 1] = 2  # hunter_1 forbids 1 at step 0
    acts["runner"][:, 2, 0] = 0  # runner_2 (agent 4) forbids (0 + 4) % 3 = 1
    out = venv.step(acts)
    assert out[1]["scout"].shape == (B, 1) and out[2]["runner"].shape == (B, 3)
    for bad, match in [({"hunter": acts["hunter"]}, "one array per group"),
                       ({**acts, "runner": np.ones((B, 3), np.int64)}, r"shape \(3, 3, 2\)"),
                       ({**acts, "hunter": acts["hunter"] * 0.5}, "integers"),
                       (np.zeros((B, 6)), "dict group -> array")]:
        with pytest.raises(InvalidActionError, match=match):
            venv.step(bad)


def _same_as(got: Any, want: Any, rows: Any = slice(None)) -> None:
    """Two outputs, dicts keyed by group (nested as infos are), equal in ``rows``."""
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            _same_as(got[k], want[k], rows)
    elif isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same_as(g, w, rows)
    else:
        assert np.array_equal(np.asarray(got)[rows], np.asarray(want)[rows])


@pytest.mark.parametrize("threads", [1, 2])
def test_same_step_autoreset_with_groups_keeps_each_groups_final_rows(threads: int) -> None:
    """SAME_STEP on a model with groups: the instances that finish are reset
    in the call; the returned rows are the reset ones and the final step's
    observations and infos come by group in ``final_obs`` / ``final_info``,
    equal to a DISABLED twin's final step followed by a masked reset (which
    draws the same next seeds)."""
    from seer_env.faces.gym_vector import random_batched_actions

    B = 3
    same = TEAMS.vector_env(B, threads=threads, life=3, autoreset_mode="same_step")
    twin = TEAMS.vector_env(B, threads=1, life=3, autoreset_mode="disabled")
    _same_as(same.reset(seed=4), twin.reset(seed=4))
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(12):
        acts = random_batched_actions(twin, rng)
        obs, rew, term, trunc, infos = same.step(acts)
        t_obs, t_rew, t_term, t_trunc, t_infos = twin.step(acts)
        _same_as((rew, term, trunc), (t_rew, t_term, t_trunc))  # the final step's
        done = ~twin.runtime.alive.any(axis=1)
        if not done.any():
            assert not any(k in infos for k in ("final_obs", "final_info"))
            _same_as((obs, infos), (t_obs, t_infos))
            continue
        finished += int(done.sum())
        assert infos["_final_obs"].tolist() == done.tolist() == infos["_final_info"].tolist()
        _same_as(infos["final_obs"], t_obs, done)
        assert set(infos["final_obs"]) == {"hunter", "runner", "scout"}
        assert all(not a[~done].any() for a in infos["final_obs"].values())
        want_final = {"alive": t_infos["alive"], "active": t_infos["active"],
                      **{g: t_infos[g] for g in ("hunter", "runner", "scout")}}
        _same_as(infos["final_info"], want_final, done)
        r_obs, r_infos = twin.reset(options={"reset_mask": done})
        _same_as(obs, r_obs)
        _same_as({k: v for k, v in infos.items() if not k.startswith(("final", "_final"))},
                 r_infos)
    assert finished >= B  # every instance finished at least once (life=3)
    same.close()
    twin.close()


def test_same_step_with_groups_through_send_recv_and_the_group_vectorenv() -> None:
    """send/recv gives what step gives under SAME_STEP with groups, and the
    per-group VectorEnv hands each sub-env's final observation as Gymnasium's
    SAME_STEP does (``final_obs`` rows of the sub-envs that finished)."""
    from seer_env.faces.gym_vector import random_batched_actions

    B = 4
    sync = TEAMS.vector_env(B, threads=1, life=3, autoreset_mode="same_step")
    asy = TEAMS.vector_env(B, threads=1, life=3, autoreset_mode="same_step", batch_size=B)
    sync.reset(seed=9)
    asy.reset(seed=9)
    rng = np.random.default_rng(1)
    for _ in range(8):
        acts = random_batched_actions(sync, rng)
        want = sync.step(acts)
        asy.send(acts)
        got = asy.recv()
        assert got[4].pop("env_id").tolist() == list(range(B))
        _same_as(got, want)
    sync.close()
    asy.close()

    envs = TEAMS.agent_vector_env(2, group="runner", threads=1, life=3,
                                  autoreset_mode="same_step")
    obs, infos = envs.reset(seed=2)
    ends = 0
    for _ in range(7):
        acts = np.stack([envs.single_action_space.sample(mask=infos["action_mask"][i])
                         for i in range(envs.num_envs)])
        obs, rew, term, trunc, infos = envs.step(acts)
        if "final_obs" in infos:
            fin = infos["_final_obs"]
            assert fin.tolist() == (term | trunc).tolist()
            assert infos["final_obs"].shape == (6, 2) and infos["final_info"]["_active"][
                fin].all()
            ends += int(fin.sum())
    assert ends >= 6  # every runner's episode ended at least once
    envs.close()


def test_one_masked_group_keeps_the_flat_arrays() -> None:
    venv = TEAMS.vector_env(2, threads=1, solo=1, autoreset_mode="same_step")
    obs, infos = venv.reset(seed=1)
    assert obs.shape == (2, 2, 3) and infos["action_mask"].shape == (2, 2, 5)
    assert infos["action_mask"][0].tolist() == [[False, True, True, True, True],
                                                [True, False, True, True, True]]
    obs, rew, term, trunc, infos = venv.step(np.array([[1, 0], [2, 2]]))
    assert rew.shape == (2, 2) and infos["action_mask"][1, 0].tolist() == expected_mask(
        0, 1).tolist()
    assert [a for a in venv.possible_agents] == ["hunter_0", "hunter_1"]


def test_one_vectorenv_per_group_the_others_act_randomly_within_their_masks() -> None:
    envs = TEAMS.agent_vector_env(4, group="runner", threads=1, life=3)
    assert envs.num_envs == 12 and envs.single_action_space.nvec.tolist() == [3, 2]
    assert envs.agent_names[:3] == ["runner_0", "runner_1", "runner_2"]
    obs, infos = envs.reset(seed=3)
    assert obs.shape == (12, 2) and infos["action_mask"].shape == (12, 5)
    assert infos["action_mask"].dtype == np.int8 and set(infos) >= {"steps", "c0"}
    for _ in range(7):  # through autoresets; the hunters' random actions are legal
        acts = np.stack([envs.single_action_space.sample(mask=infos["action_mask"][i])
                         for i in range(12)])
        obs, rew, term, trunc, infos = envs.step(acts)
    with pytest.raises(ConfigError, match=r"choose one with agent_vector_env\(num_envs, "
                                          r"group=\.\.\.\)"):
        TEAMS.agent_vector_env(2, threads=1)
    with pytest.raises(ConfigError, match=r"group='wolf' is not one of"):
        TEAMS.agent_vector_env(2, threads=1, group="wolf")
    seen = []

    def others(obs: dict[str, Any], infos: dict[str, Any]) -> dict[str, Any]:
        seen.append(sorted(obs))
        return {"hunter": np.ones((2, 2), np.int64) * 3,
                "scout": np.zeros((2, 1, 2), np.float32)}

    e2 = TEAMS.agent_vector_env(2, group="runner", threads=1, others=others, strict=0)
    obs, infos = e2.reset(seed=0)
    e2.step(np.stack([e2.single_action_space.sample(mask=infos["action_mask"][i])
                      for i in range(6)]))
    assert seen == [["hunter", "runner", "scout"]]


def test_verify_compares_every_group_and_the_masks() -> None:
    from seer_env.testing import verify

    for kw in ({"threads": 2, "num_envs": 3}, {"threads": 3, "executor": "optimistic"},
               {"threads": 2, "num_envs": 2, "solo": 1, "life": 3}):
        rep = verify("teams", steps=25, **kw)
        assert rep.identical, str(rep)


def test_the_checker_runs_a_grouped_masked_model_and_finds_a_mask_hook_out_of_its_row() -> None:
    from seer_env.check import check

    rep = check(TEAMS, quick=True, progress=False)
    assert rep.ok, str(rep)
    bad = check(TEAMS, {"bad": 2}, quick=True, progress=False)
    assert not bad.ok
    assert "action_mask for agent 0 of instance 0 wrote byte 0 of agent 1's mask row" in str(bad)
    assert "output-row" in bad.rules()
