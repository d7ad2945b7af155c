"""The background stepper of the batched env's asynchronous API (``send``/``recv``).

`seer_env.env.SeerVectorEnv.send` checks its actions and hands the
instances to the env's `Stepper`: one Python thread per env that
makes the native calls (``seer_runtime_step`` and the autoresets'
``seer_runtime_reset``, through `Runtime`, which
cffi makes with the GIL released), so the caller's Python -- a policy's
forward pass -- runs while the instances step on the runtime's pool.  The
runtime takes one call at a time: sends that queue up while a call runs are
merged into the next call (their instances are disjoint: an instance is sent
again only once received).  Instances finish in the order they were sent,
whatever the timing, so `recv` returns the
same instances for the same sequence of sends and receives.

The thread holds the runtime, never the env: an env dropped with steps in
flight lets its stepper finish the call that runs, drop the queued ones and
end (`weakref.finalize`), and the runtime is freed after that.  In a
child of ``fork()`` the thread does not exist: a stepper with work queued or
running marks its env as needing ``reset()`` (as `seer_env._bind.gate` marks
a call another thread was in), one without keeps its finished results and
starts a new thread on its next send.
"""

from __future__ import annotations

import collections
import os
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from ..errors import OutOfMemoryError, SeerError

#: How often a waiting recv() wakes up (to see whether the thread is still
#: there, and to run a signal handler whose signal another thread took).
_POLL_S = 0.05
#: How often an idle thread looks whether its env was collected (abandon()).
_IDLE_S = 0.25


@dataclass
class Job:
    """One send(): its instances, in the order given, and what the native calls
    do with them (``(B,)`` masks: step, or reset first as an autoreset does)."""

    ids: np.ndarray
    step: np.ndarray
    reset: np.ndarray
    #: ``(B,)`` seeds: of the instances reset before stepping, and (SAME_STEP)
    #: of those reset if their step finishes them
    seeds: np.ndarray


@dataclass
class Failure:
    """A native call that raised: its error and the instances it was running;
    ``known``: the runtime's own report (what it did is known: the instances
    that failed need a reset and say so), not a bug's."""

    error: SeerError
    ids: np.ndarray
    known: bool = True


@dataclass
class Finals:
    """SAME_STEP: rows of the final step of the instances it finished (and reset
    at once): obs, reward, terminated, truncated, alive, active, info."""

    rows: dict[int, tuple[np.ndarray, ...]] = field(default_factory=dict)


class Stepper:
    """The native calls of an env's sends, on one background thread.

    ``rt``: the env's runtime; ``same_step``: reset an instance its step
    finishes in the same call (``AutoresetMode.SAME_STEP``), keeping its final
    rows in `finals`; ``env``: the env, held weakly (marked on fork).
    Every attribute below is read and written under `cond`.
    """

    def __init__(self, rt: Any, same_step: bool, env: Any) -> None:
        self.rt = rt
        self.same_step = same_step
        self._env = weakref.ref(env)
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.jobs: list[Job] = []  # sent, not started
        self.running: list[Job] = []  # in the native call now
        self.ready: collections.deque[int] = collections.deque()  # finished, not received
        self.failures: list[Failure] = []
        self.finals = Finals()
        self.stopping = False
        self.thread: threading.Thread | None = None
        _live.add(self)

    # -- the caller's side (the env, inside its call gate) --------------------------

    def submit(self, job: Job) -> None:
        """Queue ``job``; start the thread if it is not running."""
        with self.cond:
            if self.stopping:  # pragma: no cover - the env refuses calls once closing
                raise RuntimeError("Stepper.submit after stop()")
            self.jobs.append(job)
            if self.thread is None or not self.thread.is_alive():
                thread = threading.Thread(target=_run, args=(self,), daemon=True,
                                          name="seer_env-stepper")
                try:
                    thread.start()
                except RuntimeError as exc:  # "can't start new thread": a thread limit
                    # nothing queued, no thread to wait for or join: reset()
                    # and close() work (they waited on the job for ever)
                    self.jobs.remove(job)
                    raise OutOfMemoryError(
                        f"the background thread that runs send() and async_reset() could "
                        f"not start ({exc}): the process is at its thread or memory limit "
                        "(ulimit -u, a container's pids.max); nothing was sent") from None
                self.thread = thread
            self.cond.notify_all()

    def busy(self) -> bool:
        """Sends queued or in a native call."""
        return bool(self.jobs or self.running)

    def wait(self, ready: int) -> None:
        """Wait until ``ready`` instances are finished, a call failed, or nothing
        runs any more.  Interruptible (Ctrl-C): nothing changes here."""
        with self.cond:
            while len(self.ready) < ready and not self.failures and self.busy():
                self.cond.wait(_POLL_S)
                if self.busy() and not (self.thread and self.thread.is_alive()):
                    raise RuntimeError(  # pragma: no cover - a bug, not a user error
                        "seer_env: the stepper thread ended with work left")

    def drain(self) -> None:
        """Wait until no send is queued or running (their results stay)."""
        with self.cond:
            while self.busy():
                self.cond.wait(_POLL_S)
                if self.busy() and not (self.thread and self.thread.is_alive()):
                    raise RuntimeError(  # pragma: no cover - a bug, not a user error
                        "seer_env: the stepper thread ended with work left")

    def clear(self) -> None:
        """Forget every result and failure (after drain(): a full reset)."""
        with self.cond:
            self.ready.clear()
            self.failures.clear()
            self.finals.rows.clear()

    def abandon(self) -> None:
        """The env was collected: end the thread after the call that runs (the
        queued sends are dropped).  Waits for no lock: the collector may run
        on any thread, this one included, at any point.  An idle thread is
        woken at once where the lock is free (where it is held, by whichever
        thread, the thread sees `stopping` when it next looks, within
        ``_IDLE_S``: an env dropped without close() kept its thread and its
        runtime that long, and a loop that made and dropped many held as many
        threads)."""
        self.stopping = True
        lock = self.lock
        if lock.acquire(blocking=False):
            try:
                self.cond.notify_all()
            finally:
                lock.release()

    def stop(self, join: bool = True, timeout: float | None = None) -> None:
        """Drop the queued sends, let the running call end, end the thread."""
        with self.cond:
            self.stopping = True
            self.jobs.clear()
            self.cond.notify_all()
            t = self.thread
        if join and t is not None and t is not threading.current_thread():
            t.join(timeout)

    # -- fork ----------------------------------------------------------------------

    def after_fork_in_child(self) -> None:
        # The thread and whatever it was doing do not exist here; the lock may
        # be held by it.  Work in flight is lost: the env must be reset.
        lost = bool(self.jobs or self.running)
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.thread = None
        self.jobs = []
        self.running = []
        if lost:
            self.ready.clear()
            self.failures.clear()
            self.finals.rows.clear()
            env = self._env()
            if env is not None:
                env._interrupted = ("the process forked while steps sent with send() were "
                                    "in flight")


def _run(st: Stepper) -> None:
    """The thread: take every queued send, run them as one native call (or two:
    the autoresets' reset, then the step), publish the results, repeat."""
    rt = st.rt
    while True:
        with st.cond:
            while not st.jobs and not st.stopping:
                st.cond.wait(_IDLE_S)  # a timeout: abandon() sets stopping unlocked
            if st.stopping:
                return
            jobs, st.jobs = st.jobs, []
            st.running = jobs
        try:
            finals = _execute(rt, jobs, st.same_step)
            failure = None
        except SeerError as exc:
            finals = {}
            failure = Failure(exc, np.concatenate([j.ids for j in jobs]))
        except BaseException as exc:  # pragma: no cover - a bug; reported, not lost
            finals = {}
            failure = Failure(SeerError(f"the background step failed: {exc!r}"),
                              np.concatenate([j.ids for j in jobs]), known=False)
        with st.cond:
            st.running = []
            if failure is not None:
                st.failures.append(failure)
            else:
                st.finals.rows.update(finals)
                for j in jobs:
                    st.ready.extend(j.ids.tolist())
            st.cond.notify_all()
            del jobs
            if st.stopping:
                return


def _execute(rt: Any, jobs: list[Job], same_step: bool) -> dict[int, tuple[np.ndarray, ...]]:
    """The native calls of ``jobs`` (disjoint instances): the resets that come
    first (autoresets, async_reset), then the steps; with ``same_step``, the
    instances a step finished are reset at once, their final rows kept."""
    if len(jobs) == 1:
        step, reset, seeds = jobs[0].step, jobs[0].reset, jobs[0].seeds
    else:
        step = np.logical_or.reduce([j.step for j in jobs])
        reset = np.logical_or.reduce([j.reset for j in jobs])
        seeds = cast(np.ndarray, np.sum([j.seeds for j in jobs], axis=0,  # disjoint rows
                                        dtype=np.uint64))
    finals: dict[int, tuple[np.ndarray, ...]] = {}
    if reset.any():
        rt.reset(seeds.tolist(), reset)
    if step.any():
        rt.step(step)
        if same_step:
            fin = step & ~rt.alive.any(axis=1)
            if fin.any():
                for i in np.flatnonzero(fin).tolist():
                    finals[i] = (rt.obs[i].copy(), rt.reward[i].copy(),
                                 rt.terminated[i].copy(), rt.truncated[i].copy(),
                                 rt.alive[i].copy(), rt.active[i].copy(), rt.info[i].copy())
                rt.reset(seeds.tolist(), fin)
    return finals


#: Steppers not collected yet (a child of fork() resets them).
_live: weakref.WeakSet[Stepper] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for st in list(_live):
        st.after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
