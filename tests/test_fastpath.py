"""The dict and batched APIs' C fast path (seer_env._fast) against the plain
Python path it replaces (seer_env._bind.kernels' NumPy kernels and the env's
checked path): the same outputs, the same errors, for every kind of action a
user passes."""

from __future__ import annotations

from collections import UserDict

import numpy as np
import pytest

from seer_env import env as _base
from seer_env._bind import gate as _gate
from seer_env._bind import kernels as _kernels
from seer_env.envs import aircraft_v0, pcs_v0, phold_v0
from seer_env.errors import InvalidActionError
from tests.models import load as load_test_model

ENVS = {
    "phold": lambda: phold_v0.parallel_env(num_entities=7, max_cycles=0, threads=1),
    "pcs": lambda: pcs_v0.parallel_env(width=3, height=2, threads=1, info_keys="all"),
    "aircraft": lambda: aircraft_v0.parallel_env(num_uavs=6, threads=1, max_cycles=40),
}


def _numpy_kernels(m: pytest.MonkeyPatch) -> None:
    """Within ``m``'s context the envs run the NumPy kernels (seer_env._bind.kernels
    without the C extension)."""
    for name in _kernels.NAMES:
        m.setattr(_kernels, name, _kernels.NUMPY[name])


def _fast_module():
    from seer_env import _fast

    return _fast


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


def _check_dict_obs(env, obs: dict, previous: list) -> list:
    """Every agent's observation is a writable float32 (obs_dim,) array of its
    own: no memory shared with the runtime, another agent or an earlier call."""
    arrays = list(obs.values())
    shape = env.observation_space(env.possible_agents[0]).shape
    for i, o in enumerate(arrays):
        assert o.dtype == np.float32 and o.shape == shape
        assert o.flags.writeable and o.flags.c_contiguous
        assert not np.shares_memory(o, env.runtime.obs)
        assert not any(np.shares_memory(o, p) for p in previous)
        assert not any(np.shares_memory(o, p) for p in arrays[i + 1:])
    return arrays


@pytest.mark.parametrize("name", sorted(ENVS))
def test_dict_api_fast_path_equals_the_python_path(name: str, monkeypatch) -> None:
    fast, slow = ENVS[name](), ENVS[name]()
    rng = np.random.default_rng(1)
    out = fast.reset(seed=5)
    _same(out, slow.reset(seed=5))
    previous = _check_dict_obs(fast, out[0], [])
    partial = 0
    for k in range(60):
        if not fast.agents:
            out = fast.reset(seed=k)
            _same(out, slow.reset(seed=k))
            previous = _check_dict_obs(fast, out[0], previous)
        acts = _actions(fast, rng, k)
        partial += len(fast.agents) < len(fast.possible_agents)
        out_fast = fast.step(acts)
        with monkeypatch.context() as m:
            _numpy_kernels(m)
            out_slow = slow.step(acts)
        _same(out_fast, out_slow)
        assert fast.agents == slow.agents
        previous = _check_dict_obs(fast, out_fast[0], previous)
    if name == "aircraft":
        assert partial > 0  # steps with some agents finished: rows picked out of the buffers
    fast.close()
    slow.close()


def test_dict_api_repeated_info_keys_equal_the_python_path(monkeypatch) -> None:
    keys = ["remote_in", "handled", "remote_in"]
    fast = phold_v0.parallel_env(num_entities=4, threads=1, info_keys=keys)
    slow = phold_v0.parallel_env(num_entities=4, threads=1, info_keys=keys)
    _same(fast.reset(seed=1), slow.reset(seed=1))
    for _ in range(3):
        acts = dict.fromkeys(fast.agents, 1)
        out = fast.step(acts)
        with monkeypatch.context() as m:
            _numpy_kernels(m)
            _same(out, slow.step(acts))
        assert list(out[4]["entity_0"]) == ["remote_in", "handled"]
    fast.close()
    slow.close()


def test_dict_outputs_beyond_64_info_keys_and_bad_buffers() -> None:
    from seer_env import _fast

    A, D, K = 3, 2, 100
    obs = np.arange(A * D, dtype=np.float32).reshape(A, D)
    rew = np.array([0.5, 1.5, 2.5], np.float32)
    term, trunc = np.array([False, True, False]), np.array([False, False, True])
    info = np.arange(A * K, dtype=np.float64).reshape(A, K)
    cols = tuple(range(K - 1, -1, -1))  # every column, reversed
    keys = tuple(f"k{c}" for c in cols)
    spec = (obs, rew, term, trunc, info, cols, keys, dict.fromkeys(keys))
    names = ["c", "a"]
    rows = np.array([2, 0], np.intp)
    (o, r, te, tr, inf), done = _fast.dict_outputs(names, rows, spec)
    assert done == 1 and r == {"c": 2.5, "a": 0.5}
    assert te == {"c": False, "a": False} and tr == {"c": True, "a": False}
    assert o["c"].tolist() == [4.0, 5.0] and o["a"].tolist() == [0.0, 1.0]
    assert list(inf["c"]) == list(keys)
    assert [inf["c"][k] for k in keys] == [float(2 * K + c) for c in cols]
    assert [inf["a"][k] for k in keys] == [float(c) for c in cols]
    for bad_rows in (np.array([0, 3], np.intp), np.array([-1, 0], np.intp)):
        with pytest.raises(ValueError, match="row out of range"):
            _fast.dict_outputs(names, bad_rows, spec)
    for bad in (rows.astype(np.int32), rows[:1], [2, 0]):
        with pytest.raises(ValueError):
            _fast.dict_outputs(names, bad, spec)
    with pytest.raises(ValueError, match="column"):
        _fast.dict_outputs(names, rows, spec[:5] + ((K,) + cols[1:],) + spec[6:])
    for k, bad_buf in ((0, obs[:2]), (1, rew.astype(np.float64)), (4, info[:, ::2])):
        with pytest.raises(ValueError):
            _fast.dict_outputs(names, rows, spec[:k] + (bad_buf,) + spec[k + 1:])
    with pytest.raises(TypeError):
        _fast.dict_outputs(names, rows, spec[:7])


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
            _numpy_kernels(m)
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
        _numpy_kernels(m)
        return env.step(a)


# ---- the batched API's outputs: _fast.vec_outputs against the Python path --------

VECTOR_ENVS = {
    # max_cycles small: instances finish (truncated) and reset within the run
    "phold": lambda **kw: phold_v0.vector_env(3, num_entities=5, max_cycles=4, threads=1, **kw),
    "pcs": lambda **kw: pcs_v0.vector_env(2, width=2, height=2, max_cycles=6, threads=1, **kw),
    # collisions: agents terminated at different steps
    "aircraft": lambda **kw: aircraft_v0.vector_env(2, num_uavs=5, max_cycles=7, threads=1,
                                                    **kw),
    # agents finishing at different steps, terminated and truncated
    "dying": lambda **kw: load_test_model("dying").vector_env(3, num_agents=4, max_cycles=5,
                                                              **kw),
}


def _all_arrays(out) -> list[np.ndarray]:
    """Every array in a step's or reset's outputs (nested dicts included)."""
    if isinstance(out, np.ndarray):
        return [out]
    if isinstance(out, dict):
        return [a for v in out.values() for a in _all_arrays(v)]
    if isinstance(out, tuple):
        return [a for v in out for a in _all_arrays(v)]
    return []


def _runtime_buffers(venv) -> list[np.ndarray]:
    rt = venv.runtime
    return [rt.obs, rt.reward, rt.terminated, rt.truncated, rt.alive, rt.active, rt.info,
            rt.actions]


def _check_layout(venv, obs, infos, step=None) -> None:
    """Shapes, dtypes and keys as the SeerVectorEnv docstring says."""
    B, A, D = venv.num_envs, venv.num_agents, venv.single_observation_space.shape[0]
    assert obs.shape == (B, A, D) and obs.dtype == np.float32
    if step is not None:
        rew, term, trunc = step
        assert rew.shape == (B, A) and rew.dtype == np.float32
        for f in (term, trunc):
            assert f.shape == (B, A) and f.dtype == np.bool_
    keys = ["alive", "active", *venv.info_names]
    if "final_obs" in infos:
        keys += ["final_obs", "_final_obs", "final_info", "_final_info"]
        assert list(infos["final_info"]) == ["alive", "active", *venv.info_names]
    assert list(infos) == keys
    for k in ("alive", "active"):
        assert infos[k].shape == (B, A) and infos[k].dtype == np.bool_
    for k in venv.info_names:
        assert infos[k].shape == (B, A) and infos[k].dtype == np.float64
        assert infos[k].flags.writeable  # a fresh array in either copy mode


def _check_fresh(venv, out, previous: list[np.ndarray], copy: bool) -> None:
    """copy=True: every array writable and its own; copy=False: obs, rewards,
    flags and masks read-only, the info values still fresh."""
    bufs = _runtime_buffers(venv)
    infos = out[-1]
    own = _all_arrays(out) if copy else [infos[k] for k in venv.info_names]
    for arr in own:
        assert arr.flags.writeable
        assert not any(np.shares_memory(arr, b) for b in bufs)
        assert not any(np.shares_memory(arr, p) for p in previous)
    if not copy:
        for arr in (*out[:-1], infos["alive"], infos["active"]):
            assert not arr.flags.writeable
    named = [infos[k] for k in venv.info_names]
    for i, x in enumerate(named):  # the info values do not overlap one another
        assert not any(np.shares_memory(x, y) for y in named[i + 1:])


def _random_actions(venv, rng: np.random.Generator) -> np.ndarray:
    sz = venv.sizes
    if sz.action_kind == "discrete":
        return rng.integers(0, sz.action_n, size=venv.runtime.actions.shape)
    return rng.uniform(-1.5, 1.5, size=venv.runtime.actions.shape).astype(np.float32)


@pytest.mark.parametrize("copy", [True, False], ids=["copy", "zero_copy"])
@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
@pytest.mark.parametrize("name", sorted(VECTOR_ENVS))
def test_batched_outputs_equal_the_python_path(name: str, mode: str, copy: bool,
                                               monkeypatch) -> None:
    assert _kernels.NATIVE and _kernels.vec_outputs is _fast_module().vec_outputs
    fast = VECTOR_ENVS[name](copy=copy, autoreset_mode=mode)
    slow = VECTOR_ENVS[name](copy=copy, autoreset_mode=mode)
    B = fast.num_envs

    def slow_call(method, *args, **kwargs):
        with monkeypatch.context() as m:
            _numpy_kernels(m)
            return getattr(slow, method)(*args, **kwargs)

    out = fast.reset(seed=11)
    _same(out, slow_call("reset", seed=11))
    _check_layout(fast, out[0], out[1])
    _check_fresh(fast, out, [], copy)
    previous = _all_arrays(out) if copy else []
    rng = np.random.default_rng(3)
    finals = resets = 0
    for _ in range(16):
        if mode == "disabled" and not fast.alive.any(axis=1).all():
            mask = ~fast.alive.any(axis=1)
            out = fast.reset(options={"reset_mask": mask})
            _same(out, slow_call("reset", options={"reset_mask": mask}))
            resets += 1
        else:
            a = _random_actions(fast, rng)
            out = fast.step(a)
            _same(out, slow_call("step", a))
            _check_layout(fast, out[0], out[4], out[1:4])
            finals += "final_obs" in out[4]
        _check_fresh(fast, out, previous, copy)
        previous = _all_arrays(out) if copy else []
        if not copy:  # zero-copy: views of the runtime's buffers
            assert np.shares_memory(out[0], fast.runtime.obs)
            assert np.shares_memory(out[-1]["alive"], fast.runtime.alive)
    # a masked reset of one instance (rows of the others unchanged)
    mask = np.zeros(B, bool)
    mask[-1] = True
    out = fast.reset(options={"reset_mask": mask})
    _same(out, slow_call("reset", options={"reset_mask": mask}))
    _check_fresh(fast, out, previous, copy)
    assert fast._any_autoreset == slow._any_autoreset
    assert np.array_equal(fast._autoreset, slow._autoreset)
    # the runs reached the paths they are meant to test
    if mode == "same_step":
        assert finals > 0
    if mode == "disabled":
        assert resets > 0
    fast.close()
    slow.close()


def test_vec_outputs_refuses_buffers_it_cannot_read() -> None:
    from seer_env import _fast

    venv = phold_v0.vector_env(2, num_entities=3, threads=1)
    venv.reset(seed=0)
    (obs, *_), n = _fast.vec_outputs(venv._bufs, True, venv._fin)
    assert n == 0 and obs.shape == (2, 3, venv.single_observation_space.shape[0])
    bufs = list(venv._bufs)
    for k, bad in ((0, bufs[0][:, :, ::2]), (1, bufs[1].astype(np.float64)), (4, bufs[4][:1]),
                   (6, bufs[6][..., :1]), (2, bufs[2].tolist())):
        with pytest.raises(ValueError):
            _fast.vec_outputs(tuple(bufs[:k] + [bad] + bufs[k + 1:]), True, None)
    with pytest.raises(TypeError):
        _fast.vec_outputs(tuple(bufs[:7]) + (list(venv.info_names),), True, None)
    for fin in (np.zeros(3, bool), np.zeros(2, np.uint8), np.zeros(4, bool)[::2]):
        with pytest.raises(ValueError):
            _fast.vec_outputs(venv._bufs, True, fin)
        with pytest.raises(ValueError):
            _fast.finished(venv.runtime.alive, fin)
    alive = np.array([[True, False], [False, False], [False, True]])
    fin = np.ones(3, bool)
    assert _fast.finished(alive, fin) == 1 and fin.tolist() == [False, True, False]
    with pytest.raises(ValueError):
        _fast.finished(alive.astype(np.uint8), fin)
    venv.close()


@pytest.mark.parametrize("name", ["phold", "aircraft"])
def test_batched_actions_of_every_kind_match_the_python_path(name: str, monkeypatch) -> None:
    """Arrays the C copy takes (or leaves to the checked path): the same outputs,
    or the same error, as the Python path, and nothing changed on an error."""
    fast, slow = VECTOR_ENVS[name](), VECTOR_ENVS[name]()
    _same(fast.reset(seed=4), slow.reset(seed=4))
    shape = fast.runtime.actions.shape
    if fast.sizes.action_kind == "discrete":
        ok = np.ones(shape, np.int64)
        cases = [ok, ok.astype(np.int8), ok.astype(np.uint64), ok.astype(">i8"),
                 ok.astype(np.int32)[..., None][..., 0], np.asfortranarray(ok),
                 np.repeat(ok, 2, axis=1)[:, ::2], ok.tolist(), ok - 2, ok * -(2**31),
                 ok * (2**31), ok.astype(np.uint64) * (2**40), ok.astype(bool),
                 ok.astype(float), ok[:, :-1], ok[None], ok.astype(np.int16)]
    else:
        ok = np.full(shape, 0.25)
        cases = [ok, ok.astype(np.float32), ok.astype(">f8"), ok.astype(np.float16),
                 np.zeros(shape, np.int64), np.asfortranarray(ok), ok * 1e300, -ok * 1e300,
                 ok.tolist(), ok[..., :-1], ok.astype(complex), ok + np.nan,
                 np.repeat(ok, 2, axis=2)[..., ::2]]
    for k, a in enumerate(cases):
        before = fast.runtime.entity_states(0)
        try:
            got: object = fast.step(a)
        except Exception as exc:  # noqa: BLE001 - compared with the Python path's
            got = exc
            assert fast.runtime.entity_states(0) == before, k
        try:
            want: object = _slow_step(slow, a, monkeypatch)
        except Exception as exc:  # noqa: BLE001
            want = exc
        if isinstance(want, Exception):
            assert type(got) is type(want) and str(got) == str(want), (k, got, want)
        else:
            _same(got, want)
    fast.close()
    slow.close()


def test_exclusive_wrappers_keep_the_methods_signatures_and_checks() -> None:
    import inspect

    from seer_env.errors import StateError

    for cls in (_base.SeerVectorEnv, _base.SeerParallelEnv):
        for meth in ("reset", "step", "state"):
            f = getattr(cls, meth)
            assert inspect.signature(f) == inspect.signature(f.__wrapped__), (cls, meth)
            assert f.__doc__ == f.__wrapped__.__doc__ and f.__name__ == meth
    venv = phold_v0.vector_env(2, num_entities=3, threads=1, max_cycles=0)
    venv.reset(1)  # positional, keywords, defaults
    venv.reset(seed=1, options=None)
    obs, *_ = venv.step(actions=np.zeros((2, 3), np.int64))
    assert obs.shape[:2] == (2, 3)
    with pytest.raises(TypeError):
        venv.step()
    with pytest.raises(TypeError):
        venv.reset(1, None, 3)
    venv._busy.acquire()  # as if another thread were inside a call
    try:
        with pytest.raises(StateError, match=r"step\(\) was called while another thread"):
            venv.step(np.zeros((2, 3), np.int64))
    finally:
        venv._busy.release()
    venv._interrupted = "the last step() was interrupted"
    # refused until a reset, however often it is tried (a refusal once
    # cleared the mark, and the call after it went through)
    for _ in range(3):
        with pytest.raises(StateError, match="interrupted; call reset"):
            venv.step(np.zeros((2, 3), np.int64))
        with pytest.raises(StateError, match="interrupted; call reset"):
            venv.state()
        assert not venv._busy.locked()
    assert venv._interrupted == "the last step() was interrupted"
    venv.reset(seed=2)  # reset is always allowed, and clears it
    assert venv._interrupted == ""
    venv.step(np.zeros((2, 3), np.int64))
    assert not venv._busy.locked()
    venv.close()

    class Odd:  # signatures of every other kind
        seer_model = venv.seer_model

        def __init__(self) -> None:
            self._busy, self._interrupted = _gate.new_gate(), ""  # (venv is closed)

        @_gate.exclusive
        def kw(self, a, b=2, *, c, d=4):
            return (a, b, c, d)

        @_gate.exclusive
        def var(self, *args, **kwargs):
            return (args, kwargs)

    o = Odd()
    assert o.kw(1, c=3) == (1, 2, 3, 4) and o.kw(a=1, b=5, c=3, d=6) == (1, 5, 3, 6)
    assert o.var(1, x=2) == ((1,), {"x": 2})
    assert inspect.signature(Odd.kw) == inspect.signature(Odd.kw.__wrapped__)
