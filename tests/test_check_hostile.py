"""The contract checker against models that attack the process running them
(tests/models/hostile, enum hostile_mode): a hook that forks, a hook that
leaks memory, and hooks the checker calls itself (bounds, names) or that run
outside the checking mode's handlers (action_mask) that crash or never
return -- each finding names the hook."""

from __future__ import annotations

import importlib
import os
import re
import resource
import uuid
from pathlib import Path

import pytest

from seer_env import cli
from seer_env.check import MEMORY_MIN, check, default_memory, parse_memory
from seer_env.errors import ConfigError
from tests.models import HERE, load

HOSTILE = load("hostile")
check_module = importlib.import_module("seer_env.check.runner")  # seer_env.check: the function


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


def test_a_leak_is_a_memory_finding_naming_the_hook(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """act leaks 16 MiB in every call (malloc's failures it survives): the
    check ended with 'out of memory creating the runtime' (or a
    MemoryError) and no report."""
    marker = f"SEER_TEST_LEAK_{uuid.uuid4().hex}"
    monkeypatch.setenv("SEER_TEST_MARK", marker)
    rc = cli.main(["check", str(HERE / "hostile"), "--quick", "--set", "mode=2",
                   "--memory", "256M"])
    got = capsys.readouterr()
    out = got.out
    assert rc == 1, out + got.err
    assert "1 finding(s):" in out, out
    assert ("[memory] (isolation) model 'hostile': the process running the model ran out of "
            "its memory budget of 256 MiB in an isolation run (serial executor in checking "
            "mode, batch 2, seed 0): ") in out, out
    assert re.search(r"; in a serial rerun with every hook watched, memory grew most in act: "
                     r"by \d+ MiB in \d+ of its \d+ calls, by 16 MiB in the largest \(act for "
                     r"agent 1\)\n", out), out
    assert "skipped: the model ran out of memory (isolation)" in out
    assert "Traceback" not in got.err and "out of memory creating" not in out + got.err
    assert _processes_with(marker) == []


def test_a_death_with_memory_near_the_budget_is_a_memory_finding() -> None:
    """act leaks 8 MiB per call and writes to what malloc returned, NULL once
    the budget is spent: the death (SIGSEGV) is reported as memory running
    out, with the hook that grew it."""
    report = check(HOSTILE, {"mode": 7, "leak_mib": 8}, quick=True, steps=4, memory="256M",
                   progress=False)
    assert report.rules() == {"memory"}, str(report)
    message = report.findings[0].message
    assert ("ran out of its memory budget of 256 MiB in " in message
            and ": it died of SIGSEGV (Segmentation fault) with " in message), message
    assert message.endswith(", by 8 MiB in the largest (act for agent 1)"), message


def test_a_model_that_keeps_its_memory_checks_clean_under_a_small_budget() -> None:
    """The budget limits the data segment (RLIMIT_DATA), not reserved
    address space (8 runtime threads reserve 64 MiB arenas each), and the
    ThreadSanitizer run of the race pass, whose shadow memory is terabytes
    of reserved mappings, runs without it."""
    report = check(HOSTILE, {}, quick=True, memory=320 << 20, progress=False)
    assert report.ok, str(report)
    race = next(p for p in report.passes if p.name == "race")
    assert not race.status.startswith("skipped: the ThreadSanitizer run failed"), race.status


def test_a_budget_the_loaded_model_already_takes_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"model 'hostile': the memory budget of 64 MiB is "
                                          r"too small: the process running the model had "
                                          r"[\d.]+ MiB in use once the model was loaded"):
        check(HOSTILE, {}, quick=True, memory="64M", progress=False)


@pytest.mark.parametrize("text,size", [
    ("512M", 512 << 20), ("2G", 2 << 30), ("1.5G", 3 << 29), ("1048576", 1048576),
    ("256MiB", 256 << 20), ("64k", 64 << 10), ("1T", 1 << 40), (" 100B ", 100)])
def test_memory_sizes(text: str, size: int) -> None:
    assert parse_memory(text) == size
    assert cli.build_parser().parse_args(["check", "pcs_v0", "--memory", text]).memory == size


@pytest.mark.parametrize("text", ["", "12X", "-1G", "0", "0.1", "1.5.G", "G", "2 G B"])
def test_a_bad_memory_size_is_an_argparse_error(text: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args(["check", "pcs_v0", "--memory", text])
    assert exc.value.code == 2
    assert "seer-env check: error: argument --memory: " in capsys.readouterr().err
    with pytest.raises(ConfigError, match="check: memory: "):
        check(HOSTILE, {}, memory=text, progress=False)


def test_the_default_budget_is_half_the_memory_within_limits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pages = {"SC_PHYS_PAGES": 6 << 18, "SC_PAGE_SIZE": 4096}  # 6 GiB
    monkeypatch.setattr(os, "sysconf", lambda name: pages[name])
    inf = resource.RLIM_INFINITY
    limits = [(inf, inf)]
    monkeypatch.setattr(check_module.resource, "getrlimit", lambda which: limits[0])
    assert default_memory() == 3 << 30
    pages["SC_PHYS_PAGES"] = 1 << 18  # 1 GiB: at least MEMORY_MIN
    assert default_memory() == MEMORY_MIN == 1 << 30
    limits[0] = (600 << 20, inf)  # ulimit -d: at most what the child may have
    assert default_memory() == 600 << 20
