"""pcs_v0 through the PettingZoo and batched APIs: conformance, determinism,
bad actions, config errors, render, counters."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import (
    api_test,
    max_cycles_test,
    parallel_api_test,
    render_test,
    seed_test,
    state_test,
)

from oracles.pcs_numpy import INFO_NAMES
from seer_env.envs import pcs_v0
from seer_env.errors import (
    BudgetError,
    ClosedError,
    ConfigError,
    ExecutorError,
    InvalidActionError,
    StateError,
)

SMALL: dict[str, Any] = dict(width=4, height=3, channels=4, portables_per_cell=10,
                             next_call_mean=60.0, call_time_mean=60.0, move_mean=90.0,
                             max_guard=3)


def test_parallel_api() -> None:
    parallel_api_test(pcs_v0.parallel_env(max_cycles=40, **SMALL), num_cycles=50)


def test_aec_api() -> None:
    api_test(pcs_v0.env(max_cycles=40, **SMALL), num_cycles=50)


def test_seed() -> None:
    seed_test(lambda **kw: pcs_v0.env(max_cycles=30, **SMALL, **kw), num_cycles=20)


def test_max_cycles() -> None:
    max_cycles_test(pcs_v0)


def test_render() -> None:
    render_test(lambda **kw: pcs_v0.env(max_cycles=20, **SMALL, **kw))


def test_state() -> None:
    state_test(pcs_v0.env(**SMALL), pcs_v0.parallel_env(**SMALL))


def test_agents_and_spaces() -> None:
    env = pcs_v0.parallel_env(width=3, height=2, max_guard=2)
    assert env.possible_agents == ["cell_0", "cell_1", "cell_2",
                                   "cell_3", "cell_4", "cell_5"]
    assert env.action_space("cell_5").n == 3
    assert env.observation_space("cell_0").shape == (14,)
    assert env.observation_space("cell_0") is env.observation_space("cell_4")
    prof = pcs_v0.parallel_env(width=3, height=2, profile_amplitude=0.5)
    assert prof.observation_space("cell_0").shape == (16,)
    assert env.state_space.shape == (6 * 6 + 2,)
    env.close()
    prof.close()


def _run(env: Any, seed: int, steps: int, action_seed: int) -> list[tuple[Any, ...]]:
    rng = np.random.default_rng(action_seed)
    obs, infos = env.reset(seed=seed)
    trace: list[tuple[Any, ...]] = [(obs, infos)]
    for _ in range(steps):
        acts = {a: int(rng.integers(0, 4)) for a in env.agents}
        trace.append(env.step(acts))
    return trace


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    return bool(a == b) and type(a) is type(b)


def test_multi_step_determinism() -> None:
    kw = dict(max_cycles=120, **SMALL)
    a = _run(pcs_v0.parallel_env(threads=2, **kw), 5, 120, 0)
    b = _run(pcs_v0.parallel_env(executor="serial", **kw), 5, 120, 0)
    c = _run(pcs_v0.parallel_env(threads=1, **kw), 6, 120, 0)
    assert _same(a, b)
    assert not _same(a, c)
    # re-reset of the same env gives the same episode again
    env = pcs_v0.parallel_env(threads=2, **kw)
    first = _run(env, 5, 60, 1)
    second = _run(env, 5, 60, 1)
    assert _same(first, second)


def test_returned_observations_are_not_overwritten() -> None:
    env = pcs_v0.parallel_env(**SMALL)
    obs0, _ = env.reset(seed=1)
    keep = {k: v.copy() for k, v in obs0.items()}
    for _ in range(5):
        env.step({a: 0 for a in env.agents})
    assert _same(obs0, keep)


BAD_ACTIONS = [
    ("unknown cell", lambda ok: {**ok, "cell_99": 0}),
    ("missing cell", lambda ok: {k: v for k, v in ok.items() if k != "cell_5"}),
    ("out of range", lambda ok: {**ok, "cell_1": 4}),
    ("negative", lambda ok: {**ok, "cell_1": -1}),
    ("float dtype", lambda ok: {**ok, "cell_1": 1.0}),
    ("bool dtype", lambda ok: {**ok, "cell_1": True}),
    ("string", lambda ok: {**ok, "cell_1": "1"}),
    ("array shape", lambda ok: {**ok, "cell_1": np.array([1, 2])}),
    ("not a dict", lambda ok: list(ok.values())),
]


@pytest.mark.parametrize("label,make", BAD_ACTIONS, ids=[b[0] for b in BAD_ACTIONS])
def test_bad_action_raises_and_changes_nothing(label: str, make: Any) -> None:
    rng = np.random.default_rng(3)
    plans = [{a: int(rng.integers(0, 4)) for a in pcs_v0.parallel_env(**SMALL).possible_agents}
             for _ in range(30)]
    twin = pcs_v0.parallel_env(executor="serial", **SMALL)
    env = pcs_v0.parallel_env(threads=1, **SMALL)
    assert _same(twin.reset(seed=11), env.reset(seed=11))
    for k, plan in enumerate(plans):
        if k in (0, 7, 20):
            with pytest.raises(InvalidActionError):
                env.step(make(plan))
        assert _same(env.step(plan), twin.step(plan)), (label, k)
    assert _same(env.state(), twin.state())


def test_vector_env_bad_actions_and_batch() -> None:
    venv = pcs_v0.vector_env(3, threads=2, **SMALL)
    ref = pcs_v0.vector_env(3, executor="serial", **SMALL)
    obs, _ = venv.reset(seed=40)
    obs_r, _ = ref.reset(seed=40)
    assert np.array_equal(obs, obs_r)
    rng = np.random.default_rng(0)
    for k in range(60):
        acts = rng.integers(0, 4, size=(3, 12))
        if k == 10:
            for bad in (acts.astype(np.float32), acts[:, :5], acts + 4, -acts - 1):
                with pytest.raises(InvalidActionError):
                    venv.step(bad)
        out, out_r = venv.step(acts), ref.step(acts)
        for x, y in zip(out[:4], out_r[:4], strict=True):
            assert np.array_equal(x, y), k
        for name in INFO_NAMES:
            assert np.array_equal(out[4][name], out_r[4][name])
    assert np.array_equal(venv.state(), ref.state())
    tot = venv.totals()
    assert tot["events"].shape == (3,) and (tot["events"] > 0).all()
    venv.close()
    ref.close()


def test_state_after_a_failed_step_says_why_it_needs_a_reset() -> None:
    """state() after a failed call (here the event budget) says what step()
    and snapshot() say -- the instance needs a reset, as its last call failed,
    and why -- not that it was never reset; before any reset, that."""
    env = pcs_v0.parallel_env(width=4, height=4, threads=1, max_step_events=30)
    with pytest.raises(StateError, match=r"call reset\(\) before state\(\)"):
        env.state()
    venv = pcs_v0.vector_env(1, width=4, height=4, threads=1)
    with pytest.raises(StateError, match="state: instance 0 has not been reset"):
        venv.state()
    venv.close()
    env.reset(seed=0)
    with pytest.raises(BudgetError):
        env.step({a: 0 for a in env.agents})
    for call in (env.state, env.snapshot, lambda: env.step({a: 0 for a in env.agents})):
        with pytest.raises(StateError, match="instance 0 needs a reset: its last call "
                                             "failed: step 0 of instance 0 handled more than"):
            call()
    env.reset(seed=0)
    assert env.state().shape == env.state_space.shape
    env.close()


@pytest.mark.parametrize("kw", [{}, {"threads": 2}], ids=["auto", "fixed"])
def test_the_choice_stays_readable_after_close(kw: dict[str, Any], monkeypatch) -> None:
    """env.stpa after close(): threads, workload and as_dict() (and a fixed
    choice's reason) raised ClosedError while executor and state answered;
    the runtime keeps what ran last (its threads and counters) at close."""
    monkeypatch.setenv("SEER_STPA_CACHE", "0")
    env = pcs_v0.parallel_env(width=6, height=6, **kw)
    env.reset(seed=0)
    for _ in range(3):
        env.step({a: 0 for a in env.agents})
    st = env.stpa
    before = (st.executor, st.threads, st.reason, st.workload, st.as_dict())
    env.close()
    st = env.stpa
    assert (st.executor, st.threads, st.reason, st.workload, st.as_dict()) == before
    assert env.runtime.stats()["steps"] == 3
    with pytest.raises(ClosedError):
        env.step({a: 0 for a in env.possible_agents})


def test_totals_never_read_a_step_in_flight() -> None:
    """totals() during a send() waits for the background step, as state()
    does (it read the info buffers as the step wrote them: counts that were
    neither before the step nor after it); closed, a ClosedError, as from
    the ParallelEnv's."""
    venv = pcs_v0.vector_env(2, width=24, height=24, threads=2, max_cycles=0)
    venv.reset(seed=4)
    for _ in range(5):
        before = venv.totals()
        venv.send(np.zeros((2, 24 * 24), np.int64))
        mid = venv.totals()
        venv.recv()
        after = venv.totals()
        assert all(np.array_equal(mid[k], after[k]) for k in after)
        assert (after["events"] > before["events"]).all()
    venv.close()
    with pytest.raises(ClosedError, match="totals"):
        venv.totals()
    env = pcs_v0.parallel_env(width=3, height=3, threads=1)
    env.reset(seed=0)
    env.close()
    with pytest.raises(ClosedError, match="totals"):
        env.totals()


@pytest.mark.parametrize("kw,match", [
    (dict(channels=0), "channels=0"),
    (dict(handoff_latency=0.0), "handoff_latency"),
    (dict(handoff_latency=-1), "handoff_latency"),
    (dict(next_call_mean=-1.0), "next_call_mean"),
    (dict(call_time_mean=0), "call_time_mean"),
    (dict(move_mean=-3.0), "move_mean"),
    (dict(width=2000, height=1000), "width \\* height"),
    (dict(width=1.5), "width"),
    (dict(max_guard=11), "max_guard"),
    (dict(report_interval=-2.0), "report_interval"),
    (dict(step_minutes=float("nan")), "step_minutes"),
    (dict(classic="yes"), "classic"),
    (dict(profile_amplitude=1.5), "profile_amplitude"),
    (dict(colour="red"), "unknown config key"),
])
def test_config_errors_name_the_key(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        pcs_v0.parallel_env(**kw)


def test_switches_and_classic_defaults() -> None:
    # None switches reports and moves off
    env = pcs_v0.parallel_env(report_interval=None, move_mean=None, max_cycles=10, **{
        k: v for k, v in SMALL.items() if k != "move_mean"})
    env.reset(seed=2)
    while env.agents:
        _, _, _, _, infos = env.step({a: 0 for a in env.agents})
    tot = env.totals()
    assert tot["reports_received"] == 0 and tot["moves_in"] == 0 and tot["call_attempts"] > 0
    # "auto" starts lookahead 0 on the serial executor (STPA may move it to the
    # optimistic one); the parallel executor on an explicit pool cannot run it
    auto = pcs_v0.parallel_env(classic=True, max_cycles=3)
    auto.reset()
    auto.step({a: 0 for a in auto.agents})
    assert auto.runtime.executor == "serial" and auto.stpa is not None
    with pytest.raises(ExecutorError, match="lookahead 0"):
        pcs_v0.parallel_env(classic=True, threads=2)
    opt = pcs_v0.parallel_env(classic=True, threads=2, executor="optimistic", max_cycles=3)
    opt.reset()
    opt.step({a: 0 for a in opt.agents})
    assert opt.runtime.executor == "optimistic"
    # classic without a seed uses the engine's base seed; seed 0 is the same stream
    a = pcs_v0.parallel_env(classic=True, executor="serial", max_cycles=5)
    b = pcs_v0.parallel_env(classic=True, executor="serial", max_cycles=5)
    assert _same(a.reset(), b.reset(seed=0))


def test_render_marks_drops() -> None:
    env = pcs_v0.parallel_env(width=5, height=3, channels=1, portables_per_cell=10,
                              move_mean=5.0, call_time_mean=600.0, next_call_mean=30.0, max_guard=0,
                              render_mode="rgb_array")
    env.reset(seed=0)
    seen_drop = False
    for _ in range(40):
        _, _, _, _, infos = env.step({a: 0 for a in env.agents})
        img = env.render()
        s = min(32, 512 // 5)
        assert img.shape == (3 * s, 5 * s, 3) and img.dtype == np.uint8
        drops = env.runtime.obs[0][:, 5] > 0
        for i, d in enumerate(drops):
            r, c = divmod(i, 5)
            corner = img[r * s, c * s]
            assert (tuple(corner) == (255, 0, 0)) == bool(d)
            seen_drop |= bool(d)
    assert seen_drop


def engset_blocking(sources: int, channels: int, a: float) -> float:
    """Engset call congestion: what an arriving call sees (P - 1 other sources)."""
    terms = [math.comb(sources - 1, k) * a**k for k in range(channels + 1)]
    return terms[-1] / sum(terms)


def test_engset_blocking_probability() -> None:
    """Moves off, guard 0, reports off: each cell is a finite-source loss system
    (P sources, C channels, per-idle-source offered load a = call/next).  Cells are
    independent replications; the per-cell blocking ratios (after a 1000-minute
    warm-up) must average to Engset's B within 4 standard errors (estimated from
    the spread across the 256 cells), and the standard error must be < 0.005."""
    P, C, call, nxt = 12, 5, 30.0, 60.0
    venv = pcs_v0.vector_env(1, executor="serial", width=16, height=16, channels=C,
                             portables_per_cell=P, call_time_mean=call, next_call_mean=nxt,
                             move_mean=None, report_interval=0, step_minutes=1000.0,
                             max_guard=0, max_cycles=0)
    venv.reset(seed=2024)
    zero = np.zeros((1, 256), dtype=np.int64)
    _, _, _, _, warm = venv.step(zero)
    for _ in range(30):
        _, _, _, _, end = venv.step(zero)
    new = (end["call_attempts"] - end["busy_lines"]) - (warm["call_attempts"] - warm["busy_lines"])
    blocks = end["channel_blocks"] - warm["channel_blocks"]
    ratio = (blocks / new)[0]
    est, se = ratio.mean(), ratio.std(ddof=1) / math.sqrt(ratio.size)
    b = engset_blocking(P, C, call / nxt)
    assert abs(b - 0.19015) < 1e-4
    assert se < 0.005
    assert abs(est - b) < 4 * se, (est, b, se)
    assert (end["handoff_attempts"] == 0).all() and (end["guard_blocks"] == 0).all()
    venv.close()


def test_parallel_env_pickles_as_its_configuration():
    import pickle

    from seer_env.envs import pcs_v0

    env = pcs_v0.parallel_env(width=4, height=3, step_minutes=10.0, threads=1)
    env.reset(seed=5)
    env.step({a: 1 for a in env.agents})
    copy = pickle.loads(pickle.dumps(env))
    assert type(copy) is type(env) and copy.possible_agents == env.possible_agents
    assert copy.config == env.config and copy.threads == 1
    o1, _ = env.reset(seed=9)
    o2, _ = copy.reset(seed=9)
    assert all(o1[a].tobytes() == o2[a].tobytes() for a in env.agents)
    r1 = env.step({a: 2 for a in env.agents})
    r2 = copy.step({a: 2 for a in copy.agents})
    assert r1[1] == r2[1] and r1[4] == r2[4]
    env.close()
    copy.close()


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "unwrapped"])
def test_aec_env_pickles_as_its_configuration(how: str) -> None:
    """The AEC env (and the SeerAECEnv under its order-enforcing wrapper)
    pickles and deep-copies as the ParallelEnv does: a fresh env of the same
    configuration (a TypeError about a module object, from inside, before)."""
    import copy as copying
    import pickle

    env = pcs_v0.env(width=4, height=3, step_minutes=10.0, threads=1)
    env.reset(seed=5)
    env.step(1)
    src = env.env if how == "unwrapped" else env
    dup = copying.deepcopy(src) if how == "deepcopy" else pickle.loads(pickle.dumps(src))
    assert type(dup) is type(src) and dup.env is not src.env
    if how != "unwrapped":
        with pytest.raises(StateError, match="reset"):  # fresh: not reset
            dup.step(1)
    for e in (env, dup):
        e.reset(seed=9)
    seen = []
    for e in (env, dup):
        out = []
        for _ in range(len(e.possible_agents) * 3):
            out.append(e.last()[:2])
            e.step(2)
        seen.append(out)
    assert [(o.tobytes(), r) for o, r in seen[0]] == [(o.tobytes(), r) for o, r in seen[1]]
    env.close()
    dup.close()
