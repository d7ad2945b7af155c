"""The contract checker: is a model safe to run on every executor?

:func:`check` runs a model through five passes and reports every breach of
the event-locality contract it finds, each naming the model, the handler, the
entity, the event type and the simulated time, the rule broken and how to fix
it::

    import seer_env
    report = seer_env.check("path/to/mymodel", config={"num_things": 8})
    print(report)            # one line per pass, then the findings
    assert report.ok

    $ seer-env check path/to/mymodel --set num_things=8

The passes:

1. **isolation** -- the serial executor in checking mode: every handler runs
   with the memory it must not touch protected (other entities' live state,
   the published snapshot, the configuration, the model's static variables)
   and with ``rand()``, ``time()`` and friends watched.  A breach stops the run
   with a message naming exactly what was touched.  The run is then compared
   with a plain serial run: a model whose outputs change with the memory
   layout reads or writes outside its entity.
2. **replay** -- two plain serial runs in one process must agree: hidden state
   that survives a run (static or thread-local variables, a C library
   generator) shows here.
3. **order** -- the parallel executor with one partition per entity, visited
   in a fresh random order in every window (and on two threads): a model
   whose outputs depend on the order in which independent events run.
4. **matrix** -- the determinism matrix: serial against parallel at threads
   1-4 and oversubscribed (8), batches of 1-3 instances, several seeds,
   random actions, masked resets mid-episode and autoresets after agents die.
5. **lookahead** and the other schedule rules are checked on every
   ``seer_schedule`` call in every pass.

Models with lookahead 0 have no windows: pass 3 is skipped for them (and says
so), and pass 4 runs the optimistic executor (speculation with rollback)
instead of the parallel one.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._runtime import NativeModel, Runtime
from .errors import ModelError, SeerError

#: How to fix what each rule's breach means.
FIXES: dict[str, str] = {
    "entity-state": "touch only the handler's own entity state (the `entity` argument); read "
                    "other entities through seer_snapshot, change them by sending events",
    "boundary-write": "change entity states in act or handle; boundary, observe, publish and "
                      "global_state only read them",
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
}


@dataclass(frozen=True)
class Finding:
    """One breach of the contract."""

    rule: str
    pass_name: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"[{self.rule}] ({self.pass_name}) {self.message}\n    fix: {self.fix}"


@dataclass
class PassResult:
    """What one pass ran and concluded."""

    name: str
    runs: int = 0
    steps: int = 0
    status: str = "ok"  # "ok", "finding", or "skipped: <why>"

    def __str__(self) -> str:
        return f"{self.name:<10} {self.status:<40} ({self.runs} run(s), {self.steps} steps)"


@dataclass
class CheckReport:
    """The outcome of :func:`check`."""

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
    if isinstance(exc, ModelError):
        return "handler-error"
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


def _actions(rng: np.random.Generator, rt: Runtime) -> np.ndarray:
    sz = rt.sizes
    if sz.action_kind == "discrete":
        return rng.integers(0, sz.action_n, size=rt.actions.shape).astype(np.int32)
    span = sz.action_high - sz.action_low
    a = rng.uniform(sz.action_low - 0.25 * span, sz.action_high + 0.25 * span,
                    size=rt.actions.shape)  # out-of-range values are clipped, exercised too
    return a.astype(np.float32)


def _grab(rt: Runtime) -> dict[str, np.ndarray]:
    B = rt.num_instances
    return {
        "obs": rt.obs.copy(), "reward": rt.reward.copy(), "terminated": rt.terminated.copy(),
        "truncated": rt.truncated.copy(), "info": rt.info.copy(), "alive": rt.alive.copy(),
        "active": rt.active.copy(),
        "state": np.stack([np.frombuffer(rt.entity_states(i), np.uint8) for i in range(B)]),
        "global": np.stack([rt.global_state(i) for i in range(B)]),
    }


def run_model(native: NativeModel, config: Mapping[str, Any], *, executor: str, threads: int,
              batch: int, seed: int, steps: int, action_seed: int, check: int = 0,
              shuffle_seed: int = 0, reset_every: int = 17) -> _Run:
    """One run: reset, ``steps`` random-action steps with masked resets every
    ``reset_every`` steps and autoresets of finished instances."""
    out: list[dict[str, np.ndarray]] = []
    rt = Runtime(native, config, batch, executor, threads, None, check=check,
                 shuffle_seed=shuffle_seed, oversubscribe=True)
    rng = np.random.default_rng(action_seed)
    seeds = [seed + i for i in range(batch)]
    try:
        rt.reset(seeds)
        out.append(_grab(rt))
        for k in range(1, steps + 1):
            rt.actions[:] = _actions(rng, rt)
            finished = ~rt.alive.any(axis=1)
            forced = np.zeros(batch, bool)
            if reset_every and k % reset_every == 0:
                forced[k // reset_every % batch] = True
            again = finished | forced
            if (~again).any():
                rt.step(~again)
            if again.any():
                rt.reset([s + 7919 * k for s in seeds], again)
            out.append(_grab(rt))
    except SeerError as exc:
        return _Run(out, exc)
    finally:
        rt.close()
    return _Run(out)


def first_difference(a: _Run, b: _Run, native: NativeModel, entity_size: int,
                     names: Sequence[str]) -> str | None:
    """Where two runs first differ (bit for bit), in words; None when identical."""
    for k, (x, y) in enumerate(zip(a.steps, b.steps, strict=False)):
        for key in ("obs", "reward", "terminated", "truncated", "info", "alive", "active",
                    "global", "state"):
            u, v = x[key], y[key]
            ub = u.view(np.uint8) if u.dtype.kind == "f" else u
            vb = v.view(np.uint8) if v.dtype.kind == "f" else v
            if np.array_equal(ub, vb):
                continue
            if key == "state":
                return _state_difference(k, u, v, native, entity_size)
            idx = tuple(int(i) for i in np.argwhere(
                (u.view(np.uint32 if u.dtype.itemsize == 4 else np.uint64) if u.dtype.kind == "f"
                 else u) != (v.view(np.uint32 if v.dtype.itemsize == 4 else np.uint64)
                             if v.dtype.kind == "f" else v))[0])
            agent = names[idx[1]] if len(idx) > 1 and idx[1] < len(names) else "-"
            where = (f"step {k}, instance {idx[0]}" + (f", agent {agent}" if key != "global"
                                                       else ""))
            elem = list(idx[2:]) if len(idx) > 2 else ""
            return f"{where}, {key}{elem}: {u[idx].item()!r} vs {v[idx].item()!r}"
    if len(a.steps) != len(b.steps):
        return f"one run stopped after {min(len(a.steps), len(b.steps)) - 1} steps"
    return None


def _state_difference(k: int, u: np.ndarray, v: np.ndarray, native: NativeModel,
                      entity_size: int) -> str:
    inst = int(np.argwhere((u != v).any(axis=1))[0][0])
    dt = native.state_dtype(entity_size)
    su = np.frombuffer(u[inst].tobytes(), dtype=dt)
    sv = np.frombuffer(v[inst].tobytes(), dtype=dt)
    e = int(np.argwhere(su.view(np.uint8).reshape(len(su), -1) !=
                        sv.view(np.uint8).reshape(len(sv), -1))[0][0])
    fields = [n for n in (dt.names or ()) if su[e][n].tobytes() != sv[e][n].tobytes()]
    what = f" (fields {', '.join(fields)})" if fields else ""
    return f"step {k}, instance {inst}: the state of entity {e} differs{what}"


# -- the passes --------------------------------------------------------------------------


def check(
    model: Any,
    config: Mapping[str, Any] | None = None,
    *,
    steps: int = 40,
    seeds: Iterable[int] = (0, 1),
    threads: Iterable[int] = (1, 2, 3, 4, 8),
    batches: Iterable[int] = (1, 2, 3),
    progress: bool | None = None,
    log: Callable[[str], None] | None = None,
) -> CheckReport:
    """Check a model (a :class:`seer_env.sdk.Model`, a registered name or a
    model folder's path) on ``config``; see the module docstring.

    ``progress``: show a progress bar (None: when stderr is a terminal).
    """
    from . import sdk

    m = sdk.resolve(model)
    native = m.native
    cfg = dict(config or {})
    buf, sizes = native.describe(cfg)  # a bad config raises ConfigError here
    names = native.agent_names(buf, sizes.num_agents)
    report = CheckReport(m.name, native.read_config(buf))
    seeds = list(seeds)
    parallel_ok = sizes.lookahead > 0.0
    # Isolation first: a model that would crash a plain run (a NULL pointer)
    # is caught there, and nothing else runs.  Then replay: when two
    # identical runs differ, no later comparison can say why (the isolation
    # runs are compared with plain runs only after it).
    plan: list[tuple[str, dict[str, Any]]] = [
        ("isolation", dict(executor="serial", threads=1, batch=2, seed=s, check=1))
        for s in seeds]
    plan.append(("replay", dict(executor="serial", threads=1, batch=2, seed=seeds[0])))
    if parallel_ok:
        for t, sh in ((1, 1), (1, 2), (2, 3)):
            plan.append(("order", dict(executor="parallel", threads=t, batch=2,
                                       seed=seeds[0], check=2, shuffle_seed=sh)))
    matrix_executor = "parallel" if parallel_ok else "optimistic"
    for b in batches:
        for s in seeds:
            for t in threads:
                plan.append(("matrix", dict(executor=matrix_executor, threads=t, batch=b,
                                            seed=s)))
    passes = {n: PassResult(n) for n in ("isolation", "replay", "order", "matrix")}
    report.passes = list(passes.values())
    if not parallel_ok:
        passes["order"].status = "skipped: lookahead 0 (no windows to shuffle)"

    refs: dict[tuple[int, int], _Run] = {}

    def reference(batch: int, seed: int) -> _Run:
        if (batch, seed) not in refs:
            refs[(batch, seed)] = run_model(native, cfg, executor="serial", threads=1,
                                            batch=batch, seed=seed, steps=steps,
                                            action_seed=seed)
        return refs[(batch, seed)]

    def add(pass_name: str, rule: str, message: str) -> None:
        # one finding per rule and pass, and a message reported once
        if any(f.rule == rule and (f.pass_name == pass_name or f.message == message)
               for f in report.findings):
            if passes[pass_name].status == "ok":
                passes[pass_name].status = "finding"
            return
        report.findings.append(Finding(rule, pass_name, message, FIXES.get(rule, "")))
        passes[pass_name].status = "finding"

    def compare(pass_name: str, kw: dict[str, Any], ref: _Run, got: _Run) -> None:
        if ref.error is not None:  # the plain serial run fails (a schedule rule)
            add(pass_name, classify(ref.error), explain(ref.error, native))
            return
        if "hidden-state" in report.rules() and pass_name != "replay":
            if passes[pass_name].status == "ok":
                passes[pass_name].status = "compared: not reproducible (replay)"
            return
        diff = first_difference(ref, got, native, sizes.entity_size, names)
        if diff is None:
            return
        rule = {"isolation": "layout", "replay": "hidden-state",
                "order": "order"}.get(pass_name, "determinism")
        what = {"isolation": "checking mode vs plain serial run",
                "replay": "second serial run vs the first",
                "order": f"shuffled visiting order (threads={kw['threads']}) vs serial",
                "matrix": f"{kw['executor']} threads={kw['threads']} batch={kw['batch']} "
                          f"seed={kw['seed']} vs serial"}[pass_name]
        add(pass_name, rule, f"model '{native.name}': {what}: first difference at {diff}")

    isolated: list[tuple[dict[str, Any], _Run]] = []
    bar = _progress(len(plan), progress, m.name)
    try:
        for pass_name, kw in plan:
            bar.set_postfix_str(pass_name)
            p = passes[pass_name]
            if p.status == "finding" or p.status.startswith("skipped"):
                bar.update(1)
                continue
            got = run_model(native, cfg, steps=steps, action_seed=kw["seed"], **kw)
            p.runs += 1
            p.steps += steps * kw["batch"]
            if got.error is not None:  # this pass's own run names the breach best
                add(pass_name, classify(got.error), explain(got.error, native))
                if "dereferenced a NULL pointer" in str(got.error):
                    for q in passes.values():
                        if q.status == "ok":
                            q.status = "skipped: a plain run would crash (NULL pointer)"
            elif pass_name == "isolation":
                isolated.append((kw, got))  # compared after replay
            else:
                compare(pass_name, kw, reference(kw["batch"], kw["seed"]), got)
                if pass_name == "replay":
                    for ikw, igot in isolated:
                        compare("isolation", ikw, reference(ikw["batch"], ikw["seed"]), igot)
            bar.update(1)
            if log:
                log(f"{pass_name}: {kw}")
    finally:
        bar.close()
    return report


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


__all__ = ["check", "CheckReport", "Finding", "PassResult", "FIXES", "classify", "run_model"]
