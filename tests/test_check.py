"""The contract checker: every rule is caught on a model that breaks it, and
every shipped model passes."""

from __future__ import annotations

import pytest

import seer_env
from seer_env import cli
from seer_env.check import FIXES, check
from tests.models import load as load_test_model

ROGUE = load_test_model("rogue")
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
}


@pytest.mark.parametrize("mode", sorted(ROGUE_MODES))
def test_each_rule_is_caught(mode: int) -> None:
    rule, fragments = ROGUE_MODES[mode]
    report = check(ROGUE, {"mode": mode, "at_step": 2}, **QUICK)
    assert not report.ok and rule in report.rules(), str(report)
    finding = next(f for f in report.findings if f.rule == rule)
    assert "model 'rogue'" in finding.message
    for frag in fragments:
        assert frag in finding.message, (frag, finding.message)
    assert finding.fix == FIXES[rule] and str(finding).startswith(f"[{rule}]")


def test_a_null_pointer_stops_the_check_before_a_plain_run() -> None:
    report = check(ROGUE, {"mode": 12}, **QUICK)
    assert [p.status for p in report.passes][1:] == [
        "skipped: a plain run would crash (NULL pointer)"] * 3
    assert [p.runs for p in report.passes] == [1, 0, 0, 0]


def test_a_well_behaved_model_passes_every_pass() -> None:
    report = check(ROGUE, {"mode": 0}, **QUICK)
    assert report.ok, str(report)
    assert [p.name for p in report.passes] == ["isolation", "replay", "order", "matrix"]
    assert all(p.status == "ok" and p.runs > 0 for p in report.passes)
    assert "no finding" in str(report)


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
    assert [p.status for p in report.passes][2:] == [
        "skipped: lookahead 0 (no windows to shuffle)", "ok"]


def test_cli_check_exit_status(capsys: pytest.CaptureFixture) -> None:
    folder = str(ROGUE.folder)
    assert cli.main(["check", folder, "--quick", "--steps", "10", "--set", "mode=4"]) == 1
    assert "[randomness]" in capsys.readouterr().out
    assert cli.main(["check", folder, "--quick", "--steps", "10"]) == 0
