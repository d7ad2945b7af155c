"""The contract checker: every rule is caught on a model that breaks it, and
every shipped model passes; a model that crashes or hangs the process
running it is a finding, and Ctrl-C stops the check."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import seer_env
from seer_env import cli
from seer_env.check import EPISODE_CAP, FIXES, PASSES, RESET_EVERY, check, run_budget
from seer_env.errors import ConfigError
from tests.models import load as load_test_model

ROOT = Path(__file__).resolve().parent.parent
ROGUE = load_test_model("rogue")
WRECK = load_test_model("wreck")  # enum wreck_mode in tests/models/wreck/wreck.c
ROGUE2 = load_test_model("rogue2")  # enum rogue2_mode in tests/models/rogue2/rogue2.c
LEAKY = load_test_model("leaky")  # keeps a count in heap memory of its own
LOOP, ABORT, WILD, EXIT, STORM, LATE_READ, FAIL_LATE, SILENT, THIRD, DESCRIBE = range(1, 11)
PASS_NAMES = [p.name for p in PASSES]
QUICK = dict(steps=14, seeds=(0,), threads=(1, 2, 8), batches=(1, 3), progress=False)

# mode -> (the rule its breach is reported under, fragments of the message)
ROGUE_MODES = {
    1: ("entity-state", ["handle for entity 1 of instance", "event type 0, TICK, at t=2.",
                         "wrote memory 8 bytes past the end of entity 1's state"]),
    2: ("entity-state", ["read memory 0 bytes past the end of entity 1's state", "seer_snapshot"]),
    3: ("static-data", ["wrote the static variable 'rogue_counter'"]),
    4: ("randomness", ["called rand()", "seer_rng_"]),
    5: ("clock", ["called time()", "seer_now"]),
    6: ("lookahead", ["inside the lookahead", "for entity 2: t=2.", "< now + lookahead = 2."]),
    7: ("snapshot", ["wrote the published snapshot record of entity 1"]),
    8: ("config", ["wrote the configuration"]),
    9: ("boundary-write", ["observe for agent 1 of instance 0 (t=3)",
                           "wrote the live state of entity 1"]),
    10: ("hidden-state", ["second serial run vs the first: first difference at step"]),
    11: ("instance-rng", ["random draw without an entity", "boundary hook of instance"]),
    12: ("entity-state", ["handle for entity 1", "dereferenced a NULL pointer",
                          "seer_entity_state returns NULL outside the boundary"]),
    # it was reported as order, shared-heap and determinism findings, and the
    # last agent's overflowed the host's buffer
    13: ("output-row", ["observe for agent 1 of instance 0",
                        "wrote byte 0 past the end of its obs row (12 bytes)"]),
}


@pytest.mark.parametrize("mode", sorted(ROGUE_MODES))
def test_each_rule_is_caught(mode: int) -> None:
    rule, fragments = ROGUE_MODES[mode]
    # mode 10's thread-local counter counts mod 5: a run of 20 steps (the
    # replay pass runs at least the whole episode, max_cycles 20) leaves it
    # where it was, and the replay pass sees nothing
    report = check(ROGUE, {"mode": mode, "at_step": 2}, **{**QUICK, "steps": 14 if mode != 10
                                                            else 22})
    assert not report.ok and rule in report.rules(), str(report)
    finding = next(f for f in report.findings if f.rule == rule)
    assert "model 'rogue'" in finding.message
    for frag in fragments:
        assert frag in finding.message, (frag, finding.message)
    assert finding.fix == FIXES[rule] and str(finding).startswith(f"[{rule}]")


def test_a_null_pointer_stops_the_check_before_a_plain_run() -> None:
    report = check(ROGUE, {"mode": 12}, **QUICK)
    assert [p.status for p in report.passes][1:] == [
        "skipped: a plain run would crash (NULL pointer)"] * (len(PASS_NAMES) - 1)
    assert [p.runs for p in report.passes] == [1] + [0] * (len(PASS_NAMES) - 1)


def test_a_well_behaved_model_passes_every_pass() -> None:
    report = check(ROGUE, {"mode": 0}, **QUICK)
    assert report.ok, str(report)
    assert [p.name for p in report.passes] == PASS_NAMES == [
        "isolation", "uninit", "replay", "order", "race", "bounds", "matrix", "snapshot"]
    assert all(p.status == "ok" and p.runs > 0 for p in report.passes), str(report)
    assert "no finding" in str(report)


def test_state_kept_outside_the_runtime_is_caught_by_the_snapshot_pass() -> None:
    """leaky counts in a heap block of its own, zeroed by init: every run from a
    reset agrees with every other (no other pass sees it), but a restored
    snapshot does not hold the count."""
    report = check(LEAKY, {}, **QUICK)
    assert report.rules() == {"restore"}, str(report)
    (finding,) = report.findings
    assert finding.pass_name == "snapshot"
    assert "a snapshot taken after step 5 and restored into the same runtime does not " \
           "reproduce the steps that followed it" in finding.message
    assert "agent agent_0, obs[1]" in finding.message, finding.message
    assert finding.fix == FIXES["restore"] and "runtime-owned memory" in finding.fix
    status = {p.name: p.status for p in report.passes}
    assert status.pop("snapshot") == "finding" and set(status.values()) == {"ok"}, str(report)


def test_order_dependence_alone_is_caught_by_the_order_pass() -> None:
    # a live read of the neighbour: the shuffled visiting order and the
    # parallel executor see other values than the serial run
    report = check(ROGUE, {"mode": 2, "at_step": 1}, **QUICK)
    assert {"entity-state", "order", "determinism"} <= report.rules()


@pytest.mark.parametrize("name,config", [
    ("phold_v0", {"num_entities": 24}),
    ("pcs_v0", {"width": 5, "height": 4}),
    ("aircraft_v0", {"num_uavs": 12, "arena_size": 100.0}),
    ("aircraft_v0", {"num_uavs": 8, "discrete": True}),
])
def test_shipped_models_pass(name: str, config: dict) -> None:
    report = seer_env.check(name, config, **QUICK)
    assert report.ok, str(report)


def test_lookahead_zero_checks_the_optimistic_executor() -> None:
    report = seer_env.check("pcs_v0", {"classic": True, "width": 4, "height": 3}, **QUICK)
    assert report.ok, str(report)
    status = {p.name: p.status for p in report.passes}
    assert status.pop("order") == "skipped: lookahead 0 (no windows to shuffle)"
    assert set(status.values()) == {"ok"}


def test_cli_check_exit_status(capsys: pytest.CaptureFixture) -> None:
    folder = str(ROGUE.folder)
    assert cli.main(["check", folder, "--quick", "--steps", "10", "--set", "mode=4"]) == 1
    assert "[randomness]" in capsys.readouterr().out
    assert cli.main(["check", folder, "--quick", "--steps", "10"]) == 0


def test_the_default_steps_cover_the_episode_and_main_runs_do_not_reset() -> None:
    lines: list[str] = []
    report = check(ROGUE, {"mode": 0}, seeds=(0,), threads=(1, 2), batches=(1, 3),
                   progress=False, log=lines.append)
    assert report.ok, str(report)
    steps = {p.name: p.steps for p in report.passes}
    runs = {p.name: p.runs for p in report.passes}
    assert steps["isolation"] == min(20, EPISODE_CAP) * 2  # max_cycles 20, two instances
    # matrix: 2 batches x 1 seed x 2 thread counts, plus a reset run per batch
    # and thread count, each resetting every instance twice
    assert runs["matrix"] == 4 + 4
    assert steps["matrix"] == 20 * (1 + 1 + 3 + 3) + 2 * (34 * 1 + 102 * 3)
    matrix = [_kw_of(x) for x in lines if x.startswith("matrix:")]
    assert [kw["reset_every"] for kw in matrix] == [0] * 4 + [RESET_EVERY] * 4
    assert all(kw["reset_every"] == 0 for x in lines if not x.startswith("matrix:")
               and not x.endswith(": job") for kw in [_kw_of(x)])


def _kw_of(line: str) -> dict:
    import ast

    return ast.literal_eval(line.split(": ", 1)[1])


def test_a_breach_from_step_50_on_is_caught_by_runs_as_long_as_the_episode() -> None:
    late = {"mode": LATE_READ, "at_step": 50}
    few = dict(seeds=(0,), threads=(1, 2), batches=(1,), progress=False)
    # wreck's max_cycles is 80: the default runs cover it
    report = check(WRECK, late, **few)
    finding = next(f for f in report.findings if f.rule == "entity-state")
    assert finding.pass_name == "isolation"
    assert "handle for entity 1 of instance 0 (event type 0, TICK, at t=50." in finding.message
    assert "read memory 0 bytes past the end of entity 1's state, where entity 2's state " \
           "(field 'ticks', byte 0) would be if entity states were one array" in finding.message
    assert check(WRECK, late, steps=60, **few).rules() >= {"entity-state"}
    # runs shorter than that, and reset runs (every 17 steps), never get there
    assert check(WRECK, late, steps=40, **few).ok


@pytest.mark.parametrize("extra", [[], ["--steps", "10"]])
def test_quick_covers_a_handler_error_late_in_the_first_episode(
        extra: list[str], capsys: pytest.CaptureFixture) -> None:
    # fails from t = 31 on; --quick's main runs last 40 steps (or 10), the
    # replay pass a whole episode (80 steps)
    folder = str(WRECK.folder)
    assert cli.main(["check", folder, "--quick", *extra, "--set", f"mode={FAIL_LATE}"]) == 1
    out = capsys.readouterr().out
    # with 40-step runs the isolation pass meets it first; with 10, the replay pass
    who = "(replay)" if extra else "(isolation)"
    assert f"[handler-error] {who} model 'wreck': handle handler (event type 0, TICK) for " \
           "entity 1 of instance 0 failed at t=31." in out
    assert "failing on purpose from fail_time on" in out


def test_a_model_table_with_another_name_is_a_finding() -> None:
    report = check(load_test_model("misnamed"), seeds=(0,), threads=(1,), batches=(1,),
                   progress=False)
    assert report.rules() == {"name"}
    f = report.findings[0]
    assert f.pass_name == "table" and f.fix == FIXES["name"]
    assert "model 'misnamed'" in f.message and "its C table's .name is 'someone_else'" in \
        f.message
    assert all(p.status == "ok" for p in report.passes)
    # a shipped env NAME_vN may keep NAME in its table
    assert "name" not in seer_env.check("phold_v0", {"num_entities": 8}, steps=4, seeds=(0,),
                                        threads=(1,), batches=(1,), progress=False).rules()


@pytest.mark.parametrize("kw,match", [
    (dict(budget=0), "budget=0 must be a positive number"),
    (dict(budget=-1.0), "budget=-1.0 must be a positive number"),
    (dict(budget=float("nan")), "budget=nan must be a positive number"),
    (dict(budget="5"), "budget='5' must be a positive number"),
    (dict(seeds=(-1,)), r"seeds holds -1; each must be a whole number in \[0, "),
    (dict(seeds=(0.5,)), r"seeds holds 0.5"),
    (dict(threads=(0,)), r"threads holds 0; each must be a whole number in \[1, 1024\]"),
    (dict(batches=5), r"batches=5 must be a list of whole numbers"),
    (dict(seeds=()), "seeds, threads and batches must not be empty"),
    (dict(steps=2.5), r"steps=2.5 must be a whole number >= 0"),
    (dict(steps=-1), r"steps=-1 must be a whole number >= 0"),
])
def test_bad_check_arguments_are_config_errors(kw: dict, match: str) -> None:
    """Refused before anything runs: the child process took them as they came
    (a budget of 0 gave a correct model a [hang] finding, a seed of -1 came
    back as a RuntimeError carrying the child's traceback, steps=2.5 ran)."""
    with pytest.raises(ConfigError, match=match):
        seer_env.check("phold_v0", {"num_entities": 8}, progress=False, **kw)


def test_a_describe_without_a_reason_names_the_model(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(ConfigError, match=r"^model 'wreck': invalid configuration "
                                          r"\(describe gave no reason\)$"):
        check(WRECK, {"mode": SILENT}, progress=False)
    assert cli.main(["check", str(WRECK.folder), "--set", f"mode={SILENT}"]) == 2
    assert "ConfigError: model 'wreck': invalid configuration" in capsys.readouterr().err


def test_differences_name_the_element_and_the_hooks() -> None:
    # the thread-local counter: entity 1's state differs, so its handlers did it
    report = check(ROGUE, {"mode": 10}, **{**QUICK, "steps": 22})
    f = next(f for f in report.findings if f.rule == "hidden-state")
    assert "; the state of entity 1 differs too (fields value) after step 1: its act or handle " \
           "calls in that step wrote other values (or another entity's handler wrote there)" \
           in f.message


def test_global_state_differences_name_their_element() -> None:
    from seer_env.check.runs import _Run, first_difference

    native = ROGUE.native
    _, sz = native.describe({})
    import numpy as np

    step = {k: np.zeros((1, 6), np.float32) for k in ("reward",)}
    step.update(obs=np.zeros((1, 6, 3), np.float32), terminated=np.zeros((1, 6), bool),
                truncated=np.zeros((1, 6), bool), info=np.zeros((1, 6, 0)),
                alive=np.ones((1, 6), bool), active=np.ones((1, 6), bool),
                mask=np.zeros((1, 6, 0), bool),
                state=np.zeros((1, 6 * sz.entity_size), np.uint8),
                **{"global": np.zeros((1, 4), np.float32)})
    other = {k: v.copy() for k, v in step.items()}
    other["global"][0, 2] = 1.0
    diff = first_difference(_Run([step]), _Run([other]), native, sz.entity_size, ["a"] * 6)
    assert diff == ("step 0, instance 0, global[2]: 0.0 vs 1.0; the entity states are equal: "
                    "global_state computed it from something else")


def test_the_default_budget_grows_with_the_run() -> None:
    assert run_budget({"steps": 100, "batch": 2}, 50) == 30.0 + 1e-3 * 100 * 2 * 50
    assert run_budget({"steps": 100, "batch": 2}, 50, budget=4) == 4.0


# -- crashes and hangs: each check runs in a fresh interpreter with a timeout, so a
# checker that hung would fail the test, not stall the suite

CHECK_IN_SUBPROCESS = """
import json, sys
sys.path.insert(0, {root!r})
from tests.models import load
from seer_env.check import check
r = check(load("wreck"), {config!r}, progress=False, **{kw!r})
print(json.dumps({{"findings": [[f.rule, f.pass_name, f.message, f.fix] for f in r.findings],
                   "passes": [[p.name, p.status, p.runs] for p in r.passes]}}))
"""


def check_wreck(config: dict, timeout: float = 240, **kw: object) -> dict:
    code = CHECK_IN_SUBPROCESS.format(root=str(ROOT), config=config, kw=kw)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the check hung (killed after {timeout} s)") from None
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


FEW = dict(steps=14, seeds=[0], threads=[1, 2], batches=[1, 3])
AT_STEP_2 = "in handle for entity 1 of instance 0 (event type 0, TICK, at t=2."
ISOLATION_RUN = ("of an isolation run (serial executor in checking mode, batch 2, seed 0)")


@pytest.mark.parametrize("mode,detail", [
    (ABORT, "died of SIGABRT (Aborted: abort() or a failed assert())"),
    (WILD, "died of SIGSEGV (Segmentation fault)"),
    (EXIT, "exited with status 3 (exit() called?)"),
])
def test_a_handler_that_kills_the_process_is_a_crash(mode: int, detail: str) -> None:
    got = check_wreck({"mode": mode}, **FEW)
    [(rule, pass_name, message, fix)] = got["findings"]
    assert (rule, pass_name, fix) == ("crash", "isolation", FIXES["crash"])
    assert message.startswith(f"model 'wreck': the process running the model {detail} "
                              f"{AT_STEP_2}")
    assert message.endswith(f"in step 3 {ISOLATION_RUN}")
    assert got["passes"] == [["isolation", "finding", 1]] + [
        [name, "skipped: the model crashed (isolation)", 0] for name in PASS_NAMES[1:]]


def test_a_handler_that_never_returns_is_a_hang() -> None:
    got = check_wreck({"mode": LOOP}, budget=2, **FEW)
    [(rule, pass_name, message, fix)] = got["findings"]
    assert (rule, pass_name, fix) == ("hang", "isolation", FIXES["hang"])
    assert message.startswith("model 'wreck': handle for entity 1 of instance 0 (event type 0, "
                              "TICK, at t=2.")
    assert (f"did not return within the run's time budget of 2 s, in step 3 {ISOLATION_RUN}; "
            "the process running it was stopped") in message
    assert [p[1] for p in got["passes"]][1:] == [
        "skipped: the model hung (isolation)"] * (len(PASS_NAMES) - 1)


def test_a_step_that_never_ends_is_a_hang_too() -> None:
    # every handler returns, but each schedules another event at the same time
    got = check_wreck({"mode": STORM}, budget=2, **FEW)
    [(rule, pass_name, message, _)] = got["findings"]
    assert (rule, pass_name) == ("hang", "isolation")
    assert message.startswith("model 'wreck': an isolation run (serial executor in checking "
                              "mode, batch 2, seed 0) did not finish within its time budget "
                              "of 2 s: it was in step 3, still calling handlers (")
    assert "calls, the last handle for entity 1 of instance 0 (event type 0, TICK, at t=2." \
        in message


def test_a_crash_in_a_plain_run_is_located_by_a_checked_rerun() -> None:
    # abort() in instance 2 only: the first run of 3 instances (the matrix's)
    got = check_wreck({"mode": THIRD}, **FEW)
    [(rule, pass_name, message, _)] = got["findings"]
    assert (rule, pass_name) == ("crash", "matrix")
    assert message == (
        "model 'wreck': the process running the model died of SIGABRT (Aborted: abort() or a "
        "failed assert()) in step 3 of a matrix run (parallel executor, threads=1, batch 3, "
        "seed 0); a serial rerun in checking mode died the same way, in handle for entity 1 "
        "of instance 2 (event type 0, TICK, at t=2.25)")
    status = {name: st for name, st, _ in got["passes"]}
    # the race pass's instrumented run meets the abort too (its many instances)
    assert status.pop("race").startswith("skipped: the ThreadSanitizer run failed")
    assert status == {name: "ok" for name in PASS_NAMES if name != "race"} | {
        "matrix": "finding", "snapshot": "skipped: the model crashed (matrix)"}


def test_a_describe_that_kills_the_process_is_a_crash() -> None:
    got = check_wreck({"mode": DESCRIBE}, **FEW)
    assert got["findings"] == [[
        "crash", "describe", "model 'wreck': the process running the model died of SIGABRT "
        "(Aborted: abort() or a failed assert()) in the describe hook (called by the checker), "
        "while loading the model and calling describe", FIXES["crash"]]]
    assert [p[1] for p in got["passes"]] == [
        "skipped: the model crashed in describe"] * len(PASS_NAMES)


def test_ctrl_c_stops_the_check_and_its_child() -> None:
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to find the child process")
    cmd = [sys.executable, "-m", "seer_env.cli", "check", str(WRECK.folder), "--set",
           f"mode={LOOP}", "--budget", "600", "--steps", "14"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        child = None
        deadline = time.monotonic() + 120
        while child is None and time.monotonic() < deadline and proc.poll() is None:
            child = next((pid for pid in _children(proc.pid)
                          if "_check_child.py" in _cmdline(pid)), None)
            time.sleep(0.2)
        assert child is not None, "the checker started no child process"
        time.sleep(1.0)  # let it reach the handler that loops
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (out, err)
    assert "seer-env check: interrupted (Ctrl-C): the check and the process running the " \
           "model were stopped; no report" in err
    assert "Traceback" not in err
    assert not Path(f"/proc/{child}").exists() or "Z" in _state(child)


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = next(int(line.split()[1]) for line in (d / "status").read_text()
                            .splitlines() if line.startswith("PPid:"))
            except (OSError, StopIteration, ValueError):
                continue
            if ppid == pid:
                out.append(int(d.name))
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _state(pid: int) -> str:
    try:
        return next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                    if line.startswith("State:"))
    except (OSError, StopIteration):
        return ""



@pytest.mark.parametrize("mode,rule,pass_name", [
    (1, "obs-bounds", "bounds"),       # -5.5e25 in [0, 1e6]
    (3, "non-finite", "bounds"),       # a NaN reward
    (7, "uninitialised", "uninit"),    # observe copies an uninitialised local
    (8, "shared-heap", "race"),        # one heap scratch buffer for every handler
    # global_state writes past its row (missed, or taken for a data race, before)
    (11, "output-row", "isolation"),
])
def test_the_default_check_catches_output_and_memory_breaches(
        mode: int, rule: str, pass_name: str) -> None:
    report = check(ROGUE2, {"mode": mode}, progress=False)
    assert [(f.rule, f.pass_name) for f in report.findings] == [(rule, pass_name)], str(report)
    assert report.findings[0].message.startswith(
        "contract violation (isolation) in model 'rogue2': global_state of instance 0 wrote "
        "byte 0 past the end of its state row (8 bytes)" if mode == 11 else "model 'rogue2': ")
    if rule == "uninitialised":  # not also reported as a layout or order difference
        assert {p.name: p.status for p in report.passes}["matrix"] == (
            "compared: uninitialised reads (uninit)")


@pytest.mark.parametrize("mode,fragment", [
    (12, "observe for agent 1 of instance 0 (t=3) wrote byte 400000 past the end of its obs "
         "row (16 bytes)"),
    (13, "observe for agent 1 of instance 0 (t=3) wrote byte 400000 before the start of its "
         "obs row (16 bytes)"),
    (14, "global_state of instance 0 (t=2) wrote byte 400000 past the end of its state row "
         "(8 bytes)"),
])
def test_a_write_far_from_an_output_row_is_caught_and_named(mode: int, fragment: str) -> None:
    """A write far past (or before) an output row: the isolation pass names
    the hook, the row and how far, and the plain runs that would write into
    memory that is not the model's do not run.  It used to land in the
    checker's own heap: missed, or a crash with nothing named, or a NameError
    out of check() from the damaged child."""
    report = check(ROGUE2, {"mode": mode, "culprit": 1, "at_step": 2}, progress=False)
    assert [(f.rule, f.pass_name) for f in report.findings] == [
        ("output-row", "isolation")], str(report)
    msg = report.findings[0].message
    assert fragment in msg and "a plain run writes into memory that is not the model's" in msg
    assert all(p.status.startswith("skipped: a plain run would touch memory")
               for p in report.passes if p.name != "isolation" and p.runs == 0), \
        [(p.name, p.status) for p in report.passes]


@pytest.mark.parametrize("mode,fragments", [
    (19, ["act for agent 1 of instance 0 (t=2) read byte 0 past the end of its action "
          "(4 bytes): act reads only its own agent's action[0..action_dim-1] (action_dim=1); "
          "a plain run reads another agent's action"]),
    (20, ["handle for entity 1 of instance 0 (event type 1, PING, at t=2.",
          "read byte 8 past the end of its payload (payload_size=8 bytes)",
          "a plain run reads memory that is not the model's"]),
    (21, ["act for agent 1 of instance 0 (t=2) wrote byte 0 of its action (4 bytes): the "
          "action is const"]),
    # the handler's own failure that followed was reported instead
    (22, ["handle for entity 1 of instance 0 (event type 1, PING, at t=2.",
          "wrote byte 0 of its payload (8 bytes): the payload is const"]),
    (24, ["act for agent 1 of instance 0 (t=2) wrote byte 1 before the start of its action "
          "(4 bytes)", "a plain run writes another agent's action"]),
])
def test_a_handler_reading_past_or_writing_its_input_is_caught(
        mode: int, fragments: list[str]) -> None:
    """act reading past its action (the next agent's, in a plain run), handle
    reading past payload_size (the next event record's) and act writing its
    const action: each passed the whole check before.  In checking mode the
    inputs are copies that end against a fence."""
    report = check(ROGUE2, {"mode": mode, "culprit": 1, "at_step": 2}, progress=False)
    found = [(f.rule, f.pass_name) for f in report.findings]
    assert found[0] == ("input-row", "isolation"), str(report)
    # mode 22's plain runs fail in its handler, as the model says they do;
    # mode 24's change the previous agent's action, which the orders see
    assert mode in (22, 24) or found == [("input-row", "isolation")], str(report)
    finding = report.findings[0]
    for frag in fragments:
        assert frag in finding.message, (frag, finding.message)
    assert finding.fix == FIXES["input-row"]
    # a read of another agent's action or a write of the own one: a plain
    # run stays in the model's memory, and the other passes run
    if mode in (22, 24):  # the plain runs fail, or differ, as the model makes them
        return
    ran = {p.name for p in report.passes if p.runs > 0}
    assert (ran == {"isolation"}) == (mode == 20), [(p.name, p.status) for p in report.passes]


def test_a_checked_handlers_payload_is_as_aligned_as_a_plain_runs() -> None:
    """An event record's payload is 16-byte aligned; the checking mode's copy
    ended flush with a page, at payload_size's own alignment: a handler
    loading a 16-byte-aligned struct from it faulted (reported as a NULL
    pointer, every other pass skipped)."""
    report = check(ROGUE2, {"mode": 25}, progress=False)
    assert report.ok, str(report)


@pytest.mark.parametrize("bad,fragment", [
    (1, "action_mask for agent 2 of instance 0 wrote byte 2 of its mask row, past its "
        "group's 2 choices (group 'right'; rows are padded to the largest group's mask_dim=3 "
        "bytes)"),
    (2, "observe for agent 2 of instance 0 wrote byte 0 past the end of its obs row (8 "
        "bytes): observe writes only its own agent's obs[0..obs_dim-1] (obs_dim=2)"),
])
def test_a_write_past_a_groups_row_into_its_padding_is_caught(bad: int, fragment: str) -> None:
    """A smaller group's rows are padded to the largest group's: observe
    writing past its group's obs_dim (an obs-bounds finding with "declared
    [0, 0]" only) and action_mask past its group's choices (no finding) stay
    inside the host's row, and are named now."""
    m = load_test_model("optgroups")
    report = check(m, {"groups": 2, "bad": bad}, progress=False, steps=6, seeds=(0,),
                   threads=(1, 2), batches=(1,))
    first = report.findings[0]
    assert (first.rule, first.pass_name) == ("output-row", "isolation"), str(report)
    assert fragment in first.message, first.message
    if bad == 2:
        assert "a plain run writes it into its row's padding" in first.message
        (bounds,) = [f for f in report.findings if f.rule == "obs-bounds"]
        assert "obs[2] = 7 is past its group's obs_dim=2, in the padding of its row" in \
            bounds.message, bounds.message
    assert check(m, {"groups": 2}, progress=False, steps=6, seeds=(0,), threads=(1, 2),
                 batches=(1,)).ok


def test_a_child_failing_after_a_finding_is_a_crash_finding_not_an_exception(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The child raises a Python error (a model's wild write damaged it: a
    NameError of a module's global was seen) in a pass after a finding: a
    ``crash`` finding naming the error and the pass, the check ends there and
    returns its report.  With nothing found before, the same failure is the
    checker's own and is raised."""
    from seer_env.check import child

    real = child._Worker.call

    def failing_jobs(self: Any, msg: dict[str, Any], budget: float) -> Any:
        if msg.get("op") == "job":  # the uninit pass's, after isolation's runs
            return {"ok": False, "data": 0, "exc": {
                "type": "NameError", "message": "name 'Sizes' is not defined",
                "traceback": "Traceback ...\nNameError: name 'Sizes' is not defined"}}
        return real(self, msg, budget)

    monkeypatch.setattr(child._Worker, "call", failing_jobs)
    report = check(ROGUE, {"mode": 13, "at_step": 2}, **QUICK)
    assert [(f.rule, f.pass_name) for f in report.findings] == [
        ("output-row", "isolation"), ("crash", "uninit")], str(report)
    assert "failed in the uninit pass (NameError: name 'Sizes' is not defined) after the " \
           "breach found above" in report.findings[1].message
    assert all(p.status.startswith("skipped: the model crashed (uninit)")
               for p in report.passes if p.runs == 0), str(report)
    # nothing found, or only what damages no memory (a clock read): raised
    for mode in (0, 5):
        with pytest.raises(RuntimeError, match="child process failed:\nTraceback"):
            check(ROGUE, {"mode": mode, "at_step": 2}, **QUICK)


@pytest.mark.parametrize("mode,fragment", [
    (1, "wrote memory 8 bytes past the end of entity 5's state (the last entity's), outside "
        "every entity's state: a plain run writes into memory that is not the model's"),
    (2, "read memory 0 bytes past the end of entity 5's state (the last entity's), outside "
        "every entity's state: a plain run reads memory that is not the model's"),
])
def test_the_last_entity_touching_past_its_state_is_named(mode: int, fragment: str) -> None:
    """The last entity's handler writing (reading) past its state: past the
    states, where the heap was.  It was missed, and the damage crashed a later
    handler (another agent's act) with SIGABRT; now the isolation pass names
    it and the passes that would run it unprotected are skipped."""
    report = check(ROGUE, {"mode": mode, "at_step": 2, "culprit": 5}, **QUICK)
    assert [(f.rule, f.pass_name) for f in report.findings] == [
        ("entity-state", "isolation")], str(report)
    msg = report.findings[0].message
    assert "handle for entity 5 of instance 0" in msg and fragment in msg, msg
    assert all(p.status.startswith("skipped: a plain run would touch memory")
               for p in report.passes if p.name != "isolation" and p.runs == 0), str(report)


@pytest.mark.parametrize("mode,rule,fragment", [
    (15, "entity-state", "handle for entity 2 of instance 0 (event type 0, TICK, at t=2."),
    (15, "entity-state", "wrote memory 1 bytes before entity 2's state, where entity 1's state"),
    (16, "snapshot", "publish for entity 2 of instance 0 (t=3) wrote memory 1 bytes before its "
                     "entity's published snapshot record, where entity 1's record would be"),
    (17, "instance-data", "boundary of instance 0 (t=3) wrote memory 0 bytes past the end of "
                          "the instance data (instance_size=8 bytes)"),
    # it said "wrote the published snapshot record of entity 3"
    (23, "snapshot", "publish for entity 2 of instance 0 (t=3) wrote memory 0 bytes past the "
                     "end of its own snapshot record (snapshot_size=8 bytes)"),
])
def test_a_write_into_the_slack_of_a_handlers_own_page_is_named(
        mode: int, rule: str, fragment: str) -> None:
    """The bytes before a handler's own state (or record) and after the
    instance data share a page with what it may write, so no fault catches a
    write there: guard bytes do.  Missed before (in a plain run the write
    lands in the previous entity's state or record, or past the instance
    data), or found only as differences naming no handler."""
    report = check(ROGUE2, {"mode": mode, "culprit": 2, "at_step": 2}, progress=False)
    assert [(f.rule, f.pass_name) for f in report.findings][:1] == [(rule, "isolation")], \
        str(report)
    assert fragment in report.findings[0].message, report.findings[0].message


def test_a_write_into_the_previous_agents_row_is_not_taken_for_a_far_one() -> None:
    """observe writing obs[-1] faults in the fence before its slot; in a
    plain run it lands in the previous agent's row, inside the host's buffer:
    the finding says so and the other passes still run (it said the write
    reached memory that is not the model's, and skipped them all)."""
    report = check(ROGUE2, {"mode": 18, "culprit": 1, "at_step": 2}, progress=False)
    first = report.findings[0]
    assert (first.rule, first.pass_name) == ("output-row", "isolation"), str(report)
    assert ("observe for agent 1 of instance 0 (t=3) wrote byte 4 before the start of its obs "
            "row (16 bytes)") in first.message
    assert "a plain run writes it into another agent's row" in first.message
    assert "not the model's" not in first.message
    assert {p.name: p.runs > 0 for p in report.passes}["matrix"], str(report)
