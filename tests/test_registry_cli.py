"""``seer_env.make``, PettingZoo's registry and the ``seer-env`` command line."""

from __future__ import annotations

import argparse
import io
import re

import gymnasium
import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import parallel_api_test

import seer_env
from seer_env import cli
from seer_env.envs import pcs_v0
from seer_env.errors import ConfigError
from seer_env.faces.gym_vector import AgentVectorEnv

SMALL = dict(width=3, height=2, max_cycles=5, threads=1)


def test_make_every_api() -> None:
    par = seer_env.make("pcs_v0", **SMALL)
    assert isinstance(par, pcs_v0.PcsParallelEnv)
    aec = seer_env.make("pcs_v0", api="aec", **SMALL)
    assert isinstance(aec, pettingzoo.AECEnv)
    venv = seer_env.make("pcs_v0", api="vector", num_envs=2, **SMALL)
    assert isinstance(venv, pcs_v0.PcsVectorEnv) and venv.num_envs == 2
    gv = seer_env.make("pcs_v0", api="agent_vector", num_envs=2, autoreset_mode="same_step",
                       **SMALL)
    assert isinstance(gv, AgentVectorEnv) and isinstance(gv, gymnasium.vector.VectorEnv)
    assert gv.num_envs == 12
    assert gv.metadata["autoreset_mode"] is gymnasium.vector.AutoresetMode.SAME_STEP
    with pytest.raises(ConfigError, match="api="):
        seer_env.make("pcs_v0", api="gym")
    with pytest.raises(ConfigError, match="unknown env"):
        seer_env.make("nope_v0")
    for e in (par, venv, gv):
        e.close()


def test_an_empty_name_is_no_env_and_no_folder(tmp_path, monkeypatch) -> None:
    """make("") took the empty name for the current directory (Path("") is
    "."), tried to build whatever C files were there and registered the
    folder under its name; "." still says the current directory."""
    from seer_env import sdk

    (tmp_path / "junk.c").write_text("int not_a_model;\n")
    monkeypatch.chdir(tmp_path)
    before = seer_env.available()
    for name in ("", "   "):
        with pytest.raises(ConfigError, match="is empty"):
            seer_env.make(name)
    with pytest.raises(ConfigError, match="an empty path"):
        sdk.load("")
    assert seer_env.available() == before


def test_pettingzoo_registry() -> None:
    ids = seer_env.register_pettingzoo()  # idempotent; import seer_env already did it
    assert {"seer_env/pcs_v0", "seer_env/phold_v0"} <= set(ids)
    for env_id in ids:
        assert env_id.replace("_v", "-v") in pettingzoo.parallel_registry
        assert env_id.replace("_v", "-v") in pettingzoo.aec_registry
    env = pettingzoo.make("parallel", "seer_env/pcs_v0", **SMALL)
    ref = pcs_v0.parallel_env(**SMALL)
    assert isinstance(env, pcs_v0.PcsParallelEnv)
    o1, _ = env.reset(seed=7)
    o2, _ = ref.reset(seed=7)
    assert all(np.array_equal(o1[a], o2[a]) for a in ref.possible_agents)
    # PettingZoo's max_cycles argument reaches the env
    short = pettingzoo.make("parallel", "seer_env/pcs-v0", max_cycles=2, width=2, height=2)
    short.reset(seed=0)
    short.step({a: 0 for a in short.agents})
    *_, trunc, _ = short.step({a: 0 for a in short.agents})
    assert all(trunc.values()) and short.agents == []
    aec = pettingzoo.make("aec", "seer_env/phold_v0", num_entities=4, max_cycles=3)
    aec.reset(seed=1)
    assert aec.agent_selection == "entity_0"
    parallel_api_test(pettingzoo.make("parallel", "seer_env/phold_v0", num_entities=5,
                                      max_cycles=8, threads=1), num_cycles=10)
    for e in (env, ref, short):
        e.close()


def _all_actions(p: argparse.ArgumentParser) -> list[tuple[str, argparse.Action]]:
    out = []
    for act in p._actions:
        if isinstance(act, argparse._SubParsersAction):
            for name, sp in act.choices.items():
                out += [(f"{name} {a.dest}", a) for _, a in _all_actions(sp)]
        elif not isinstance(act, argparse._HelpAction):
            out.append((act.dest, act))
    return out


def test_every_cli_option_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli.build_parser()
    actions = _all_actions(parser)
    assert {"run steps", "run policy", "run threads", "verify threads", "bench rounds",
            "bench what"} <= {name for name, _ in actions}
    missing = [name for name, a in actions if not a.help]
    assert missing == []
    for cmd in ("run", "verify", "bench"):
        with pytest.raises(SystemExit) as exc:
            cli.main([cmd, "--help"])
        assert exc.value.code == 0
        text = capsys.readouterr().out
        assert text.startswith(f"usage: seer-env {cmd}")
        assert "\n\n" in text.split("options:")[0]  # a description paragraph


@pytest.mark.parametrize("policy", ["random", "constant"])
def test_cli_run_prints_rates(policy: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["run", "pcs_v0", "--steps", "30", "--policy", policy, "--threads", "1",
                   "--num-envs", "2", "--set", "width=4", "--set", "height=4", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0
    assert f"2 instance(s) x 16 agents, executor=parallel, threads=1, policy={policy}" in out
    m = re.search(r"30 steps in [\d.]+ s: ([\d,.]+) steps/s, ([\d,]+) agent-steps/s, "
                  r"([\d,]+) events/s \(([\d,]+) events\)", out)
    assert m is not None, out
    assert int(m.group(4).replace(",", "")) > 0


@pytest.mark.parametrize("args", [
    ["run", "pcs_v0", "--steps", "-5"], ["run", "pcs_v0", "--steps", "0"],
    ["run", "pcs_v0", "--num-envs", "0"], ["run", "pcs_v0", "--seed", "-1"],
    ["run", "pcs_v0", "--threads", "0"], ["verify", "pcs_v0", "--threads", "-2"],
    ["trace", "pcs_v0", "--capacity", "0"], ["bench", "pcs", "--rounds", "0"],
    ["check", "pcs_v0", "--steps", "x"]])
def test_cli_refuses_counts_out_of_range(args: list[str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """``run --steps -5`` ran "-5 steps" and printed negative rates (rc 0)."""
    with pytest.raises(SystemExit) as exc:
        cli.main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "is below" in err or "is not an integer" in err


def test_cli_trace_to_a_missing_folder_fails_before_the_run(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """It traced the whole run, then died on a FileNotFoundError traceback."""
    out = tmp_path / "nowhere" / "t.json"
    assert cli.main(["trace", "phold_v0", "--steps", "2", "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert f"its folder {out.parent} does not exist" in captured.err
    assert "trace events" not in captured.out  # refused before tracing
    assert not out.parent.exists()


@pytest.mark.parametrize("args,says", [
    # a --set of a key the command sets from an option of its own: a TypeError's
    # traceback ("got multiple values for keyword argument 'threads'"), rc 1
    (["run", "phold_v0", "--steps", "2", "--set", "threads=2"],
     "--set threads=2: threads is this command's option --threads: give --threads instead"),
    (["run", "phold_v0", "--steps", "2", "--set", "num_envs=2"], "option --num-envs"),
    (["verify", "phold_v0", "--steps", "2", "--set", "executor=serial"], "option --executor"),
    (["trace", "phold_v0", "--steps", "2", "--set", "threads=2"], "option --threads"),
    # rc 1 (for check: "the model breaks the contract") where it could not start
    (["run", "phold_v0", "--steps", "2", "--set", "num_entities"],
     "--set expects key=value, got 'num_entities'"),
    (["check", "phold_v0", "--quick", "--budget", "-1"],
     "--budget must be a positive number of seconds, got -1.0"),
    (["check", "phold_v0", "--quick", "--budget", "nan"], "got nan"),
    # a literal too deep for Python's parser: RecursionError's traceback
    (["run", "phold_v0", "--steps", "2", "--set", "num_entities=" + "-" * 3000 + "1"],
     "num_entities='----"),
])
def test_cli_refuses_bad_sets_and_options_in_one_line(
        args: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("seer-env: ConfigError: ") and says in err
    assert "Traceback" not in err and len(err) < 400  # a deep value is cut short


def test_cli_output_paths_it_cannot_write_are_one_line_errors(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """new --dir FILE and trace -o FOLDER raised OSError tracebacks (trace's
    after the whole traced run)."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert cli.main(["new", "okname", "--dir", str(afile)]) == 2
    assert capsys.readouterr().err.startswith("seer-env: NotADirectoryError: ")
    assert cli.main(["trace", "phold_v0", "--steps", "2", "-o", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert f"cannot write the trace to {tmp_path}: it is a folder" in captured.err
    assert "trace events" not in captured.out  # refused before tracing


def test_cli_progress_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    args = ["run", "phold_v0", "--steps", "5", "--set", "num_entities=8"]
    err = Tty()
    monkeypatch.setattr("sys.stderr", err)
    assert cli.main(args) == 0
    assert re.search(r"0/5 \[", err.getvalue())  # tqdm's bar, on a terminal
    quiet = io.StringIO()
    monkeypatch.setattr("sys.stderr", quiet)
    assert cli.main(args) == 0
    assert "/5 [" not in quiet.getvalue()  # not a terminal: no bar


def test_cli_verify(capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["verify", "phold_v0", "--steps", "20", "--threads", "2", "--num-envs", "2",
                   "--set", "num_entities=16"])
    assert rc == 0 and "identical" in capsys.readouterr().out


def test_metadata_is_a_class_attribute_of_each_models_env_class():
    from seer_env.envs import pcs_v0, phold_v0

    a, b = pcs_v0.parallel_env(width=2, height=2), phold_v0.parallel_env(num_entities=2)
    assert type(a).metadata is a.metadata and a.metadata["name"] == "pcs_v0"
    assert type(b).metadata["name"] == "phold_v0" and type(a) is not type(b)
    assert type(a) is type(pcs_v0.parallel_env(width=3, height=3))
    assert a.metadata["is_parallelizable"] and "render_fps" in a.metadata
    a.close()
    b.close()


def test_cli_names_a_model_by_its_declared_name_everywhere(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """A model folder whose folder name is not the model's declared name:
    verify and run named it by the folder given (check and info by the
    declared name); all name it by its declared name now, the folder given as
    where it was loaded from."""
    from seer_env import sdk

    folder = sdk.new("decl13", tmp_path)
    where = folder.rename(tmp_path / "elsewhere")
    init = where / "__init__.py"
    init.write_text(init.read_text().replace("MODEL = declare(__name__)",
                                             'MODEL = declare(__name__, name="decl13")'))
    given = str(where)
    assert cli.main(["verify", given, "--steps", "3"]) == 0
    assert capsys.readouterr().out.startswith(
        f"decl13 (loaded from {given}): serial vs parallel (threads=2, num_envs=1, 3 steps): "
        "identical")
    assert cli.main(["run", given, "--steps", "2", "--threads", "1", "--quiet"]) == 0
    assert capsys.readouterr().out.startswith(f"decl13 (loaded from {given}): 1 instance(s)")
    assert cli.main(["info", given]) == 0
    assert capsys.readouterr().out.startswith(f"decl13: model 'decl13' ({where})")
    assert cli.main(["check", given, "--quick", "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("contract check of model 'decl13':"), out
    assert "elsewhere" not in out
