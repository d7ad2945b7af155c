"""The thin 1:1 layer over the native runtime: the only module that touches ``ffi``/``lib``.

A :class:`Runtime` owns one native runtime (``B`` instances of one model sharing
one executor), checks every status code in one place (:func:`_check`) and exposes
the runtime's in-place buffers as NumPy views::

    rt = Runtime("phold", {"num_entities": 64, "events_per_entity": 4, "remote": 0.5,
                           "mean": 1.0, "lookahead": 0.5, "work": 0,
                           "step_duration": 4.0}, num_instances=2, threads=2)
    rt.reset([1, 2])
    rt.actions[:] = 0
    rt.step()
    print(rt.obs.shape)   # (2, 64, 4): overwritten by the next call
    rt.close()

The views are zero-copy and valid until :meth:`Runtime.close`; callers that
hand arrays to users copy them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _native  # type: ignore[attr-defined]
from .errors import (
    ClosedError,
    ConfigError,
    ContractViolation,
    ExecutorError,
    InvalidActionError,
    ModelError,
    SeerError,
    StateError,
)

ffi = _native.ffi
lib = _native.lib

EXECUTORS = {"serial": lib.SEER_EXECUTOR_SERIAL, "parallel": lib.SEER_EXECUTOR_PARALLEL}

_STATUS_ERRORS: dict[int, type[SeerError]] = {
    lib.SEER_E_PAST: ContractViolation,
    lib.SEER_E_LOOKAHEAD: ContractViolation,
    lib.SEER_E_TARGET: ContractViolation,
    lib.SEER_E_PAYLOAD: ContractViolation,
    lib.SEER_E_TIME: ContractViolation,
    lib.SEER_E_PHASE: ContractViolation,
    lib.SEER_E_MODEL: ModelError,
    lib.SEER_E_ACTION: InvalidActionError,
    lib.SEER_E_CONFIG: ConfigError,
    lib.SEER_E_NOMEM: SeerError,
    lib.SEER_E_ORDER: StateError,
    lib.SEER_E_ARG: ConfigError,
    lib.SEER_E_EXECUTOR: ExecutorError,
}


def error_for(code: int, message: str) -> SeerError:
    """The exception for a native status code."""
    return _STATUS_ERRORS.get(code, SeerError)(message)


def cpu_count() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def resolve_threads(threads: int | str, executor: str) -> int:
    """Turn ``threads=`` ("auto", 1, N) into the pool size to create ``executor`` with.

    ``"auto"`` gives 1: a parallel runtime with ``threads="auto"`` starts on one
    thread and :mod:`seer_env.stpa` chooses its configuration during the first
    steps.
    """
    if executor not in EXECUTORS:
        raise ConfigError(f"executor={executor!r} must be one of {sorted(EXECUTORS)}")
    if isinstance(threads, str):
        if threads != "auto":
            raise ConfigError(f"threads={threads!r} must be 'auto' or a positive int")
        return 1
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise ConfigError(f"threads={threads!r} must be 'auto' or a positive int")
    if not 1 <= int(threads) <= 1024:
        raise ConfigError(f"threads={threads} must be in [1, 1024]")
    if executor == "serial" and int(threads) != 1:
        raise ConfigError(f"executor='serial' runs on one thread; got threads={threads}")
    return int(threads)


@dataclass(frozen=True)
class Sizes:
    """The model's sizes for one configuration (from its ``describe``)."""

    num_entities: int
    num_agents: int
    obs_dim: int
    action_dim: int
    action_kind: str  # "discrete" or "box"
    action_n: int
    action_low: float
    action_high: float
    info_dim: int
    state_dim: int
    entity_size: int
    lookahead: float
    step_duration: float


class Runtime:
    """B instances of one native model on one executor.

    Args:
        model: model name (``"phold"``, ``"pcs"``, ``"aircraft"``): the C table
            ``seer_model_<model>`` and config struct ``seer_<model>_config``.
        config: values for every field of the C config struct.
        num_instances: ``B``, the number of independent instances.
        executor: ``"parallel"`` or ``"serial"`` (the reference).
        threads: pool size including the calling thread, or ``"auto"``: with the
            parallel executor, STPA (:mod:`seer_env.stpa`) times the candidate
            configurations (the serial executor, 1..cores threads) on the first
            real steps and keeps the fastest; :attr:`stpa` holds the decision.
        max_cycles: truncate every agent after that many steps (0 = never).
        stpa_options: keyword arguments of :class:`seer_env.stpa.Stpa` (``threads="auto"``).

    Attributes:
        executor: the executor running now (STPA may switch ``"parallel"`` to
            ``"serial"`` when that is faster; outputs do not depend on it).
        requested_executor: the executor asked for.
        stpa: the :class:`seer_env.stpa.Stpa` controller, or None when the pool
            size was given (or set with :meth:`set_threads`).
    """

    def __init__(
        self,
        model: str,
        config: Mapping[str, Any],
        num_instances: int = 1,
        executor: str = "parallel",
        threads: int | str = "auto",
        max_cycles: int = 0,
        stpa_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self.model = model
        self.executor = executor
        self.requested_executor = executor
        self.stpa: Any = None
        self._trace_cap = 0
        nthreads = resolve_threads(threads, executor)
        if isinstance(num_instances, bool) or not isinstance(num_instances, (int, np.integer)):
            raise ConfigError(f"num_instances={num_instances!r} must be a positive int")
        if not 1 <= int(num_instances) <= 1 << 20:
            raise ConfigError(f"num_instances={num_instances} must be in [1, 1048576]")
        if isinstance(max_cycles, bool) or not isinstance(max_cycles, (int, np.integer)):
            raise ConfigError(f"max_cycles={max_cycles!r} must be a non-negative int")
        if max_cycles < 0:
            raise ConfigError(f"max_cycles={max_cycles} must be >= 0")
        getter = getattr(lib, f"seer_model_ptr_{model}", None)
        if getter is None:
            raise ConfigError(f"unknown model {model!r}")
        self._model_ptr = getter()
        self._config = ffi.new(f"seer_{model}_config *")
        for key, value in config.items():
            try:
                setattr(self._config, key, value)
            except AttributeError:
                raise ConfigError(f"{model}: unknown config field {key!r}") from None
            except (TypeError, OverflowError) as exc:
                raise ConfigError(f"{model}: config field {key}={value!r}: {exc}") from None
        out = ffi.new("seer_runtime **")
        err = ffi.new("char[]", 512)
        rc = lib.seer_runtime_create(
            self._model_ptr,
            self._config,
            ffi.sizeof(f"seer_{model}_config"),
            int(num_instances),
            EXECUTORS[executor],
            nthreads,
            int(max_cycles),
            out,
            err,
            512,
        )
        if rc != lib.SEER_OK:
            raise error_for(rc, ffi.string(err).decode())
        self._h = ffi.gc(out[0], lib.seer_runtime_destroy)
        self.num_instances = int(num_instances)
        self.max_cycles = int(max_cycles)
        s = lib.seer_runtime_sizes(self._h)
        kind = "discrete" if lib.seer_sizes_action_kind(s) == lib.SEER_ACTION_DISCRETE else "box"
        self.sizes = Sizes(
            num_entities=s.num_entities,
            num_agents=s.num_agents,
            obs_dim=s.obs_dim,
            action_dim=s.action_dim,
            action_kind=kind,
            action_n=s.action_n,
            action_low=float(s.action_low),
            action_high=float(s.action_high),
            info_dim=s.info_dim,
            state_dim=s.state_dim,
            entity_size=s.entity_size,
            lookahead=float(s.lookahead),
            step_duration=float(s.step_duration),
        )
        self.info_names = tuple(
            ffi.string(lib.seer_model_info_name(self._model_ptr, i)).decode()
            for i in range(s.info_dim)
        )
        B, A = self.num_instances, s.num_agents
        act_dtype = np.int32 if kind == "discrete" else np.float32
        act_shape = (B, A) if kind == "discrete" else (B, A, s.action_dim)
        self.actions = self._view(lib.SEER_BUF_ACTIONS, act_dtype, act_shape)
        self.obs = self._view(lib.SEER_BUF_OBS, np.float32, (B, A, s.obs_dim))
        self.reward = self._view(lib.SEER_BUF_REWARD, np.float32, (B, A))
        self.terminated = self._view(lib.SEER_BUF_TERMINATED, np.bool_, (B, A))
        self.truncated = self._view(lib.SEER_BUF_TRUNCATED, np.bool_, (B, A))
        self.alive = self._view(lib.SEER_BUF_ALIVE, np.bool_, (B, A))
        self.active = self._view(lib.SEER_BUF_ACTIVE, np.bool_, (B, A))
        self.info = self._view(lib.SEER_BUF_INFO, np.float64, (B, A, s.info_dim))
        self._mask = np.zeros(B, dtype=np.uint8)
        if threads == "auto" and executor == "parallel":
            from .stpa import Stpa

            self.stpa = Stpa(self, **dict(stpa_options or {}))

    # -- plumbing -------------------------------------------------------------

    def _view(self, which: int, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        ptr = lib.seer_runtime_buffer(self._h, which)
        if n == 0:
            return np.zeros(shape, dtype=dtype)
        return np.frombuffer(ffi.buffer(ptr, n), dtype=dtype).reshape(shape)

    def _handle(self) -> Any:
        h = getattr(self, "_h", None)
        if h is None:
            raise ClosedError(f"the {self.model} runtime is closed")
        return h

    def _check(self, rc: int) -> None:
        if rc != lib.SEER_OK:
            raise error_for(rc, ffi.string(lib.seer_runtime_error(self._h)).decode())

    def _mask_ptr(self, mask: Iterable[bool] | None) -> Any:
        if mask is None:
            return ffi.NULL
        m = np.asarray(mask, dtype=bool)
        if m.shape != (self.num_instances,):
            raise ValueError(f"mask must have shape ({self.num_instances},), got {m.shape}")
        self._mask[:] = m
        return ffi.from_buffer("uint8_t[]", self._mask)

    # -- API ------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return getattr(self, "_h", None) is None

    @property
    def threads(self) -> int:
        return int(lib.seer_runtime_threads(self._handle()))

    def set_threads(self, threads: int) -> None:
        """Resize the worker pool (parallel executor). Outputs do not depend on it.

        An explicit pool size turns STPA off (:attr:`stpa` becomes None).
        """
        h = self._handle()
        with self._lock:
            self._check(lib.seer_runtime_set_threads(h, int(threads)))
        self.stpa = None

    def set_executor(self, executor: str, threads: int = 1) -> None:
        """Switch executor and pool size between calls (pending events move along).

        Outputs do not depend on it: both executors hand every entity the same
        events in the same order.  STPA uses it to time the serial executor
        inside the run; users may call it too::

            rt.set_executor("serial")          # the reference, one thread
            rt.set_executor("parallel", 2)
        """
        self._set_executor(executor, threads)
        self.stpa = None

    def _set_executor(self, executor: str, threads: int) -> None:
        """:meth:`set_executor` without turning STPA off (STPA's own switch)."""
        if executor not in EXECUTORS:
            raise ConfigError(f"executor={executor!r} must be one of {sorted(EXECUTORS)}")
        h = self._handle()
        with self._lock:
            self._check(lib.seer_runtime_set_executor(h, EXECUTORS[executor], int(threads)))
        self.executor = executor

    def _step_native(self, mask_ptr: Any) -> None:
        h = self._handle()
        with self._lock:
            self._check(lib.seer_runtime_step(h, mask_ptr))

    def reset(self, seeds: Sequence[int], mask: Iterable[bool] | None = None) -> None:
        """Reset the instances selected by ``mask`` (all if None) with ``seeds[i]``."""
        h = self._handle()
        s = np.asarray([int(x) & 0xFFFFFFFFFFFFFFFF for x in seeds], dtype=np.uint64)
        if s.shape != (self.num_instances,):
            raise ValueError(f"need {self.num_instances} seeds, got {s.shape[0]}")
        with self._lock:
            self._check(
                lib.seer_runtime_reset(h, ffi.from_buffer("uint64_t[]", s), self._mask_ptr(mask))
            )

    def step(self, mask: Iterable[bool] | None = None) -> None:
        """Step the selected instances with the actions in :attr:`actions` (GIL released)."""
        st = self.stpa
        if st is not None:
            st.countdown -= 1
            if st.countdown <= 0:  # preflight, or a periodic drift check
                st.step(self._mask_ptr(mask))
                return
        h = self._handle()
        with self._lock:
            self._check(lib.seer_runtime_step(h, self._mask_ptr(mask)))

    def step_index(self, instance: int = 0) -> int:
        out = ffi.new("uint64_t *")
        self._check(lib.seer_runtime_step_index(self._handle(), instance, out))
        return int(out[0])

    def entity_events(self, instance: int = 0) -> np.ndarray:
        """Events handled by each entity of ``instance`` since its reset."""
        out = np.zeros(self.sizes.num_entities, dtype=np.uint64)
        self._check(
            lib.seer_runtime_entity_events(
                self._handle(), instance, ffi.from_buffer("uint64_t[]", out)
            )
        )
        return out

    def pending_events(self, instance: int = 0) -> int:
        out = ffi.new("uint64_t *")
        self._check(lib.seer_runtime_pending_events(self._handle(), instance, out))
        return int(out[0])

    def entity_states(self, instance: int = 0) -> bytes:
        """Raw bytes of every entity's state (num_entities * entity_size)."""
        n = self.sizes.num_entities * self.sizes.entity_size
        out = ffi.new("char[]", max(n, 1))
        self._check(lib.seer_runtime_entity_states(self._handle(), instance, out))
        return ffi.buffer(out, n)[:]

    def entity_states_as(self, ctype: str, instance: int = 0) -> Any:
        """Entity states as a cffi array of the model's public state struct."""
        raw = self.entity_states(instance)
        arr = ffi.new(f"{ctype}[]", self.sizes.num_entities)
        ffi.memmove(arr, raw, len(raw))
        return arr

    def global_state(self, instance: int = 0) -> np.ndarray:
        out = np.zeros(self.sizes.state_dim, dtype=np.float32)
        self._check(
            lib.seer_runtime_global_state(self._handle(), instance, ffi.from_buffer("float[]", out))
        )
        return out

    def stats(self) -> dict[str, int]:
        s = ffi.new("seer_stats *")
        lib.seer_runtime_stats(self._handle(), s)
        return {
            "events": int(s.events),
            "windows": int(s.windows),
            "steps": int(s.steps),
            "pool_refills": int(s.pool_refills),
            "pool_events": int(s.pool_events),
        }

    # -- tracing ----------------------------------------------------------------

    def trace(self, capacity: int) -> None:
        """Record up to ``capacity`` trace records per worker thread (0: off)."""
        h = self._handle()
        with self._lock:
            self._check(lib.seer_runtime_trace(h, int(capacity)))
        self._trace_cap = int(capacity)

    def trace_records(self, active_only: bool = False) -> list[np.ndarray]:
        """Copies of each worker's records (structured arrays of :data:`TRACE_DTYPE`).

        One array per thread of the pool, the active ones first
        (:attr:`threads` of them).  A parked thread has records only if it
        took a chunk of a call late (at most one per call, right after the
        pool was shrunk); ``active_only=True`` leaves the parked threads out.
        """
        h = self._handle()
        out = []
        n_threads = self.threads if active_only else int(lib.seer_runtime_pool_size(h))
        for t in range(n_threads):
            n = int(lib.seer_runtime_trace_count(h, t))
            if n == 0:
                out.append(np.zeros(0, dtype=TRACE_DTYPE))
                continue
            ptr = lib.seer_runtime_trace_records(h, t)
            buf = ffi.buffer(ptr, n * TRACE_DTYPE.itemsize)
            out.append(np.frombuffer(buf, dtype=TRACE_DTYPE).copy())
        return out

    def trace_dropped(self) -> int:
        return int(lib.seer_runtime_trace_dropped(self._handle()))

    def trace_clear(self) -> None:
        lib.seer_runtime_trace_clear(self._handle())

    def event_name(self, event_type: int) -> str:
        return ffi.string(lib.seer_runtime_event_name(self._handle(), event_type)).decode()

    def close(self) -> None:
        """Join the workers and free native memory. Idempotent."""
        h = getattr(self, "_h", None)
        if h is None:
            return
        with self._lock:
            self._h = None
            for name in ("actions", "obs", "reward", "terminated", "truncated", "alive",
                         "active", "info"):
                setattr(self, name, None)
            ffi.release(h)

    def __del__(self) -> None:  # pragma: no cover - GC path
        try:
            self.close()
        except Exception:
            pass


#: NumPy layout of ``seer_trace_rec`` (checked against C's size at import).
TRACE_DTYPE = np.dtype([
    ("t0_ns", np.uint64), ("t1_ns", np.uint64), ("sim_time", np.float64),
    ("kind", np.uint32), ("instance", np.uint32), ("entity", np.uint32),
    ("type", np.uint32), ("count", np.uint32), ("pad_", np.uint32),
])
if TRACE_DTYPE.itemsize != ffi.sizeof("seer_trace_rec"):  # pragma: no cover
    raise ImportError("seer_trace_rec layout does not match TRACE_DTYPE")
TRACE_KINDS = {
    int(lib.SEER_TRACE_EVENT): "event",
    int(lib.SEER_TRACE_ACT): "act",
    int(lib.SEER_TRACE_WINDOW): "window",
    int(lib.SEER_TRACE_BOUNDARY): "boundary",
    int(lib.SEER_TRACE_BARRIER): "barrier",
    int(lib.SEER_TRACE_INIT): "init",
}


def rng_seed_state(seed: int, entity: int) -> tuple[int, int, int, int]:
    """The xoshiro256** state of entity ``entity`` under instance seed ``seed``."""
    s = ffi.new("uint64_t[4]")
    lib.seer_rng_seed_state(int(seed) & 0xFFFFFFFFFFFFFFFF, int(entity), s)
    return (int(s[0]), int(s[1]), int(s[2]), int(s[3]))


def config_struct_fields(model: str) -> list[str]:
    """Field names of a model's C config struct."""
    return [name for name, _ in ffi.typeof(f"seer_{model}_config").fields]
