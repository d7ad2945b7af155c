"""The contract checker against models that attack the process running them
(tests/models/hostile, enum hostile_mode): a hook that forks, and hooks the
checker calls itself (bounds, names) or that run outside the checking
mode's handlers (action_mask) that crash or never return -- each finding
names the hook."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from seer_env import cli
from seer_env.check import check
from tests.models import HERE, load

HOSTILE = load("hostile")


def _processes_with(marker: str) -> list[int]:
    """Processes whose environment holds ``marker`` (inherited from this one)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if marker.encode() in (d / "environ").read_bytes():
                found.append(int(d.name))
        except OSError:
            continue
    return found


def test_a_hook_that_forks_is_a_finding_and_leaves_no_process(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """act forks in step 2: the copy answered the checker too (KeyError:
    'outcome', no report) and ~70 processes stayed behind."""
    marker = f"SEER_TEST_FORK_{uuid.uuid4().hex}"
    monkeypatch.setenv("SEER_TEST_MARK", marker)
    rc = cli.main(["check", str(HERE / "hostile"), "--quick", "--set", "mode=1"])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "1 finding(s):" in out, out
    assert ("[fork] (isolation) model 'hostile': a hook called fork() in an isolation run "
            "(serial executor in checking mode, batch 2, seed 0): act for agent 1 (step 3 of "
            "a serial rerun with every hook watched); the copy of the process running the "
            "model went on running it") in out, out
    assert "skipped: the model forked (isolation)" in out
    assert _processes_with(marker) == []


def test_a_fork_in_a_parallel_run_is_found_and_cleaned_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy made on a worker thread never comes back to Python: it is
    found as a process the child did not make, and stopped with its group."""
    marker = f"SEER_TEST_FORK_{uuid.uuid4().hex}"
    monkeypatch.setenv("SEER_TEST_MARK", marker)
    report = check(HOSTILE, {"mode": 1}, threads=(2,), batches=(2,), seeds=(0,), steps=4,
                   progress=False)
    assert report.rules() == {"fork"}, str(report)
    assert "act for agent 1" in report.findings[0].message
    assert _processes_with(marker) == []


@pytest.mark.parametrize("mode,rule,message", [
    (3, "hang", "model 'hostile': action_mask for agent 1 of instance 0 (t=3) did not return "
                "within the run's time budget of 8 s, in step 3 of an isolation run"),
    (4, "crash", "model 'hostile': the process running the model died of SIGSEGV "
                 "(Segmentation fault) in the state_bounds hook (called by the checker), "
                 "checking the outputs of its 12 steps of a bounds run"),
    (5, "hang", "model 'hostile': the obs_bounds hook (called by the checker) did not return "
                "within the run's time budget of 8 s, checking the outputs of its 12 steps "
                "of a bounds run"),
    (6, "crash", "model 'hostile': the process running the model died of SIGSEGV "
                 "(Segmentation fault) in the agent_name hook (called by the checker), while "
                 "loading the model and calling describe"),
], ids=["action_mask-hang", "state_bounds-crash", "obs_bounds-hang", "agent_name-crash"])
def test_crashes_and_hangs_name_the_hook(mode: int, rule: str, message: str) -> None:
    """action_mask was '?'; a hook the checker calls itself was blamed on
    'reading the outputs of step N' (or on describe)."""
    report = check(HOSTILE, {"mode": mode}, quick=True, budget=8, progress=False)
    assert [f.rule for f in report.findings] == [rule], str(report)
    assert report.findings[0].message.startswith(message), report.findings[0].message
