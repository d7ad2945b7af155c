"""What the contract checker reports: the rules and how to fix each (`FIXES`),
`Finding`, `PassResult`, `CheckReport`, and how a failure is classified
(`classify`) and explained (`explain`).

Part of [`seer_env.check`][seer_env.check] (its module docstring tells the whole story).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._bind.native import NativeModel
from ..errors import BudgetError, ModelError

#: How to fix what each rule's breach means.
FIXES: dict[str, str] = {
    "entity-state": "touch only the handler's own entity state (the `entity` argument); read "
                    "other entities through seer_snapshot, change them by sending events",
    "boundary-write": "change entity states in act or handle; boundary, observe, publish and "
                      "global_state only read them",
    "output-row": "write only the agent's own output rows: obs[0..obs_dim-1], *reward, "
                  "*terminated, *truncated and info[0..info_dim-1] in observe, mask[0..mask_dim-1] "
                  "in action_mask, out[0..state_dim-1] in global_state (check the loop bounds "
                  "and the dims describe gives)",
    "input-row": "read only the handler's own input: action[0..action_dim-1] in act (the "
                 "agent's group's action_dim), payload[0..payload_size-1] in handle (its first "
                 "`size` bytes are the sender's), and never write through them (they are const)",
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
    "event-type": "schedule only the model's own event types, 0 .. event_type_count-1 (the "
                  "event names it declares)",
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
    ("unknown event type", "event-type"),
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
        if re.search(r" (its|of its) (action|payload)\b", msg):
            return "input-row"
        if ("past the end of its" in msg or "before the start of its" in msg
                or "the action masks" in msg or "mask row" in msg):
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


#: The model hooks, by the index the progress record carries: those that run
#: with a context, then the host hooks.
_HOOKS = ("init", "act", "handle", "boundary", "observe", "publish", "global_state",
          "action_mask")
_ALL_HOOKS = _HOOKS + ("describe", "group", "action_nvec", "obs_bounds", "group_obs_bounds",
                       "state_bounds", "agent_name")


def _fmt_bytes(n: float) -> str:
    """A size in words: 256 MiB, 1.5 GiB, 3.2 KiB, 100 bytes."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}" if n % size else f"{int(n // size)} {unit}"
    return f"{int(n)} bytes"
