"""``flatten_actions=True``: a multi-discrete group handed out as one
``Discrete(prod(nvec))`` on every face, its mask the joint mask, its outputs
those of the multi-part actions the joint ones stand for (Hunt's predators,
``MultiDiscrete([5, 2])`` with masks; the ``teams`` model's runners,
``MultiDiscrete([3, 2])``, beside a Box and a Discrete group)."""

from __future__ import annotations

import pickle
from typing import Any

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seer_env.envs import hunt_v0
from seer_env.errors import ConfigError, InvalidActionError
from seer_env.faces.flat_actions import Flat
from tests.models import load as load_test_model

TEAMS = load_test_model("teams")
#: a bounded grid with many obstacles: the masks forbid moves often
CFG: dict[str, Any] = dict(threads=1, torus=0, obstacle_density=0.3, max_cycles=30)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_joint_actions_and_masks_match_their_components(nvec: list[int], data: Any) -> None:
    f = Flat(tuple(nvec))
    assert f.n == int(np.prod(nvec))
    joint = np.arange(f.n)
    comps = f.components(joint)
    assert comps.shape == (f.n, len(nvec))
    assert len({tuple(c) for c in comps.tolist()}) == f.n  # a bijection
    assert comps[:, -1].tolist() == [j % nvec[-1] for j in range(f.n)]  # C order
    assert f.joint(comps).tolist() == joint.tolist()
    raw = np.array(data.draw(st.lists(st.booleans(), min_size=sum(nvec), max_size=sum(nvec))))
    jm = f.joint_mask(raw[None])[0]
    offs = np.cumsum([0, *nvec[:-1]])
    want = [all(raw[o + c] for o, c in zip(offs, cs, strict=True)) for cs in comps.tolist()]
    assert jm.tolist() == want


def _predator_parts(j: Any) -> np.ndarray:
    return np.stack(np.unravel_index(np.asarray(j), (5, 2)), axis=-1)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_parallel_env_steps_joint_actions_as_their_components(threads: int) -> None:
    plain = hunt_v0.parallel_env(**{**CFG, "threads": threads})
    flat = hunt_v0.parallel_env(flatten_actions=True, **{**CFG, "threads": threads})
    assert flat.action_space("predator_0") == gymnasium.spaces.Discrete(10)
    assert flat.observation_space("predator_0")["action_mask"].shape == (10,)
    assert flat.action_space("prey_1") == plain.action_space("prey_1")  # Discrete: as it was
    po, _ = plain.reset(seed=3)
    fo, _ = flat.reset(seed=3)
    forbidden = 0
    while plain.agents:
        acts_f = {a: flat.action_space(a).sample() for a in flat.agents}  # within the masks
        acts_p = {}
        for a, v in acts_f.items():
            if a.startswith("predator"):
                m, jm = po[a]["action_mask"], fo[a]["action_mask"]
                assert jm.dtype == np.int8
                assert jm.tolist() == np.outer(m[:5], m[5:]).reshape(-1).tolist()
                forbidden += int((jm == 0).sum())
                acts_p[a] = _predator_parts(v)
            else:
                acts_p[a] = v
        out_p, out_f = plain.step(acts_p), flat.step(acts_f)
        po, fo = out_p[0], out_f[0]
        assert out_p[1:4] == out_f[1:4]
        for a in po:
            x, y = po[a], fo[a]
            assert np.array_equal(x["observation"] if isinstance(x, dict) else x,
                                  y["observation"] if isinstance(y, dict) else y)
    assert forbidden > 0  # the masks forbade joint actions along the way
    plain.close()
    flat.close()


def test_a_bad_joint_action_is_refused_by_name_and_nothing_changes() -> None:
    env = hunt_v0.parallel_env(flatten_actions=True, **CFG)
    obs, _ = env.reset(seed=5)
    legal = {a: env.action_space(a).sample() for a in env.agents}
    for bad, match in [(10, r"'predator_0' is 10 outside \[0, 10\)"),
                       (-1, r"is -1 outside \[0, 10\)"),
                       (np.array([1, 0]), "scalar int"), (1.0, "integer")]:
        with pytest.raises(InvalidActionError, match=match):
            env.step({**legal, "predator_0": bad})
        with pytest.raises(InvalidActionError, match=match if "outside" not in match else
                           "outside"):
            env.check_action("predator_0", bad)
    jm = obs["predator_0"]["action_mask"]
    assert (jm == 0).any()  # the seed's start has a forbidden move
    bad = int(np.flatnonzero(jm == 0)[0])
    with pytest.raises(InvalidActionError, match="forbid"):
        env.check_action("predator_0", bad)
    # step() names the joint action given and the components it stands for
    comps = np.unravel_index(bad, (5, 2))
    with pytest.raises(InvalidActionError, match=(
            rf"action for 'predator_0' is {bad}, which its joint action mask forbids "
            rf"\(flatten_actions: {bad} stands for the components \[{comps[0]}, {comps[1]}\]")):
        env.step({**legal, "predator_0": bad})
    out = env.step(legal)  # nothing changed: the legal actions step
    assert set(out[1]) == {*legal}
    env.close()


def test_the_batched_env_and_send_recv_step_joint_actions() -> None:
    B = 3
    plain = hunt_v0.vector_env(B, **CFG)
    flat = hunt_v0.vector_env(B, flatten_actions=True, batch_size=B, **CFG)
    assert flat.single_action_spaces["predator"] == gymnasium.spaces.Discrete(10)
    _, ip = plain.reset(seed=1)
    _, jf = flat.reset(seed=1)
    rng = np.random.default_rng(0)
    for t in range(40):
        m, jm = ip["action_mask"]["predator"], jf["action_mask"]["predator"]
        assert jm.shape == (B, 3, 10) and jm.dtype == np.bool_
        assert np.array_equal(jm, (m[..., :5, None] & m[..., None, 5:]).reshape(B, 3, 10))
        joint = np.where(jm, rng.random(jm.shape), -1).argmax(-1)
        prey = np.where(jf["action_mask"]["prey"], rng.random((B, 2, 5)), -1).argmax(-1)
        op, rp, tp, trp, ip = plain.step({"predator": _predator_parts(joint), "prey": prey})
        if t % 2:
            flat.send({"predator": joint, "prey": prey})
            of, rf, tf, trf, jf = flat.recv()
        else:
            of, rf, tf, trf, jf = flat.step({"predator": joint, "prey": prey})
        for g in op:
            for x, y in ((op, of), (rp, rf), (tp, tf), (trp, trf)):
                assert np.array_equal(x[g], y[g])
    for bad, match in [(np.full((B, 3), 10), r"\[10, 10, 10, 10, 10\] outside \[0, 10\)"),
                       (np.zeros((B, 3, 2), np.int64), r"shape \(3, 3\)"),
                       (np.zeros((B, 3)), "integers")]:
        with pytest.raises(InvalidActionError, match=match):
            flat.step({"predator": bad, "prey": prey})
    m = jf["action_mask"]["predator"]
    alive = flat.runtime.alive[:, :3]
    forbidden = np.argwhere(~m & alive[..., None])
    assert len(forbidden)  # the bounded grid with obstacles forbids some moves
    b, i, j = (int(x) for x in forbidden[0])
    given = np.where(m, 1.0, -1.0).argmax(-1)  # legal everywhere ...
    given[b, i] = j                             # ... but one
    with pytest.raises(InvalidActionError, match=(
            rf"the action of predator_{i} of instance {b} is {j}, which its joint action mask "
            r"forbids")):
        flat.step({"predator": given, "prey": prey * 0})
    flat.step({"predator": joint * 0, "prey": prey * 0})  # staying is always allowed
    plain.close()
    flat.close()


def test_a_group_vectorenv_and_the_other_faces_take_the_option() -> None:
    envs = hunt_v0.agent_vector_env(2, group="predator", flatten_actions=True, **CFG)
    assert envs.single_action_space == gymnasium.spaces.Discrete(10)
    obs, infos = envs.reset(seed=0)
    assert infos["action_mask"].shape == (6, 10)
    rng = np.random.default_rng(1)
    for _ in range(35):  # through an autoreset (max_cycles=30)
        acts = np.where(infos["action_mask"] != 0, rng.random((6, 10)), -1).argmax(-1)
        obs, rew, term, trunc, infos = envs.step(acts)
    envs.close()
    # a model with a Box, a Discrete and a multi-discrete group: only the last changes
    par = TEAMS.parallel_env(threads=1, flatten_actions=True)
    assert par.action_space("runner_0") == gymnasium.spaces.Discrete(6)
    assert par.action_space("hunter_0") == gymnasium.spaces.Discrete(5)
    assert isinstance(par.action_space("scout_0"), gymnasium.spaces.Box)
    copy = pickle.loads(pickle.dumps(par))  # the option travels with the env
    assert copy.action_space("runner_0") == gymnasium.spaces.Discrete(6)
    copy.close()
    par.close()
    venv = TEAMS.vector_env(2, threads=1, flatten_actions=True)
    assert venv.single_action_spaces["runner"] == gymnasium.spaces.Discrete(6)
    venv.close()


def test_the_option_is_a_bool_and_flattens_only_small_products() -> None:
    # the yes/no rule of every option (enforce_masks, copy, the models' bools):
    # a bool, or 0 or 1
    for value in ("yes", 2, None, 1.0):
        with pytest.raises(ConfigError, match="flatten_actions=.* must be a bool"):
            hunt_v0.parallel_env(flatten_actions=value)
    for value in (1, np.int64(0)):
        env = hunt_v0.parallel_env(flatten_actions=value, threads=1)
        assert env.flatten_actions is bool(value)
        env.close()
    from seer_env.faces.flat_actions import flat_groups

    class G:
        name, action_kind, nvec, mask_len = "big", "multi_discrete", (300, 300), 0
    with pytest.raises(ConfigError, match="group 'big' has MultiDiscrete.*90000 joint"):
        flat_groups([G()], "m")


def test_pettingzoos_tests_and_rllibs_checker_on_the_flat_actions() -> None:
    from pettingzoo.test import api_test, parallel_api_test, performance_benchmark

    api_test(hunt_v0.env(flatten_actions=True, **CFG), num_cycles=40)
    parallel_api_test(hunt_v0.parallel_env(flatten_actions=True, **CFG), num_cycles=40)
    performance_benchmark(hunt_v0.env(flatten_actions=True, threads=1))  # assumes Discrete
    pytest.importorskip("ray.rllib")
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    from seer_env import rllib

    env = rllib.SeerMultiAgentEnv({"env": "hunt_v0", "flatten_actions": True, **CFG})
    assert env.get_action_space("predator_0") == gymnasium.spaces.Discrete(10)
    check_multiagent_environments(env)


def test_torchrls_face_has_one_categorical_action_per_flat_group() -> None:
    pytest.importorskip("torchrl")
    from torchrl.envs.utils import check_env_specs

    from seer_env.torchrl import SeerTorchEnv

    env = SeerTorchEnv("hunt_v0", num_envs=4, flatten_actions=True, **{**CFG, "max_cycles": 20})
    spec = env.full_action_spec["predator", "action"]
    assert spec.shape == (4, 3) and spec.space.n == 10
    check_env_specs(env)
    td = env.rollout(30, break_when_any_done=False)  # random actions within the joint masks
    assert td["predator", "action_mask"].shape == (4, 30, 3, 10)
    assert td["predator", "action"].max() < 10
    env.close()
