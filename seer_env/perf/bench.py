"""Benchmarks of the runtime (not tests): ratios and medians measured in one run.

Run ``seer-env bench phold`` (or ``python -m seer_env.bench``); also ``api``,
``pcs`` and ``optimistic``.  These need only the installed package.  The
benchmark suite (STPA workloads, the NumPy ports of ``oracles/``, plots and the
README's table) is a script of the repository checkout,
``benchmarks/bench_suite.py``, which reuses these functions.  Every figure
compares configurations measured in the same process, interleaved round by
round, so a noisy shared machine affects them alike; medians over rounds.

PHOLD figures (issue targets in brackets):

* events/s of the serial executor and the parallel executor with 1 and 2
  threads, about 1 µs of work per event, remote=0.5 (parallel 2 >= 1.8x serial,
  parallel 1 >= 0.9x serial);
* per-event cost of the serial executor with ``work=0`` (<= 150 ns).
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._bind.runtime import cpu_count, cpu_model
from ..registry import Runtime


def machine() -> dict[str, Any]:
    """A short description of this machine for benchmark reports."""
    return {
        "cpu": cpu_model(),
        "cpus_usable": cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_avg": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }


def commit() -> dict[str, Any]:
    """The checkout's commit (None outside a git checkout) and whether it has
    uncommitted changes (the results files aside): what a results file is
    stamped with."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return {"commit": None, "dirty": None}
        # the results files themselves (a benchmark run rewrites them) do not count
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":(exclude)benchmarks/results"],
                               cwd=root, capture_output=True, text=True, timeout=10)
        return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def load_avg() -> list[float] | None:
    """The machine's load averages (1, 5, 15 minutes); None where unknown."""
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def _summary_phold(res: Mapping[str, Any]) -> dict[str, float]:
    one, zero = res["work~1us"], res["work=0"]
    return {"parallel2_vs_serial": _ratio(one["parallel-2"]["events_per_s"],
                                          one["serial"]["events_per_s"]),
            "parallel1_vs_serial": _ratio(one["parallel-1"]["events_per_s"],
                                          one["serial"]["events_per_s"]),
            "serial_ns_per_event_work0": 1e9 / zero["serial"]["events_per_s"],
            "parallel2_ns_per_event_work0": 1e9 / zero["parallel-2"]["events_per_s"]}


def _summary_api(res: Mapping[str, Any]) -> dict[str, float]:
    fixed, rows = res["fixed_cost_us"], res["dict_per_agent"]
    small = [r["ratio"] for n, r in rows.items() if int(n) <= 1024]
    large = [r["ratio"] for n, r in rows.items() if int(n) > 1024]
    return {"native_step_us": fixed["native_step"],
            "batched_above_native_us": fixed["batched_above_native"],
            "dict_above_native_us": fixed["dict_above_native"],
            "dict_vs_pure_min_to_1024": min(small, default=math.nan),
            "dict_vs_pure_max_to_1024": max(small, default=math.nan),
            "dict_vs_pure_max_above_1024": max(large, default=math.nan)}


def _summary_pcs(res: Mapping[str, Any]) -> dict[str, float]:
    out = {}
    for k, row in res.items():
        if isinstance(row, dict) and "speedup" in row:
            w = k.split("x")[0]
            out[f"speedup_{w}"] = row["speedup"]
            out[f"speedup_paired_{w}"] = row["speedup_paired"]
    return out


def _summary_optimistic(res: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    rolled, identical = [], True
    for k, row in res.items():
        if not isinstance(row, dict):
            continue
        if k.startswith("classic "):  # "classic 32x32 step 200"
            _, grid, _, minutes = k.split()
            out[f"classic_{grid.split('x')[0]}_step_{minutes}"] = row["speedup_total"]
            rolled.append(row["events_rolled_back"])
            identical = identical and bool(row["identical"])
        else:
            key = ("phold_small_lookahead" if k.startswith("PHOLD")
                   else f"pcs_{k.split()[-1].split('x')[0]}")
            out[f"optimistic_vs_parallel_{key}"] = row["optimistic_vs_parallel"]
    out["classic_rolled_back_max"] = max(rolled, default=0)
    out["classic_identical"] = identical
    return out


def _summary_stpa(res: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, row in res.items():
        if isinstance(row, dict) and "auto_vs_best" in row:
            key = name.lower().replace(" ", "_")
            out[f"{key}_auto_vs_best"] = row["auto_vs_best"]
            out[f"{key}_remembered_vs_best"] = row["remembered_vs_best"]
    firsts = [v for k, v in out.items() if k.endswith("_auto_vs_best")]
    remembered = [v for k, v in out.items() if k.endswith("_remembered_vs_best")]
    out["auto_vs_best_max"] = max(firsts, default=math.nan)
    out["remembered_vs_best_max"] = max(remembered, default=math.nan)
    return out


#: how each benchmark's figures are summed up in its results file (flat keys
#: that the docs' result spans cite: `benchmarks/results_marks.py`)
SUMMARIES: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "phold": _summary_phold, "api": _summary_api, "pcs": _summary_pcs,
    "optimistic": _summary_optimistic, "stpa": _summary_stpa}


def results_file(what: str, res: Mapping[str, Any], summary: Mapping[str, Any] | None = None,
                 **meta: Any) -> dict[str, Any]:
    """A benchmark's results as its file in ``benchmarks/results/`` holds
    them: stamped with the commit, the machine and its load, a flat
    ``summary`` the docs cite (``SUMMARIES[what]`` of ``res`` where none is
    given: the scripts of ``benchmarks/`` and ``examples/`` give their own),
    and every figure under ``results``.

    ```python
    from seer_env.perf.bench import bench_pcs, results_file
    doc = results_file("pcs", bench_pcs(rounds=3, widths=(32,)))
    print(doc["summary"]["speedup_32"], doc["commit"])
    ```
    """
    return {"benchmark": what, **commit(), "machine": machine(), "load_avg": load_avg(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), **meta,
            "summary": SUMMARIES[what](res) if summary is None else dict(summary),
            "results": res}


def results_path_problem(path: str | os.PathLike[str]) -> str | None:
    """Why a results file cannot be written at ``path`` (None: it can) --
    asked before a benchmark runs, whose figures a traceback at the end
    would lose."""
    out = Path(path).expanduser()
    if out.is_dir():
        return f"cannot write the results to {out}: it is a folder"
    if not out.parent.is_dir():
        return f"cannot write the results to {out}: its folder {out.parent} does not exist"
    if not os.access(out.parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        return f"cannot write the results to {out}: it is not writable"
    return None


def require_results_path(path: str | os.PathLike[str], prog: str) -> None:
    """For a script's ``--json PATH``: exit with `results_path_problem`'s
    words (``prog: ...``) where the file cannot be written -- before the
    run, whose figures a traceback at the end would lose."""
    problem = results_path_problem(path)
    if problem is not None:
        raise SystemExit(f"{prog}: {problem}")


def write_results(path: str | os.PathLike[str], doc: Mapping[str, Any]) -> None:
    """Write a results document (`results_file`) as JSON, whole or not at all
    (a temporary file renamed over ``path``)."""
    out = Path(path)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, default=_json_default) + "\n")
    tmp.replace(out)


def _json_default(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, tuple | set):
        return list(x)
    raise TypeError(f"not JSON: {type(x).__name__}")


@dataclass
class Case:
    """One configuration: a Runtime factory and how to step it."""

    name: str
    make: Callable[[], Runtime]
    steps: int


def _time_steps(rt: Runtime, steps: int) -> tuple[float, int]:
    ev0 = rt.stats()["events"]
    t0 = time.perf_counter()
    for _ in range(steps):
        rt.step()
    dt = time.perf_counter() - t0
    return dt, rt.stats()["events"] - ev0


def run_cases(cases: list[Case], rounds: int, warmup: int = 2) -> dict[str, dict[str, float]]:
    """Interleave the cases round by round; median seconds/step and events/s."""
    rts = {}
    for c in cases:
        rt = c.make()
        rt.reset([1] * rt.num_instances)
        rt.actions[:] = 0
        for _ in range(warmup):
            rt.step()
        rts[c.name] = rt
    per_step: dict[str, list[float]] = {c.name: [] for c in cases}
    ev_rate: dict[str, list[float]] = {c.name: [] for c in cases}
    try:
        for _ in range(rounds):
            for c in cases:
                dt, ev = _time_steps(rts[c.name], c.steps)
                per_step[c.name].append(dt / c.steps)
                ev_rate[c.name].append(ev / dt)
    finally:
        for rt in rts.values():
            rt.close()
    return {
        n: {
            "s_per_step": statistics.median(per_step[n]),
            "events_per_s": statistics.median(ev_rate[n]),
        }
        for n in per_step
    }


def phold_config(num_entities: int = 4096, work: int = 0, remote: float = 0.5) -> dict[str, Any]:
    """The benchmark's PHOLD configuration (lookahead = mean = 1, 4 events/entity)."""
    return dict(num_entities=num_entities, events_per_entity=4, remote=remote, mean=1.0,
                lookahead=1.0, work=work, step_duration=8.0)


def calibrate_work(target_ns: float = 1000.0) -> int:
    """Iterations of PHOLD's work loop that take about ``target_ns`` per event."""
    def per_event(work: int) -> float:
        rt = Runtime("phold", phold_config(1024, work), 1, "serial", 1)
        rt.reset([1])
        rt.actions[:] = 0
        rt.step()
        best = float("inf")
        for _ in range(3):
            dt, ev = _time_steps(rt, 3)
            best = min(best, dt / ev)
        rt.close()
        return best * 1e9

    base = per_event(0)
    probe = 2000
    slope = (per_event(probe) - base) / probe
    return max(1, int(round(target_ns / slope)))


def bench_phold(rounds: int = 7, steps: int = 4, log: Callable[[str], None] = print
                ) -> dict[str, Any]:
    """The issue-2 PHOLD figures; returns them as a dict (also logged)."""
    work = calibrate_work(1000.0)
    log(f"machine: {machine()}")
    log(f"PHOLD: 4096 entities, 4 events/entity, remote=0.5, lookahead=mean=1, D=8; "
        f"work={work} iterations (~1 us/event)")
    out: dict[str, Any] = {"machine": machine(), "work_iterations": work}
    for label, w in (("work~1us", work), ("work=0", 0)):
        cfg = phold_config(4096, w)
        # the ignores: mypy cannot type a lambda's default arguments (python/mypy#15459)
        cases = [
            Case("serial", lambda cfg=cfg: Runtime("phold", cfg, 1, "serial", 1), steps),  # type: ignore[misc]
            Case("parallel-1", lambda cfg=cfg: Runtime("phold", cfg, 1, "parallel", 1), steps),  # type: ignore[misc]
            Case("parallel-2", lambda cfg=cfg: Runtime("phold", cfg, 1, "parallel", 2), steps),  # type: ignore[misc]
        ]
        res = run_cases(cases, rounds)
        ser = res["serial"]["events_per_s"]
        events = res["serial"]["events_per_s"] * res["serial"]["s_per_step"] * steps * rounds
        log(f"[{label}] ~{events / 1e6:.1f} M events per configuration")
        for name, r in res.items():
            log(f"  {name:11s} {r['events_per_s'] / 1e6:8.3f} M events/s  "
                f"{r['s_per_step'] * 1e3:8.2f} ms/step  ratio vs serial "
                f"{r['events_per_s'] / ser:5.2f}x  ({1e9 / r['events_per_s']:.0f} ns/event)")
        out[label] = res
    return out


# -- the Python layer: the fixed cost of a step, the dict API per agent ------------------


class MinimalDictEnv:
    """The least a pure-Python PettingZoo ParallelEnv does per step besides its
    simulation: read each agent's action from the dict and return the same five
    dicts as seer_env's (a fresh observation row per agent, float rewards,
    bool flags, an info dict per agent with the same keys), written with the
    fast idioms (``zip``, ``tolist``).  The yardstick of the dict API."""

    def __init__(self, agents: list[str], obs_dim: int, info_keys: tuple[str, ...]) -> None:
        self.agents = list(agents)
        n = len(agents)
        self._obs = np.zeros((n, obs_dim), np.float32)
        self._reward = np.zeros(n, np.float32)
        self._flags = np.zeros(n, bool)
        self._info = np.zeros((n, len(info_keys)), np.float64)
        self._actions = np.zeros(n, np.int64)
        self.info_keys = info_keys

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        agents = self.agents
        self._actions[:] = [actions[a] for a in agents]
        obs = self._obs.copy()
        keys = self.info_keys
        return (dict(zip(agents, obs, strict=False)),
                dict(zip(agents, self._reward.tolist(), strict=False)),
                dict(zip(agents, self._flags.tolist(), strict=False)),
                dict(zip(agents, self._flags.tolist(), strict=False)),
                {a: dict(zip(keys, row, strict=False))
                 for a, row in zip(agents, self._info.tolist(), strict=False)})


def _block_s(fn: Callable[[], Any], n: int) -> float:
    """Seconds for ``n`` consecutive calls of ``fn``."""
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - t0) / 1e9


def _blocks(runs: dict[str, Callable[[], Any]], rounds: int, block: int,
            before: Callable[[str], Any] | None = None,
            after: Callable[[str], Any] | None = None) -> dict[str, list[float]]:
    """Seconds per block of ``block`` consecutive calls of each run, the order
    rotating every round (warm caches, as a user steps one env in a loop).
    ``before``/``after``: called with the run's key around each of its blocks,
    outside the timing (``seer-env bench company`` waits at a barrier shared
    with other processes before a block, and reads what a run measured inside
    its own calls after one)."""
    keys = list(runs)
    out: dict[str, list[float]] = {k: [] for k in keys}
    for r in range(rounds):
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:
            if before is not None:
                before(k)
            out[k].append(_block_s(runs[k], block))
            if after is not None:
                after(k)
    return out


def _rotated(runs: dict[str, Callable[[], Any]], rounds: int, block: int) -> dict[str, float]:
    """Median µs per call of each run: blocks of ``block`` calls, rotated."""
    for fn in runs.values():
        _block_s(fn, max(1, block // 4))  # warm
    return {k: statistics.median(v) / block * 1e6
            for k, v in _blocks(runs, rounds, block).items()}


def bench_api(rounds: int = 9, agents: tuple[int, ...] = (16, 64, 256, 1024, 4096),
              log: Callable[[str], None] = print) -> dict[str, Any]:
    """The fixed cost of a step above the native step (PHOLD, one entity, one
    event, serial executor) through the batched and the dict API, and the dict
    API's cost per agent against `MinimalDictEnv` at several agent
    counts.  Medians of rotated blocks, in one process."""
    from ..envs import phold_v0

    out: dict[str, Any] = {}
    one = dict(num_entities=1, events_per_entity=1, mean=1.0, lookahead=0.5,
               step_duration=1.0, max_cycles=0, executor="serial", threads=1)
    venv = phold_v0.vector_env(1, **one)
    penv = phold_v0.parallel_env(**one)
    nenv = phold_v0.vector_env(1, **one)
    for e in (venv, penv, nenv):
        e.reset(seed=0)
    rt = nenv.runtime
    rt.actions[:] = 0
    arr = np.zeros((1, 1), np.int64)
    acts = {"entity_0": 0}
    med = _rotated({"native": rt.step, "batched": lambda: venv.step(arr),
                    "dict": lambda: penv.step(acts)}, rounds, 2000)
    for e in (venv, penv, nenv):
        e.close()
    out["fixed_cost_us"] = {"native_step": med["native"],
                            "batched_above_native": med["batched"] - med["native"],
                            "dict_above_native": med["dict"] - med["native"]}
    log(f"fixed cost of a step (PHOLD, 1 entity, 1 event, serial): native step "
        f"{med['native']:.2f} us; batched API +{med['batched'] - med['native']:.2f} us; "
        f"dict API +{med['dict'] - med['native']:.2f} us")
    rows = {}
    for n in agents:
        cfg = dict(num_entities=n, events_per_entity=1, mean=1.0, lookahead=0.5,
                   step_duration=1.0, max_cycles=0, executor="serial", threads=1)
        penv = phold_v0.parallel_env(**cfg)
        nenv = phold_v0.vector_env(1, **cfg)
        penv.reset(seed=0)
        nenv.reset(seed=0)
        rt = nenv.runtime
        rt.actions[:] = 0
        acts = dict.fromkeys(penv.agents, 0)
        pure = MinimalDictEnv(penv.agents, penv.sizes.obs_dim, penv.info_keys)
        block = max(3, 20000 // n)
        # the ignores: mypy cannot type a lambda's default arguments (python/mypy#15459)
        m = _rotated({"native": rt.step, "dict": lambda p=penv, a=acts: p.step(a),  # type: ignore[misc]
                      "pure": lambda p=pure, a=acts: p.step(a)}, rounds, block)  # type: ignore[misc]
        penv.close()
        nenv.close()
        ours = (m["dict"] - m["native"]) / n
        theirs = m["pure"] / n
        rows[n] = {"dict_us_per_agent": ours, "pure_us_per_agent": theirs,
                   "ratio": ours / theirs}
        log(f"  dict API at {n:5d} agents: {ours * 1e3:6.1f} ns/agent above the native step; "
            f"minimal pure-Python env {theirs * 1e3:6.1f} ns/agent; ratio {ours / theirs:.2f}")
    out["dict_per_agent"] = rows
    return out


def pcs_config(width: int, **over: Any) -> dict[str, Any]:
    """The complete PCS config of the env at ``width`` x ``width`` (its defaults:
    load reports on; ``classic=True``: the ROSS-Models dynamics, lookahead 0),
    every field by name, as a results file records it.

    ```python
    from seer_env.perf.bench import pcs_config
    pcs_config(64)["width"]                          # 64
    pcs_config(32, classic=True)["classic"]          # True
    ```
    """
    from ..envs import pcs_v0

    v = pcs_v0.vector_env(1, width=width, height=width, executor="serial", threads=1,
                          **over)
    cfg = dict(v.runtime.config)
    v.close()
    return cfg


def _opt_stats(rt: Runtime) -> dict[str, Any]:
    s = rt.stats()
    ev = max(1, s["events"])
    return {"events": s["events"], "rollbacks": s["rollbacks"],
            "events_rolled_back": s["events_rolled_back"],
            "rolled_back_per_committed": s["events_rolled_back"] / ev,
            "anti_messages": s["anti_messages"], "serial_steps": s["serial_steps"],
            "log_bytes_peak": s["log_bytes_peak"]}


def bench_pcs(rounds: int = 9, threads: int = 2, widths: tuple[int, ...] = (32, 64),
              block: int = 40, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Default PCS (load reports on) through the batched API, one env stepped in
    a loop: the parallel executor on ``threads`` threads vs the serial executor,
    at 32x32 and 64x64.  Each runner takes ``block`` consecutive steps per round
    (warm caches), the order rotating; the ratio of the medians of the per-step
    times, and the median of the rounds' ratios (``speedup_paired``).

    Example:

    ```python
    from seer_env.perf.bench import bench_pcs
    print(bench_pcs(rounds=3)["64x64"]["speedup"])
    ```
    """
    from ..envs import pcs_v0

    out: dict[str, Any] = {"threads": threads}
    for w in widths:
        envs = {"serial": pcs_v0.vector_env(1, width=w, height=w, executor="serial",
                                            threads=1),
                f"parallel-{threads}": pcs_v0.vector_env(1, width=w, height=w,
                                                         executor="parallel",
                                                         threads=threads)}
        acts = np.zeros((1, w * w), np.int64)
        for e in envs.values():
            e.reset(seed=0)
            for _ in range(block):
                e.step(acts)
        # the ignores: mypy cannot type a lambda's default arguments (python/mypy#15459)
        samples = _blocks({k: lambda e=e, a=acts: e.step(a) for k, e in envs.items()}, rounds,  # type: ignore[misc]
                          block)
        ev = {k: e.runtime.stats()["events"] / max(1, e.runtime.stats()["steps"])
              for k, e in envs.items()}
        for e in envs.values():
            e.close()
        med = {k: statistics.median(v) / block for k, v in samples.items()}
        sp = med["serial"] / med[f"parallel-{threads}"]
        # each round's two blocks ran back to back: their ratio shares the
        # host's state of the moment (robust to a host whose speed drifts)
        paired = statistics.median(
            a / b for a, b in zip(samples["serial"], samples[f"parallel-{threads}"],
                                  strict=True))
        out[f"{w}x{w}"] = {"median_s_per_step": med, "speedup": sp,
                           "speedup_paired": paired, "events_per_step": ev["serial"]}
        log(f"default PCS {w}x{w} (reports on, batched API): serial "
            f"{med['serial'] * 1e3:.3f} ms/step, parallel-{threads} "
            f"{med[f'parallel-{threads}'] * 1e3:.3f} ms/step: {sp:.2f}x "
            f"(median of the rounds' ratios {paired:.2f}x; {ev['serial']:.0f} events/step)")
    return out


def bench_optimistic(quick: bool = False, threads: int = 2,
                     log: Callable[[str], None] = print,
                     step_minutes: tuple[float, ...] = (20.0, 200.0, 2000.0)) -> dict[str, Any]:
    """The optimistic executor against the serial and the parallel executors.

    * classic PCS (lookahead 0, the ROSS-Models dynamics) 32x32 to t = 120000 and
      64x64 to t = 30000 (a tenth of that with ``quick``) at each step length of
      ``step_minutes`` (20, 200 and 2,000 simulated minutes a step): serial vs
      optimistic on ``threads`` threads, both runs stepped to the end in rotated
      blocks of steps; the ratio of total times, the median of per-block ratios,
      the event and rollback counts (the two runs must handle the same events)
      and the log's peak (it must not grow with the step's length);
    * default PCS (lookahead 1 minute, load reports on) 32x32 and 64x64:
      optimistic vs parallel vs serial, rotated blocks of 20 steps;
    * PHOLD 4096 with a lookahead too small for windows (1e-3 of a 1.0 step):
      optimistic vs parallel vs serial.

    Example:

    ```python
    from seer_env.perf.bench import bench_optimistic
    res = bench_optimistic(quick=True)
    print(res["classic 32x32 step 200"]["speedup_total"])
    ```
    """
    out: dict[str, Any] = {"threads": threads, "quick": quick}
    scale = 0.1 if quick else 1.0
    for w, t_end in ((32, 120000.0), (64, 30000.0)):
        for minutes in step_minutes:
            cfg = pcs_config(w, classic=True, step_minutes=minutes)
            steps = max(1, int(round(scale * t_end / minutes)))
            nblocks = min(10, steps)
            block = max(1, steps // nblocks)
            rts = {"serial": Runtime("pcs", cfg, 1, "serial", 1),
                   f"optimistic-{threads}": Runtime("pcs", cfg, 1, "optimistic", threads)}
            for rt in rts.values():
                rt.reset([0])
                rt.actions[:] = 0
            samples = _blocks({k: rt.step for k, rt in rts.items()}, nblocks, block)
            opt = rts[f"optimistic-{threads}"]
            ser = rts["serial"]
            same = (ser.entity_events(0).tobytes() == opt.entity_events(0).tobytes()
                    and ser.obs.tobytes() == opt.obs.tobytes())
            tot = {k: sum(v) for k, v in samples.items()}
            per_block = [a / b for a, b in zip(samples["serial"],
                                               samples[f"optimistic-{threads}"], strict=True)]
            row = {"step_minutes": minutes, "t_end": nblocks * block * minutes,
                   "steps": nblocks * block,
                   "serial_events_per_s": ser.stats()["events"] / tot["serial"],
                   "optimistic_events_per_s":
                       opt.stats()["events"] / tot[f"optimistic-{threads}"],
                   "speedup_total": tot["serial"] / tot[f"optimistic-{threads}"],
                   "speedup_median_block": statistics.median(per_block),
                   "phases_per_step": opt.stats()["windows"] / max(1, opt.stats()["steps"]),
                   "identical": same, **_opt_stats(opt)}
            for rt in rts.values():
                rt.close()
            out[f"classic {w}x{w} step {minutes:g}"] = row
            log(f"classic PCS {w}x{w}, {minutes:g}-minute steps to t={row['t_end']:.0f} "
                f"({row['steps']} steps): optimistic-{threads} {row['speedup_total']:.2f}x "
                f"serial (median block {row['speedup_median_block']:.2f}x); serial "
                f"{row['serial_events_per_s'] / 1e6:.2f} M events/s, optimistic "
                f"{row['optimistic_events_per_s'] / 1e6:.2f} M events/s; {row['events']} "
                f"events, {row['events_rolled_back']} rolled back "
                f"({row['rolled_back_per_committed']:.4f} per committed event), "
                f"{row['phases_per_step']:.1f} phases a step, {row['serial_steps']} serial "
                f"steps, log peak {row['log_bytes_peak'] / 2**20:.1f} MiB; outputs "
                f"{'identical' if same else 'DIFFER'}")
    phold = dict(num_entities=4096, events_per_entity=2, remote=0.5, mean=1.0,
                 lookahead=1e-3, work=0, step_duration=1.0)
    cases = [(f"default PCS {w}x{w}", "pcs", pcs_config(w)) for w in (32, 64)]
    cases.append(("PHOLD 4096 lookahead 1e-3", "phold", phold))
    for name, model, cfg in cases:
        rts = {"serial": Runtime(model, cfg, 1, "serial", 1),
               f"parallel-{threads}": Runtime(model, cfg, 1, "parallel", threads),
               f"optimistic-{threads}": Runtime(model, cfg, 1, "optimistic", threads)}
        for rt in rts.values():
            rt.reset([0])
            rt.actions[:] = 0
            for _ in range(10):
                rt.step()
        samples = _blocks({k: rt.step for k, rt in rts.items()}, 3 if quick else 9, 20)
        med = {k: statistics.median(v) for k, v in samples.items()}
        opt = rts[f"optimistic-{threads}"]
        row = {"median_s_per_block": med,
               "optimistic_vs_parallel": med[f"parallel-{threads}"] / med[f"optimistic-{threads}"],
               "optimistic_vs_serial": med["serial"] / med[f"optimistic-{threads}"],
               "parallel_vs_serial": med["serial"] / med[f"parallel-{threads}"],
               **_opt_stats(opt)}
        for rt in rts.values():
            rt.close()
        out[name] = row
        log(f"{name}: parallel-{threads} {row['parallel_vs_serial']:.2f}x serial, optimistic-"
            f"{threads} {row['optimistic_vs_serial']:.2f}x serial = "
            f"{row['optimistic_vs_parallel']:.2f}x parallel; {row['events_rolled_back']} "
            f"rolled back of {row['events']} events, {row['serial_steps']} serial steps")
    return out


#: The workloads of [`bench_stpa`][seer_env.perf.bench.bench_stpa]: (name, env, config,
#: steps per episode), tiny and large, and classic PCS (lookahead 0).
STPA_RUNS: tuple[tuple[str, str, dict[str, Any], int], ...] = (
    ("PCS 4x4", "pcs_v0", {"width": 4, "height": 4}, 100),
    ("Aircraft 8", "aircraft_v0", {"num_uavs": 8}, 150),
    ("PCS 64x64", "pcs_v0", {"width": 64, "height": 64}, 60),
    ("Aircraft 1024", "aircraft_v0", {"num_uavs": 1024}, 60),
    ("classic PCS 32x32", "pcs_v0", {"width": 32, "height": 32, "classic": True}, 100),
)


def _fixed_choices(lookahead: float, step_duration: float, cores: int) -> list[str]:
    """Every fixed configuration STPA could pick, as labels."""
    from .._bind.runtime import opt_speculates

    out = ["serial"]
    if lookahead > 0.0:
        out += [f"parallel-{p}" for p in range(1, cores + 1)]
    if opt_speculates(lookahead, step_duration):
        out += [f"optimistic-{p}" for p in range(2, cores + 1)]
    return out


def _run_episode(venv: Any, seed: int) -> int:
    """One whole episode of ``venv`` (one instance, zero actions): its steps."""
    rt = venv.runtime
    rt.reset([seed])
    rt.actions[:] = 0 if rt.sizes.action_kind == "discrete" else np.clip(
        0.0, rt.sizes.action_low, rt.sizes.action_high)
    k = 0
    while rt.alive.any():
        rt.step()
        k += 1
    return k


def bench_stpa(quick: bool = False, episodes: int | None = None,
               workloads: tuple[tuple[str, str, dict[str, Any], int], ...] = STPA_RUNS,
               log: Callable[[str], None] = print, runs: int | None = None) -> dict[str, Any]:
    """STPA over whole runs: each workload's episodes (reset between them, as a
    training run does) under every fixed configuration and under
    ``threads="auto"``, twice: a first run (an empty decision cache: its
    preflight and re-probes counted) and a run that starts from the decision a
    first run remembered ([`DecisionCache`][seer_env.stpa.DecisionCache]).

    A *run* is ``episodes`` episodes of every configuration, each on an env
    made for that run, the configurations taking the same episodes in rotated
    order; ``runs`` of them are made.  The best fixed configuration is the one
    with the least wall time over all runs; ``auto_vs_best`` is the median over
    the runs of the auto run's wall time over the best's in the same run (a
    tiny workload's run takes milliseconds, so one run's ratio is as noisy as
    the host; the best of several noisy equals, picked per run, would be
    biased low).

    ```python
    from seer_env.perf.bench import bench_stpa
    res = bench_stpa(quick=True)
    print(res["PCS 4x4"]["auto_vs_best"])
    ```
    """
    import tempfile

    from ..registry import env_module

    episodes = episodes or (3 if quick else 8)
    runs = runs or (1 if quick else 5)
    cores = cpu_count()
    out: dict[str, Any] = {"machine": machine(), "episodes": episodes, "runs": runs}
    saved = {k: os.environ.get(k) for k in ("SEER_STPA_CACHE", "SEER_STPA_CACHE_FILE")}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            os.environ["SEER_STPA_CACHE"] = "1"
            for w, (name, env, cfg, length) in enumerate(workloads):
                mod = env_module(env)
                c = dict(cfg, max_cycles=length)
                probe = mod.vector_env(1, executor="serial", threads=1, **c)
                labels = _fixed_choices(probe.runtime.sizes.lookahead,
                                        probe.runtime.sizes.step_duration, cores)
                probe.close()
                # the remembered runs find the decision a first run of their own made
                remembered = os.path.join(tmp, f"stpa-{w}.json")
                os.environ["SEER_STPA_CACHE_FILE"] = remembered
                first = mod.vector_env(1, threads="auto", **c)
                while (first.stpa.decision is None or first.stpa.state != "monitor"
                       or first.stpa.deferred):
                    _run_episode(first, 7)
                first.close()
                keys = [*labels, "auto", "auto (remembered)"]
                wall = dict.fromkeys(keys, 0.0)
                per_run: list[dict[str, float]] = []
                steps = 0
                st = st2 = None
                regimes: dict[str, str] = {}
                for r in range(runs):
                    venvs: dict[str, Any] = {}
                    try:
                        for label in labels:
                            ex, _, th = label.partition("-")
                            venvs[label] = mod.vector_env(1, executor=ex, threads=int(th or 1),
                                                          **c)
                        os.environ["SEER_STPA_CACHE_FILE"] = os.path.join(tmp, f"first-{w}-{r}")
                        venvs["auto"] = mod.vector_env(1, threads="auto", **c)
                        os.environ["SEER_STPA_CACHE_FILE"] = remembered
                        venvs["auto (remembered)"] = mod.vector_env(1, threads="auto", **c)
                        t_run = dict.fromkeys(keys, 0.0)
                        for ep in range(episodes):
                            k0 = (r + ep) % len(keys)
                            for k in keys[k0:] + keys[:k0]:
                                t0 = time.perf_counter()
                                n = _run_episode(venvs[k], 100 + ep)
                                t_run[k] += time.perf_counter() - t0
                                steps += n if k == "auto" else 0
                        per_run.append(t_run)
                        for k in keys:
                            wall[k] += t_run[k]
                        st, st2 = venvs["auto"].stpa, venvs["auto (remembered)"].stpa
                        regimes = st.as_dict()["regimes"]  # (it reads the open runtime)
                    finally:
                        for v in venvs.values():
                            v.close()
                assert st is not None and st2 is not None
                best = min(labels, key=lambda k: wall[k])
                auto_runs = [t["auto"] / t[best] for t in per_run]
                row = {"config": cfg, "steps": steps, "wall_s": wall, "runs": runs,
                       "best_fixed": best,
                       "auto_vs_best": statistics.median(auto_runs),
                       "remembered_vs_best": statistics.median(
                           t["auto (remembered)"] / t[best] for t in per_run),
                       "auto_vs_best_runs": auto_runs,
                       "auto_vs_best_total": wall["auto"] / wall[best],
                       "auto_choice": st.decision.candidate.label if st.decision else None,
                       "remembered_choice": st2.decision.candidate.label,
                       "from_cache": st2.from_cache, "deferred": st.deferred,
                       "preflight_steps": st.preflight_steps,
                       "probe_steps": st.probe_steps, "reason": st.reason,
                       "episodes": episodes, "probes": len(st.history),
                       "regime_switches": st.regime_switches,
                       "regimes": regimes}
                out[name] = row
                log(f"{name}: {runs} run(s) of {episodes} episodes, {steps // runs} steps each: "
                    + ", ".join(f"{k} {wall[k] / runs * 1e3:.1f} ms" for k in keys)
                    + f" per run | best fixed {best}; auto/best {row['auto_vs_best']:.3f} "
                    f"(median of {runs}; chose {row['auto_choice']}"
                    + (", pools put off" if st.deferred else "")
                    + f", {row['preflight_steps']} preflight and {row['probe_steps']} probe "
                    f"steps); remembered/best {row['remembered_vs_best']:.3f} "
                    f"({row['remembered_choice']})")
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--json", help="write the figures to this JSON file")
    a = p.parse_args(argv)
    res = bench_phold(a.rounds)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2, default=float)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["bench_api", "bench_optimistic", "bench_pcs", "bench_phold", "bench_stpa",
           "calibrate_work", "commit", "load_avg", "machine", "pcs_config", "require_results_path",
           "results_file", "results_path_problem", "run_cases",
           "write_results", "Case", "MinimalDictEnv", "STPA_RUNS", "SUMMARIES"]
