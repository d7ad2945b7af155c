"""The check itself (`check`): the plan, the child it drives, the budgets
(time, `run_budget`; memory, `default_memory`), progress and the report.

Part of [`seer_env.check`][seer_env.check] (its module docstring tells the whole story).
"""

from __future__ import annotations

import math
import os
import re
import resource
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import errors
from .._bind.native import NativeModel
from .._bind.runtime import max_threads
from ..errors import ConfigError, SeerError
from .child import _NEAR, _Stop, _Worker
from .passes import (
    BUDGET_BASE,
    EPISODE_CAP,
    PASSES,
    QUICK,
    QUICK_STEPS,
    STARTUP_BUDGET,
    JobOutcome,
    Pass,
    Plan,
    _complete,
    _ref_key,
    _reference_of,
    _run_text,
    run_budget,
)
from .report import _ALL_HOOKS, _HOOKS, FIXES, CheckReport, Finding, PassResult, _fmt_bytes
from .runs import CREATE, INSPECT, OUTPUTS, RESET, STEP, run_model

# -- the check ----------------------------------------------------------------------------


def _whole_numbers(name: str, values: Iterable[Any], lo: int, hi: int) -> tuple[int, ...]:
    """``values`` as a tuple of ints in ``[lo, hi]``, else a ConfigError naming ``name``
    (the child process took them as they came: a seed of -1 failed there, as a
    RuntimeError carrying its traceback)."""
    try:
        out = tuple(values)
    except TypeError:
        raise ConfigError(f"check: {name}={values!r} must be a list of whole numbers") from None
    for v in out:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
            raise ConfigError(f"check: {name} holds {v!r}; each must be a whole number in "
                              f"[{lo}, {hi}]")
    return tuple(int(v) for v in out)


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
    from .. import sdk

    limit = _memory_budget(memory)
    # the arguments first: checked in the child, a seed of -1 came back as a
    # RuntimeError with its traceback, and a budget of 0 as a [hang] finding
    base: dict[str, Any] = dict(QUICK) if quick else dict(seeds=(0, 1), threads=(1, 2, 3, 4, 8),
                                                        batches=(1, 2, 3))
    for k, v, lo, hi in (("seeds", seeds, 0, 2**64 - 1), ("threads", threads, 1, max_threads()),
                         ("batches", batches, 1, 1 << 20)):
        if v is not None:
            base[k] = _whole_numbers(k, v, lo, hi)
    if not all(base.values()):
        raise ConfigError("check: seeds, threads and batches must not be empty")
    if steps is not None and (isinstance(steps, bool) or not isinstance(
            steps, (int, np.integer)) or steps < 0):
        raise ConfigError(f"check: steps={steps!r} must be a whole number >= 0")
    if budget is not None and (isinstance(budget, bool) or not isinstance(
            budget, (int, float, np.integer, np.floating)) or not 0 < budget < math.inf):
        raise ConfigError(f"check: budget={budget!r} must be a positive number of seconds")

    m = sdk.resolve(model)
    native = m.native  # built here (a compiler error raises here), run in the child
    cfg = dict(config or {})
    episode = min(native.max_cycles or EPISODE_CAP, EPISODE_CAP)
    if steps is None:
        steps = min(episode, QUICK_STEPS) if quick else episode
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
            return self.child_failed(p, reply["exc"])
        if ref is not None and reply["error"] is None:
            self.refs.add(_ref_key(ref))
        for rule, message in reply.get("found", ()):
            self.add(p.name, rule, message)
        if reply["error"] is not None:  # this pass's own run names the breach best
            err = reply["error"]
            self.add(p.name, err["rule"], err["message"])
            if "dereferenced a NULL pointer" in err["message"]:
                self.skip_rest("a plain run would crash (NULL pointer)")
            elif "memory that is not the model's" in err["message"]:
                self.skip_rest("a plain run would touch memory that is not the model's "
                               f"({err['rule']})")
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
                return self.child_failed(dp, reply["exc"])
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
            res.runs += 1
            return self.child_failed(p, reply["exc"])
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

    def child_failed(self, p: Pass, exc: dict[str, Any]) -> str:
        """The child raised in one of p's runs (or its job) where the runs
        report what they find.  After a finding of memory a handler wrote
        outside what it may (`_MEMORY_RULES`: past an output row, into
        another entity's state), that is the model's doing: the process
        running it may be damaged and then fails anywhere, as a Python error
        (a NameError) as well as a crash; a ``crash`` finding says so and the
        check ends there, with a new process for what comes after.
        Otherwise the failure is raised (a SeerError as itself, else the
        checker's own failure)."""
        if not any(f.rule in _MEMORY_RULES for f in self.report.findings):
            _raise_packed(exc, self.native.name)
        text = _one_line(str(exc.get("message", "")))
        self.worker.kill()
        self.add(p.name, "crash",
                 f"model '{self.native.name}': the process running the model failed in the "
                 f"{p.name} pass ({exc.get('type', 'an error')}: {text}) after the breach "
                 "found above, which may have damaged its memory; fix that first")
        self.skip_rest(f"the model crashed ({p.name})")
        return "crash"

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
                text = _one_line(err["message"])
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

#: Findings of memory a handler wrote outside what it may: after one, the
#: process running the model may be damaged (`_Check.child_failed`).
_MEMORY_RULES = frozenset(("entity-state", "output-row", "input-row", "snapshot",
                           "instance-data", "config", "static-data", "boundary-write"))


def _one_line(text: str) -> str:
    """An error's message for a finding: whitespace runs as one space, at most
    160 characters (cut with "...")."""
    text = re.sub(r"\s+", " ", text).strip()
    return text[:157].rstrip() + "..." if len(text) > 160 else text


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
