"""The call gate every env call passes through, and what a fork does to it.

An env (`seer_env.env`) takes one call at a time: each public method is
wrapped by `exclusive`, whose wrapper hands the call to the env's gate
(``env._busy``, `new_gate`).  The gate refuses a second thread at once
(StateError), every call once ``close()`` started (ClosedError), a call
other than ``reset`` after one was cut short by Ctrl-C (StateError) and a
call from a signal handler or callback on the thread inside a call
(StateError); a ``close()`` from there is done when the call ends.  The gate
is the C one of ``seer_env._fast`` (what it does between taking the env and
giving it back must not be split by a signal handler, and in C nothing is),
or `PyGate`, the same rules in Python, where the extension is not
built.

A child of ``fork()`` gets a fresh gate for every env (`track`): a
gate another thread of the parent held stays held in the child, where that
thread does not exist, and the call it was in is marked cut short.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import linecache
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

try:  # the C gate (built with the package)
    from .. import _fast  # type: ignore[attr-defined]  # a C extension: no source, no stub
except ImportError:  # pragma: no cover - a source tree without built extensions
    _fast = None
from ..errors import ClosedError, StateError

_F = TypeVar("_F", bound=Callable[..., Any])


def _model_name(env: Any) -> str:
    model = getattr(env, "seer_model", None)
    return getattr(model, "name", type(env).__name__)


def _busy_error(env: Any, name: str) -> StateError:
    return StateError(
        f"{_model_name(env)}: {name}() was called while another thread is inside a call "
        "of this env; an env is not thread-safe: give each thread its own env (or serialize "
        "the calls)"
    )


def _interrupted_error(env: Any) -> StateError:
    return StateError(f"{_model_name(env)}: {env._interrupted}; call reset()")


def refused(env: Any, name: str, why: str) -> StateError:
    """The error of a call ``name`` of ``env`` the gate refuses (``why``:
    "closed", "closed during", "busy", "reentrant" or "interrupted"; see
    ``_fast.Gate.call``)."""
    if why == "closed":
        return ClosedError(f"{_model_name(env)}: {name}() on a closed env")
    if why == "closed during":
        return ClosedError(
            f"{_model_name(env)}: the env was closed during {name}() (close() was called on "
            "the thread inside the call: a signal handler or a callback); the call's results "
            "are dropped")
    if why == "busy":
        return _busy_error(env, name)
    if why == "reentrant":
        return StateError(
            f"{_model_name(env)}: {name}() was called from inside another call of this env on "
            "the same thread (a signal handler or a callback); an env takes one call at a time")
    return _interrupted_error(env)


def _finish_close(env: Any) -> None:
    """A close() that came on the thread inside a call, done when the call ended."""
    env.close()


class PyGate:
    """``_fast.Gate`` in Python, for a source tree without built extensions: the
    same rules, but a KeyboardInterrupt between two of its statements can
    leave it held (the C gate has no such gaps)."""

    _ASIDE = -1

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner = 0
        self._closing = False
        self.pending = False

    @property
    def closing(self) -> bool:
        return self._closing

    @closing.setter
    def closing(self, value: bool) -> None:
        self._closing = self._closing or bool(value)

    def _wait(self) -> None:
        while not self._lock.acquire(timeout=0.02):
            pass

    def call(self, spec: tuple[Any, ...], env: Any, *args: Any, **kwargs: Any) -> Any:
        method, name, check, refused, finish_close = spec
        me = threading.get_ident()
        if not self._lock.acquire(False):
            raise refused(env, name, "closed" if self._closing else
                          "reentrant" if self._owner == me else "busy")
        if self._closing:
            self._lock.release()
            raise refused(env, name, "closed")
        self._owner = me
        try:
            if check and env._interrupted:
                raise refused(env, name, "interrupted")
            result = method(env, *args, **kwargs)
        except BaseException as exc:
            self._owner = 0
            self._lock.release()
            if not self.pending:
                raise
            with contextlib.suppress(Exception):  # the call's exception is the one to see
                finish_close(env)
            if isinstance(exc, Exception):
                raise refused(env, name, "closed during") from exc
            raise
        self._owner = 0
        self._lock.release()
        if self.pending:
            finish_close(env)
            raise refused(env, name, "closed during")
        return result

    def close(self, fn: Callable[[Any], Any], env: Any) -> bool:
        self._closing = True
        if self._owner == threading.get_ident():
            self.pending = True
            return False
        self._wait()
        self._owner = threading.get_ident()
        try:
            fn(env)
        finally:
            self.pending = False
            self._owner = 0
            self._lock.release()
        return True

    def owned(self) -> bool:
        return self._owner == threading.get_ident()

    def locked(self) -> bool:
        return self._owner != 0

    def acquire(self, blocking: bool = True) -> bool:
        if not blocking:
            if not self._lock.acquire(False):
                return False
        else:
            self._wait()
        self._owner = self._ASIDE
        return True

    def release(self) -> None:
        if self._owner != self._ASIDE:
            raise RuntimeError("Gate.release: not held by acquire()")
        self._owner = 0
        self._lock.release()


def new_gate() -> Any:
    """An env's gate: every call goes through it (`exclusive`), and close()
    (`close`; `close_now` is what close() runs once it holds it).
    The C gate (``_fast.Gate``) where the extension is built, else `PyGate`."""
    return _fast.Gate() if _fast is not None else PyGate()


# The body of an exclusive wrapper: the gate runs the call (_fast.Gate.call).
# It is generated with the method's own parameters: a wrapper taking (*args,
# **kwargs) costs about 0.5 us more per call (a tuple, a dict and a call with
# them), where a whole batched step of a small model costs about 4 us.
_EXCLUSIVE_SRC = """\
def {name}({params}):
    return self._busy.call(_x_spec, {args})
"""


def exclusive(method: _F) -> _F:
    """One call at a time per env, through its gate (``self._busy``, see
    ``_fast.c``): a second thread calling in while another is inside gets a
    StateError at once (an env is not thread-safe; its Python state and the
    runtime's must move together), a call once close() started a ClosedError,
    and a call other than ``reset`` after one was cut short (``_interrupted``)
    a StateError.  A close() from a signal handler or callback on the thread
    inside a call is done when that call ends (see
    `seer_env.env.SeerParallelEnv.close`).  The env has ``_busy`` (its
    gate, `new_gate`), ``_interrupted`` (why a call was cut short, or
    "") and ``seer_model`` (its model, for the messages)."""
    name = method.__name__
    code = method.__code__
    # "reset" is always allowed: it is what clears the mark
    ns: dict[str, Any] = {"_x_spec": (method, name, name != "reset", refused, _finish_close)}
    n_pos = code.co_argcount
    pos = code.co_varnames[:n_pos]
    kwonly = code.co_varnames[n_pos:n_pos + code.co_kwonlyargcount]
    if (code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
            or code.co_posonlyargcount or not pos or pos[0] != "self"):
        params, args = "self, *args, **kwargs", "self, *args, **kwargs"
    else:
        if any(p.startswith("_x_") for p in pos + kwonly):  # the wrapper's own names
            raise TypeError(f"exclusive: {name}() has a parameter named _x_...")
        defaults = method.__defaults__ or ()
        kwdefaults = method.__kwdefaults__ or {}
        parts = []
        for i, p in enumerate(pos):
            if i >= n_pos - len(defaults):  # p=default: the method's own default object
                ns[f"_x_default_{p}"] = defaults[i - (n_pos - len(defaults))]
                p = f"{p}=_x_default_{p}"
            parts.append(p)
        if kwonly:
            parts.append("*")
        for p in kwonly:
            if p in kwdefaults:
                ns[f"_x_default_{p}"] = kwdefaults[p]
                p = f"{p}=_x_default_{p}"
            parts.append(p)
        params = ", ".join(parts)
        args = ", ".join([*pos, *(f"{p}={p}" for p in kwonly)])
    src = _EXCLUSIVE_SRC.format(name=name, params=params, args=args)
    filename = f"<seer_env.env.exclusive {method.__qualname__}>"
    exec(compile(src, filename, "exec"), ns)
    # tracebacks show the wrapper's lines
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    return cast(_F, functools.wraps(method)(ns[name]))


def close_now(env: Any) -> None:
    """What close() does once the gate is held (``gate.close(close_now, env)``:
    ``env._close_now()``)."""
    env._close_now()


#: Envs not collected yet (their gates are re-created in a child of fork()).
_live_envs: weakref.WeakSet[Any] = weakref.WeakSet()


def track(env: Any) -> None:
    """Keep ``env`` on the list of envs whose gates a child of ``fork()``
    replaces (a gate another thread of the parent held stays held in the
    child, where that thread does not exist)."""
    _live_envs.add(env)


def _after_fork_in_child() -> None:
    # The thread that held an env's gate at the fork does not exist in the
    # child: give the env a fresh gate, and if a call was in progress, say so.
    # (A gate held by the forking thread itself stays: its call goes on here.)
    for env in list(_live_envs):
        old = env._busy
        if old.owned():
            continue
        if old.locked():
            env._interrupted = ("the process forked while another thread was inside a call of "
                                "this env")
        env._busy = new_gate()
        env._busy.closing = old.closing


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
