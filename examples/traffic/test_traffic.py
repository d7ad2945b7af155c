"""Tests of the traffic model: run them with ``python -m pytest`` in this folder."""

from pathlib import Path

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

import seer_env

HERE = Path(__file__).resolve().parent

#: A small, overloaded network: intersections gridlock within a few steps.
JAM = {"queue_capacity": 6, "gridlock": 12, "arrival_mean": 2.0}
#: Heavy but slower: the first intersection gridlocks after a dozen steps of
#: north-south green everywhere, the last ones much later.
SLOW_JAM = {"queue_capacity": 10, "gridlock": 25, "arrival_mean": 3.0}


def model():
    return seer_env.sdk.load(HERE)


@pytest.mark.parametrize("config", [{}, {"width": 4, "height": 2}, JAM],
                         ids=["default", "4x2", "jam"])
def test_keeps_the_contract(config):
    report = seer_env.check(HERE, config, progress=False)
    assert report.ok, str(report)


@pytest.mark.parametrize("config", [{}, JAM], ids=["default", "jam"])
def test_pettingzoo_api(config):
    parallel_api_test(model().parallel_env(max_cycles=30, **config), num_cycles=40)


@pytest.mark.parametrize("config", [{"width": 3, "height": 3}, {"width": 4, "height": 2, **JAM}],
                         ids=["default", "jam-4x2"])
def test_serial_and_parallel_agree(config):
    report = seer_env.verify(str(HERE), steps=120, threads=2, num_envs=3, **config)
    assert report.identical, str(report)


def test_bad_configurations_are_refused():
    m = model()
    with pytest.raises(seer_env.ConfigError, match="p_left"):
        m.parallel_env(p_left=0.7, p_right=0.4)
    with pytest.raises(seer_env.ConfigError, match="gridlock"):
        m.parallel_env(queue_capacity=10, gridlock=40)
    with pytest.raises(seer_env.ConfigError, match="switch_time"):
        m.parallel_env(switch_time=10.0)


def test_spaces_and_names():
    env = model().parallel_env(width=4, height=2)
    assert env.possible_agents[:5] == ["int_0", "int_1", "int_2", "int_3", "int_4"]
    space = env.observation_space("int_6")
    assert space.shape == (15,) and (space.low == 0).all() and (space.high == 1).all()
    assert env.action_space("int_6").n == 2
    assert env.state_space.shape == (5 * 8,)
    env.close()


def test_a_gridlocked_intersection_ends_while_the_others_go_on():
    m = model()
    env = m.parallel_env(**SLOW_JAM)
    env.reset(seed=0)
    penalty = m.defaults["gridlock_penalty"]
    dead: list[str] = []
    steps = 0
    while not dead and steps < 360:
        # north-south green everywhere: the east-west approaches fill up
        _, rew, term, trunc, _ = env.step({a: 0 for a in env.agents})
        steps += 1
        assert not any(trunc.values())
        dead = [a for a, t in term.items() if t]
    assert 1 < steps < 100, steps
    assert 0 < len(env.agents) == 9 - len(dead)  # the others are still running
    for a in dead:
        assert rew[a] <= -penalty  # the one-off gridlock penalty
    idx = [env.possible_agents.index(a) for a in dead]
    switches = env.runtime.entity_array(0)["switches"][idx].copy()
    for _ in range(10):
        _, rew, term, _, infos = env.step({a: 0 for a in env.agents})
        assert set(rew) == set(term)
        assert all(a not in rew for a in dead)
    st = env.runtime.entity_array(0)
    # the dead intersections run on under fixed-time control (30 s cycles), the
    # live ones, told to keep north-south green, never switched
    assert (st["switches"][idx] >= switches + 3).all()
    live = [env.possible_agents.index(a) for a in env.agents]
    assert (st["switches"][live] == 0).all()
    env.close()


def _conservation(venv, config):
    """Cars that entered = queued + driving between intersections + completed,
    and the cars driving are exactly the pending CAR events."""
    w, h = config.get("width", 3), config.get("height", 3)
    for i in range(venv.num_envs):
        st = venv.runtime.entity_array(i)
        entered, completed = int(st["entered"].sum()), int(st["completed"].sum())
        queued = int(st["queue"].sum())
        assert (st["queue"] <= config.get("queue_capacity", 20)).all()
        # links: sent through a side minus arrived at the neighbour's approach
        driving = 0
        for e in range(w * h):
            r, c = divmod(e, w)
            for side, (dr, dc) in enumerate([(-1, 0), (0, 1), (1, 0), (0, -1)]):
                if 0 <= r + dr < h and 0 <= c + dc < w:
                    nb = (r + dr) * w + c + dc
                    on_link = int(st["sent"][e, side]) - int(st["arrived"][nb, (side + 2) % 4])
                    assert on_link >= 0
                    driving += on_link
        assert entered == queued + driving + completed
        # pending events: one ARRIVAL per edge approach, one FIXED_SWITCH per
        # intersection, the DISCHARGEs and one CAR per car on a link
        pending = venv.runtime.pending_events(i)
        assert pending == 2 * (w + h) + w * h + int(st["discharge_pending"].sum()) + driving


@pytest.mark.parametrize("config", [{}, {"width": 4, "height": 2, **JAM}],
                         ids=["default", "jam-4x2"])
def test_cars_are_conserved(config):
    venv = model().vector_env(2, threads=2, autoreset_mode="disabled", **config)
    venv.reset(seed=3)
    rng = np.random.default_rng(3)
    steps = 0
    for _ in range(120):
        if not venv.alive.any(axis=1).all():
            break
        steps += 1
        _, _, _, _, infos = venv.step(rng.integers(0, 2, (2, venv.num_agents)))
        _conservation(venv, config)
        if infos["alive"].all():  # the infos of every agent are real: the same balance
            assert np.array_equal(
                infos["entered"].sum(axis=1),
                (infos["queued"] + infos["in_transit"] + infos["completed"]).sum(axis=1))
    # every car that came to the edge either entered or was turned away: the
    # Poisson streams deliver 2 (w + h) * t / arrival_mean cars in t seconds
    states = [venv.runtime.entity_array(i) for i in range(2)]
    entered = sum(int(st["entered"].sum()) for st in states)
    rejected = sum(int(st["rejected"].sum()) for st in states)
    w, h = config.get("width", 3), config.get("height", 3)
    expected = 2 * 2 * (w + h) * steps * 10.0 / config.get("arrival_mean", 6.0)
    assert abs(entered + rejected - expected) < 5 * np.sqrt(expected)
    if config:
        assert rejected > 0
    venv.close()


def test_a_sensible_fixed_policy_beats_a_bad_one():
    m = model()
    mean = {}
    for name in ("north-south only", "alternate", "longest queue"):
        venv = m.vector_env(2, threads=1, autoreset_mode="disabled")
        obs, _ = venv.reset(seed=11)
        total = 0.0
        for k in range(120):
            if name == "north-south only":
                act = np.zeros((2, 9), np.int64)
            elif name == "alternate":
                act = np.full((2, 9), k % 2)
            else:  # green for the direction with more queued cars
                act = (obs[..., 1] + obs[..., 3] > obs[..., 0] + obs[..., 2]).astype(np.int64)
            obs, rew, _, _, _ = venv.step(act)
            total += float(rew.sum())
        mean[name] = total / (120 * 2 * 9)
        venv.close()
    assert mean["longest queue"] > mean["alternate"] > mean["north-south only"], mean
    assert -0.2 < mean["alternate"] < 0.0, mean


def test_agent_vector_env_random_policy():
    envs = model().agent_vector_env(2, threads=2, width=3, height=2)
    obs, infos = envs.reset(seed=0)
    assert obs.shape == (12, 15)
    envs.action_space.seed(0)
    for _ in range(25):
        obs, rew, term, trunc, infos = envs.step(envs.action_space.sample())
        assert obs.shape == (12, 15) and rew.shape == (12,)
        assert np.isfinite(rew).all() and (rew <= 0).all()
        assert ((obs >= 0) & (obs <= 1)).all()
        assert set(envs.info_names) >= {"queued", "entered", "rejected", "completed"}
    envs.close()
