"""The contract checker: is a model safe to run on every executor?

[`check`][seer_env.check.check] runs a model through the passes of `PASSES` and reports
every breach of the event-locality contract it finds, each naming the model,
the handler, the entity, the event type and the simulated time, the rule
broken and how to fix it:

```python
import seer_env
report = seer_env.check("path/to/mymodel", config={"num_things": 8})
print(report)            # one line per pass, then the findings
assert report.ok
```

```bash
seer-env check path/to/mymodel --set num_things=8
```

The passes:

1. **isolation** -- the serial executor in checking mode: every handler runs
   with the memory it must not touch protected (other entities' live state,
   the published snapshot, the configuration, the model's static variables)
   and with ``rand()``, ``time()`` and friends watched.  A breach stops the run
   with a message naming exactly what was touched.  The run is then compared
   with a plain serial run: a model whose outputs change with the memory
   layout reads or writes outside its entity.
2. **uninit** -- reads of bytes nobody wrote (`seer_env.check_bounds`):
   a C model is built twice more with every local variable starting as zero
   bytes and as 0xFE bytes; outputs that differ between the two are an
   ``uninitialised`` finding naming the hook, agent, element and step.  The
   passes below then do not report the same differences again as layout,
   order or determinism breaches.
3. **replay** -- two plain serial runs in one process must agree: hidden state
   that survives a run (static or thread-local variables, a C library
   generator) shows here.
4. **order** -- the parallel executor with one partition per entity, visited
   in a fresh random order in every window (and on two threads): a model
   whose outputs depend on the order in which independent events run.
5. **race** -- memory shared between entities' handlers
   (`seer_env.check_race`): the model built with ThreadSanitizer runs on
   the parallel executor (two threads, shuffled order; the optimistic executor
   for lookahead 0) in a child process; a heap block or static several
   handlers write is a ``shared-heap`` or ``data-race`` finding naming both
   hooks, functions and lines.  Skipped, with the reason, for Python models
   and where the compiler has no ThreadSanitizer runtime.
6. **bounds** -- one serial run of a whole episode, its outputs read against
   the model's declared bounds: observations and global states outside them,
   NaN anywhere, infinities where a bound is finite, non-finite rewards and
   infos (``obs-bounds``, ``state-bounds``, ``non-finite``), each named with
   step, instance, agent and element.
7. **matrix** -- the determinism matrix: serial against parallel at threads
   1-4 and oversubscribed (8), batches of 1-3 instances, several seeds,
   random actions; reset runs add masked resets mid-episode.
8. **snapshot** -- a few steps, a snapshot of every instance
   (``Runtime.snapshot``), more steps under random actions, a restore and the
   same steps again, in the same runtime and in a new one on another executor:
   every output must come back bit for bit.  State the model keeps outside
   runtime-owned memory (a static counter, heap memory of its own) is not in
   a snapshot, and shows here as a ``restore`` finding.
9. **lookahead** and the other schedule rules are checked on every
   ``seer_schedule`` call in every pass.

Models with lookahead 0 have no windows: the order pass is skipped for them
(and says so), and the matrix runs the optimistic executor (speculation with rollback)
instead of the parallel one.

Runs.  Every run resets its instances, then steps them under random actions
(Box actions also out of range, to exercise clipping).  In the *main runs*
no instance is reset until all its agents have finished (then it is reset at
once, an autoreset), so with ``steps=N`` the instances live N steps: a breach
that starts late in an episode is met.  The default N is the model's episode,
its ``max_cycles`` (0, no limit, counts as `EPISODE_CAP`), at most
`EPISODE_CAP` steps.  The matrix adds *reset runs*: one instance reset
every `RESET_EVERY` steps (in turn), long enough to reset each instance
twice, on the fewest and the most threads.  The replay pass runs at least a
whole episode, so one serial run meets every step of the first episode even
under ``quick=True`` (seed 0, threads 1, 2 and 8, batches 1 and 3, main runs
of at most `QUICK_STEPS` steps).

The model runs in a child process (one for the whole check, started again
after it died), never in the caller's: a handler that crashes the process (a
wild pointer, ``abort()``, ``exit()``) or never returns becomes a ``crash`` or
``hang`` finding naming the pass, the run and, from a record the checking mode
keeps in memory shared with the checker (``SEER_CHECK_PROGRESS``, see
runtime/check.c), the handler, entity, event type and simulated time; a plain
run that stops is run again up to that step on the serial executor in checking
mode to name them.  The passes after it are skipped.  Each run has a time
budget (``budget``: seconds per run; by default `BUDGET_BASE` seconds
plus `BUDGET_PER_ENTITY_STEP` seconds per entity-step of the run, steps
x instances x entities).  Ctrl-C stops the check and its child at once
(KeyboardInterrupt; ``seer-env check`` exits 130).

Memory.  The child has a memory budget (``memory``; by default
`default_memory`: half the machine's physical memory, at least 1 GiB, at
most what the process's own limits allow), set once the model is loaded as
the limit on its data segment (RLIMIT_DATA: its private writable memory,
heap and mmap alike; not reserved address space, which the runtime's threads
and Numba's compiler take plenty of).  A model that leaks meets the budget
instead of the machine's end: a ``MemoryError``, an
[`OutOfMemoryError`][seer_env.errors.OutOfMemoryError] from the runtime, the
child's memory left within an eighth of the budget after a request, or its
death with that much in use, is a ``memory`` finding naming the budget, what
was in use and the hook during which memory grew most, from a serial rerun in
a new child with every hook watched (the data segment read before and after
each call); the passes after it are skipped.  A model whose loading alone
takes the budget is a ConfigError.  The processes the child starts (the
compiler, the ThreadSanitizer run of the race pass, whose shadow memory is
terabytes of reserved private mappings) run without the budget.  Cost: starting the child
and loading the model in it, about 0.3 s for a C model (1 s for a Python one);
the runs' outputs are compared in the child, so what comes back is small.

A pass is one entry of `PASSES`: a [`Pass`][seer_env.check.Pass] says which runs it
makes and which rule an output difference from the serial reference breaks,
or is one function run in the child (``Pass.job``); ``Pass.inspect`` adds
findings from each run's outputs.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import pickle
import re
import resource
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import check_bounds, check_race, errors
from ._native import NativeModel
from .errors import BudgetError, ConfigError, ModelError, SeerError
from .registry import Runtime

#: How to fix what each rule's breach means.
FIXES: dict[str, str] = {
    "entity-state": "touch only the handler's own entity state (the `entity` argument); read "
                    "other entities through seer_snapshot, change them by sending events",
    "boundary-write": "change entity states in act or handle; boundary, observe, publish and "
                      "global_state only read them",
    "output-row": "write only the agent's own output rows: obs[0..obs_dim-1], *reward, "
                  "*terminated, *truncated and info[0..info_dim-1] in observe, mask[0..mask_dim-1] "
                  "in action_mask (check the loop bounds and the dims describe gives)",
    "snapshot": "write snapshot records only in publish, the entity's own record",
    "instance-data": "write the instance data only in the boundary hook",
    "config": "treat the configuration as read-only after describe",
    "static-data": "move the variable into the entity state (per entity) or the instance data "
                   "(per instance, written at the boundary)",
    "randomness": "draw random numbers with seer_rng_* (each entity's own stream)",
    "clock": "use simulated time (seer_now); never read a clock",
    "lookahead": "schedule events for other entities at >= now + lookahead (or lower the "
                 "model's lookahead in describe)",
    "past": "schedule events at >= now",
    "target": "schedule only to entities 0 .. num_entities-1 of the instance",
    "payload": "keep payloads within payload_size (set it in describe)",
    "time": "schedule at finite times",
    "phase": "schedule only from init, act and handle",
    "instance-rng": "draw random numbers only where there is an entity (init, act, handle, "
                    "observe, publish); boundary and global_state have no stream",
    "handler-error": "the handler returned a non-zero status: see its message",
    "layout": "read and write only through the handler's own pointers: the outputs changed "
              "when entity states were laid out differently (pointer arithmetic past a "
              "struct, uninitialized padding)",
    "hidden-state": "keep all state in entity states and instance data: two identical runs "
                    "in one process differed (static or thread-local variables, a C library "
                    "generator)",
    "order": "keep handlers independent of each other: the outputs changed when independent "
             "events ran in another valid order (shared or thread-local variables, heap "
             "memory reachable from several entities)",
    "determinism": "the parallel executor's outputs differ from the serial executor's: "
                   "usually one of the rules above, broken in a way the other passes missed",
    "crash": "the model killed the process running it: look in the handler named for a wild "
             "or dangling pointer, an index out of bounds, a failed assert() or a call to "
             "abort() or exit(); a handler reports a failure by returning an error status "
             "(seer_fail_step), never by ending the process",
    "hang": "a handler never returned, or a step never ended, within the run's time budget: "
            "look in the handler named for a loop without an exit, or for events scheduled "
            "at one simulated time without end; if the model is only slow, raise the budget "
            "(--budget SECONDS, check(budget=...))",
    "fork": "never create processes in a hook (fork(), system(), popen(), posix_spawn()): "
            "a hook runs in whichever process and thread the executor chooses, and a copy "
            "of that process runs the model a second time",
    "memory": "free what a hook allocates, or keep it in runtime-owned memory (entity states, "
              "instance data, event payloads, whose sizes describe declares): a model's "
              "memory must not grow with the steps it runs; look in the hook named.  If the "
              "model only needs more, raise the budget (--memory SIZE, check(memory=...))",
    "name": "give the model one name: set .name in its seer_model table to the declared name "
            "(the folder's, or declare(__name__, name=...)); a shipped env NAME_vN may keep "
            "NAME",
}


@dataclass(frozen=True)
class Finding:
    """One breach of the contract.

    Attributes:
        rule: the rule broken, a key of `FIXES` (``"locality"``, ``"race"``, ...).
        pass_name: the pass that found it (``"isolation"``, ``"replay"``, ...).
        message: what happened: the handler, entity, event type and time.
        fix: how to fix it (the rule's entry of `FIXES`).
    """

    rule: str
    pass_name: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"[{self.rule}] ({self.pass_name}) {self.message}\n    fix: {self.fix}"


@dataclass
class PassResult:
    """What one pass ran and concluded.

    Attributes:
        name: the pass (an entry of `PASSES`).
        runs: the runs it made.
        steps: the steps of all its runs together.
        status: ``"ok"``, ``"finding"``, or ``"skipped: <why>"``.
    """

    name: str
    runs: int = 0
    steps: int = 0
    status: str = "ok"  # "ok", "finding", or "skipped: <why>"

    def __str__(self) -> str:
        return f"{self.name:<10} {self.status:<40} ({self.runs} run(s), {self.steps} steps)"


@dataclass
class CheckReport:
    """The outcome of [`check`][seer_env.check.check]; ``print(report)`` shows it.

    Attributes:
        model: the model's name.
        config: the configuration checked.
        passes: one [`PassResult`][seer_env.check.PassResult] per pass, in order.
        findings: every [`Finding`][seer_env.check.Finding]; none when `ok`.
    """

    model: str
    config: dict[str, Any]
    passes: list[PassResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No finding."""
        return not self.findings

    def rules(self) -> set[str]:
        """The rules broken."""
        return {f.rule for f in self.findings}

    def __str__(self) -> str:
        lines = [f"contract check of model '{self.model}':"]
        lines += [f"  {p}" for p in self.passes]
        if self.ok:
            lines.append("no finding: the model keeps the contract in every pass")
        else:
            lines.append(f"{len(self.findings)} finding(s):")
            lines += [f"  {f}" for f in self.findings]
        return "\n".join(lines)


# -- classifying failures ----------------------------------------------------------

_VIOLATION_RULES = (
    ("inside the lookahead", "lookahead"),
    ("time in the past", "past"),
    ("unknown target", "target"),
    ("payload too large", "payload"),
    ("non-finite event time", "time"),
    ("outside init/act/handle", "phase"),
    ("random draw without an entity", "instance-rng"),
)


def classify(exc: BaseException) -> str:
    """The rule a runtime error reports."""
    msg = str(exc)
    if isinstance(exc, MemoryError):  # OutOfMemoryError: the checker's memory budget
        return "memory"
    if isinstance(exc, ModelError):
        return "handler-error"
    if isinstance(exc, BudgetError):  # a step that does not end, stopped by the runtime
        return "hang"
    if "(isolation)" in msg:
        if "static data" in msg:
            return "static-data"
        if "NULL pointer" in msg:
            return "entity-state"
        if re.search(r"called (rand|random|drand48|lrand48|mrand48|erand48|nrand48|jrand48|"
                     r"rand_r|srand|srandom|srand48)\(\)", msg):
            return "randomness"
        if " called " in msg:
            return "clock"
        if "snapshot record" in msg:
            return "snapshot"
        if "instance data" in msg:
            return "instance-data"
        if "configuration" in msg:
            return "config"
        if "at the boundary entity states are read-only" in msg:
            return "boundary-write"
        if "past the end of its" in msg or "mask row" in msg:
            return "output-row"
        return "entity-state"
    for needle, rule in _VIOLATION_RULES:
        if needle in msg:
            return rule
    return "determinism"


def _elf_symbol(path: str, offset: int) -> str | None:
    """The symbol of an ELF64 shared object that holds ``offset`` (from .symtab)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for k in range(sh[5] // 24):
            name, info, _, _, value, size = struct.unpack_from("<IBBHQQ", data, sh[4] + 24 * k)
            if (info & 0xF) == 1 and value <= offset < value + max(size, 1):  # STT_OBJECT
                end = data.index(b"\0", strtab[4] + name)
                return data[strtab[4] + name:end].decode(errors="replace")
    return None


def explain(exc: BaseException, native: NativeModel) -> str:
    """The runtime's message, with a static variable's name filled in."""
    msg = str(exc)
    m = re.search(r"static data at module offset (0x[0-9a-f]+)( \([^)]*\))?", msg)
    if m:
        sym = _elf_symbol(getattr(native.module, "__file__", ""), int(m.group(1), 16))
        if sym:
            local = re.fullmatch(r"(.+)\.\d+", sym)  # a function's static: name.N
            what = (f"the static variable '{local.group(1)}' (declared in a function)" if local
                    else f"the static variable '{sym}'")
            msg = msg.replace(m.group(0), what)
    return msg


# -- driving runs -----------------------------------------------------------------------


@dataclass
class _Run:
    """Every output of every step of one run (and where it stopped, if it failed)."""

    steps: list[dict[str, np.ndarray]]
    error: BaseException | None = None


def _grab(rt: Runtime) -> dict[str, np.ndarray]:
    B = rt.num_instances
    return {
        "obs": rt.obs.copy(), "reward": rt.reward.copy(), "terminated": rt.terminated.copy(),
        "truncated": rt.truncated.copy(), "info": rt.info.copy(), "alive": rt.alive.copy(),
        "active": rt.active.copy(), "mask": rt.mask.copy(),
        "state": np.stack([np.frombuffer(rt.entity_states(i), np.uint8) for i in range(B)]),
        "global": np.stack([rt.global_state(i) for i in range(B)]),
    }


#: Where a run is, for `run_model`'s ``progress``: creating its runtime,
#: resetting (all instances at step 0, the masked ones after step k), stepping,
#: reading the outputs (global_state runs then); and, after it, the checker
#: inspecting its outputs (``Pass.inspect``).
CREATE, RESET, STEP, OUTPUTS, INSPECT = 0, 1, 2, 3, 4


def run_model(native: NativeModel, config: Mapping[str, Any], *, executor: str, threads: int,
              batch: int, seed: int, steps: int, action_seed: int, check: int = 0,
              shuffle_seed: int = 0, reset_every: int = 17,
              progress: Callable[[int, int], None] | None = None) -> _Run:
    """One run: reset, ``steps`` random-action steps with masked resets every
    ``reset_every`` steps (0: none) and autoresets of finished instances.

    ``progress(k, stage)`` is called before each stage of step ``k`` (0: the
    first reset): `CREATE`, `RESET`, `STEP`, `OUTPUTS`.
    """
    note = progress or (lambda k, stage: None)
    out: list[dict[str, np.ndarray]] = []
    note(0, CREATE)
    rt = Runtime(native, config, batch, executor, threads, None, check=check,
                 shuffle_seed=shuffle_seed, oversubscribe=True)
    rng = np.random.default_rng(action_seed)
    seeds = [seed + i for i in range(batch)]
    try:
        note(0, RESET)
        rt.reset(seeds)
        note(0, OUTPUTS)
        out.append(_grab(rt))
        for k in range(1, steps + 1):
            # Box values spill past the bounds: the runtime's clipping is exercised too
            rt.actions[:] = check_bounds.random_actions(rng, rt, spill=0.25)
            finished = ~rt.alive.any(axis=1)
            forced = np.zeros(batch, bool)
            if reset_every and k % reset_every == 0:
                forced[k // reset_every % batch] = True
            again = finished | forced
            if (~again).any():
                note(k, STEP)
                rt.step(~again)
            if again.any():
                note(k, RESET)
                rt.reset([s + 7919 * k for s in seeds], again)
            note(k, OUTPUTS)
            out.append(_grab(rt))
    except SeerError as exc:
        return _Run(out, exc)
    finally:
        rt.close()
    return _Run(out)


def first_difference(a: _Run, b: _Run, native: NativeModel, entity_size: int,
                     names: Sequence[str]) -> str | None:
    """Where two runs first differ (bit for bit), in words, with the hooks
    that made the difference where the outputs tell; None when identical."""
    for k, (x, y) in enumerate(zip(a.steps, b.steps, strict=False)):
        for key in ("obs", "reward", "terminated", "truncated", "info", "alive", "active",
                    "mask", "global", "state"):
            u, v = x[key], y[key]
            ub = u.view(np.uint8) if u.dtype.kind == "f" else u
            vb = v.view(np.uint8) if v.dtype.kind == "f" else v
            if np.array_equal(ub, vb):
                continue
            if key == "state":
                inst = int(np.argwhere((u != v).any(axis=1))[0][0])
                return (f"step {k}, instance {inst}: "
                        f"{_state_difference(k, u[inst], v[inst], native, entity_size)}")
            idx = tuple(int(i) for i in np.argwhere(
                (u.view(np.uint32 if u.dtype.itemsize == 4 else np.uint64) if u.dtype.kind == "f"
                 else u) != (v.view(np.uint32 if v.dtype.itemsize == 4 else np.uint64)
                             if v.dtype.kind == "f" else v))[0])
            inst = idx[0]
            if key == "global":
                text = f"step {k}, instance {inst}, global[{idx[1]}]"
            else:
                agent = names[idx[1]] if len(idx) > 1 and idx[1] < len(names) else "-"
                elem = list(idx[2:]) if len(idx) > 2 else ""
                text = f"step {k}, instance {inst}, agent {agent}, {key}{elem}"
            text += f": {u[idx].item()!r} vs {v[idx].item()!r}"
            su, sv = x["state"][inst], y["state"][inst]
            if not np.array_equal(su, sv):
                return (f"{text}; {_state_difference(k, su, sv, native, entity_size, 'too')}")
            hook = ("global_state" if key == "global" else
                    "observe (or the boundary hook, whose instance data it may read)")
            return (f"{text}; the entity states are equal: {hook} computed it from something "
                    "else")
    if len(a.steps) != len(b.steps):
        return f"one run stopped after {min(len(a.steps), len(b.steps)) - 1} steps"
    return None


def _state_difference(k: int, u: np.ndarray, v: np.ndarray, native: NativeModel,
                      entity_size: int, too: str = "") -> str:
    """Which entity's state differs first between two instances' state bytes,
    which fields, and which hooks wrote it."""
    dt = native.state_dtype(entity_size)
    su = np.frombuffer(u.tobytes(), dtype=dt)
    sv = np.frombuffer(v.tobytes(), dtype=dt)
    e = int(np.argwhere(su.view(np.uint8).reshape(len(su), -1) !=
                        sv.view(np.uint8).reshape(len(sv), -1))[0][0])
    fields = [n for n in (dt.names or ()) if su[e][n].tobytes() != sv[e][n].tobytes()]
    what = f" (fields {', '.join(fields)})" if fields else ""
    diff = f"the state of entity {e} differs{' ' + too if too else ''}{what}"
    if k == 0:
        return f"{diff} after the reset: its init call wrote other values"
    return (f"{diff} after step {k}: its act or handle calls in that step wrote other values "
            "(or another entity's handler wrote there)")


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
    Pass("uninit", job=_uninit_job, fixes={"uninitialised": check_bounds.FIXES["uninitialised"]}),
    Pass("replay", _replay_runs, rule="hidden-state",
         what=lambda kw: "second serial run vs the first"),
    Pass("order", _order_runs, rule="order", skip=_order_skip,
         what=lambda kw: f"shuffled visiting order (threads={kw['threads']}) vs serial"),
    Pass("race", job=_race_job, job_runs=12, fixes=check_race.FIXES),
    Pass("bounds", _bounds_runs, inspect=_bounds_inspect,
         fixes={k: v for k, v in check_bounds.FIXES.items() if k != "uninitialised"}),
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


# -- the check ----------------------------------------------------------------------------


def check(
    model: Any,
    config: Mapping[str, Any] | None = None,
    *,
    steps: int | None = None,
    seeds: Iterable[int] | None = None,
    threads: Iterable[int] | None = None,
    batches: Iterable[int] | None = None,
    quick: bool = False,
    budget: float | None = None,
    memory: int | str | None = None,
    progress: bool | None = None,
    log: Callable[[str], None] | None = None,
) -> CheckReport:
    """Check a model (a [`seer_env.sdk.Model`][seer_env.sdk.Model], a registered name or a
    model folder's path) on ``config``; see the module docstring.

    ``steps``: how long the instances of a main run live (None: the model's
    episode, its max_cycles, at most `EPISODE_CAP`; with ``quick``, at
    most `QUICK_STEPS`).  Main runs reset no instance that has not
    finished; reset runs (in the matrix) reset one every
    `RESET_EVERY` steps; the replay pass runs at least a whole episode.
    ``seeds``, ``threads``, ``batches``: the runs' seeds, thread counts and
    instances per run (None: (0, 1), (1, 2, 3, 4, 8), (1, 2, 3); ``quick``:
    `QUICK`).
    ``budget``: seconds each run may take (None: `run_budget`'s default).
    ``memory``: the memory budget of the process running the model, in bytes
    or as text (``"512M"``, ``"2G"``, ``"1.5G"``: see `parse_memory`; None:
    `default_memory`, half the physical memory, at least 1 GiB); memory
    running out under it is a ``memory`` finding naming the hook that grew it
    (``check(model, memory="256M")``).
    ``progress``: show a progress bar (None: when stderr is a terminal).
    ``log(line)``: called after each run.  Raises the model's
    [`ConfigError`][seer_env.errors.ConfigError] for a bad configuration and
    KeyboardInterrupt on Ctrl-C (the child process is stopped first).
    A ``memory`` that is not a size, or above the process's hard limit on
    its data segment (``ulimit -d``), or too small to load the model in, is a
    ConfigError.
    """
    from . import sdk

    limit = _memory_budget(memory)

    m = sdk.resolve(model)
    native = m.native  # built here (a compiler error raises here), run in the child
    cfg = dict(config or {})
    episode = min(native.max_cycles or EPISODE_CAP, EPISODE_CAP)
    base: dict[str, Any] = dict(QUICK) if quick else dict(seeds=(0, 1), threads=(1, 2, 3, 4, 8),
                                                        batches=(1, 2, 3))
    for k, v in (("seeds", seeds), ("threads", threads), ("batches", batches)):
        if v is not None:
            base[k] = tuple(v)
    if steps is None:
        steps = min(episode, QUICK_STEPS) if quick else episode
    if not all(base.values()) or int(steps) < 0:
        raise ConfigError("check: seeds, threads and batches must not be empty, steps >= 0")
    with _Worker(str(m.folder), cfg, native, limit) as worker:
        return _Check(m, native, cfg, worker, budget, progress, log, limit).run(
            steps=int(steps), episode=episode, **base)


#: `default_memory`'s floor.
MEMORY_MIN = 1 << 30
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_memory(text: str) -> int:
    """A memory size in bytes: plain bytes (``"1048576"``) or a number with
    a binary unit K, M, G or T (``"512M"``, ``"2G"``, ``"1.5G"``; ``"512MiB"``
    and lower case too).  Raises ValueError for anything else and for sizes
    that are not positive."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(?:([KMGT])(?:I?B)?|B)?\s*", text.upper())
    if m is None:
        raise ValueError(f"not a memory size: {text!r} (bytes, or a number with K, M, G or T: "
                         "512M, 2G, 1.5G)")
    size = int(float(m.group(1)) * _UNITS[m.group(2) or ""])
    if size <= 0:
        raise ValueError(f"a memory size must be positive, got {text!r}")
    return size


def default_memory() -> int:
    """The checker's default memory budget in bytes: half the machine's
    physical memory, at least `MEMORY_MIN` (1 GiB), at most the soft limit
    on this process's data segment (which the checker's child inherits)."""
    try:
        half = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (OSError, ValueError):
        half = 0
    size = max(half, MEMORY_MIN)
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    for lim in (soft, hard):
        if lim != resource.RLIM_INFINITY:
            size = min(size, lim)
    return size


def _memory_budget(memory: int | str | None) -> int:
    """``check``'s ``memory``, in bytes (ConfigError when it cannot be)."""
    if memory is None:
        return default_memory()
    try:
        size = parse_memory(memory) if isinstance(memory, str) else int(memory)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"check: memory: {exc}") from None
    if size <= 0:
        raise ConfigError(f"check: memory must be a positive number of bytes, got {memory!r}")
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    if hard != resource.RLIM_INFINITY and size > hard:
        raise ConfigError(f"check: a memory budget of {_fmt_bytes(size)} is above this "
                          f"process's hard limit on its data segment, {_fmt_bytes(hard)} "
                          "(ulimit -d)")
    return size


def _fmt_bytes(n: float) -> str:
    """A size in words: 256 MiB, 1.5 GiB, 3.2 KiB, 100 bytes."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}" if n % size else f"{int(n // size)} {unit}"
    return f"{int(n)} bytes"


class _Check:
    """One check: the report it builds and the runs it asks the child for."""

    def __init__(self, m: Any, native: NativeModel, cfg: dict[str, Any], worker: _Worker,
                 budget: float | None, progress: bool | None,
                 log: Callable[[str], None] | None, memory: int | None = None) -> None:
        self.m, self.native, self.cfg, self.worker = m, native, cfg, worker
        self.budget, self.progress, self.log = budget, progress, log
        self.memory = memory  # the child's memory budget in bytes
        self.report = CheckReport(m.name, cfg)
        self.passes: dict[str, PassResult] = {}
        self.refs: set[tuple[Any, ...]] = set()  # references the child has run
        self.num_entities = 1
        self.requests = 0
        self.plan: Plan | None = None

    # -- findings ---------------------------------------------------------------

    def add(self, pass_name: str, rule: str, message: str) -> None:
        """A finding; one per rule and pass, and a message reported once."""
        p = self.passes.get(pass_name)
        if any(f.rule == rule and (f.pass_name == pass_name or f.message == message)
               for f in self.report.findings):
            if p is not None and p.status == "ok":
                p.status = "finding"
            return
        fix = next((q.fixes[rule] for q in PASSES if rule in q.fixes), FIXES.get(rule, ""))
        self.report.findings.append(Finding(rule, pass_name, message, fix))
        if p is not None:
            p.status = "finding"

    def skip_rest(self, why: str) -> None:
        """Passes that have not run yet will not."""
        for q in self.passes.values():
            if q.status == "ok" and q.runs == 0:
                q.status = f"skipped: {why}"

    # -- talking to the child -----------------------------------------------------

    def request(self, msg: dict[str, Any], budget: float) -> dict[str, Any] | _Stop:
        self.requests += 1
        msg["id"] = self.requests
        return self.worker.call(msg, budget)

    def run_budget(self, kw: Mapping[str, Any]) -> float:
        return run_budget(kw, self.num_entities, self.budget)

    # -- the check ------------------------------------------------------------------

    def run(self, *, steps: int, episode: int, seeds: tuple[int, ...],
            threads: tuple[int, ...], batches: tuple[int, ...]) -> CheckReport:
        report, native = self.report, self.native
        misnamed = _name_mismatch(self.m, native)
        if misnamed:
            self.add("table", "name", misnamed)
        desc = self.request({"op": "describe"}, max(STARTUP_BUDGET, self.budget or 0.0))
        if isinstance(desc, _Stop):
            self.passes = {p.name: PassResult(p.name) for p in PASSES}
            report.passes = list(self.passes.values())
            if desc.kind == "fork":
                self.forked(None, None, desc)
            elif self.near(desc.record.get("data", 0)) and desc.kind == "crash":
                self.out_of_memory(None, None, f"it {desc.detail} with "
                                               f"{_fmt_bytes(desc.record['data'])} in use")
                desc.kind = "memory"
            else:
                self.add("describe", desc.kind, self.stop_message(desc, "describe", None, False))
            self.skip_rest(f"the model {_STOPPED[desc.kind]} in describe")
            return report
        oom = self.ran_out(desc)
        if oom:
            self.passes = {p.name: PassResult(p.name) for p in PASSES}
            report.passes = list(self.passes.values())
            self.out_of_memory(None, None, oom)
            self.skip_rest("the model ran out of memory in describe")
            return report
        if not desc["ok"]:
            _raise_packed(desc["exc"], native.name)
        sizes = desc["sizes"]
        self.num_entities = max(sizes.num_entities, sizes.num_agents)
        report.config = desc["config"]
        plan = Plan(seeds=seeds, threads=threads, batches=batches, steps=steps,
                    episode=episode, lookahead=sizes.lookahead)
        self.passes = {p.name: PassResult(p.name) for p in PASSES}
        report.passes = list(self.passes.values())
        self.plan = plan
        todo: list[tuple[Pass, dict[str, Any] | None]] = []
        for p in PASSES:
            why = p.skip(plan)
            if why:
                self.passes[p.name].status = why
                continue
            if p.job is not None:
                todo.append((p, None))
            else:
                todo += [(p, _complete(kw, plan)) for kw in p.runs(plan)]
        deferred: list[tuple[Pass, dict[str, Any], int]] = []
        bar = _progress(len(todo), self.progress, self.m.name)
        try:
            for p, kw in todo:
                bar.set_postfix_str(p.name)
                res = self.passes[p.name]
                if res.status == "finding" or res.status.startswith("skipped"):
                    bar.update(1)
                    continue
                stopped = self.one_run(p, kw, deferred) if kw is not None else self.one_job(p)
                bar.update(1)
                if self.log:
                    self.log(f"{p.name}: {kw if kw else 'job'}")
                if stopped:
                    kind = _STOPPED[stopped]
                    for dp, _, _ in deferred:
                        if self.passes[dp.name].status == "ok":
                            self.passes[dp.name].status = f"not compared: the model {kind}"
                    break
        finally:
            bar.close()
        return report

    def one_run(self, p: Pass, kw: dict[str, Any],
                deferred: list[tuple[Pass, dict[str, Any], int]]) -> str | None:
        """Run one of a pass's runs and judge it; "crash", "hang", "fork" or
        "memory" when the model crashed, hung, forked or ran out of memory
        (the check ends there), else None."""
        res = self.passes[p.name]
        keep = p.rule is not None and p.compare_after is not None
        ref = _reference_of(kw) if p.rule is not None and not keep else None
        budget = self.run_budget(kw)
        if ref is not None and _ref_key(ref) not in self.refs:
            budget += self.run_budget(ref)
        reply = self.request({"op": "run", "driver": p.driver, "kw": kw, "ref": ref,
                              "keep": keep, "inspect": p.inspect}, budget)
        res.runs += 1
        res.steps += kw["steps"] * kw["batch"]
        if isinstance(reply, _Stop):
            return self.stopped(p, kw, reply)
        oom = self.ran_out(reply)
        if oom:
            self.out_of_memory(p, kw, oom)
            return "memory"
        if not reply["ok"]:
            _raise_packed(reply["exc"], self.native.name)
        if ref is not None and reply["error"] is None:
            self.refs.add(_ref_key(ref))
        for rule, message in reply.get("found", ()):
            self.add(p.name, rule, message)
        if reply["error"] is not None:  # this pass's own run names the breach best
            err = reply["error"]
            self.add(p.name, err["rule"], err["message"])
            if "dereferenced a NULL pointer" in err["message"]:
                self.skip_rest("a plain run would crash (NULL pointer)")
            return None
        if keep:
            deferred.append((p, kw, reply["id"]))
        elif ref is not None:
            self.judge(p, kw, reply)
        for d in [d for d in deferred if d[0].compare_after == p.name]:
            deferred.remove(d)
            dp, dkw, rid = d
            dref = _reference_of(dkw)
            budget = 0.0 if _ref_key(dref) in self.refs else self.run_budget(dref)
            reply = self.request({"op": "compare", "run": rid, "ref": dref},
                                 budget + BUDGET_BASE)
            if isinstance(reply, _Stop):
                return self.stopped(dp, dkw, reply)
            oom = self.ran_out(reply)
            if oom:
                self.out_of_memory(dp, dref, oom, reference=True)
                return "memory"
            if not reply["ok"]:
                _raise_packed(reply["exc"], self.native.name)
            self.refs.add(_ref_key(dref))
            self.judge(dp, dkw, reply)
        return None

    def one_job(self, p: Pass) -> str | None:
        """Run a pass that is one function (``Pass.job``)."""
        plan = self.plan
        assert plan is not None
        budget = p.job_runs * self.run_budget(dict(steps=plan.steps, batch=2))
        reply = self.request({"op": "job", "job": p.job, "plan": plan}, budget)
        res = self.passes[p.name]
        if isinstance(reply, _Stop):
            res.runs += 1
            return self.stopped(p, None, reply)
        oom = self.ran_out(reply)
        if oom:
            res.runs += 1
            self.out_of_memory(p, None, oom)
            return "memory"
        if not reply["ok"]:
            _raise_packed(reply["exc"], self.native.name)
        out: JobOutcome = reply["outcome"]
        res.runs += out.runs
        res.steps += out.steps
        if out.status:
            res.status = out.status
        for rule, message in out.findings:
            self.add(p.name, rule, message)
        return None

    def judge(self, p: Pass, kw: dict[str, Any], reply: dict[str, Any]) -> None:
        """A run compared with its serial reference."""
        res = self.passes[p.name]
        if reply["ref_error"] is not None:  # the plain serial run fails (a schedule rule)
            self.add(p.name, reply["ref_error"]["rule"], reply["ref_error"]["message"])
            return
        if "uninitialised" in self.report.rules():
            # outputs made of bytes nobody wrote differ between any two runs
            if res.status == "ok":
                res.status = "compared: uninitialised reads (uninit)"
            return
        if "hidden-state" in self.report.rules() and p.name != "replay":
            if res.status == "ok":
                res.status = "compared: not reproducible (replay)"
            return
        if reply["diff"] is not None and p.rule is not None:
            self.add(p.name, p.rule, f"model '{self.native.name}': {p.what(kw)}: first "
                                     f"difference at {reply['diff']}")

    # -- crashes and hangs ------------------------------------------------------------

    def stopped(self, p: Pass, kw: dict[str, Any] | None, stop: _Stop) -> str:
        """The child died or ran past its budget during one of p's runs (or
        its job, kw None); returns how it stopped (a key of `_STOPPED`): a
        death with memory near the budget is "memory"."""
        rec = stop.record
        if stop.kind == "fork":
            self.forked(p, kw, stop)
            self.skip_rest(f"the model forked ({p.name})")
            return stop.kind
        if stop.kind == "crash" and self.near(rec.get("data", 0)):
            self.out_of_memory(p, kw, f"it {stop.detail} with {_fmt_bytes(rec['data'])} in use",
                               reference=rec.get("phase") == 2)
            return "memory"
        checked = kw is not None and bool(kw.get("check", 0) & 1) and rec.get("phase") == 1
        message = self.stop_message(stop, p.name, kw, checked)
        breach = None
        if (kw is not None and not checked and rec.get("phase") in (1, 2)
                and rec.get("stage") != CREATE and not self.host_text(rec)):
            text, breach = self.locate(kw, rec, stop.kind, stop.detail)
            message += text
        self.add(p.name, stop.kind, message)
        if breach is not None:  # what the checking mode found on the way there
            self.add(p.name, breach["rule"], breach["message"])
        self.skip_rest(f"the model {_STOPPED[stop.kind]} ({p.name})")
        return stop.kind

    # -- memory ------------------------------------------------------------------------

    def near(self, used: int) -> bool:
        """Memory in use within budget / `_NEAR` of the budget."""
        m = self.memory
        return m is not None and used >= m - m // _NEAR

    def ran_out(self, reply: dict[str, Any]) -> str | None:
        """How a reply says the child ran out of memory, in words (None: it
        did not): a MemoryError, the runtime's OutOfMemoryError (in the run,
        its reference run, or the request itself), or memory left near the
        budget after the request."""
        for err in (reply.get("exc") if not reply.get("ok") else None,
                    reply.get("error"), reply.get("ref_error")):
            if err and (err.get("memory") or err.get("rule") == "memory"):
                text = re.sub(r"\s+", " ", err["message"]).strip()
                if len(text) > 160:
                    text = text[:157].rstrip() + "..."
                return f"{err['type']}: {text}" if text else err["type"]
        if self.near(reply.get("data", 0)):
            return f"{_fmt_bytes(reply['data'])} in use at its end"
        return None

    def out_of_memory(self, p: Pass | None, kw: dict[str, Any] | None, what: str,
                      reference: bool = False) -> None:
        """The child ran out of memory during one of p's runs (or its job, kw
        None; or describe, p None): a ``memory`` finding naming the budget,
        ``what`` said so, and the hook during which memory grew most in a
        serial rerun in a new child with every hook watched."""
        self.worker.kill()  # its memory is spent: the rerun gets a new child
        name = p.name if p is not None else "describe"
        if kw is None:
            run = "loading the model and calling describe" if p is None else \
                f"the {name} pass"
        else:
            run = _run_text(name, kw, reference=reference)
        grew = self.growth_text(kw)
        self.add(name, "memory", f"model '{self.native.name}': the process running the model "
                                 f"ran out of its memory budget of {_fmt_bytes(self.memory or 0)}"
                                 f" in {run}: {what}; {grew}")
        self.worker.kill()
        if p is not None:
            self.skip_rest(f"the model ran out of memory ({name})")

    def growth_text(self, kw: dict[str, Any] | None) -> str:
        """A serial rerun of a run (kw; None: a run of the plan) in a new
        child, every hook watched for memory: the hook during which memory
        grew most, in words."""
        plan = self.plan
        if plan is None:
            return "the hook that grew it is not known (the model's configuration never ran)"
        again = dict(_complete(kw or {"executor": "serial", "batch": 2,
                                      "seed": plan.seeds[0], "steps": max(plan.steps, 1)},
                               plan),
                     executor="serial", threads=1, check=0, shuffle_seed=0)
        reply = self.request({"op": "run", "driver": run_model, "kw": again, "ref": None,
                              "keep": False, "watch": "memory"}, self.run_budget(again))
        table = self.worker.rec.growth()
        self.worker.kill()
        rerun = "a serial rerun with every hook watched"
        best = max(range(len(table)), key=lambda i: table[i][0])
        total, calls, grown, most, who = table[best]
        if total < (1 << 20) and isinstance(reply, _Stop):
            return (f"in {rerun}, the process {reply.detail or 'did not finish'} before any "
                    "hook's calls grew memory")
        if total < (1 << 20):  # noise: the interpreter's own pools
            return (f"no hook's calls grew memory in {rerun} (so it grew outside them: memory "
                    "the model allocates in describe or outside its hooks, or the checker's)")
        hook = _ALL_HOOKS[best]
        whom = ("agent" if hook in ("observe", "act", "action_mask") else
                "instance" if hook in ("boundary", "global_state") else "entity")
        return (f"in {rerun}, memory grew most in {hook}: by {_fmt_bytes(total)} in {grown} of "
                f"its {calls} calls, by {_fmt_bytes(most)} in the largest ({hook} for {whom} "
                f"{who})")

    def forked(self, p: Pass | None, kw: dict[str, Any] | None, stop: _Stop) -> None:
        """A model hook made a copy of the child (fork()) during one of p's
        runs (or its job, kw None; or describe, p None): a ``fork`` finding
        naming the hook, from a serial rerun whose every hook is watched."""
        rec = stop.record
        name = p.name if p is not None else "describe"
        model = f"model '{self.native.name}': "
        where = self.fork_text(rec.get("fork", ()))
        if where is None and self.plan is not None:
            again = dict(_complete(kw or {"executor": "serial", "batch": 2,
                                          "seed": self.plan.seeds[0]}, self.plan),
                         executor="serial", threads=1, check=0, shuffle_seed=0)
            note = rec.get("fork", ())
            if note and note[0] and note[3] in (1, 2):  # the copy's run and step are known
                again["steps"] = max(1, int(note[2]))
            reply = self.request({"op": "run", "driver": run_model, "kw": again, "ref": None,
                                  "keep": False, "watch": True}, self.run_budget(again))
            if isinstance(reply, _Stop):
                where = self.fork_text(reply.record.get("fork", ()), rerun=True)
        if kw is None:
            run = "loading the model and calling describe" if p is None else \
                f"the {name} pass"
        else:
            run = _run_text(name, kw, reference=rec.get("phase") == 2)
        copies = f" ({stop.detail})" if stop.detail else ""
        hook = f": {where}" if where else " (which one is not known)"
        self.add(name, "fork", f"{model}a hook called fork() in {run}{hook}; the copy of the "
                               f"process running the model went on running it, and the "
                               f"checker stopped every process it made{copies}")

    def fork_text(self, note: Sequence[int], rerun: bool = False) -> str | None:
        """The hook a fork note names, in words (None: not known)."""
        if not note or not note[0] or not note[5]:
            return None
        hook = _ALL_HOOKS[note[5] - 1]
        who = ("agent" if hook in ("observe", "act", "action_mask") else
               "instance" if hook in ("boundary", "global_state") else
               "entity" if hook in _HOOKS else "group" if "group" in hook or
               hook == "action_nvec" else "")
        text = f"{hook}" + (f" for {who} {note[6]}" if who else "")
        if note[3] in (1, 2):
            text += (f" (step {note[2]} of a serial rerun with every hook watched)" if rerun
                     else f" (step {note[2]})")
        return text

    def locate(self, kw: dict[str, Any], rec: dict[str, Any], kind: str, detail: str
               ) -> tuple[str, dict[str, Any] | None]:
        """Rerun a plain run's steps up to where it stopped on the serial
        executor in checking mode, whose record names the handler: what it
        says, and the breach it stopped at first (if any)."""
        again = dict(kw, executor="serial", threads=1, check=1, shuffle_seed=0,
                     steps=max(1, int(rec.get("step", 0))))
        reply = self.request({"op": "run", "driver": run_model, "kw": again, "ref": None,
                              "keep": False}, self.run_budget(again))
        if isinstance(reply, _Stop):
            where = self.handler_text(reply.record, reply.record.get("phase") == 1)
            what = ("did not finish either" if reply.kind == "hang" else
                    "died the same way" if reply.detail == detail else reply.detail)
            return (f"; a serial rerun in checking mode {what}" +
                    (f", in {where}" if where else ""), None)
        if not reply["ok"]:
            return "", None
        if reply["error"] is not None:
            return (f"; a serial rerun in checking mode stopped before, at a "
                    f"[{reply['error']['rule']}] breach", reply["error"])
        verb = "crash" if kind == "crash" else "hang"
        return (f"; a serial rerun in checking mode of those steps did not {verb}"
                + (f" (it depends on the {kw['executor']} executor or the threads)"
                   if kw["executor"] != "serial" else ""), None)

    def host_text(self, rec: dict[str, Any]) -> str | None:
        """The hook the child called itself (a hook on the configuration, or
        global_state), running when it stopped, in words (None: none)."""
        host = int(rec.get("host", 0))
        if not 0 < host <= len(_ALL_HOOKS):
            return None
        hook, arg = _ALL_HOOKS[host - 1], int(rec.get("host_arg", 0))
        if hook == "global_state":
            return f"the global_state hook of instance {arg} (called by the checker)"
        if hook in ("group", "group_obs_bounds", "action_nvec"):
            return f"the {hook} hook of group {arg} (called by the checker)"
        return f"the {hook} hook (called by the checker)"

    def handler_text(self, rec: dict[str, Any], checked: bool) -> str | None:
        """The checked handler call in a record, in words (None: unknown)."""
        if not checked or not rec.get("calls"):
            return None
        hook, inst, ent = rec["hook"], rec["instance"], rec["entity"]
        t = _fmt_time(rec["now"])
        name = _HOOKS[hook] if hook < len(_HOOKS) else "?"
        if name == "handle":
            ev = self.native.event_name(rec["type"])
            return (f"handle for entity {ent} of instance {inst} (event type {rec['type']}, "
                    f"{ev}, at t={t})")
        if name in ("boundary", "global_state"):
            return f"{name} of instance {inst} (t={t})"
        who = "agent" if name in ("observe", "act", "action_mask") else "entity"
        return f"{name} for {who} {ent} of instance {inst} (t={t})"

    def stop_message(self, stop: _Stop, pass_name: str, kw: dict[str, Any] | None,
                     checked: bool) -> str:
        rec = stop.record
        model = f"model '{self.native.name}': "
        host = self.host_text(rec)
        if rec.get("phase") == 3 or kw is None or rec.get("phase") not in (1, 2):
            doing = (f"the {pass_name} pass" if rec.get("phase") == 3
                     else "loading the model and calling describe")
            if stop.kind == "crash":
                return (f"{model}the process running the model {stop.detail} "
                        + (f"in {host}, " if host else "")
                        + ("in " if rec.get("phase") == 3 else "while ") + doing)
            if host:
                return (f"{model}{host} did not return within the time budget of "
                        f"{_fmt_s(stop.budget)} s, in {doing}; the process running it was "
                        "stopped")
            return (f"{model}{doing} did not finish within "
                    + ("its time budget of " if rec.get("phase") == 3 else "")
                    + f"{_fmt_s(stop.budget)} s; the process running "
                    + ("it was stopped" if rec.get("phase") == 3 else "the model was stopped"))
        run = _run_text(pass_name, kw, reference=rec["phase"] == 2)
        k, stage = int(rec["step"]), rec["stage"]
        where = {CREATE: "while creating its runtime",
                 RESET: "in the reset at the start" if k == 0 else f"in the reset after step {k}",
                 STEP: f"in step {k}",
                 OUTPUTS: "reading the outputs at the start" if k == 0
                 else f"reading the outputs of step {k}",
                 INSPECT: f"checking the outputs of its {k} steps"}.get(stage, "")
        handler = self.handler_text(rec, checked)
        if host:  # a hook the child called itself, running when the process stopped
            handler, rec = host, dict(rec, running=1, advancing=False)
        if stop.kind == "crash":
            msg = f"{model}the process running the model {stop.detail}"
            if handler and rec["running"]:
                return msg + f" in {handler}, {where} of {run}"
            msg += f" {where} of {run}"
            if handler:
                msg += f" (the last handler called, {handler}, had returned)"
            return msg
        budget = f"{_fmt_s(stop.budget)} s"
        if handler and rec["running"] and not rec.get("advancing"):
            return (f"{model}{handler} did not return within the run's time budget of {budget}, "
                    f"{where} of {run}; the process running it was stopped")
        msg = f"{model}{run} did not finish within its time budget of {budget}: it was {where}"
        if handler and rec.get("advancing"):
            msg += (f", still calling handlers ({rec['calls']} calls, the last {handler}), as "
                    "when events are scheduled at one simulated time without end")
        elif handler:
            msg += f" (the last handler called, {handler}, had returned)"
        elif rec.get("advancing"):
            msg += ", still advancing: the model may only be slow"
        return msg + "; the process running it was stopped"


#: The hooks the runtime's checking mode names (enum seer_hook), then the
#: hooks on a configuration only, which the host calls (seer_model_*).
#: A stop's kind in words.
_STOPPED = {"crash": "crashed", "hang": "hung", "fork": "forked",
            "memory": "ran out of memory"}

_HOOKS = ("init", "act", "handle", "boundary", "observe", "publish", "global_state",
          "action_mask")
_ALL_HOOKS = _HOOKS + ("describe", "group", "action_nvec", "obs_bounds", "group_obs_bounds",
                       "state_bounds", "agent_name")


def _name_mismatch(m: Any, native: NativeModel) -> str | None:
    """A finding's message when the C table names the model otherwise than
    its declaration (a shipped env NAME_vN may keep NAME)."""
    if native.name == m.name or re.fullmatch(rf"{re.escape(native.name)}_v\d+", m.name):
        return None
    return (f"model '{m.name}' ({m.folder}): its C table's .name is '{native.name}', so every "
            f"runtime message, and every finding below, names model '{native.name}'")


def _fmt_time(v: float) -> str:
    """A simulated time as the runtime writes it (seer_fmt_double)."""
    if not math.isfinite(v):
        return repr(v)
    if v == int(v) and abs(v) < 1e15:
        return f"{v:.0f}"
    for prec in range(6, 18):
        s = f"{v:.{prec}g}"
        if float(s) == v:
            return s
    return repr(v)


def _fmt_s(v: float) -> str:
    return f"{v:g}"


def _raise_packed(exc: dict[str, Any], model_name: str) -> None:
    """Raise, in the checker, an exception the child process packed."""
    cls = getattr(errors, exc["type"], None)
    if isinstance(cls, type) and issubclass(cls, SeerError):
        msg = exc["message"]
        if not re.search(rf"(?<![\w]){re.escape(model_name)}(?![\w])", msg):
            msg = f"model '{model_name}': {msg}"
        raise cls(msg)
    raise RuntimeError(f"the contract checker's child process failed:\n{exc['traceback']}")


def _progress(total: int, enabled: bool | None, name: str) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return _NoBar()
    return tqdm(total=total, desc=f"check {name}", unit="run", disable=(
        None if enabled is None else not enabled), leave=False)


class _NoBar:  # pragma: no cover
    def set_postfix_str(self, s: str) -> None:
        pass

    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


# -- the child process ------------------------------------------------------------------
#
# The checker (parent) and its child talk over a socket pair: length-prefixed
# pickles, one request, one reply.  The progress record is a small file both
# map: the child's Python notes which request, run, step and stage it is in
# (_PY), the runtime's checking mode which handler call it makes (_C_REC at
# _C_OFFSET: struct progress_rec of runtime/check.c, which maps the file named
# by SEER_CHECK_PROGRESS).  The checker reads it once the child has died or
# has been killed for running past its budget.

_PY = struct.Struct("<QqIIII")  # request id, step, phase (1 run, 2 reference), stage,
#                                 the host hook running (1 + index in _ALL_HOOKS), its argument
_HOST = struct.Struct("<II")  # the last two fields of _PY
_HOST_AT = _PY.size - _HOST.size
_C_REC = struct.Struct("<QQd6I")  # calls, step, now, hook, running, instance, entity, type, -
_C_FIELDS = ("calls", "instance_step", "now", "hook", "running", "instance", "entity", "type")
_C_OFFSET = 64
_REC_SIZE = 4096
#: Where the first copy of the child a model's fork() made found itself:
#: its pid, then _PY's first four fields as that copy last noted them, the
#: hook (1 + index in _ALL_HOOKS; 0: not known) and its agent or argument.
_FORK = struct.Struct("<qQqIIII")
_FORK_AT = 512
#: The most the child's data segment held during the request (in bytes; as
#: noted with where it is, _PY, and every `_SAMPLE` seconds).
_DATA = struct.Struct("<Q")
_DATA_AT = 1024
#: Per hook of _ALL_HOOKS, in a serial rerun whose hooks are watched for
#: memory: the data segment's net growth over its calls, its calls, the calls
#: it grew in, the largest growth of one call and that call's agent or entity.
_GROW = struct.Struct("<qQQqq")
_GROW_AT = 1088
_LEN = struct.Struct("<Q")
_RESAMPLE = 0.25  # seconds between two looks at a run past its budget


def _send(sock: socket.socket, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_LEN.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError("the other process closed the connection")
        buf += chunk
    return bytes(buf)


def _recv(sock: socket.socket) -> Any:
    n, = _LEN.unpack(_recv_exact(sock, _LEN.size))
    return pickle.loads(_recv_exact(sock, n))


class _Record:
    """The progress record: a file of its own, unlinked at once (nothing is
    left behind, whatever happens to the processes), shared by descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.mm = mmap.mmap(fd, _REC_SIZE)

    @classmethod
    def create(cls) -> _Record:
        shm = "/dev/shm"
        fd, path = tempfile.mkstemp(prefix="seer-check-", suffix=".rec",
                                    dir=shm if os.path.isdir(shm) and os.access(shm, os.W_OK)
                                    else None)
        os.unlink(path)
        try:
            os.ftruncate(fd, _REC_SIZE)
            return cls(fd)
        except BaseException:
            os.close(fd)
            raise

    def note(self, req: int, step: int, phase: int, stage: int) -> None:
        _leave_if_forked(self)
        _WHERE[:] = (req, step, phase, stage)
        _PY.pack_into(self.mm, 0, req, step, phase, stage, 0, 0)
        self.seen(check_bounds.data_bytes(), new=phase == 0)

    def seen(self, data: int, new: bool = False) -> None:
        """The data segment holds ``data`` bytes (``new``: a request starts)."""
        if new or data > _DATA.unpack_from(self.mm, _DATA_AT)[0]:
            _DATA.pack_into(self.mm, _DATA_AT, data)

    def grew(self, hook: int, by: int, who: int) -> None:
        """A call of a hook (index in _ALL_HOOKS) for ``who`` grew the data
        segment ``by`` bytes (negative: shrank it)."""
        at = _GROW_AT + hook * _GROW.size
        total, calls, grown, most, most_who = _GROW.unpack_from(self.mm, at)
        if by > 0:
            grown += 1
            if by > most:
                most, most_who = by, who
        _GROW.pack_into(self.mm, at, total + by, calls + 1, grown, most, most_who)

    def growth(self) -> list[tuple[int, ...]]:
        """`grew`'s table: per hook of _ALL_HOOKS, (net growth, calls, calls
        that grew it, the largest growth, its agent or entity)."""
        return [_GROW.unpack_from(self.mm, _GROW_AT + i * _GROW.size)
                for i in range(len(_ALL_HOOKS))]

    def forked(self) -> tuple[int, ...]:
        """The fork note: (pid, request, step, phase, stage, hook, arg); pid 0: none."""
        return _FORK.unpack_from(self.mm, _FORK_AT)

    def clear_fork(self) -> None:
        _FORK.pack_into(self.mm, _FORK_AT, *([0] * 7))

    def host(self, hook: int, arg: int = 0) -> None:
        """The model hook the child calls itself (1 + index in _ALL_HOOKS; 0: none)."""
        _HOST.pack_into(self.mm, _HOST_AT, hook, arg)

    def clear(self, c_part_only: bool = False) -> None:
        if c_part_only:
            self.mm[_C_OFFSET:_C_OFFSET + _C_REC.size] = bytes(_C_REC.size)
        else:
            self.mm[:] = bytes(_REC_SIZE)

    def read(self) -> dict[str, Any]:
        req, step, phase, stage, host, host_arg = _PY.unpack_from(self.mm, 0)
        c = dict(zip(_C_FIELDS, _C_REC.unpack_from(self.mm, _C_OFFSET), strict=False))
        return dict(request=req, step=step, phase=phase, stage=stage, host=host,
                    host_arg=host_arg, data=_DATA.unpack_from(self.mm, _DATA_AT)[0], **c)

    def close(self) -> None:
        self.mm.close()
        os.close(self.fd)


@dataclass
class _Stop:
    """The child died ("crash") or was killed past its budget ("hang")."""

    kind: str
    detail: str  # "died of SIGSEGV (...)", "exited with status 3", "" for a hang
    record: dict[str, Any]
    budget: float


def _death(code: int) -> str:
    if code < 0:
        try:
            sig = signal.Signals(-code)
        except ValueError:
            return f"died of signal {-code}"
        what = signal.strsignal(sig) or sig.name
        if sig == signal.SIGABRT:
            what += ": abort() or a failed assert()"
        return f"died of {sig.name} ({what})"
    return f"exited with status {code} (exit() called?)"


class _Worker:
    """The checker's child process: started on first use, again after it
    died or was killed; stopped (killed if need be) by `close`."""

    def __init__(self, folder: str, config: dict[str, Any], native: NativeModel,
                 memory: int | None = None) -> None:
        self.folder, self.config, self.native = folder, config, native
        self.memory = memory  # the child's memory budget in bytes (None: none)
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.sel: selectors.BaseSelector | None = None
        self.rec = _Record.create()

    def __enter__(self) -> _Worker:
        return self

    def __exit__(self, kind: Any, *exc: Any) -> None:
        if kind is not None:  # an error, Ctrl-C: no goodbyes
            self.kill()
        self.close()

    def _start(self) -> None:
        self.rec.clear()
        ours, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("_check_child.py")),
                 str(theirs.fileno())],
                pass_fds=(theirs.fileno(), self.rec.fd), stdin=subprocess.DEVNULL,
                env=dict(os.environ, SEER_CHECK_PROGRESS=f"fd:{self.rec.fd}"),
                start_new_session=True)  # Ctrl-C reaches the checker, which kills it
        finally:
            theirs.close()
        self.sock = ours
        self.sel = selectors.DefaultSelector()
        self.sel.register(ours, selectors.EVENT_READ)
        _send(ours, {"sys_path": list(sys.path), "folder": self.folder, "config": self.config,
                     "record": self.rec.fd, "parent": os.getpid(), "memory": self.memory})

    def call(self, msg: dict[str, Any], budget: float) -> dict[str, Any] | _Stop:
        """Send a request and wait for its reply at most ``budget`` seconds
        (plus the child's start when there is none)."""
        startup = 0.0
        if self.proc is None:
            self._start()
            startup = STARTUP_BUDGET
        assert self.proc is not None and self.sock is not None
        try:
            _send(self.sock, msg)
        except OSError:
            return self._died(budget)
        deadline = time.monotonic() + budget + startup
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                before = self.rec.read()
                time.sleep(_RESAMPLE)  # do handler calls still start and return?
                rec = self.rec.read()
                self.kill()
                rec["advancing"] = (rec["calls"], rec["step"]) != (before["calls"],
                                                                   before["step"])
                return _Stop("hang", "", rec, budget)
            assert self.sel is not None
            if self.sel.select(min(left, 1.0)):
                try:
                    reply = _recv(self.sock)
                except (EOFError, OSError):
                    return self._died(budget)
                if reply.get("pid") != self.proc.pid or not (
                        reply.get("ready") or reply.get("id") == msg.get("id")):
                    # not the child's answer to this request: a copy of it
                    # (the model's fork()) wrote too
                    return self._forked(budget)
                if reply.get("ready"):  # the child started: the request's budget starts now
                    deadline = time.monotonic() + budget
                    continue
                if reply.get("forked") or self.rec.forked()[0]:
                    return self._forked(budget, len(reply.get("forked", ())))
                return reply
            if self.proc.poll() is not None:
                return self._died(budget)

    def _forked(self, budget: float, copies: int = 0) -> _Stop:
        """A model hook made copies of the child (fork()): every process of
        its group is stopped."""
        rec = self.rec.read()
        rec["fork"] = self.rec.forked()
        self.kill()
        return _Stop("fork", f"{copies} process(es)" if copies else "", rec, budget)

    def _died(self, budget: float) -> _Stop:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        rec = self.rec.read()
        self.kill()  # what it left behind (copies a model's fork() made)
        return _Stop("crash", _death(code), rec, budget)

    def kill(self) -> None:
        """Stop the child and every process of its group (it leads one: any
        copy a model's fork() made is in it), whatever they are doing."""
        if self.proc is not None:
            # the group's id stays taken while any process is in it
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.proc.kill()
            self.proc.wait()
        self._forget()

    def _forget(self) -> None:
        if self.sel is not None:
            self.sel.close()
        if self.sock is not None:
            self.sock.close()
        self.proc = self.sock = self.sel = None

    def close(self) -> None:
        try:
            if self.proc is not None and self.sock is not None:
                with contextlib.suppress(OSError):
                    _send(self.sock, {"op": "stop"})
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            self.kill()  # also on KeyboardInterrupt during the wait above
            self.rec.close()


#: In the checker's child: its process id (a copy a model's fork() made has
#: another), and where it is as it last noted it (request, step, phase,
#: stage), in the process's own memory.
_CHILD_PID = 0
_WHERE = [0, 0, 0, 0]
#: Memory near the budget: within budget / _NEAR of it.
_NEAR = 8
#: In a run watched for memory: the data segment came near the budget.
_ENOUGH = [False]
#: In the checker's child: memory kept back, given up when memory runs out
#: so that the reply can still be made (reserved, never touched).
_RESERVE: list[mmap.mmap] = []


class _Enough(Exception):
    """A run watched for memory stops: its memory came near the budget."""


def _release_reserve() -> None:
    for m in _RESERVE:
        m.close()
    _RESERVE.clear()


def _leave_if_forked(rec: _Record | None, hook: str | None = None, arg: int = 0) -> None:
    """In a copy of the checker's child that a model hook's fork() made: note
    where it found itself (the first copy only; ``hook``: the hook that just
    returned, if known) and end it at once, before it answers a request or
    reads one (both copies read and wrote the one connection)."""
    if not _CHILD_PID or os.getpid() == _CHILD_PID:
        return
    with contextlib.suppress(Exception):
        if rec is not None and rec.forked()[0] == 0:
            _FORK.pack_into(rec.mm, _FORK_AT, os.getpid(), *_WHERE,
                            1 + _ALL_HOOKS.index(hook) if hook else 0, arg)
    os._exit(0)


def _children() -> list[int]:
    """The processes this one made that are still there (zombies reaped)."""
    pids: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as f:
                pids += [int(x) for x in f.read().split()]
    for pid in pids:
        with contextlib.suppress(OSError):
            os.waitpid(pid, os.WNOHANG)
    return pids


def _host_calls(rec: _Record) -> Callable[[str, int, Callable[[], Any]], Any]:
    """What runs around each host function that calls a model hook
    (`NativeModel.watch_host_calls`): the hook is noted in the progress
    record while it runs, so that one which crashes the process or never
    returns is named, whichever code called it (the bounds pass, a job, a
    run's outputs); a copy of the process that a fork() in it made ends."""
    def around(hook: str, arg: int, call: Callable[[], Any]) -> Any:
        rec.host(1 + _ALL_HOOKS.index(hook), arg)
        try:
            return call()
        finally:
            _leave_if_forked(rec, hook, arg)
            rec.host(0)
    return around


def _watched(native: NativeModel, rec: _Record, memory: bool = False) -> NativeModel:
    """A copy of the model's table (`NativeModel.with_every_hook`) whose every
    hook that runs with a context is a Python function around the model's own:
    a copy of the process that returns from it (the hook called fork())
    notes the hook and ends.  ``memory``: each call's growth of the data
    segment is noted too (`_Record.grew`), and once it is within
    `_NEAR` of the budget the run stops at its next stage (`_Enough`).
    Slow; for the serial reruns that name a hook."""
    data = check_bounds.data_bytes
    budget = check_bounds.data_budget()
    near = budget - budget // _NEAR if budget else 1 << 62

    def hook(name: str, call: Callable[[], Any], who: Callable[[], int]) -> Any:
        out = call()
        if os.getpid() != _CHILD_PID:
            _leave_if_forked(rec, name, who())
        return out

    def grows(name: str, call: Callable[[], Any], who: Callable[[], int]) -> Any:
        before = data()
        out = call()
        after = data()
        if os.getpid() != _CHILD_PID:
            _leave_if_forked(rec, name, who())
        rec.grew(_ALL_HOOKS.index(name), after - before, who())
        if after >= near:
            _ENOUGH[0] = True
        return out

    return native.with_every_hook(grows if memory else hook, hooks=_HOOKS)


class _Child:
    """What the child process does for the checker."""

    def __init__(self, native: NativeModel, config: dict[str, Any], rec: _Record) -> None:
        self.native, self.config, self.rec = native, config, rec
        self.refs: dict[tuple[Any, ...], _Run] = {}
        self.kept: dict[int, _Run] = {}
        self.entity_size = 0
        self.sizes: Any = None
        self.names: list[str] = []

    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        op = msg["op"]
        self.req = int(msg["id"])
        self.rec.note(self.req, 0, 0, 0)
        if op == "describe":
            native = self.native
            buf, sizes = native.describe(self.config)
            self.entity_size = sizes.entity_size
            self.sizes = sizes
            self.names = native.agent_names(buf, sizes.num_agents, sizes)
            return {"ok": True, "sizes": sizes, "config": native.read_config(buf)}
        if op == "run":
            if msg.get("watch") == "memory":  # each hook's growth noted in the record
                native = self.native
                self.native = _watched(native, self.rec, memory=True)
                _ENOUGH[0] = False
                try:
                    got = self._run(msg["driver"], msg["kw"], 1)
                except _Enough:
                    return {"ok": True, "id": self.req, "error": None, "steps": _WHERE[1]}
                finally:
                    self.native = native
                    _release_reserve()
                return {"ok": True, "id": self.req, "error": self._error(got.error),
                        "steps": len(got.steps) - 1}
            if msg.get("watch"):  # every hook a Python function that watches it
                native = self.native
                self.native = _watched(native, self.rec)
                try:
                    got = self._run(msg["driver"], msg["kw"], 1)
                finally:
                    self.native = native
            else:
                got = self._run(msg["driver"], msg["kw"], 1)
            out: dict[str, Any] = {"ok": True, "id": self.req, "error": self._error(got.error),
                                   "steps": len(got.steps) - 1}
            if msg["keep"] and got.error is None:
                self.kept[self.req] = got
            if msg.get("inspect") is not None and got.error is None:
                self.rec.note(self.req, len(got.steps) - 1, 1, INSPECT)
                out["found"] = [(str(r), str(m)) for r, m in
                                msg["inspect"](self.native, self.config, got)]
            if msg["ref"] is not None and got.error is None:
                out.update(self._compare(got, msg["ref"]))
            return out
        if op == "compare":
            return {"ok": True, **self._compare(self.kept.pop(msg["run"]), msg["ref"])}
        if op == "job":
            self.rec.note(self.req, 0, 3, 0)
            ctx = JobContext(self.native, dict(self.config), msg["plan"], list(self.names),
                             self.sizes, lambda k: self.rec.note(self.req, k, 3, STEP))
            return {"ok": True, "outcome": msg["job"](ctx)}
        raise ValueError(f"unknown request {op!r}")

    def _run(self, driver: Callable[..., _Run], kw: dict[str, Any], phase: int) -> _Run:
        req, rec = self.req, self.rec
        rec.clear(c_part_only=True)

        def note(k: int, stage: int) -> None:
            rec.note(req, k, phase, stage)
            if _ENOUGH[0]:
                raise _Enough

        return driver(self.native, self.config, progress=note, **kw)

    def _compare(self, got: _Run, ref_kw: dict[str, Any]) -> dict[str, Any]:
        key = _ref_key(ref_kw)
        if key not in self.refs:
            self.refs[key] = self._run(run_model, ref_kw, 2)
        ref = self.refs[key]
        if ref.error is not None:
            return {"ref_error": self._error(ref.error), "diff": None}
        return {"ref_error": None,
                "diff": first_difference(ref, got, self.native, self.entity_size, self.names)}

    def _error(self, exc: BaseException | None) -> dict[str, Any] | None:
        if exc is None:
            return None
        return {"type": type(exc).__name__, "rule": classify(exc),
                "message": explain(exc, self.native)}


def _pack_exc(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, MemoryError):
        _release_reserve()  # room for the traceback and the reply
    return {"type": type(exc).__name__, "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc)),
            "memory": isinstance(exc, MemoryError)}


def _watch_parent(parent: int) -> None:
    """End this process when the checker is gone (killed without a chance to
    stop it): at once on Linux, else within a second."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="seer-check-watch", daemon=True).start()


def _exit_now() -> None:
    """Leave at once (the interpreter's teardown of a loaded model takes a
    while), with what the model printed flushed."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).fflush(None)
    os._exit(0)


def _set_budget(budget: int, name: str) -> None:
    """In the checker's child, the model loaded: its memory budget (see the
    module docstring), with `_RESERVE` inside it."""
    _RESERVE.append(mmap.mmap(-1, _RESERVE_BYTES))
    used = check_bounds.data_bytes()
    if used >= budget - budget // _NEAR:
        raise ConfigError(f"model '{name}': the memory budget of {_fmt_bytes(budget)} is too "
                          f"small: the process running the model had {_fmt_bytes(used)} in "
                          f"use once the model was loaded, and memory within "
                          f"{_fmt_bytes(budget // _NEAR)} of the budget counts as run out; "
                          f"raise it (--memory SIZE, check(memory=...))")
    try:
        check_bounds.set_data_budget(budget)
    except ValueError as exc:
        raise ConfigError(f"model '{name}': the memory budget: {exc}") from None


#: The size of `_RESERVE`.
_RESERVE_BYTES = 8 << 20
#: Seconds between two looks at the child's memory (`_sample_memory`).
_SAMPLE = 0.005


def _sample_memory(rec: _Record) -> None:
    """In the checker's child: a thread that notes the data segment in the
    record every `_SAMPLE` seconds (cffi lets it run while the model does),
    so that a death with memory near the budget is known as such."""
    def sample() -> None:
        while True:
            time.sleep(_SAMPLE)
            rec.seen(check_bounds.data_bytes())

    threading.Thread(target=sample, name="seer-check-memory", daemon=True).start()


def _child_main(fd: int) -> None:
    """The child process (``python -m seer_env._check_child FD``)."""
    global _CHILD_PID
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the checker handles Ctrl-C
    _CHILD_PID = os.getpid()
    sock = socket.socket(fileno=fd)
    setup = _recv(sock)
    _watch_parent(setup["parent"])
    for p in setup["sys_path"]:
        if p not in sys.path:
            sys.path.append(p)
    try:
        first = _recv(sock)
    except EOFError:
        return
    try:
        from . import sdk

        native = sdk.load(setup["folder"], build=False).native
        rec = _Record(setup["record"])
        native.watch_host_calls(_host_calls(rec))
        child = _Child(native, setup["config"], rec)
        if setup.get("memory"):
            _set_budget(int(setup["memory"]), native.name)
            _sample_memory(rec)
    except BaseException as exc:  # noqa: BLE001 - reported to the checker
        _send(sock, {"ok": False, "exc": _pack_exc(exc), "id": first.get("id"),
                     "pid": os.getpid()})
        return
    _send(sock, {"ready": True, "pid": os.getpid()})
    msg = first
    while True:
        if msg["op"] == "stop":
            _exit_now()
        try:
            reply = child.handle(msg)
        except BaseException as exc:  # noqa: BLE001 - reported to the checker
            reply = {"ok": False, "exc": _pack_exc(exc)}
        _leave_if_forked(rec)  # a copy never answers
        forked = _children()
        if forked:
            reply["forked"] = forked
        reply.update(id=msg.get("id"), pid=os.getpid(), data=check_bounds.data_bytes())
        _send(sock, reply)
        try:
            msg = _recv(sock)
        except EOFError:
            return


__all__ = ["check", "CheckReport", "Finding", "PassResult", "Pass", "PASSES", "Plan", "FIXES",
           "classify", "run_model", "run_budget", "parse_memory", "default_memory",
           "MEMORY_MIN", "EPISODE_CAP", "QUICK", "QUICK_STEPS",
           "RESET_EVERY"]
