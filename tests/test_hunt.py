"""Hunt (``envs/hunt_v0``) on the raw runtime against its independent NumPy
oracle (``oracles/hunt_numpy.py``), bit for bit: observations, rewards,
terminations, truncations, infos, masks and global states, with legal random
actions drawn from the masks and, with ``enforce_masks=False``, random
actions the masks may forbid; on the serial, parallel and optimistic
executors with several instances.  Forbidden actions are refused naming the
agent; configuration errors name the parameter."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from oracles.hunt_numpy import HuntOracle
from seer_env._bind.runtime import Runtime
from seer_env.check import check
from seer_env.envs import hunt_v0
from seer_env.errors import ConfigError, InvalidActionError

MODEL = hunt_v0.MODEL
OUTPUTS = ("obs", "reward", "terminated", "truncated", "info", "mask")

#: (config, seeds, max_cycles) for the oracle matrix
CONFIGS: list[tuple[dict[str, Any], list[int], int]] = [
    ({}, [1, 2, 3], 40),
    (dict(width=6, height=5, torus=0, num_predators=2, num_prey=3, obstacle_density=0.3,
          view=1, catch_need=2), [4, 5, 6], 30),
    (dict(width=5, height=5, num_predators=4, num_prey=1, obstacle_density=0.2, view=0),
     [7, 8, 9], 0),
    (dict(width=9, height=7, num_predators=6, num_prey=5, obstacle_density=0.4, view=3,
          catch_need=3, catch_reward=2.5, step_cost=0.03, forbidden_penalty=0.7),
     [10, 11, 12], 25),
]
CONFIG_IDS = ["default", "bounded_need2", "small_dense", "big_need3"]
EXECUTORS = [("serial", 1), ("parallel", 2), ("parallel", 3), ("optimistic", 2),
             ("optimistic", 3)]


def runtime(cfg: dict[str, Any], B: int, executor: str = "serial", threads: int = 1,
            **kw: Any) -> Runtime:
    return Runtime(MODEL.native, cfg, num_instances=B, executor=executor, threads=threads,
                   oversubscribe=True, **kw)


def draw_actions(rt: Runtime, rng: np.random.Generator, legal: bool) -> np.ndarray:
    """(B, A, 2) actions: a move and a signal per agent (prey: the move only
    is used); ``legal``: moves the masks allow, uniformly; else any move."""
    B, A = rt.reward.shape
    u = rng.random((B, A, 5))
    moves = (np.where(rt.mask[:, :, :5], u, -1.0) if legal else u).argmax(-1)
    acts = np.stack([moves, rng.integers(0, 2, (B, A))], axis=-1).astype(np.int32)
    return acts


def write_actions(rt: Runtime, acts: np.ndarray, P: int) -> None:
    predators, prey = rt.group_actions
    predators[:] = acts[:, :P]
    prey[:] = acts[:, P:, 0]


def compare(rt: Runtime, outs: list[dict[str, np.ndarray]], where: str) -> None:
    for i, o in enumerate(outs):
        for name in OUTPUTS:
            got, want = getattr(rt, name)[i], o[name]
            assert got.tobytes() == want.tobytes(), (where, i, name, got, want)
        assert rt.global_state(i).tobytes() == o["state"].tobytes(), (where, i, "state")


def check_bounds(rt: Runtime) -> None:
    buf, sz = MODEL.native.describe(rt.config)
    for g, grp in enumerate(sz.groups):
        lo, hi = MODEL.native.group_bounds(buf, sz, g)
        obs = rt.obs[:, grp.first:grp.first + grp.count, :grp.obs_dim]
        assert (obs >= lo).all() and (obs <= hi).all(), grp.name
        assert not rt.obs[:, grp.first:grp.first + grp.count, grp.obs_dim:].any()


def run_against_oracle(cfg: dict[str, Any], seeds: list[int], max_cycles: int, steps: int,
                       executor: str = "serial", threads: int = 1, enforce: bool = True,
                       action_seed: int = 0) -> dict[str, int]:
    """Step the runtime and one oracle per instance in lockstep for ``steps``
    steps, comparing every boundary; an instance whose agents are all done is
    reset with a new seed.  Returns counters of what happened."""
    B = len(seeds)
    rt = runtime(cfg, B, executor, threads, max_cycles=max_cycles, enforce_masks=enforce)
    P = int(rt.config["num_predators"])
    oracles = [HuntOracle(cfg, max_cycles=max_cycles) for _ in seeds]
    seeds = list(seeds)
    rt.reset(seeds)
    outs = [o.reset(s) for o, s in zip(oracles, seeds, strict=True)]
    compare(rt, outs, "reset")
    rng = np.random.default_rng(action_seed)
    seen = dict(forbidden_choices=0, forbidden_taken=0, catches=0, all_caught=0, truncations=0,
                resets=0)
    try:
        for k in range(steps):
            done = ~rt.alive.any(axis=1)
            if done.any():
                seeds = [s + 1000 if d else s for s, d in zip(seeds, done, strict=True)]
                rt.reset(seeds, mask=done)
                for i in np.flatnonzero(done):
                    outs[i] = oracles[i].reset(seeds[i])
                compare(rt, outs, f"reset before step {k}")
                seen["resets"] += int(done.sum())
            live = rt.alive[:, :, None]
            seen["forbidden_choices"] += int((~rt.mask[:, :, :5] & live).sum())
            acts = draw_actions(rt, rng, legal=enforce)
            seen["forbidden_taken"] += int(
                (~np.take_along_axis(rt.mask, acts[:, :, :1], -1) & live).sum())
            write_actions(rt, acts, P)
            rt.step()
            outs = [o.step(acts[i]) for i, o in enumerate(oracles)]
            compare(rt, outs, f"step {k}")
            check_bounds(rt)
            prey_done = rt.terminated[:, P:]
            seen["catches"] += int(prey_done.sum())
            seen["all_caught"] += int(rt.terminated[:, :P].all(axis=1).sum())
            seen["truncations"] += int(rt.truncated.any(axis=1).sum())
    finally:
        rt.close()
    return seen


def test_groups_are_declared() -> None:
    buf, sz = MODEL.native.describe({"num_predators": 3, "num_prey": 4, "view": 1})
    pred, prey = sz.groups
    assert (pred.name, pred.first, pred.count, prey.name, prey.first, prey.count) == (
        "predator", 0, 3, "prey", 3, 4)
    assert (pred.obs_dim, pred.action_kind, pred.nvec, pred.mask_len) == (
        5 + 3 + 3 * 9, "multi_discrete", (5, 2), 7)
    assert (prey.obs_dim, prey.action_kind, prey.action_n, prey.mask_len) == (
        4 + 2 * 9, "discrete", 5, 5)
    assert pred.info_names == ("catches", "forbidden_moves", "signals_sent")
    assert prey.info_names == ("steps_alive", "forbidden_moves")
    assert (sz.num_groups, sz.obs_dim, sz.mask_dim, sz.info_dim) == (2, 35, 7, 3)
    assert sz.state_dim == 3 * 7 + 64 and sz.lookahead == 0.25 and sz.step_duration == 1.0
    assert MODEL.native.agent_names(buf, sz.num_agents, sz) == [
        "predator_0", "predator_1", "predator_2", "prey_0", "prey_1", "prey_2", "prey_3"]
    lo, hi = MODEL.native.group_bounds(buf, sz, 0)
    assert lo.shape == (35,) and hi[5 + 3 + 9:5 + 3 + 18].tolist() == [4.0] * 9
    assert MODEL.native.max_cycles == 100


@pytest.mark.parametrize("cfg,seeds,max_cycles", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("executor,threads", EXECUTORS,
                         ids=[f"{e}{t}" for e, t in EXECUTORS])
def test_legal_actions_match_the_oracle(cfg: dict[str, Any], seeds: list[int], max_cycles: int,
                                        executor: str, threads: int) -> None:
    seen = run_against_oracle(cfg, seeds, max_cycles, 80, executor, threads, action_seed=3)
    assert seen["forbidden_taken"] == 0
    if cfg.get("obstacle_density", 0.15) >= 0.15:
        assert seen["forbidden_choices"] > 0  # the masks rule moves out


@pytest.mark.parametrize("cfg,seeds,max_cycles", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("executor,threads", EXECUTORS,
                         ids=[f"{e}{t}" for e, t in EXECUTORS])
def test_unenforced_masks_match_the_oracle(cfg: dict[str, Any], seeds: list[int],
                                           max_cycles: int, executor: str, threads: int) -> None:
    seen = run_against_oracle(cfg, seeds, max_cycles, 80, executor, threads, enforce=False,
                              action_seed=5)
    assert seen["forbidden_taken"] > 0  # forbidden moves reached act (a stay and a penalty)


def test_the_runs_cover_catches_episode_ends_and_truncation() -> None:
    small = run_against_oracle(*CONFIGS[2][:3], steps=150, action_seed=1)
    assert small["catches"] > 0 and small["all_caught"] > 0 and small["resets"] > 0
    dflt = run_against_oracle(*CONFIGS[0][:3], steps=90, action_seed=2)
    assert dflt["truncations"] > 0 and dflt["resets"] > 0


def test_the_oracle_follows_the_seed_and_the_batch_does_not_matter() -> None:
    cfg = CONFIGS[3][0]
    alone, batch = runtime(cfg, 1), runtime(cfg, 3)
    alone.reset([11])
    batch.reset([10, 11, 12])
    assert alone.obs[0].tobytes() == batch.obs[1].tobytes()
    assert batch.obs[0].tobytes() != batch.obs[1].tobytes()  # other map, other start cells
    assert alone.global_state(0).tobytes() == batch.global_state(1).tobytes()
    alone.close()
    batch.close()


def forbidden_agents(rt: Runtime, P: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(instance, agent, move) of a predator and of a prey with a forbidden move."""
    found: dict[bool, tuple[int, int, int]] = {}
    for i, a, m in zip(*np.nonzero(~rt.mask[:, :, :5]), strict=True):
        found.setdefault(bool(a < P), (int(i), int(a), int(m)))
    return found[True], found[False]


def test_a_forbidden_move_is_refused_naming_the_agent() -> None:
    cfg = dict(width=7, height=7, num_predators=3, num_prey=3, obstacle_density=0.45, view=1)
    rt, twin = runtime(cfg, 3), runtime(cfg, 3)
    for r in (rt, twin):
        r.reset([21, 22, 23])
    P = 3
    (pi, pa, pm), (qi, qa, qm) = forbidden_agents(rt, P)
    legal = draw_actions(twin, np.random.default_rng(0), legal=True)
    write_actions(twin, legal, P)
    obs = rt.obs.copy()

    bad = legal.copy()
    bad[pi, pa, 0] = pm
    write_actions(rt, bad, P)
    with pytest.raises(InvalidActionError,
                       match=rf"'predator_{pa}' \(agent {pa} of instance {pi}\) at step 0: "
                             rf"component 0 is {pm}, which its action mask forbids"):
        rt.step()
    bad = legal.copy()
    bad[qi, qa, 0] = qm
    write_actions(rt, bad, P)
    with pytest.raises(InvalidActionError,
                       match=rf"'prey_{qa - P}' \(agent {qa} of instance {qi}\) at step 0: "
                             rf"{qm} is forbidden by its action mask"):
        rt.step()
    assert [rt.step_index(i) for i in range(3)] == [0, 0, 0]
    assert rt.obs.tobytes() == obs.tobytes()
    # nothing changed: the legal actions give the twin's outputs
    write_actions(rt, legal, P)
    rt.step()
    twin.step()
    for name in OUTPUTS:
        assert getattr(rt, name).tobytes() == getattr(twin, name).tobytes(), name
    rt.close()
    twin.close()


def test_unenforced_forbidden_move_is_a_stay_with_a_penalty() -> None:
    cfg = dict(width=7, height=7, num_predators=3, num_prey=3, obstacle_density=0.45, view=1,
               forbidden_penalty=0.5, step_cost=0.25)
    rt = runtime(cfg, 3, enforce_masks=False)
    rt.reset([21, 22, 23])
    P = 3
    (pi, pa, pm), (qi, qa, qm) = forbidden_agents(rt, P)
    acts = np.zeros((3, 6, 2), np.int32)  # everyone stays ...
    acts[pi, pa, 0], acts[qi, qa, 0] = pm, qm  # ... but two try a forbidden move
    pos = np.ones(3 * 6 + 49, bool)
    pos[2:3 * 6:3] = False  # the positions in the global state, not the caught flags
    before = [rt.global_state(i)[pos] for i in range(3)]
    write_actions(rt, acts, P)
    rt.step()
    for i in range(3):  # nobody moved
        assert rt.global_state(i)[pos].tobytes() == before[i].tobytes()
    forb = rt.info[:, :, 1]
    assert forb[pi, pa] == 1 and forb[qi, qa] == 1 and forb.sum() == 2
    # a predator: -step_cost - penalty (+ catch_reward per catch); a prey: step_cost - penalty
    catches = rt.info[pi, pa, 0]
    assert rt.reward[pi, pa] == np.float32(1.0 * catches - 0.25 - 0.5)
    if not rt.terminated[qi, qa]:
        assert rt.reward[qi, qa] == np.float32(0.25 - 0.5)
    rt.close()


def test_a_prey_caught_terminates_and_the_predators_end_with_the_last() -> None:
    # 3x3 torus, no obstacles, one prey: predators that land on its cell catch it
    cfg = dict(width=3, height=3, num_predators=2, num_prey=1, obstacle_density=0.0, view=1)
    rt = runtime(cfg, 1)
    o = HuntOracle(cfg)
    rt.reset([5])
    o.reset(5)
    rng = np.random.default_rng(9)
    for _ in range(200):
        acts = draw_actions(rt, rng, legal=True)
        write_actions(rt, acts, 2)
        rt.step()
        out = o.step(acts[0])
        assert rt.reward[0].tobytes() == out["reward"].tobytes()
        if rt.terminated[0, 2]:
            break
    assert rt.terminated[0].all() and not rt.alive[0].any()
    credited = rt.info[0, :2, 0]
    assert credited.sum() >= 1 and rt.reward[0, 2] == np.float32(0.01 - 1.0)
    assert rt.reward[0, :2].tolist() == [np.float32(c - 0.01) for c in credited]
    rt.close()


@pytest.mark.parametrize("over,match", [
    (dict(catch_need=4), r"hunt: catch_need \(4\) must not exceed num_predators \(3\)"),
    (dict(view=3, width=6), r"hunt: view \(3\)"),
    (dict(num_predators=5, num_prey=5, width=3, height=3, view=1),
     r"hunt: num_predators \+ num_prey \(10\) must not exceed width \* height \(9\)"),
    (dict(width=2), r"hunt: width=2"),
    (dict(num_predators=65), r"hunt: num_predators=65"),
    (dict(obstacle_density=0.95), r"hunt: obstacle_density"),
    (dict(torus=2), r"hunt: torus"),
])
def test_config_errors_name_the_parameter(over: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        runtime(over, 1)


def test_the_contract_checker_finds_no_breach() -> None:
    # every pass finds nothing; the bounds pass checks each agent's row against its
    # own group's bounds (a prey's offsets are in [-1, 1], a predator's are not)
    report = check("hunt_v0", dict(torus=0, obstacle_density=0.35, catch_need=2), quick=True,
                   steps=12)
    assert report.ok, str(report)


def test_hunt_renders_the_grid_from_its_global_state() -> None:
    """``rgb_array`` frames show the obstacles, the predators and the prey
    not caught where the global state puts them; the frame changes as they
    move; an env without a render mode does not render."""
    from seer_env.envs import hunt_v0

    env = hunt_v0.parallel_env(width=16, height=12, num_predators=3, num_prey=2,
                               render_mode="rgb_array", max_cycles=50)
    assert "rgb_array" in env.metadata["render_modes"] and "human" in env.metadata["render_modes"]
    env.reset(seed=3)
    frames = []
    while env.agents and len(frames) < 6:
        frame = env.render()
        assert frame.shape == (12 * 32, 16 * 32, 3) and frame.dtype == np.uint8
        gs = env.state()
        walls = gs[15:].reshape(12, 16)  # after 3 floats for each of the 5 agents
        cs = 32
        for y, x in zip(*np.nonzero(walls > 0.5), strict=True):
            assert tuple(frame[y * cs + cs // 2, x * cs + cs // 2]) == (70, 70, 78)
        ag = gs[:15].reshape(5, 3)
        for e in range(5):
            x, y = int(round(ag[e, 0] * 16)) % 16, int(round(ag[e, 1] * 12)) % 12
            centre = tuple(frame[y * cs + cs // 2, x * cs + cs // 2])
            if e < 3:
                assert centre == (200, 40, 40)
            elif ag[e, 2] > 0.5 and not any(
                    int(round(ag[k, 0] * 16)) % 16 == x and int(round(ag[k, 1] * 12)) % 12 == y
                    for k in range(3)):
                assert centre == (40, 150, 70)
        frames.append(frame)
        env.step({a: env.action_space(a).sample() for a in env.agents})
    assert any((a != b).any() for a, b in itertools.pairwise(frames))
    env.close()
    # PettingZoo's own render test (it failed: "hunt_v0 cannot render")
    from pettingzoo.test import render_test

    render_test(lambda render_mode=None: hunt_v0.env(width=10, height=8, max_cycles=20,
                                                     render_mode=render_mode))
