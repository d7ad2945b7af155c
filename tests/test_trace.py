"""Chrome/Perfetto trace export and the ``trace`` / ``bench`` command lines."""

from __future__ import annotations

import json

import numpy as np
import pytest

from seer_env import cli, errors
from seer_env.perf.trace import chrome_trace, write_trace
from seer_env.registry import Runtime
from tests.pcs_helpers import c_config
from tests.test_runtime import phold_cfg

PHASES = {"X", "M", "i"}


def check_trace_format(tr: dict) -> dict[int, list[dict]]:
    """Assert the Trace Event Format rules we rely on; returns the tracks by tid."""
    assert set(tr) >= {"traceEvents", "displayTimeUnit", "otherData"}
    tracks: dict[int, list[dict]] = {}
    named = set()
    for e in tr["traceEvents"]:
        assert {"ph", "name", "pid", "tid"} <= set(e), e
        assert e["ph"] in PHASES, e
        if e["ph"] == "M":
            assert e["name"] in {"process_name", "thread_name", "thread_sort_index"}
            assert isinstance(e["args"], dict)
            if e["name"] == "thread_name":
                named.add(e["tid"])
            continue
        assert isinstance(e["ts"], float) and e["ts"] >= 0.0
        if e["ph"] == "X":
            assert isinstance(e["dur"], float) and e["dur"] >= 0.0
        else:
            assert e["s"] == "t"
        tracks.setdefault(e["tid"], []).append(e)
    for tid, evs in tracks.items():
        assert tid in named, f"track {tid} has no thread_name"
        ts = [e["ts"] for e in evs]
        assert ts == sorted(ts), f"track {tid}: timestamps not monotonic"
    return tracks


@pytest.mark.parametrize("batch,whole,alone", [(1, False, False), (4, True, False),
                                               (1, False, True)])
def test_chrome_trace_of_a_parallel_runtime(tmp_path, batch, whole, alone):
    """Windows mode (one instance: act, windows, boundary phases) and
    whole-instance mode (four instances on two threads: one span per
    instance step, recorded as a window of the whole step); ``alone``: each
    call gets its caller's thread only (the process's budget), which runs
    every window after the first alone, each traced as a window."""
    from seer_env import budget

    if alone:
        budget.set_thread_budget(1)
    try:
        _chrome_trace_of_a_parallel_runtime(tmp_path, batch, whole, alone)
    finally:
        budget.set_thread_budget(None)


def _chrome_trace_of_a_parallel_runtime(tmp_path, batch, whole, alone):
    rt = Runtime("phold", phold_cfg(num_entities=32, remote=0.5), batch, "parallel", 2)
    rt.reset(list(range(1, batch + 1)))
    rt.actions[:] = 0
    rt.trace(1 << 16)
    w0 = rt.stats()["windows"]
    for _ in range(3):
        rt.step()
    windows = rt.stats()["windows"] - w0
    if alone:  # all but each step's first window
        assert rt.stats()["alone_windows"] == windows - 3 > 0
    tr = chrome_trace(rt)
    path = tmp_path / "t.json"
    write_trace(tr, str(path))
    back = json.loads(path.read_text())
    assert back == json.loads(json.dumps(tr))
    tracks = check_trace_format(back)
    # The calling thread (0) takes part in every phase; worker 1 takes part in
    # the phases it reaches while work is left (on a loaded machine possibly
    # none: nobody waits for a worker that claimed nothing).
    assert tracks and set(tracks) <= {0, 1}
    spans = [e for t in tracks.values() for e in t if e["cat"] in ("phase", "window")]
    # every window ran on some worker: one distinct window start per window
    assert len({e["args"]["sim_start"] for e in spans if e["name"] == "window"}) == windows
    if whole:
        assert {e["name"] for e in spans} == {"window"}
    else:
        assert {"act", "boundary"} <= {e["name"] for e in spans}
    for evs in tracks.values():
        names = [e["name"] for e in evs]
        assert names.count("window") <= windows
        # a wait is recorded only when a claim ends it: it precedes work
        for k, e in enumerate(evs):
            if e["name"] == "barrier wait":
                assert k + 1 < len(evs) and evs[k + 1]["cat"] in ("phase", "window")
    ev = [e for t in tracks.values() for e in t if e["cat"] == "event"]
    assert {e["name"] for e in ev} == {rt.event_name(0)} == {"PHOLD_EVENT"}
    n_events = sum(e["args"]["events"] for t in tracks.values() for e in t
                   if e["name"] == "window")
    assert len(ev) == n_events > 0
    assert {e["args"]["instance"] for e in ev} == set(range(batch))
    assert back["otherData"]["dropped_records"] == 0 and back["otherData"]["threads"] == 2
    rt.close()


def test_chrome_trace_event_names_of_pcs():
    rt = Runtime("pcs", c_config(), 1, "serial", 1)
    rt.reset([3])
    rt.actions[:] = 0
    rt.trace(1 << 15)
    for _ in range(3):
        rt.step()
    tr = chrome_trace(rt)
    tracks = check_trace_format(json.loads(json.dumps(tr)))
    names = {e["name"] for e in tracks[0] if e["cat"] == "event"}
    types = {int(r["type"]) for r in rt.trace_records()[0] if r["kind"] == 0}
    assert names == {rt.event_name(t) for t in types}
    assert {"NEXTCALL", "COMPLETIONCALL"} <= names
    rt.close()


def test_cli_trace_writes_a_valid_trace(tmp_path, capsys):
    out = tmp_path / "pcs.json"
    rc = cli.main(["trace", "pcs_v0", "--steps", "4", "-o", str(out), "--threads", "2",
                   "--num-envs", "2", "--set", "width=4", "--set", "height=4"])
    assert rc == 0
    tr = json.loads(out.read_text())
    tracks = check_trace_format(tr)
    # the calling thread's track, worker 1's if it took part, the python track
    py = [tid for tid, evs in tracks.items() if any(e["cat"] == "python" for e in evs)]
    assert len(py) == 1 and len(tracks) in (2, 3)
    steps = [e for e in tracks[py[0]] if e["cat"] == "python"]
    assert [e["name"] for e in steps] == [f"step {k}" for k in range(4)]
    assert tr["otherData"]["env"] == "pcs_v0" and tr["otherData"]["num_envs"] == 2
    assert "perfetto" in capsys.readouterr().out


def test_cli_trace_auto_records_the_stpa_decision(tmp_path):
    out = tmp_path / "phold.json"
    assert cli.main(["trace", "phold_v0", "--steps", "2", "-o", str(out),
                     "--set", "num_entities=16"]) == 0
    tr = json.loads(out.read_text())
    check_trace_format(tr)
    st = tr["otherData"]["stpa"]
    # 16 entities: steps of microseconds, so the serial executor runs untimed
    # (or, on a slow host, for now, while the pools' probe waits for the run)
    assert st["decision"]["choice"] in st["timings_ns"] or (
        st["decision"]["choice"] == "serial" and "untimed" in st["decision"]["reason"])
    assert tr["otherData"]["threads"] == st["decision"]["threads"]


@pytest.mark.parametrize("cmd", [["bench", "--help"], ["trace", "--help"],
                                 ["bench", "suite", "--help"]])
def test_cli_help(cmd, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(cmd)
    assert exc.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_trace_records_cover_parked_threads():
    """One array per pool thread, the active ones first; a shrunk pool keeps
    its parked threads' arrays (empty unless one took a chunk late) and the
    events of a step are all in the records either way.  Twelve instances:
    one partition each on 3 threads as on 1, so the shrink parks workers (on
    one instance it would make the pool anew, on the 1-thread partitions)."""
    rt = Runtime("phold", phold_cfg(num_entities=64), 12, "parallel", 3, oversubscribe=True)
    rt.reset(list(range(12)))
    rt.trace(1 << 16)
    rt.actions[:] = 0
    rt.step()
    ev3 = sum(int((r["kind"] == 0).sum()) for r in rt.trace_records())
    assert len(rt.trace_records()) == 3 and len(rt.trace_records(active_only=True)) == 3
    rt.set_threads(1)
    rt.trace_clear()
    e0 = rt.stats()["events"]
    rt.step()
    recs = rt.trace_records()
    assert len(recs) == 3 and len(rt.trace_records(active_only=True)) == 1
    traced = sum(int((r["kind"] == 0).sum()) for r in recs)
    assert traced == rt.stats()["events"] - e0 > 0 and ev3 > 0
    tr = chrome_trace(rt)
    check_trace_format(tr)
    rt.close()


def test_rollbacks_are_traced() -> None:
    """Every rollback of the optimistic executor is a trace record (entity, the
    simulated time it went back to, the handlings undone) and a Chrome span."""
    from seer_env._bind.runtime import trace_kinds

    kind = {v: k for k, v in trace_kinds().items()}["rollback"]
    rt = Runtime("pcs", c_config(classic=1, width=8, height=8), 1, "optimistic", 3,
                 oversubscribe=True)
    try:
        rt.trace(1 << 16)
        rt.reset([2])
        rng = np.random.default_rng(0)
        for _ in range(60):
            rt.actions[:] = rng.integers(0, 4, size=rt.actions.shape)
            rt.step()
        rb = np.concatenate([r[r["kind"] == kind] for r in rt.trace_records()])
        assert (rb["count"] >= 1).all() and (rb["entity"] < rt.sizes.num_entities).all()
        recs, undone = len(rb), int(rb["count"].sum())
        spans = sum(1 for e in chrome_trace(rt)["traceEvents"] if e.get("cat") == "rollback")
        st = rt.stats()
        assert recs == st["rollbacks"] and undone == st["events_rolled_back"]
        assert spans == recs
    finally:
        rt.close()


def test_each_workers_records_read_through_the_runtimes_own_module() -> None:
    """Runtime.worker_trace_records(w) (what the race pass's child reads, without
    seer_env._core) is trace_records()[w], and Runtime.trace_kinds() the module's."""
    from seer_env._bind.runtime import trace_kinds

    rt = Runtime("phold", phold_cfg(num_entities=32, remote=0.5), 1, "parallel", 3,
                 oversubscribe=True)
    try:
        rt.trace(1 << 12)
        rt.reset([4])
        rt.actions[:] = 0
        for _ in range(3):
            rt.step()
        assert rt.trace_kinds() == trace_kinds()
        recs = rt.trace_records()
        assert rt.pool_size == len(recs) == 3
        for w in range(rt.pool_size):
            own = rt.worker_trace_records(w)
            assert own.dtype == recs[w].dtype and np.array_equal(own, recs[w])
        assert sum(len(r) for r in recs) > 0
        with pytest.raises(errors.ConfigError, match="worker=3"):
            rt.worker_trace_records(3)
    finally:
        rt.close()


@pytest.mark.parametrize("model", ["hunt_v0", "groups_template"])
def test_cli_trace_runs_a_model_with_agent_groups(tmp_path, model, capsys):
    """Actions per group, within the masks (the random policy of ``seer-env
    run``): trace sent one array and every grouped model failed with
    InvalidActionError."""
    if model == "groups_template":
        from seer_env import sdk

        model = str(sdk.new("grp_trace", tmp_path, groups=True))
    out = tmp_path / "grouped.json"
    assert cli.main(["trace", model, "--steps", "6", "-o", str(out), "--threads", "1",
                     "--num-envs", "2"]) == 0
    tr = json.loads(out.read_text())
    tracks = check_trace_format(tr)
    steps = [e["name"] for evs in tracks.values() for e in evs if e["cat"] == "python"]
    assert steps == [f"step {k}" for k in range(6)]
    assert "perfetto" in capsys.readouterr().out
