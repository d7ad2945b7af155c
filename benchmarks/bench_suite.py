"""The benchmark suite: JSON, PNG plots and the README's performance table.

A script of the repository checkout, not part of the package (it needs the
NumPy ports in ``oracles/``); run it from the checkout (plots need the optional
``[bench]`` extra, matplotlib)::

    python benchmarks/bench_suite.py suite -o bench_out          # everything, ~2-4 min on 2 cores
    python benchmarks/bench_suite.py suite -o bench_out --quick  # fewer rounds and sizes
    python benchmarks/bench_suite.py stpa -o bench_out           # only the STPA workloads
    python benchmarks/bench_suite.py scaling --max-threads 16 -o scaling_out  # many cores
    python benchmarks/bench_suite.py trace-overhead     # tracing compiled out vs never enabled

The figures that need only the package (PHOLD, the API's cost, PCS, the
optimistic executor) are in ``seer_env.bench`` and ``seer-env bench``; this
suite reuses them.

What it measures (every figure a median over interleaved rounds or a ratio of
medians measured in the same run; the machine is described in the JSON):

* **STPA workloads** (PHOLD, PCS and, when installed, Aircraft x small / medium /
  large x batch 1 / 8): step latency and events/s of the serial executor, the
  parallel executor at 1..cores threads, and ``threads="auto"`` (after its
  preflight); auto / best fixed and auto / serial; the preflight's cost as a
  fraction of a 10,000-step run.  All runtimes of a workload are kept at the
  same simulated step, so each round times the same stretch of the run.
* **NumPy ports** (``oracles/``, outside the package): one step of the
  independent ports vs the executors.
* **The Python layer**: C step alone (``runtime.step``) vs the batched API
  (``vector_env.step``) vs the PettingZoo dict API (``parallel_env.step``).
* **End-to-end rollout**: a batched MLP policy (torch if installed, else the
  same MLP in NumPy, labelled) + the env step; the env's share of the loop.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # the checkout's oracles/ (run as a script)
    sys.path.insert(0, str(REPO))

import oracles.pcs_numpy  # noqa: E402
import oracles.phold_py  # noqa: E402
from seer_env._bind.runtime import cpu_count  # noqa: E402
from seer_env.perf.bench import (  # noqa: E402
    bench_api,
    bench_optimistic,
    bench_pcs,
    calibrate_work,
    machine,
    pcs_config,
    phold_config,
)
from seer_env.registry import Runtime, env_module  # noqa: E402

Log = Callable[[str], None]

#: Workload sizes per env (config overrides of the env's defaults).
SIZES: dict[str, dict[str, dict[str, Any]]] = {
    "phold_v0": {
        "small": {"num_entities": 64, "work": 20},
        "medium": {"num_entities": 1024, "work": 20},
        "large": {"num_entities": 4096, "work": 20},
    },
    "pcs_v0": {
        "small": {"width": 8, "height": 8},
        "medium": {"width": 16, "height": 16},
        "large": {"width": 32, "height": 32},
    },
    "aircraft_v0": {
        "small": {"num_uavs": 16},
        "medium": {"num_uavs": 64},
        "large": {"num_uavs": 256},
    },
}


def _zero_actions(rt: Runtime) -> None:
    if rt.sizes.action_kind == "discrete":
        rt.actions[:] = 0
    else:
        rt.actions[:] = np.clip(0.0, rt.sizes.action_low, rt.sizes.action_high)


def _step(rt: Runtime) -> None:
    """One step; instances whose episode ended (every agent dead: Aircraft) are
    reset first with their benchmark seed, so every configuration keeps running
    the same simulation."""
    done = ~rt.alive.any(axis=1)
    if done.any():
        rt.reset([1] * rt.num_instances, done)
    rt.step()


def _interleaved(rts: dict[str, Runtime], order: list[str], rounds: int, steps: int
                 ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Time ``steps`` steps of every runtime per round, rotating the order each
    round; returns ns/step and events/s samples per label."""
    samples: dict[str, list[float]] = {k: [] for k in order}
    evs: dict[str, list[float]] = {k: [] for k in order}
    for r in range(rounds):
        for k in order[r % len(order):] + order[:r % len(order)]:
            rt = rts[k]
            e0 = rt.stats()["events"]
            t0 = time.perf_counter_ns()
            for _ in range(steps):
                _step(rt)
            dt = time.perf_counter_ns() - t0
            samples[k].append(dt / steps)
            evs[k].append((rt.stats()["events"] - e0) / (dt * 1e-9))
    return samples, evs


def _make(env: str, size_cfg: dict[str, Any], batch: int, executor: str,
          threads: int | str) -> Any:
    cfg = dict(size_cfg)
    cfg.setdefault("max_cycles", 0)  # no truncation: a benchmark runs as long as it needs
    if threads != "auto" or executor != "parallel":  # else STPA: no executor given
        cfg["executor"] = executor
    return env_module(env).vector_env(batch, threads=threads, **cfg)


def available_envs() -> list[str]:
    """The envs of :data:`SIZES` that this installation has (Aircraft once merged)."""
    out = []
    for env in SIZES:
        try:
            env_module(env)
        except Exception:  # noqa: BLE001 - an env not shipped yet
            continue
        out.append(env)
    return out


# -- STPA workloads -----------------------------------------------------------------


def measure_workload(env: str, size: str, batch: int, rounds: int = 9,
                     round_s: float = 0.03, log: Log = print) -> dict[str, Any]:
    """Fixed configurations vs ``threads="auto"`` on one workload (see the module doc)."""
    size_cfg = SIZES[env][size]
    cores = cpu_count()
    fixed = [("serial", "serial", 1)] + [(f"parallel-{p}", "parallel", p)
                                         for p in range(1, cores + 1)]
    envs: dict[str, Any] = {}
    try:
        for label, ex, th in fixed:
            envs[label] = _make(env, size_cfg, batch, ex, th)
        envs["auto"] = _make(env, size_cfg, batch, "parallel", "auto")
        rts = {k: v.runtime for k, v in envs.items()}
        for v in envs.values():
            v.reset(seed=1)
        for rt in rts.values():
            _zero_actions(rt)
        # auto: run the preflight; the others take the same steps (same sim time)
        st = rts["auto"].stpa
        pre = 0
        while st.decision is None:
            _step(rts["auto"])
            pre += 1
        t_first = {}
        for k, rt in rts.items():
            if k == "auto":
                continue
            t0 = time.perf_counter()
            for _ in range(pre):
                _step(rt)
            t_first[k] = (time.perf_counter() - t0) / max(1, pre)
        per_step_est = min(t_first.values())
        steps = int(min(50, max(1, round(round_s / max(per_step_est, 1e-7)))))
        samples, evs = _interleaved(rts, list(rts), rounds, steps)
        med = {k: statistics.median(v) for k, v in samples.items()}
        ev_med = {k: statistics.median(v) for k, v in evs.items()}
        best_label = min((k for k in med if k != "auto"), key=lambda k: med[k])
        auto = med["auto"]
        pre_ns = st.preflight_ns
        run_ns = 10_000 * auto
        res = {
            "env": env, "size": size, "batch": batch, "config": size_cfg,
            "steps_per_round": steps, "rounds": rounds,
            "median_ns_per_step": med, "events_per_s": ev_med,
            "auto_choice": st.decision.candidate.label if st.decision else None,
            "auto_now": f"{rts['auto'].executor}-{rts['auto'].threads}",
            "auto_reason": st.reason,
            "best_fixed": best_label,
            "auto_vs_best": auto / med[best_label],
            "auto_vs_serial": auto / med["serial"],
            "preflight_steps": st.preflight_steps,
            "preflight_ns": pre_ns,
            # the preflight steps are real steps: its extra cost is what they took
            # beyond running the chosen configuration from the start
            "preflight_overhead_frac": max(0.0, pre_ns - st.preflight_steps * auto) / run_ns,
            "preflight_wall_frac": pre_ns / run_ns,
            "stpa": st.as_dict(),
        }
    finally:
        for v in envs.values():
            v.close()
    log(f"  {env:12s} {size:6s} B={batch}: " + "  ".join(
        f"{k} {med[k] / 1e3:8.1f}" for k in med) + " us/step | auto="
        f"{res['auto_choice']} best={best_label} auto/best {res['auto_vs_best']:.3f} "
        f"auto/serial {res['auto_vs_serial']:.3f} preflight "
        f"{100 * res['preflight_overhead_frac']:.2f}% ({100 * res['preflight_wall_frac']:.2f}%"
        f" wall)")
    return res


EPISODES: dict[str, tuple[dict[str, Any], int]] = {
    # env: (config, steps per episode); Aircraft: UAVs die, the load falls
    "aircraft_v0": ({"num_uavs": 256}, 150),
    "pcs_v0": ({"width": 32, "height": 32}, 100),
    "phold_v0": ({"num_entities": 4096}, 60),
}


def bench_stpa_episodes(envs: list[str] | None = None, episodes: int = 6,
                        log: Log = print) -> dict[str, Any]:
    """Whole episodes (reset between them), each fixed configuration vs
    ``threads="auto"``: wall time over all episodes, preflight and re-probes
    included -- `seer_env.bench.bench_stpa` on the suite's :data:`EPISODES`
    workloads (which also times a run from the remembered decision)."""
    from seer_env.perf.bench import bench_stpa as run_episodes

    names = envs or [e for e in EPISODES if e in available_envs()]
    res = run_episodes(episodes=episodes, log=lambda line: log(f"  {line}"),
                       workloads=tuple((env, env, *EPISODES[env]) for env in names))
    return {env: res[env] for env in names}


def bench_stpa(envs: list[str] | None = None, sizes: tuple[str, ...] = ("small", "medium",
               "large"), batches: tuple[int, ...] = (1, 8), rounds: int = 9,
               log: Log = print) -> dict[str, Any]:
    """Every workload of :func:`measure_workload`, plus the targets' summary."""
    envs = envs or available_envs()
    rows = []
    for env in envs:
        for size in sizes:
            for b in batches:
                rows.append(measure_workload(env, size, b, rounds=rounds, log=log))
    worst_best = max(r["auto_vs_best"] for r in rows)
    worst_serial = max(r["auto_vs_serial"] for r in rows)
    worst_pre = max(r["preflight_overhead_frac"] for r in rows)
    summary = {
        "workloads": len(rows),
        "auto_vs_best_max": worst_best,
        "auto_vs_best_median": statistics.median(r["auto_vs_best"] for r in rows),
        "auto_vs_serial_max": worst_serial,
        "within_5pct_of_best": sum(r["auto_vs_best"] <= 1.05 for r in rows),
        "not_5pct_slower_than_serial": sum(r["auto_vs_serial"] <= 1.05 for r in rows),
        "preflight_overhead_frac_max": worst_pre,
        "preflight_wall_frac_max": max(r["preflight_wall_frac"] for r in rows),
    }
    log(f"STPA over {len(rows)} workloads: auto/best max {worst_best:.3f} (median "
        f"{summary['auto_vs_best_median']:.3f}), within 5%: {summary['within_5pct_of_best']}"
        f"/{len(rows)}; auto/serial max {worst_serial:.3f}; preflight overhead max "
        f"{100 * worst_pre:.2f}% of a 10,000-step run")
    return {"workloads": rows, "summary": summary}


# -- NumPy ports ---------------------------------------------------------------------


def bench_ports(rounds: int = 5, log: Log = print) -> dict[str, Any]:
    """Step time of the NumPy/Python ports vs the executors (same config, same seed)."""
    log(f"NumPy ports: from the repository checkout {REPO / 'oracles'}")
    out: dict[str, Any] = {"source": str(REPO / "oracles")}
    # PCS 16x16 and PHOLD 1024 entities, the C configs the envs build

    cases: list[tuple[str, Callable[[], Any], Callable[[Any], None], dict[str, Any]]] = []

    def c_fields(env: str, size_cfg: dict[str, Any]) -> dict[str, Any]:
        v = _make(env, size_cfg, 1, "serial", 1)
        rt = v.runtime
        d = dict(rt.config)
        v.close()
        return d

    pcs_cfg = c_fields("pcs_v0", {"width": 16, "height": 16})
    phold_cfg = c_fields("phold_v0", {"num_entities": 1024, "work": 20})
    n_pcs = pcs_cfg["width"] * pcs_cfg["height"]

    def pcs_port() -> Any:
        o = oracles.pcs_numpy.PcsOracle(pcs_cfg)
        o.reset(1)
        return o

    def phold_port() -> Any:
        return oracles.phold_py.PholdPy(seed=1, **phold_cfg)

    zeros_pcs = np.zeros(n_pcs, dtype=np.int64)
    zeros_phold = np.zeros(phold_cfg["num_entities"], dtype=np.int64)
    cases.append(("pcs 16x16", pcs_port, lambda o: o.step(zeros_pcs), pcs_cfg))
    cases.append(("phold 1024", phold_port, lambda o: o.step(zeros_phold), phold_cfg))
    for name, mk, stepper, cfg in cases:
        model = "pcs" if name.startswith("pcs") else "phold"
        rts = {"serial": Runtime(model, cfg, 1, "serial", 1)}
        for p in range(1, cpu_count() + 1):
            rts[f"parallel-{p}"] = Runtime(model, cfg, 1, "parallel", p)
        for rt in rts.values():
            rt.reset([1])
            _zero_actions(rt)
        port = mk()
        samples: dict[str, list[float]] = {k: [] for k in [*rts, "port"]}
        for _ in range(rounds):
            t0 = time.perf_counter_ns()
            stepper(port)
            samples["port"].append(time.perf_counter_ns() - t0)
            for k, rt in rts.items():
                t0 = time.perf_counter_ns()
                _step(rt)
                samples[k].append(time.perf_counter_ns() - t0)
        for rt in rts.values():
            rt.close()
        med = {k: statistics.median(v) for k, v in samples.items()}
        port_kind = "NumPy" if model == "pcs" else "pure Python"
        out[name] = {"median_ns_per_step": med, "port": port_kind,
                     "speedup_vs_port": {k: med["port"] / med[k] for k in rts}}
        log(f"  {name}: {port_kind} port {med['port'] / 1e6:.1f} ms/step; " + ", ".join(
            f"{k} {med['port'] / med[k]:.0f}x faster" for k in rts))
    return out


# -- the Python layer and the rollout ---------------------------------------------------


def bench_layers(rounds: int = 9, log: Log = print) -> dict[str, Any]:
    """C step alone vs batched API vs dict API, same env and executor (parallel-1)."""
    out: dict[str, Any] = {}
    for env, cfg in (("pcs_v0", {"width": 8, "height": 8, "max_cycles": 0}),
                     ("pcs_v0", {"width": 32, "height": 32, "max_cycles": 0}),
                     ("phold_v0", {"num_entities": 256, "work": 20, "max_cycles": 0})):
        mod = env_module(env)
        penv = mod.parallel_env(threads=1, **cfg)
        venv = mod.vector_env(1, threads=1, **cfg)
        cenv = mod.vector_env(1, threads=1, **cfg)
        penv.reset(seed=1)
        venv.reset(seed=1)
        cenv.reset(seed=1)
        crt = cenv.runtime
        _zero_actions(crt)
        sz = venv.sizes
        if sz.action_kind == "discrete":
            arr = np.zeros((1, sz.num_agents), dtype=np.int64)
        else:
            arr = np.zeros((1, sz.num_agents, sz.action_dim), dtype=np.float32)
        acts = {a: arr[0, i] for i, a in enumerate(penv.possible_agents)}
        steps = 20
        runs = {"C step": lambda crt=crt: crt.step(),
                "batched API": lambda venv=venv, arr=arr: venv.step(arr),
                "dict API": lambda penv=penv, acts=acts: penv.step(acts)}
        samples: dict[str, list[float]] = {k: [] for k in runs}
        for r in range(rounds):
            keys = list(runs)
            for k in keys[r % 3:] + keys[:r % 3]:
                t0 = time.perf_counter_ns()
                for _ in range(steps):
                    runs[k]()
                samples[k].append((time.perf_counter_ns() - t0) / steps)
        for e in (penv, venv, cenv):
            e.close()
        med = {k: statistics.median(v) for k, v in samples.items()}
        label = f"{env} " + " ".join(f"{k}={v}" for k, v in cfg.items() if k != "max_cycles")
        out[label] = {"median_ns_per_step": med,
                      "python_overhead_us": {k: (med[k] - med["C step"]) / 1e3 for k in med},
                      "ratio_vs_c": {k: med[k] / med["C step"] for k in med},
                      "agents": sz.num_agents}
        log(f"  {label}: " + ", ".join(f"{k} {v / 1e3:.1f} us" for k, v in med.items()) +
            f" (dict API {med['dict API'] / med['C step']:.2f}x, batched "
            f"{med['batched API'] / med['C step']:.2f}x the C step)")
    return out


class _NumpyMLP:
    """obs -> 64 -> 64 -> logits, tanh; the same shapes as the torch policy."""

    def __init__(self, n_in: int, n_out: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.w = [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)
                  for a, b in ((n_in, 64), (64, 64), (64, n_out))]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        h = np.tanh(x @ self.w[0])
        h = np.tanh(h @ self.w[1])
        return np.argmax(h @ self.w[2], axis=-1)


def bench_rollout(steps: int = 200, log: Log = print) -> dict[str, Any]:
    """Batched MLP policy + env step on PCS; the env's share of the loop."""
    try:
        import torch

        backend = f"torch {torch.__version__}"
    except ImportError:
        torch = None
        backend = "NumPy (torch not installed: the torch MLP part is skipped)"
    log(f"  rollout policy: {backend}")
    out: dict[str, Any] = {"policy_backend": backend}
    for b, cfg in ((8, {"width": 16, "height": 16}), (1, {"width": 32, "height": 32})):
        venv = env_module("pcs_v0").vector_env(b, max_cycles=0, **cfg)
        sz = venv.sizes
        obs, _ = venv.reset(seed=0)
        if torch is not None:
            torch.manual_seed(0)
            net = torch.nn.Sequential(
                torch.nn.Linear(sz.obs_dim, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64),
                torch.nn.Tanh(), torch.nn.Linear(64, sz.action_n))

            def policy(o: np.ndarray, net: Any = net) -> np.ndarray:
                with torch.no_grad():
                    return net(torch.from_numpy(o)).argmax(-1).numpy()
        else:
            policy = _NumpyMLP(sz.obs_dim, sz.action_n)
        pol_ns, env_ns = [], []
        st = venv.runtime.stpa
        k = 0
        while len(env_ns) < steps:
            t0 = time.perf_counter_ns()
            act = policy(obs)
            t1 = time.perf_counter_ns()
            obs, *_ = venv.step(act)
            t2 = time.perf_counter_ns()
            k += 1
            if st is None or st.decision is not None:  # after STPA's preflight
                pol_ns.append(t1 - t0)
                env_ns.append(t2 - t1)
        label = f"pcs_v0 {cfg['width']}x{cfg['height']} B={b}"
        t_pol, t_env = statistics.median(pol_ns), statistics.median(env_ns)
        out[label] = {"policy_ns_per_step": t_pol, "env_ns_per_step": t_env,
                      "env_share": t_env / (t_env + t_pol), "agents": b * sz.num_agents,
                      "env_config": st.decision.candidate.label if st and st.decision else None,
                      "mean_env_share": sum(env_ns) / (sum(env_ns) + sum(pol_ns))}
        venv.close()
        log(f"  {label}: policy {t_pol / 1e3:.1f} us, env {t_env / 1e3:.1f} us per step "
            f"(medians): env share {100 * t_env / (t_env + t_pol):.0f}% (of the means "
            f"{100 * out[label]['mean_env_share']:.0f}%)")
    return out


# -- thread scaling (many-core machines) ---------------------------------------------


def bench_scaling(max_threads: int = 16, rounds: int = 7, log: Log = print) -> dict[str, Any]:
    """Step latency and events/s vs threads 1..max_threads, serial as base: PHOLD
    (parallel executor), default PCS (parallel and optimistic), classic PCS
    (lookahead 0: optimistic only) and PHOLD with a lookahead too small for
    windows (parallel and optimistic); with the optimistic executor's rollback
    counts."""
    work = calibrate_work(1000.0)
    tiny = dict(phold_config(4096, work), lookahead=1e-3, step_duration=1.0)
    cases: dict[str, tuple[str, Any, tuple[str, ...]]] = {
        "phold 4096 work~1us": ("phold", phold_config(4096, work), ("parallel",)),
        "phold 4096 work=0": ("phold", phold_config(4096, 0), ("parallel",)),
        "pcs 64x64": ("pcs", pcs_config(64), ("parallel", "optimistic")),
        "pcs classic 64x64": ("pcs", pcs_config(64, classic=True), ("optimistic",)),
        "phold 4096 work~1us lookahead 1e-3": ("phold", tiny, ("parallel", "optimistic")),
    }
    out: dict[str, Any] = {"max_threads": max_threads, "work_iterations": work}
    for name, (model, cfg, executors) in cases.items():
        labels = ["serial"]
        rts = {"serial": Runtime(model, cfg, 1, "serial", 1)}
        for ex in executors:
            for p in range(1 if ex == "parallel" else 2, max_threads + 1):
                rts[f"{ex}-{p}"] = Runtime(model, cfg, 1, ex, p)
                labels.append(f"{ex}-{p}")
        for rt in rts.values():
            rt.reset([1])
            _zero_actions(rt)
            _step(rt)
        t0 = time.perf_counter()
        _step(rts["serial"])
        steps = int(min(20, max(1, round(0.05 / (time.perf_counter() - t0)))))
        for k, rt in rts.items():
            if k != "serial":
                _step(rt)
        samples, evs = _interleaved(rts, labels, rounds, steps)
        rollbacks = {k: {x: rt.stats()[x] for x in ("events", "events_rolled_back",
                                                     "serial_steps")}
                     for k, rt in rts.items() if k.startswith("optimistic")}
        for rt in rts.values():
            rt.close()
        med = {k: statistics.median(v) for k, v in samples.items()}
        base1 = "parallel-1" if "parallel-1" in med else "serial"
        out[name] = {"median_ns_per_step": med,
                     "events_per_s": {k: statistics.median(v) for k, v in evs.items()},
                     "speedup_vs_serial": {k: med["serial"] / med[k] for k in labels},
                     "speedup_vs_parallel_1": {k: med[base1] / med[k] for k in labels},
                     "optimistic_counts": rollbacks}
        log(f"  {name}: " + ", ".join(f"{k} {med['serial'] / med[k]:.2f}x" for k in labels))
        for k, c in rollbacks.items():
            log(f"    {k}: {c['events_rolled_back']} of {c['events']} events rolled back, "
                f"{c['serial_steps']} serial steps")
    return out


# -- tracing off vs compiled out ---------------------------------------------------------

def bench_trace_overhead(rounds: int = 15, steps: int = 3, log: Log = print) -> dict[str, Any]:
    """PHOLD 4096, work=0: this build (tracing never enabled) vs -DSEER_NO_TRACE.

    The variant is PHOLD's folder built by the model SDK with the tracing code
    compiled out; both run in this process, in blocks of ``steps`` steps
    alternated round by round; ns per event, medians; serial and parallel-2.
    """
    from seer_env import registry
    from seer_env._bind.loader import load_module
    from seer_env._bind.native import NativeModel

    shipped = registry.get("phold_v0")
    mod, _ = load_module(shipped.folder, None, werror=True, extra_cflags=("-DSEER_NO_TRACE",),
                         log=log)
    variant = NativeModel(mod, f"{shipped.folder} (-DSEER_NO_TRACE)")
    log("  built the -DSEER_NO_TRACE variant of phold_v0")
    out: dict[str, Any] = {}
    for ex, th in (("serial", 1), ("parallel", 2)):
        rts = {name: Runtime(m, phold_config(4096, 0), 1, ex, th)
               for name, m in (("current", shipped.native), ("no-trace build", variant))}
        for rt in rts.values():
            rt.reset([1])
            rt.actions[:] = 0
            for _ in range(3):
                rt.step()
        samples: dict[str, list[float]] = {k: [] for k in rts}
        for r in range(rounds):
            names = list(rts)
            for k in names[r % 2:] + names[:r % 2]:
                rt = rts[k]
                e0 = rt.stats()["events"]
                t0 = time.perf_counter_ns()
                for _ in range(steps):
                    rt.step()
                samples[k].append((time.perf_counter_ns() - t0) / (rt.stats()["events"] - e0))
        for rt in rts.values():
            rt.close()
        med = {k: statistics.median(v) for k, v in samples.items()}
        label = "serial" if ex == "serial" else f"parallel-{th}"
        ratio = med["current"] / med["no-trace build"]
        out[label] = {"ns_per_event": med, "current_vs_no_trace": ratio, "rounds": rounds}
        log(f"  {label}: current build {med['current']:.1f} ns/event, tracing compiled "
            f"out {med['no-trace build']:.1f} ns/event: ratio {ratio:.3f}")
    return out


# -- plots and the README table ----------------------------------------------------------


def readme_table(res: dict[str, Any]) -> str:
    """The README's performance section (markdown) from a suite result."""
    m = res["machine"]
    lines = [f"Machine: {m['cpu']}, {m['cpus_usable']} usable CPUs, Python {m['python']}, "
             f"load average {m['load_avg']} at the start (shared machine: the ratios are the "
             "claim, absolute times are noisy).", ""]
    if "stpa" in res:
        s = res["stpa"]["summary"]
        lines += [
            f"**STPA (`threads=\"auto\"`) over {s['workloads']} workloads**: auto / best fixed "
            f"configuration: median {s['auto_vs_best_median']:.3f}, worst "
            f"{s['auto_vs_best_max']:.3f} ({s['within_5pct_of_best']}/{s['workloads']} within "
            f"5%); auto / serial executor worst {s['auto_vs_serial_max']:.3f}; preflight "
            f"extra cost at most {100 * s['preflight_overhead_frac_max']:.2f}% of a "
            f"10,000-step run ({100 * s['preflight_wall_frac_max']:.2f}% counting its steps "
            "whole).", "",
            "| env | size | B | serial us/step | " +
            " | ".join(f"par-{p} us/step" for p in range(1, m["cpus_usable"] + 1)) +
            " | auto choice | auto / best | auto / serial | events/s (auto) |",
            "|---|---|---|---|" + "---|" * m["cpus_usable"] + "---|---|---|---|",
        ]
        for r in res["stpa"]["workloads"]:
            med = r["median_ns_per_step"]
            cols = [f"{med['serial'] / 1e3:.1f}"] + [
                f"{med[f'parallel-{p}'] / 1e3:.1f}" for p in range(1, m["cpus_usable"] + 1)]
            lines.append(f"| {r['env']} | {r['size']} | {r['batch']} | " + " | ".join(cols) +
                         f" | {r['auto_choice']} | {r['auto_vs_best']:.3f} | "
                         f"{r['auto_vs_serial']:.3f} | {r['events_per_s']['auto'] / 1e6:.2f} M |")
        lines.append("")
    if "stpa_episodes" in res:
        lines += ["**STPA over whole episodes** (reset between them; wall time, preflight "
                  "and re-probes included):", "",
                  "| env | episodes x steps | best fixed | auto / best | probes | regime "
                  "switches |", "|---|---|---|---|---|---|"]
        for env, r in res["stpa_episodes"].items():
            lines.append(f"| {env} | {r['episodes']} x {r['steps'] // r['episodes']} | "
                         f"{r['best_fixed']} | {r['auto_vs_best']:.3f} | {r['probes']} | "
                         f"{r['regime_switches']} |")
        lines.append("")
    if "layers" in res:
        lines += ["**The Python layer** (same env, parallel executor, 1 thread):", "",
                  "| env | C step | batched API | dict API |", "|---|---|---|---|"]
        for k, v in res["layers"].items():
            med = v["median_ns_per_step"]
            lines.append(f"| {k} | {med['C step'] / 1e3:.1f} us | "
                         f"{med['batched API'] / 1e3:.1f} us "
                         f"({v['ratio_vs_c']['batched API']:.2f}x) | "
                         f"{med['dict API'] / 1e3:.1f} us ({v['ratio_vs_c']['dict API']:.2f}x) |")
        lines.append("")
    if "api" in res:
        fc = res["api"]["fixed_cost_us"]
        lines += [f"**Fixed cost of a step** (PHOLD, 1 entity, 1 event, serial): native step "
                  f"{fc['native_step']:.2f} us; the batched API adds "
                  f"{fc['batched_above_native']:.2f} us, the dict API "
                  f"{fc['dict_above_native']:.2f} us.", "",
                  "| agents | dict API ns/agent (above the native step) | minimal pure-Python "
                  "ParallelEnv ns/agent | ratio |", "|---|---|---|---|"]
        for n, v in sorted(res["api"]["dict_per_agent"].items(), key=lambda kv: int(kv[0])):
            lines.append(f"| {n} | {v['dict_us_per_agent'] * 1e3:.0f} | "
                         f"{v['pure_us_per_agent'] * 1e3:.0f} | {v['ratio']:.2f} |")
        lines.append("")
    if "ports" in res and "skipped" not in res["ports"]:
        lines += ["**vs the independent ports** (`oracles/`, one instance):", ""]
        for k, v in res["ports"].items():
            if k == "source":
                continue
            sp = v["speedup_vs_port"]
            lines.append(f"* {k}: {v['port']} port {v['median_ns_per_step']['port'] / 1e6:.1f} "
                         "ms/step; " + ", ".join(f"{c} {x:.0f}x faster" for c, x in sp.items()))
        lines.append("")
    if "rollout" in res:
        ro = res["rollout"]
        lines += [f"**Rollout** (batched MLP policy, {ro['policy_backend']}):", ""]
        for k, v in ro.items():
            if k == "policy_backend":
                continue
            lines.append(f"* {k} ({v['agents']} agents, env on {v['env_config']}): policy "
                         f"{v['policy_ns_per_step'] / 1e3:.0f} us + env "
                         f"{v['env_ns_per_step'] / 1e3:.0f} us per step; env share "
                         f"{100 * v['env_share']:.0f}%")
        lines.append("")
    if "trace_overhead" in res and "skipped" not in res["trace_overhead"]:
        lines += ["**Tracing off** (PHOLD 4096, work=0; this build with tracing never enabled "
                  "vs a build with the tracing code compiled out):", ""]
        for k, v in res["trace_overhead"].items():
            lines.append(f"* {k}: {v['ns_per_event']['current']:.1f} vs "
                         f"{v['ns_per_event']['no-trace build']:.1f} ns/event "
                         f"(ratio {v['current_vs_no_trace']:.3f})")
        lines.append("")
    return "\n".join(lines)


def plot(res: dict[str, Any], outdir: str, log: Log = print) -> list[str]:
    """PNG plots of a suite result; [] (with a message) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("plots skipped: matplotlib is not installed (pip install 'seer_env[bench]')")
        return []
    files = []
    mdesc = f"{res['machine']['cpu']} ({res['machine']['cpus_usable']} CPUs)"
    if "stpa" in res:
        rows = res["stpa"]["workloads"]
        envs = sorted({r["env"] for r in rows})
        fig, axes = plt.subplots(2, len(envs), figsize=(5 * len(envs), 8), squeeze=False)
        for j, env in enumerate(envs):
            for b, ls in ((1, "-"), (8, "--")):
                rr = [r for r in rows if r["env"] == env and r["batch"] == b]
                if not rr:
                    continue
                labels = [k for k in rr[0]["median_ns_per_step"]]
                for k in labels:
                    x = [r["size"] for r in rr]
                    axes[0][j].plot(x, [r["median_ns_per_step"][k] / 1e3 for r in rr], ls,
                                    marker="o", label=f"{k} B={b}")
                    axes[1][j].plot(x, [r["events_per_s"][k] / 1e6 for r in rr], ls,
                                    marker="o", label=f"{k} B={b}")
            axes[0][j].set_title(f"{env}: step latency vs size")
            axes[0][j].set_ylabel("median us / step")
            axes[0][j].set_yscale("log")
            axes[1][j].set_title(f"{env}: events/s vs size")
            axes[1][j].set_ylabel("M events / s")
        # one legend for every panel, below them (a legend per panel was
        # unreadable at a page's width)
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=9,
                   frameon=False)
        fig.suptitle(f"Executors and thread counts, medians of interleaved rounds — {mdesc}",
                     fontsize=10)
        fig.tight_layout(rect=(0, 0.02 + 0.035 * ((len(labels) + 3) // 4), 1, 1))
        files.append(_save(fig, outdir, "latency_events_vs_size.png"))
        fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.5), 4))
        names = [f"{r['env'][:-3]}/{r['size'][0]}/B{r['batch']}" for r in rows]
        x = np.arange(len(rows))
        ax.bar(x - 0.2, [r["auto_vs_best"] for r in rows], 0.4, label="auto / best fixed")
        ax.bar(x + 0.2, [r["auto_vs_serial"] for r in rows], 0.4, label="auto / serial")
        ax.axhline(1.05, color="red", lw=0.8, ls="--", label="1.05 (target)")
        ax.set_xticks(x, names, rotation=60, fontsize=7)
        ax.set_ylabel("step latency ratio")
        ax.set_title(f"STPA: auto vs best fixed and serial — {mdesc}", fontsize=9)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # off the bars
        fig.tight_layout()
        files.append(_save(fig, outdir, "stpa_ratios.png"))
        fig, axes = plt.subplots(1, len(envs), figsize=(5 * len(envs), 4), squeeze=False)
        for j, env in enumerate(envs):
            for r in [r for r in rows if r["env"] == env]:
                ks = [k for k in r["median_ns_per_step"] if k != "auto"]
                axes[0][j].plot(ks, [r["median_ns_per_step"]["serial"] /
                                     r["median_ns_per_step"][k] for k in ks], marker="o",
                                label=f"{r['size']} B={r['batch']}")
            axes[0][j].set_title(f"{env}: speedup vs serial by configuration")
            axes[0][j].set_ylabel("speedup vs serial (median step)")
            axes[0][j].legend(fontsize=8)
        fig.tight_layout()
        files.append(_save(fig, outdir, "speedup_vs_threads.png"))
    if "layers" in res or "rollout" in res:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        if "layers" in res:
            ks = list(res["layers"])
            for i, api in enumerate(["C step", "batched API", "dict API"]):
                axes[0].bar(np.arange(len(ks)) + (i - 1) * 0.27,
                            [res["layers"][k]["median_ns_per_step"][api] / 1e3 for k in ks],
                            0.27, label=api)
            axes[0].set_xticks(np.arange(len(ks)), [_short(k) for k in ks], fontsize=8)
            axes[0].set_ylabel("median us / step (log)")
            axes[0].set_yscale("log")
            from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

            # plain labels at 1-2-5 steps (20, 500), not 2x10^1
            top = max(res["layers"][k]["median_ns_per_step"][a] / 1e3 for k in ks
                      for a in ("C step", "batched API", "dict API"))
            ticks = [m * 10**e for e in range(0, 8) for m in (1, 2, 5) if m * 10**e <= top * 2]
            axes[0].yaxis.set_major_locator(FixedLocator(ticks))
            axes[0].yaxis.set_major_formatter(ScalarFormatter())
            axes[0].yaxis.set_minor_formatter(NullFormatter())
            axes[0].set_title("Python layer cost")
            axes[0].legend(fontsize=7)
        if "rollout" in res:
            ro = {k: v for k, v in res["rollout"].items() if k != "policy_backend"}
            ks = list(ro)
            axes[1].bar(ks, [ro[k]["env_ns_per_step"] / 1e3 for k in ks], label="env step")
            axes[1].bar(ks, [ro[k]["policy_ns_per_step"] / 1e3 for k in ks],
                        bottom=[ro[k]["env_ns_per_step"] / 1e3 for k in ks], label="policy")
            axes[1].set_title(f"rollout loop ({res['rollout']['policy_backend'][:20]})")
            axes[1].set_ylabel("us / step")
            axes[1].legend(fontsize=7)
        fig.tight_layout()
        files.append(_save(fig, outdir, "python_layer_rollout.png"))
    if "api" in res:
        api = res["api"]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        fc = api["fixed_cost_us"]
        axes[0].bar(["native step", "batched API", "dict API"],
                    [fc["native_step"], fc["native_step"] + fc["batched_above_native"],
                     fc["native_step"] + fc["dict_above_native"]])
        axes[0].set_ylabel("median us / step")
        axes[0].set_title("fixed cost: PHOLD, 1 entity, 1 event, serial")
        rows = {int(k): v for k, v in api["dict_per_agent"].items()}
        ns = sorted(rows)
        axes[1].plot(ns, [rows[n]["dict_us_per_agent"] * 1e3 for n in ns], marker="o",
                     label="dict API (above the native step)")
        axes[1].plot(ns, [rows[n]["pure_us_per_agent"] * 1e3 for n in ns], marker="o",
                     label="minimal pure-Python ParallelEnv")
        axes[1].set_xscale("log", base=2)
        axes[1].set_xlabel("agents")
        axes[1].set_ylabel("ns per agent and step")
        axes[1].set_title("the dict API per agent")
        axes[1].legend(fontsize=7)
        fig.suptitle(mdesc, fontsize=9)
        fig.tight_layout()
        files.append(_save(fig, outdir, "fixed_cost.png"))
    if "scaling" in res:
        sc = res["scaling"]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for k, v in sc.items():
            if not isinstance(v, dict):
                continue
            for ex, style in (("parallel", "-"), ("optimistic", "--")):
                ks = [x for x in v["speedup_vs_serial"] if x.startswith(ex + "-")]
                if ks:
                    ax.plot([int(x.split("-")[1]) for x in ks],
                            [v["speedup_vs_serial"][x] for x in ks], style, marker="o",
                            label=f"{k} ({ex})")
        ax.set_xlabel("threads")
        ax.set_ylabel("speedup vs serial executor (median step time)")
        ax.set_title(f"thread scaling — {mdesc}", fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        files.append(_save(fig, outdir, "scaling.png"))
    for f in files:
        log(f"  wrote {f}")
    return files


def _short(workload: str) -> str:
    """A workload's label for an axis: ``pcs_v0 width=32 height=32`` -> ``pcs 32x32``,
    ``phold_v0 num_entities=256 work=20`` -> ``phold 256 (work 20)``."""
    env, *kv = workload.split()
    cfg = dict(x.split("=", 1) for x in kv)
    name = env.removesuffix("_v0")
    if "width" in cfg and "height" in cfg:
        return f"{name} {cfg.pop('width')}x{cfg.pop('height')}"
    if "num_entities" in cfg:
        n = cfg.pop("num_entities")
        return f"{name} {n}" + "".join(f" ({k} {v})" for k, v in cfg.items())
    return " ".join([name, *(f"{k}={v}" for k, v in cfg.items())])


def _save(fig: Any, outdir: str, name: str) -> str:
    import matplotlib.pyplot as plt

    path = os.path.join(outdir, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run(what: str, outdir: str, quick: bool = False, max_threads: int = 16,
        log: Log = print) -> dict[str, Any]:
    """Run ``what`` ("suite", "stpa", "scaling", "trace-overhead"); write JSON + PNG + table."""
    os.makedirs(outdir, exist_ok=True)
    res: dict[str, Any] = {"machine": machine(), "what": what, "quick": quick,
                           "envs": available_envs()}
    log(f"machine: {res['machine']}")
    if "aircraft_v0" not in res["envs"]:
        log("aircraft_v0 is not installed here: its workloads are left out")
    rounds = 5 if quick else 15
    stages: list[tuple[str, Callable[[], Any], str]] = []
    if what in ("suite", "stpa"):
        sizes = ("small", "large") if quick else ("small", "medium", "large")
        stages.append(("STPA workloads (fixed configurations vs threads='auto')",
                       lambda: bench_stpa(sizes=sizes, rounds=rounds, log=log), "stpa"))
        stages.append(("STPA over whole episodes (reset between them)",
                       lambda: bench_stpa_episodes(episodes=3 if quick else 6, log=log),
                       "stpa_episodes"))
    if what == "suite":
        stages += [
            ("NumPy ports", lambda: bench_ports(rounds=3 if quick else 5, log=log), "ports"),
            ("Python layer", lambda: bench_layers(rounds=rounds, log=log), "layers"),
            ("fixed cost and the dict API per agent",
             lambda: bench_api(rounds=rounds, log=log), "api"),
            ("rollout", lambda: bench_rollout(steps=100 if quick else 300, log=log),
             "rollout"),
            ("tracing off vs compiled out",
             lambda: bench_trace_overhead(rounds=9 if quick else 15, log=log),
             "trace_overhead"),
            ("PCS on 2 threads (batched API, reports on)",
             lambda: bench_pcs(rounds=5 if quick else 9, log=log), "pcs"),
            ("the optimistic executor (classic PCS, default PCS, tiny-lookahead PHOLD)",
             lambda: bench_optimistic(quick=quick, log=log), "optimistic"),
        ]
    if what == "scaling":
        stages.append((f"thread scaling 1..{max_threads}",
                       lambda: bench_scaling(max_threads, rounds=rounds, log=log), "scaling"))
    if what == "trace-overhead":
        stages.append(("tracing off vs compiled out", lambda: bench_trace_overhead(log=log),
                       "trace_overhead"))
    from tqdm.auto import tqdm

    # stage by stage, on a terminal only (tqdm's disable=None)
    with tqdm(total=len(stages), desc=f"bench {what}", unit="stage", disable=None,
              leave=False) as bar:
        for title, fn, key in stages:
            log(f"== {title}")
            res[key] = fn()
            bar.update(1)
    res["readme_markdown"] = readme_table(res)
    res["plots"] = plot(res, outdir, log)
    path = os.path.join(outdir, f"bench_{what}.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1, default=float)
    log(f"wrote {path}")
    log("\n--- README performance section ---\n" + res["readme_markdown"])
    return res


def has_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def main(argv: list[str] | None = None) -> int:
    """``python benchmarks/bench_suite.py WHAT [-o DIR] [--quick] [--max-threads N]``."""
    p = argparse.ArgumentParser(
        prog="python benchmarks/bench_suite.py",
        description="The benchmark suite: JSON, PNG plots and the README's performance "
        "table.  suite: STPA workloads (PHOLD/PCS/Aircraft x sizes x batch 1/8: fixed "
        "configurations vs threads='auto'), the NumPy ports, the Python layer, a "
        "policy+env rollout and the tracing-off cost.  stpa: the STPA workloads only.  "
        "scaling: threads 1..--max-threads on PHOLD and PCS (for a many-core machine).  "
        "trace-overhead: this build vs one with the tracing code compiled out.")
    p.add_argument("what", choices=["suite", "stpa", "scaling", "trace-overhead"],
                   nargs="?", default="suite", help="which part (default suite)")
    p.add_argument("-o", "--output", default="bench_out",
                   help="folder for JSON and PNG (default %(default)s)")
    p.add_argument("--quick", action="store_true", help="fewer rounds and sizes")
    p.add_argument("--max-threads", type=int, default=16,
                   help="largest pool of 'scaling' (default %(default)s)")
    p.add_argument("--replot", metavar="JSON",
                   help="measure nothing: draw the plots of a results file again (e.g. "
                   "benchmarks/results/bench_suite.json) into -o")
    a = p.parse_args(argv)
    if a.replot:
        with open(a.replot) as f:
            plot(json.load(f), a.output)
        return 0
    run(a.what, a.output, quick=a.quick, max_threads=a.max_threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["SIZES", "EPISODES", "available_envs", "bench_layers", "bench_stpa_episodes",
           "bench_ports", "bench_rollout",
           "bench_scaling", "bench_stpa", "bench_trace_overhead", "measure_workload", "plot",
           "readme_table", "run"]
