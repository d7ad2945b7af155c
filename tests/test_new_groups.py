"""``seer-env new`` writes models that show agent groups, action masks and
multi-discrete actions: the ring template's action mask, and ``--groups``'s
two-group model (``seer_env/templates/c_groups/``).  Each is written to a
folder outside the repository, built, checked (quick) and its own generated
tests run with pytest in a fresh process, as a user would."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import seer_env
from seer_env import cli, sdk
from seer_env.errors import ConfigError, InvalidActionError


def _pytest(folder: Path) -> subprocess.CompletedProcess[str]:
    """The folder's generated tests, from its parent (outside the repository)."""
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-W", "ignore::UserWarning", folder.name],
                          cwd=folder.parent, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("groups", [False, True], ids=["ring", "groups"])
def test_a_new_model_builds_checks_clean_and_passes_its_own_tests(tmp_path: Path,
                                                                  groups: bool) -> None:
    name = "grp_m" if groups else "ring_m"
    folder = sdk.new(name, tmp_path, groups=groups)
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md", "__init__.py", f"{name}.c", f"test_{name}.py"]
    assert sdk.build(folder).native.name == name
    report = seer_env.check(str(folder), quick=True, progress=False)
    assert report.ok and not report.findings, str(report)
    r = _pytest(folder)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(rf"\b{6 if groups else 5} passed", r.stdout), r.stdout


def test_groups_model_spaces_masks_and_batched_api(tmp_path: Path) -> None:
    model = sdk.load(sdk.new("grp_api", tmp_path, groups=True))
    env = model.parallel_env(num_scouts=1, num_workers=2)
    assert env.possible_agents == ["scout_0", "worker_0", "worker_1"]
    assert env.group_of("worker_1") == "worker"
    obs, _ = env.reset(seed=0)
    assert obs["scout_0"].shape == (3,)
    assert obs["worker_0"]["action_mask"].tolist() == [1, 1, 1, 1, 0]
    acts = {"scout_0": np.ones(1, np.float32), "worker_0": np.array([1, 0]),
            "worker_1": np.array([1, 1])}
    with pytest.raises(InvalidActionError, match=r"'worker_1'.*component 1 is 1"):
        env.step(acts)
    acts["worker_1"] = np.array([1, 0])
    env.step(acts)
    # the mask advises only with enforce_masks=False: the model ignores the hand-over
    lax = model.parallel_env(num_scouts=1, num_workers=2, enforce_masks=False)
    lax.reset(seed=0)
    lax.step({**acts, "worker_1": np.array([1, 1])})
    venv = model.vector_env(2, num_scouts=1, num_workers=2, threads=1)
    vobs, infos = venv.reset(seed=0)
    assert {g: o.shape for g, o in vobs.items()} == {"scout": (2, 1, 3), "worker": (2, 2, 5)}
    assert infos["action_mask"]["worker"][0, 0].tolist() == [True] * 4 + [False]
    envs = model.agent_vector_env(2, group="worker", num_scouts=1, num_workers=2, threads=1)
    o, i = envs.reset(seed=0)
    assert envs.num_envs == 4 and o.shape == (4, 5) and i["action_mask"].shape == (4, 5)
    assert envs.single_action_space.nvec.tolist() == [3, 2]


def test_groups_needs_a_c_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--groups\) writes the C template with groups; "
                                          r"there is no Python template"):
        sdk.new("nope", tmp_path, groups=True, python=True)
    assert list(tmp_path.iterdir()) == []
    r = subprocess.run([sys.executable, "-m", "seer_env.cli", "new", "nope", "--groups",
                        "--python", "--dir", str(tmp_path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "ConfigError" in r.stderr and "Traceback" not in r.stderr


def test_cli_new_groups_info_and_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["new", "grp_cli", "--groups", "--dir", str(tmp_path)]) == 0
    folder = str(tmp_path / "grp_cli")
    capsys.readouterr()
    assert cli.main(["info", folder]) == 0
    out = capsys.readouterr().out
    assert "5 agents (scout_0, scout_1, worker_0, worker_1, ...)" in out and "2 groups" in out
    assert ("group 'worker': 3 agents, observation (5,), action MultiDiscrete([3, 2]), "
            "action mask (5,), info values: finished, handed") in out
    assert "group 'scout': 2 agents, observation (3,), action Box(0, 1, (1,)), info values: "\
           "found" in out
    for policy in ("random", "constant"):  # within the masks, a dict of arrays per group
        assert cli.main(["run", folder, "--steps", "50", "--quiet", "--threads", "1",
                         "--num-envs", "2", "--policy", policy]) == 0
    assert "mean reward per agent-step" in capsys.readouterr().out


def test_the_checker_holds_each_group_to_its_own_bounds(tmp_path: Path) -> None:
    folder = sdk.new("grp_bounds", tmp_path, groups=True)
    c = folder / "grp_bounds.c"
    text = c.read_text()
    old = "        out->obs[2] = (float)st->fatigue / (float)c->max_fatigue;\n"
    assert old in text
    c.write_text(text.replace(old, "        out->obs[2] = 1.5f;\n"))
    report = seer_env.check(str(folder), quick=True, progress=False)
    assert not report.ok
    assert re.search(r"agent worker_0, obs\[2\] = 1\.5 is above the declared high bound 1 "
                     r"\(declared \[0, 1\]\)", str(report)), str(report)
    # the scouts' obs[0] (effort, in [0, 1]) bounds no worker's obs[0] (its queue)
    assert "obs[0]" not in str(report)
