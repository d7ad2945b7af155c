"""The optimistic executor: bit-identical to the serial executor at every step.

Every cell of the matrix runs the same seeds and random actions on the serial
executor (the reference, computed once per model/batch/seed) and on
``executor="optimistic"`` with 1, 2, 3 and 5 threads (oversubscribed on small
machines), and compares every boundary output, every entity state, the
global state and the per-entity event counts.  The cells cover the three ways
the executor runs a step: whole instances per thread (B >= threads), the
conservative windows (split instances, L > 0 and step <= 256 L) and
speculation with rollback (split instances otherwise), including steps whose
speculation is abandoned and rerun serially (non-monotone zero-delay events,
the log limit).

Run: ``.venv/bin/python -m pytest -q tests/test_optimistic.py``
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seer_env import errors
from seer_env.registry import Runtime, native_model
from tests.models import load as load_test_model

ROOT = Path(__file__).resolve().parent.parent
THREADS = (1, 2, 3, 5)
BATCHES = (1, 3)
SPEC_KEYS = ("rollbacks", "events_rolled_back", "anti_messages", "serial_steps")

# ---- running and comparing -------------------------------------------------------------


def model_of(name: str) -> Any:
    """A shipped model's C name, or a test model (tests/models) built on first use."""
    if name in ("probe", "dying", "nonmono"):
        return load_test_model(name).native
    return name


def make(model: str, cfg: dict[str, Any], B: int, executor: str, threads: int,
         **kw: Any) -> Runtime:
    return Runtime(model_of(model), cfg, B, executor, threads, 0, oversubscribe=True, **kw)


def snapshot(rt: Runtime) -> tuple[Any, ...]:
    B = rt.num_instances
    gs = (tuple(rt.global_state(i).tobytes() for i in range(B))
          if rt.sizes.state_dim else ())
    return (
        rt.obs.copy(), rt.reward.copy(), rt.terminated.copy(), rt.truncated.copy(),
        rt.alive.copy(), rt.active.copy(), rt.info.copy(),
        tuple(rt.entity_states(i) for i in range(B)),
        gs,
        tuple(rt.entity_events(i).tobytes() for i in range(B)),
    )


FIELDS = ("obs", "reward", "terminated", "truncated", "alive", "active", "info",
          "entity_states", "global_state", "entity_events")


def random_actions(rt: Runtime, rng: np.random.Generator) -> np.ndarray:
    if rt.sizes.action_kind == "discrete":
        return rng.integers(0, rt.sizes.action_n, size=rt.actions.shape)
    return rng.uniform(-1.0, 1.0, size=rt.actions.shape).astype(np.float32)


def drive(rt: Runtime, seeds: list[int], steps: int, action_seed: int,
          every: Any = None, masked: bool = False) -> list[tuple[Any, ...]]:
    """Reset with ``seeds``, then ``steps`` steps of random actions; an instance
    whose agents have all finished is reset (masked) with a new seed instead of
    stepped.  ``masked``: each live instance is stepped with probability 0.7.
    ``every(k, rt)`` runs before step k.  Returns the snapshots."""
    rng = np.random.default_rng(action_seed)
    rt.reset(seeds)
    trace = [snapshot(rt)]
    for k in range(steps):
        if every is not None:
            every(k, rt)
        rt.actions[:] = random_actions(rt, rng)
        done = ~rt.alive.any(axis=1)
        sel = ~done & (rng.random(len(seeds)) < 0.7) if masked else ~done
        if sel.any():
            rt.step(sel)
        if done.any():
            rt.reset([s + 1000 * (k + 1) for s in seeds], done)
        trace.append(snapshot(rt))
    return trace


def run(model: str, cfg: dict[str, Any], seeds: list[int], executor: str, threads: int,
        steps: int, action_seed: int, masked: bool = False, **kw: Any
        ) -> tuple[list[tuple[Any, ...]], dict[str, int]]:
    rt = make(model, cfg, len(seeds), executor, threads, **kw)
    try:
        trace = drive(rt, seeds, steps, action_seed, masked=masked)
        return trace, rt.stats()
    finally:
        rt.close()


def assert_same_trace(ref: list[tuple[Any, ...]], got: list[tuple[Any, ...]], label: str
                      ) -> None:
    assert len(ref) == len(got), label
    for k, (a, b) in enumerate(zip(ref, got, strict=True)):
        for name, x, y in zip(FIELDS, a, b, strict=True):
            if isinstance(x, np.ndarray):
                same = x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
            else:
                same = x == y
            if not same:
                raise AssertionError(f"{label}: boundary {k} (0 = reset): {name} differs")


_REF: dict[tuple[Any, ...], tuple[list[tuple[Any, ...]], dict[str, int]]] = {}


def reference(case: str, model: str, cfg: dict[str, Any], seeds: list[int], steps: int,
              action_seed: int, masked: bool) -> tuple[list[tuple[Any, ...]], dict[str, int]]:
    """The serial run, once per module."""
    key = (case, tuple(seeds), steps, action_seed, masked)
    if key not in _REF:
        _REF[key] = run(model, cfg, seeds, "serial", 1, steps, action_seed, masked)
    return _REF[key]


def split(B: int, threads: int) -> bool:
    """Whether instances are cut into partitions (partition.c: one partition per
    instance when B is a multiple of the threads or at least three per thread)."""
    return threads > 1 and not (B >= threads and (B % threads == 0 or B >= 3 * threads))


# ---- the matrix ------------------------------------------------------------------------


def phold(**kw: Any) -> dict[str, Any]:
    cfg = dict(num_entities=24, events_per_entity=2, remote=0.5, mean=1.0, lookahead=0.5,
               work=3, step_duration=2.0)
    cfg.update(kw)
    return cfg


def pcs(**kw: Any) -> dict[str, Any]:
    """Busy PCS (calls and moves every one to two minutes per portable)."""
    cfg = dict(width=8, height=8, channels=6, portables_per_cell=10, max_guard=3,
               move_mean=120.0, next_call_mean=60.0, call_time_mean=60.0)
    cfg.update(kw)
    return cfg


# (id, model, config, steps, mode); mode: how a split instance's step runs:
# "windows" (L > 0 and step <= 256 L), "spec" (speculation), "nonmono" (speculation
# that meets non-monotone zero-delay creations for other entities: serial_steps > 0
# expected), "cascade" (speculation that meets zero-delay events an entity schedules
# for itself below the key it handles -- a portable arriving in a cell asks for its
# call at once: handled inline, nothing runs serially)
CASES = [
    ("phold-L0.5-r0.0", "phold", phold(remote=0.0), 40, "windows"),
    ("phold-L0.5-r0.5", "phold", phold(remote=0.5), 40, "windows"),
    ("phold-L0.5-r0.9", "phold", phold(remote=0.9), 40, "windows"),
    ("phold-L1e-9-r0.0", "phold", phold(remote=0.0, lookahead=1e-9), 40, "spec"),
    ("phold-L1e-9-r0.5", "phold", phold(remote=0.5, lookahead=1e-9), 40, "spec"),
    ("phold-L1e-9-r0.9", "phold", phold(remote=0.9, lookahead=1e-9), 40, "spec"),
    ("phold-L0-r0.9", "phold", phold(remote=0.9, lookahead=0.0, num_entities=40), 30, "spec"),
    ("pcs-8x8", "pcs", pcs(), 100, "windows"),
    ("pcs-16x16", "pcs", pcs(width=16, height=16), 60, "windows"),
    ("pcs-classic-8x8", "pcs", pcs(classic=1), 150, "spec"),
    ("pcs-classic-16x16", "pcs", pcs(classic=1, width=16, height=16), 80, "spec"),
    ("pcs-speculating-8x8", "pcs", pcs(handoff_latency=0.05, step_minutes=20.0), 100,
     "cascade"),
    ("aircraft-24", "aircraft", dict(num_uavs=24, battery_thrust=0.02), 60, "windows"),
    ("aircraft-24-L1e-4", "aircraft", dict(num_uavs=24, latency=1e-4, battery_thrust=0.02),
     60, "spec"),
    ("probe-L1", "probe", dict(num_entities=8, lookahead=1.0), 30, "windows"),
    ("probe-L1e-3", "probe", dict(num_entities=8, lookahead=1e-3), 30, "spec"),
    ("dying", "dying", dict(num_agents=6), 30, "windows"),
    ("nonmono", "nonmono", dict(num_entities=12), 40, "nonmono"),
]


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("B", BATCHES)
@pytest.mark.parametrize("case,model,cfg,steps,mode", CASES, ids=[c[0] for c in CASES])
def test_matches_serial(case: str, model: str, cfg: dict[str, Any], steps: int, mode: str,
                        B: int, threads: int) -> None:
    for r in range(3 if B == 1 else 2):
        # the second run of a batch steps random subsets of the instances
        masked = B > 1 and r == 1
        seeds = [1000 * r + 17 * i + 3 for i in range(B)]
        label = f"{case} B={B} threads={threads} seeds={seeds} masked={masked}"
        ref, ref_stats = reference(case, model, cfg, seeds, steps, r, masked)
        got, stats = run(model, cfg, seeds, "optimistic", threads, steps, r, masked)
        assert_same_trace(ref, got, label)
        assert stats["events"] == ref_stats["events"], label
        assert stats["steps"] == ref_stats["steps"], label
        if not split(B, threads) or mode == "windows":
            # whole instances per thread, or conservative windows: nothing speculates
            assert {k: stats[k] for k in SPEC_KEYS} == dict.fromkeys(SPEC_KEYS, 0), label
            assert stats["log_bytes_peak"] == 0, label
        elif mode == "nonmono":
            assert stats["serial_steps"] > 0, label
        elif mode == "cascade":
            assert stats["serial_steps"] == 0, label


# ---- rollbacks, the log limit, switching executors --------------------------------------


def test_classic_pcs_rolls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Classic PCS (lookahead 0) split over two threads: speculation goes wrong
    somewhere in 120 busy steps (summed over runs: how often depends on
    thread timing), and the outputs still match.  A phase for which the
    second thread did not come runs on one thread alone (``alone_windows``)
    and cannot go wrong: on a loaded machine more runs, until enough phases
    ran on both threads (no alone stretches, ``SEER_POOL_ALONE=0``: on a
    loaded machine they would keep the second thread out of whole runs)."""
    monkeypatch.setenv("SEER_POOL_ALONE", "0")
    cfg = pcs(classic=1, width=16, height=16)
    ref, _ = run("pcs", cfg, [7], "serial", 1, 120, 0)
    total = shared = 0
    for _ in range(12):
        got, stats = run("pcs", cfg, [7], "optimistic", 2, 120, 0)
        assert_same_trace(ref, got, "classic PCS 16x16 B=1 threads=2")
        total += stats["rollbacks"]
        shared += stats["windows"] - stats["alone_windows"]
        assert stats["events_rolled_back"] >= stats["rollbacks"]
        assert 0 <= stats["alone_windows"] <= stats["windows"]
        if total > 0 and shared >= 360:
            break
    assert total > 0, (total, shared)


@pytest.mark.parametrize("case,model,cfg,B", [
    ("pcs-classic-16x16", "pcs", pcs(classic=1, width=16, height=16), 1),
    ("phold-L1e-9", "phold", phold(lookahead=1e-9, num_entities=64), 1),
    ("nonmono", "nonmono", dict(num_entities=12), 1),
    ("pcs-classic-16x16-B2", "pcs", pcs(classic=1, width=16, height=16), 2),
], ids=lambda v: v if isinstance(v, str) else "")
def test_a_call_capped_to_its_caller_runs_every_slot_on_it(case: str, model: str,
                                                           cfg: dict[str, Any], B: int) -> None:
    """The process's thread budget lends a call one thread: the optimistic
    executor's caller takes every slot of each speculation phase at once and
    runs them as one (no other worker comes; before, a slot nobody claimed
    could not run, so the executor ignored the cap), bit-identical to the
    serial executor; every phase counts in ``alone_windows``."""
    from seer_env import budget

    seeds = [5 + i for i in range(B)]
    ref, _ = run(model, cfg, seeds, "serial", 1, 25, 2)
    budget.set_thread_budget(1)
    try:
        got, stats = run(model, cfg, seeds, "optimistic", 3, 25, 2)
    finally:
        budget.set_thread_budget(None)
    assert_same_trace(ref, got, case)
    assert stats["windows"] > 0 and stats["alone_windows"] == stats["windows"], stats
    assert stats["rollbacks"] == 0 and stats["anti_messages"] == 0, stats


@pytest.mark.parametrize("case,model,cfg,steps", [
    ("pcs-classic-16x16", "pcs", pcs(classic=1, width=16, height=16), 30),
    ("phold-L1e-9", "phold", phold(lookahead=1e-9, num_entities=64), 20),
    ("nonmono", "nonmono", dict(num_entities=12), 20),
], ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("B,threads", [(1, 2), (1, 5), (3, 5)])
def test_tiny_log_limit_runs_steps_serially(monkeypatch: pytest.MonkeyPatch, case: str,
                                            model: str, cfg: dict[str, Any], steps: int,
                                            B: int, threads: int) -> None:
    seeds = [31 + i for i in range(B)]
    ref, _ = run(model, cfg, seeds, "serial", 1, steps, 4)
    monkeypatch.setenv("SEER_LOG_LIMIT", "4096")
    got, stats = run(model, cfg, seeds, "optimistic", threads, steps, 4)
    assert_same_trace(ref, got, f"{case} B={B} threads={threads} log limit 4096")
    assert stats["serial_steps"] > 0


# ---- phases: a step committed piece by piece -------------------------------------------
#
# A speculative step runs as phases, each up to a horizon in simulated time and
# committed at its end (its log freed); the horizons adapt to about
# SEER_PHASE_EVENTS events per thread a phase.  Any horizon gives the serial
# executor's handlings, so outputs must not depend on it: tiny targets (many
# phases a step, down to one event) must still match the serial run exactly.

PHASED = [c for c in CASES if c[4] in ("spec", "nonmono", "cascade")]


@pytest.mark.parametrize("phase_events", [1, 37])
@pytest.mark.parametrize("B,threads", [(1, 2), (1, 3), (3, 5)])
@pytest.mark.parametrize("case,model,cfg,steps,mode", PHASED, ids=[c[0] for c in PHASED])
def test_phases_of_any_width_match_serial(monkeypatch: pytest.MonkeyPatch, case: str,
                                          model: str, cfg: dict[str, Any], steps: int,
                                          mode: str, B: int, threads: int,
                                          phase_events: int) -> None:
    seeds = [17 * i + 3 for i in range(B)]
    steps = min(steps, 30)
    ref, ref_stats = reference(case, model, cfg, seeds, steps, 0, False)
    monkeypatch.setenv("SEER_PHASE_EVENTS", str(phase_events))
    got, stats = run(model, cfg, seeds, "optimistic", threads, steps, 0)
    label = f"{case} B={B} threads={threads} phase_events={phase_events}"
    assert_same_trace(ref, got, label)
    assert stats["events"] == ref_stats["events"], label
    if split(B, threads) and phase_events == 1:
        # several phases a step: windows counts them (one per step before)
        assert stats["windows"] > 2 * stats["steps"], label
    if mode == "nonmono" and split(B, threads):
        assert stats["serial_steps"] > 0, label


@pytest.mark.parametrize("case,model,cfg", [
    ("pcs-classic-16x16", "pcs", pcs(classic=1, width=16, height=16)),
    ("nonmono", "nonmono", dict(num_entities=12)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_abandoned_in_a_later_phase_resumes_serially(monkeypatch: pytest.MonkeyPatch,
                                                     case: str, model: str,
                                                     cfg: dict[str, Any]) -> None:
    """A log limit of a few records abandons speculation in any phase: the
    instance is undone to the end of its last committed phase and the rest of
    its step runs serially, from there."""
    seeds = [11, 12, 13]
    ref, ref_stats = run(model, cfg, seeds, "serial", 1, 25, 6)
    monkeypatch.setenv("SEER_PHASE_EVENTS", "16")
    monkeypatch.setenv("SEER_LOG_LIMIT", "8192")
    got, stats = run(model, cfg, seeds, "optimistic", 5, 25, 6)
    assert_same_trace(ref, got, f"{case} phases of 16 events, log limit 8192")
    assert stats["events"] == ref_stats["events"]
    assert stats["serial_steps"] > 0


def test_budget_counts_the_committed_phases(monkeypatch: pytest.MonkeyPatch) -> None:
    """The event budget is the step's, not a phase's: a step whose first phases
    commit and whose budget runs out later fails as on the serial executor."""
    cfg = dict(num_entities=64, step_duration=1e3, lookahead=1e-9, remote=0.5)
    msgs = []
    monkeypatch.setenv("SEER_PHASE_EVENTS", "64")
    for executor, t in (("serial", 1), ("optimistic", 2)):
        rt = make("phold", cfg, 1, executor, t, max_step_events=50_000)
        rt.reset([3])
        with pytest.raises(errors.BudgetError, match="max_step_events") as info:
            rt.step()
        msgs.append(str(info.value))
        if executor == "optimistic":
            stats = rt.stats()
            assert stats["serial_steps"] == 1
            assert stats["windows"] > 3  # phases committed before the budget ran out
        rt.close()
    prefix = "step 0 of instance 0 handled more than 50000 events (the event budget"
    assert all(m.startswith(prefix) for m in msgs), msgs


def test_log_does_not_grow_with_the_step_length() -> None:
    """The log holds one phase's handlings, whatever the step's length: classic
    PCS 32x32 with steps 100x longer keeps the same peak (it held every event
    of a step when the step was the only commit point: 20 MiB at 2,000-minute
    steps)."""
    peaks = {}
    for minutes in (20.0, 2000.0):
        cfg = pcs(classic=1, width=32, height=32, step_minutes=minutes)
        rt = make("pcs", cfg, 1, "optimistic", 2)
        rt.reset([1])
        rt.actions[:] = 0
        for _ in range(int(8000 / minutes)):
            rt.step()
        stats = rt.stats()
        peaks[minutes] = stats["log_bytes_peak"]
        assert stats["events"] > 0
        rt.close()
    assert 0 < peaks[2000.0] <= 2 * peaks[20.0], peaks


SCHEDULE = [("serial", 1), ("optimistic", 2), ("parallel", 3), ("optimistic", 5),
            ("optimistic", 1), ("parallel", 2), ("optimistic", 3), ("serial", 1),
            ("optimistic", 2)]


@pytest.mark.parametrize("case,model,cfg", [
    ("pcs-speculating", "pcs", pcs(handoff_latency=0.05, step_minutes=20.0)),
    ("phold-L1e-3", "phold", phold(lookahead=1e-3, remote=0.9)),
    ("phold-L0.5", "phold", phold()),
], ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("B", BATCHES)
def test_switching_executors_mid_run_changes_nothing(case: str, model: str,
                                                     cfg: dict[str, Any], B: int) -> None:
    seeds = [5 + 3 * i for i in range(B)]
    steps = 6 * len(SCHEDULE)
    ref, ref_stats = run(model, cfg, seeds, "serial", 1, steps, 2)

    def switch(k: int, rt: Runtime) -> None:
        # every other switch with its records put in order at once, as STPA's
        # (`Runtime.tidy_records`), and once mid-run without a switch
        if k % 6 == 0:
            rt.set_executor(*SCHEDULE[k // 6])
        if (k % 6 == 0 and k // 6 % 2 == 1) or k == 21:
            rt.tidy_records()

    rt = make(model, cfg, B, "optimistic", 2)
    try:
        got = drive(rt, seeds, steps, 2, switch)
        assert rt.executor == SCHEDULE[-1][0] and rt.threads == SCHEDULE[-1][1]
        assert rt.stats()["events"] == ref_stats["events"]
    finally:
        rt.close()
    assert_same_trace(ref, got, f"{case} B={B} switching {SCHEDULE}")


def test_lookahead_zero_cannot_switch_to_parallel_but_stays_usable() -> None:
    cfg = dict(num_entities=12)
    ref, _ = run("nonmono", cfg, [9], "serial", 1, 10, 1)
    rt = make("nonmono", cfg, 1, "optimistic", 2)
    rt.reset([9])
    rng = np.random.default_rng(1)
    got = [snapshot(rt)]
    for k in range(10):
        if k == 5:
            with pytest.raises(errors.ExecutorError, match="lookahead 0"):
                rt.set_executor("parallel", 2)
            assert rt.executor == "optimistic"
        rt.actions[:] = random_actions(rt, rng)
        rt.step()
        got.append(snapshot(rt))
    rt.close()
    assert_same_trace(ref, got, "nonmono after a refused switch")


# ---- refusals, budgets, Ctrl-C ----------------------------------------------------------


@pytest.mark.parametrize("flag", ["SEER_CHECK_ISOLATE", "SEER_CHECK_SHUFFLE"])
def test_check_flags_are_refused(flag: str) -> None:
    check = getattr(native_model("phold").lib, flag)
    with pytest.raises(errors.ExecutorError, match="optimistic executor runs no checking mode"):
        make("phold", phold(), 1, "optimistic", 2, check=check)
    # a runtime in checking mode keeps its executor
    executor = "serial" if flag == "SEER_CHECK_ISOLATE" else "parallel"
    rt = Runtime("phold", phold(), 1, executor, 1 if executor == "serial" else 2, 0,
                 check=check)
    with pytest.raises(errors.ConfigError, match="checking mode keeps its executor"):
        rt.set_executor("optimistic", 2)
    rt.close()


ENDLESS = [
    ("pcs-endless", "pcs", dict(width=4, height=4, step_minutes=1e300)),
    ("pcs-classic-busy", "pcs", dict(width=4, height=4, classic=1, next_call_mean=1e-6,
                                     call_time_mean=0.05)),
    ("phold-endless-L1e-9", "phold", dict(num_entities=64, step_duration=1e300,
                                          lookahead=1e-9)),
    ("phold-endless", "phold", dict(num_entities=64, step_duration=1e300)),
    ("nonmono-endless", "nonmono", dict(step_duration=1e6)),
]


@pytest.mark.parametrize("case,model,cfg", ENDLESS, ids=[c[0] for c in ENDLESS])
@pytest.mark.parametrize("B,threads", [(1, 2), (1, 3), (2, 2)])
def test_endless_steps_fail_on_the_event_budget(case: str, model: str, cfg: dict[str, Any],
                                                B: int, threads: int) -> None:
    """As on the other executors: BudgetError naming max_step_events and the
    budget (the serial executor's message where instances are split: their
    step reruns serially; with whole instances per thread, which instance
    fails first and where depends on the threads, as on the parallel
    executor), then a reset is needed and the runtime steps again after it."""
    seeds = list(range(B))
    msgs = []
    for executor, t in (("serial", 1), ("optimistic", threads)):
        rt = make(model, cfg, B, executor, t, max_step_events=5_000)
        rt.reset(seeds)
        rt.actions[:] = 0
        with pytest.raises(errors.BudgetError, match="max_step_events") as info:
            rt.step()
        assert "5000 events" in str(info.value)
        msgs.append(str(info.value))
        with pytest.raises(errors.StateError, match="needs a reset: its last call failed: step"):
            rt.step()
        rt.reset([s + 1 for s in seeds])
        assert [rt.step_index(i) for i in range(B)] == [0] * B
        with pytest.raises(errors.BudgetError, match="max_step_events"):
            rt.step()  # runs (and meets the budget) again after the reset
        rt.close()
    assert re.fullmatch(r"step 0 of instance \d+ handled more than 5000 events .*", msgs[1])
    if split(B, threads):
        # abandoned speculation reruns the step serially: the serial message
        assert msgs[0] == msgs[1]
    else:
        # whole instances per thread: the budget is per instance, so the
        # instance that failed stopped exactly where it stops alone on the
        # serial executor (it used to be the thread's budget times B)
        k = int(re.match(r"step 0 of instance (\d+)", msgs[1]).group(1))
        rt = make(model, cfg, 1, "serial", 1, max_step_events=5_000)
        rt.reset([seeds[k]])
        rt.actions[:] = 0
        with pytest.raises(errors.BudgetError) as info:
            rt.step()
        rt.close()
        assert str(info.value).replace("instance 0", f"instance {k}", 1) == msgs[1]


def run_python(code: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def test_ctrl_c_interrupts_a_long_step() -> None:
    """SIGINT during a long optimistic step (speculating, and whole instances per
    thread): KeyboardInterrupt before the step ends, then StateError naming the
    interruption until a reset, and the runtime steps again after it."""
    code = """
    import os, signal, threading
    from seer_env.registry import Runtime
    from seer_env.errors import StateError
    # steps of minutes: 262144 events of about 200 us per instance
    cfg = dict(num_entities=4096, events_per_entity=64, work=200000, mean=1.0,
               step_duration=2.0)
    # speculation, windows, whole instances per thread
    for L, B in ((1e-9, 1), (1.0, 1), (1.0, 2)):
        rt = Runtime("phold", dict(cfg, lookahead=L), B, "optimistic", 2, 0,
                     oversubscribe=True)
        rt.reset(list(range(B)))
        rt.actions[:] = 0
        for attempt in range(2):
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
            try:
                rt.step()
                raise SystemExit(3)  # finished: not interrupted
            except KeyboardInterrupt:
                pass
            try:
                rt.step()
                raise SystemExit(4)
            except StateError as exc:
                assert "interrupted" in str(exc), exc
            rt.reset(list(range(10, 10 + B)))
            assert [rt.step_index(i) for i in range(B)] == [0] * B
        rt.close()
        print("interrupted twice", L, B)
    """
    r = run_python(code)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.count("interrupted twice") == 3
