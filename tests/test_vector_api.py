"""The batched API (``vector_env``): autoreset modes, dead agents, seeds, copy semantics.

Every mode is checked step by step against a reference built from one
PettingZoo ``ParallelEnv`` per instance, on PHOLD (native runtime) and on the
``dying`` test model (``tests/models/dying``: agents finishing at different
steps, some terminated and some truncated in the same step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from seer_env.envs import phold_v0
from seer_env.errors import ConfigError, StateError
from tests.models import load as load_test_model

B = 3
PHOLD = dict(num_entities=6, events_per_entity=2, max_cycles=4, threads=1)

DYING = load_test_model("dying")


def _rows(env: Any, d: dict[str, Any], fill: Any, dtype: Any, shape: tuple[int, ...]) -> Any:
    out = np.full(shape, fill, dtype=dtype)
    for name, v in d.items():
        out[env.agent_index[name]] = v
    return out


class Reference:
    """B ParallelEnvs stepped one by one with Gymnasium's autoreset rules."""

    def __init__(self, make: Callable[[], Any], seed: int, mode: AutoresetMode) -> None:
        self.envs = [make() for _ in range(B)]
        self.mode = mode
        self.seeds = [seed + i for i in range(B)]
        self.pending = [False] * B
        e = self.envs[0]
        self.A, self.D = len(e.possible_agents), e.observation_space(e.possible_agents[0]).shape[0]

    def _blank(self) -> dict[str, np.ndarray]:
        A, D = self.A, self.D
        return {"obs": np.zeros((B, A, D), np.float32), "rew": np.zeros((B, A), np.float32),
                "term": np.zeros((B, A), bool), "trunc": np.zeros((B, A), bool),
                "active": np.zeros((B, A), bool), "alive": np.zeros((B, A), bool)}

    def _reset(self, i: int, out: dict[str, np.ndarray]) -> None:
        env = self.envs[i]
        obs, _ = env.reset(seed=self.seeds[i])
        self.seeds[i] += B
        out["obs"][i] = _rows(env, obs, 0, np.float32, (self.A, self.D))
        out["rew"][i] = 0
        out["active"][i] = out["alive"][i] = True

    def reset(self) -> dict[str, np.ndarray]:
        out = self._blank()
        for i in range(B):
            self._reset(i, out)
        return out

    def step(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        out = self._blank()
        out["final"] = np.zeros(B, bool)
        out["final_obs"] = np.zeros((B, self.A, self.D), np.float32)
        for i, env in enumerate(self.envs):
            if self.pending[i]:
                self._reset(i, out)
                self.pending[i] = False
                continue
            acts = {a: int(actions[i, env.agent_index[a]]) for a in env.agents}
            obs, rew, term, trunc, _ = env.step(acts)
            out["obs"][i] = _rows(env, obs, 0, np.float32, (self.A, self.D))
            out["rew"][i] = _rows(env, rew, 0, np.float32, (self.A,))
            out["term"][i] = _rows(env, term, False, bool, (self.A,))
            out["trunc"][i] = _rows(env, trunc, False, bool, (self.A,))
            out["active"][i] = _rows(env, dict.fromkeys(obs, True), False, bool, (self.A,))
            out["alive"][i] = _rows(env, dict.fromkeys(env.agents, True), False, bool, (self.A,))
            if not env.agents:
                if self.mode is AutoresetMode.NEXT_STEP:
                    self.pending[i] = True
                elif self.mode is AutoresetMode.SAME_STEP:
                    out["final"][i] = True
                    out["final_obs"][i] = out["obs"][i]
                    step_out = {n: out[n][i].copy() for n in ("rew", "term", "trunc")}
                    self._reset(i, out)  # reset obs and masks, the final step's rewards
                    for n, v in step_out.items():
                        out[n][i] = v
        return out


def _envs(kind: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Callable[..., Any], Any]:
    if kind == "phold":
        return (lambda **kw: phold_v0.vector_env(B, **PHOLD, **kw),
                lambda: phold_v0.parallel_env(**PHOLD))
    return (lambda **kw: DYING.vector_env(B, num_agents=6, max_cycles=5, **kw),
            lambda: DYING.parallel_env(num_agents=6, max_cycles=5))


def _check(got: tuple[Any, ...], want: dict[str, np.ndarray], k: int) -> None:
    obs, rew, term, trunc, infos = got
    for name, arr in (("obs", obs), ("rew", rew), ("term", term), ("trunc", trunc),
                      ("active", infos["active"]), ("alive", infos["alive"])):
        assert arr.dtype == want[name].dtype, (k, name)
        assert np.array_equal(arr, want[name]), (k, name, arr, want[name])


@pytest.mark.parametrize("kind", ["phold", "dying"])
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_autoreset_matches_per_instance_parallel_envs(
    kind: str, mode: AutoresetMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_vec, make_par = _envs(kind, monkeypatch)
    venv = make_vec(autoreset_mode=mode)
    ref = Reference(make_par, 11, mode)
    assert venv.metadata["autoreset_mode"] is mode
    obs, infos = venv.reset(seed=11)
    want = ref.reset()
    assert np.array_equal(obs, want["obs"]) and infos["alive"].all() and infos["active"].all()
    rng = np.random.default_rng(5)
    finals = 0
    for k in range(25):
        acts = rng.integers(0, 3, size=(B, venv.num_agents))
        # agents that are not alive may get any value: it is ignored
        acts[~venv.alive] = 99
        got = venv.step(acts)
        want = ref.step(acts)
        _check(got, want, k)
        infos = got[4]
        if mode is AutoresetMode.SAME_STEP:
            if want["final"].any():
                finals += 1
                assert np.array_equal(infos["_final_obs"], want["final"])
                assert np.array_equal(infos["_final_info"], want["final"])
                assert np.array_equal(infos["final_obs"], want["final_obs"])
                fa = infos["final_info"]["active"]
                assert fa[want["final"]].any() and not fa[~want["final"]].any()
            else:
                assert "final_obs" not in infos
        else:
            assert "final_obs" not in infos
    assert finals >= 3 or mode is AutoresetMode.NEXT_STEP
    venv.close()


def test_dead_agents_report_once_and_instance_finishes_when_none_alive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    venv = DYING.vector_env(1, num_agents=4)
    venv.reset(seed=0)  # seed 0: agents 0, 1 live 1 step, agents 2, 3 live 2 steps
    _, rew, term, trunc, infos = venv.step(np.array([[1, 2, 0, 1]]))
    assert term.tolist() == [[True, False, False, False]]
    assert trunc.tolist() == [[False, True, False, False]]
    assert infos["alive"].tolist() == [[False, False, True, True]]
    assert rew.tolist() == [[1.0, 2.5, 1.0, 2.5]]
    _, rew, term, trunc, infos = venv.step(np.array([[7, -4, 2, 2]]))  # dead: ignored
    assert term.tolist() == [[False, False, True, False]]
    assert trunc.tolist() == [[False, False, False, True]]
    assert infos["active"].tolist() == [[False, False, True, True]]
    assert rew.tolist() == [[0.0, 0.0, 3.0, 3.5]]
    assert not infos["alive"].any()
    obs, rew, term, trunc, infos = venv.step(np.zeros((1, 4), np.int64))  # next-step reset
    assert infos["alive"].all() and not rew.any() and not term.any() and not trunc.any()
    assert obs[0, :, 2].tolist() == [1.0] * 4  # seed 0 + num_envs = 1; obs[2] = seed % 7


def test_disabled_mode_needs_masked_resets(monkeypatch: pytest.MonkeyPatch) -> None:
    venv = DYING.vector_env(2, num_agents=2, autoreset_mode="disabled")
    assert venv.metadata["autoreset_mode"] is AutoresetMode.DISABLED
    with pytest.raises(StateError):
        venv.reset(options={"reset_mask": np.array([True, False])})  # first reset: all
    venv.reset(seed=[0, 1])  # lives: instance 0 one step, instance 1 two steps
    _, _, _, _, infos = venv.step(np.zeros((2, 2), np.int64))
    assert infos["alive"].tolist() == [[False, False], [True, True]]
    with pytest.raises(StateError, match=r"instance\(s\) \[0\] finished"):
        venv.step(np.zeros((2, 2), np.int64))
    obs, infos = venv.reset(options={"reset_mask": np.array([True, False])})
    assert infos["alive"].all()
    assert obs[0, 0, 2] == 2.0  # continues with seed 0 + num_envs
    assert obs[1, 0, 1] == 1.0  # instance 1 untouched: one step done
    _, _, _, trunc, infos = venv.step(np.zeros((2, 2), np.int64))
    assert trunc[1].tolist() == [True, False]
    obs, _ = venv.reset(seed=40, options={"reset_mask": np.array([False, True])})
    assert obs[1, 0, 2] == 41 % 7
    for bad in (np.array([1, 0]), np.array([True]), np.array([[True, False]])):
        with pytest.raises(ConfigError, match="reset_mask"):
            venv.reset(options={"reset_mask": bad})


def test_copy_semantics() -> None:
    venv = phold_v0.vector_env(2, **PHOLD)
    obs0, infos0 = venv.reset(seed=3)
    keep = obs0.copy()
    out = venv.step(np.zeros((2, 6), np.int64))
    assert np.array_equal(obs0, keep)  # not overwritten by the next step
    rt = venv.runtime
    for arr in (*out[:4], out[4]["alive"], out[4]["active"], infos0["alive"]):
        assert arr.flags.writeable
        assert not any(np.shares_memory(arr, b) for b in (rt.obs, rt.reward, rt.terminated,
                                                           rt.truncated, rt.alive, rt.active))
    zc = phold_v0.vector_env(2, copy=False, **PHOLD)
    obs, _ = zc.reset(seed=3)
    assert np.shares_memory(obs, zc.runtime.obs) and not obs.flags.writeable
    before = obs.copy()
    o, r, te, tr, infos = zc.step(np.zeros((2, 6), np.int64))
    assert o is not obs and np.shares_memory(o, obs)
    assert not np.array_equal(obs, before)  # the view shows the new step
    assert np.array_equal(obs, out[0])      # same values as the copying env
    assert np.shares_memory(infos["alive"], zc.runtime.alive)
    with pytest.raises(ValueError):
        infos["alive"][0, 0] = False
    venv.close()
    zc.close()


def test_same_step_zero_copy_keeps_final_rewards(monkeypatch: pytest.MonkeyPatch) -> None:
    venv = DYING.vector_env(1, num_agents=2, copy=False, autoreset_mode="same_step")
    venv.reset(seed=0)  # both agents live one step
    obs, rew, term, trunc, infos = venv.step(np.array([[2, 1]]))
    assert rew.tolist() == [[2.0, 1.5]] and term.tolist() == [[True, False]]
    assert trunc.tolist() == [[False, True]] and infos["_final_obs"].tolist() == [True]
    assert infos["alive"].all() and obs[0, :, 1].tolist() == [0.0, 0.0]  # reset obs, k = 0
    assert infos["final_obs"][0, :, 1].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("bad", ["sometimes", 3, None])
def test_bad_autoreset_mode(bad: Any) -> None:
    with pytest.raises(ConfigError, match="autoreset_mode"):
        phold_v0.vector_env(1, autoreset_mode=bad, **PHOLD)


@pytest.mark.parametrize("make", ["vector_env", "agent_vector_env"])
@pytest.mark.parametrize("kw", [dict(info_keys=["nope"]), dict(info_keys=["events"]),
                                dict(info_keys=5), dict(info_keys="events"),
                                dict(copy="yes"), dict(copy=None), dict(copy=2)])
def test_a_batched_env_refuses_what_it_would_ignore(make: str, kw: dict[str, Any]) -> None:
    """info_keys chooses the per-agent dicts' counters (the ParallelEnv's, the
    AEC env's): a batched env, whose infos hold every counter as arrays,
    took any value and ignored it (a typo unseen); copy= was read by
    bool() (copy=None gave read-only views).  Both are a ConfigError now."""
    from seer_env.envs import pcs_v0

    with pytest.raises(ConfigError, match=next(iter(kw))):
        getattr(pcs_v0, make)(2, width=3, height=3, threads=1, **kw)


def test_a_batched_env_takes_info_keys_all_and_a_bool_copy() -> None:
    from seer_env.envs import pcs_v0

    for kw in (dict(info_keys="all"), dict(info_keys=None), dict(copy=np.bool_(False)),
               dict(copy=0)):
        v = pcs_v0.vector_env(2, width=3, height=3, threads=1, **kw)
        _, infos = v.reset(seed=0)
        assert set(v.info_names) <= set(infos)
        v.close()


def test_autoreset_mode_spellings() -> None:
    for spelling in ("SameStep", "SAME_STEP", "same_step", AutoresetMode.SAME_STEP):
        v = phold_v0.vector_env(1, autoreset_mode=spelling, **PHOLD)
        assert v.autoreset_mode is AutoresetMode.SAME_STEP
        v.close()


def test_a_batched_env_pickles_as_a_fresh_env_of_the_same_arguments() -> None:
    """As the ParallelEnv does (a process-based wrapper ships envs so); it raised
    a TypeError naming an internal object (the call gate)."""
    import pickle

    from seer_env.envs import pcs_v0

    v = pcs_v0.vector_env(3, width=4, height=4, threads=1, autoreset_mode="disabled",
                          copy=False, batch_size=2)
    v.reset(seed=3)
    w = pickle.loads(pickle.dumps(v))
    assert type(w) is type(v) and w is not v
    assert (w.num_envs, w.autoreset_mode, w.copy, w.batch_size) == (
        3, v.autoreset_mode, False, 2)
    assert w.config == v.config
    a, _ = v.reset(seed=5)
    b, _ = w.reset(seed=5)
    assert np.array_equal(a, b)
    acts = np.ones((3, 16), np.int64)
    assert all(np.array_equal(x, y) for x, y in zip(v.step(acts)[:4], w.step(acts)[:4],
                                                    strict=True))
    g = pickle.loads(pickle.dumps(pcs_v0.agent_vector_env(2, width=4, height=4, threads=1)))
    g.reset(seed=0)
    g.step(np.zeros(g.num_envs, np.int64))
    for e in (v, w, g):
        e.close()
