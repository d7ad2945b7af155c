"""The model SDK: a user's model folder, built and run with the installed package.

Every test writes its own folder (from ``seer-env new``'s template, edited
where a test needs a broken model) and builds it through the SDK exactly as
a user would.
"""

from __future__ import annotations

import importlib.util
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import parallel_api_test

import seer_env
from seer_env import cli, sdk
from seer_env.errors import BuildError, ConfigError, ModelError, StateError


def new_model(tmp_path: Path, name: str, edits: dict[str, str] | None = None) -> Path:
    """A model folder from the template, with ``old -> new`` text edits to its C file."""
    folder = sdk.new(name, tmp_path)
    c = folder / f"{name}.c"
    text = c.read_text()
    for old, new in (edits or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    c.write_text(text)
    return folder


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> sdk.Model:
    return sdk.load(new_model(tmp_path_factory.mktemp("sdk"), "tokens_m"))


def test_template_builds_runs_and_keeps_the_contract(tokens: sdk.Model) -> None:
    assert tokens.name == "tokens_m" and tokens.native.name == "tokens_m"
    report = seer_env.check(tokens, {"num_agents": 5}, steps=30, progress=False)
    assert report.ok, str(report)
    assert [p.status for p in report.passes] == ["ok"] * 8
    # isolation 2, uninit 2 (zeroed and painted builds), replay 1, order 3,
    # race 1, bounds 1; the matrix: 30 runs, plus a reset run per batch on the
    # fewest and most threads; snapshot 3 (the run, the replays in the same
    # runtime and in a new one)
    assert [p.runs for p in report.passes] == [2, 2, 1, 3, 1, 1, 30 + 6, 3]


def test_every_api_of_a_shipped_env(tokens: sdk.Model) -> None:
    env = tokens.parallel_env(num_agents=6, max_cycles=25)
    parallel_api_test(env, num_cycles=30)
    assert env.possible_agents == [f"agent_{i}" for i in range(6)]
    # the template's mask hook: PettingZoo's dict observation
    assert env.observation_space("agent_0")["observation"].high.tolist() == [np.inf, 1, 1, 1]
    assert env.observation_space("agent_0")["action_mask"].shape == (3,)
    assert env.state_space.shape == (6,)
    venv = tokens.vector_env(3, num_agents=6, threads=2)
    obs, infos = venv.reset(seed=1)
    assert obs.shape == (3, 6, 4) and set(infos) == {"alive", "active", "received",
                                                     "action_mask"}
    assert infos["action_mask"].shape == (3, 6, 3)
    venv.close()
    envs = tokens.agent_vector_env(2, num_agents=6)
    assert envs.num_envs == 12
    envs.reset(seed=0)
    envs.step(envs.action_space.sample())
    envs.close()
    aec = tokens.env(num_agents=4)
    aec.reset(seed=0)
    assert aec.agent_selection == "agent_0"
    # by name, by path, through PettingZoo's registry, pickled
    assert seer_env.make("tokens_m", num_agents=3).max_num_agents == 3
    assert seer_env.make(str(tokens.folder), api="vector", num_envs=2).num_envs == 2
    pz = pettingzoo.make("parallel", "seer_env/tokens_m", num_agents=3)
    assert pz.possible_agents == ["agent_0", "agent_1", "agent_2"]
    copy = pickle.loads(pickle.dumps(env))
    assert copy.config == env.config
    report = seer_env.verify(str(tokens.folder), steps=50, threads=2, num_envs=2,
                             num_agents=6, goal=8)
    assert report.identical, str(report)
    auto = tokens.parallel_env(num_agents=8, goal=10**6)  # threads="auto": STPA decides
    auto.reset(seed=0)
    for _ in range(300):
        auto.step({a: 1 for a in auto.agents})
        if auto.stpa.decision is not None:
            break
    assert auto.stpa.decision is not None


def test_config_comes_from_c(tokens: sdk.Model) -> None:
    p = tokens.params["goal"]
    assert (p.kind, p.default, p.low, p.high) == ("uint", 40, 1.0, 1000000.0)
    assert tokens.defaults["max_cycles"] == 200
    env = tokens.parallel_env(goal=7)
    assert env.config["goal"] == 7 and env.config["max_cycles"] == 200
    for bad, match in [({"goal": 0}, r"tokens_m: goal=0 must be in \[1, 1000000\]"),
                       ({"lookahead": 0.0}, r"lookahead=0 must be in \(0, 1000000\]"),
                       ({"goal": 2.5}, "goal=2.5 must be an integer"),
                       ({"goal": "x"}, "must be a number"),
                       ({"mean_delay": float("nan")}, "mean_delay=nan"),
                       ({"num_agents": 2, "tokens_per_agent": 65}, "tokens_per_agent=65"),
                       ({"colour": 1}, "unknown config key")]:
        with pytest.raises(ConfigError, match=match):
            tokens.parallel_env(**bad)


def test_rebuilds_when_a_source_changes(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEER_ENV_CACHE", str(tmp_path / "cache"))
    folder = new_model(tmp_path, "edited")
    m = sdk.load(folder, build=False)
    assert m.build() == "built" and m.build() == "loaded"
    assert m.params["num_agents"].default == 8
    c = folder / "edited.c"
    c.write_text(c.read_text().replace(".def = 8, .lo = 2", ".def = 9, .lo = 2"))
    assert m.build() == "built"
    assert m.params["num_agents"].default == 9
    assert m.parallel_env().max_num_agents == 9


@pytest.mark.parametrize("edits,error,match", [
    ({"static int pass_on(": "static int pass_on(int oops"}, BuildError,
     r"(?s)compiling .* failed.*error"),
    ({".api_version = SEER_API_VERSION,": ".api_version = 1,"}, ModelError,
     "built against seer model API version 1, but this runtime implements version 3"),
    ({".api_version = SEER_API_VERSION,": ""}, ModelError,
     "add `.api_version = SEER_API_VERSION`"),
    ({".handle = broken_handle,": ".handle = NULL,"}, ModelError,
     "the handle handler is missing"),
    ({".def = 40, .lo = 1, .hi = 1000000,": ".def = 0, .lo = 1, .hi = 1000000,"}, ModelError,
     "the default of parameter 'goal' is out of its range"),
    # read as 40 by the cast it went through
    ({".def = 40, .lo = 1, .hi = 1000000,": ".def = 40.5, .lo = 1, .hi = 1000000,"},
     ModelError, "the default of integer parameter 'goal' is 40.5, not a whole number"),
    ({"const seer_model broken_model": "const seer_model broken_model2 = {0};\n"
      "const seer_model broken_model"}, BuildError, "exactly one model table"),
    # a parameter named like an env option: the face took the value given and
    # the model kept its default, unseen (env.config showed the face's)
    ({"goal": "threads"}, ModelError,
     r"parameter\(s\) \['threads'\] have the name of an env option"),
])
def test_broken_models_fail_clearly(tmp_path: Path, edits: dict[str, str], error: type,
                                    match: str, request: pytest.FixtureRequest) -> None:
    name = f"broken{request.node.callspec.indices['edits']}"
    folder = new_model(tmp_path, name, {k.replace("broken", name): v.replace("broken", name)
                                        for k, v in edits.items()})
    with pytest.raises(error, match=match) as info:
        _ = sdk.load(folder).native
    if error is BuildError:
        assert info.value.log or "model table" in str(info.value)


def test_every_key_a_face_takes_is_reserved_from_the_models() -> None:
    """RESERVED_PARAMS (what a model table may not name a parameter) holds every
    keyword the faces and adapters take for themselves: one a face added and
    the list missed would shadow a model's parameter of that name again."""
    import inspect

    from seer_env._bind.native import RESERVED_PARAMS
    from seer_env.faces import COMMON_KEYS
    from seer_env.faces.gym_vector import AgentVectorEnv
    from seer_env.faces.vector import SeerVectorEnv
    from seer_env.registry import make

    def keywords(fn: object, skip: set[str]) -> set[str]:
        sig = inspect.signature(fn)  # type: ignore[arg-type]
        return {p.name for p in sig.parameters.values()
                if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)} - skip
    taken = set(COMMON_KEYS) | {"mask_in_infos"}  # (the ParallelEnv pops it from its config)
    taken |= keywords(SeerVectorEnv.__init__, {"self", "model"})
    taken |= keywords(AgentVectorEnv.__init__, {"self", "venv"})
    taken |= keywords(make, set())
    if importlib.util.find_spec("torchrl") is not None:
        from seer_env.torchrl import SeerTorchEnv
        taken |= keywords(SeerTorchEnv.__init__, {"self"})
    taken |= {"env", "observation_key", "global_state_in_infos"}  # the RLlib adapter's config
    assert taken <= RESERVED_PARAMS, sorted(taken - RESERVED_PARAMS)


def test_a_models_message_in_any_bytes_is_a_seer_error(tmp_path: Path) -> None:
    """A model's failure message of non-ASCII text long enough for the
    runtime to cut it (mid-character) or of bytes that are no UTF-8 at all
    raised UnicodeDecodeError from the bindings, and the message was lost;
    now the SeerError it was, its text with the undecodable bytes replaced."""
    e400 = "\\xc3\\xa9" * 400  # 400 x "é" in a C string literal
    folder = new_model(tmp_path, "accents", {
        "    if (c->goal < c->tokens_per_agent) {":
        f'    if (c->goal == 41) {{ snprintf(err, errlen, "%s", "{e400}"); '
        "return SEER_E_CONFIG; }\n"
        '    if (c->goal == 42) { snprintf(err, errlen, "%s", "bad \\xff\\xfe bytes"); '
        "return SEER_E_CONFIG; }\n"
        "    if (c->goal < c->tokens_per_agent) {"})
    model = sdk.load(folder)
    with pytest.raises(ConfigError) as info:
        model.parallel_env(goal=41)
    assert "é" * 100 in str(info.value)
    with pytest.raises(ConfigError, match="bad \ufffd\ufffd bytes"):
        model.parallel_env(goal=42)


def test_describe_failure_is_a_config_error(tmp_path: Path) -> None:
    folder = new_model(tmp_path, "desc", {
        "    if (c->goal < c->tokens_per_agent) {":
        "    if (c->num_agents == 3 || c->goal < c->tokens_per_agent) {"})
    model = sdk.load(folder)
    with pytest.raises(ConfigError, match="desc: goal=40 must be >= tokens_per_agent=2"):
        model.parallel_env(num_agents=3)
    with pytest.raises(ConfigError, match="desc: goal=1 must be >= tokens_per_agent=2"):
        model.parallel_env(goal=1)


def test_an_empty_observation_is_refused_as_a_groups_is(tmp_path: Path) -> None:
    """describe giving obs_dim=0 (no groups): a ConfigError naming it, as for
    a group (an env with a Box of shape (0,) was made before)."""
    folder = new_model(tmp_path, "noobs", {"    out->obs_dim = OBS_DIM;":
                                           "    out->obs_dim = c->goal == 41 ? 0 : OBS_DIM;"})
    model = sdk.load(folder)
    with pytest.raises(ConfigError,
                       match=r"model 'noobs': obs_dim=0 \(an observation needs >= 1 element\)"):
        model.parallel_env(goal=41)
    assert model.parallel_env(goal=42).possible_agents


def test_cli_build_fails_when_the_default_configuration_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A model that compiles but whose describe refuses its own defaults is
    no usable build: `seer-env build` says so and exits 1 (it printed
    "built" and exited 0; check, run and loading then raised it)."""
    folder = new_model(tmp_path, "nodef", {
        "    if (c->goal < c->tokens_per_agent) {":
        "    if (c->goal == 40 || c->goal < c->tokens_per_agent) {"})
    assert cli.main(["build", str(folder), "--quiet"]) == 1
    out, err = capsys.readouterr()
    assert "nodef: model 'nodef' " in out
    assert ("seer-env: nodef built, but its default configuration is refused (describe "
            "failed: ConfigError: nodef: goal=40 must be >= tokens_per_agent=2 (an agent would be "
            "done with its own tokens)); check, run and loading raise it too") in err
    assert sdk.load(folder).parallel_env(goal=41).possible_agents


def test_handler_error_mid_episode_marks_the_env(tmp_path: Path) -> None:
    folder = new_model(tmp_path, "fails", {
        "    st->received++;\n":
        "    st->received++;\n    if (seer_step_index(ctx) == 3 && seer_self(ctx) == 1)\n"
        "        return 42;\n"})
    env = sdk.load(folder).parallel_env(num_agents=4)
    env.reset(seed=0)
    with pytest.raises(ModelError, match=r"event handler \(event type 0, TOKEN\) for entity 1 "
                                         "of instance 0 returned 42 at t="):
        for _ in range(10):
            env.step({a: 0 for a in env.agents})
    with pytest.raises(StateError, match="needs a reset: its last call failed: model 'fails'"):
        env.step({a: 0 for a in env.agents})
    env.reset(seed=1)
    env.step({a: 0 for a in env.agents})


def test_two_models_cannot_share_a_name(tmp_path: Path) -> None:
    a = sdk.load(new_model(tmp_path / "a", "twin"))
    with pytest.raises(ConfigError, match="two models are named 'twin'"):
        sdk.load(new_model(tmp_path / "b", "twin"))
    assert sdk.load(a.folder) is a  # the same folder again is the same model


def test_new_writes_a_clean_folder(tmp_path: Path) -> None:
    folder = sdk.new("clean", tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md", "__init__.py", "clean.c", "test_clean.py"]
    ruff = Path(sys.executable).with_name("ruff")
    if ruff.exists():
        subprocess.run([str(ruff), "check", "--no-cache", str(folder)], check=True)


def test_new_refuses_bad_names_and_existing_folders(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="identifier"):
        sdk.new("my-model", tmp_path)
    sdk.new("here", tmp_path)
    with pytest.raises(ConfigError, match="not empty"):
        sdk.new("here", tmp_path)


def test_cli_new_build_info_check_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["new", "clim", "--dir", str(tmp_path)]) == 0
    folder = str(tmp_path / "clim")
    assert cli.main(["build", folder, "--quiet"]) == 0
    assert re.search(r"clim: model 'clim' (built|up to date in the cache)", capsys.readouterr().out)
    assert cli.main(["info", folder, "--set", "num_agents=5"]) == 0
    out = capsys.readouterr().out
    assert "goal = 40  ([1, 1000000])" in out and "5 agents (agent_0" in out
    assert cli.main(["check", folder, "--quick", "--steps", "20", "--set", "num_agents=5"]) == 0
    assert "no finding" in capsys.readouterr().out
    # random actions within the template's masks (a forbidden one would fail the run)
    for policy in ("random", "constant"):
        assert cli.main(["run", folder, "--steps", "60", "--quiet", "--threads", "2",
                         "--policy", policy, "--set", "goal=8"]) == 0
    c = tmp_path / "clim" / "clim.c"
    c.write_text(c.read_text() + "\nint broken = ;\n")
    assert cli.main(["build", folder, "--quiet"]) == 1
    assert "error" in capsys.readouterr().err


def test_cli_parses_booleans_of_bool_parameters() -> None:
    assert cli._parse_sets(["classic=true", "width=4"], "pcs_v0") == {"classic": True, "width": 4}
    assert cli._parse_sets(["classic=No"], "pcs_v0") == {"classic": False}
    assert cli.main(["run", "pcs_v0", "--steps", "3", "--quiet", "--set", "classic=yes",
                     "--set", "width=4", "--set", "height=4"]) == 0


def test_get_include_holds_the_public_header() -> None:
    inc = Path(sdk.get_include())
    text = (inc / "seer.h").read_text()
    assert "#define SEER_API_VERSION 3" in text and (inc / "seer.h").is_file()
    # a model sees this folder and its own only: the runtime's headers are elsewhere
    assert sorted(p.name for p in inc.iterdir() if p.suffix == ".h") == ["seer.h"]


def test_build_from_a_fresh_process_uses_the_cache(tokens: sdk.Model) -> None:
    code = (f"import seer_env; m = seer_env.sdk.load({str(tokens.folder)!r}, build=False); "
            "print(m.build())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tokens.folder.parent).stdout
    assert out.strip() == "cache"


def test_top_level_get_include_is_the_sdk_folder() -> None:
    import ast

    import seer_env
    from seer_env import _paths

    assert seer_env.get_include() == sdk.get_include()
    assert "get_include" in seer_env.__all__
    assert (Path(seer_env.get_include()) / "seer.h").is_file()
    assert Path(seer_env.get_include()).is_absolute()
    # a low module: the standard library only
    tree = ast.parse(Path(_paths.__file__).read_text())
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    mods |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert mods <= {"__future__", "pathlib"}
