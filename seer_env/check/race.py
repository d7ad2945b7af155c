"""The contract checker's shared-memory pass: heap memory written by the
handlers of several entities.

A model that keeps a scratch buffer in heap memory -- allocated once, by
``describe`` or at first use, its pointer kept in the configuration or a
static variable -- and writes it from every entity's handlers breaks rule 1
of the contract (a handler writes only its own entity's state), yet passes
every other pass: the isolation pass protects only the memory the runtime
knows (states, snapshot records, instance data, configuration, the module's
static data), and on the serial executor the buffer is used by one handler
at a time, so the runs agree.  On the parallel executor two threads use it
at once and corrupt each other's values, now and then.

How it is caught: ThreadSanitizer.  `race_findings` builds a copy of
the model (its sources and the runtime) with ``-fsanitize=thread -g`` into
the cache (once per content, like every build; ``_build.build_module``), and
runs the order pass's kind of run in a child process with the compiler's
``libtsan`` preloaded (the module leaves the ``__tsan_*`` symbols to the
preloaded runtime; ``halt_on_error=0``, reports to a log file): the parallel
executor with one partition per entity, a fresh random visiting order in
every phase, on two threads (oversubscribed if need be), random actions.
Entities of different partitions handle their events in one window
concurrently, so any memory two entities' handlers write (or one writes and
another reads) without the runtime's synchronization between them is a data
race for TSan, whatever the values and whatever the timing; memory that is
only read after ``describe`` (tables) is not, nor is anything the runtime
orders (windows, phases).  TSan can only see it when both threads handle
events in one phase, and a worker that wakes up late finds the phase done
(no fixed team): so the run takes enough instances for phases of at least
256 entities (with 6 entities, 2 instances caught a shared buffer in 5 runs
of 6, 32 instances in 10 of 10), counts the events the other thread handled
(trace records) and, when it handled none, runs again with 4 times the
instances (twice at most, then says it could not check).  Each report whose
accesses run model code becomes a finding naming the hooks and functions
(file:line) of both accesses and the block with the function that
allocated it.  Lookahead-0 models have no
windows: the run uses the optimistic executor (speculation on two threads)
instead.

Why not track the model's allocations in checking mode: the runtime would
have to wrap malloc and friends for the model alone, and then still could
not tell which entity touched a block without instrumenting every access --
which is what TSan does, exactly and with stacks.  The runtime itself is
TSan-clean (tests/native/run_sanitizers.sh runs its stress tests under
TSan), cffi's glue and CPython are not instrumented (they never report), and
only reports with a frame in the model's folder count, so a report is the
model's.  Cost (40 steps, 2 threads, on a 2-CPU host with other work
running): the TSan build, once per content, about 2-3 s (the runtime's
objects come from the object cache after the first build with these
flags); the run 2-3 s for the template model (32 instances of 8 agents)
and 3-5 s for pcs_v0 16x16 (2 instances of 256), about 1.7 s of it the
interpreter's start under TSan.  The run is a child process: a crash or a
hang of the instrumented model cannot take the checker with it, and it is
killed after ``timeout`` seconds.

Python models ([`seer_env.pymodel`][seer_env.pymodel]) are skipped: compiled Python cannot
allocate memory at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: How to fix what each rule's breach means (merged into seer_env.check.FIXES).
FIXES: dict[str, str] = {
    "shared-heap": "keep per-entity data in the entity state (or per-instance data in the "
                   "instance data, written at the boundary): heap memory that several "
                   "entities' handlers write (a scratch buffer allocated once, its pointer kept "
                   "in the configuration or a static) is shared by every entity and thread; a "
                   "temporary belongs on the handler's stack",
    "data-race": "two threads touched the same memory without the runtime ordering them: "
                 "handlers must write only their own entity's state (no global, static or "
                 "heap memory shared between entities)",
}

#: Entities the run's phases should hold (instances x entities), so that the
#: second thread wakes up and joins in before the calling thread has done a
#: phase alone (see the module docstring).
_ITEMS_PER_PHASE = 256

#: Compiler flags of the instrumented build.
TSAN_CFLAGS: tuple[str, ...] = ("-fsanitize=thread", "-g")

#: The runtime's functions that call each hook (the frame below the model's).
_HOOK_CALLERS = {
    "seer_run_queue": "handle", "run_cascade": "handle", "handle_next": "handle",
    "seer_init_entity": "init", "seer_act_agent": "act",
    "seer_boundary_instance": "boundary", "seer_observe_agent": "observe",
    "seer_publish_entity": "publish", "seer_runtime_global_state": "global_state",
    "seer_model_describe": "describe", "seer_check_run": "a checked hook",
}

_VERBS = {"write": "wrote", "read": "read", "atomicwrite": "atomically wrote",
          "atomicread": "atomically read"}
_FRAME_RE = re.compile(r"^\s*#\d+\s+(\S+)\s+(\S+)\s+\((.*)\)\s*$")
_ACCESS_RE = re.compile(r"^\s*(Previous )?(atomic )?(write|read) of size (\d+) at (0x[0-9a-f]+) "
                        r"by (main thread|thread T\d+)", re.I)
_HEAP_RE = re.compile(r"^\s*Location is heap block of size (\d+) at (0x[0-9a-f]+) allocated by "
                      r"(main thread|thread T\d+)")
_GLOBAL_RE = re.compile(r"^\s*Location is global '([^']*)'")


# -- building and running ------------------------------------------------------------


def tsan_runtime() -> str | None:
    """The compiler's ThreadSanitizer runtime (``libtsan.so``), or None."""
    return _tsan_runtime()[0]


def _tsan_runtime() -> tuple[str | None, str]:
    """`tsan_runtime` and, where None, why (for the race pass's status): the
    compiler could not be asked (no compiler, too many open files, ...) or
    it knows no runtime."""
    from .._bind import build as _build

    try:
        cc = _build.compiler()
        r = subprocess.run([*cc, "-print-file-name=libtsan.so"], capture_output=True,
                           text=True, timeout=30)
    except _build.BuildFailed as exc:
        return None, f"no C compiler to find a ThreadSanitizer runtime with ({exc.args[0]})"
    except OSError as exc:
        return None, f"could not run the C compiler to find a ThreadSanitizer runtime ({exc})"
    except subprocess.TimeoutExpired:
        return None, "the C compiler did not answer within 30 s (cc -print-file-name=libtsan.so)"
    path = r.stdout.strip()
    if r.returncode == 0 and os.path.isabs(path) and os.path.exists(path):
        return path, ""
    return None, f"no ThreadSanitizer runtime on this machine ({cc[0]} " \
                 "-print-file-name=libtsan.so finds none)"


def build_tsan(model_dir: Path, log: Any = None) -> tuple[str, Path]:
    """Build (or reuse from the cache) the ThreadSanitizer copy of the model
    folder ``model_dir``: returns ``(module name, path of the .so)``.  It can
    be imported only by a process that preloads libtsan.  Raises
    [`seer_env.errors.BuildError`][seer_env.errors.BuildError]."""
    from .._bind import build as _build
    from .._bind.loader import cache_dir, file_lock, safe_name
    from ..errors import BuildError

    model_dir = Path(model_dir).resolve()
    # the folder's path counts too: the build's debug information names its
    # sources by absolute path, and reports are matched against the folder
    # (a copy elsewhere with the same sources would reuse a build whose
    # frames name the other folder, and nothing would match)
    want = hashlib.sha256((_build.source_hash(model_dir, False, TSAN_CFLAGS) + "\0" +
                           str(model_dir)).encode()).hexdigest()[:32]
    stem = safe_name(model_dir.name)
    name = f"_seer_tsan_{stem}_{want[:16]}"
    target = cache_dir() / "tsan" / f"{stem}-{want[:16]}" / f"{name}{_build.ext_suffix()}"
    with file_lock(cache_dir() / "locks" / f"tsan-{stem}-{want[:16]}.lock"):
        if not target.is_file():
            try:
                from .bounds import unbudgeted

                with unbudgeted():  # the compiler is not the model
                    _build.build_module(name, target, model_dir, werror=False,
                                        extra_cflags=TSAN_CFLAGS,
                                        object_cache=cache_dir() / "objects", log=log)
            except _build.BuildFailed as exc:
                raise BuildError(f"building {model_dir} with ThreadSanitizer failed: {exc}",
                                 log=exc.log, command=exc.command) from None
    return name, target


def _model_of(model: Any) -> tuple[Any, Path | None, str]:
    """(native model, model folder or None, why there is no folder)."""
    from .._bind.native import NativeModel

    if isinstance(model, NativeModel):
        native = model
    else:
        from .. import sdk

        if isinstance(model, (str, Path)) and Path(model).is_dir():
            native = sdk.load(model).native
        else:
            native = sdk.resolve(model).native
    src = Path(native.source)
    if native.source.startswith("Python model"):
        return native, None, "a Python model (compiled Python cannot allocate memory)"
    from .._bind import build as _build

    if not src.is_dir() or not _build.model_sources(src):
        return native, None, f"no model folder with C sources ({native.source})"
    return native, src.resolve(), ""


def race_findings(model_dir_or_native: Any, config: Mapping[str, Any] | None = None,
                  steps: int = 40, *, threads: int = 2, batch: int | None = None, seed: int = 0,
                  shuffle_seed: int = 3, timeout: float = 300.0
                  ) -> list[tuple[str, str]] | str:
    """Run the model under ThreadSanitizer on the parallel executor (the
    optimistic one for lookahead 0) and report memory shared between
    entities' handlers (see the module docstring).

    ``model_dir_or_native``: a model folder, a registered name, a
    [`seer_env.sdk.Model`][seer_env.sdk.Model] or a `seer_env._bind.native.NativeModel`.
    Returns the findings, ``(rule, message)`` with rule ``"shared-heap"``
    (a heap block) or ``"data-race"`` (other memory), at most one per rule
    (the first report, with how many there were); or a string starting with
    ``"skipped: "`` saying why nothing could be run.  The child process is
    killed after ``timeout`` seconds (the reports it wrote by then count).
    """
    native, model_dir, why = _model_of(model_dir_or_native)
    if model_dir is None:
        return f"skipped: {why}"
    cfg = dict(config or {})
    _, sizes = native.describe(cfg)  # a bad configuration raises ConfigError here
    lib, why = _tsan_runtime()
    if lib is None:
        return f"skipped: {why}"
    from ..errors import BuildError

    try:
        name, so = build_tsan(model_dir)
    except BuildError as exc:
        return f"skipped: the model does not build with -fsanitize=thread: {exc}"
    executor = "parallel" if sizes.lookahead > 0.0 else "optimistic"
    if batch is None:  # enough work per phase that the second thread joins in
        batch = max(2, min(64, -(-_ITEMS_PER_PHASE // max(1, sizes.num_entities))))
    job: dict[str, Any] = dict(
        module=name, path=str(so), source=str(model_dir), config=cfg,
        executor=executor, threads=threads, batch=batch, seed=seed, steps=steps,
        check=2 if executor == "parallel" else 0, shuffle_seed=shuffle_seed)
    no_aslr = False
    with tempfile.TemporaryDirectory(prefix="seer-tsan-") as tmp:
        for attempt in range(3):
            text, status, helpers = _run_child(job, lib, Path(tmp), timeout, no_aslr)
            found = parse_reports(text, model_dir, native.name, executor)
            if found:
                return found
            if (status and "unexpected memory mapping" in text and not no_aslr
                    and shutil.which("setarch")):
                # TSan's fixed shadow layout and a kernel randomising mmap
                # more than it expects: run without address randomisation
                no_aslr = True
                continue
            if status or helpers > 0 or attempt == 2:
                break
            # the other threads handled nothing: the calling thread ran every
            # event alone and nothing could race; again, with more work
            job["batch"] = min(256, int(job["batch"]) * 4)
    if status:
        return f"skipped: {status}"
    if helpers == 0:
        return (f"skipped: the ThreadSanitizer run handled every event on one thread (a loaded "
                f"machine?), so nothing could race (batch up to {job['batch']})")
    return []


def _run_child(job: dict[str, Any], lib: str, tmp: Path, timeout: float,
               no_aslr: bool = False) -> tuple[str, str, int]:
    """Run one child; returns (TSan's log, "" or what went wrong, events the
    threads other than the calling one handled)."""
    for old in tmp.glob("tsan*"):
        old.unlink()
    env = dict(os.environ)
    env["LD_PRELOAD"] = lib + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["TSAN_OPTIONS"] = (f"halt_on_error=0 exitcode=0 report_signal_unsafe=0 "
                           f"detect_deadlocks=0 log_path={tmp / 'tsan'}")
    # the package this module belongs to, whatever put it on sys.path here
    root = str(Path(__file__).resolve().parent.parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-c", "import sys; from seer_env.check.race import _main; "
           "sys.exit(_main(sys.argv[1:]))", json.dumps(job)]
    if no_aslr:
        cmd = ["setarch", os.uname().machine, "-R", *cmd]
    status = ""
    from .bounds import unbudgeted

    try:
        # TSan's shadow memory is reserved private writable memory, which the
        # checker's memory budget (RLIMIT_DATA) counts: the run starts without it
        with unbudgeted():
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, errors="replace",
                                    start_new_session=True)
    except OSError as exc:
        return "", f"could not start the ThreadSanitizer run: {exc}", 0
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        status = f"the ThreadSanitizer run did not finish in {timeout:g} s"
    else:
        if proc.returncode != 0 or "seer-race: done" not in out:
            tail = "\n".join((err or out).strip().splitlines()[-6:])
            status = f"the ThreadSanitizer run failed (exit {proc.returncode}): {tail}"
    text = "".join(p.read_text(errors="replace") for p in sorted(tmp.glob("tsan*")))
    m = re.search(r"seer-race: helper events (\d+)", out or "")
    return text + (err or ""), status, int(m.group(1)) if m else 0


# -- reading TSan's reports ----------------------------------------------------------


@dataclass
class _Frame:
    func: str
    where: str  # file:line, or <null>
    module: str

    def short(self) -> str:
        loc = self.where.rsplit("/", 1)[-1]
        loc = re.sub(r"^(.*?:\d+):\d+$", r"\1", loc)
        return f"{self.func} at {loc}" if loc != "<null>" else self.func


@dataclass
class _Access:
    kind: str  # "write", "read", "atomic write", ...
    size: int
    thread: str
    frames: list[_Frame]


def _sections(block: list[str]) -> list[tuple[str, list[_Frame]]]:
    out: list[tuple[str, list[_Frame]]] = []
    for line in block:
        m = _FRAME_RE.match(line)
        if m and out:
            out[-1][1].append(_Frame(m.group(1), m.group(2), m.group(3)))
        elif line.strip() and not m:
            out.append((line, []))
    return out


def _in_model(frame: _Frame, model_dir: Path) -> bool:
    path = re.sub(r":\d+(:\d+)?$", "", frame.where)
    return path.startswith(str(model_dir) + os.sep)


def _who(acc: _Access, model_dir: Path) -> str | None:
    """'handle (rogue2_handle, in helper at f.c:12)' for an access from model code."""
    idx = [i for i, f in enumerate(acc.frames) if _in_model(f, model_dir)]
    if not idx:
        return None
    first = idx[0]
    last = first
    while last + 1 < len(acc.frames) and _in_model(acc.frames[last + 1], model_dir):
        last += 1
    caller = acc.frames[last + 1].func if last + 1 < len(acc.frames) else ""
    outer, inner = acc.frames[last], acc.frames[first]
    hook = _HOOK_CALLERS.get(caller, outer.func)
    if inner is outer:
        return f"{hook} ({outer.short()})"
    return f"{hook} ({outer.func}, in {inner.short()})"


def parse_reports(text: str, model_dir: Path, name: str, executor: str = "parallel"
                  ) -> list[tuple[str, str]]:
    """Findings from ThreadSanitizer's log ``text``: one per rule, for the
    reports with an access in the model's folder ``model_dir``."""
    model_dir = Path(model_dir).resolve()
    blocks: list[list[str]] = []
    cur: list[str] | None = None
    for line in text.splitlines():
        if "WARNING: ThreadSanitizer:" in line:
            cur = [line]
            blocks.append(cur)
        elif cur is not None:
            if line.startswith("SUMMARY: ThreadSanitizer") or line.startswith("====="):
                cur = None
            else:
                cur.append(line)
    first: dict[str, str] = {}
    count: dict[str, int] = {}
    for block in blocks:
        accesses: list[_Access] = []
        heap: tuple[int, list[_Frame]] | None = None
        glob: str | None = None
        for head, frames in _sections(block[1:]):
            m = _ACCESS_RE.match(head)
            if m:
                kind = ((m.group(2) or "").strip() + m.group(3)).lower()
                accesses.append(_Access(kind, int(m.group(4)), m.group(6), frames))
                continue
            h = _HEAP_RE.match(head)
            if h:
                heap = (int(h.group(1)), frames)
                continue
            g = _GLOBAL_RE.match(head)
            if g:
                glob = g.group(1)
        whos = [_who(a, model_dir) for a in accesses]
        if not any(whos):
            continue  # not the model's: the runtime, cffi or the interpreter
        parts = []
        for a, w in zip(accesses[:2], whos[:2], strict=False):
            who = w or f"the runtime ({a.frames[0].func if a.frames else '?'})"
            thread = "the main thread" if a.thread == "main thread" else a.thread
            verb = _VERBS.get(a.kind, a.kind)
            parts.append((f"{who} on {thread}", verb, a.size))
        if len(parts) == 2 and parts[0][1] == parts[1][1]:
            both = f"{parts[0][0]} and {parts[1][0]} both {parts[0][1]} {parts[0][2]} bytes of"
        elif len(parts) == 2:
            both = (f"{parts[0][0]} {parts[0][1]} and {parts[1][0]} {parts[1][1]} "
                    f"{parts[0][2]} bytes of")
        else:
            both = f"{parts[0][0]} {parts[0][1]} {parts[0][2]} bytes of"
        tail = (f"with nothing ordering the two: the handlers of entities that run "
                f"concurrently on the {executor} executor share it")
        if heap is not None:
            rule = "shared-heap"
            alloc = next((f for f in heap[1] if "libtsan" not in f.module
                          and "tsan_" not in f.where), None)
            by = f" (allocated by {alloc.short()})" if alloc else ""
            msg = f"model '{name}': {both} a heap block of {heap[0]} bytes{by} {tail}"
        else:
            rule = "data-race"
            where = f"the global variable '{glob}'" if glob else "the same memory"
            msg = f"model '{name}': {both} {where} {tail}"
        count[rule] = count.get(rule, 0) + 1
        first.setdefault(rule, msg)
    return [(rule, f"{msg} (ThreadSanitizer: {count[rule]} report(s), the first shown)")
            for rule, msg in first.items()]


# -- the child process ---------------------------------------------------------------


def _child(job: dict[str, Any]) -> None:
    """One run of the instrumented model (in a process that preloads libtsan)."""
    import numpy as np

    from .._bind.loader import import_file
    from .._bind.native import NativeModel
    from .._bind.runtime import Runtime
    from .bounds import random_actions

    mod = import_file(job["module"], Path(job["path"]))
    native = NativeModel(mod, job["source"])
    B = int(job["batch"])
    rt = Runtime(native, job["config"], B, job["executor"], int(job["threads"]), None,
                 check=int(job["check"]), shuffle_seed=int(job["shuffle_seed"]),
                 oversubscribe=True)
    rng = np.random.default_rng(int(job["seed"]))
    seeds = [int(job["seed"]) + i for i in range(B)]
    rt.trace(1024)  # which threads handled events (the first 1024 records each)
    event_kind = {name: kind for kind, name in rt.trace_kinds().items()}["event"]
    helpers = 0
    try:
        rt.reset(seeds)
        for k in range(1, int(job["steps"]) + 1):
            rt.actions[:] = random_actions(rng, rt)
            done = ~rt.alive.any(axis=1)
            if (~done).any():
                rt.step(~done)
            if done.any():
                rt.reset([s + 7919 * k for s in seeds], done)
            for i in range(B):
                rt.global_state(i)
            helpers += _helper_events(rt, event_kind)
            rt.trace_clear()
    finally:
        rt.close()
    print(f"seer-race: helper events {helpers}", flush=True)
    print(f"seer-race: done {job['steps']} steps", flush=True)


def _helper_events(rt: Any, event_kind: int) -> int:
    """Event records of the pool's threads but the calling one (read through
    the run's own module: Runtime.trace_records would load seer_env._core)."""
    n_events = 0
    for w in range(1, rt.pool_size):
        n_events += int((rt.worker_trace_records(w)["kind"] == event_kind).sum())
    return n_events


def _main(argv: Sequence[str]) -> int:
    from ..errors import SeerError

    try:
        _child(json.loads(argv[0]))
    except SeerError as exc:  # the other passes report the model's errors
        print(f"seer-race: the run failed: {exc}", file=sys.stderr, flush=True)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))


__all__ = ["FIXES", "TSAN_CFLAGS", "build_tsan", "parse_reports", "race_findings",
           "tsan_runtime"]
