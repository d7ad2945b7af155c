"""Agent groups, action masks and multi-discrete actions in the runtime and
its bindings (the ``teams`` test model, ``tests/models/teams/teams.c``):
what a model declares, the masks it computes (bit-identical on every
executor), actions the masks or ranges forbid (refused before anything
changes), and models that break the rules (refused with what to fix)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from seer_env._bind.runtime import Runtime
from seer_env.errors import ConfigError, ContractViolation, InvalidActionError, ModelError
from tests.models import load as load_test_model

TEAMS = load_test_model("teams")
H, R, S = 2, 3, 1  # the default group sizes


def runtime(cfg: dict[str, Any] | None = None, B: int = 2, executor: str = "serial",
            threads: int = 1, **kw: Any) -> Runtime:
    return Runtime(TEAMS.native, cfg or {}, num_instances=B, executor=executor,
                   threads=threads, oversubscribe=True, **kw)


def expected_mask(a: int, k: int, strict: bool = False) -> np.ndarray:
    """The mask teams.c computes for agent a after k steps (hunters: 5 choices;
    runners: 3 + 2; the scout has none: all ones)."""
    row = np.ones(5, bool)
    if a < H:
        row[(k + a) % 5] = False
        if strict:
            row[4] = False
    elif a < H + R:
        row[(k + a) % 3] = False
        if strict:
            row[3 + k % 2] = False
    return row


def legal_actions(rt: Runtime, rng: np.random.Generator) -> None:
    """Random actions every mask allows, written into the runtime's buffers."""
    B = rt.mask.shape[0]
    hunters, runners, scouts = rt.group_actions
    for i in range(B):
        for a in range(H):
            hunters[i, a] = rng.choice(np.flatnonzero(rt.mask[i, a, :5]))
        for j in range(R):
            m = rt.mask[i, H + j]
            runners[i, j, 0] = rng.choice(np.flatnonzero(m[:3]))
            runners[i, j, 1] = rng.choice(np.flatnonzero(m[3:5]))
    scouts[:] = rng.uniform(-2, 2, scouts.shape).astype(np.float32)


def test_groups_are_what_the_model_declares() -> None:
    buf, sz = TEAMS.native.describe({})
    assert [(g.name, g.first, g.count) for g in sz.groups] == [
        ("hunter", 0, H), ("runner", H, R), ("scout", H + R, S)]
    hunter, runner, scout = sz.groups
    assert (hunter.obs_dim, hunter.action_kind, hunter.action_n, hunter.mask_len) == (
        3, "discrete", 5, 5)
    assert (runner.obs_dim, runner.action_kind, runner.nvec, runner.mask_len) == (
        2, "multi_discrete", (3, 2), 5)
    assert (scout.obs_dim, scout.action_kind, scout.action_dim, scout.mask_len) == (
        4, "box", 2, 0)
    assert (scout.action_low, scout.action_high) == (-1.0, 1.0)
    assert hunter.info_names == ("steps",) and runner.info_names == ("steps", "c0")
    assert scout.info_names == ()
    # the rows' strides are the largest group's
    assert (sz.num_groups, sz.obs_dim, sz.action_dim, sz.info_dim, sz.mask_dim) == (3, 4, 2, 2, 5)
    assert TEAMS.native.agent_names(buf, sz.num_agents, sz) == [
        "hunter_0", "hunter_1", "runner_0", "runner_1", "runner_2", "scout_0"]
    lo, hi = TEAMS.native.group_bounds(buf, sz, 2)
    assert lo.tolist() == [0.0] * 4 and hi.tolist() == [float(6 + 6 + 8)] * 4
    # no scouts: two groups
    _, sz2 = TEAMS.native.describe({"num_scouts": 0})
    assert [g.name for g in sz2.groups] == ["hunter", "runner"] and sz2.obs_dim == 3


def test_masks_follow_the_model_every_step() -> None:
    rt = runtime({"strict": 1}, B=2)
    rt.reset([3, 4])
    rng = np.random.default_rng(0)
    for k in range(5):
        for a in range(H + R + S):
            want = expected_mask(a, k, strict=True)
            assert rt.mask[:, a].tolist() == [want.tolist()] * 2, (k, a)
        # observations: only the group's own elements, the rest of the row 0
        assert rt.obs[0, 0].tolist() == [0.0, k, 3 % 5, 0.0]
        assert rt.obs[0, H].tolist() == [H, k, 0.0, 0.0]
        assert rt.obs[1, H + R].tolist() == [H + R, k, 4 % 3, 1.0]
        legal_actions(rt, rng)
        rt.step()
    rt.close()


def run(executor: str, threads: int, seed: int = 7, steps: int = 6) -> list[np.ndarray]:
    rt = runtime({"life": 4, "num_hunters": 5, "num_runners": 6, "num_scouts": 3}, B=3,
                 executor=executor, threads=threads)
    global H, R
    H, R = 5, 6
    try:
        rt.reset([seed, seed + 1, seed + 2])
        rng = np.random.default_rng(seed)
        out = []
        for _ in range(steps):
            if not rt.alive.any():
                rt.reset([seed, seed + 1, seed + 2])
            legal_actions(rt, rng)
            rt.step()
            out += [rt.obs.copy(), rt.reward.copy(), rt.mask.copy(), rt.info.copy(),
                    rt.terminated.copy()]
        return out
    finally:
        H, R = 2, 3
        rt.close()


@pytest.mark.parametrize("executor,threads", [("parallel", 2), ("parallel", 3),
                                              ("optimistic", 2)])
def test_masks_and_groups_are_the_same_on_every_executor(executor: str, threads: int) -> None:
    want = run("serial", 1)
    got = run(executor, threads)
    assert len(got) == len(want)
    for a, b in zip(want, got, strict=True):
        assert a.tobytes() == b.tobytes()


def test_a_forbidden_action_is_refused_before_anything_changes() -> None:
    rt, twin = runtime(), runtime()
    for r in (rt, twin):
        r.reset([1, 2])
    rng = np.random.default_rng(1)
    legal_actions(twin, rng)
    rt.actions[:] = twin.actions
    # hunter_1 of instance 1 takes choice (0 + 1) % 5 = 1, which its mask forbids
    rt.group_actions[0][1, 1] = 1
    obs = rt.obs.copy()
    with pytest.raises(InvalidActionError,
                       match=r"'hunter_1' \(agent 1 of instance 1\) at step 0: 1 is forbidden "
                             r"by its action mask"):
        rt.step()
    assert rt.step_index(1) == 0 and rt.obs.tobytes() == obs.tobytes()
    # a runner's component outside its range, then one its mask forbids
    rt.actions[:] = twin.actions
    rt.group_actions[1][0, 2, 1] = 2
    with pytest.raises(InvalidActionError, match=r"'runner_2'.*component 1 is 2, outside \[0, 2\)"):
        rt.step()
    rt.actions[:] = twin.actions
    rt.group_actions[1][0, 0, 0] = (0 + H) % 3
    with pytest.raises(InvalidActionError,
                       match=r"'runner_0'.*at step 0: component 0 is 2, which its action mask "
                             r"forbids"):
        rt.step()
    # then the legal actions: the outputs of a twin that never saw the bad ones
    rt.actions[:] = twin.actions
    rt.step()
    twin.step()
    for name in ("obs", "reward", "mask", "info", "terminated"):
        assert getattr(rt, name).tobytes() == getattr(twin, name).tobytes(), name
    rt.close()
    twin.close()


def test_actions_of_finished_agents_are_not_checked_against_masks() -> None:
    rt = runtime({"life": 1})
    rt.reset([1, 2])
    legal_actions(rt, np.random.default_rng(2))
    rt.step()
    assert rt.terminated.all() and rt.mask.all()  # rows of agents that do not act: all 1


def test_box_actions_of_a_group_are_clipped_to_its_bounds() -> None:
    rt = runtime()
    rt.reset([1, 2])
    legal_actions(rt, np.random.default_rng(3))
    rt.group_actions[2][:] = [[[5.0, -5.0]], [[0.25, -0.5]]]
    rt.step()
    assert rt.group_actions[2].tolist() == [[[1.0, -1.0]], [[0.25, -0.5]]]
    assert rt.reward[0, H + R] == pytest.approx(0.0 + (H + R) / 8)
    legal_actions(rt, np.random.default_rng(4))
    rt.group_actions[2][0, 0, 0] = np.nan
    with pytest.raises(InvalidActionError, match=r"scout_0.*element 0 is nan"):
        rt.step()


def test_a_mask_with_no_allowed_choice_fails_the_step() -> None:
    rt = runtime({"bad": 1})
    rt.reset([1, 2])
    rng = np.random.default_rng(4)
    for _ in range(2):
        legal_actions(rt, rng)
        if rt.step_index(0) == 1:
            with pytest.raises(ModelError, match=r"model 'teams': action_mask of agent 0 "
                                                 r"\('hunter_0' of group 'hunter'\) of instance "
                                                 r"0 allows no choice at step 1"):
                rt.step()
        else:
            rt.step()
    with pytest.raises(Exception, match="needs a reset"):
        rt.step()


def test_the_checking_mode_names_a_mask_hook_that_writes_another_row() -> None:
    rt = runtime({"bad": 2}, B=1, check=1)
    with pytest.raises(ContractViolation,
                       match=r"action_mask for agent 0 of instance 0 wrote byte 0 of agent 1's "
                             r"mask row"):
        rt.reset([1])


@pytest.mark.parametrize("bad,match", [
    (3, r"the groups' counts add up to 6 agents but describe reports num_agents=7"),
    (4, r"groups 0 and 1 are both named 'hunter'"),
    (5, r"group 'scout': obs_dim=0"),
])
def test_broken_group_declarations_are_refused(bad: int, match: str) -> None:
    with pytest.raises(ConfigError, match=r"model 'teams': " + match):
        TEAMS.native.describe({"bad": bad})


def test_a_group_hook_unused_by_a_configuration_leaves_one_group_of_the_sizes() -> None:
    """A model with a group hook whose describe leaves num_groups at 0 (the
    header: one group described by the sizes): the validation made it 1, so
    the runtime's creation asked the hook for its group 0 (two agents of
    four), failed, and said "out of memory creating the runtime"."""
    from pettingzoo.test import parallel_api_test

    m = load_test_model("optgroups")
    env = m.parallel_env(groups=0)
    assert env.possible_agents == [f"agent_{i}" for i in range(4)]
    assert all(env.action_space(a).n == 4 for a in env.possible_agents)
    env.reset(seed=0)
    obs, rew, *_ = env.step({a: 3 for a in env.agents})
    assert all(o["observation"].tolist() == [3.0, 1.0] for o in obs.values())
    assert set(rew.values()) == {3.0}
    parallel_api_test(env, num_cycles=10)
    env.close()
    two = m.parallel_env(groups=2)  # the hook describes both
    assert two.possible_agents == ["left_0", "left_1", "right_0", "right_1"]
    assert [two.action_space(a).n for a in two.possible_agents] == [3, 3, 2, 2]
    two.close()
