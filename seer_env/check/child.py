"""The process the checker runs a model in, and the protocol between them:
requests and replies (matched by id and pid), the shared progress record
(`_Record`) that names the hook running when the child dies or hangs,
`_Worker` (the checker's side) and `_Child` (the child's), the memory budget.

Part of [`seer_env.check`][seer_env.check] (its module docstring tells the whole story).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._bind.native import NativeModel
from ..errors import ConfigError
from . import bounds as check_bounds
from .passes import STARTUP_BUDGET, JobContext, _ref_key
from .report import _ALL_HOOKS, _HOOKS, _fmt_bytes, classify, explain
from .runs import INSPECT, STEP, _Run, first_difference, run_model

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
                [sys.executable, str(Path(__file__).parent.parent / "_check_child.py"),
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
            pgid = self.proc.pid
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.proc.kill()
            self.proc.wait()
            # a copy a fork() made dies of the same SIGKILL, but on a busy
            # machine a moment after its leader was reaped: gone when this
            # returns (a caller that looks finds none), within 5 s
            deadline = time.monotonic() + 5.0
            while _group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.005)
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


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running (zombies,
    whose parent may never reap them, do not count)."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # after "pid (comm) "
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


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
        from .. import sdk

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
