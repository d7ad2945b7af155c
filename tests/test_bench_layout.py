"""Benchmarks live outside the package: the suite in ``benchmarks/``, what runs
from a wheel in ``seer_env.bench`` and ``seer-env bench``; nothing in
``seer_env/`` reaches into the checkout (``oracles/``, ``benchmarks/``, ``tests/``)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bench_suite
from seer_env import cli

ROOT = Path(__file__).resolve().parent.parent

#: Files of seer_env/ allowed to change sys.path, and why: the contract
#: checker's child processes import the checker's own seer_env (the folder
#: above the package: site-packages in a wheel) and the parent's sys.path (a
#: user's model importing its own modules).  Nothing else may.
SYS_PATH_ALLOWED = {
    "seer_env/_check_child.py": "the child imports the seer_env it belongs to",
    "seer_env/check/child.py": "the child process gets the parent's sys.path",
}
CHECKOUT_ONLY = {"oracles", "benchmarks", "tests"}


def _package_sources() -> list[str]:
    out = subprocess.run(["git", "ls-files", "seer_env"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    return [p for p in out if p.endswith(".py")]


def _touches_sys_path(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr == "path"
                and isinstance(node.value, ast.Name) and node.value.id == "sys"):
            return True
    return False


def test_the_package_does_not_reach_into_the_checkout():
    imports, sys_path = [], []
    for rel in _package_sources():
        tree = ast.parse((ROOT / rel).read_text(), rel)
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom)
                     and node.level == 0 else [])
            imports += [f"{rel}: import {n}" for n in names
                        if n.split(".")[0] in CHECKOUT_ONLY]
        if _touches_sys_path(tree) and rel not in SYS_PATH_ALLOWED:
            sys_path.append(rel)
    assert imports == [], "the package imports modules of the repository checkout"
    assert sys_path == [], "only SYS_PATH_ALLOWED may touch sys.path"
    assert not (ROOT / "seer_env" / "benchsuite.py").exists()


@pytest.mark.parametrize("what", ["suite", "scaling", "trace-overhead"])
def test_cli_points_to_the_suite_in_the_checkout(what, capsys):
    assert cli.main(["bench", what, "--quick"]) == 2
    err = capsys.readouterr().err
    assert "not part of the installed package" in err
    assert f"python benchmarks/bench_suite.py {what}" in err
    script = err.split("\n    ", 1)[1].split()
    assert (ROOT / script[1]).is_file()


def test_suite_script_parses_what_the_cli_prints(capsys):
    with pytest.raises(SystemExit) as exc:
        bench_suite.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for what in ("suite", "stpa", "scaling", "trace-overhead", "--max-threads", "--quick"):
        assert what in out


def test_suite_readme_table_from_the_committed_results():
    res = json.loads((ROOT / "benchmarks" / "results" / "bench_suite.json").read_text())
    table = bench_suite.readme_table(res)
    assert table.startswith("Machine: ")
    assert "| env | size | B |" in table


def test_suite_ports_from_the_checkout():
    res = bench_suite.bench_ports(rounds=1, log=lambda s: None)
    assert Path(res["source"]) == ROOT / "oracles"
    assert {"pcs 16x16", "phold 1024"} <= set(res)


def test_bench_stpa_runs_whole_episodes_and_remembers(monkeypatch):
    """seer-env bench stpa: every fixed configuration and threads="auto" over the
    same episodes; the second auto run starts from the decision the first one
    remembered (no preflight), and the user's cache settings are left as they were."""
    import time

    import seer_env.stpa.controller as controller
    import seer_env.stpa.decision as stpa_decision
    from seer_env._bind.runtime import cpu_count
    from seer_env.perf import bench
    from seer_env.stpa.company import CpuSample

    monkeypatch.setenv("SEER_STPA_CACHE", "0")
    # the machine's load unknown: on a busy host (CI under load) the first
    # run's decision would be one made in company, which is not remembered
    monkeypatch.setattr(controller, "cpu_sample", lambda: CpuSample(
        time.perf_counter_ns(), time.process_time_ns(), None))
    # ... and no company seen in the probes' own signs either (the pools'
    # threads waiting for a core, the caller's work slower beside them):
    # under load (the suite's other process, CI's neighbours) the first run's
    # pools waited for cores, and its decision was not remembered
    monkeypatch.setattr(stpa_decision, "company_words", lambda *a, **k: "")
    lines = []
    res = bench.bench_stpa(episodes=2, runs=2, log=lines.append, workloads=(
        ("PCS 4x4", "pcs_v0", {"width": 4, "height": 4}, 40),
        ("classic PCS 8x8", "pcs_v0", {"width": 8, "height": 8, "classic": True}, 30)))
    import os

    assert os.environ["SEER_STPA_CACHE"] == "0" and "SEER_STPA_CACHE_FILE" not in os.environ
    tiny, classic = res["PCS 4x4"], res["classic PCS 8x8"]
    assert set(tiny["wall_s"]) >= {"serial", "parallel-1", "auto", "auto (remembered)"}
    assert "optimistic-2" in classic["wall_s"] or cpu_count() < 2
    assert not any(k.startswith("parallel") for k in classic["wall_s"])  # lookahead 0
    for row in (tiny, classic):
        assert row["steps"] == 2 * 2 * (40 if row is tiny else 30)  # runs x episodes
        assert row["from_cache"] and row["best_fixed"] in row["wall_s"]
        # the best over all runs; the ratio is the median of the runs' own ratios
        assert row["best_fixed"] == min((k for k in row["wall_s"] if "auto" not in k),
                                        key=row["wall_s"].get)
        assert len(row["auto_vs_best_runs"]) == 2
        assert row["auto_vs_best"] == sum(row["auto_vs_best_runs"]) / 2
        assert row["auto_vs_best_total"] == (row["wall_s"]["auto"]
                                             / row["wall_s"][row["best_fixed"]])
    assert lines[0].startswith("PCS 4x4: 2 run(s) of 2 episodes, 80 steps each: serial ")


def test_a_benchmarks_results_file_is_stamped_and_summed_up_in_keys_the_docs_cite(tmp_path):
    """`seer-env bench pcs -o FILE` writes the commit, the machine, its load,
    every figure and a flat summary whose keys a result span can cite (a
    span's key is ``[\\w.-]+``: the raw results' keys, "work~1us" or
    "classic 32x32 step 200", cannot be)."""
    import re

    from seer_env.perf import bench

    out = tmp_path / "pcs.json"
    assert cli.main(["bench", "pcs", "--quick", "--rounds", "1", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == "pcs" and doc["quick"] is True
    assert {"commit", "dirty", "machine", "load_avg", "date"} <= set(doc)
    for w in (32, 64):
        assert doc["summary"][f"speedup_{w}"] == doc["results"][f"{w}x{w}"]["speedup"]
    # the other benchmarks' summaries, from results of their shape
    phold = {"work~1us": {"serial": {"events_per_s": 1e6}, "parallel-1": {"events_per_s": 0.99e6},
                          "parallel-2": {"events_per_s": 1.9e6}},
             "work=0": {"serial": {"events_per_s": 1e7}, "parallel-2": {"events_per_s": 2e7}}}
    opt = {"threads": 2, "quick": False,
           "classic 32x32 step 200": {"speedup_total": 1.2, "events_rolled_back": 7,
                                      "identical": True},
           "classic 64x64 step 2000": {"speedup_total": 1.5, "events_rolled_back": 9,
                                       "identical": True},
           "default PCS 64x64": {"optimistic_vs_parallel": 0.98},
           "PHOLD 4096 lookahead 1e-3": {"optimistic_vs_parallel": 1.2}}
    stpa = {"PCS 4x4": {"auto_vs_best": 1.1, "remembered_vs_best": 1.0},
            "Aircraft 1024": {"auto_vs_best": 0.99, "remembered_vs_best": 1.02}}
    api = {"fixed_cost_us": {"native_step": 1.2, "batched_above_native": 2.5,
                             "dict_above_native": 2.7},
           "dict_per_agent": {16: {"ratio": 0.3}, 1024: {"ratio": 0.35}, 4096: {"ratio": 0.4}}}
    sums = {k: bench.SUMMARIES[k](v) for k, v in
            (("phold", phold), ("optimistic", opt), ("stpa", stpa), ("api", api))}
    assert sums["phold"]["parallel2_vs_serial"] == pytest.approx(1.9)
    assert sums["phold"]["serial_ns_per_event_work0"] == pytest.approx(100.0)
    assert sums["optimistic"] == {"classic_32_step_200": 1.2, "classic_64_step_2000": 1.5,
                                  "optimistic_vs_parallel_pcs_64": 0.98,
                                  "optimistic_vs_parallel_phold_small_lookahead": 1.2,
                                  "classic_rolled_back_max": 9, "classic_identical": True}
    assert sums["stpa"]["pcs_4x4_auto_vs_best"] == 1.1
    assert sums["stpa"]["remembered_vs_best_max"] == 1.02
    assert sums["api"]["dict_vs_pure_max_to_1024"] == 0.35
    assert sums["api"]["dict_vs_pure_max_above_1024"] == 0.4
    for s in [doc["summary"], *sums.values()]:
        assert all(re.fullmatch(r"[\w.-]+", k) for k in s), s


def test_bench_results_to_a_folder_that_cannot_take_them_stop_before_the_run(tmp_path, capsys):
    missing = tmp_path / "no" / "such.json"
    for what in ("phold", "api", "pcs", "optimistic", "stpa", "company"):
        for bad, why in ((missing, "does not exist"), (tmp_path, "it is a folder")):
            assert cli.main(["bench", what, "-o", str(bad)]) == 2
            err = capsys.readouterr().err
            assert f"cannot write the results to {bad}" in err and why in err
    # the scripts that write results files refuse such a path before they run
    for script in ("benchmarks/bench_pcs.py", "benchmarks/bench_aircraft.py",
                   "benchmarks/bench_torchrl.py", "examples/async_rollout.py"):
        r = subprocess.run([sys.executable, str(ROOT / script), "--json", str(missing)],
                           capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert r.returncode != 0 and "does not exist" in r.stderr, (script, r.stderr[-500:])


def test_bench_aircraft_runs_and_writes_its_results_file(tmp_path):
    """The script ran into a helper the env module no longer had
    (``aircraft_v0.c_config``) and nothing noticed: a tiny run of it, whose
    results file holds the summary the docs cite."""
    out = tmp_path / "aircraft.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_aircraft.py"),
                        "--sizes", "8", "--steps", "2", "--warmup", "1", "--numpy-steps", "1",
                        "--json", str(out)], capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == "bench_aircraft.py" and "commit" in doc
    row = doc["results"]["8"]
    assert doc["summary"]["par2_vs_serial_8"] == pytest.approx(row["serial"] / row["par2"])


def test_bench_step_length_runs_and_writes_its_results_file(tmp_path):
    """The guide's step-length figures come from this script's results file."""
    out = tmp_path / "step_length.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_step_length.py"),
                        "--rounds", "1", "--json", str(out)], capture_output=True, text=True,
                       timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(out.read_text())
    row = doc["results"]["d16"]
    assert row["windows_per_step"] == pytest.approx(16.0)
    assert doc["summary"]["d16_serial_ns_per_event"] == row["ns_per_event"]["serial"]
    assert doc["summary"]["d0p25_events_per_step"] < doc["summary"]["d16_events_per_step"]


def _scripts_imports() -> list[tuple[str, int, str, str]]:
    """(file, line, module, name) of every ``from seer_env... import name`` in
    the repository's scripts outside the package and its tests (benchmarks,
    examples, oracles, docs)."""
    out = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    found = []
    for rel in out:
        if rel.startswith(("seer_env/", "tests/")):
            continue
        for node in ast.walk(ast.parse((ROOT / rel).read_text(), rel)):
            if (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                    and node.module.split(".")[0] == "seer_env"):
                found += [(rel, node.lineno, node.module, a.name) for a in node.names]
    return found


def test_scripts_outside_the_package_import_only_what_it_has_in_public():
    """A benchmark script imported a helper the package had since dropped
    (``seer_env.perf.company._commit``: bench_snapshot.py and bench_pymodel.py
    failed at import, and their committed results could not be rerun).  Every
    name the scripts import from seer_env exists, and none is private: the
    package's private names may change without a look at the checkout."""
    import importlib

    from seer_env.errors import MissingExtraError

    imports = _scripts_imports()
    assert any(f.startswith("benchmarks/") for f, *_ in imports)
    missing, private = [], []
    for rel, line, module, name in imports:
        where = f"{rel}:{line}: from {module} import {name}"
        if name.startswith("_"):
            private.append(where)
        try:
            mod = importlib.import_module(module)
            if name == "*" or hasattr(mod, name):
                continue
            importlib.import_module(f"{module}.{name}")
        except MissingExtraError:
            continue  # an extra this venv lacks: the name is the adapter's
        except ImportError:
            missing.append(where)
    assert missing == [], "scripts import names seer_env does not have"
    assert private == [], "scripts import seer_env's private names"
