"""The thin 1:1 layer over the native runtime: [`Runtime`][seer_env.registry.Runtime].

Every model lives in an extension module of its own (the runtime compiled
together with the model, see `seer_env._bind.build`, loaded by
`seer_env._bind.loader`); `NativeModel` wraps one
such module and its model table, and [`Runtime`][seer_env.registry.Runtime] one native runtime
(``B`` instances of that model sharing one executor).  Status codes are
checked in one place (`error_for`); the runtime's
in-place buffers are NumPy views:

```python
from seer_env import registry
from seer_env.registry import Runtime       # this class, where the public API exports it
model = registry.native_model("phold_v0")   # a NativeModel (registry: a higher layer)
rt = Runtime(model, {"num_entities": 64}, num_instances=2, threads=2)
rt.reset([1, 2])
rt.actions[:] = 0
rt.step()
print(rt.obs.shape)   # (2, 64, 4): overwritten by the next call
rt.close()
```

Configurations are filled through the model's parameter table: names,
types, defaults and ranges come from C, which checks every value.  The
views are zero-copy and valid until `Runtime.close`; callers that hand
arrays to users copy them.

The top of the bindings (``[tool.importlinter]`` in ``pyproject.toml``), beside
`seer_env._bind.pytable` (tables made at run time), with `seer_env._bind.records`,
`seer_env._bind.native` and `seer_env._bind.loader` below it: the modules that touch ``ffi``/``lib``
(``tests/test_layers.py`` checks that no other does).  A `Runtime` takes a
`NativeModel`, not a name
([`seer_env.registry.Runtime`][seer_env.registry.Runtime] resolves names), and knows nothing of
STPA: with ``threads="auto"`` it starts on one thread and sets
`Runtime.auto_threads`, and its owner attaches a step controller
(`seer_env.stpa.attach`, `Runtime.attach`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..budget import lease as _lease
from ..budget import thread_budget
from ..errors import ClosedError, ConfigError, OutOfMemoryError, SnapshotError
from .memory import (
    HOST_BUFFER_PARTS,
    aligned_zeros,
    alloc_zeros,
    native_parts_note,
    out_of_memory_error,
    threads_note,
    total_note,
)
from .native import _ERRLEN, Group, NativeModel, Sizes, c_text, error_for
from .records import (
    cpu_count,
    cpu_model,
    max_threads,
    opt_speculates,
    opt_windows_max,
    rng_seed_state,
    trace_dtype,
    trace_dtype_of,
    trace_kinds,
    trace_kinds_of,
)

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike  # a mask: anything np.asarray(mask, dtype=bool) reads

__all__ = ["EXECUTORS", "Runtime", "alloc_zeros", "cpu_count", "cpu_model", "group_action_view",
           "max_threads", "memory_estimate", "opt_speculates", "opt_windows_max", "process_calls",
           "resolve_threads", "rng_seed_state", "trace_dtype", "trace_kinds", "yes_no"]

#: steps and resets of every Runtime of this process, counted as each starts
#: (a hint: threads may lose a count): STPA reads it to tell the caller's own
#: work between two of its steps from other runtimes' calls (the other envs of
#: a round-robin loop), whose time no choice of its own changes
_CALLS = [0]


def process_calls() -> int:
    """How many steps and resets the runtimes of this process have started."""
    return _CALLS[0]

# -- runtimes -----------------------------------------------------------------------

EXECUTORS = ("serial", "parallel", "optimistic")


def _executor_code(lib: Any, executor: str) -> int:
    if not isinstance(executor, str) or executor not in EXECUTORS:
        raise ConfigError(f"executor={executor!r} must be one of {list(EXECUTORS)}")
    return {"serial": lib.SEER_EXECUTOR_SERIAL, "parallel": lib.SEER_EXECUTOR_PARALLEL,
            "optimistic": lib.SEER_EXECUTOR_OPTIMISTIC}[executor]


def resolve_threads(threads: int | str, executor: str) -> int:
    """Turn ``threads=`` ("auto", 1, N) into the pool size to create ``executor`` with.

    ``"auto"`` gives 1: a parallel runtime with ``threads="auto"`` starts on one
    thread and [`seer_env.stpa`][seer_env.stpa] chooses its configuration during the first
    steps.  The optimistic executor takes every CPU.
    """
    if not isinstance(executor, str) or executor not in EXECUTORS:
        raise ConfigError(f"executor={executor!r} must be one of {list(EXECUTORS)}")
    if isinstance(threads, str):
        if threads != "auto":
            raise ConfigError(f"threads={threads!r} must be 'auto' or a positive int")
        return thread_budget().threads if executor == "optimistic" else 1
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise ConfigError(f"threads={threads!r} must be 'auto' or a positive int")
    if not 1 <= int(threads) <= max_threads():
        raise ConfigError(f"threads={threads} must be in [1, {max_threads()}]")
    if executor == "serial" and int(threads) != 1:
        raise ConfigError(f"executor='serial' runs on one thread; got threads={threads}")
    return int(threads)


def _estimate(model: NativeModel, cfg: Any, opts: Any) -> dict[str, int]:
    """``seer_runtime_estimate``: the checks of ``seer_runtime_create``, the
    memory limit's included, without allocating anything; bytes by part."""
    lib, ffi = model.lib, model.ffi
    names: list[str] = []
    while (name := lib.seer_memory_part_name(len(names))) != ffi.NULL:
        names.append(c_text(ffi, name))
    parts = ffi.new("uint64_t[]", max(1, len(names)))
    err = ffi.new("char[]", _ERRLEN)
    rc = lib.seer_runtime_estimate(model.table, cfg, model.config_size, opts, parts,
                                   len(names), err, _ERRLEN)
    if rc != lib.SEER_OK:
        raise error_for(lib, rc, c_text(ffi, err))
    return {n: int(parts[k]) for k, n in enumerate(names)}


def memory_estimate(model: NativeModel, config: Mapping[str, Any] | None = None,
                    num_instances: int = 1, executor: str = "serial", check: int = 0,
                    threads: int | str = 1) -> dict[str, int]:
    """The bytes a [`Runtime`][seer_env.registry.Runtime] of this configuration would take, by part:
    ``"entity states"``, ``"pending events"`` (an estimate from the model's
    ``pending_events``, and at least a block of event records, 256 KiB or
    more, for each of the pool's ``threads``), ``"instance data"``, ``"global-state outputs"`` and
    each host buffer (``"observation buffer"``, ``"action buffer"``, ...).
    Their sum is what ``memory_limit`` (or the machine's memory) is checked
    against, before anything is allocated.  Nothing is allocated here:

    ```python
    parts = memory_estimate(native, {"num_uavs": 1 << 20}, 4)
    print(sum(parts.values()) / 2**30, max(parts, key=parts.get))
    ```

    `seer_env.registry.memory_estimate` takes a model's name as well.
    """
    lib, ffi = model.lib, model.ffi
    opts = ffi.new("seer_runtime_options *")
    opts.num_instances = _positive_int("num_instances", num_instances, 1, 1 << 20)
    opts.executor = _executor_code(lib, executor)
    opts.threads = resolve_threads(threads, executor)
    opts.check = check
    opts.memory_limit = 2**62  # report, do not refuse
    return _estimate(model, model.config_struct(config or {}), opts)


def _positive_int(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ConfigError(f"{name}={v!r} must be an int")
    if not lo <= int(v) <= hi:
        raise ConfigError(f"{name}={v} must be in [{lo}, {hi}]")
    return int(v)


def yes_no(name: str, v: Any) -> bool:
    """A yes/no key ``name``: a bool (NumPy's too), or the int 0 or 1 -- the
    rule of the models' bool parameters, and of every face's yes/no option.
    ``bool("false")`` is True, so anything else is refused
    (`ConfigError`) rather than read by its truth:

    ```python
    yes_no("copy", 0)        # False
    yes_no("copy", "no")     # ConfigError: copy='no' must be a bool
    ```
    """
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)) and int(v) in (0, 1):
        return bool(v)
    raise ConfigError(f"{name}={v!r} must be a bool")


def _snapshot_bytes(data: Any) -> memoryview:
    """``data`` (a runtime snapshot: bytes, bytearray or memoryview) as bytes."""
    try:
        return memoryview(data).cast("B")
    except TypeError:
        raise SnapshotError(f"a snapshot is bytes, got {type(data).__name__}") from None


class Runtime:
    """B instances of one native model on one executor.

    Args:
        model: a `NativeModel` ([`seer_env.registry.Runtime`][seer_env.registry.Runtime] also
            takes the name of a registered model: ``"phold_v0"``, or a shipped
            model's C name such as ``"pcs"``).
        config: parameter values (the others keep their defaults).
        num_instances: ``B``, the number of independent instances.
        executor: ``"parallel"`` (conservative windows), ``"optimistic"``
            (speculation with rollback inside a step: any lookahead, 0 included)
            or ``"serial"`` (the reference).
        threads: pool size including the calling thread, or ``"auto"``: with the
            parallel executor, the runtime starts on one thread and
            `auto_threads` is True; the owner attaches a controller
            ([`seer_env.stpa.attach`][seer_env.stpa.attach]; the envs and
            [`seer_env.registry.Runtime`][seer_env.registry.Runtime] do), which times the candidate
            configurations (the serial executor, the parallel executor on
            1..cores threads, and the optimistic executor where the lookahead is
            0 or too small for windows) on the first real steps and keeps the
            fastest; `stpa` holds the decision.  A model with lookahead 0
            starts on the serial executor and may move to the optimistic one.
            With the optimistic executor, "auto" takes every CPU.
        max_cycles: truncate every agent after that many steps (0, the
            default here: never; None: the model's default, as the envs use).
        check: checking-mode flags (``SEER_CHECK_*``; [`seer_env.check`][seer_env.check]).
        max_step_events: events one instance may handle in one step before the
            step fails with [`BudgetError`][seer_env.errors.BudgetError] (0: 10**8).
        memory_limit: bytes the runtime may take (0: the machine's memory):
            entity states, events and the host buffers (actions, observations,
            rewards, flags, infos, global states), estimated from the model's
            sizes before anything is allocated (`memory_estimate`).  A
            larger configuration raises [`ConfigError`][seer_env.errors.ConfigError]
            naming the total, its biggest part and the limit.  An allocation
            that fails all the same (a process limit such as ``ulimit -v``)
            raises [`OutOfMemoryError`][seer_env.errors.OutOfMemoryError] (a
            ``MemoryError`` too) naming the buffer or the runtime's parts and
            their bytes; nothing of the runtime is kept.
        oversubscribe: let more threads than CPUs take part in calls (by
            default the pool's active threads are capped at the CPU count).
        enforce_masks: for a model with action masks, refuse the actions they
            forbid (``InvalidActionError``, before anything changes); False lets
            them reach the model's ``act`` (a baseline trained without masks).

    Attributes:
        executor: the executor running now (STPA may switch ``"parallel"`` to
            ``"serial"`` or ``"optimistic"`` when that is faster; outputs do not
            depend on it).
        requested_executor: the executor asked for.
        config: the parameters as the model completed them (derived values
            filled in).
        auto_threads: ``threads="auto"`` with the parallel executor: the
            configuration is for a controller to choose (`attach`).
        stpa: the attached step controller (a [`seer_env.stpa.Stpa`][seer_env.stpa.Stpa]), or
            None: none attached, or the pool size was set (`set_threads`,
            [`set_executor`][seer_env.registry.Runtime.set_executor]).
        memory: the estimate checked against ``memory_limit``: bytes by part
            ([`memory_estimate`][seer_env.registry.memory_estimate]; the total is the sum).
    """

    #: closed: its last thread count and counters (`close` keeps them for
    #: `threads` and `stats`); None while open
    _final: tuple[int, dict[str, int]] | None = None

    # The host buffers, which _host_buffers sets by name (setattr): arrays the
    # runtime writes in place, one row per instance and agent.
    actions: np.ndarray  # (B, A) int32, (B, A, D) int32/float32, (B, A, D) uint32 words (groups)
    obs: np.ndarray  # (B, A, obs_dim) float32
    reward: np.ndarray  # (B, A) float32
    terminated: np.ndarray  # (B, A) bool
    truncated: np.ndarray  # (B, A) bool
    alive: np.ndarray  # (B, A) bool
    active: np.ndarray  # (B, A) bool
    info: np.ndarray  # (B, A, info_dim) float64
    mask: np.ndarray  # (B, A, mask_dim) bool

    def __init__(
        self,
        model: NativeModel,
        config: Mapping[str, Any] | None = None,
        num_instances: int = 1,
        executor: str = "parallel",
        threads: int | str = "auto",
        max_cycles: int | None = 0,
        *,
        check: int = 0,
        shuffle_seed: int = 0,
        max_step_events: int = 0,
        memory_limit: int = 0,
        oversubscribe: bool = False,
        enforce_masks: bool = True,
    ) -> None:
        self._lock = threading.Lock()
        # check_actions' own lock: it runs beside a call (never under _lock);
        # close() takes both
        self._check_lock = threading.Lock()
        if not isinstance(model, NativeModel):
            raise ConfigError(f"model={model!r} must be a NativeModel (a model's name: "
                              "seer_env.registry.Runtime)")
        self.native = model
        self.model = model.name
        ffi, lib = self.ffi, self.lib = model.ffi, model.lib
        self.stpa: Any = None
        self._trace_cap = 0  # trace_capacity
        self._threads_now: int | None = None  # `threads`, as last read
        self._call_cap = 0  # the cap on a call's threads last set in C (0: none)
        #: the process's thread budget when the runtime was made (seer_env.budget;
        #: a bad SEER_ENV_THREADS is a ConfigError here)
        self.budget = thread_budget()
        B = _positive_int("num_instances", num_instances, 1, 1 << 20)
        _, sz = model.describe(config or {})
        #: the pool size asked for (``threads=``), before the cap at the CPUs
        self.requested_threads = threads
        auto = threads == "auto" and executor == "parallel"
        if auto and not sz.lookahead > 0.0:
            # "auto" starts lookahead 0 models on the serial executor; STPA may
            # move them to the optimistic one
            executor = "serial"
        self.executor = self.requested_executor = executor
        opts = ffi.new("seer_runtime_options *")
        opts.num_instances = B
        opts.executor = _executor_code(lib, executor)
        opts.threads = resolve_threads(threads, executor)
        opts.max_cycles = mc = model.max_cycles if max_cycles is None else _positive_int(
            "max_cycles", max_cycles, 0, 2**62)
        opts.check = check
        opts.shuffle_seed = shuffle_seed & 0xFFFFFFFFFFFFFFFF
        opts.max_step_events = _positive_int("max_step_events", max_step_events, 0, 2**62)
        opts.memory_limit = _positive_int("memory_limit", memory_limit, 0, 2**62)
        enforce_masks = yes_no("enforce_masks", enforce_masks)
        over = yes_no("oversubscribe", oversubscribe)
        opts.flags = (lib.SEER_RT_OVERSUBSCRIBE if over else 0) | (
            0 if enforce_masks else lib.SEER_RT_MASK_ADVISORY)
        #: actions the masks forbid are refused (the model's flags allowing)
        self.enforce_masks = enforce_masks and not (
            int(model.table.flags) & lib.SEER_MODEL_MASK_ADVISORY)
        cfg = model.config_struct(config or {})
        # every byte the runtime and the host buffers take is checked against
        # memory_limit (or the machine's memory) before any is allocated
        self.memory = _estimate(model, cfg, opts)
        self._host_buffers(sz, B, opts)
        out = ffi.new("seer_runtime **")
        err = ffi.new("char[]", _ERRLEN)
        rc = lib.seer_runtime_create(model.table, cfg, model.config_size, opts, out, err,
                                     _ERRLEN)
        if rc != lib.SEER_OK:
            self._drop_host_buffers()  # nothing half-made kept (a held traceback holds self)
            if rc == lib.SEER_E_NOMEM:  # the C side freed what it had made
                raise OutOfMemoryError(
                    f"{self.model}: {c_text(ffi, err)}: {native_parts_note(self.memory)}"
                    f"{threads_note(opts.threads)}; {total_note(self.memory)}") from None
            raise error_for(lib, rc, c_text(ffi, err))
        self._h = ffi.gc(out[0], lib.seer_runtime_destroy)
        self._native_step, self._null = lib.seer_runtime_step, ffi.NULL  # step()'s shortcuts
        _live_runtimes.add(self)
        self.num_instances = B
        self.max_cycles = mc
        self._config_ptr = lib.seer_runtime_config(self._h)
        self.config = model.read_config(self._config_ptr)
        self.sizes = model.sizes_of(lib.seer_runtime_sizes(self._h), self._config_ptr)
        self.info_names = model.info_names(self.sizes.info_dim) if self.sizes.num_groups == 1 \
            else tuple(dict.fromkeys(n for g in self.sizes.groups for n in g.info_names))
        self._mask = np.zeros(B, dtype=np.uint8)
        self._check_mask = np.zeros(B, dtype=np.uint8)  # check_actions' (beside _mask's user)
        self._check_err = ffi.new("char[]", _ERRLEN)
        self._snap_buf = bytearray()  # snapshot()'s scratch
        self.auto_threads = auto

    def _host_buffers(self, sz: Sizes, B: int, opts: Any) -> None:
        """The host buffers: NumPy arrays the runtime writes in place.  They
        belong to Python, so views of them outlive the runtime whatever is
        closed or collected first."""
        ffi, lib = self.ffi, self.lib
        A = sz.num_agents
        act_dtype: type[np.generic]
        act_shape: tuple[int, ...]
        if sz.num_groups > 1:  # 4-byte words; each group views its own (group_actions)
            act_dtype, act_shape = np.uint32, (B, A, sz.action_dim)
        elif sz.action_kind == "discrete":
            act_dtype, act_shape = np.int32, (B, A)
        else:
            act_dtype = np.int32 if sz.action_kind == "multi_discrete" else np.float32
            act_shape = (B, A, sz.action_dim)
        bufs = {
            "actions": (lib.SEER_BUF_ACTIONS, act_dtype, act_shape),
            "obs": (lib.SEER_BUF_OBS, np.float32, (B, A, sz.obs_dim)),
            "reward": (lib.SEER_BUF_REWARD, np.float32, (B, A)),
            "terminated": (lib.SEER_BUF_TERMINATED, np.bool_, (B, A)),
            "truncated": (lib.SEER_BUF_TRUNCATED, np.bool_, (B, A)),
            "alive": (lib.SEER_BUF_ALIVE, np.bool_, (B, A)),
            "active": (lib.SEER_BUF_ACTIVE, np.bool_, (B, A)),
            "info": (lib.SEER_BUF_INFO, np.float64, (B, A, sz.info_dim)),
            "mask": (lib.SEER_BUF_MASK, np.bool_, (B, A, sz.mask_dim)),
        }
        csz = ffi.new("seer_sizes *")
        csz.num_agents, csz.obs_dim, csz.action_dim, csz.info_dim, csz.mask_dim = (
            A, sz.obs_dim, sz.action_dim, sz.info_dim, sz.mask_dim)
        for name, (which, dtype, shape) in bufs.items():
            try:
                arr = aligned_zeros(shape, dtype)
            except MemoryError:
                self._drop_host_buffers()
                raise out_of_memory_error(
                    self.model, f"the runtime's {HOST_BUFFER_PARTS[name]} '{name}'",
                    int(lib.seer_buffer_bytes(csz, B, which)), shape, dtype,
                    f"; {total_note(self.memory)}") from None
            assert arr.nbytes == lib.seer_buffer_bytes(csz, B, which), name
            setattr(self, name, arr)
            if arr.nbytes:
                opts.buffers[which] = ffi.cast("void *", arr.ctypes.data)
        #: per group: a view of the action buffer in the group's dtype and shape
        #: ((B, count) int32, (B, count, dim) int32 or float32)
        self.group_actions: list[np.ndarray] = [
            group_action_view(self.actions, g) for g in sz.groups] if sz.num_groups > 1 \
            else [self.actions]

    def _drop_host_buffers(self) -> None:
        """Forget the host buffers made so far (a failed ``__init__``): the
        arrays go now, not when the exception's traceback (which holds this
        half-made runtime) goes."""
        for name in HOST_BUFFER_PARTS:
            self.__dict__.pop(name, None)

    # -- plumbing -------------------------------------------------------------

    @contextlib.contextmanager
    def _call(self) -> Any:
        """The native handle, for one call: under the runtime's lock, fetched
        inside it, so a concurrent close() waits for the call to end (and a
        call after close() raises ClosedError).  Every native call goes
        through here."""
        with self._lock:
            h = getattr(self, "_h", None)
            if h is None:
                raise ClosedError(f"the {self.model} runtime is closed")
            yield h

    def _check(self, h: Any, rc: int) -> None:
        if rc != self.lib.SEER_OK:
            raise error_for(self.lib, rc,
                            c_text(self.ffi, self.lib.seer_runtime_error(h)))

    def _mask_ptr(self, mask: ArrayLike | None) -> Any:
        if mask is None:
            return self.ffi.NULL
        m = np.asarray(mask, dtype=bool)
        if m.shape != (self.num_instances,):
            raise ConfigError(f"mask must have shape ({self.num_instances},), got {m.shape}")
        self._mask[:] = m
        return self.ffi.from_buffer("uint8_t[]", self._mask)

    # -- API ------------------------------------------------------------------

    def attach(self, controller: Any) -> None:
        """Attach a step controller ([`seer_env.stpa.Stpa`][seer_env.stpa.Stpa]; None detaches).

        The controller has ``countdown`` (an int), ``step(mask)`` and
        ``notify_reset()``: `step` hands the step to ``controller.step``
        when ``countdown`` is 1 or less (the controller runs it with
        `step_uncontrolled`) and otherwise runs it and takes one off
        ``countdown``; `reset` calls ``notify_reset()`` after a reset, and
        `close` calls ``notify_close()``, if it has one, before closing.
        """
        self.stpa = controller

    @property
    def closed(self) -> bool:
        return getattr(self, "_h", None) is None

    @property
    def threads(self) -> int:
        """Threads taking part in calls (capped at the CPUs unless ``oversubscribe``;
        closed: the last)."""
        n = self._threads_now
        if n is None or self._h is None:  # read once after each change (STPA asks often)
            if self._h is None and self._final is not None:
                return self._final[0]
            with self._call() as h:
                n = self._threads_now = int(self.lib.seer_runtime_threads(h))
        return n

    def set_threads(self, threads: int) -> None:
        """Resize the worker pool (parallel executor). Outputs do not depend on it.

        An explicit pool size turns STPA off (`stpa` becomes None); a runtime
        STPA had put on the serial executor goes back to the parallel one.
        """
        n = _positive_int("threads", threads, 1, max_threads())
        if self.stpa is not None and self.executor == "serial":
            self.switch_executor("parallel", n)
        else:
            self._threads_now = None
            with self._call() as h:
                self._check(h, self.lib.seer_runtime_set_threads(h, n))
        self.stpa = None
        self.requested_threads = n

    def set_executor(self, executor: str, threads: int = 1) -> None:
        """Switch executor and pool size between calls (pending events move along).

        Outputs do not depend on it: both executors hand every entity the same
        events in the same order.  STPA uses it to time the serial executor
        inside the run; users may call it too:

        ```python
        rt.set_executor("serial")          # the reference, one thread
        rt.set_executor("parallel", 2)
        ```
        """
        self.switch_executor(executor, threads)
        self.stpa = None
        self.requested_threads = threads

    def switch_executor(self, executor: str, threads: int) -> None:
        """`set_executor` keeping the attached controller (`attach`):
        the switch a controller such as STPA makes itself."""
        if executor not in EXECUTORS:
            raise ConfigError(f"executor={executor!r} must be one of {list(EXECUTORS)}")
        n = _positive_int("threads", threads, 1, max_threads())
        code = _executor_code(self.lib, executor)
        self._threads_now = None
        with self._call() as h:
            self._check(h, self.lib.seer_runtime_set_executor(h, code, n))
        self.executor = executor

    def tidy_records(self) -> None:
        """Put the event records now where a while on the running executor
        would put them (a switch leaves them where the last one had them,
        and the first steps after it run slower until the runtime tidies
        them on its own, some steps on).  What a controller calls after a
        switch whose next steps it times, as STPA's probe does; outputs do
        not depend on it:

        ```python
        rt.switch_executor("serial", 1)
        rt.tidy_records()      # the serial executor's steps from here as after a while
        ```
        """
        with self._call() as h:
            self._check(h, self.lib.seer_runtime_tidy_records(h))

    def step_uncontrolled(self, mask_ptr: Any) -> None:
        """One step that bypasses the attached controller: how the controller
        runs the step `step` hands it (``mask_ptr``: the mask it was
        handed, opaque)."""
        with self._call() as h:
            self._check(h, self._leased(h, self._native_step, mask_ptr))

    def _leased(self, h: Any, fn: Any, *args: Any) -> int:
        """``fn(h, *args)``, a native call that runs the pool, on the threads
        the process's budget lends it now (`seer_env.budget.lease`): all of
        the pool when no other runtime's call runs, fewer (the caller's own
        thread at least) while others do.  Under the runtime's lock."""
        n = self._threads_now
        if n is None:
            n = self._threads_now = int(self.lib.seer_runtime_threads(h))
        if n <= 1:  # the caller's thread alone: counted, so that others' pools leave it
            solo = _lease.solo
            solo.append(None)
            try:
                return int(fn(h, *args))
            finally:
                if solo:  # emptied by a fork inside the call (a signal handler's)
                    solo.pop()
        got = _lease.take(n)
        try:
            cap = 0 if got >= n else got
            if cap != self._call_cap:
                self.lib.seer_runtime_set_call_threads(h, cap)
                self._call_cap = cap
            return int(fn(h, *args))
        finally:
            _lease.give(got)

    def reset(self, seeds: Sequence[int], mask: ArrayLike | None = None) -> None:
        """Reset the instances selected by ``mask`` (all if None) with ``seeds[i]``."""
        _CALLS[0] += 1
        s = np.asarray([int(x) & 0xFFFFFFFFFFFFFFFF for x in seeds], dtype=np.uint64)
        if s.shape != (self.num_instances,):
            raise ConfigError(f"need {self.num_instances} seeds, got {s.shape[0]}")
        with self._call() as h:
            self._check(h, self._leased(h, self.lib.seer_runtime_reset,
                                        self.ffi.from_buffer("uint64_t[]", s),
                                        self._mask_ptr(mask)))
        if self.stpa is not None:
            self.stpa.notify_reset()

    def step(self, mask: ArrayLike | None = None) -> None:
        """Step the selected instances with the actions in `actions` (GIL released)."""
        _CALLS[0] += 1
        st = self.stpa
        if st is not None and st.countdown <= 1:  # a probe, or a periodic drift check
            st.step(self._mask_ptr(mask))  # which changes nothing unless the step ran
            return
        # _call() inlined: the step is the call on every training loop's path
        with self._lock:
            h = self._h  # set in __init__, None once closed
            if h is None:
                raise ClosedError(f"the {self.model} runtime is closed")
            rc = self._leased(h, self._native_step,
                              self._null if mask is None else self._mask_ptr(mask))
            if rc:
                self._check(h, rc)
        if st is not None:  # counted only once the step ran: a refused one is no step
            st.countdown -= 1

    def check_actions(self, mask: ArrayLike) -> None:
        """Raise what `step` would raise before anything changes, for the
        instances selected by ``mask``, without stepping them:
        `StateError` for one that is not reset, failed
        or has no live agent, `InvalidActionError` for an
        action outside its range or forbidden by its mask (the actions in
        `actions`).  Nothing changes, not even the runtime's message.

        It does not wait for a call running on another thread: it may run while
        `step` steps instances it does not select (the asynchronous
        `seer_env.env.SeerVectorEnv.send` checks a send while the previous
        one steps):

        ```python
        rt.actions[1] = 0
        rt.check_actions([False, True])   # raises as rt.step([False, True]) would
        ```
        """
        m = np.asarray(mask, dtype=bool)
        if m.shape != (self.num_instances,):
            raise ConfigError(f"mask must have shape ({self.num_instances},), got {m.shape}")
        with self._check_lock:
            h = getattr(self, "_h", None)
            if h is None:
                raise ClosedError(f"the {self.model} runtime is closed")
            self._check_mask[:] = m
            rc = self.lib.seer_runtime_check_actions(
                h, self.ffi.from_buffer("uint8_t[]", self._check_mask), self._check_err,
                _ERRLEN)
            if rc != self.lib.SEER_OK:
                raise error_for(self.lib, rc, c_text(self.ffi, self._check_err))

    def _instance(self, instance: int) -> int:
        return _positive_int("instance", instance, 0, self.num_instances - 1)

    def step_index(self, instance: int = 0) -> int:
        out = self.ffi.new("uint64_t *")
        i = self._instance(instance)
        with self._call() as h:
            self._check(h, self.lib.seer_runtime_step_index(h, i, out))
        return int(out[0])

    def entity_events(self, instance: int = 0) -> np.ndarray:
        """Events handled by each entity of ``instance`` since its reset."""
        out = np.zeros(self.sizes.num_entities, dtype=np.uint64)
        i = self._instance(instance)
        with self._call() as h:
            self._check(h, self.lib.seer_runtime_entity_events(
                h, i, self.ffi.from_buffer("uint64_t[]", out)))
        return out

    def pending_events(self, instance: int = 0) -> int:
        out = self.ffi.new("uint64_t *")
        i = self._instance(instance)
        with self._call() as h:
            self._check(h, self.lib.seer_runtime_pending_events(h, i, out))
        return int(out[0])

    def entity_states(self, instance: int = 0) -> bytes:
        """Raw bytes of every entity's state (num_entities * entity_size)."""
        n = self.sizes.num_entities * self.sizes.entity_size
        out = self.ffi.new("char[]", max(n, 1))
        i = self._instance(instance)
        with self._call() as h:
            self._check(h, self.lib.seer_runtime_entity_states(h, i, out))
        return self.ffi.buffer(out, n)[:]

    def entity_array(self, instance: int = 0) -> np.ndarray:
        """Every entity's state of ``instance`` as a structured array (a copy),
        laid out by the model's state fields."""
        raw = self.entity_states(instance)
        return np.frombuffer(raw, dtype=self.native.state_dtype(self.sizes.entity_size)).copy()

    def snapshot(self, instance: int = 0) -> bytes:
        """Instance ``instance``'s whole state as bytes (``seer_runtime_snapshot``):
        step index, entity states and records (RNG streams included), instance
        data, pending events and the instance's output rows.  `restore`
        puts them back, here or into another runtime of the same model,
        configuration and ``max_cycles`` (any executor, thread count or number
        of instances), any number of times:

        ```python
        snap = rt.snapshot(0)
        rt.step()                 # ... explore
        rt.restore(0, snap)       # back: the next steps are the same again
        ```

        Raises `StateError` before the instance's reset
        or after a failed call."""
        i = self._instance(instance)
        n = self.ffi.new("uint64_t *")
        with self._call() as h:
            self._check(h, self.lib.seer_runtime_snapshot_size(h, i, n))  # a bound
            if len(self._snap_buf) < n[0]:  # kept: a fresh buffer costs page faults
                self._snap_buf = bytearray(int(n[0]) + int(n[0]) // 4)
            buf = self._snap_buf
            self._check(h, self.lib.seer_runtime_snapshot(
                h, i, self.ffi.from_buffer(buf), len(buf), n))
            return bytes(memoryview(buf)[:int(n[0])])

    def restore(self, instance: int, data: bytes | bytearray | memoryview,
                check_only: bool = False) -> None:
        """Replace instance ``instance``'s state by a `snapshot`'s bytes.

        Everything is checked first (model, configuration, format, checksum,
        every event): `SnapshotError` names what does
        not fit, and the instance is unchanged.  A restored instance is ready to
        step (one that needed a reset too).  ``check_only=True`` makes every
        check and changes nothing (to check several snapshots before restoring
        any)."""
        i = self._instance(instance)
        view = _snapshot_bytes(data)
        fn = self.lib.seer_runtime_restore_check if check_only else self.lib.seer_runtime_restore
        with self._call() as h:
            self._check(h, fn(h, i, self.ffi.from_buffer("char[]", view), len(view)))

    def snapshot_alive(self, instance: int, data: bytes | bytearray | memoryview) -> np.ndarray:
        """Every check of ``restore(instance, data, check_only=True)``, changing
        nothing, and the snapshot's alive flags: a ``(num_agents,)`` bool array,
        which agents act in the step after it (a face checks its own state of
        the instance against them before it restores any):

        ```python
        alive = rt.snapshot_alive(0, snap)     # SnapshotError: nothing changed
        rt.restore(0, snap)
        ```"""
        i = self._instance(instance)
        view = _snapshot_bytes(data)
        out = np.zeros(self.sizes.num_agents, dtype=np.uint8)
        with self._call() as h:
            self._check(h, self.lib.seer_runtime_restore_check_alive(
                h, i, self.ffi.from_buffer("char[]", view), len(view),
                self.ffi.from_buffer("uint8_t[]", out)))
        return out.astype(bool)

    def global_state(self, instance: int = 0) -> np.ndarray:
        out = np.zeros(self.sizes.state_dim, dtype=np.float32)
        i = self._instance(instance)
        with self._call() as h:
            self._check(h, self.lib.seer_runtime_global_state(
                h, i, self.ffi.from_buffer("float[]", out)))
        return out

    def stats(self) -> dict[str, int]:
        """Counters since creation, as plain ints.

        ``events`` handled, ``windows`` (conservative windows, one per step of a
        speculating optimistic step), ``steps``, ``pool_refills`` and
        ``pool_events`` (the event records' free lists), ``serial_fallbacks``
        (parallel steps run serially: a lookahead below the resolution of the
        simulated time); the optimistic executor's ``rollbacks``,
        ``events_rolled_back`` (handlings undone), ``anti_messages`` (sent to
        another thread), ``serial_steps`` (speculations abandoned and rerun
        serially) and ``log_bytes_peak`` (most rollback-log bytes one step took);
        and ``alone_windows`` (of ``windows``: run by one thread that held
        every partition -- the parallel executor's windows, the optimistic
        executor's speculation phases -- because no other thread of the pool
        came for one, as on a loaded machine or under a budget of one thread;
        many of them say the pool's other threads did not get a core), and
        ``alone_steps`` (steps a pool ran on the calling thread alone, in the
        stretches it runs where its other threads lose their cores: the
        Performance page's "In company"; the long ones run on the serial
        executor's queues and count no ``windows``):

        ```python
        rt = registry.Runtime("pcs", {"classic": True}, 1, "optimistic", 2)
        rt.reset([0]); rt.step()
        s = rt.stats()
        print(s["events_rolled_back"] / max(1, s["events"]))
        ```
        """
        if self._h is None and self._final is not None:  # closed: the whole run's
            return dict(self._final[1])
        with self._call() as h:
            return self._stats_of(h)

    def _stats_of(self, h: Any) -> dict[str, int]:
        s = self.ffi.new("seer_stats *")
        self.lib.seer_runtime_stats(h, s)
        return {
            "events": int(s.events),
            "windows": int(s.windows),
            "steps": int(s.steps),
            "pool_refills": int(s.pool_refills),
            "pool_events": int(s.pool_events),
            "serial_fallbacks": int(s.serial_fallbacks),
            "rollbacks": int(s.rollbacks),
            "events_rolled_back": int(s.events_rolled_back),
            "anti_messages": int(s.anti_messages),
            "serial_steps": int(s.serial_steps),
            "log_bytes_peak": int(s.log_bytes_peak),
            "alone_windows": int(s.alone_windows),
            "alone_steps": int(s.alone_steps),
        }

    # -- tracing ----------------------------------------------------------------

    @property
    def trace_capacity(self) -> int:
        """The trace records per worker thread `trace` asked for (0: off)."""
        return self._trace_cap

    def trace(self, capacity: int, events: bool = True) -> None:
        """Record up to ``capacity`` trace records per worker thread (0: off).

        ``events=False`` leaves out a record per handled event: the phases'
        spans (with their event counts), barrier waits, acts and boundaries
        remain, and a traced step costs about what an untraced one does (STPA's
        preflight traces so: a record per event cost PCS 64x64 a step's time
        again, and copying and summarizing them several more)."""
        cap = _positive_int("capacity", capacity, 0, 2**28)
        with self._call() as h:
            self.lib.seer_runtime_trace_events(h, 1 if events else 0)
            self._check(h, self.lib.seer_runtime_trace(h, cap))
        self._trace_cap = cap

    def trace_records(self, active_only: bool = False) -> list[np.ndarray]:
        """Copies of each worker's records (structured arrays of `trace_dtype`).

        One array per thread of the pool, the active ones first
        (`threads` of them).  A parked thread has records only if it
        took a chunk of a call late (at most one per call, right after the
        pool was shrunk); ``active_only=True`` leaves the parked threads out.
        """
        dt = trace_dtype()
        out = []
        with self._call() as h:
            n_threads = (int(self.lib.seer_runtime_threads(h)) if active_only
                         else int(self.lib.seer_runtime_pool_size(h)))
            for t in range(n_threads):
                n = int(self.lib.seer_runtime_trace_count(h, t))
                if n == 0:
                    out.append(np.zeros(0, dtype=dt))
                    continue
                ptr = self.lib.seer_runtime_trace_records(h, t)
                buf = self.ffi.buffer(ptr, n * dt.itemsize)
                out.append(np.frombuffer(buf, dtype=dt).copy())
        return out

    @property
    def pool_size(self) -> int:
        """Threads of the worker pool, the calling one and parked ones included
        ([`threads`][seer_env.registry.Runtime.threads] of them take part in calls)."""
        with self._call() as h:
            return int(self.lib.seer_runtime_pool_size(h))

    def worker_tids(self) -> list[int]:
        """The kernel thread ids of the pool's threads that take part in calls,
        the calling one left out (0 for one that has not started yet; all 0
        outside Linux): what STPA reads ``/proc/self/task/<tid>/schedstat``
        by, to see how long they waited for a core.

        ```python
        from seer_env.envs import pcs_v0
        env = pcs_v0.vector_env(1, executor="parallel", threads=2)
        env.runtime.worker_tids()     # e.g. [48213]
        ```
        """
        return self._tids(self.lib.seer_runtime_worker_tids)

    def pool_tids(self) -> list[int]:
        """The kernel thread ids of every thread of the pool but the calling
        one, the parked ones too (`worker_tids`: only those that take part in
        calls; 0 for one not started yet): the threads of this runtime that
        STPA leaves out where it reads what this process's other threads do.

        ```python
        from seer_env.envs import pcs_v0
        env = pcs_v0.vector_env(1, executor="parallel", threads=2)
        env.reset(seed=0)
        env.runtime.switch_executor("serial", 1)
        env.runtime.pool_tids()       # e.g. [48213]: parked, not gone
        ```
        """
        return self._tids(self.lib.seer_runtime_pool_tids)

    def _tids(self, read: Any) -> list[int]:
        """What ``read`` (``seer_runtime_worker_tids`` or ``_pool_tids``) writes."""
        with self._call() as h:
            cap = int(self.lib.seer_runtime_pool_size(h))
            out = self.ffi.new("int64_t[]", max(1, cap))
            n = int(read(h, out, cap))
            return [int(out[i]) for i in range(n)]

    def worker_trace_records(self, worker: int) -> np.ndarray:
        """A copy of worker ``worker``'s records (0: the calling thread's), laid
        out by this runtime's own module: unlike `trace_records` it never
        loads ``seer_env._core`` (the race pass's child process, whose model
        is built with ThreadSanitizer, reads its records here).  Its kinds:
        [`trace_kinds`][seer_env.registry.Runtime.trace_kinds]."""
        w = _positive_int("worker", worker, 0, 1023)
        dt = trace_dtype_of(self.ffi)
        with self._call() as h:
            pool = int(self.lib.seer_runtime_pool_size(h))
            if w >= pool:
                raise ConfigError(f"worker={worker} must be in [0, {pool - 1}]")
            n = int(self.lib.seer_runtime_trace_count(h, w))
            if n == 0:
                return np.zeros(0, dtype=dt)
            buf = self.ffi.buffer(self.lib.seer_runtime_trace_records(h, w), n * dt.itemsize)
            return np.frombuffer(buf, dtype=dt).copy()

    def trace_kinds(self) -> dict[int, str]:
        """Trace record kind -> name, from this runtime's own module (what the
        module function `trace_kinds` reads from ``seer_env._core``)."""
        return trace_kinds_of(self.lib)

    def trace_dropped(self) -> int:
        with self._call() as h:
            return int(self.lib.seer_runtime_trace_dropped(h))

    def trace_clear(self) -> None:
        with self._call() as h:
            self.lib.seer_runtime_trace_clear(h)

    def event_name(self, event_type: int) -> str:
        t = _positive_int("event_type", event_type, 0, 2**32 - 1)
        with self._call() as h:
            return c_text(self.ffi, self.lib.seer_runtime_event_name(h, t))

    def close(self) -> None:
        """Join the workers and free native memory. Idempotent; waits for a call
        running on another thread.  The host arrays (`obs` ...) stay
        readable: they belong to Python; so do `threads` and `stats` (what ran
        last).  An attached controller with a
        ``notify_close()`` hears of it first (STPA writes its decision then)."""
        notify = getattr(getattr(self, "stpa", None), "notify_close", None)
        if notify is not None and getattr(self, "_h", None) is not None:
            with contextlib.suppress(Exception):  # best effort: closing goes on
                notify()
        with self._lock, self._check_lock:
            h = getattr(self, "_h", None)
            if h is None:
                return
            # what ran, for the reads after (`threads`, `stats`: env.stpa's
            # reason and workload after close)
            self._final = (int(self.lib.seer_runtime_threads(h)), self._stats_of(h))
            self._h = None
            _live_runtimes.discard(self)
            self.ffi.release(h)

    def __del__(self) -> None:  # pragma: no cover - GC path
        try:
            self.close()
        except Exception:
            pass


def group_action_view(raw: np.ndarray, g: Group) -> np.ndarray:
    """Group ``g``'s actions in the raw (B, A, D) word buffer of a model with
    groups, in the group's own dtype: writes through it reach the runtime."""
    rows = raw[:, g.first:g.first + g.count, :g.action_dim]
    if g.action_kind == "discrete":
        return rows[:, :, 0].view(np.int32)
    return rows.view(np.float32 if g.action_kind == "box" else np.int32)


#: Runtimes not closed yet (their locks are re-created in a child of fork()).
_live_runtimes: weakref.WeakSet[Runtime] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # A lock another thread of the parent held at the fork stays held in the
    # child (that thread does not exist there): start every runtime's afresh.
    # The runtime itself re-creates its worker pool on its next call.
    for rt in list(_live_runtimes):
        rt._lock = threading.Lock()
        rt._check_lock = threading.Lock()
        rt._threads_now = None  # read again once the pool is re-created


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def __getattr__(name: str) -> Any:
    # TRACE_DTYPE / TRACE_KINDS: computed on first use (they need the core module)
    if name == "TRACE_DTYPE":
        return trace_dtype()
    if name == "TRACE_KINDS":
        return trace_kinds()
    raise AttributeError(name)
