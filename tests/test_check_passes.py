"""The contract checker's bounds, uninitialised-bytes and shared-heap passes
(seer_env/check/bounds.py, seer_env/check/race.py): each rule is caught on
tests/models/rogue2, which breaks it on demand, and the shipped models and
the test models that keep the contract give no finding."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from seer_env import sdk
from seer_env.check import run_model
from seer_env.check.bounds import FIXES as BOUNDS_FIXES
from seer_env.check.bounds import bounds_findings, uninit_findings
from seer_env.check.race import FIXES as RACE_FIXES
from seer_env.check.race import parse_reports, race_findings, tsan_runtime
from tests.models import HERE
from tests.models import load as load_test_model

ROGUE2 = load_test_model("rogue2")
STEPS = 24

needs_tsan = pytest.mark.skipif(tsan_runtime() is None, reason="no ThreadSanitizer runtime")


def _names(native: Any, config: dict[str, Any]) -> list[str]:
    buf, sizes = native.describe(config)
    return native.agent_names(buf, sizes.num_agents)


def _bounds(native: Any, config: dict[str, Any], executor: str = "serial",
            threads: int = 1) -> list[tuple[str, str]]:
    run = run_model(native, config, executor=executor, threads=threads, batch=2, seed=0,
                    steps=STEPS, action_seed=0)
    assert run.error is None, run.error
    return bounds_findings(native, config, run, _names(native, config))


# mode -> (rule, fragments of its message); the culprit is agent ring_1 in
# step 2, whose outputs are the run's step 3 (step 0: after reset)
BOUNDS_MODES = {
    1: ("obs-bounds", ["model 'rogue2': step 3, instance 0, agent ring_1, obs[1] = -5.5e+25 "
                       "is below the declared low bound 0 (declared [0, 1000000])",
                       "observation value(s) outside the declared bounds"]),
    2: ("state-bounds", ["model 'rogue2': step 2, instance 0, global state[0] = 2 is above "
                         "the declared high bound 1 (declared [0, 1])"]),
    3: ("non-finite", ["model 'rogue2': step 3, instance 0, agent ring_1, reward = nan"]),
    4: ("non-finite", ["model 'rogue2': step 3, instance 0, agent ring_1, info[0] = inf"]),
    5: ("non-finite", ["model 'rogue2': step 3, instance 0, agent ring_1, obs[2] = nan "
                       "(declared bounds [0, 1000000])"]),
}


@pytest.mark.parametrize("mode", sorted(BOUNDS_MODES))
def test_each_bounds_rule_is_caught(mode: int) -> None:
    rule, fragments = BOUNDS_MODES[mode]
    found = _bounds(ROGUE2.native, {"mode": mode})
    assert [r for r, _ in found] == [rule], found
    msg = found[0][1]
    for frag in fragments:
        assert frag in msg, (frag, msg)
    assert "the first shown" in msg
    assert rule in BOUNDS_FIXES


def test_bounds_count_every_value_and_ignore_agents_not_observed() -> None:
    native, cfg = ROGUE2.native, {"mode": 1}
    run = run_model(native, cfg, executor="serial", threads=1, batch=2, seed=0, steps=STEPS,
                    action_seed=0)
    names = _names(native, cfg)
    # the culprit misbehaves in step 2 of each episode (masked resets, autoresets)
    n_bad = sum(int((s["obs"][:, 1, 1] < 0).sum()) for s in run.steps)
    assert n_bad >= 2
    found = dict(bounds_findings(native, cfg, run, names))
    assert f"; {n_bad} observation value(s)" in found["obs-bounds"]
    assert f"in {STEPS + 1} step(s) of the run" in found["obs-bounds"]
    # the parallel executor's outputs are the same
    par = run_model(native, cfg, executor="parallel", threads=2, batch=2, seed=0, steps=STEPS,
                    action_seed=0)
    assert dict(bounds_findings(native, cfg, par, names)) == found
    # rows of agents not observed in a step are no outputs
    clean = run_model(native, {"mode": 0}, executor="serial", threads=1, batch=2, seed=0,
                      steps=4, action_seed=0)
    clean.steps[2]["obs"][1, 3, 0] = -1e30
    clean.steps[2]["reward"][1, 3] = float("nan")
    clean.steps[2]["active"][1, 3] = False
    assert bounds_findings(native, {"mode": 0}, clean, names) == []
    clean.steps[2]["active"][1, 3] = True
    got = dict(bounds_findings(native, {"mode": 0}, clean, names))
    assert set(got) == {"obs-bounds", "non-finite"}
    assert "step 2, instance 1, agent ring_3, obs[0] = -1e+30" in got["obs-bounds"]
    assert "step 2, instance 1, agent ring_3, reward = nan" in got["non-finite"]


def test_a_model_in_bounds_gives_no_bounds_finding() -> None:
    assert _bounds(ROGUE2.native, {"mode": 0}) == []


def test_an_uninitialised_local_in_observe_is_reported_as_such() -> None:
    cfg = {"mode": 7}
    found = uninit_findings(ROGUE2.native, cfg, STEPS, _names(ROGUE2.native, cfg))
    assert [r for r, _ in found] == ["uninitialised"], found
    msg = found[0][1]
    assert msg.startswith("model 'rogue2': uninitialised read in observe: step 3, instance 0, "
                          "agent ring_1, obs[3] is 0 when local variables start as zero bytes "
                          "and -1.69"), msg
    assert "0xFE bytes" in msg
    assert "uninitialised" in BOUNDS_FIXES


def test_an_uninitialised_local_in_handle_names_the_entity() -> None:
    cfg = {"mode": 9}
    found = uninit_findings(ROGUE2.native, cfg, STEPS, _names(ROGUE2.native, cfg))
    assert [r for r, _ in found] == ["uninitialised"], found
    assert ("uninitialised read in act or handle: step 3, instance 0, the state of entity 1 "
            "of 6 (fields value; value: ") in found[0][1], found


def test_a_pointer_kept_in_the_state_is_named_as_one(tmp_path: Path) -> None:
    """A model that keeps a pointer (to a static of its own) in an entity's
    state: its two painted builds are two copies of the model in one process,
    the bytes differ as two addresses, not as 0 and 0xFE..: a pointer-state
    finding, where an uninitialised read was reported (a wrong diagnosis
    whose fix, "write every local", does not apply)."""
    from seer_env.check.bounds import FIXES, _pointers_at

    cfg = {"mode": 10}
    found = uninit_findings(ROGUE2.native, cfg, STEPS, _names(ROGUE2.native, cfg))
    assert [r for r, _ in found] == ["pointer-state"], found
    assert found[0][1].startswith(
        "model 'rogue2': a pointer kept in act or handle: step 3, instance 0, the state of "
        "entity 1 of 6 (fields pings; pings: "), found
    assert "in one build of the model and 0x" in found[0][1]
    assert "never a pointer" in FIXES["pointer-state"]
    # the rule, on a map of the process's own: two mapped addresses differ
    maps = tmp_path / "maps"
    maps.write_text("7f0000000000-7f0000100000 r-xp 00000000 00:00 0 a.so\n"
                    "7f0000200000-7f0000300000 rw-p 00000000 00:00 0 b.so\n")

    def word(v: int) -> bytes:
        return v.to_bytes(8, sys.byteorder)

    a, b = word(0x7F0000000010) + b"xy", word(0x7F0000200010) + b"xy"
    assert _pointers_at(a, b, 3, str(maps)) == (0x7F0000000010, 0x7F0000200010)
    # uninitialised bytes read as zero and as 0xFE.., or an address and not
    for x, y in ((0, 0xFEFEFEFEFEFEFEFE), (0x7F0000000010, 0x10), (0x7F0000000010,) * 2):
        assert _pointers_at(word(x), word(y), 0, str(maps)) is None, (x, y)
    assert _pointers_at(a, b, 9, str(maps)) is None  # no whole word there
    assert _pointers_at(a, b, 0, str(tmp_path / "missing")) is None


def test_an_element_observe_never_writes_is_reported_on_request() -> None:
    cfg = {"mode": 6}
    names = _names(ROGUE2.native, cfg)
    # by default not a finding: the runtime zeroes the row, the element is 0
    assert uninit_findings(ROGUE2.native, cfg, STEPS, names) == []
    found = uninit_findings(ROGUE2.native, cfg, STEPS, names, unwritten=True)
    assert [r for r, _ in found] == ["uninitialised"], found
    assert found[0][1].startswith(
        "model 'rogue2': observe never wrote obs[3] of any agent in "), found
    assert "(the first: agent ring_0, instance 0, step 0)" in found[0][1]


@pytest.mark.parametrize("mode", [0, 1, 3, 8])
def test_no_uninitialised_finding_where_every_byte_is_written(mode: int) -> None:
    cfg = {"mode": mode}
    assert uninit_findings(ROGUE2.native, cfg, STEPS, _names(ROGUE2.native, cfg),
                           unwritten=True) == []


def test_the_unwritten_check_runs_on_python_models() -> None:
    m = load_test_model("rogue_py")
    assert uninit_findings(m.native, {}, 8, _names(m.native, {}), unwritten=True) == []


# -- shared heap ------------------------------------------------------------------------


@needs_tsan
@pytest.mark.parametrize("lookahead", [0.5, 0.0])
def test_a_heap_scratch_buffer_shared_by_entities_is_caught(lookahead: float) -> None:
    found = race_findings(ROGUE2, {"mode": 8, "lookahead": lookahead}, STEPS)
    assert isinstance(found, list) and [r for r, _ in found] == ["shared-heap"], found
    msg = found[0][1]
    executor = "parallel" if lookahead else "optimistic"
    assert msg.startswith("model 'rogue2': handle (rogue2_handle, in rogue2_use_scratch at "
                          "rogue2.c:"), msg
    assert "a heap block of 512 bytes (allocated by rogue2_describe at rogue2.c:" in msg
    assert f"concurrently on the {executor} executor" in msg
    assert "ThreadSanitizer: " in msg
    assert "shared-heap" in RACE_FIXES


@needs_tsan
def test_a_copy_of_a_model_in_another_folder_is_caught_too(tmp_path: Path) -> None:
    # the instrumented build of one folder names its sources by path: a copy
    # with the same sources elsewhere gets a build of its own
    assert race_findings(ROGUE2, {"mode": 8}, STEPS) != []
    copy = tmp_path / "rogue2_copy"  # one name per model in a process
    shutil.copytree(ROGUE2.folder, copy)
    found = race_findings(str(copy), {"mode": 8}, STEPS)
    assert isinstance(found, list) and [r for r, _ in found] == ["shared-heap"], found


@needs_tsan
def test_the_run_has_a_timeout() -> None:
    race_findings(ROGUE2, {"mode": 0}, 2)  # built and cached
    got = race_findings(ROGUE2, {"mode": 0}, 10_000, timeout=1.0)
    assert got == "skipped: the ThreadSanitizer run did not finish in 1 s", got


def test_a_compiler_that_cannot_run_is_not_called_a_missing_tsan(monkeypatch) -> None:
    """Out of file descriptors (ulimit -n 12), the race pass said "no
    ThreadSanitizer runtime on this machine": a false claim about the
    machine.  It says the compiler could not be run, and why."""
    from seer_env.check import race

    def emfile(*a, **kw):
        raise OSError(24, "Too many open files")
    monkeypatch.setattr(race.subprocess, "run", emfile)
    got = race_findings(ROGUE2, {"mode": 0}, 2)
    assert got == ("skipped: could not run the C compiler to find a ThreadSanitizer runtime "
                   "([Errno 24] Too many open files)"), got


def test_python_models_are_skipped_with_a_reason() -> None:
    got = race_findings(load_test_model("rogue_py"), {}, 4)
    assert isinstance(got, str) and got.startswith("skipped: a Python model"), got


_REPORT = """\
==================
WARNING: ThreadSanitizer: data race (pid=1)
  Write of size 8 at 0x7b5000001c00 by thread T2:
    #0 helper {d}/m.c:19 (m.so+0x22392)
    #1 m_handle {d}/m.c:39 (m.so+0x22392)
    #2 seer_run_queue /x/native/runtime/serial.c:76 (m.so+0x1e0c0)

  Previous read of size 8 at 0x7b5000001c00 by main thread:
    #0 m_observe {d}/m.c:60:5 (m.so+0x22392)
    #1 seer_observe_agent /x/native/runtime/phases.c:120 (m.so+0x1e0c0)

  Location is heap block of size 64 at 0x7b5000001c00 allocated by main thread:
    #0 calloc ../../../../src/libsanitizer/tsan/tsan_interceptors_posix.cpp:667 (libtsan.so+0x3)
    #1 m_describe {d}/m.c:85 (m.so+0x226c3)

SUMMARY: ThreadSanitizer: data race {d}/m.c:19 in helper
==================
==================
WARNING: ThreadSanitizer: data race (pid=1)
  Write of size 4 at 0x7b5000002000 by thread T1:
    #0 seer_squeue_push_owner /x/native/runtime/squeue.c:10 (m.so+0x1)

  Previous write of size 4 at 0x7b5000002000 by main thread:
    #0 seer_squeue_push_owner /x/native/runtime/squeue.c:10 (m.so+0x1)

  Location is heap block of size 16 at 0x7b5000002000 allocated by main thread:
    #0 malloc ../../../../src/libsanitizer/tsan/tsan_interceptors_posix.cpp:647 (libtsan.so+0x3)

SUMMARY: ThreadSanitizer: data race /x/native/runtime/squeue.c:10 in seer_squeue_push_owner
==================
==================
WARNING: ThreadSanitizer: data race (pid=1)
  Write of size 8 at 0x7f0000000040 by thread T1:
    #0 m_handle {d}/m.c:41 (m.so+0x22392)
    #1 handle_next /x/native/runtime/optimistic.c:724 (m.so+0x1e0c0)

  Previous write of size 8 at 0x7f0000000040 by main thread:
    #0 m_handle {d}/m.c:41 (m.so+0x22392)
    #1 run_cascade /x/native/runtime/optimistic.c:659 (m.so+0x1e0c0)

  Location is global 'm_counter' of size 8 at 0x7f0000000040 (m.so+0x0000000a3040)

SUMMARY: ThreadSanitizer: data race {d}/m.c:41 in m_handle
==================
"""


def test_reports_are_read_and_only_the_models_count(tmp_path: Path) -> None:
    text = _REPORT.format(d=tmp_path)
    found = parse_reports(text, tmp_path, "m", "optimistic")
    assert found[:1] == [("shared-heap",
                      "model 'm': handle (m_handle, in helper at m.c:19) on thread T2 wrote and "
                      "observe (m_observe at m.c:60) on the main thread read 8 bytes of a heap "
                      "block of 64 bytes (allocated by m_describe at m.c:85) with nothing "
                      "ordering the two: the handlers of entities that run concurrently on the "
                      "optimistic executor share it (ThreadSanitizer: 1 report(s), the first "
                      "shown)")]
    assert found[1] == (
        "data-race", "model 'm': handle (m_handle at m.c:41) on thread T1 and handle (m_handle "
        "at m.c:41) on the main thread both wrote 8 bytes of the global variable 'm_counter' "
        "with nothing ordering the two: the handlers of entities that run concurrently on the "
        "optimistic executor share it (ThreadSanitizer: 1 report(s), the first shown)")
    # the runtime's own report alone: nothing (not the model's)
    runtime_only = text.split("==================\n==================\n")[1]
    assert parse_reports("==================\n" + runtime_only, tmp_path, "m") == []


# -- the shipped models and the test models that keep the contract -------------------------


CLEAN = [
    ("phold_v0", {"num_entities": 24}),
    ("pcs_v0", {"width": 5, "height": 4}),
    ("aircraft_v0", {"num_uavs": 12, "arena_size": 100.0}),
    ("aircraft_v0", {"num_uavs": 8, "discrete": True}),
    (str(HERE / "rogue"), {}),
    (str(HERE / "rogue2"), {}),
    (str(HERE / "dying"), {}),
    (str(HERE / "nonmono"), {}),
]


def _model(name: str) -> Any:
    return sdk.load(name) if "/" in name else sdk.resolve(name)


@pytest.mark.parametrize("name,config", CLEAN)
def test_models_that_keep_the_contract_give_no_output_finding(name: str, config: dict) -> None:
    native = _model(name).native
    assert _bounds(native, config) == []
    assert uninit_findings(native, config, STEPS, _names(native, config)) == []


@needs_tsan
@pytest.mark.parametrize("name,config", CLEAN)
def test_models_that_keep_the_contract_share_no_memory(name: str, config: dict) -> None:
    assert race_findings(_model(name), config, STEPS) == []


@needs_tsan
def test_the_template_model_shares_no_memory(tmp_path: Path) -> None:
    folder = sdk.new("tmpl_race", tmp_path)
    assert race_findings(str(folder), {}, STEPS) == []
