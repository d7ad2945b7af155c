"""The ``seer-env`` command line: run, verify and benchmark envs; make, build and check models.

Examples::

    seer-env new mymodel                            # a working model folder to start from
    seer-env new mymodel --groups                   # two agent groups, masks, multi-discrete
    seer-env build mymodel                          # compile it (cached by content)
    seer-env check mymodel --set num_agents=6       # contract checker + determinism matrix
    seer-env info pcs_v0                            # configuration keys, defaults, ranges
    seer-env run pcs_v0 --steps 500                 # random policy, prints steps/s and events/s
    seer-env run aircraft_v0 --policy constant --set num_uavs=256 --threads 2
    seer-env verify pcs_v0 --steps 200 --threads 2 --num-envs 3
    seer-env bench phold                       # PHOLD events/s, ns/event (also api, pcs, ...)
    seer-env bench company -o company.json     # the executors beside torch, burners, processes
    python benchmarks/bench_suite.py -o bench_out   # in a checkout: suite, plots, README table
    seer-env trace pcs_v0 --steps 20 -o trace.json   # open in https://ui.perfetto.dev
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ._version import __version__
from .errors import BuildError, ConfigError, SeerError
from .perf import bench
from .registry import env_module
from .testing import verify

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


#: Yes/no keys every env takes besides its model's parameters (`COMMON_KEYS`).
_BOOL_KEYS = ("enforce_masks", "flatten_actions")


def _parse_sets(items: list[str], env: str | None = None,
                own: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``key=value`` pairs; values as Python literals, booleans of bool
    parameters in any usual spelling (true/false, yes/no, on/off, 1/0).
    ``own``: the keys the command sets from options of its own (key ->
    option): given with ``--set`` too, a ConfigError naming the option (they
    reached the call twice: a TypeError's traceback)."""
    kinds: dict[str, str] = {}
    if env is not None and items:
        kinds = {n: p.kind for n, p in env_module(env).params.items()}
    kinds.update(dict.fromkeys(_BOOL_KEYS, "bool"))  # the runtime's own yes/no keys
    cfg: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        if own and k in own:
            raise ConfigError(f"--set {item}: {k} is this command's option {own[k]}: give "
                              f"{own[k]} instead")
        if kinds.get(k) == "bool" and v.strip().lower() in _TRUE | _FALSE:
            cfg[k] = v.strip().lower() in _TRUE
            continue
        try:
            cfg[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            cfg[k] = v  # not a literal (or one too deep to read): the text, checked later
    return cfg


def _threads(v: str) -> int | str:
    return v if v == "auto" else _at_least(1)(v)


def _at_least(lo: int) -> Callable[[str], int]:
    """An argparse type: an int of at least ``lo`` (``--steps -5`` ran "-5
    steps" and printed negative rates)."""
    def parse(v: str) -> int:
        try:
            n = int(v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{v!r} is not an integer") from None
        if n < lo:
            raise argparse.ArgumentTypeError(f"{n} is below {lo}")
        return n
    parse.__name__ = f"int >= {lo}"
    return parse


def _policy_actions(venv: Any, infos: dict[str, Any], policy: str,
                    rng: np.random.Generator) -> Any:
    """One step's actions for ``seer-env run``: random ones (uniform over each
    group's space, within its action masks), or constant ones (choice 0 -- the
    first allowed one where a mask forbids 0 -- or the zero vector).  One
    array for a model with one group, a dict group -> array otherwise."""
    if policy == "random":
        from .faces.gym_vector import random_batched_actions

        return random_batched_actions(venv, rng)
    B = venv.num_envs
    grouped = venv.grouped
    masks = infos.get("action_mask")
    out = {}
    for g in venv.groups:
        mask = (masks.get(g.name) if grouped else masks) if masks is not None else None
        if g.action_kind == "box":
            acts = np.zeros((B, g.count, g.action_dim), np.float32)
        else:
            shape = (B, g.count) if g.action_kind == "discrete" else (B, g.count, g.action_dim)
            acts = np.zeros(shape, np.int64)
            if mask is not None:  # the first allowed choice of each component
                sizes = [g.action_n] if g.action_kind == "discrete" else list(g.nvec)
                ends = np.cumsum(sizes)
                first = [np.asarray(mask[:, :, e - k:e], bool).argmax(axis=2)
                         for k, e in zip(sizes, ends, strict=True)]
                acts = first[0] if g.action_kind == "discrete" else np.stack(first, axis=2)
        out[g.name] = acts
    return out if grouped else out[venv.groups[0].name]


def _active_rewards(rew: Any, infos: dict[str, Any]) -> float:
    """The sum of the rewards of the agents that acted (per group for groups)."""
    if isinstance(rew, dict):
        return sum(float(r[infos["active"][g]].sum()) for g, r in rew.items())
    return float(rew[infos["active"]].sum())


def _model_label(given: str, model: Any) -> str:
    """How the commands name a model: its declared name (``check`` and
    ``info`` name it so too), with the folder it was loaded from when the
    command line gave one by another name (``verify`` and ``run`` named it
    by the folder given)."""
    if given == model.name:
        return str(model.name)
    return f"{model.name} (loaded from {given})"


def cmd_run(a: argparse.Namespace) -> int:
    cfg = _parse_sets(a.set, a.env, {"threads": "--threads", "num_envs": "--num-envs"})
    mod = env_module(a.env)
    if a.executor is not None:  # given: it runs as asked (STPA only chooses without)
        cfg["executor"] = a.executor
    venv = mod.vector_env(a.num_envs, threads=a.threads, **cfg)
    rng = np.random.default_rng(a.seed)
    sz = venv.sizes
    rt = venv.runtime
    how = ("threads=auto (STPA chooses the executor and pool)" if rt.stpa is not None
           else f"executor={rt.executor}, threads={rt.threads}")
    print(f"{_model_label(a.env, mod)}: {a.num_envs} instance(s) x {sz.num_agents} agents, {how}, "
          f"policy={a.policy}")
    _, infos = venv.reset(seed=a.seed)
    from tqdm.auto import tqdm

    # a progress bar on a terminal only (tqdm's disable=None)
    bar = tqdm(total=a.steps, unit="step", disable=True if a.quiet else None, leave=False)
    ev0 = venv.runtime.stats()["events"]
    rewards = 0.0
    t0 = time.perf_counter()
    for _ in range(a.steps):
        _, rew, _, _, infos = venv.step(_policy_actions(venv, infos, a.policy, rng))
        rewards += _active_rewards(rew, infos)
        bar.update(1)
    dt = time.perf_counter() - t0
    bar.close()
    events = venv.runtime.stats()["events"] - ev0
    stpa = getattr(venv.runtime, "stpa", None)
    venv.close()
    print(f"{a.steps} steps in {dt:.3f} s: {a.steps / dt:,.1f} steps/s, "
          f"{a.steps * a.num_envs * sz.num_agents / dt:,.0f} agent-steps/s, "
          f"{events / dt:,.0f} events/s ({events:,} events)")
    agent_steps = max(1, a.steps * a.num_envs * sz.num_agents)
    print(f"mean reward per agent-step: {rewards / agent_steps:.5f}")
    if stpa is not None and stpa.decision is not None:
        print(f"STPA: {stpa.decision.reason}")
    return 0


def cmd_verify(a: argparse.Namespace) -> int:
    cfg = _parse_sets(a.set, a.env, {"threads": "--threads", "num_envs": "--num-envs",
                                     "seed": "--seed", "executor": "--executor",
                                     "steps": "--steps"})
    rep = verify(a.env, steps=a.steps, threads=a.threads, num_envs=a.num_envs, seed=a.seed,
                 executor=a.executor,
                 **cfg)
    print(dataclasses.replace(rep, env=_model_label(a.env, env_module(a.env))))
    return 0 if rep.identical else 1


def cmd_bench(a: argparse.Namespace) -> int:
    runs: dict[str, Callable[[], dict[str, Any]]] = {
        "phold": lambda: bench.bench_phold(a.rounds),
        "api": lambda: bench.bench_api(a.rounds),
        "optimistic": lambda: bench.bench_optimistic(quick=a.quick),
        "pcs": lambda: bench.bench_pcs(rounds=3 if a.quick else a.rounds),
        "stpa": lambda: bench.bench_stpa(quick=a.quick)}
    if a.what in runs:
        out = _writable(a.output)
        if out is False:
            return 2
        res = runs[a.what]()
        if out is not None:
            bench.write_results(out, bench.results_file(a.what, res, quick=a.quick))
            print(f"results: {out}")
        return 0
    if a.what == "company":
        return _bench_company(a)
    # the suite and its parts live in the repository checkout (benchmarks/): they
    # need the NumPy ports of oracles/, which the package does not ship
    cmd = f"python benchmarks/bench_suite.py {a.what}"
    if a.what != "trace-overhead":
        cmd += f" -o {a.output or 'bench_out'}"
    if a.quick:
        cmd += " --quick"
    if a.what == "scaling":
        cmd += f" --max-threads {a.max_threads}"
    print(f"seer-env bench {a.what}: the benchmark suite is not part of the installed "
          f"package; run it from a repository checkout:\n    {cmd}", file=sys.stderr)
    return 2


def _writable(output: str | None) -> Path | None | Literal[False]:
    """The results file asked for (None: none), or False, said on stderr,
    where its folder cannot be written -- checked before the run: its
    figures were taken whole, then lost to a traceback."""
    if not output:
        return None
    problem = bench.results_path_problem(output)
    if problem is not None:
        print(f"seer-env: {problem}", file=sys.stderr)
        return False
    return Path(output).expanduser()


def _bench_company(a: argparse.Namespace) -> int:
    from .perf import company

    out = _writable(a.output)
    if out is False:
        return 2
    # PCS 64x64 by default; another env: its own defaults; --set on top
    cfg = dict(company.DEFAULT_CONFIG) if a.env == company.DEFAULT_ENV else {}
    cfg.update(_parse_sets(a.set, a.env))
    try:
        res = company.bench_company(
            situations=a.situations or company.SITUATIONS, threads=a.threads, quick=a.quick,
            rounds=min(a.rounds, 3) if a.quick else a.rounds, block=a.block, env=a.env,
            config=cfg, num_envs=a.num_envs, update_every=a.update_every,
            stpa_cache=a.stpa_cache, replicas=a.replicas, warm_blocks=a.warm_blocks)
    except KeyboardInterrupt:
        print("seer-env bench company: interrupted (Ctrl-C): the burner and env processes "
              "were stopped; no results written", file=sys.stderr)
        return 130
    print()
    print(company.table(res))
    if out is not None:
        company.save(res, out)
        print(f"wrote {out}")
    return 0


def _names(v: str) -> list[str]:
    """An argparse type: a comma-separated list (``alone,torch``)."""
    return [x.strip() for x in v.split(",") if x.strip()]


def _counts(v: str) -> list[int]:
    """An argparse type: comma-separated counts of at least 1 (``2,4``)."""
    return [_at_least(1)(x) for x in _names(v)]


def cmd_trace(a: argparse.Namespace) -> int:
    from .perf.trace import trace_env, write_trace

    cfg = _parse_sets(a.set, a.env, {"threads": "--threads", "num_envs": "--num-envs"})
    if a.parallelism:
        from .perf import parallelism

        rep = parallelism.measure(a.env, cfg, steps=a.steps, num_envs=a.num_envs,
                                  seed=a.seed, capacity=a.capacity)
        print(rep.table())
        return 0
    out = Path(a.output).expanduser()
    if out.is_dir():
        print(f"seer-env: cannot write the trace to {out}: it is a folder (give a file "
              "name, e.g. trace.json)", file=sys.stderr)
        return 2
    if not out.parent.is_dir() or not os.access(out.parent, os.W_OK):
        # before the run: the trace was taken whole, then lost to a traceback
        print(f"seer-env: cannot write the trace to {out}: its folder {out.parent} "
              f"{'is not writable' if out.parent.is_dir() else 'does not exist'}",
              file=sys.stderr)
        return 2
    tr = trace_env(a.env, a.steps, threads=a.threads, num_envs=a.num_envs, seed=a.seed,
                   capacity=a.capacity, config=cfg, log=print)
    write_trace(tr, a.output)
    other = tr["otherData"]
    n = sum(1 for e in tr["traceEvents"] if e["ph"] != "M")
    print(f"{a.output}: {n} trace events from {other['threads']} worker(s), "
          f"{other['executor']} executor; dropped records: {other['dropped_records']} "
          f"(raise --capacity to keep them). Open it in https://ui.perfetto.dev")
    return 0


def cmd_new(a: argparse.Namespace) -> int:
    from . import sdk

    folder = sdk.new(a.name, a.dir, force=a.force, python=a.python, groups=a.groups)
    print(f"wrote {folder}/: {', '.join(sorted(p.name for p in folder.iterdir()))}")
    print("next:")
    print(f"  seer-env build {folder}      # compile")
    print(f"  seer-env check {folder}      # contract checker + determinism matrix")
    print(f"  seer-env run {folder}        # random policy, steps/s")
    print(f"  python -m pytest {folder}    # its tests (needs pytest: pip install pytest)")
    return 0


def cmd_build(a: argparse.Namespace) -> int:
    from . import sdk

    model = sdk.load(a.path, build=False)
    quiet = a.quiet

    def log(msg: str) -> None:
        if not quiet:
            print(msg, file=sys.stderr)

    try:
        where = model.build(rebuild=a.rebuild, log=log)
    except BuildError as exc:
        print(f"seer-env: build of {a.path} failed:\n{exc.log or exc}", file=sys.stderr)
        return 1
    nm = model.native
    src = {"package": "shipped with seer_env", "cache": "up to date in the cache",
           "built": "built", "loaded": "already loaded",
           "python": "interpreted (handlers run as plain Python)"}[where]
    path = getattr(model, "build_dir", None) or nm.module.__file__
    print(f"{model.name}: model '{nm.name}' {src}: {path}")
    try:  # built is not usable: its describe hook must take its own defaults
        nm.describe({})
    except SeerError as exc:
        print(f"seer-env: {model.name} built, but its default configuration is refused "
              f"(describe failed: {type(exc).__name__}: {exc}); check, run and loading "
              "raise it too", file=sys.stderr)
        return 1
    return 0


def _memory_size(text: str) -> int:
    """``--memory``'s value in bytes (an argparse error if it is not a size)."""
    from .check import parse_memory

    try:
        return parse_memory(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_check(a: argparse.Namespace) -> int:
    from .check import check

    cfg = _parse_sets(a.set, a.path)
    if a.budget is not None and not 0 < a.budget < math.inf:
        # exit 2 (it cannot start), not 1 (the model breaks the contract)
        raise ConfigError(f"--budget must be a positive number of seconds, got {a.budget}")
    try:
        report = check(a.path, cfg, steps=a.steps, quick=a.quick, budget=a.budget,
                       memory=a.memory)
    except KeyboardInterrupt:
        print("seer-env check: interrupted (Ctrl-C): the check and the process running the "
              "model were stopped; no report", file=sys.stderr)
        return 130
    print(report)
    return 0 if report.ok else 1


def cmd_info(a: argparse.Namespace) -> int:
    model = env_module(a.env)
    nm = model.native
    cfg = _parse_sets(a.set, a.env)
    buf, sz = nm.describe(cfg)
    print(f"{model.name}: model '{nm.name}' ({model.folder})")
    if model.doc:
        print("\n" + model.doc.split("\n\n")[0] + "\n")
    print("configuration (key = default  (accepted)  meaning):")
    for line in model.config_help().splitlines():
        print(f"  {line}")
    names = nm.agent_names(buf, min(sz.num_agents, 4), sz)
    groups = sz.groups if sz.num_groups > 1 else ()
    if groups:
        spaces = f"{len(groups)} groups"
    else:
        mask = f", action mask ({sz.mask_dim},)" if sz.mask_dim else ""
        spaces = f"observation ({sz.obs_dim},), action {_action_text(sz.groups[0])}{mask}"
    print(f"with this configuration: {sz.num_agents} agents ({', '.join(names)}"
          f"{', ...' if sz.num_agents > 4 else ''}), {sz.num_entities} entities, "
          f"{spaces}, state ({sz.state_dim},), "
          f"lookahead {sz.lookahead:g}, step duration {sz.step_duration:g}")
    for g in groups:
        mask = f", action mask ({g.mask_len},)" if g.mask_len else ""
        info = ", ".join(g.info_names) or "(none)"
        print(f"  group {g.name!r}: {g.count} agent{'' if g.count == 1 else 's'}, observation "
              f"({g.obs_dim},), action {_action_text(g)}{mask}, info values: {info}")
    info = "" if groups else f"info values: {', '.join(nm.info_names(sz.info_dim)) or '(none)'}; "
    print(f"{info}event types: {', '.join(nm.event_names) or '(unnamed)'}")
    return 0


def _action_text(g: Any) -> str:
    """A group's action space, as Gymnasium prints it."""
    if g.action_kind == "discrete":
        return f"Discrete({g.action_n})"
    if g.action_kind == "multi_discrete":
        return f"MultiDiscrete({list(g.nvec)})"
    return f"Box({g.action_low:g}, {g.action_high:g}, ({g.action_dim},))"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="seer-env",
        description="Run, verify and benchmark seer_env environments.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("Examples::", 1)[1],
    )
    p.add_argument("--version", action="version", version=f"seer-env {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp: argparse.ArgumentParser, steps: int) -> None:
        sp.add_argument("env", help="env name (phold_v0, pcs_v0, aircraft_v0, a declared "
                                    "model) or a model folder's path")
        sp.add_argument("--steps", type=_at_least(1), default=steps,
                        help="steps to run (default %(default)s)")
        sp.add_argument("--num-envs", type=_at_least(1), default=1,
                        help="instances stepped together in one runtime (default 1)")
        sp.add_argument("--seed", type=_at_least(0), default=0,
                        help="reset and action seed (default 0)")
        sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="env config value, e.g. --set width=32 (repeatable)")

    r = sub.add_parser(
        "run", help="run an env under a random or constant policy",
        description="Step an env (NUM_ENVS instances in one runtime, next-step autoreset) "
                    "under a random or constant policy, with a progress bar on a terminal, "
                    "then print steps/s, agent-steps/s, events/s and the mean reward.")
    common(r, 200)
    r.add_argument("--threads", type=_threads, default="auto",
                   help="worker threads incl. the calling thread, or 'auto' "
                        "(default: chosen from the CPUs)")
    r.add_argument("--executor", choices=["parallel", "optimistic", "serial"],
                   default=None,
                   help="event executor: 'parallel' (conservative windows), 'optimistic' "
                        "(speculation with rollback, any lookahead) or 'serial' (the "
                        "reference); outputs are identical.  Default: with --threads auto "
                        "STPA picks any, else 'parallel'")
    r.add_argument("--policy", choices=["random", "constant"], default="random",
                   help="random actions within the action masks, or action 0 (the first "
                        "allowed one where masked) / zero vector (default random)")
    r.add_argument("--quiet", action="store_true",
                   help="no progress bar (it is drawn on stderr only when that is a terminal)")
    r.set_defaults(fn=cmd_run)

    v = sub.add_parser("verify", help="serial vs parallel side by side; first divergence or "
                                      "'identical' (exit status 1 on divergence)",
                       description="Run the serial reference and the parallel executor side "
                                   "by side under the same random actions and report the "
                                   "first divergence (step, instance, agent, field) or "
                                   "'identical'. Exit status 0 if identical, 1 if not.")
    common(v, 100)
    v.add_argument("--threads", type=_at_least(1), default=2,
                   help="threads of the compared run (default 2)")
    v.add_argument("--executor", choices=["parallel", "optimistic"], default="parallel",
                   help="the executor compared with the serial one (default parallel; "
                        "'optimistic' also runs lookahead 0 models)")
    v.set_defaults(fn=cmd_verify)

    t = sub.add_parser("trace", help="write a Chrome/Perfetto trace of every worker's "
                                     "windows, events, barriers and phases")
    common(t, 10)
    t.add_argument("-o", "--output", default="trace.json", help="trace JSON (default "
                                                                "%(default)s)")
    t.add_argument("--threads", type=_threads, default="auto",
                   help="worker threads incl. the caller, or 'auto' (STPA decides first)")
    t.add_argument("--capacity", type=_at_least(1), default=1 << 18,
                   help="trace records kept per worker (default %(default)s)")
    t.add_argument("--parallelism", action="store_true",
                   help="instead of writing a trace: what 1, 2, 4, 16 and 64 threads could "
                        "give (critical path vs work per window, from a traced run; "
                        "checked against 1- and 2-thread runs measured here)")
    t.set_defaults(fn=cmd_trace)

    b = sub.add_parser(
        "bench", help="benchmarks (ratios and medians measured in one run)",
        description="phold: the runtime's PHOLD figures (stdout).  api: the fixed cost of "
        "a step above the native step (batched and dict API) and the dict API's cost per "
        "agent against a minimal pure-Python ParallelEnv, 16 to 4096 agents (stdout).  "
        "pcs: default PCS 32x32 and 64x64 (reports on) through the batched API, parallel "
        "on 2 threads vs serial (stdout).  "
        "optimistic: the optimistic executor vs serial on classic PCS (32x32 to t=120000, "
        "64x64 to t=30000, at 20-, 200- and 2000-minute steps; --quick: a tenth) with the "
        "log's peak, and vs the parallel executor on default PCS and a tiny-lookahead "
        "PHOLD, with the rollback statistics (stdout).  "
        "stpa: threads='auto' over whole runs (episodes with resets; tiny and large PCS "
        "and Aircraft, classic PCS) against every fixed configuration, a first run and one "
        "from the remembered decision: auto/best per workload (stdout).  "
        "company: the executors in company, as users train: alone, in a training loop "
        "with a torch policy on CPU, beside a CPU burner at 50%% and 100%% duty, 2 and 4 env "
        "processes sharing the cores, 2 and 4 envs in one process, and async send/recv "
        "overlapping the policy; serial, parallel and optimistic at 2 to all cores and "
        "threads='auto', medians of rotated blocks and ratios to serial (a table on "
        "stdout, progress on stderr, every figure with -o/--json FILE).  "
        "suite, scaling, trace-overhead: the benchmark suite (STPA workloads, the "
        "NumPy ports, the Python layer, a rollout, thread scaling, the tracing-off cost; "
        "JSON, PNG plots and the README's table) is not in the package: it needs the "
        "repository checkout, where it runs as `python benchmarks/bench_suite.py WHAT`; "
        "asked for one of them, this command prints that command line and exits with "
        "status 2.")
    b.add_argument("what", choices=["phold", "api", "pcs", "optimistic", "suite", "stpa",
                                    "company", "scaling", "trace-overhead"],
                   nargs="?", default="phold",
                   help="which benchmark (default phold; see the description above)")
    b.add_argument("--rounds", type=_at_least(1), default=7,
                   help="timed rounds of 'phold', 'api', 'pcs' and 'company' per "
                        "configuration; the median is reported (default 7)")
    b.add_argument("-o", "--output", "--json", dest="output", default=None,
                   help="phold, api, pcs, optimistic, stpa, company: write every figure to "
                        "this JSON file (stamped with the commit, the machine and its load; "
                        "a summary the docs cite, as in benchmarks/results/); the suite's: "
                        "its output folder, passed on to the printed "
                        "benchmarks/bench_suite.py command (default bench_out)")
    b.add_argument("--quick", action="store_true", help="fewer rounds and sizes")
    b.add_argument("--situations", type=_names, default=None, metavar="A,B,...",
                   help="'company': the situations to measure, comma-separated: alone, torch, "
                        "burner-D (D%% duty), procs-N, envs-N, async (default: alone, torch, "
                        "burner-50, burner-100, procs-2, procs-4, envs-2, envs-4, async)")
    b.add_argument("--threads", type=_counts, default=None, metavar="P,Q,...",
                   help="'company': pool sizes of the parallel and optimistic executors "
                        "(default: 2 to the usable cores)")
    b.add_argument("--block", type=_at_least(1), default=None,
                   help="'company': iterations per timed block (default 32; --quick 16)")
    b.add_argument("--env", default="pcs_v0",
                   help="'company': the env (default pcs_v0 at 64x64)")
    b.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="'company': env config value, e.g. --set width=32 (repeatable; "
                        "on top of pcs_v0's width=64 height=64, or another env's defaults)")
    b.add_argument("--num-envs", type=_at_least(1), default=1,
                   help="'company': instances stepped together in one env (default 1)")
    b.add_argument("--update-every", type=_at_least(1), default=16,
                   help="'company': training-loop iterations per update (default 16)")
    b.add_argument("--replicas", type=_at_least(1), default=None,
                   help="'company': envs per executor in alone, torch, async and burner-D, "
                        "taking its blocks in turn (default 2; --quick 1)")
    b.add_argument("--warm-blocks", type=_at_least(1), default=None,
                   help="'company': blocks each configuration runs before the timed ones "
                        "(default 10: a pool's alone stretches settle in company; --quick 1)")
    b.add_argument("--stpa-cache", action="store_true",
                   help="'company': let threads='auto' start from a remembered decision "
                        "(default: it decides afresh in each situation)")
    b.add_argument("--max-threads", type=_at_least(1), default=16,
                   help="largest pool of 'scaling', passed on to the printed command "
                        "(default %(default)s)")
    b.set_defaults(fn=cmd_bench)

    n = sub.add_parser("new", help="write a working model folder from the template",
                       description="Write DIR/NAME/: a C model with every hook present and "
                                   "commented, its declaration (__init__.py), a test and a "
                                   "README (--python: the model in Python, compiled with "
                                   "Numba; --groups: a C model with two agent groups, "
                                   "multi-discrete actions and action masks). It builds, "
                                   "passes `check` and runs as written.")
    n.add_argument("name", help="model name: an ASCII identifier, not starting with '_' "
                                "(folder, C symbols, env)")
    n.add_argument("--dir", default=".", help="parent folder (default: the current one)")
    n.add_argument("--force", action="store_true", help="write into an existing folder")
    n.add_argument("--python", action="store_true",
                   help='write the model in Python (needs pip install "seer_env[numba]")')
    n.add_argument("--groups", action="store_true",
                   help="a C model with two agent groups: scouts (Box actions) and workers "
                        "(multi-discrete actions with action masks)")
    n.set_defaults(fn=cmd_new)

    bu = sub.add_parser("build", help="compile a model folder (cached by content)",
                        description="Compile the model folder PATH with the runtime into an "
                                    "extension module in the cache (reused while no source "
                                    "changes). Compiler errors are printed; exit status 1.")
    bu.add_argument("path", help="model folder (or a registered model's name)")
    bu.add_argument("--rebuild", action="store_true", help="build even if up to date")
    bu.add_argument("--quiet", action="store_true", help="no build log")
    bu.set_defaults(fn=cmd_build)

    c = sub.add_parser("check", help="contract checker and determinism matrix for a model",
                       description="Run the model through the isolation, replay, order and "
                                   "matrix passes (see seer_env.check), in a child process "
                                   "with a time budget per run and a memory budget, and print "
                                   "every finding with the rule it breaks and how to fix it (a "
                                   "model that crashes, hangs or runs out of memory in that "
                                   "process is a finding too). Exit "
                                   "status 0 if the model keeps the contract, 1 if not, 2 if "
                                   "it cannot start, 130 on Ctrl-C.")
    c.add_argument("path", help="model folder or registered model name (e.g. pcs_v0)")
    c.add_argument("--steps", type=_at_least(1), default=None,
                   help="steps per run: the instances of the main runs live that long "
                        "(default: the model's episode, max_cycles, at most 200; --quick: at "
                        "most 40)")
    c.add_argument("--quick", action="store_true",
                   help="seed 0, threads 1, 2 and 8, batches 1 and 3, runs of at most 40 steps "
                        "(the replay pass still runs a whole episode)")
    c.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="time budget of each run; a run past it is a [hang] finding (default: "
                        "30 s + 1 ms per entity-step, steps x instances x entities)")
    c.add_argument("--memory", type=_memory_size, default=None, metavar="SIZE",
                   help="memory budget of the process running the model (its data segment), "
                        "in bytes or with a unit: 512M, 2G, 1.5G; memory running out under it "
                        "is a [memory] finding naming the hook that grew it (default: half the "
                        "physical memory, at least 1G, at most what ulimit -d allows)")
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="config value, e.g. --set num_agents=8 (repeatable)")
    c.set_defaults(fn=cmd_check)

    i = sub.add_parser("info", help="a model's configuration keys, sizes and spaces")
    i.add_argument("env", help="env name or model folder")
    i.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="config value for the sizes shown (repeatable)")
    i.set_defaults(fn=cmd_info)
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        return int(a.fn(a))
    except SeerError as exc:
        print(f"seer-env: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path given that cannot be written or read (a file for --dir)
        print(f"seer-env: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
