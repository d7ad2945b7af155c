"""The dict and batched APIs' C fast path (seer_env._fast) against the plain
Python path it replaces: the same outputs, the same errors, for every kind of
action a user passes."""

from __future__ import annotations

from collections import UserDict

import numpy as np
import pytest

from seer_env import _base
from seer_env.envs import aircraft_v0, pcs_v0, phold_v0
from seer_env.errors import InvalidActionError

ENVS = {
    "phold": lambda: phold_v0.parallel_env(num_entities=7, max_cycles=0, threads=1),
    "pcs": lambda: pcs_v0.parallel_env(width=3, height=2, threads=1, info_keys="all"),
    "aircraft": lambda: aircraft_v0.parallel_env(num_uavs=6, threads=1, max_cycles=40),
}


def _same(a, b) -> None:
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, tuple):
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    else:
        assert a == b and type(a) is type(b)


def _actions(env, rng: np.random.Generator, style: int) -> dict:
    out = {}
    for a in env.agents:
        sp = env.action_space(a)
        if hasattr(sp, "n"):
            v = int(rng.integers(sp.n))
            out[a] = [v, np.int64(v), np.int32(v), np.uint8(v)][style % 4]
        else:
            v = rng.uniform(-2, 2, size=sp.shape)  # outside the bounds: clipped
            out[a] = [v, v.astype(np.float32), v * 1e300, v.astype(np.float64)][style % 4]
    return out


@pytest.mark.parametrize("name", sorted(ENVS))
def test_dict_api_fast_path_equals_the_python_path(name: str, monkeypatch) -> None:
    fast, slow = ENVS[name](), ENVS[name]()
    rng = np.random.default_rng(1)
    _same(fast.reset(seed=5), slow.reset(seed=5))
    for k in range(60):
        if not fast.agents:
            _same(fast.reset(seed=k), slow.reset(seed=k))
        acts = _actions(fast, rng, k)
        out_fast = fast.step(acts)
        with monkeypatch.context() as m:
            m.setattr(_base, "_fast", None)
            out_slow = slow.step(acts)
        _same(out_fast, out_slow)
        assert fast.agents == slow.agents
    fast.close()
    slow.close()


@pytest.mark.parametrize("bad,match", [
    (True, "integer"), (np.bool_(True), "integer"), (2**31, "outside"), (-(2**31) - 1, "outside"),
    (np.uint64(2**40), "outside"), (1.0, "integer"), ("1", "integer"), (np.array([[1]]), "shape"),
    (99, "outside"),
])
def test_odd_discrete_actions_take_the_checked_path(bad, match: str) -> None:
    env = phold_v0.parallel_env(num_entities=3, max_cycles=0, threads=1)
    env.reset(seed=0)
    before = env.runtime.entity_states(0)
    acts = dict.fromkeys(env.agents, 0)
    acts["entity_1"] = bad
    with pytest.raises(InvalidActionError, match=match):
        env.step(acts)
    assert env.runtime.entity_states(0) == before
    ok = dict.fromkeys(env.agents, 0)
    for value in (np.array(2), np.array([2]), np.int16(2)):  # accepted, slow or fast
        ok["entity_1"] = value
        env.step(ok)
    env.step(UserDict(ok))  # a Mapping that is not a dict
    env.close()


def test_odd_box_actions_take_the_checked_path() -> None:
    env = aircraft_v0.parallel_env(num_uavs=3, threads=1, max_cycles=0)
    env.reset(seed=0)
    dim = env.action_space(env.agents[0]).shape[0]
    for bad, match in ((np.full(dim, np.nan), "finite"), (np.zeros(dim + 1), "shape"),
                       (np.zeros(dim, complex), "dtype"), ([0.0] * dim + [1.0], "shape")):
        acts = {a: np.zeros(dim, np.float32) for a in env.agents}
        acts[env.agents[1]] = bad
        with pytest.raises(InvalidActionError, match=match):
            env.step(acts)
    acts = {a: np.zeros(dim) for a in env.agents}
    acts[env.agents[0]] = np.zeros((dim, 2))[:, 0]  # not C-contiguous: the checked path
    acts[env.agents[2]] = [0.5] * dim  # a list: the checked path
    env.step(acts)
    env.close()


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.int16, np.uint32])
def test_batched_fast_path_equals_the_python_path(dtype, monkeypatch) -> None:
    kw = dict(num_entities=9, max_cycles=5, threads=1)
    fast, slow = phold_v0.vector_env(3, **kw), phold_v0.vector_env(3, **kw)
    _same(fast.reset(seed=2), slow.reset(seed=2))
    rng = np.random.default_rng(0)
    for _ in range(14):  # past max_cycles: autoresets included
        a = rng.integers(0, 3, size=(3, 9)).astype(dtype)
        out = fast.step(a)
        with monkeypatch.context() as m:
            m.setattr(_base, "_fast", None)
            ref = slow.step(a)
        _same(out, ref)
    big = np.full((3, 9), 2**31, np.int64)
    with pytest.raises(InvalidActionError, match="int32"):
        fast.step(big)
    fast.close()
    slow.close()


def test_batched_box_fast_path_keeps_huge_values_finite(monkeypatch) -> None:
    fast = aircraft_v0.vector_env(2, num_uavs=4, threads=1)
    slow = aircraft_v0.vector_env(2, num_uavs=4, threads=1)
    _same(fast.reset(seed=1), slow.reset(seed=1))
    a = np.full(fast.runtime.actions.shape, 1e300)
    a[0, 0, 0] = -1e300
    _same(fast.step(a), _slow_step(slow, a, monkeypatch))
    a[1, 1, 1] = np.inf
    with pytest.raises(InvalidActionError):
        fast.step(a)
    fast.close()
    slow.close()


def _slow_step(env, a, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(_base, "_fast", None)
        return env.step(a)
