"""Models written in Python (seer_env.pymodel): compiled with Numba, equal to
the C model they port bit for bit, checked by the contract checker, and
refused with a clear message when a handler cannot run in the event loop."""

from __future__ import annotations

import hashlib
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

import seer_env  # noqa: E402
from seer_env import pymodel as seer  # noqa: E402
from seer_env.check import FIXES, check  # noqa: E402
from seer_env.errors import (  # noqa: E402
    BuildError,
    ConfigError,
    ContractViolation,
    MissingExtraError,
    ModelError,
    StateError,
)
from seer_env.registry import Runtime  # noqa: E402
from tests.models import load as load_test_model  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PHOLD_PY = seer_env.sdk.load(ROOT / "examples" / "phold_py")
OUTPUTS = ("obs", "reward", "terminated", "truncated", "info", "alive", "active")


def _pair(config: dict, B: int, executor: str, threads: int) -> tuple[Runtime, Runtime]:
    kw = dict(num_instances=B, executor=executor, threads=threads, max_cycles=None,
              oversubscribe=True)
    return Runtime(PHOLD_PY.native, config, **kw), Runtime("phold_v0", config, **kw)


def _assert_same(py: Runtime, c: Runtime, where: str) -> None:
    for name in OUTPUTS:
        assert np.array_equal(getattr(py, name), getattr(c, name)), (where, name)
    for i in range(py.num_instances):
        assert py.entity_states(i) == c.entity_states(i), (where, "states", i)
        assert np.array_equal(py.global_state(i), c.global_state(i)), (where, "state", i)
        assert np.array_equal(py.entity_events(i), c.entity_events(i)), (where, "events", i)


# -- the port equals the C model ---------------------------------------------------------


@pytest.mark.parametrize("executor,threads", [("serial", 1), ("parallel", 1), ("parallel", 2),
                                              ("parallel", 5)])
@pytest.mark.parametrize("B", [1, 3])
def test_phold_port_equals_the_c_model_at_every_step(executor: str, threads: int, B: int
                                                     ) -> None:
    config = {"num_entities": 37, "remote": 0.7, "work": 3, "events_per_entity": 3}
    py, c = _pair(config, B, executor, threads)
    rng = np.random.default_rng(B * 10 + threads)
    seeds = [int(s) for s in rng.integers(0, 2**63, size=B)]
    for r in (py, c):
        r.reset(seeds)
    _assert_same(py, c, "reset")
    for k in range(25):
        a = rng.integers(0, 3, size=py.actions.shape, dtype=np.int32)
        for r in (py, c):
            r.actions[:] = a
            r.step()
        _assert_same(py, c, f"step {k}")
    assert py.stats()["events"] == c.stats()["events"] > 25 * 37 * B


def test_phold_port_through_the_envs_and_verify() -> None:
    kw = dict(num_entities=12, remote=0.9, threads=2)
    a, b = PHOLD_PY.parallel_env(**kw), seer_env.make("phold_v0", **kw)
    assert a.possible_agents == b.possible_agents
    assert a.observation_space("entity_0") == b.observation_space("entity_0")
    assert a.state_space == b.state_space
    oa, _ = a.reset(seed=4)
    ob, _ = b.reset(seed=4)
    for k in range(12):
        acts = {ag: (k + i) % 3 for i, ag in enumerate(a.agents)}
        ra, rb = a.step(acts), b.step(acts)
        for da, db in zip(ra, rb, strict=True):
            assert da.keys() == db.keys()
            for ag in da:
                assert np.array_equal(np.asarray(da[ag]), np.asarray(db[ag])) if not \
                    isinstance(da[ag], dict) else da[ag] == db[ag]
        assert np.array_equal(a.state(), b.state())
    a.close()
    b.close()
    report = seer_env.verify("phold_py", steps=30, threads=2, num_envs=2, seed=3,
                             num_entities=20)
    assert report.identical, report


def test_phold_port_vector_env_and_stpa() -> None:
    venv = PHOLD_PY.vector_env(2, num_entities=16)  # threads="auto": STPA decides
    venv.reset(seed=1)
    for _ in range(8):
        venv.step(np.zeros((2, 16), np.int32))
    assert venv.runtime.stpa is not None
    venv.close()


def test_interpreted_model_equals_the_compiled_one() -> None:
    interp = PHOLD_PY.interpreted()
    assert interp.jit is False and PHOLD_PY.jit is True
    kw = dict(num_instances=2, executor="parallel", threads=2, oversubscribe=True)
    a = Runtime(interp.native, {"num_entities": 6, "work": 2}, **kw)
    b = Runtime(PHOLD_PY.native, {"num_entities": 6, "work": 2}, **kw)
    for r in (a, b):
        r.reset([9, 10])
    for k in range(6):
        for r in (a, b):
            r.actions[:] = k % 3
            r.step()
        _assert_same(a, b, f"step {k}")


def test_describe_and_config_rules_come_from_the_declaration() -> None:
    p = PHOLD_PY.params
    assert p["remote"].low == 0 and p["remote"].high == 1 and p["step_duration"].low_exclusive
    with pytest.raises(ConfigError, match="remote"):
        PHOLD_PY.parallel_env(remote=1.5)
    with pytest.raises(ConfigError, match="lookahead and mean cannot both be 0"):
        PHOLD_PY.parallel_env(lookahead=0.0, mean=0.0)
    env = PHOLD_PY.parallel_env(num_entities=3)
    assert env.possible_agents == ["entity_0", "entity_1", "entity_2"]
    space = env.observation_space("entity_0")
    assert list(space.high) == [np.float32((2**64 - 1) / 4), np.float32(np.log1p(2**64 - 1)), 1, 1]
    env.close()


# -- the contract checker on a broken Python model --------------------------------------

ROGUE_PY = load_test_model("rogue_py")
QUICK = dict(steps=12, seeds=(0,), threads=(1, 2), batches=(1,), progress=False)

# mode -> (rule, message fragments)
ROGUE_PY_MODES = {
    1: ("handler-error", ["handle handler (event type 0, TICK) for entity 1",
                          "entity_state(): only at the boundary"]),
    2: ("lookahead", ["inside the lookahead", "for entity 2"]),
    3: ("snapshot", ["wrote the published snapshot record of entity 1"]),
    4: ("config", ["wrote the configuration"]),
    5: ("boundary-write", ["observe for agent 1", "wrote the live state of entity 1"]),
    6: ("instance-rng", ["boundary hook of instance 0"]),
    7: ("boundary-write", ["publish for entity 1", "wrote the live state of entity 1"]),
    8: ("handler-error", ["handle raised an exception", "SEER_ENV_JIT=0"]),
    9: ("handler-error", ["failed at t=", "the culprit gave up"]),
    10: ("past", ["time in the past"]),
    11: ("target", ["target 9 >= num_entities 6"]),
    # it was reported as a determinism finding, with that rule's fix
    12: ("event-type", ["unknown event type", "type 7 >= event_type_count 2"]),
}


@pytest.mark.parametrize("mode", sorted(ROGUE_PY_MODES))
def test_checker_catches_each_rule_in_a_python_model(mode: int) -> None:
    rule, fragments = ROGUE_PY_MODES[mode]
    report = check(ROGUE_PY, {"mode": mode, "at_step": 2}, **QUICK)
    assert not report.ok and rule in report.rules(), str(report)
    finding = next(f for f in report.findings if f.rule == rule)
    assert "model 'rogue_py'" in finding.message
    for frag in fragments:
        assert frag in finding.message, (frag, finding.message)
    assert finding.fix == FIXES[rule]


def test_well_behaved_python_model_passes_the_checker() -> None:
    assert check(ROGUE_PY, {"mode": 0}, **QUICK).ok
    assert check(PHOLD_PY, {"num_entities": 10}, **QUICK).ok


def test_violations_raise_the_same_errors_as_c_models() -> None:
    env = ROGUE_PY.parallel_env(mode=2, at_step=1, threads=2)
    env.reset(seed=0)
    env.step({a: 0 for a in env.agents})
    with pytest.raises(ContractViolation, match="inside the lookahead"):
        env.step({a: 0 for a in env.agents})
    env.close()


def test_a_raising_handler_names_itself_and_interpreted_runs_show_the_exception() -> None:
    for model, fragment in ((ROGUE_PY, "handle raised an exception"),
                            (ROGUE_PY.interpreted(), "handle raised ValueError: deliberately")):
        rt = Runtime(model.native, {"mode": 8, "at_step": 1}, executor="serial", threads=1)
        rt.reset([0])
        rt.step()
        with pytest.raises(ModelError, match="entity 1 of instance 0") as exc:
            rt.step()
        assert fragment in str(exc.value)
        rt.close()


# -- refused at build time ------------------------------------------------------------------

_TEMPLATE = '''
import numpy as np
from seer_env import pymodel as seer

MODEL = seer.declare(__name__, params=[seer.param("n", np.uint32, 2, lo=1, hi=8)],
                     state={state})


def plain_helper(st):
    st.x = 1.0


@MODEL.describe
def describe(c):
    return seer.Sizes(num_entities=int(c.n), num_agents=int(c.n), obs_dim=1, action_n=2,
                      lookahead=0.5, step_duration=1.0{sizes})


@MODEL.init
def init(ctx, st):
    seer.schedule(ctx, seer.self(ctx), 0.25, 0)


@MODEL.handle
def handle(ctx, st, event_type, payload):
    st.x += 1.0
{body}
    seer.schedule(ctx, seer.self(ctx), seer.now(ctx) + 1.0, 0)


@MODEL.observe
def observe(ctx, agent, out):
    out.obs[0] = seer.entity_state(ctx, agent).x
{observe}
{extra}'''


@pytest.fixture(autouse=True)
def _own_cache(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
               tmp_path_factory: pytest.TempPathFactory) -> None:
    """Models written into tmp folders compile into a cache of their own."""
    if "tmp_path" in request.fixturenames:
        monkeypatch.setenv("SEER_ENV_CACHE", str(tmp_path_factory.mktemp("cache")))


def _model(tmp_path: Path, name: str, body: str = "", state: str =
           'np.dtype([("x", np.float64)])', sizes: str = "", observe: str = "",
           extra: str = "") -> seer.PythonModel:
    """The template model in ``tmp_path / name``: ``body`` ends handle,
    ``observe`` ends observe, ``extra`` (hooks of its own) ends the module."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text(_TEMPLATE.format(
        body=textwrap.indent(textwrap.dedent(body), "    "), state=state, sizes=sizes,
        observe=textwrap.indent(textwrap.dedent(observe), "    "),
        extra=textwrap.dedent(extra)))
    model = seer_env.sdk.load(folder, build=False)
    assert isinstance(model, seer.PythonModel)
    return model


def _line_of(model: seer.PythonModel, text: str) -> int:
    src = (model.folder / "__init__.py").read_text().splitlines()
    return next(i for i, line in enumerate(src, 1) if text in line)


@pytest.mark.parametrize("body,what,line", [
    ("a = np.zeros(3)\nst.x += a.sum()", "allocates memory", "np.zeros(3)"),
    ("st.x += np.random.random()", "random generator", "np.random.random()"),
    ("print('hello')", "touches Python objects", "print('hello')"),
])
def test_forbidden_handler_code_is_refused_with_handler_and_line(
        tmp_path: Path, body: str, what: str, line: str) -> None:
    model = _model(tmp_path, "bad_" + hashlib.sha256(body.encode()).hexdigest()[:8], body)
    with pytest.raises(BuildError) as exc:
        model.build()
    msg = str(exc.value)
    assert f"handler `handle` ({model.folder / '__init__.py'}:{_line_of(model, line)})" in msg
    assert what in msg
    with pytest.raises(BuildError):  # refused again: nothing unchecked was cached
        model.build()


@pytest.mark.parametrize("hook", ["observe", "global_state"])
def test_a_compiled_output_hook_writing_past_its_row_is_a_model_error(
        tmp_path: Path, hook: str) -> None:
    """An observe writing past its agent's row, a global_state past
    state_dim: compiled, they wrote past the runtime's buffers (the process
    aborted, "free(): invalid pointer", or other agents' rows changed
    silently); the output hooks run bounds checked, so the step (or
    state()) raises ModelError naming the hook."""
    model = _model(tmp_path, f"past_{hook}", sizes=", state_dim=2",
                   observe="for k in range(1, 64):\n    out.obs[k] = 7.0"
                   if hook == "observe" else "", extra="""
                   @MODEL.global_state
                   def global_state(ctx, out):
                       for k in range(2 + (62 if seer.step_index(ctx) > 0 else 0)):
                           out[k] = 7.0
                   """)
    env = model.parallel_env(n=3, threads=1)
    with pytest.raises(ModelError, match=f"{hook} raised an exception"):
        env.reset(seed=0)
        env.state()
        env.step({a: 0 for a in env.agents})
        env.state()
    if hook == "observe":  # the step failed: the env needs a reset
        with pytest.raises(StateError, match="reset"):
            env.step({a: 0 for a in env.possible_agents})
    else:  # state() failed, the env as it was: it steps, and state() fails again
        env.step({a: 0 for a in env.agents})
        with pytest.raises(ModelError, match="global_state raised an exception"):
            env.state()
    env.close()


def test_obs_bounds_of_the_wrong_length_are_named_as_such(tmp_path: Path) -> None:
    """An obs_bounds returning 3 values where obs_dim is 1 was reported as
    NaN bounds the model never gave ("gave element 0 the bounds [nan,
    nan]"), the real cause only in a warning; the error says it."""
    model = _model(tmp_path, "bounds3", extra="""
                   @MODEL.obs_bounds
                   def obs_bounds(c):
                       return np.zeros(3), np.full(3, np.inf)
                   """)
    with pytest.warns(UserWarning, match="obs_bounds failed"), \
            pytest.raises(ModelError) as info:
        model.parallel_env(n=2, threads=1)
    msg = str(info.value)
    assert "obs_bounds failed: ValueError: it returned low bounds of shape (3,) where " \
           "obs_dim is 1" in msg
    assert "nan" not in msg


def test_a_draw_below_zero_fails_the_step(tmp_path: Path) -> None:
    """seer_rng_below(ctx, 0): [0, 0) holds no value, and it returned 0
    silently; the step fails with a ModelError naming the call and the
    entity, and the env needs a reset."""
    model = _model(tmp_path, "below0", "st.x += seer.rng_below(ctx, np.uint32(0))")
    env = model.parallel_env(n=2, threads=1)
    with pytest.raises(ModelError, match=r"model 'below0': seer_rng_below\(ctx, 0\) for "
                                         r"entity \d of instance 0 at t=0.25: the range"):
        env.reset(seed=0)
        env.step({a: 0 for a in env.agents})
    with pytest.raises(StateError, match="reset"):
        env.step({a: 0 for a in env.possible_agents})
    env.close()


def test_uncompilable_handler_fails_with_numbas_message_and_the_handler(tmp_path: Path) -> None:
    model = _model(tmp_path, "uncompilable", "plain_helper(st)")
    with pytest.raises(BuildError) as exc:
        model.build()
    msg = str(exc.value)
    assert "handler `handle`" in msg and "cannot be compiled by Numba" in msg
    assert "plain_helper" in msg and "@seer_env.pymodel.jit" in msg
    assert "\x1b" not in msg  # Numba's colours (ANSI escapes) left out: plain text


def test_a_good_model_builds_once_then_loads_from_the_cache(tmp_path: Path) -> None:
    model = _model(tmp_path, "good_model")
    assert model.build() in ("built", "cache")
    assert model.build() == "cache"
    env = model.parallel_env(n=3, threads=1)
    env.reset(seed=0)
    for _ in range(3):
        obs, *_ = env.step({a: 0 for a in env.agents})
    assert obs["agent_0"][0] == 3.0  # events at t=0.25, 1.25, 2.25
    env.close()


def test_bad_declarations_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="field 'o' has dtype object"):
        _model(tmp_path, "objstate", state='np.dtype([("x", np.float64), ("o", object)])')
    with pytest.raises(ConfigError, match="structured dtype"):
        _model(tmp_path, "plainstate", state="np.float64")
    model = _model(tmp_path, "wrongsize", sizes=", entity_size=3")
    with pytest.raises(ConfigError, match="entity_size=3 disagrees with the declared dtype"):
        model.parallel_env()
    with pytest.raises(ConfigError, match="param n: dtype"):
        seer.param("n", np.complex128, 1)
    with pytest.raises(ConfigError, match="default None needs none=True"):
        seer.param("n", np.float64, None)


def test_missing_handlers_are_model_errors(tmp_path: Path) -> None:
    folder = tmp_path / "nohandle"
    folder.mkdir()
    (folder / "__init__.py").write_text(
        "import numpy as np\nfrom seer_env import pymodel as seer\n"
        "MODEL = seer.declare(__name__, state=np.dtype([('x', np.float64)]))\n")
    model = seer_env.sdk.load(folder, build=False)
    with pytest.raises(ModelError, match="no describe, handle, observe registered"):
        model.build()


def test_without_numba_the_api_says_which_extra_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model(tmp_path, "no_numba_here")
    monkeypatch.setitem(sys.modules, "numba", None)
    with pytest.raises(MissingExtraError, match=r'pip install "seer_env\[numba\]"'):
        model.build()
    assert isinstance(MissingExtraError("x"), ImportError)


def test_the_python_template_builds_checks_and_runs(tmp_path: Path) -> None:
    folder = seer_env.sdk.new("ring_template_py", tmp_path, python=True)
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md", "__init__.py", "test_ring_template_py.py"]
    model = seer_env.sdk.load(folder)
    assert isinstance(model, seer.PythonModel) and model.build() == "cache"
    report = check(model, {"num_agents": 5}, **QUICK)
    assert report.ok, str(report)
    venv = model.vector_env(2, num_agents=4, goal=6, threads=2, autoreset_mode="disabled")
    venv.reset(seed=0)
    done = np.zeros((2, 4), bool)
    for _ in range(100):
        _, _, term, _, _ = venv.step(np.zeros((2, 4), np.int64))
        done |= term
        if done.all():
            break
    assert done.all()
    venv.close()


def test_a_misspelt_record_field_is_a_build_error_naming_the_handler(tmp_path: Path) -> None:
    """Numba raises a bare KeyError for it; it escaped as a 174-line traceback."""
    model = _model(tmp_path, "misspelt", "st.y += 1.0")
    with pytest.raises(BuildError) as exc:
        model.build()
    msg = str(exc.value)
    assert f"handler `handle` ({model.folder / '__init__.py'}:" in msg
    assert "KeyError: 'y'" in msg and "misspelt name?" in msg


@pytest.mark.parametrize("code,what", [
    ("x = [1,\n", "SyntaxError"),
    ("undefined_name + 1\n", "NameError: name 'undefined_name' is not defined"),
])
def test_a_model_folder_whose_code_fails_to_import_is_a_model_error(
        tmp_path: Path, code: str, what: str) -> None:
    """It escaped as a traceback (seer-env's exit status 1, its 'findings' code)."""
    from seer_env.errors import ModelError

    folder = tmp_path / "broken_init"
    folder.mkdir()
    (folder / "__init__.py").write_text("import numpy as np\n" + code)
    with pytest.raises(ModelError, match=rf"its __init__.py failed to import at "
                                         rf"{folder / '__init__.py'}:2: {what}"):
        seer_env.sdk.load(folder, build=False)
    from seer_env import cli

    assert cli.main(["info", str(folder)]) == 2


def test_a_damaged_cached_build_is_built_again(tmp_path: Path) -> None:
    """A truncated handlers.py in the cache failed every load until
    --rebuild; the C models' cache already healed itself.  The next process
    finds it damaged and builds it again."""
    import subprocess
    import sys

    model = _model(tmp_path, "damaged")
    assert model.build() in ("built", "cache")
    src = model.build_dir / "handlers.py"
    src.write_bytes(src.read_bytes()[:500])
    code = textwrap.dedent(f"""
        import seer_env
        m = seer_env.sdk.load({str(model.folder)!r}, build=False)
        print(m.build())
        env = m.parallel_env(n=2, threads=1)
        env.reset(seed=0)
        obs, *_ = env.step({{a: 0 for a in env.agents}})
        print(obs["agent_0"][0])
    """)
    for want in ("built", "cache"):  # built again, then cached as before
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == [want, "1.0"]
