"""A model's table in a loaded extension module, marshalled to and from Python.

`NativeModel` wraps one model table (``seer_model`` of ``seer.h``) of
an extension module (`seer_env._bind.loader`): its parameters
([`Param`][seer_env.pymodel.Param]) and state fields (`Field`) as the C tables declare
them, configurations filled and checked through the parameter table, the
sizes ``describe`` gives ([`Sizes`][seer_env.pymodel.Sizes]), agent names, bounds, and the NumPy
layouts of configurations and entity states.  Status codes become exceptions
in one place (`error_for`):

```python
native = NativeModel(module, "a folder")        # the module's own table
cfg, sizes = native.describe({"num_entities": 64})
print(native.defaults, sizes.obs_dim)
```

A hook written in Python (the checker's wrapped observe and global_state,
`NativeModel.with_hooks`; a ``jit=False`` Python model's handlers) sees
its ``seer_ctx *`` as a `HandlerContext`: the accessors of ``seer.h``
as methods, records and arrays as NumPy views of native memory.

One of the bindings (``[tool.importlinter]`` in ``pyproject.toml``): it
imports only `seer_env._bind.loader` and [`seer_env.errors`][seer_env.errors];
`seer_env._bind.runtime` runs a `NativeModel`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, cast

import numpy as np

from ..errors import (
    BudgetError,
    ConfigError,
    ContractViolation,
    ExecutorError,
    Interrupted,
    InvalidActionError,
    ModelError,
    OutOfMemoryError,
    SeerError,
    SnapshotError,
    StateError,
)
from .loader import core

# Status codes of seer.h (the constants are read from each module's lib; these
# names only map them to exceptions).
_STATUS_NAMES: dict[str, type[SeerError]] = {
    "SEER_E_PAST": ContractViolation,
    "SEER_E_LOOKAHEAD": ContractViolation,
    "SEER_E_TARGET": ContractViolation,
    "SEER_E_PAYLOAD": ContractViolation,
    "SEER_E_TIME": ContractViolation,
    "SEER_E_PHASE": ContractViolation,
    "SEER_E_ISOLATION": ContractViolation,
    "SEER_E_MODEL": ModelError,
    "SEER_E_ACTION": InvalidActionError,
    "SEER_E_CONFIG": ConfigError,
    "SEER_E_NOMEM": OutOfMemoryError,
    "SEER_E_ORDER": StateError,
    "SEER_E_ARG": ConfigError,
    "SEER_E_EXECUTOR": ExecutorError,
    "SEER_E_VERSION": ModelError,
    "SEER_E_INTERRUPTED": Interrupted,
    "SEER_E_BUDGET": BudgetError,
    "SEER_E_SNAPSHOT": SnapshotError,
    "SEER_E_TYPE": ContractViolation,
}

_ERRLEN = 1024


def c_text(ffi: Any, p: Any) -> str:
    """The C string ``p`` (a message, a name, a doc line) as text, its
    undecodable bytes replaced: a model's strings may hold any bytes, and the
    runtime cuts a long message at its buffer's end, mid-character maybe (a
    message in another alphabet then raised UnicodeDecodeError, not the
    SeerError that carried it)."""
    return bytes(ffi.string(p)).decode("utf-8", "replace")


#: Keys every env accepts besides its model's parameters (the faces'
#: ``seer_env.faces.COMMON_KEYS``).
COMMON_KEYS = ("threads", "executor", "render_mode", "info_keys", "max_cycles",
               "max_step_events", "memory_limit", "enforce_masks", "flatten_actions")

#: Config keys the env faces and adapters take for themselves (`COMMON_KEYS`,
#: the batched and Gymnasium faces', TorchRL's, RLlib's, ``make``'s): a model
#: parameter of one of these names could never be set (the face would take
#: the value, the model keep its default), so a model table that declares one
#: is refused (`NativeModel`).
#: ``tests/test_sdk.py`` checks every face's keyword names are here.
RESERVED_PARAMS = frozenset(COMMON_KEYS) | frozenset({
    # the ParallelEnv's, the batched env's and the Gymnasium vector face's
    "mask_in_infos", "num_envs", "copy", "autoreset_mode", "batch_size", "group", "others",
    "global_state_in_infos",
    # make()'s, the TorchRL face's, the RLlib adapter's
    "name", "api", "device", "seed", "categorical_actions", "return_state", "return_info",
    "env", "observation_key",
})


def _shown(v: Any, limit: int = 80) -> str:
    """``repr(v)`` for a message, cut to about ``limit`` characters (a config
    value of 100,000 characters was repeated whole in its ConfigError)."""
    r = repr(v)
    return r if len(r) <= limit else f"{r[:limit - 20]}... ({len(r)} characters)"


#: This thread's last failure of a Python model's bounds hook (`note_hook_failure`).
_hook_failure = threading.local()


def note_hook_failure(hook: str, text: str) -> None:
    """A Python model's bounds hook ``hook`` failed inside a native call,
    ``text`` saying why.  Such a hook has no status to return: it hands the
    runtime NaN bounds, which the runtime refuses, naming the hook ("gave
    element 0 the bounds [nan, nan]"); `error_for` then says ``text``
    instead (an obs_bounds of 3 values where obs_dim is 4 was reported as
    NaN bounds the model never gave)."""
    _hook_failure.note = (hook, text)


def error_for(lib: Any, code: int, message: str) -> SeerError:
    """The exception for a native status code."""
    note = getattr(_hook_failure, "note", None)
    if note is not None:
        _hook_failure.note = None
        hook, text = note
        if f"{hook} gave element" in message and "[nan, nan]" in message:
            message = f"{message.split(f'{hook} gave element', 1)[0]}{hook} failed: {text}"
    for name, cls in _STATUS_NAMES.items():
        if getattr(lib, name) == code:
            return cls(message)
    return SeerError(message)


_KIND_CHAR = {1: "b", 2: "i", 3: "u", 4: "f"}


@dataclass(frozen=True)
class Param:
    """One configuration parameter, as the model's C table declares it."""

    name: str
    kind: str  # "bool", "int", "uint", "float"
    size: int
    offset: int
    count: int
    inner: int
    default: Any
    low: float | None
    high: float | None
    low_exclusive: bool
    inf_ok: bool
    none_ok: bool
    doc: str

    def describe_range(self) -> str:
        """The accepted values in words, e.g. ``(0, 1e+300] or inf or None``."""
        if self.kind == "bool":
            text = "bool"
        elif self.low is None and self.kind == "float":
            text = "any finite number"
        else:
            # a declared range has both ends (NativeModel sets them together)
            lo, hi = (self.low, cast(float, self.high)) if self.low is not None else _type_range(
                self.kind, self.size)
            text = f"{'(' if self.low_exclusive else '['}{_num(lo)}, {_num(hi)}]"
        if self.inf_ok:
            text += " or inf"
        if self.count > 1:
            text = f"{self.count} values, each {text}"
            if self.none_ok:
                text += "; one number: the first, the others derived"
        if self.none_ok:
            text += " or None"
        return text

    @property
    def dtype(self) -> np.dtype:
        return _member_dtype(self.kind, self.size, self.count, self.inner)


def _type_range(kind: str, size: int) -> tuple[int, int]:
    bits = 8 * size
    return (0, 2**bits - 1) if kind == "uint" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def _num(x: float) -> str:
    """A bound as a user would write it: 1048576, 0.5, 1e+300."""
    return str(int(x)) if x == int(x) and abs(x) < 1e16 else repr(x)


def _member_dtype(kind: str, size: int, count: int, inner: int) -> np.dtype:
    base = np.dtype("?" if kind == "bool" else f"{_KIND_CHAR[_KINDS_R[kind]]}{size}")
    if count == 1:
        return base
    shape = (count // inner, inner) if inner else (count,)
    return np.dtype((base, shape))


_KINDS = {1: "bool", 2: "int", 3: "uint", 4: "float"}
_KINDS_R = {v: k for k, v in _KINDS.items()}


def _struct_dtype(fields: Sequence[Any], itemsize: int) -> np.dtype:
    names, formats, offsets = [], [], []
    for f in fields:
        names.append(f.name)
        formats.append(f.dtype)
        offsets.append(f.offset)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": max(itemsize, 1)})


@dataclass(frozen=True)
class Field:
    """One member of the entity state, as the model's C table declares it."""

    name: str
    kind: str
    size: int
    offset: int
    count: int
    inner: int

    @property
    def dtype(self) -> np.dtype:
        return _member_dtype(self.kind, self.size, self.count, self.inner)


#: The action kinds, by the runtime's code (``seer_action_kind``).
ACTION_KINDS = ("discrete", "box", "multi_discrete")


@dataclass(frozen=True)
class Group:
    """One agent group of a described configuration: agents ``first`` to
    ``first + count - 1`` share its observation and action spaces.  A model
    without groups has one, ``"agents"``, made of its sizes."""

    name: str
    first: int
    count: int
    obs_dim: int
    action_kind: str  # one of ACTION_KINDS
    action_dim: int   # 1 (discrete), elements (box), components (multi-discrete)
    action_n: int     # discrete: number of actions
    nvec: tuple[int, ...]  # multi-discrete: choices per component
    action_low: float
    action_high: float
    info_dim: int
    info_names: tuple[str, ...]
    mask_len: int     # bytes of its mask rows (0: no masks, or box actions)

    @property
    def agents(self) -> range:
        """The agent indices of the group."""
        return range(self.first, self.first + self.count)


@dataclass(frozen=True)
class Sizes:
    """The model's sizes for one configuration (from its ``describe``).

    With several groups, ``obs_dim``, ``action_dim`` and ``info_dim`` are the
    largest group's (the stride of the host buffers' agent rows) and the
    action members are group 0's; ``groups`` describes each group."""

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
    payload_size: int = 0
    snapshot_size: int = 0
    instance_size: int = 0
    num_groups: int = 1
    mask_dim: int = 0
    groups: tuple[Group, ...] = ()
    #: ``num_groups`` as the runtime keeps it (None: the same): 0 where a
    #: model with a group hook described one group by its sizes (the hook
    #: then describes nothing), which the calls back into C must say
    raw_groups: int | None = None


def _c_groups(sizes: Sizes) -> int:
    """``num_groups`` for a ``seer_sizes`` handed back to C."""
    return sizes.num_groups if sizes.raw_groups is None else sizes.raw_groups


class HandlerContext:
    """A hook's context (``seer_ctx *``) seen from Python: the accessors of
    ``seer.h`` as methods (``seer_now`` is [`now`][seer_env.pymodel.now], ``seer_self``
    `entity`, ...), each valid in the hooks where it is valid in C.

    Records and arrays come back as NumPy views of the native memory (a
    record: one element of its dtype), writable, valid during the hook call
    only.  ``ptr`` is the ``seer_ctx *`` of the call and ``module`` the
    extension module whose runtime runs it (default: ``seer_env._core``, where
    models made at run time run).
    """

    __slots__ = ("ptr", "_ffi", "_lib")

    def __init__(self, ptr: Any, module: ModuleType | None = None) -> None:
        m = module if module is not None else core()
        self.ptr = ptr
        self._ffi = m.ffi
        self._lib = m.lib

    # -- what the call is -------------------------------------------------------

    def now(self) -> float:
        """The simulated time of the event (or phase) being handled (``seer_now``)."""
        return float(self._lib.seer_now(self.ptr))

    def entity(self) -> int:
        """The entity (or agent) the hook runs for (``seer_self``)."""
        return int(self._lib.seer_self(self.ptr))

    def instance(self) -> int:
        """The instance's index in the batch (``seer_instance``)."""
        return int(self._lib.seer_instance(self.ptr))

    def step_index(self) -> int:
        """k of the current (or last) step (``seer_step_index``)."""
        return int(self._lib.seer_step_index(self.ptr))

    def seed(self) -> int:
        """The instance's reset seed (``seer_seed``)."""
        return int(self._lib.seer_seed(self.ptr))

    # -- records ----------------------------------------------------------------

    def at(self, ptr: Any, dtype: Any) -> np.ndarray:
        """One record of ``dtype`` at ``ptr`` (a pointer the hook was given)."""
        dt = np.dtype(dtype)
        return np.frombuffer(self._ffi.buffer(ptr, dt.itemsize), dtype=dt)

    def array(self, ptr: Any, n: int, dtype: Any) -> np.ndarray:
        """``n`` elements of ``dtype`` at ``ptr`` (a fresh empty array for 0)."""
        dt = np.dtype(dtype)
        if n == 0:
            return np.zeros(0, dt)
        return np.frombuffer(self._ffi.buffer(ptr, n * dt.itemsize), dtype=dt)

    def output(self, out: Any, obs_dim: int, info_dim: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """observe's ``out`` (a ``seer_output *``) as its five arrays: obs
        (float32 x ``obs_dim``), reward (float32 x 1), terminated and truncated
        (uint8 x 1), info (float64 x ``info_dim``)."""
        return (self.array(out.obs, obs_dim, np.float32), self.array(out.reward, 1, np.float32),
                self.array(out.terminated, 1, np.uint8), self.array(out.truncated, 1, np.uint8),
                self.array(out.info, info_dim, np.float64))

    def config(self, dtype: Any) -> np.ndarray:
        """The configuration record (read only; ``seer_config``)."""
        return self.at(self._lib.seer_config(self.ptr), dtype)

    def model_sizes(self, dtype: Any) -> np.ndarray:
        """The instance's ``seer_sizes`` (``seer_model_sizes``), laid out by ``dtype``."""
        return self.at(self._lib.seer_model_sizes(self.ptr), dtype)

    def snapshot(self, entity: int, dtype: Any) -> np.ndarray | None:
        """Entity ``entity``'s published snapshot record (``seer_snapshot``;
        None where C gives NULL: an entity out of range)."""
        p = self._lib.seer_snapshot(self.ptr, entity)
        return None if p == self._ffi.NULL else self.at(p, dtype)

    def instance_data(self, dtype: Any) -> np.ndarray:
        """The per-instance record ``boundary`` writes (``seer_instance_data``)."""
        return self.at(self._lib.seer_instance_data(self.ptr), dtype)

    def entity_state(self, entity: int, dtype: Any) -> np.ndarray | None:
        """Any entity's state record, at the boundary (``seer_entity_state``; None
        where C gives NULL: elsewhere, or an entity out of range)."""
        p = self._lib.seer_entity_state(self.ptr, entity)
        return None if p == self._ffi.NULL else self.at(p, dtype)

    # -- what a handler does ------------------------------------------------------

    def schedule(self, target: int, t: float, event_type: int,
                 payload: np.ndarray | None = None, size: int = 0) -> int:
        """``seer_schedule``: an event for ``target`` at ``t`` carrying the first
        ``size`` bytes of ``payload`` (None: no payload).  Returns 0 or the
        violation's status code."""
        if payload is None:
            return int(self._lib.seer_schedule(self.ptr, target, t, event_type,
                                               self._ffi.NULL, 0))
        return int(self._lib.seer_schedule(self.ptr, target, t, event_type,
                                           self._ffi.from_buffer(payload), size))

    def rng_u64(self) -> int:
        """64 random bits from the entity's stream (``seer_rng_u64``)."""
        return int(self._lib.seer_rng_u64(self.ptr))

    def rng_uniform(self) -> float:
        """Uniform in (0, 1) from the entity's stream (``seer_rng_uniform``)."""
        return float(self._lib.seer_rng_uniform(self.ptr))

    def rng_exponential(self, mean: float) -> float:
        """Exponential with ``mean`` from the entity's stream (``seer_rng_exponential``)."""
        return float(self._lib.seer_rng_exponential(self.ptr, mean))

    def rng_below(self, n: int) -> int:
        """Uniform in [0, n) from the entity's stream (``seer_rng_below``)."""
        return int(self._lib.seer_rng_below(self.ptr, n))

    def agent_alive(self, agent: int) -> bool:
        """Whether ``agent`` was alive at the start of this step (``seer_agent_alive``)."""
        return bool(self._lib.seer_agent_alive(self.ptr, agent))

    def entity_events(self, entity: int) -> int:
        """Events ``entity`` handled since reset (``seer_entity_events``)."""
        return int(self._lib.seer_entity_events(self.ptr, entity))

    def fail_step(self, why: str) -> int:
        """``seer_fail_step``: fail the step with the message ``why``; returns
        the non-zero status a handler returns."""
        return int(self._lib.seer_fail_step(self.ptr, why.encode("utf-8", "replace")))


#: ``observe`` of `NativeModel.with_hooks`: (ctx, agent, obs row, the model's observe)
ObserveHook = Callable[[HandlerContext, int, np.ndarray, Callable[[], None]], None]
#: ``global_state`` of `NativeModel.with_hooks`: (ctx, state row, the model's hook)
GlobalStateHook = Callable[[HandlerContext, np.ndarray, Callable[[], None]], None]


#: The host functions that call a model hook, and the hook they call (see
#: `NativeModel.watch_host_calls`).
HOST_CALLS = {"seer_model_describe": "describe", "seer_model_group": "group",
              "seer_model_action_nvec": "action_nvec", "seer_model_bounds": "obs_bounds",
              "seer_model_group_bounds": "obs_bounds", "seer_model_agent_names": "agent_name",
              "seer_runtime_global_state": "global_state"}

#: Around a host call of a hook: ``around(hook, arg, call)`` runs ``call()``.
HostAround = Callable[[str, int, Callable[[], Any]], Any]
#: Around a hook: ``around(name, call, who)`` runs ``call()``; ``who()`` is its
#: agent (observe, action_mask), instance (boundary, global_state) or entity.
HookAround = Callable[[str, Callable[[], Any], Callable[[], int]], Any]


class _HostCalls:
    """A model's cffi ``lib`` whose host functions that call a model hook
    (`HOST_CALLS`) run through ``around(hook, arg, call)``.
    ``seer_model_bounds`` calls two hooks: ``state_bounds`` is called once
    alone first (the hooks on a configuration return the same every time),
    so the one that fails is known.  Every other name is the lib's own."""

    def __init__(self, lib: Any, ffi: Any, around: HostAround) -> None:
        self._lib, self._ffi, self._around = lib, ffi, around

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._lib, name)
        if name in HOST_CALLS:
            def call(*args: Any, _name: str = name, _fn: Any = fn) -> Any:
                return self._call(_name, _fn, *args)
            fn = call
        setattr(self, name, fn)  # looked up once
        return fn

    def _call(self, name: str, fn: Any, *args: Any) -> Any:
        ffi = self._ffi
        if name == "seer_runtime_global_state":
            return self._hooked("global_state", int(args[1]), fn, *args)
        table = args[0]
        if name in ("seer_model_bounds", "seer_model_group_bounds"):
            if name == "seer_model_bounds" and table.state_bounds != ffi.NULL and \
                    args[2].state_dim:
                lo, hi = (ffi.new("float[]", int(args[2].state_dim)) for _ in range(2))
                self._hooked("state_bounds", 0, table.state_bounds, args[1], lo, hi)
            hook = "group_obs_bounds" if table.group_obs_bounds != ffi.NULL else "obs_bounds"
            group = int(args[3]) if name == "seer_model_group_bounds" else 0
            return self._hooked(hook, group, fn, *args)
        hook = HOST_CALLS[name]
        if hook == "agent_name" and table.agent_name == ffi.NULL:
            hook = "group"
        return self._hooked(hook, int(args[3]) if hook in ("group", "action_nvec") and
                            name != "seer_model_agent_names" else 0, fn, *args)

    def _hooked(self, hook: str, arg: int, fn: Any, *args: Any) -> Any:
        return self._around(hook, arg, lambda: fn(*args))


class NativeModel:
    """A model table in a loaded extension module: its parameters, state
    layout and the host calls on its configuration.

    ``source`` says where the table came from (a folder, or a description).
    Raises [`ModelError`][seer_env.errors.ModelError] when the table fails the
    runtime's check (API version, missing handlers, bad tables).
    """

    def __init__(self, module: ModuleType, source: str, table: Any = None,
                 keepalive: Any = None) -> None:
        self.module = module
        self.ffi = module.ffi
        self.lib = module.lib
        self.source = source
        self._keepalive = keepalive  # objects a run-time table points into
        self.table = table if table is not None else self.lib.seer_model_table()
        if self.table == self.ffi.NULL:
            raise ModelError(f"{source}: the module holds no model table")
        err = self.ffi.new("char[]", _ERRLEN)
        rc = self.lib.seer_model_check(self.table, err, _ERRLEN)
        if rc != self.lib.SEER_OK:
            raise error_for(self.lib, rc, f"{c_text(self.ffi, err)} ({source})")
        t = self.table
        self.name: str = c_text(self.ffi, t.name)
        self.config_size = int(t.config_size)
        self.max_cycles = int(t.max_cycles)
        self.params: dict[str, Param] = {}
        taken = sorted({c_text(self.ffi, t.params[i].name)
                        for i in range(t.num_params)} & RESERVED_PARAMS)
        if taken:
            raise ModelError(
                f"{self.name}: parameter(s) {taken} have the name of an env option, which "
                "the env faces take for themselves (the model would never get the value "
                f"given, only its default); rename them ({source})")
        for i in range(t.num_params):
            p = t.params[i]
            declared = not (p.lo == 0.0 and p.hi == 0.0)
            kind = _KINDS[int(p.kind)]
            none_ok = bool(p.flags & self.lib.SEER_P_NONE)
            default = self._default(p, kind, none_ok)
            self.params[c_text(self.ffi, p.name)] = Param(
                name=c_text(self.ffi, p.name), kind=kind, size=int(p.size),
                offset=int(p.offset), count=int(p.count), inner=int(p.inner),
                default=default, low=float(p.lo) if declared else None,
                high=float(p.hi) if declared else None,
                low_exclusive=bool(p.flags & self.lib.SEER_P_GT),
                inf_ok=bool(p.flags & self.lib.SEER_P_INF), none_ok=none_ok,
                doc=c_text(self.ffi, p.doc) if p.doc != self.ffi.NULL else "",
            )
        self.state_fields = [
            Field(c_text(self.ffi, f.name), _KINDS[int(f.kind)], int(f.size),
                  int(f.offset), int(f.count), int(f.inner))
            for f in (t.state_fields[i] for i in range(t.num_state_fields))
        ]
        self.config_dtype = _struct_dtype(list(self.params.values()), self.config_size)
        self.event_names = tuple(
            c_text(self.ffi, self.lib.seer_model_event_name(t, i))
            for i in range(t.event_type_count)
        )

    def event_name(self, event_type: int) -> str:
        """The name the model's table gives event type ``event_type``."""
        return c_text(self.ffi, self.lib.seer_model_event_name(self.table, event_type))

    def _default(self, p: Any, kind: str, none_ok: bool) -> Any:
        d = float(getattr(p, "def"))
        n = float(p.none)
        if none_ok and (d == n or (d != d and n != n)):
            return None
        if kind == "bool":
            return bool(d)
        if kind in ("int", "uint"):
            return int(d)
        return d

    def watch_host_calls(self, around: HostAround) -> None:
        """Route every host function of this model that calls one of its hooks
        (`HOST_CALLS`: describe, group, bounds, agent names, global state)
        through ``around(hook, arg, call)`` from now on, where ``call()``
        makes the call and ``arg`` is its group, agent or instance (the
        checker's child notes which hook runs, so that one that crashes or
        hangs is named):

        ```python
        def around(hook, arg, call):
            print("calling", hook, arg)
            return call()

        native.watch_host_calls(around)
        ```
        """
        self.lib = _HostCalls(self.lib, self.ffi, around)

    def with_every_hook(self, around: HookAround, hooks: Sequence[str]) -> NativeModel:
        """A copy of this model's table (a new `NativeModel` of the same module,
        with this one's ``lib``) whose hooks named in ``hooks`` (those that run
        with a context: init, act, handle, boundary, observe, publish,
        global_state, action_mask) run through ``around(name, call, who)``:
        ``call()`` runs the model's hook on its arguments and returns what it
        returned, ``who()`` is the agent (observe, action_mask), the instance
        (boundary, global_state) or the entity it ran for.  A hook the model
        has not got stays absent.  Slow (a Python call per hook call): for
        the checker's reruns.

        ```python
        def around(name, call, who):
            out = call()
            print(name, "ran for", who())
            return out

        watched = native.with_every_hook(around, ["act", "observe"])
        ```
        """
        ffi, lib = self.ffi, self.lib
        table = ffi.new("seer_model *", self.table[0])
        keep: list[Any] = [table, self]
        for name in hooks:
            orig = getattr(self.table, name)
            if orig == ffi.NULL:
                continue
            if name in ("observe", "action_mask"):
                def who_of(args: tuple[Any, ...]) -> int:
                    return int(args[1])
            elif name in ("boundary", "global_state"):
                def who_of(args: tuple[Any, ...]) -> int:
                    return int(lib.seer_instance(args[0]))
            else:
                def who_of(args: tuple[Any, ...]) -> int:
                    return int(lib.seer_self(args[0]))

            def hook(*args: Any, _name: str = name, _orig: Any = orig,
                     _who: Any = who_of) -> Any:
                return around(_name, lambda: _orig(*args), lambda: _who(args))

            cb = ffi.callback(ffi.typeof(orig), hook)
            setattr(table, name, cb)
            keep.append(cb)
        out = NativeModel(self.module, self.source, table=table, keepalive=keep)
        out.lib = self.lib
        return out

    def with_hooks(self, *, observe: ObserveHook | None = None,
                   global_state: GlobalStateHook | None = None,
                   on_error: Callable[[BaseException], None] | None = None) -> NativeModel:
        """A copy of this model's table (a new `NativeModel` of the same
        module) whose ``observe`` and ``global_state`` are Python functions
        around the model's own:

        ```python
        def observe(ctx, agent, obs, model_observe):
            obs[:] = np.nan       # the row before the model writes it
            model_observe()       # the model's observe, on the same arguments
            ...                   # the row it wrote
        ```

        ``observe(ctx, agent, obs, model_observe)``: ``ctx`` a
        `HandlerContext`, ``obs`` the agent's observation row (a writable
        float32 view of ``obs_dim`` elements), ``model_observe()`` runs the
        model's observe.  ``global_state(ctx, state, model_global_state)``
        likewise with the instance's state row (``state_dim`` elements); a model
        without a global_state keeps none.  An exception a function raises is
        handed to ``on_error`` (without one, cffi prints it) and the hook
        returns as if the model's had.  None leaves a hook as it is.
        """
        ffi, lib, module = self.ffi, self.lib, self.module
        table = ffi.new("seer_model *", self.table[0])
        keep: list[Any] = [table, self]
        model_obs, model_gs = self.table.observe, self.table.global_state

        errors: Callable[[Any, BaseException, Any], None] | None = None
        if on_error is not None:
            report = on_error

            def errors(exc_type: Any, exc: BaseException, tb: Any) -> None:
                report(exc)

        if observe is not None:
            def observe_cb(ctx: Any, agent: int, out: Any) -> None:
                n = int(lib.seer_model_sizes(ctx).obs_dim)
                row = (np.frombuffer(ffi.buffer(out.obs, 4 * n), np.float32) if n
                       else np.zeros(0, np.float32))
                observe(HandlerContext(ctx, module), agent, row,
                        lambda: model_obs(ctx, agent, out))

            cb = ffi.callback(ffi.typeof(model_obs), observe_cb, onerror=errors)
            table.observe = cb
            keep.append(cb)
        if global_state is not None and model_gs != ffi.NULL:
            def global_state_cb(ctx: Any, out: Any) -> None:
                n = int(lib.seer_model_sizes(ctx).state_dim)
                row = (np.frombuffer(ffi.buffer(out, 4 * n), np.float32) if n
                       else np.zeros(0, np.float32))
                global_state(HandlerContext(ctx, module), row, lambda: model_gs(ctx, out))

            cb = ffi.callback(ffi.typeof(model_gs), global_state_cb, onerror=errors)
            table.global_state = cb
            keep.append(cb)
        return NativeModel(module, self.source, table=table, keepalive=keep)

    def __repr__(self) -> str:
        return f"NativeModel({self.name!r} from {self.source})"

    # -- configuration -----------------------------------------------------------

    @property
    def defaults(self) -> dict[str, Any]:
        """Every parameter with its default (None: derived by the model)."""
        return {n: p.default for n, p in self.params.items()}

    def config_struct(self, values: Mapping[str, Any]) -> Any:
        """A configuration struct: the defaults, overridden by ``values`` (each
        checked by the runtime against the parameter's type and range)."""
        buf = self.ffi.new("char[]", max(self.config_size, 1))
        self.lib.seer_config_defaults(self.table, buf)
        for key, value in values.items():
            p = self.params.get(key) if isinstance(key, str) else None
            if p is None:
                raise ConfigError(
                    f"{self.name}: unknown config key {_shown(key)}; valid keys: "
                    f"{sorted(self.params)}"
                )
            self._set(buf, p, value)
        return buf

    def _set(self, buf: Any, p: Param, value: Any) -> None:
        if p.count == 1:
            self._set_one(buf, p, 0, value)
            return
        if value is None or _is_scalar(value):
            if value is not None and not p.none_ok:
                raise ConfigError(
                    f"{self.name}: {p.name}={_shown(value)} must be {p.count} values "
                    "(a sequence), "
                    f"each {p.describe_range().split('each ', 1)[-1]}"
                )
            self._set_one(buf, p, 0, value)
            for i in range(1, p.count):
                self._set_one(buf, p, i, None)
            return
        try:
            items = list(np.asarray(value, dtype=object).reshape(-1))
        except (TypeError, ValueError):
            items = []
        if len(items) != p.count:
            raise ConfigError(
                f"{self.name}: {p.name}={_shown(value)} must be {p.count} values"
                + (", one number" if p.none_ok else "") + (" or None" if p.none_ok else "")
            )
        for i, v in enumerate(items):
            self._set_one(buf, p, i, v)

    def _set_one(self, buf: Any, p: Param, i: int, v: Any) -> None:
        lib, ffi = self.lib, self.ffi
        err = ffi.new("char[]", _ERRLEN)
        name = p.name.encode()
        if v is None:
            rc = lib.seer_config_set_none(self.table, buf, name, i, err, _ERRLEN)
        elif isinstance(v, (bool, np.bool_)):
            if p.kind != "bool":
                raise ConfigError(
                    f"{self.name}: {p.name}={_shown(v)} must be a number, not a bool")
            rc = lib.seer_config_set_i64(self.table, buf, name, i, int(v), err, _ERRLEN)
        elif isinstance(v, (int, np.integer)):
            iv = int(v)
            if p.kind == "bool" and iv not in (0, 1):
                raise ConfigError(f"{self.name}: {p.name}={_shown(v)} must be a bool")
            if not -(2**63) <= iv < 2**64:
                raise ConfigError(f"{self.name}: {p.name}={_shown(v)} is out of range "
                                  f"({p.describe_range()})")
            if iv >= 2**63:
                rc = lib.seer_config_set_u64(self.table, buf, name, i, iv, err, _ERRLEN)
            else:
                rc = lib.seer_config_set_i64(self.table, buf, name, i, iv, err, _ERRLEN)
        elif isinstance(v, (float, np.floating)):
            if p.kind == "bool":
                raise ConfigError(f"{self.name}: {p.name}={_shown(v)} must be a bool")
            rc = lib.seer_config_set_f64(self.table, buf, name, i, float(v), err, _ERRLEN)
        else:
            want = "a bool" if p.kind == "bool" else "a number"
            raise ConfigError(f"{self.name}: {p.name}={_shown(v)} must be {want} "
                              f"({p.describe_range()})")
        if rc != lib.SEER_OK:
            raise error_for(lib, rc, c_text(ffi, err))

    def read_config(self, buf: Any) -> dict[str, Any]:
        """The parameters' values in a configuration struct."""
        raw = np.frombuffer(self.ffi.buffer(buf, max(self.config_size, 1)),
                            dtype=self.config_dtype, count=1)[0]
        out: dict[str, Any] = {}
        for n, p in self.params.items():
            v = raw[n]
            out[n] = tuple(np.asarray(v).reshape(-1).tolist()) if p.count > 1 else v.item()
        return out

    def describe(self, values: Mapping[str, Any]) -> tuple[Any, Sizes]:
        """Fill, complete (derived values) and size a configuration."""
        buf = self.config_struct(values)
        out = self.ffi.new("seer_sizes *")
        err = self.ffi.new("char[]", _ERRLEN)
        rc = self.lib.seer_model_describe(self.table, buf, out, err, _ERRLEN)
        if rc != self.lib.SEER_OK:
            raise error_for(self.lib, rc, c_text(self.ffi, err))
        return buf, self.sizes_of(out, buf)

    def groups_of(self, s: Any, buf: Any) -> tuple[Group, ...]:
        """The groups of described sizes ``s`` (a ``seer_sizes``) of the
        configuration ``buf``."""
        ffi, lib = self.ffi, self.lib
        err = ffi.new("char[]", _ERRLEN)
        g = ffi.new("seer_group *")
        nvec = ffi.new("int32_t[]", lib.SEER_MAX_COMPONENTS)
        total = ffi.new("uint64_t *")
        out, first = [], 0
        for i in range(max(int(s.num_groups), 1)):
            rc = lib.seer_model_group(self.table, buf, s, i, g, err, _ERRLEN)
            if rc == lib.SEER_OK:
                rc = lib.seer_model_action_nvec(self.table, buf, s, i, g, nvec, total, err,
                                                _ERRLEN)
            if rc != lib.SEER_OK:
                raise error_for(lib, rc, c_text(ffi, err))
            kind = ACTION_KINDS[int(g.action_kind)]
            names = tuple(c_text(ffi, g.info_names[k]) for k in range(g.info_dim)) \
                if g.info_names != ffi.NULL else ()
            mask_len = int(lib.seer_model_group_choices(g, total[0])) if int(s.mask_dim) \
                else 0
            out.append(Group(
                name=c_text(ffi, g.name), first=first, count=int(g.count),
                obs_dim=int(g.obs_dim), action_kind=kind, action_dim=int(g.action_dim),
                action_n=int(g.action_n),
                nvec=tuple(int(nvec[k]) for k in range(g.action_dim))
                if kind == "multi_discrete" else (),
                action_low=float(g.action_low), action_high=float(g.action_high),
                info_dim=int(g.info_dim), info_names=names, mask_len=mask_len))
            first += int(g.count)
        return tuple(out)

    def group_bounds(self, buf: Any, sizes: Sizes, group: int) -> tuple[np.ndarray, np.ndarray]:
        """Observation (low, high) bounds of one group's elements, float32;
        `ModelError` for bounds no space can be made of."""
        g = sizes.groups[group]
        lo, hi = (np.zeros(max(g.obs_dim, 1), np.float32) for _ in range(2))
        s = self.ffi.new("seer_sizes *")
        s.num_agents, s.num_groups, s.obs_dim = sizes.num_agents, _c_groups(sizes), sizes.obs_dim
        err = self.ffi.new("char[]", _ERRLEN)
        rc = self.lib.seer_model_group_bounds(self.table, buf, s, group, g.obs_dim,
                                              self.ffi.from_buffer("float[]", lo),
                                              self.ffi.from_buffer("float[]", hi), err, _ERRLEN)
        if rc != self.lib.SEER_OK:
            raise error_for(self.lib, rc, c_text(self.ffi, err))
        return lo[: g.obs_dim], hi[: g.obs_dim]

    def sizes_of(self, s: Any, buf: Any = None) -> Sizes:
        kind = ACTION_KINDS[int(s.action_kind)] if 0 <= int(s.action_kind) < 3 else "box"
        return Sizes(
            num_entities=s.num_entities, num_agents=s.num_agents, obs_dim=s.obs_dim,
            action_dim=s.action_dim, action_kind=kind, action_n=s.action_n,
            action_low=float(s.action_low), action_high=float(s.action_high),
            info_dim=s.info_dim, state_dim=s.state_dim, entity_size=s.entity_size,
            lookahead=float(s.lookahead), step_duration=float(s.step_duration),
            payload_size=s.payload_size, snapshot_size=s.snapshot_size,
            instance_size=s.instance_size, num_groups=max(int(s.num_groups), 1),
            mask_dim=int(s.mask_dim),
            groups=self.groups_of(s, buf) if buf is not None else (),
            raw_groups=int(s.num_groups) if int(s.num_groups) == 0 else None,
        )

    def agent_names(self, buf: Any, n: int, sizes: Sizes | None = None) -> list[str]:
        """The names of agents ``0..n-1`` of a described configuration."""
        out = self.ffi.new("char[]", max(n, 1) * self.lib.SEER_NAME_LEN)
        err = self.ffi.new("char[]", _ERRLEN)
        csz = self.ffi.new("seer_sizes *")
        csz.num_agents = sizes.num_agents if sizes is not None else n
        csz.num_groups = _c_groups(sizes) if sizes is not None else 1
        rc = self.lib.seer_model_agent_names(self.table, buf, csz, n, out, err, _ERRLEN)
        if rc != self.lib.SEER_OK:
            raise error_for(self.lib, rc, c_text(self.ffi, err))
        raw = np.frombuffer(self.ffi.buffer(out, n * self.lib.SEER_NAME_LEN),
                            dtype=f"S{self.lib.SEER_NAME_LEN}")
        return [b.decode("utf-8", "replace") for b in raw.tolist()]

    def bounds(self, buf: Any, sz: Sizes) -> tuple[np.ndarray, ...]:
        """Observation (low, high) and state (low, high) bounds, float32;
        `ModelError` for bounds no space can be made of."""
        arrs = [np.zeros(max(sz.obs_dim, 1), np.float32) for _ in range(2)]
        arrs += [np.zeros(max(sz.state_dim, 1), np.float32) for _ in range(2)]
        ptrs = [self.ffi.from_buffer("float[]", a) for a in arrs]
        s = self.ffi.new("seer_sizes *")
        s.obs_dim, s.state_dim = sz.obs_dim, sz.state_dim
        s.num_agents, s.num_groups = sz.num_agents, _c_groups(sz)
        err = self.ffi.new("char[]", _ERRLEN)
        rc = self.lib.seer_model_bounds(self.table, buf, s, *ptrs, err, _ERRLEN)
        if rc != self.lib.SEER_OK:
            raise error_for(self.lib, rc, c_text(self.ffi, err))
        return (arrs[0][: sz.obs_dim], arrs[1][: sz.obs_dim], arrs[2][: sz.state_dim],
                arrs[3][: sz.state_dim])

    def info_names(self, n: int) -> tuple[str, ...]:
        return tuple(c_text(self.ffi, self.lib.seer_model_info_name(self.table, i))
                     for i in range(n))

    def state_dtype(self, entity_size: int) -> np.dtype:
        """NumPy layout of one entity state (the model's state fields; raw
        bytes ``V<entity_size>`` when it declares none)."""
        if not self.state_fields:
            return np.dtype((np.void, max(entity_size, 1)))
        return _struct_dtype(self.state_fields, entity_size)


def _is_scalar(v: Any) -> bool:
    return isinstance(v, (int, float, bool, np.integer, np.floating, np.bool_, str))
