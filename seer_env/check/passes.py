"""The checker's passes (`PASSES`): which runs each makes, the rule an output
difference breaks, the jobs run in the child, and each run's time budget
(`run_budget`).

Part of [`seer_env.check`][seer_env.check] (its module docstring tells the whole story).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._bind.native import NativeModel
from ..errors import SeerError
from ..registry import Runtime
from . import bounds as check_bounds
from . import race as check_race
from .report import FIXES, classify
from .runs import _grab, _Run, first_difference, run_model

# -- the passes --------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What a check runs, as [`check`][seer_env.check.check] was asked."""

    seeds: tuple[int, ...]
    threads: tuple[int, ...]
    batches: tuple[int, ...]
    steps: int  # steps of a main run: its instances live that long (unless they finish)
    episode: int  # the model's episode: max_cycles, at most EPISODE_CAP
    lookahead: float  # the model's, for this configuration

    @property
    def windows(self) -> bool:
        """The parallel executor's windows exist (lookahead > 0)."""
        return self.lookahead > 0.0


def _never(plan: Plan) -> str | None:
    return None


@dataclass(frozen=True)
class Pass:
    """One pass: the runs it makes and how their outcomes are judged.

    ``runs(plan)``: the runs, as keyword arguments of ``driver`` (executor,
    threads, batch, seed; optionally check, shuffle_seed, steps,
    reset_every; the rest defaults).  A run's own error (a breach caught as it
    happens, a handler error) is a finding under the rule its message names;
    a crash or a run past its budget is a ``crash`` or ``hang`` finding.
    ``rule``: the rule an output difference from the serial reference run
    (same batch, seed, steps and resets) breaks; None: not compared.
    ``what(kw)``: a run in words, for that difference's message.
    ``skip(plan)``: why the pass does not run (None: it runs).
    ``compare_after``: compare this pass's runs only after a run of that pass
    succeeded (isolation waits for replay: when two identical runs differ,
    no comparison can say why).
    ``driver``: runs one run in the checker's child process; a module-level
    function with [`run_model`][seer_env.check.run_model]'s parameters (it is sent by name).
    ``inspect(native, config, run)``: more findings from each run that
    succeeded, ``(rule, message)`` pairs; runs in the child, after the run.
    ``job(ctx)``: a pass that is one function instead of runs (``runs`` is
    then not called): it runs in the child (a [`JobContext`][seer_env.check.JobContext]) and
    returns a [`JobOutcome`][seer_env.check.JobOutcome]; its time budget is ``job_runs`` runs of
    the plan's length on two instances.
    ``inspect`` and ``job`` are module-level functions too (sent by name).
    ``fixes``: the fix of each rule the pass adds to `FIXES`.
    """

    name: str
    runs: Callable[[Plan], list[dict[str, Any]]] = lambda plan: []
    rule: str | None = None
    what: Callable[[dict[str, Any]], str] = lambda kw: "run"
    skip: Callable[[Plan], str | None] = _never
    compare_after: str | None = None
    driver: Callable[..., _Run] = run_model
    inspect: Callable[[NativeModel, Mapping[str, Any], _Run],
                      Iterable[tuple[str, str]]] | None = None
    job: Callable[[JobContext], JobOutcome] | None = None
    job_runs: int = 4
    fixes: Mapping[str, str] = field(default_factory=dict)


@dataclass
class JobContext:
    """What a pass's ``job`` gets, in the child process."""

    native: NativeModel
    config: dict[str, Any]
    plan: Plan
    names: list[str]
    sizes: Any
    #: ``note(k)`` before step k of a run the job makes (0: its reset): where
    #: the job is, and its memory, for a death's finding
    note: Callable[[int], None] = lambda k: None


@dataclass
class JobOutcome:
    """What a pass's ``job`` found: ``(rule, message)`` pairs, and the runs
    and steps it made (for the report's pass line)."""

    findings: list[tuple[str, str]] = field(default_factory=list)
    runs: int = 1
    steps: int = 0
    #: the pass's status when it could not run ("skipped: <why>"), else None
    status: str | None = None


def _isolation_runs(plan: Plan) -> list[dict[str, Any]]:
    return [dict(executor="serial", threads=1, batch=2, seed=s, check=1) for s in plan.seeds]


def _replay_runs(plan: Plan) -> list[dict[str, Any]]:
    # at least a whole episode: one serial run sees every step of the first
    # episode (a handler error late in it) whatever steps says
    return [dict(executor="serial", threads=1, batch=2, seed=plan.seeds[0],
                 steps=max(plan.steps, plan.episode))]


def _order_runs(plan: Plan) -> list[dict[str, Any]]:
    return [dict(executor="parallel", threads=t, batch=2, seed=plan.seeds[0], check=2,
                 shuffle_seed=sh) for t, sh in ((1, 1), (1, 2), (2, 3))]


def _order_skip(plan: Plan) -> str | None:
    return None if plan.windows else "skipped: lookahead 0 (no windows to shuffle)"


def _matrix_runs(plan: Plan) -> list[dict[str, Any]]:
    executor = "parallel" if plan.windows else "optimistic"
    runs = [dict(executor=executor, threads=t, batch=b, seed=s)
            for b in plan.batches for s in plan.seeds for t in plan.threads]
    # reset runs: masked resets mid-episode, long enough to reset each
    # instance twice, on the fewest and the most threads
    for b in plan.batches:
        for t in dict.fromkeys((plan.threads[0], plan.threads[-1])):
            runs.append(dict(executor=executor, threads=t, batch=b, seed=plan.seeds[0],
                             reset_every=RESET_EVERY,
                             steps=max(plan.steps, 2 * RESET_EVERY * b)))
    return runs


def _matrix_what(kw: dict[str, Any]) -> str:
    resets = f" (one instance reset every {kw['reset_every']} steps)" if kw["reset_every"] else ""
    return (f"{kw['executor']} threads={kw['threads']} batch={kw['batch']} seed={kw['seed']}"
            f"{resets} vs serial")


def _uninit_job(ctx: JobContext) -> JobOutcome:
    steps = max(ctx.plan.steps, 1)
    found = check_bounds.uninit_findings(ctx.native, ctx.config, steps, ctx.names,
                                         progress=ctx.note)
    return JobOutcome(found, runs=2, steps=2 * 2 * steps)


def _bounds_runs(plan: Plan) -> list[dict[str, Any]]:
    # one serial run of at least a whole episode: what an agent sees late too
    return [dict(executor="serial", threads=1, batch=2, seed=plan.seeds[0],
                 steps=max(plan.steps, plan.episode))]


def _bounds_inspect(native: NativeModel, config: Mapping[str, Any],
                    run: _Run) -> list[tuple[str, str]]:
    buf, sizes = native.describe(dict(config))
    return check_bounds.bounds_findings(native, config, run,
                                        native.agent_names(buf, sizes.num_agents, sizes))


def _race_job(ctx: JobContext) -> JobOutcome:
    steps = max(min(ctx.plan.steps, RACE_STEPS), 1)
    found = check_race.race_findings(ctx.native, ctx.config, steps)
    if isinstance(found, str):
        return JobOutcome(runs=0, status=found)
    return JobOutcome(found, runs=1, steps=steps)


def _snapshot_job(ctx: JobContext) -> JobOutcome:
    """The snapshot pass: run a few steps, snapshot every instance, run
    `SNAPSHOT_STEPS` more under random actions, restore, and run them
    again with the same actions -- in the same runtime, then in a fresh one on
    another executor.  Every output must come back bit for bit: a model that
    keeps state outside runtime-owned memory (a static counter, a pointer into
    its own heap) is not in a snapshot, and its future after a restore
    differs."""
    plan = ctx.plan
    warm = max(0, min(plan.steps // 2, SNAPSHOT_WARM))
    k = max(1, min(plan.steps, SNAPSHOT_STEPS))
    B = 2
    other_executor = ("parallel" if plan.windows else "optimistic")
    rng = np.random.default_rng(plan.seeds[0])
    rt = Runtime(ctx.native, ctx.config, B, "serial", 1, None, oversubscribe=True)
    fresh = Runtime(ctx.native, ctx.config, B, other_executor, 2, None, oversubscribe=True)
    try:
        try:
            rt.reset([plan.seeds[0] + i for i in range(B)])
            for _ in range(warm):
                live = rt.alive.any(axis=1)
                if not live.all():
                    break
                rt.actions[:] = check_bounds.random_actions(rng, rt, spill=0.25)
                rt.step()
            snaps = [rt.snapshot(i) for i in range(B)]
            first, acts, masks = [_grab(rt)], [], []
            for _ in range(k):
                live = rt.alive.any(axis=1)
                if not live.any():
                    break
                rt.actions[:] = check_bounds.random_actions(rng, rt, spill=0.25)
                acts.append(rt.actions.copy())
                masks.append(live)
                rt.step(live)
                first.append(_grab(rt))
        except SeerError as exc:  # the other passes report the model's own failures
            if isinstance(exc, MemoryError):  # the checker's memory finding
                raise
            return JobOutcome(runs=1, status=f"skipped: a plain run failed ({classify(exc)})")
        found: list[tuple[str, str]] = []
        fresh.reset([0] * B)
        for where, target in (("the same runtime", rt),
                              (f"a new runtime ({other_executor} executor, 2 threads)", fresh)):
            try:
                for i, snap in enumerate(snaps):
                    target.restore(i, snap)
                again = [_grab(target)]
                for a, m in zip(acts, masks, strict=True):
                    target.actions[:] = a
                    target.step(m)
                    again.append(_grab(target))
            except SeerError as exc:
                if isinstance(exc, MemoryError):
                    raise
                found.append(("restore", f"after a restore into {where}, the replay failed "
                                          f"where the original run did not: {exc}"))
                break
            diff = first_difference(_Run(first), _Run(again), ctx.native,
                                    ctx.sizes.entity_size, ctx.names)
            if diff is not None:
                found.append(("restore", f"a snapshot taken after step {warm} and restored into "
                                          f"{where} does not reproduce the steps that followed "
                                          f"it (steps counted from the snapshot): {diff}"))
                break
        return JobOutcome(found, runs=3, steps=warm + 3 * len(acts))
    finally:
        rt.close()
        fresh.close()


#: The snapshot pass: steps before the snapshot (at most half the main runs')
#: and steps replayed after it.
SNAPSHOT_WARM = 5
SNAPSHOT_STEPS = 8

#: Steps of the race pass's run (at most): ThreadSanitizer slows a run 5-15x,
#: and memory shared between handlers is written in every step that uses it.
RACE_STEPS = 40

#: The passes, in the order they run.  Isolation first: a model that would
#: crash a plain run (a NULL pointer) is caught there, and nothing else runs.
#: Then replay: when two identical runs differ, no later comparison can say
#: why (the isolation runs are compared with plain runs only after it).
PASSES: list[Pass] = [
    Pass("isolation", _isolation_runs, rule="layout",
         what=lambda kw: "checking mode vs plain serial run", compare_after="replay"),
    Pass("uninit", job=_uninit_job, fixes={k: check_bounds.FIXES[k]
                                           for k in ("uninitialised", "pointer-state")}),
    Pass("replay", _replay_runs, rule="hidden-state",
         what=lambda kw: "second serial run vs the first"),
    Pass("order", _order_runs, rule="order", skip=_order_skip,
         what=lambda kw: f"shuffled visiting order (threads={kw['threads']}) vs serial"),
    Pass("race", job=_race_job, job_runs=12, fixes=check_race.FIXES),
    Pass("bounds", _bounds_runs, inspect=_bounds_inspect,
         fixes={k: v for k, v in check_bounds.FIXES.items()
                if k not in ("uninitialised", "pointer-state")}),
    Pass("matrix", _matrix_runs, rule="determinism", what=_matrix_what),
    Pass("snapshot", job=_snapshot_job, job_runs=3,
         fixes={"restore": "keep all state in runtime-owned memory (entity states, instance "
                            "data, events and their payloads): a restored snapshot lost "
                            "what the model kept elsewhere (static or global variables, heap "
                            "memory of its own, a C library generator)"}),
]
for _p in PASSES:  # one table of fixes: the passes' own rules too
    FIXES.update(_p.fixes)

#: The default ``steps``: the model's episode (its max_cycles; 0, no limit,
#: counts as this), at most this many steps.
EPISODE_CAP = 200
#: ``quick=True``: steps per main run (at most; the replay pass still runs a
#: whole episode), seeds, threads and batches.
QUICK_STEPS = 40
QUICK = dict(seeds=(0,), threads=(1, 2, 8), batches=(1, 3))
#: Reset runs reset one instance (in turn) every this many steps.
RESET_EVERY = 17

#: A run's default time budget: this many seconds ...
BUDGET_BASE = 30.0
#: ... plus this many per entity-step (steps x instances x entities): about 16
#: times what the checking mode, the slowest, takes on today's machines.
BUDGET_PER_ENTITY_STEP = 1e-3
#: Seconds the child process may take to start and load the model (at least).
STARTUP_BUDGET = 120.0


def _complete(kw: dict[str, Any], plan: Plan) -> dict[str, Any]:
    """A run's keyword arguments with every default filled in."""
    out = dict(threads=1, check=0, shuffle_seed=0, steps=plan.steps, reset_every=0)
    out.update(kw)
    out.setdefault("action_seed", out["seed"])
    return out


def _reference_of(kw: dict[str, Any]) -> dict[str, Any]:
    """The plain serial run a run is compared with."""
    return dict(executor="serial", threads=1, batch=kw["batch"], seed=kw["seed"],
                steps=kw["steps"], reset_every=kw["reset_every"], action_seed=kw["action_seed"])


def _ref_key(kw: dict[str, Any]) -> tuple[Any, ...]:
    return (kw["batch"], kw["seed"], kw["steps"], kw["reset_every"], kw["action_seed"])


def run_budget(kw: Mapping[str, Any], num_entities: int, budget: float | None = None) -> float:
    """Seconds a run may take: ``budget`` if given, else `BUDGET_BASE` +
    `BUDGET_PER_ENTITY_STEP` x steps x batch x entities."""
    if budget is not None:
        return float(budget)
    return BUDGET_BASE + BUDGET_PER_ENTITY_STEP * kw["steps"] * kw["batch"] * max(1, num_entities)


def _run_text(pass_name: str, kw: Mapping[str, Any], reference: bool = False) -> str:
    """A run in words."""
    if reference:
        what = f"the serial reference run (batch {kw['batch']}, seed {kw['seed']}"
    else:
        ex = (f"{kw['executor']} executor in checking mode" if kw.get("check", 0) & 1 else
              f"{kw['executor']} executor" + (", shuffled visiting orders"
                                              if kw.get("check", 0) & 2 else ""))
        thr = f", threads={kw['threads']}" if kw["executor"] != "serial" else ""
        a = "an" if pass_name[:1] in "aeiou" else "a"
        what = f"{a} {pass_name} run ({ex}{thr}, batch {kw['batch']}, seed {kw['seed']}"
    if kw.get("reset_every"):
        what += f", one instance reset every {kw['reset_every']} steps"
    return what + ")"
