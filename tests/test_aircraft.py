"""Aircraft: determinism across executors, the NumPy oracle, the PettingZoo API, bad actions.

Run: ``.venv/bin/python -m pytest -q tests/test_aircraft.py``
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from oracles.aircraft_numpy import AircraftNumpy, Xoshiro256
from seer_env import ConfigError, InvalidActionError, StateError
from seer_env._bind.runtime import rng_seed_state
from seer_env.envs import aircraft_v0
from seer_env.registry import Runtime
from seer_env.sdk import describe_config

# ---- helpers ---------------------------------------------------------------------------


def c_config(**config: Any) -> dict[str, Any]:
    """The configuration as the model completes it (derived values filled in)."""
    return describe_config(aircraft_v0.MODEL, config)


def policy(rng: np.random.Generator, obs: np.ndarray, discrete: bool) -> np.ndarray:
    """Noisy altitude/centre-holding actions from observations (..., obs_dim).

    Every seventh UAV flies wild (uniform in [-1.5, 1.5], so clipping is used
    and it dies soon); the rest hold ~45% altitude and drift, so agents die
    steadily (collisions, walls, battery) over a long run.
    """
    shape = obs.shape[:-1]
    a = 0.7 * rng.uniform(-1.0, 1.0, size=shape + (3,))
    a[..., 0] += 1.5 * (0.5 - obs[..., 0])
    a[..., 1] += 1.5 * (0.5 - obs[..., 1])
    a[..., 2] += 2.0 * (0.45 - obs[..., 2]) - 2.0 * obs[..., 5]
    wild = (np.arange(shape[-1]) % 7) == 3
    a[..., wild, :] = rng.uniform(-1.5, 1.5, size=a[..., wild, :].shape)
    if discrete:
        axis = np.argmax(np.abs(a), axis=-1)
        sign = np.take_along_axis(a, axis[..., None], axis=-1)[..., 0] < 0
        act = 1 + 2 * axis + sign
        hold = np.max(np.abs(a), axis=-1) < 0.2
        return np.where(hold, 0, act).astype(np.int32)
    return a.astype(np.float32)


def bits(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x)
    if x.dtype.kind == "f":
        return x.view(np.uint32 if x.dtype.itemsize == 4 else np.uint64)
    return x


OUTPUTS = ("obs", "reward", "terminated", "truncated", "info", "alive", "active")


def assert_same(a: Runtime, b: Runtime, where: str) -> None:
    for f in OUTPUTS:
        x, y = getattr(a, f), getattr(b, f)
        if not np.array_equal(bits(x), bits(y)):
            idx = np.argwhere(bits(x) != bits(y))[0]
            raise AssertionError(f"{where}: {f} differs at {tuple(idx)}: "
                                 f"{x[tuple(idx)]!r} vs {y[tuple(idx)]!r}")


# ---- serial vs parallel, bit for bit -------------------------------------------------

MATRIX = [
    # (num_uavs, batch, steps, max_cycles, extra config)
    (2, 1, 210, 0, {"arena_size": 50.0, "collision_radius": 4.0, "battery_thrust": 0.02}),
    (2, 3, 210, 0, {"arena_size": 60.0, "collision_radius": 6.0}),
    (17, 3, 220, 150, {"battery_thrust": 0.01}),
    (64, 1, 220, 0, {"discrete": True, "msg_every": 1}),
    (64, 3, 210, 120, {"arena_size": 150.0, "table_size": 3, "num_neighbors": 2,
                       "collision_radius": 5.0, "battery_thrust": 0.01}),
    (256, 1, 200, 0, {}),
]


@pytest.mark.parametrize("n,batch,steps,max_cycles,extra", MATRIX)
def test_serial_parallel_bit_identical(n: int, batch: int, steps: int, max_cycles: int,
                                       extra: dict[str, Any]) -> None:
    cfg = c_config(num_uavs=n, **extra)
    discrete = bool(cfg["discrete"])
    rts = [Runtime("aircraft", cfg, batch, "serial", 1, max_cycles=max_cycles)]
    rts += [Runtime("aircraft", cfg, batch, "parallel", t, max_cycles=max_cycles)
            for t in (1, 2, 4)]
    seeds = [11 * n + i for i in range(batch)]
    for rt in rts:
        rt.reset(seeds)
    for rt in rts[1:]:
        assert_same(rts[0], rt, "reset")
    rng = np.random.default_rng(n)
    deaths = 0
    for k in range(steps):
        act = policy(rng, rts[0].obs, discrete)
        done = ~rts[0].alive.any(axis=1)
        for rt in rts:
            rt.actions[:] = act
            if (~done).any():
                rt.step(~done)
            if done.any():
                rt.reset([s + 1000 * (k + 1) for s in seeds], done)
        deaths += int((rts[0].terminated & rts[0].active)[~done].sum())
        for t, rt in zip((1, 2, 4), rts[1:], strict=True):
            assert_same(rts[0], rt, f"step {k}, threads {t}")
    for i in range(batch):
        ref = rts[0].entity_states(i)
        st = rts[0].global_state(i)
        for rt in rts[1:]:
            assert rt.entity_states(i) == ref
            assert np.array_equal(bits(rt.global_state(i)), bits(st))
    assert deaths > 0
    assert rts[0].stats()["events"] == rts[1].stats()["events"]
    for rt in rts:
        rt.close()


def test_batch_independent_of_neighbours() -> None:
    """Instance i with seed s gives the same results alone or in a batch of 3."""
    cfg = c_config(num_uavs=24)
    batch = Runtime("aircraft", cfg, 3, "parallel", 2)
    alone = Runtime("aircraft", cfg, 1, "serial", 1)
    batch.reset([4, 5, 6])
    alone.reset([5])
    rng = np.random.default_rng(0)
    for _ in range(30):
        act = policy(rng, batch.obs, False)
        batch.actions[:] = act
        alone.actions[0] = act[1]
        batch.step()
        alone.step()
        assert np.array_equal(bits(batch.obs[1]), bits(alone.obs[0]))
        assert np.array_equal(bits(batch.reward[1]), bits(alone.reward[0]))
        assert np.array_equal(batch.alive[1], alone.alive[0])


# ---- the independent NumPy port ------------------------------------------------------

#: Stated tolerance of the C-vs-NumPy comparison for floating-point outputs
#: (observations are float32; positions are metres).  Discrete outputs must match
#: exactly.  On glibc/x86-64 the two usually agree bit for bit.
OBS_ATOL = 1e-5
POS_RTOL = 1e-9

ORACLE_CASES = [
    ("default-32", 32, 30, {}),
    ("dense-evict-collide", 64, 40, {"arena_size": 150.0, "table_size": 3,
                                     "num_neighbors": 2, "collision_radius": 8.0}),
    ("discrete-msg1", 48, 30, {"discrete": True, "arena_size": 200.0, "msg_every": 1,
                               "collision_radius": 6.0}),
    ("battery", 24, 32, {"battery_thrust": 0.03, "battery_idle": 0.03}),
    ("latency-3", 40, 25, {"latency": 0.3, "msg_every": 3, "arena_size": 220.0}),
    ("n256", 256, 22, {}),
]


@pytest.mark.parametrize("name,n,steps,extra", ORACLE_CASES, ids=[c[0] for c in ORACLE_CASES])
def test_matches_numpy_port(name: str, n: int, steps: int, extra: dict[str, Any]) -> None:
    cfg = c_config(num_uavs=n, **extra)
    seed = 1234 + n
    rt = Runtime("aircraft", cfg, 1, "parallel", 2)
    rt.reset([seed])
    sim = AircraftNumpy(cfg, seed)
    out = sim.reset()
    rng = np.random.default_rng(seed)
    seen_reasons: set[int] = set()
    max_table = 0
    for k in range(steps + 1):
        if k:
            if not rt.alive.any():
                break
            act = policy(rng, rt.obs[0], bool(cfg["discrete"]))
            rt.actions[0] = act
            rt.step()
            out = sim.step(act)
        where = f"{name} step {k}"
        st = rt.entity_array(0)
        # discrete quantities: exactly
        assert np.array_equal(rt.alive[0], sim.alive), where
        assert np.array_equal(rt.terminated[0].astype(bool), out["terminated"]), where
        assert np.array_equal(rt.info[0][:, 3], sim.collided.astype(float) * rt.active[0]), where
        assert np.array_equal(rt.info[0][:, 4:8], out["info"][:, 4:8]), where
        assert np.array_equal(st["crashed"], sim.crashed), where
        for i in range(n):
            got = sorted(st["nbr_id"][i][: st["table_n"][i]].tolist())
            want = sorted(e[0] for e in sim.tables[i])
            assert got == want, f"{where}: neighbour table of uav_{i}: {got} != {want}"
            max_table = max(max_table, len(want))
        # floats: within the stated tolerance
        np.testing.assert_allclose(st["pos"], sim.pos, rtol=POS_RTOL, atol=1e-9, err_msg=where)
        np.testing.assert_allclose(st["vel"], sim.vel, rtol=POS_RTOL, atol=1e-9, err_msg=where)
        np.testing.assert_allclose(st["battery"], sim.battery, rtol=POS_RTOL, err_msg=where)
        np.testing.assert_allclose(rt.obs[0], out["obs"], atol=OBS_ATOL, err_msg=where)
        np.testing.assert_allclose(rt.reward[0], out["reward"], atol=OBS_ATOL, err_msg=where)
        np.testing.assert_allclose(rt.info[0], out["info"], rtol=1e-9, atol=1e-9, err_msg=where)
        seen_reasons |= set(out["info"][out["terminated"], 4].astype(int).tolist())
    assert k >= 20, f"{name}: only {k} steps compared"
    if name == "dense-evict-collide":
        assert 4 in seen_reasons and max_table == 3, (seen_reasons, max_table)
    if name == "battery":
        assert 3 in seen_reasons, seen_reasons
    if name == "n256":
        assert max_table == cfg["table_size"]


def test_oracle_rng_matches_runtime_seeding() -> None:
    for seed, e in [(0, 0), (7, 3), (2**64 - 1, 1000)]:
        assert tuple(Xoshiro256(seed, e).s) == rng_seed_state(seed, e)


def test_entity_dtype_comes_from_the_c_table() -> None:
    rt = Runtime("aircraft", {"num_uavs": 2}, 1, "serial", 1)
    dt = rt.native.state_dtype(rt.sizes.entity_size)
    assert dt.itemsize == rt.sizes.entity_size
    assert dt.fields["pos"][0].shape == (3,) and dt.fields["pos"][1] == 0
    assert dt.fields["nbr_id"][0].shape == (8,) and dt.fields["nbr_pos"][0].shape == (8, 3)
    assert dt.fields["nbr_vel"][1] + 8 * 3 * 4 == dt.itemsize
    rt.reset([1])
    assert rt.entity_array(0)["battery"].tolist() == [1.0, 1.0]
    rt.close()


# ---- PettingZoo conformance --------------------------------------------------------


def small(**kw: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"num_uavs": 6, "max_cycles": 25, "threads": 2}
    cfg.update(kw)
    return cfg


@pytest.mark.parametrize("discrete", [False, True])
def test_parallel_api(discrete: bool) -> None:
    from pettingzoo.test import parallel_api_test

    env = aircraft_v0.parallel_env(**small(discrete=discrete))
    parallel_api_test(env, num_cycles=60)
    env.close()


def test_aec_api() -> None:
    from pettingzoo.test import api_test

    env = aircraft_v0.env(**small(arena_size=120.0, collision_radius=6.0))
    api_test(env, num_cycles=40)
    env.close()


def test_render() -> None:
    from pettingzoo.test import render_test

    render_test(lambda render_mode=None: aircraft_v0.env(**small(render_mode=render_mode)))
    env = aircraft_v0.parallel_env(**small(num_uavs=24, render_mode="rgb_array"))
    env.reset(seed=1)
    for _ in range(3):
        env.step({a: np.zeros(3, np.float32) for a in env.agents})
    frame = env.render()
    assert frame.shape == (512, 512, 3) and frame.dtype == np.uint8
    uav_blue = (frame[:, :, 2] == 255).sum()
    links = np.all(frame == (70, 140, 220), axis=-1).sum()
    assert uav_blue > 24 * 5 and links > 0
    env.close()


def test_state() -> None:
    from pettingzoo.test import state_test

    state_test(aircraft_v0.env(**small()), aircraft_v0.parallel_env(**small()))
    env = aircraft_v0.parallel_env(**small(num_targets=5))
    env.reset(seed=3)
    s = env.state()
    assert s.shape == (8 * 6 + 3 * 5,) and s.dtype == np.float32
    assert np.all(s[7:48:8] == 1.0)  # every UAV live after reset
    env.close()


def run_episode(env: Any, seed: int, steps: int) -> list[Any]:
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    trace: list[Any] = [obs, infos]
    for _ in range(steps):
        if not env.agents:
            break
        o = np.stack([obs[a] for a in env.agents])
        act = policy(rng, o[None], False)[0]
        obs, rew, term, trunc, infos = env.step(dict(zip(env.agents, act, strict=True)))
        trace.append((obs, rew, term, trunc, infos, list(env.agents), env.state()))
    return trace


def same_trace(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_trace(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_trace(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(bits(a), bits(b))
    return type(a) is type(b) and a == b


def test_multistep_determinism() -> None:
    cfg = small(num_uavs=20, max_cycles=80, arena_size=200.0)
    e1 = aircraft_v0.parallel_env(**cfg)
    e2 = aircraft_v0.parallel_env(**{**cfg, "executor": "serial", "threads": 1})
    t1 = run_episode(e1, 5, 80)
    t2 = run_episode(e2, 5, 80)
    t3 = run_episode(e1, 5, 80)  # the same env reset again
    assert same_trace(t1, t2) and same_trace(t1, t3)
    assert len(t1) > 20 and len(t1[-1][5]) < 20  # some agents left env.agents
    t4 = run_episode(e1, 6, 5)
    assert not same_trace(t1[:7], t4)
    e1.close()
    e2.close()


# ---- bad actions, clipping, config -------------------------------------------------


def test_bad_actions_change_nothing() -> None:
    cfg = small(num_uavs=6, max_cycles=60)
    ref = aircraft_v0.parallel_env(**cfg)
    env = aircraft_v0.parallel_env(**cfg)
    ref.reset(seed=9)
    env.reset(seed=9)
    down = {a: np.array([0.0, 0.0, -1.0], np.float32) for a in env.agents}
    good = {a: np.array([0.2, -0.1, 0.05], np.float32) for a in env.agents}
    good["uav_0"] = down["uav_0"]
    bad_calls: list[dict[str, Any]] = [
        {**good, "uav_1": np.array([np.nan, 0.0, 0.0], np.float32)},
        {**good, "uav_2": np.array([0.0, np.inf, 0.0], np.float32)},
        {**good, "uav_2": np.array([0.0, 0.0, -np.inf])},
        {**good, "uav_3": np.zeros(2, np.float32)},
        {**good, "uav_3": np.zeros((3, 1), np.float32)},
        {**good, "uav_99": np.zeros(3, np.float32)},
        {**good, "bogus": np.zeros(3, np.float32)},
        {a: v for a, v in good.items() if a != "uav_4"},
        {**good, "uav_5": "fast"},
    ]
    dead_seen = False
    for _ in range(60):
        acts = {a: good[a] for a in env.agents}
        for bad in bad_calls:
            bad = {a: v for a, v in bad.items() if a in env.agents or a not in good}
            if set(bad) == set(acts) and all(
                np.array_equal(np.asarray(bad[a]), np.asarray(acts[a])) for a in acts
            ):
                continue
            with pytest.raises(InvalidActionError):
                env.step(bad)
        r1 = ref.step(acts)
        if "uav_0" not in env.agents:
            # a dead agent's action is ignored (PettingZoo's convention)
            dead_seen = True
            r2 = env.step({**acts, "uav_0": np.zeros(3, np.float32)})
        else:
            r2 = env.step(acts)
        assert same_trace(list(r1), list(r2))
        assert ref.agents == env.agents
        if not env.agents:
            break
    assert dead_seen
    ref.close()
    env.close()


def test_vector_bad_actions_change_nothing() -> None:
    ref = aircraft_v0.vector_env(2, num_uavs=5, threads=2)
    env = aircraft_v0.vector_env(2, num_uavs=5, threads=2)
    ref.reset(seed=3)
    env.reset(seed=3)
    act = np.full((2, 5, 3), 0.1, np.float32)
    for bad_value in (np.nan, np.inf, -np.inf):
        bad = act.copy()
        bad[1, 2, 1] = bad_value
        with pytest.raises(InvalidActionError):
            env.step(bad)
    with pytest.raises(InvalidActionError):
        env.step(act[:, :4])
    for _ in range(5):
        r1 = ref.step(act)
        r2 = env.step(act)
        assert same_trace(list(r1), list(r2))


def test_out_of_range_actions_are_clipped() -> None:
    """Finite values outside [-1, 1] act exactly like the bound (documented)."""
    a = aircraft_v0.parallel_env(**small())
    b = aircraft_v0.parallel_env(**small())
    a.reset(seed=2)
    b.reset(seed=2)
    big = np.array([7.5, -3.0, 1e30], np.float64)
    for _ in range(5):
        ra = a.step({x: big for x in a.agents})
        rb = b.step({x: np.clip(big, -1, 1).astype(np.float32) for x in b.agents})
        assert same_trace(list(ra), list(rb))


def test_discrete_actions() -> None:
    env = aircraft_v0.parallel_env(**small(discrete=True))
    assert env.action_space("uav_0").n == 7
    env.reset(seed=0)
    with pytest.raises(InvalidActionError):
        env.step({a: 7 for a in env.agents})
    with pytest.raises(InvalidActionError):
        env.step({a: -1 for a in env.agents})
    with pytest.raises(InvalidActionError):
        env.step({a: 1.0 for a in env.agents})
    obs, *_ = env.step({a: 5 for a in env.agents})  # +z: everyone climbs
    obs2, *_ = env.step({a: 5 for a in env.agents})
    assert all(obs2[a][5] > 0 for a in obs2)
    env.close()


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"num_uavs": 0}, "num_uavs"),
        ({"num_uavs": 2.5}, "num_uavs"),
        ({"substeps": 0}, "substeps"),
        ({"comm_radius": -1.0}, "comm_radius"),
        ({"comm_radius": float("nan")}, "comm_radius"),
        ({"latency": 0.0}, "latency"),
        ({"num_neighbors": 6, "table_size": 4}, "num_neighbors"),
        ({"table_size": 9}, "table_size"),
        ({"arena_size": (100.0, 100.0)}, "arena_size"),
        ({"arena_size": (100.0, 100.0, 10.0)}, "spawn_z_min"),
        ({"spawn_z_max": 500.0}, "spawn_z_max"),
        ({"discrete": 2}, "discrete"),
        ({"msg_ttl": 0.0}, "msg_ttl"),
        ({"gust_mean": 0.0}, "gust_mean"),
        ({"wind_wavelength": -3.0}, "wind_wavelength"),
        ({"num_obs_targets": 65}, "num_obs_targets"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_config_errors_name_the_field(kw: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        aircraft_v0.parallel_env(**kw)


def test_spaces_and_defaults() -> None:
    env = aircraft_v0.parallel_env(num_uavs=3)
    lay = aircraft_v0.obs_layout(env.config)
    assert env.possible_agents == ["uav_0", "uav_1", "uav_2"]
    space = env.observation_space("uav_1")
    assert space.shape == (7 + 8 * 4 + 4 * 4 + 16,) and lay["rays"].stop == space.shape[0]
    assert env.observation_space("uav_2") is space
    assert env.action_space("uav_0").shape == (3,)
    assert env.max_cycles == 500 and env.sizes.lookahead == pytest.approx(0.1)
    with pytest.raises(StateError):
        env.step({})
    obs, _ = env.reset(seed=1)
    assert all(space.contains(o) for o in obs.values())
    env.close()


def test_verify_and_registry() -> None:
    import seer_env

    report = seer_env.verify("aircraft_v0", steps=40, threads=2, num_envs=2, seed=3,
                             num_uavs=12, arena_size=120.0)
    assert report.identical, str(report)
    venv = seer_env.make("aircraft_v0", api="vector", num_envs=2, num_uavs=4, threads=1)
    obs, infos = venv.reset(seed=0)
    assert obs.shape == (2, 4, venv.sizes.obs_dim) and infos["alive"].all()
    venv.close()


def test_vector_autoreset_after_all_uavs_end() -> None:
    venv = aircraft_v0.vector_env(2, num_uavs=3, threads=2)
    venv.reset(seed=5)
    down = np.zeros((2, 3, 3), np.float32)
    down[0, :, 2] = -1.0  # instance 0 dives into the ground; instance 1 hovers
    ended = np.zeros(3, dtype=bool)
    reasons = np.zeros(3)
    for _ in range(60):
        obs, rew, term, trunc, infos = venv.step(down)
        new = term[0] & ~ended
        reasons[new] = infos["crash_reason"][0][new]
        ended |= term[0]
        if not infos["alive"][0].any():
            break
    assert ended.all() and infos["alive"][1].all()
    assert (reasons == 1).all()  # ground impact
    obs, rew, term, trunc, infos = venv.step(down)  # autoreset of instance 0
    assert infos["alive"][0].all() and not term[0].any() and (rew[0] == 0).all()
    assert np.all(obs[0][:, 2] >= 0.2 - 1e-6)  # fresh spawn altitude (>= spawn_z_min / Z)
    venv.close()
