"""Agent groups, action masks and multi-discrete actions in models written in
Python (seer_env.pymodel): ``teams_py`` (tests/models/teams_py), the Python
twin of the ``teams`` C model, equals it bit for bit -- compiled with Numba
and interpreted (``jit=False``), on every executor -- passes PettingZoo's API
tests, and its broken declarations are refused with the C model's messages."""

from __future__ import annotations

import importlib.util
import re
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test

import seer_env
from seer_env import pymodel as seer
from seer_env._bind.runtime import Runtime
from seer_env.check import check
from seer_env.errors import ConfigError, InvalidActionError, ModelError
from tests.models import load as load_test_model

TEAMS = load_test_model("teams")
TEAMS_PY = load_test_model("teams_py")
HAVE_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
#: compiled (Numba) and interpreted
JIT = [pytest.param(True, id="numba", marks=needs_numba), pytest.param(False, id="python")]
BUFFERS = ("obs", "reward", "terminated", "truncated", "info", "mask", "alive", "active")


def python_twin(jit: bool) -> seer.PythonModel:
    return TEAMS_PY if jit else TEAMS_PY.interpreted()


def runtime(model: Any, cfg: dict[str, Any], B: int = 2, executor: str = "serial",
            threads: int = 1, **kw: Any) -> Runtime:
    return Runtime(model.native, cfg, num_instances=B, executor=executor, threads=threads,
                   oversubscribe=True, **kw)


def legal_actions(rt: Runtime, rng: np.random.Generator) -> None:
    """Random actions every mask of ``rt`` allows (box actions past their
    bounds too, to be clipped), written into its buffers."""
    for g, acts in zip(rt.sizes.groups, rt.group_actions, strict=True):
        for i in range(rt.mask.shape[0]):
            for j in range(g.count):
                m = rt.mask[i, g.first + j]
                if g.action_kind == "discrete":
                    acts[i, j] = rng.choice(np.flatnonzero(m[:g.action_n]))
                elif g.action_kind == "multi_discrete":
                    off = 0
                    for d, n in enumerate(g.nvec):
                        acts[i, j, d] = rng.choice(np.flatnonzero(m[off:off + n]))
                        off += n
                else:
                    acts[i, j] = rng.uniform(-2, 2, g.action_dim).astype(np.float32)


def assert_same(py: Runtime, c: Runtime, where: str) -> None:
    for name in BUFFERS:
        a, b = getattr(py, name), getattr(c, name)
        assert a.dtype == b.dtype and a.shape == b.shape, (where, name)
        assert a.tobytes() == b.tobytes(), (where, name)
    for i in range(py.num_instances):
        assert py.entity_states(i) == c.entity_states(i), (where, "states", i)
        assert py.global_state(i).tobytes() == c.global_state(i).tobytes(), (where, "state", i)
        assert np.array_equal(py.entity_events(i), c.entity_events(i)), (where, "events", i)


# -- the twin equals the C model -------------------------------------------------------


def test_the_twin_declares_what_the_c_model_declares() -> None:
    for cfg in ({}, {"num_scouts": 0, "strict": 1}, {"solo": 1}):
        cb, cs = TEAMS.native.describe(cfg)
        pb, ps = TEAMS_PY.native.describe(cfg)
        for f in ("num_agents", "num_groups", "obs_dim", "action_dim", "info_dim", "mask_dim",
                  "state_dim", "entity_size", "action_kind", "action_n"):
            assert getattr(ps, f) == getattr(cs, f), (cfg, f)
        assert ps.groups == cs.groups, cfg
        assert TEAMS_PY.native.agent_names(pb, ps.num_agents, ps) == \
            TEAMS.native.agent_names(cb, cs.num_agents, cs)
        for g in range(cs.num_groups):
            for a, b in zip(TEAMS_PY.native.group_bounds(pb, ps, g),
                            TEAMS.native.group_bounds(cb, cs, g), strict=True):
                assert a.tobytes() == b.tobytes(), (cfg, g)


@pytest.mark.parametrize("jit", JIT)
@pytest.mark.parametrize("executor,threads", [("serial", 1), ("parallel", 2), ("parallel", 3),
                                              ("optimistic", 2)])
@pytest.mark.parametrize("cfg", [
    {"life": 4, "num_hunters": 5, "num_runners": 6, "num_scouts": 3},
    {"num_scouts": 0, "strict": 1, "life": 3},
    {"solo": 1, "num_hunters": 4, "strict": 1},
], ids=["three-groups", "two-strict", "solo"])
def test_the_python_twin_equals_the_c_model_at_every_step(
        jit: bool, executor: str, threads: int, cfg: dict[str, Any]) -> None:
    B = 3
    py = runtime(python_twin(jit), cfg, B, executor, threads)
    c = runtime(TEAMS, cfg, B, executor, threads)
    rng = np.random.default_rng(threads * 7 + len(cfg))
    seeds = [int(s) for s in rng.integers(0, 2**63, size=B)]
    try:
        for r in (py, c):
            r.reset(seeds)
        assert_same(py, c, "reset")
        for k in range(10):
            if not c.alive.any():
                seeds = [s + 1 for s in seeds]
                for r in (py, c):
                    r.reset(seeds)
                assert_same(py, c, f"reset before step {k}")
            legal_actions(c, rng)
            py.actions[:] = c.actions
            for r in (py, c):
                r.step()
            assert_same(py, c, f"step {k}")
            # box actions clipped in place, alike
            assert py.actions.tobytes() == c.actions.tobytes()
        assert py.stats()["events"] == c.stats()["events"] > 0
    finally:
        py.close()
        c.close()


@pytest.mark.parametrize("jit", JIT)
def test_a_forbidden_action_is_refused_with_the_c_models_message(jit: bool) -> None:
    msgs = []
    for model in (python_twin(jit), TEAMS):
        rt = runtime(model, {})
        rt.reset([1, 2])
        legal_actions(rt, np.random.default_rng(1))
        rt.group_actions[0][1, 1] = 1  # forbidden for hunter_1 at step 0
        with pytest.raises(InvalidActionError, match="forbidden by its action mask") as e1:
            rt.step()
        legal_actions(rt, np.random.default_rng(1))
        rt.group_actions[1][0, 0, 0] = 2  # runner_0 (agent 2): (0 + 2) % 3
        with pytest.raises(InvalidActionError, match="which its action mask forbids") as e2:
            rt.step()
        assert rt.step_index(0) == 0
        msgs.append([str(e1.value), str(e2.value)])
        rt.close()
    assert [m.replace("teams_py", "teams") for m in msgs[0]] == msgs[1]


def test_an_advisory_mask_lets_a_forbidden_action_reach_act() -> None:
    m = TEAMS_PY.interpreted()
    m.mask_advisory = True
    rt = runtime(m, {})
    rt.reset([1, 2])
    legal_actions(rt, np.random.default_rng(1))
    rt.group_actions[0][1, 1] = 1
    rt.step()
    assert rt.reward[1, 1] == np.float32(1.0 + 1 / 8)
    assert not rt.mask[1, 1, 1 % 5 + 1]  # still computed: (k + a) % 5 at k = 1
    rt.close()


@needs_numba
def test_the_contract_checker_finds_nothing_in_the_twin() -> None:
    report = check("teams_py", steps=8, seeds=(0,), threads=(1, 2), batches=(1,),
                   progress=False)
    assert report.ok, report.findings


# -- PettingZoo ----------------------------------------------------------------------------


@pytest.mark.parametrize("jit", JIT)
@pytest.mark.parametrize("cfg", [{}, {"num_scouts": 0, "strict": 1}, {"solo": 1},
                                 {"life": 2, "executor": "parallel", "threads": 2}])
def test_pettingzoo_api_tests_pass_on_the_twin(jit: bool, cfg: dict[str, Any]) -> None:
    model = python_twin(jit)
    parallel_api_test(model.parallel_env(**cfg), num_cycles=30)
    api_test(model.env(**cfg), num_cycles=30)


@pytest.mark.parametrize("jit", JIT)
def test_the_twins_env_equals_the_c_models(jit: bool) -> None:
    a, b = python_twin(jit).parallel_env(threads=1, strict=1), TEAMS.parallel_env(
        threads=1, strict=1)
    assert a.possible_agents == b.possible_agents
    for ag in a.possible_agents:
        assert a.observation_space(ag) == b.observation_space(ag)
        assert a.action_space(ag) == b.action_space(ag)
    oa, ia = a.reset(seed=5)
    ob, ib = b.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(6):
        assert repr(oa) == repr(ob) and ia == ib
        acts = {}
        for ag, o in ob.items():
            space = b.action_space(ag)
            space.seed(int(rng.integers(1 << 31)))
            acts[ag] = space.sample(mask=o["action_mask"]) if isinstance(o, dict) else \
                space.sample()
        ra, rb = a.step(acts), b.step(acts)
        oa, ob = ra[0], rb[0]
        ia, ib = ra[4], rb[4]
        assert repr(ra[1:4]) == repr(rb[1:4])
        assert np.array_equal(a.state(), b.state())
        if not b.agents:
            break
    a.close()
    b.close()


# -- broken models ------------------------------------------------------------------------


def _c_message(exc_type: type[Exception], fn: Any) -> str:
    with pytest.raises(exc_type) as exc:
        fn()
    return str(exc.value)


@pytest.mark.parametrize("jit", JIT)
@pytest.mark.parametrize("bad", [3, 4, 5])
def test_broken_group_declarations_are_refused_like_the_c_models(jit: bool, bad: int) -> None:
    want = _c_message(ConfigError, lambda: TEAMS.native.describe({"bad": bad}))
    got = _c_message(ConfigError, lambda: python_twin(jit).native.describe({"bad": bad}))
    assert got == want.replace("model 'teams'", "model 'teams_py'")
    with pytest.raises(ConfigError, match=r"model 'teams_py'"):
        python_twin(jit).parallel_env(bad=bad)


@pytest.mark.parametrize("jit", JIT)
def test_a_mask_with_no_allowed_choice_fails_the_step(jit: bool) -> None:
    msgs = []
    for model in (python_twin(jit), TEAMS):
        rt = runtime(model, {"bad": 1})
        rt.reset([1, 2])
        rng = np.random.default_rng(4)
        legal_actions(rt, rng)
        rt.step()
        legal_actions(rt, rng)
        with pytest.raises(ModelError, match="allows no choice at step 1") as exc:
            rt.step()
        msgs.append(str(exc.value))
        rt.close()
    assert msgs[0].replace("teams_py", "teams") == msgs[1]


@needs_numba
def test_a_compiled_mask_hook_cannot_reach_another_row() -> None:
    """Compiled with bounds checks (the output hooks are), a mask hook
    writing past its row raises, as the interpreted one does: a ModelError
    naming the hook, in checking mode or not."""
    for check_mode in (0, 1):
        rt = runtime(TEAMS_PY, {"bad": 2}, B=1, check=check_mode)
        with pytest.raises(ModelError, match=r"action_mask raised an exception"):
            rt.reset([1])


def test_the_checking_mode_names_a_compiled_mask_hook_that_writes_another_row(
        tmp_path: Path) -> None:
    """With Numba's bounds checks off (NUMBA_BOUNDSCHECK=0) the checking
    mode's guard still names the breach."""
    import os
    import subprocess
    import sys

    code = textwrap.dedent("""
        import pytest
        from seer_env.errors import ContractViolation
        from tests.test_pymodel_groups import TEAMS_PY, runtime
        rt = runtime(TEAMS_PY, {"bad": 2}, B=1, check=1)
        with pytest.raises(ContractViolation,
                           match=r"model 'teams_py': action_mask for agent 0 of instance 0 "
                                 r"wrote byte 0 of agent 1's mask row"):
            rt.reset([1])
        print("ok")
        """)
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "0", "SEER_ENV_CACHE": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, env=env, cwd=Path(__file__).resolve().parent.parent)
    assert out.returncode == 0 and "ok" in out.stdout, out.stdout + out.stderr[-3000:]


def test_an_interpreted_mask_hook_cannot_reach_another_row() -> None:
    rt = runtime(TEAMS_PY.interpreted(), {"bad": 2}, B=1)
    with pytest.raises(ModelError, match=r"action_mask raised IndexError"):
        rt.reset([1])


# -- one group: multi-discrete actions without a group hook -------------------------------

_MULTI = '''
import numpy as np
from seer_env import pymodel as seer

MODEL = seer.declare(__name__, params=[seer.param("n", np.uint32, 3, lo=1, hi=8)],
                     state=np.dtype([("total", np.int64)]), actions="multi_discrete",
                     info_names=("total",))


@MODEL.describe
def describe(c):
    return seer.Sizes(num_entities=int(c.n), num_agents=int(c.n), obs_dim=1, action_dim=3,
                      lookahead=0.5, step_duration=1.0)


@MODEL.action_nvec
def action_nvec(c, g):
    return (2, 3, 4)


@MODEL.act
def act(ctx, st, action):
    st.total += action[0] + 10 * action[1] + 100 * action[2]


@MODEL.handle
def handle(ctx, st, event_type, payload):
    pass


@MODEL.observe
def observe(ctx, agent, out):
    st = seer.entity_state(ctx, agent)
    out.obs[0] = st.total
    out.info[0] = st.total
    out.reward[0] = seer.agent_group(ctx, agent) + seer.group_first(ctx, 0)


@MODEL.action_mask
def action_mask(ctx, agent, mask):
    mask[agent % 2] = 0          # component 0: only 1 - agent % 2
    mask[2 + 3 + 3] = 0          # component 2: not 3
'''


@pytest.mark.parametrize("jit", JIT)
def test_a_model_without_groups_may_have_multi_discrete_actions_and_masks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jit: bool) -> None:
    monkeypatch.setenv("SEER_ENV_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / f"multi_{'jit' if jit else 'py'}"
    folder.mkdir()
    (folder / "__init__.py").write_text(textwrap.dedent(_MULTI))
    model = seer_env.sdk.load(folder, build=False)
    if not jit:
        model = model.interpreted()
    _, sz = model.native.describe({})
    (g,) = sz.groups
    assert (g.name, g.action_kind, g.nvec, g.mask_len, sz.mask_dim) == (
        "agents", "multi_discrete", (2, 3, 4), 9, 9)
    rt = runtime(model, {}, B=2)
    rt.reset([0, 1])
    assert rt.mask[0, 1].tolist() == [1, 0, 1, 1, 1, 1, 1, 1, 0]
    rt.actions[:] = [[[1, 2, 3], [0, 1, 2], [1, 0, 0]]] * 2
    with pytest.raises(InvalidActionError, match=r"agent 0 of instance 0.*component 2 is 3, "
                                                 r"which its action mask forbids"):
        rt.step()
    rt.actions[:, :, 2] = 1
    rt.step()
    assert rt.obs[1, :, 0].tolist() == [121.0, 110.0, 101.0]
    assert rt.info[0, :, 0].tolist() == [121.0, 110.0, 101.0]
    assert rt.reward[0].tolist() == [0.0, 0.0, 0.0]
    rt.close()
    other = tmp_path / f"{folder.name}_bad"
    other.mkdir()
    (other / "__init__.py").write_text(textwrap.dedent(_MULTI).replace("action_dim=3",
                                                                       "action_dim=0"))
    with pytest.raises(ConfigError, match="action_dim=0 must be an int >= 1"):
        seer_env.sdk.load(other, build=False).interpreted().native.describe({})


# -- a mixed model whose configuration may have no groups ----------------------------------

_MIXED_OPT = '''
import numpy as np
from seer_env import pymodel as seer

MODEL = seer.declare(__name__, params=[seer.param("groups", np.uint32, 0, lo=0, hi=2),
                                       seer.param("kind", np.uint32, 0, lo=0, hi=1)],
                     state=np.dtype([("last", np.float64)]), actions="mixed")


@MODEL.describe
def describe(c):
    kind = None if int(c.groups) else ("discrete", "box")[int(c.kind)]
    return seer.Sizes(num_entities=4, num_agents=4, obs_dim=0 if int(c.groups) else 1,
                      action_n=4, action_dim=1 if int(c.kind) == 0 else 2, action_low=-1.0,
                      action_high=1.0, lookahead=0.5, step_duration=1.0,
                      num_groups=int(c.groups), action_kind=kind)


@MODEL.group
def group(c, g):
    if g == 0:
        return seer.Group(name="left", count=2, obs_dim=1, action_kind="discrete",
                          action_n=3)
    return seer.Group(name="right", count=2, obs_dim=1, action_kind="box", action_dim=2,
                      action_low=-1.0, action_high=1.0)


@MODEL.act
def act(ctx, st, action):
    st.last = action[0]


@MODEL.handle
def handle(ctx, st, event_type, payload):
    pass


@MODEL.observe
def observe(ctx, agent, out):
    out.obs[0] = seer.entity_state(ctx, agent).last
'''


@pytest.mark.parametrize("jit", JIT)
def test_a_mixed_model_without_groups_in_a_configuration_says_its_action_kind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jit: bool) -> None:
    """actions="mixed" with a group hook and num_groups=0 (one group of the
    sizes, as a C model may): it was refused ("actions='mixed' is for a model
    with groups"), with no way to say the one group's kind."""
    import gymnasium
    monkeypatch.setenv("SEER_ENV_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / f"mixed_opt_{'jit' if jit else 'py'}"
    folder.mkdir()
    (folder / "__init__.py").write_text(textwrap.dedent(_MIXED_OPT))
    model = seer_env.sdk.load(folder, build=False)
    if not jit:
        model = model.interpreted()
    spaces = {}
    for cfg in ({"groups": 0, "kind": 0}, {"groups": 0, "kind": 1}, {"groups": 2}):
        env = model.parallel_env(**cfg)
        env.reset(seed=0)
        env.step({a: env.action_space(a).sample() for a in env.agents})
        spaces[tuple(cfg.values())] = [env.action_space(a) for a in env.possible_agents]
        env.close()
    assert spaces[(0, 0)] == [gymnasium.spaces.Discrete(4)] * 4
    assert all(isinstance(s, gymnasium.spaces.Box) and s.shape == (2,)
               for s in spaces[(0, 1)])
    assert [type(s).__name__ for s in spaces[(2,)]] == ["Discrete"] * 2 + ["Box"] * 2
    bad = tmp_path / f"{folder.name}_bad"
    bad.mkdir()
    (bad / "__init__.py").write_text(textwrap.dedent(_MIXED_OPT).replace(
        'kind = None if int(c.groups) else ("discrete", "box")[int(c.kind)]', "kind = None"))
    with pytest.raises(ConfigError, match="actions='mixed' without groups .*give the one "
                                          "group's action_kind"):
        seer_env.sdk.load(bad, build=False).interpreted().native.describe({})


@pytest.mark.parametrize("bad,said", [("count=-1", "count=-1 must be an int in [0, 4294967296)"),
                                      ("count=2.5", "count=2.5 must be an int"),
                                      ("count=None", "count=None must be an int")])
def test_a_group_field_that_is_no_whole_number_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str, said: str) -> None:
    """A Group whose count (or another size) is no whole number: the error was
    cffi's ("can't convert negative number to unsigned", "the group hook
    raised TypeError: an integer is required"), naming neither the field nor
    its value."""
    monkeypatch.setenv("SEER_ENV_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / f"mixed_bad_group_{bad.split('=')[1].replace('-', 'm').replace('.', '_')}"
    folder.mkdir()
    (folder / "__init__.py").write_text(textwrap.dedent(_MIXED_OPT).replace(
        'name="left", count=2', f'name="left", {bad}'))
    model = seer_env.sdk.load(folder, build=False).interpreted()
    with pytest.raises(ConfigError, match=re.escape(f"group 0: {said}")):
        model.native.describe({"groups": 2})
