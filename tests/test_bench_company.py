"""``seer-env bench company``: behaviour, never speed.  The command line parses;
a quick run of a few situations on a tiny PCS returns every figure (finite,
positive); the burner process is gone afterwards, also when the measurement
raises; situations that need torch are skipped with a message without it; the
JSON file is written."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import signal
from types import SimpleNamespace

import numpy as np
import pytest

from seer_env import cli
from seer_env.errors import ConfigError
from seer_env.faces.gym_vector import random_batched_actions
from seer_env.perf import company
from seer_env.perf.bench import machine

TINY = {"width": 8, "height": 8}
QUICK = dict(quick=True, config=TINY, rounds=2, block=4, update_every=2, settle_s=0.5,
             log=lambda s: None, progress=lambda s: None)
TOP_KEYS = {"benchmark", "seer_env", "commit", "dirty", "machine", "load_avg_before",
            "load_avg_after", "workload", "executors", "threads", "rounds", "block", "quick",
            "stpa_cache", "update_every", "torch", "situations", "skipped", "wall_s",
            "replicas", "warm_blocks", "twins"}
SITUATION_KEYS = {"title", "unit", "block", "load_avg_before", "wall_s", "executors", "auto",
                  "auto_vs_best"}
AUTO_KEYS = {"choice", "reason", "state", "settled", "probe_steps_timed", "probes_timed"}


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _finite_positive(x: float) -> bool:
    return isinstance(x, float) and math.isfinite(x) and x > 0


def _check_figures(sit: dict, labels: list[str], rounds: int) -> None:
    assert set(sit) >= SITUATION_KEYS
    assert list(sit["executors"]) == labels
    for row in sit["executors"].values():
        for key in ("s", "ratio", "ratio_paired"):
            assert _finite_positive(row[key]), (key, row)
        assert len(row["blocks_s"]) == rounds
        assert all(_finite_positive(x) for x in row["blocks_s"])
        assert isinstance(row["alone_steps"], int) and row["alone_steps"] >= 0, row
    assert sit["executors"]["serial"]["ratio"] == 1.0
    # the serial executor has no pool, so no alone stretch
    assert sit["executors"]["serial"]["alone_steps"] == 0
    assert set(sit["auto"]) >= AUTO_KEYS and sit["auto"]["choice"]
    auto = sit["auto"]
    assert len(auto["probe_steps_timed"]) == len(auto["probes_timed"]) == len(auto["choice"])
    assert all(isinstance(n, int) and n >= 0 for n in auto["probe_steps_timed"])


def test_cli_parses_the_company_options() -> None:
    a = cli.build_parser().parse_args([
        "bench", "company", "--situations", "alone, burner-50,procs-2", "--threads", "2",
        "--quick", "--rounds", "2", "--block", "8", "--env", "pcs_v0", "--set", "width=8",
        "--num-envs", "2", "--update-every", "4", "--stpa-cache", "-o", "out.json"])
    assert (a.what, a.situations, a.threads, a.quick, a.rounds, a.block) == (
        "company", ["alone", "burner-50", "procs-2"], [2], True, 2, 8)
    assert (a.env, a.set, a.num_envs, a.update_every, a.stpa_cache, a.output) == (
        "pcs_v0", ["width=8"], 2, 4, True, "out.json")
    assert cli.build_parser().parse_args(["bench", "company", "--json", "x.json"]).output \
        == "x.json"
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["bench", "company", "--threads", "0"])
    assert cli.build_parser().parse_args(["bench", "company"]).replicas is None
    assert cli.build_parser().parse_args(["bench", "company", "--replicas", "3"]).replicas == 3
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["bench", "company", "--replicas", "0"])
    assert cli.build_parser().parse_args(["bench", "company"]).warm_blocks is None
    assert cli.build_parser().parse_args(
        ["bench", "company", "--warm-blocks", "2"]).warm_blocks == 2
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["bench", "company", "--warm-blocks", "0"])


def test_every_configuration_warms_its_blocks_before_the_timed_ones(monkeypatch) -> None:
    """``warm_blocks`` blocks of each configuration before the rotated ones
    (a pool's alone stretches climb to their steady length there, as auto
    settles), auto one block more after settling; the default 10 blocks of
    32, past the stretches' climb of about 275 steps (``quick`` 1), recorded
    in the result; a count below 1 refused."""
    runs: list[int] = []
    real = company._block_s

    def counted(fn, n):
        runs.append(n)
        return real(fn, n)

    monkeypatch.setattr(company, "_block_s", counted)
    lines: list[str] = []
    res = company.bench_company(["alone"], **{**QUICK, "warm_blocks": 3, "log": lines.append})
    assert res["warm_blocks"] == 3
    assert "rounds of 4-iteration blocks after 3 warm-up block(s) each" in lines[0]
    labels = res["executors"]
    # the host check's blocks first; then each label's env warmed 3 blocks of 4,
    # auto one block more once settled, then the timed blocks
    warm_at = runs.index(12)
    assert runs[warm_at:warm_at + len(labels)] == [12] * len(labels)
    assert runs[warm_at + len(labels)] == 4
    assert company.bench_company(["alone"], **QUICK)["warm_blocks"] == 1
    assert company.WARM_BLOCKS == 10
    with pytest.raises(ConfigError, match="warm_blocks"):
        company.bench_company(["alone"], **{**QUICK, "warm_blocks": 0})


def test_cli_refuses_an_unknown_situation_and_an_unwritable_file(tmp_path, capsys) -> None:
    assert cli.main(["bench", "company", "--situations", "crowd"]) == 2
    assert "unknown situation 'crowd'" in capsys.readouterr().err
    assert cli.main(["bench", "company", "-o", str(tmp_path / "no" / "x.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="threads"):
        company.bench_company(["alone"], threads=[machine()["cpus_usable"] + 1], **QUICK)
    with pytest.raises(ConfigError, match="burner-D"):
        company.bench_company(["burner-0"], **QUICK)


def test_a_quick_run_returns_every_figure(monkeypatch) -> None:
    """alone, two processes and two envs in one process: every key, figures
    finite and positive, no child process left, the user's STPA cache setting
    as it was."""
    monkeypatch.delenv("SEER_STPA_CACHE", raising=False)
    lines: list[str] = []
    children = set(multiprocessing.active_children())
    res = company.bench_company(["alone", "procs-2", "envs-2"],
                                **{**QUICK, "log": lines.append})
    assert "SEER_STPA_CACHE" not in os.environ
    assert set(multiprocessing.active_children()) == children
    assert set(res) >= TOP_KEYS and res["benchmark"] == "company"
    assert res["executors"][0] == "serial" and res["executors"][-1] == "auto"
    assert res["workload"] == {"env": "pcs_v0", "config": TINY, "num_envs": 1}
    assert list(res["situations"]) == ["alone", "procs-2", "envs-2"]
    assert res["torch"] is None  # no training loop: torch is not even imported
    # PCS's lookahead gives it a few windows a step: optimistic-2 runs parallel-2's
    assert res["twins"] == {"optimistic-2": "parallel-2"}
    for sit in res["situations"].values():
        _check_figures(sit, res["executors"], 2)
    procs = res["situations"]["procs-2"]
    assert all(_finite_positive(r["steps_per_s"]) for r in procs["executors"].values())
    assert len(procs["auto"]["choice"]) == 2  # one decision per process
    assert len(res["situations"]["envs-2"]["auto"]["choice"]) == 2  # one per env
    assert lines[0].startswith("seer-env bench company: pcs_v0")
    assert any(line.startswith("envs-2: 2 envs in one process") for line in lines)
    text = company.table(res)
    assert text.splitlines()[0].split()[:2] == res["executors"][:2]
    assert "/s" in text.split("procs-2", 1)[1].split("\n", 1)[0]  # aggregate steps/s
    # the host check, before and after the situations
    hc = res["host_check"]
    assert [hc[k]["pool"] for k in ("before", "after")] == [res["executors"][1]] * 2
    assert all(_finite_positive(hc[k]["ratio"]) for k in ("before", "after"))
    assert any(line.startswith("host check: ") for line in lines)


def test_replicas_are_made_in_turn_and_take_a_labels_blocks_in_turn() -> None:
    """Each label's replicas are made round by round, the labels' order
    reversed every other round (no label's envs all made first or last), and
    take its blocks in turn: a block's calls are one replica's."""
    made: list[str] = []
    calls: list[str] = []

    def make(k: str):
        name = f"{k}#{sum(m.startswith(k + '#') for m in made)}"
        made.append(name)
        return lambda: calls.append(name)

    plan = company._Plan(company.Workload(), ["serial", "parallel-2", "auto"], rounds=4,
                         block=2, update_every=1, auto_calls=1, auto_s=0.0,
                         progress=lambda s: None, replicas=2)
    runs = company._made_in_turn(plan, make)
    assert made == ["serial#0", "parallel-2#0", "auto#0", "auto#1", "parallel-2#1", "serial#1"]
    assert isinstance(runs["auto"], company._Replicas)
    samples = company._blocks(runs, 4, 2, after=lambda k: runs[k].turn())
    assert {k: len(v) for k, v in samples.items()} == {"serial": 4, "parallel-2": 4, "auto": 4}
    serial = [c for c in calls if c.startswith("serial")]
    assert serial == ["serial#0"] * 2 + ["serial#1"] * 2 + ["serial#0"] * 2 + ["serial#1"] * 2
    one = company._made_in_turn(company._Plan(**{**plan.__dict__, "replicas": 1}), make)
    assert not isinstance(one["serial"], company._Replicas)


class _Made(company.Workload):
    """A workload that records the labels of the envs it makes (stand-ins)."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[str] = []

    def make(self, label: str, num_envs: int | None = None, **options):
        self.made.append(label)
        return SimpleNamespace(label=label, close=lambda: None,
                               runtime=SimpleNamespace(stpa=f"stpa of {label}"))


class _Stop(Exception):
    pass


def test_the_envs_of_envs_n_and_of_procs_n_are_made_in_turn(monkeypatch) -> None:
    """Envs made alike differ by where their memory lies: ``envs-N`` makes
    the i-th env of every label round by round (the labels' order reversed
    every other round) and each process of ``procs-N`` makes its envs in the
    labels' order or, in odd processes, in reverse -- no label's envs all
    made last (auto's were, in both) -- while the rounds and the blocks keep
    the labels' order."""
    labels = ["serial", "parallel-2", "auto"]
    wl = _Made()
    plan = company._Plan(wl, labels, rounds=1, block=1, update_every=1, auto_calls=1,
                         auto_s=0.0, progress=lambda s: None)
    got = {}

    def rotate(plan, runs, autos, *a, **k):
        got.update(runs=runs, autos=autos)
        raise _Stop

    monkeypatch.setattr(company, "Stepper", lambda e, seed=0: e)
    monkeypatch.setattr(company, "_rotate", rotate)
    envs: list = []
    with pytest.raises(_Stop):
        company._envs(plan, envs, 3)
    assert wl.made == labels + labels[::-1] + labels
    assert [e.label for e in envs] == wl.made
    assert list(got["runs"]) == labels
    assert all([e.label for e in got["runs"][k].steppers] == [k] * 3 for k in labels)
    assert got["autos"] == ["stpa of auto"] * 3

    class Barrier:
        def wait(self, timeout=None) -> None:
            pass

        def abort(self) -> None:
            pass

    import queue

    def blocks(runs, rounds, block, before=None, after=None):
        got["blocks"] = list(runs)
        raise _Stop

    monkeypatch.setattr(company, "_block_s", lambda fn, n: 0.0)
    monkeypatch.setattr(company, "_settle", lambda *a: {})
    monkeypatch.setattr(company, "_probe_marks", lambda stpas: [])
    monkeypatch.setattr(company, "_alone_steps", lambda fn: 0)
    monkeypatch.setattr(company, "_blocks", blocks)
    # (a process of procs-N ignores SIGINT, its parent ends it: not this one,
    # whose later tests' subprocesses would inherit it)
    monkeypatch.setattr(company, "signal", SimpleNamespace(
        signal=lambda *a: None, SIGINT=signal.SIGINT, SIG_IGN=signal.SIG_IGN))
    for idx, order in ((0, labels), (1, labels[::-1]), (2, labels), (3, labels[::-1])):
        wl.made.clear()
        results: queue.Queue = queue.Queue()
        company._proc_main(idx, wl, labels, 1, 1, 1, 1, 0.0, Barrier(), results, os.getppid())
        assert wl.made == order, idx
        assert got.pop("blocks") == labels
        assert "_Stop" in results.get_nowait()[1]["error"]


def test_each_auto_replica_settles_on_its_own() -> None:
    """auto's replicas settle one after the other, each stepped alone (in
    turn, each one's iterations would hold the other's step while both
    probe); one record, the calls summed."""
    calls: list[str] = []
    a, b = SimpleNamespace(settled=False), SimpleNamespace(settled=False)

    def step(name: str, st: SimpleNamespace, after: int):
        def fn() -> None:
            calls.append(name)
            st.settled = calls.count(name) >= after
        return fn

    for st in (a, b):
        st.executor, st.threads = "parallel", 2
    rec = company._settle_each([[a], [b]], [step("a", a, 3), step("b", b, 2)], 100, 10.0)
    assert calls == ["a", "a", "a", "b", "b"]
    assert rec["warmup_calls"] == 5 and rec["settled_after_warmup"]
    assert rec["choice_after_warmup"] == ["parallel-2", "parallel-2"]


def test_a_quick_run_with_replicas_decides_on_each_auto_env() -> None:
    """replicas=2: two envs per executor in ``alone``, auto's record one
    decision per env, every figure from both."""
    res = company.bench_company(["alone"], **{**QUICK, "replicas": 2})
    assert res["replicas"] == 2
    sit = res["situations"]["alone"]
    _check_figures(sit, res["executors"], 2)
    assert len(sit["auto"]["choice"]) == 2 and len(sit["auto"]["reason"]) == 2
    with pytest.raises(ConfigError, match="replicas"):
        company.bench_company(["alone"], **{**QUICK, "replicas": 0})


class _FakeStpa:
    """What `company._auto_record` reads of a controller."""

    def __init__(self) -> None:
        self.executor, self.threads, self.reason, self.state = "parallel", 2, "why", "monitor"
        self.settled = True
        self.probe_steps = 10
        self.history = [SimpleNamespace(trigger="preflight", reason="The parallel executor")]
        self.prober = SimpleNamespace(probe=None)


def test_auto_record_counts_what_stpa_probed_during_the_timed_blocks() -> None:
    """Steps of the probes that ended during the blocks and of the one still
    running, and the triggers of the decisions made then (not those before);
    the table and the rows say so in words, and nothing where none ran."""
    quiet, busy = _FakeStpa(), _FakeStpa()
    marks = company._probe_marks([quiet, busy])
    assert marks == [(10, 1), (10, 1)]
    busy.probe_steps = 42  # two probes ended: 32 steps
    busy.history += [SimpleNamespace(trigger="company: iterations took 5.5 ms on parallel-2"),
                     SimpleNamespace(trigger="confirm"),
                     SimpleNamespace(trigger="company: iterations took 6 ms on parallel-2")]
    busy.prober = SimpleNamespace(probe=SimpleNamespace(steps=5))  # one still running
    rec = company._auto_record([quiet, busy], {"warmup_calls": 3}, marks)
    assert rec["probe_steps_timed"] == [0, 37]
    assert rec["probes_timed"] == [[], [
        "company: iterations took 5.5 ms on parallel-2", "confirm",
        "company: iterations took 6 ms on parallel-2"]]
    assert rec["warmup_calls"] == 3 and rec["choice"] == ["parallel-2", "parallel-2"]
    # the decisions before the blocks, not those during them
    assert rec["decisions_before_timed"] == [["preflight: The parallel executor"]] * 2
    assert company._probes_words(rec) == "probed 37 timed steps (company x2, confirm)"
    assert "probe_steps_timed" not in company._auto_record([quiet], {})  # no marks
    sit = {"executors": {k: {"s": 1e-3, "ratio": 1.0} for k in ("serial", "auto")},
           "auto": rec}
    text = company.table({"executors": ["serial", "auto"], "situations": {"alone": sit}})
    row = next(line for line in text.splitlines() if line.startswith("alone"))
    assert row.endswith("   parallel-2; probed 37 timed steps (company x2, confirm)")
    assert "; probed 37 timed steps (company x2, confirm)" in company._rows("alone", sit)
    rec = company._auto_record([quiet], {}, company._probe_marks([quiet]))
    assert company._probes_words(rec) == ""
    sit["auto"] = rec
    assert "probed" not in company.table({"executors": ["serial", "auto"],
                                          "situations": {"alone": sit}})


def test_an_optimistic_label_that_speculates_nothing_is_named_parallels_twin() -> None:
    """Where the lookahead gives at most SEER_OPT_WINDOWS_MAX windows a step,
    the optimistic executor runs the parallel executor's windows: its label
    is the parallel one's twin (same threads only), and the table says so
    under its legend; lookahead 0 or narrower windows speculate: none."""
    from seer_env._bind.runtime import opt_windows_max

    w = opt_windows_max()
    labels = ["serial", "parallel-2", "parallel-4", "optimistic-2", "optimistic-4",
              "optimistic-8", "auto"]
    assert company.twins(labels, 1.0, 20.0) == {"optimistic-2": "parallel-2",
                                               "optimistic-4": "parallel-4"}
    assert company.twins(labels, 1.0, float(w)) == company.twins(labels, 1.0, 20.0)
    assert company.twins(labels, 1.0, w + 0.5) == {}  # more windows than that: speculates
    assert company.twins(labels, 0.0, 20.0) == {}
    assert company.twins(["serial", "optimistic-2", "auto"], 1.0, 20.0) == {}
    res = {"executors": ["serial", "parallel-2", "optimistic-2"], "situations": {}}
    assert "speculates nothing" not in company.table(res)  # an older file: no key
    res["twins"] = {"optimistic-2": "parallel-2"}
    line = company.table(res).splitlines()[-1]
    assert line.startswith("(optimistic-2 speculates nothing on this workload")
    assert f"at most {w} windows a step: it runs parallel-2's windows" in line


def test_a_twin_really_speculates_nothing() -> None:
    """What `twins` says of PCS holds in the runtime: its optimistic-2 steps
    roll nothing back and keep no log, and give parallel-2's outputs."""
    wl = company.Workload(config=dict(TINY))
    made = {k: wl.make(k) for k in ("parallel-2", "optimistic-2")}
    try:
        sz = made["optimistic-2"].runtime.sizes
        assert company.twins(list(made), sz.lookahead, sz.step_duration) == {
            "optimistic-2": "parallel-2"}
        outs: dict[str, list] = {}
        for k, venv in made.items():
            venv.reset(seed=3)
            rng = np.random.default_rng(5)
            outs[k] = [venv.step(random_batched_actions(venv, rng))[:4] for _ in range(20)]
        st = made["optimistic-2"].runtime.stats()
        assert st["rollbacks"] == st["anti_messages"] == st["log_bytes_peak"] == 0
        assert st["windows"] > 0 and st["steps"] == 20
        for a, b in zip(outs["optimistic-2"], outs["parallel-2"], strict=True):
            assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    finally:
        for v in made.values():
            v.close()


def test_auto_vs_best_is_the_best_fixed_choices_time_over_autos_round_by_round() -> None:
    """What "auto within 5% of the best fixed choice" reads: the label but
    auto with the highest ratio to serial (serial included), each round's
    block time of it over auto's, their median and 95% range; a row under
    the ranges in the table, for older files computed from their blocks."""
    rows = 9
    serial = [2.0] * rows
    p2 = [1.0, 1.1, 1.0, 0.9, 1.2, 1.0, 1.05, 1.0, 0.95]
    auto = [1.1, 1.0, 1.1, 1.0, 1.2, 1.25, 1.0, 1.1, 1.0]
    ex = {k: {"s": sorted(v)[rows // 2], "ratio": 2.0 / sorted(v)[rows // 2], "blocks_s": v}
          for k, v in (("serial", serial), ("parallel-2", p2), ("auto", auto))}
    vs = company.auto_vs_best(ex)
    assert vs is not None and vs["best"] == "parallel-2"
    paired = sorted(b / a for b, a in zip(p2, auto, strict=True))
    assert vs["ratio"] == paired[rows // 2]
    assert vs["range"] == (paired[1], paired[-2])  # the sign test's at 9 rounds
    # serial the best: auto against serial
    slow = {**ex, "parallel-2": {"ratio": 0.8, "blocks_s": [2.5] * rows}}
    assert company.auto_vs_best(slow)["best"] == "serial"
    # nothing to compare
    assert company.auto_vs_best({k: ex[k] for k in ("serial", "parallel-2")}) is None
    assert company.auto_vs_best({"auto": ex["auto"]}) is None
    assert company.auto_vs_best({**ex, "auto": {"ratio": 1.0}}) is None
    # twins (one configuration measured twice) count as one: each round the
    # mean of their blocks, not the better of two samples of the same thing
    o2 = [0.8, 1.2, 0.9, 0.95, 0.95, 1.1, 0.95, 0.9, 0.95]
    with_twin = {**ex, "optimistic-2": {"s": 1.0, "ratio": 2.0, "blocks_s": o2}}
    assert company.auto_vs_best(with_twin)["best"] == "optimistic-2"  # the luckier sample
    vs2 = company.auto_vs_best(with_twin, {"optimistic-2": "parallel-2"})
    assert vs2 is not None and vs2["best"] == "parallel-2 = optimistic-2"
    pooled = sorted((a + b) / 2 / c for a, b, c in zip(p2, o2, auto, strict=True))
    assert vs2["ratio"] == pytest.approx(pooled[rows // 2])
    res = {"executors": ["serial", "parallel-2", "auto"],
           "situations": {"alone": {"executors": ex, "auto": {"choice": ["parallel-2"]}}}}
    lines = company.table(res).splitlines()
    row = next(x for x in lines if x.startswith("  auto vs best"))
    lo, hi = vs["range"]
    assert row.split(None, 3)[3] == (f"{vs['ratio']:.2f} of parallel-2's speed "
                                     f"(95% range {lo:.2f}-{hi:.2f})")
    assert lines.index(row) == 3  # under the situation's ratios and their ranges


def test_the_table_warns_where_the_host_check_moved() -> None:
    """Before and after more than 10% apart: the table ends with a warning
    naming both; within 10%, or without a host check (a file of an older
    run, a run with no pool), nothing."""
    res = {"executors": ["serial", "parallel-2"], "situations": {}}
    assert "WARNING" not in company.table(res)
    for after, warned in ((1.72, False), (1.6, False), (1.15, True), (2.0, True)):
        res["host_check"] = {"before": {"pool": "parallel-2", "ratio": 1.76},
                             "after": {"pool": "parallel-2", "ratio": after}}
        last = company.table(res).splitlines()[-1]
        assert last.startswith("WARNING: the host's speed moved during the run") is warned
        if warned:
            assert f"1.76x serial before it, {after:.2f}x after" in last


def test_median_range_is_the_sign_tests_interval() -> None:
    """The k-th smallest and largest of n values, k the largest whose
    binomial tail stays within half of 5%: 9 rounds give the 2nd of each
    end, 6 the extremes, 5 nothing; never narrower than the confidence asks."""
    import random

    nine = [0.97, 1.02, 0.99, 1.05, 0.94, 1.01, 1.00, 0.98, 1.03]
    assert company.median_range(nine) == (0.97, 1.03)
    assert company.median_range(nine[:6]) == (0.94, 1.05)
    assert company.median_range(nine[:5]) is None and company.median_range([]) is None
    assert company.median_range(nine, confidence=0.99) == (0.94, 1.05)
    rng = random.Random(0)
    for n in range(6, 40):
        xs = [rng.random() for _ in range(n)]
        lo, hi = company.median_range(xs)
        k = sorted(xs).index(lo) + 1
        assert sorted(xs)[n - k] == hi
        tail = sum(math.comb(n, i) for i in range(k)) / 2 ** n
        wider = tail + math.comb(n, k) / 2 ** n
        assert 2 * tail <= 0.05 < 2 * wider, n


def test_the_table_gives_each_ratios_95_percent_range() -> None:
    """Under each situation's ratios, the range of each executor's paired
    ratios (the results file's, or from the blocks for a file that predates
    it); no row where the rounds are too few."""
    serial = [2.0, 2.1, 1.9, 2.0, 2.2, 2.0, 1.8, 2.1, 2.0]
    pool = [1.0, 1.4, 1.0, 1.0, 1.1, 1.25, 0.9, 1.05, 1.0]
    ex = {"serial": {"s": 2.0, "ratio": 1.0, "blocks_s": serial},
          "parallel-2": {"s": 1.0, "ratio": 2.0, "blocks_s": pool,
                         "ratio_range": [1.5, 2.1]}}
    res = {"executors": ["serial", "parallel-2"], "situations": {"alone": {"executors": ex}}}
    lines = company.table(res).splitlines()
    assert lines[2].split() == ["95%", "range", "1.50-2.10"]
    del ex["parallel-2"]["ratio_range"]
    lo, hi = company.median_range([s / p for s, p in zip(serial, pool, strict=True)])
    assert company.table(res).splitlines()[2].split() == ["95%", "range", f"{lo:.2f}-{hi:.2f}"]
    for row in ex.values():
        row["blocks_s"] = row["blocks_s"][:5]
    assert not any(line.startswith("  95% range") for line in company.table(res).splitlines())


@pytest.fixture
def torch_one_thread():  # type: ignore[no-untyped-def]
    """torch on one thread for the test's duration: the benchmark leaves torch
    at its defaults, whose spinning OpenMP workers can take 100x longer per
    iteration on a loaded 2-core machine (what the benchmark is for; a test of
    behaviour need not wait for it)."""
    torch = pytest.importorskip("torch")
    was = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(was)


def test_the_training_loops_time_the_env_inside_an_iteration(torch_one_thread) -> None:
    res = company.bench_company(["torch", "async"], **{**QUICK, "rounds": 1, "block": 3})
    assert res["torch"]["threads"] == 1 and res["skipped"] == {}
    for sit in res["situations"].values():
        assert sit["block"] == 4  # whole updates of 2 iterations
        _check_figures(sit, res["executors"], 1)
        for row in sit["executors"].values():
            assert _finite_positive(row["env_s"]) and row["env_s"] < row["s"]
    assert "step() ms" in company.table(res) and "recv+send ms" in company.table(res)


def test_without_torch_its_situations_are_skipped(monkeypatch) -> None:
    monkeypatch.setattr(company, "_torch_info", lambda: None)
    lines: list[str] = []
    res = company.bench_company(["torch", "async"], **{**QUICK, "log": lines.append})
    assert res["situations"] == {} and res["torch"] is None
    assert set(res["skipped"]) == {"torch", "async"}
    assert "torch is not installed" in res["skipped"]["torch"]
    assert any("torch: skipped: torch is not installed" in line for line in lines)


def test_the_burner_is_gone_after_its_block() -> None:
    with company.burner(0.5) as p:
        assert p.is_alive()
    assert not _alive(p.pid)


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_the_burner_is_gone_when_the_measurement_raises(monkeypatch, exc) -> None:
    """An error, or Ctrl-C, while the env is measured beside the burner."""
    seen: list[int] = []
    children = set(multiprocessing.active_children())

    def measure_and_fail(plan, envs):  # type: ignore[no-untyped-def]
        seen.extend(c.pid for c in multiprocessing.active_children()
                    if c.is_alive() and c not in children)
        raise exc("the measurement failed")

    monkeypatch.setattr(company, "_alone", measure_and_fail)
    monkeypatch.setenv("SEER_STPA_CACHE", "1")
    with pytest.raises(exc, match="the measurement failed"):
        company.bench_company(["burner-100"], **QUICK)
    assert len(seen) == 1 and not _alive(seen[0])
    assert set(multiprocessing.active_children()) == children
    assert os.environ["SEER_STPA_CACHE"] == "1"


def test_cli_writes_the_json_file(tmp_path, capsys) -> None:
    """Beside a burner at 50%, which is gone afterwards."""
    out = tmp_path / "company.json"
    rc = cli.main(["bench", "company", "--situations", "burner-50", "--set", "width=8",
                   "--set", "height=8", "--quick", "--rounds", "1", "--block", "4",
                   "--json", str(out)])
    assert rc == 0
    assert not any(c.name.startswith("seer-env burner") for c in multiprocessing.active_children())
    res = json.loads(out.read_text())
    assert set(res) >= TOP_KEYS and res["rounds"] == 1
    assert res["workload"]["config"] == {"width": 8, "height": 8}
    _check_figures(res["situations"]["burner-50"], res["executors"], 1)
    assert res["situations"]["burner-50"]["title"] == "beside a CPU burner process at 50% duty"
    text = capsys.readouterr().out
    assert f"wrote {out}" in text and "auto chose" in text


def test_cli_says_what_ctrl_c_stopped(monkeypatch, capsys) -> None:
    def interrupted(**kw):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    monkeypatch.setattr(company, "bench_company", interrupted)
    assert cli.main(["bench", "company", "--situations", "burner-50"]) == 130
    assert "interrupted (Ctrl-C): the burner and env processes were stopped" \
        in capsys.readouterr().err
