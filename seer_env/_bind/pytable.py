"""Model tables made at run time: the bindings of models written in Python.

A Python model ([`seer_env.pymodel`][seer_env.pymodel]) has no extension module of its own:
its ``seer_model`` table is allocated with the cffi of ``seer_env._core``
(the runtime without a model, `seer_env._bind.loader.core`) and filled
here from plain Python values (`model_table`).  Its hooks are either
machine-code addresses (handlers compiled with Numba, which call the
runtime's C functions by address: `function_address`) or callbacks
made here around Python functions:

* the host hooks, run by the host thread on a configuration
  (`describe_hook`, `agent_name_hook`, `bounds_hook`,
  `group_hook`, `group_bounds_hook`, `nvec_hook`): the
  configuration arrives as a NumPy record, ``describe`` writes its sizes
  into a `SizesOut`, and what they raise becomes a status code and a
  message here;
* the handlers of a ``jit=False`` model (`handler_hook`): called with
  the raw arguments, which a `HandlerContext`
  turns into NumPy views.

The layouts compiled handlers bake in come from here too
(`sizes_dtype`, `output_offsets`).  One of the bindings
(``[tool.importlinter]`` in ``pyproject.toml``): it imports only
`seer_env._bind.native`, `seer_env._bind.loader` and [`seer_env.errors`][seer_env.errors].
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, cast

import numpy as np

from ..errors import ConfigError
from .loader import core
from .native import NativeModel

#: The C type of each handler's table entry (``seer_model`` in ``seer.h``).
_HANDLER_CTYPES = {
    "init": "int(*)(seer_ctx *, void *)",
    "act": "int(*)(seer_ctx *, void *, const void *)",
    "handle": "int(*)(seer_ctx *, void *, uint32_t, const void *, uint32_t)",
    "boundary": "void(*)(seer_ctx *, void *)",
    "observe": "void(*)(seer_ctx *, uint32_t, const seer_output *)",
    "publish": "void(*)(seer_ctx *, const void *, void *)",
    "global_state": "void(*)(seer_ctx *, float *)",
    "action_mask": "void(*)(seer_ctx *, uint32_t, uint8_t *)",
}

#: ``seer_param.kind`` / ``seer_field.kind`` by NumPy kind.
_KINDS = {"b": "SEER_KIND_BOOL", "i": "SEER_KIND_INT", "u": "SEER_KIND_UINT",
          "f": "SEER_KIND_FLOAT"}
_ACTION_KINDS = {"discrete": "SEER_ACTION_DISCRETE", "box": "SEER_ACTION_BOX",
                 "multi_discrete": "SEER_ACTION_MULTI_DISCRETE"}


# -- layouts ---------------------------------------------------------------------------


def sizes_dtype() -> np.dtype:
    """``seer_sizes`` as a NumPy dtype (names and offsets from the C layout)."""
    ffi = core().ffi
    kinds = {"uint32_t": np.uint32, "int32_t": np.int32, "float": np.float32,
             "double": np.float64, "seer_time": np.float64, "uint64_t": np.uint64,
             "seer_action_kind": np.int32, "enum seer_action_kind": np.int32}
    names, formats, offsets = [], [], []
    for name, fld in ffi.typeof("seer_sizes").fields:
        cname = fld.type.cname
        if cname not in kinds:  # pragma: no cover - a new field type in seer.h
            raise TypeError(f"seer_sizes.{name}: no NumPy type for {cname}")
        names.append(name)
        formats.append(kinds[cname])
        offsets.append(ffi.offsetof("seer_sizes", name))
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": ffi.sizeof("seer_sizes")})


def output_offsets() -> tuple[int, int, int, int, int]:
    """Byte offsets of ``seer_output``'s pointers: obs, reward, terminated,
    truncated, info (observe's ``out``)."""
    ffi = core().ffi
    return tuple(ffi.offsetof("seer_output", n)
                 for n in ("obs", "reward", "terminated", "truncated", "info"))


def function_address(name: str) -> int:
    """The address of the runtime's C function ``name`` (``seer_now``, ...) in
    ``seer_env._core``: what compiled handlers call."""
    c = core()
    return int(c.ffi.cast("uintptr_t", c.ffi.addressof(c.lib, name)))


def agent_group(ctx: Any, agent: int) -> int:
    """``seer_agent_group(ctx, agent)`` for a handler's ``seer_ctx *``."""
    return int(core().lib.seer_agent_group(ctx, int(agent)))


def group_first(ctx: Any, group: int) -> int:
    """``seer_group_first(ctx, group)`` for a handler's ``seer_ctx *``."""
    return int(core().lib.seer_group_first(ctx, int(group)))


# -- host hooks ---------------------------------------------------------------------------


class SizesOut:
    """``describe``'s output, a ``seer_sizes`` in native memory: set its fields
    as attributes (``out.obs_dim = 4``; ``out.action_kind = "discrete"``,
    ``"box"`` or ``"multi_discrete"``).  Values are converted as the C
    fields' types require: one out of a field's range raises OverflowError,
    one of another type TypeError."""

    __slots__ = ("_s", "_lib")
    _s: Any  # the cffi seer_sizes
    _lib: Any

    def __init__(self, s: Any, lib: Any) -> None:
        object.__setattr__(self, "_s", s)
        object.__setattr__(self, "_lib", lib)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "action_kind":
            value = getattr(self._lib, _ACTION_KINDS[value])
        setattr(self._s, name, value)


def _write_err(ffi: Any, err: Any, errlen: int, msg: str) -> None:
    b = msg.encode("utf-8", "replace")[: max(0, errlen - 1)]
    ffi.memmove(err, b + b"\0", len(b) + 1)


def _config_copy(ffi: Any, cfg: Any, dt: np.dtype) -> np.ndarray:
    """A writable copy of the configuration record at ``cfg``."""
    return np.frombuffer(bytearray(ffi.buffer(cfg, dt.itemsize)), dtype=dt)


def describe_hook(name: str, config_dtype: np.dtype,
                  describe: Callable[[np.ndarray, SizesOut], None]) -> Any:
    """``describe`` as a table entry: ``describe(config, out)`` gets the
    configuration (a writable record of ``config_dtype`` over the runtime's
    copy) and fills ``out`` (`SizesOut`).  What it raises becomes the
    status and the message (``"<name>: ..."``): ConfigError, ValueError and
    OverflowError a configuration error, anything else a model error naming
    the exception."""
    c = core()
    ffi, lib = c.ffi, c.lib

    def cb(cfg: Any, out: Any, err: Any, errlen: int) -> int:
        try:
            describe(np.frombuffer(ffi.buffer(cfg, config_dtype.itemsize), dtype=config_dtype),
                     SizesOut(out, lib))
            return 0
        except (ConfigError, ValueError, OverflowError) as exc:
            _write_err(ffi, err, errlen, f"{name}: {exc}")
            return int(lib.SEER_E_CONFIG)
        except BaseException as exc:  # a broken describe: say what it raised
            _write_err(ffi, err, errlen, f"{name}: describe raised "
                                         f"{type(exc).__name__}: {exc}")
            return int(lib.SEER_E_MODEL)

    return ffi.callback("int(*)(void *, seer_sizes *, char *, size_t)", cb)


def agent_name_hook(config_dtype: np.dtype, agent_name: Callable[[np.ndarray, int], Any]
                    ) -> Any:
    """``agent_name`` as a table entry: ``agent_name(config, agent)`` (a copy
    of the configuration record) returns the name (``str()`` of it is used);
    a name that does not fit, or any exception, is the model's failure."""
    c = core()
    ffi = c.ffi

    def cb(cfg: Any, agent: int, buf: Any, n: int) -> int:
        try:
            name = agent_name(_config_copy(ffi, cfg, config_dtype), int(agent))
            b = str(name).encode()
            if len(b) >= n:
                return 1
            ffi.memmove(buf, b + b"\0", len(b) + 1)
            return 0
        except BaseException:
            return 1

    return ffi.callback("int(*)(const void *, uint32_t, char *, size_t)", cb)


def bounds_hook(config_dtype: np.dtype,
                bounds: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray] | None]) -> Any:
    """``obs_bounds`` or ``state_bounds`` as a table entry: ``bounds(config)``
    (a copy of the configuration record) returns the (low, high) float32
    arrays, written into the runtime's, or None to leave them as they are
    (-inf..inf)."""
    c = core()
    ffi = c.ffi

    def cb(cfg: Any, low: Any, high: Any) -> None:
        out = bounds(_config_copy(ffi, cfg, config_dtype))
        if out is None:
            return
        lo, hi = out
        ffi.memmove(low, lo.tobytes(), lo.nbytes)
        ffi.memmove(high, hi.tobytes(), hi.nbytes)

    return ffi.callback("void(*)(const void *, float *, float *)", cb)


class GroupSpec(Protocol):
    """What `group_hook` reads of a group (a
    [`seer_env.pymodel.Group`][seer_env.pymodel.Group], ``info_dim`` filled in)."""

    # read-only members (properties): a frozen dataclass has them
    @property
    def name(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def obs_dim(self) -> int: ...
    @property
    def action_kind(self) -> str: ...
    @property
    def action_dim(self) -> int: ...
    @property
    def action_n(self) -> int: ...
    @property
    def action_low(self) -> float: ...
    @property
    def action_high(self) -> float: ...
    @property
    def info_dim(self) -> int: ...
    @property
    def info_names(self) -> Sequence[str]: ...


def group_hook(config_dtype: np.dtype, group: Callable[[np.ndarray, int], GroupSpec],
               keep: list[Any]) -> Any:
    """``group`` as a table entry: ``group(config, g)`` (a copy of the
    configuration record) returns group ``g`` (`GroupSpec`), written
    into the runtime's ``seer_group``.  The name and info-name strings are
    made once per distinct value and kept in ``keep`` (the table's life).
    What it raises becomes the hook's failure, with its message."""
    c = core()
    ffi, lib = c.ffi, c.lib
    strings: dict[Any, Any] = {}

    def cstr(v: str) -> Any:
        p = strings.get(v)
        if p is None:
            p = strings[v] = _cstr(ffi, v, keep)
        return p

    def names(vs: tuple[str, ...]) -> Any:
        key = ("names", vs)
        p = strings.get(key)
        if p is None:
            p = strings[key] = _names(ffi, vs, keep)
        return p

    def cb(cfg: Any, g: int, out: Any, err: Any, errlen: int) -> int:
        try:
            x = group(_config_copy(ffi, cfg, config_dtype), int(g))
            if x.action_kind not in _ACTION_KINDS:
                raise ConfigError(f"action_kind={x.action_kind!r} must be one of "
                                  f"{', '.join(map(repr, _ACTION_KINDS))}")
            # its whole numbers, each named where it is none (cffi's own
            # errors named neither the field nor the value)
            for f, hi in (("count", 2**32), ("obs_dim", 2**32), ("action_dim", 2**32),
                          ("info_dim", 2**32), ("action_n", 2**31)):
                v = getattr(x, f)
                if isinstance(v, (bool, float)) or not isinstance(v, (int, np.integer)) or \
                        not 0 <= int(v) < hi:
                    raise ConfigError(f"{f}={v!r} must be an int in [0, {hi})")
            info = tuple(str(n) for n in x.info_names)
            if info and len(info) != x.info_dim:
                raise ConfigError(f"info_dim={x.info_dim} but {len(info)} info_names")
            out.name = cstr(str(x.name))
            out.count = int(x.count)
            out.obs_dim = int(x.obs_dim)
            out.action_kind = getattr(lib, _ACTION_KINDS[x.action_kind])
            out.action_dim = int(x.action_dim)
            out.action_n = int(x.action_n)
            out.action_low = float(x.action_low)
            out.action_high = float(x.action_high)
            out.info_dim = int(x.info_dim)
            out.info_names = names(info)
            return 0
        except BaseException as exc:
            msg = str(exc) if isinstance(exc, (ConfigError, ValueError, OverflowError)) else \
                f"the group hook raised {type(exc).__name__}: {exc}"
            _write_err(ffi, err, errlen, msg)
            return 1

    return ffi.callback("int(*)(const void *, uint32_t, seer_group *, char *, size_t)", cb)


def group_bounds_hook(config_dtype: np.dtype,
                      bounds: Callable[[np.ndarray, int],
                                       tuple[np.ndarray, np.ndarray] | None]) -> Any:
    """``group_obs_bounds`` as a table entry: ``bounds(config, g)`` returns the
    (low, high) float32 arrays of group ``g``'s observation, or None to leave
    them as they are (-inf..inf)."""
    c = core()
    ffi = c.ffi

    def cb(cfg: Any, g: int, low: Any, high: Any) -> None:
        out = bounds(_config_copy(ffi, cfg, config_dtype), int(g))
        if out is None:
            return
        lo, hi = out
        ffi.memmove(low, lo.tobytes(), lo.nbytes)
        ffi.memmove(high, hi.tobytes(), hi.nbytes)

    return ffi.callback("void(*)(const void *, uint32_t, float *, float *)", cb)


def nvec_hook(config_dtype: np.dtype,
              nvec: Callable[[np.ndarray, int], np.ndarray | None]) -> Any:
    """``action_nvec`` as a table entry: ``nvec(config, g)`` returns group
    ``g``'s choices per component (int32, its action_dim of them), or None
    to leave them 0 (which the runtime refuses, naming the component)."""
    c = core()
    ffi = c.ffi

    def cb(cfg: Any, g: int, out: Any) -> None:
        v = nvec(_config_copy(ffi, cfg, config_dtype), int(g))
        if v is None:
            return
        ffi.memmove(out, v.tobytes(), v.nbytes)

    return ffi.callback("void(*)(const void *, uint32_t, int32_t *)", cb)


def handler_hook(hook: str, handler: Callable[..., Any]) -> Any:
    """Handler ``hook`` (``"init"``, ``"handle"``, ...) as a table entry calling
    ``handler`` with the C arguments as they come (``seer_ctx *`` first:
    `HandlerContext` reads them); it returns the
    status (int hooks) or None."""
    return core().ffi.callback(_HANDLER_CTYPES[hook], handler)


# -- the table ----------------------------------------------------------------------------


class ParamSpec(Protocol):
    """What `model_table` reads of a parameter (a
    [`seer_env.pymodel.Param`][seer_env.pymodel.Param])."""

    # read-only members (properties): a frozen dataclass has them
    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def default(self) -> float | int | bool | None: ...
    @property
    def lo(self) -> float | None: ...
    @property
    def hi(self) -> float | None: ...
    @property
    def gt(self) -> bool: ...
    @property
    def inf(self) -> bool: ...
    @property
    def none(self) -> bool: ...
    @property
    def none_value(self) -> float: ...
    @property
    def count(self) -> int: ...
    @property
    def doc(self) -> str: ...


def _cstr(ffi: Any, s: str, keep: list[Any]) -> Any:
    p = ffi.new("char[]", s.encode())
    keep.append(p)
    return p


def _names(ffi: Any, names: Sequence[str], keep: list[Any]) -> Any:
    if not names:
        return ffi.NULL
    arr = ffi.new("char *[]", [_cstr(ffi, n, keep) for n in names])
    keep.append(arr)
    return arr


def model_table(*, name: str, params: Sequence[ParamSpec], config: np.dtype, state: np.dtype,
                info_names: Sequence[str], event_names: Sequence[str], max_cycles: int,
                hooks: Mapping[str, Any], source: str, keep: list[Any],
                mask_advisory: bool = False) -> NativeModel:
    """A ``seer_model`` table in ``seer_env._core`` made from these values, as a
    `NativeModel` (checked by the runtime).

    ``params`` are laid out in the configuration record ``config``; the state
    fields are ``state``'s (a field named ``_unused``, the placeholder of an
    empty record, is left out; a field of more than 2 dimensions raises
    ConfigError).  ``hooks`` maps each present hook to a machine-code address
    (an int) or a callback made here; ``keep`` holds everything the table
    points into and is kept alive with it (the callbacks included).
    ``mask_advisory`` sets ``SEER_MODEL_MASK_ADVISORY`` in the table's flags.
    """
    c = core()
    ffi, lib = c.ffi, c.lib
    t = ffi.new("seer_model *")
    keep.append(t)
    t.api_version = lib.SEER_API_VERSION
    t.name = _cstr(ffi, name, keep)
    t.config_size = config.itemsize if params else 0
    # config and state are records (structured dtypes): their fields and names are set
    if params:
        ps = ffi.new("seer_param[]", len(params))
        keep.append(ps)
        for i, p in enumerate(params):
            q = ps[i]
            q.name = _cstr(ffi, p.name, keep)
            q.kind = getattr(lib, _KINDS[p.dtype.kind])
            q.size = p.dtype.itemsize
            q.offset = cast("Mapping[str, tuple[Any, ...]]", config.fields)[p.name][1]
            q.count = p.count
            q.inner = 0
            q.flags = ((lib.SEER_P_GT if p.gt else 0) | (lib.SEER_P_INF if p.inf else 0)
                       | (lib.SEER_P_NONE if p.none else 0))
            setattr(q, "def", p.none_value if p.default is None else float(p.default))
            q.lo = 0.0 if p.lo is None else float(p.lo)
            q.hi = 0.0 if p.hi is None else float(p.hi)
            q.none = p.none_value
            q.doc = _cstr(ffi, p.doc, keep)
        t.params = ps
        t.num_params = len(params)
    fields = [n for n in cast("tuple[str, ...]", state.names) if n != "_unused"]
    if fields:
        fs = ffi.new("seer_field[]", len(fields))
        keep.append(fs)
        for i, n in enumerate(fields):
            fdt, off = cast("Mapping[str, tuple[Any, ...]]", state.fields)[n][:2]
            shape = fdt.shape
            if len(shape) > 2:
                raise ConfigError(f"{name}: state field {n!r} has {len(shape)} "
                                  "dimensions (at most 2)")
            f = fs[i]
            f.name = _cstr(ffi, n, keep)
            f.kind = getattr(lib, _KINDS[fdt.base.kind])
            f.size = fdt.base.itemsize
            f.offset = off
            f.count = int(np.prod(shape)) if shape else 1
            f.inner = shape[1] if len(shape) == 2 else 0
        t.state_fields = fs
        t.num_state_fields = len(fields)
    t.info_names = _names(ffi, info_names, keep)
    t.event_names = _names(ffi, event_names, keep)
    t.event_type_count = len(event_names)
    t.max_cycles = max_cycles
    t.flags = lib.SEER_MODEL_MASK_ADVISORY if mask_advisory else 0
    ftypes = dict(ffi.typeof("seer_model").fields)
    for hook, fn in hooks.items():
        ctype = ftypes[hook].type
        setattr(t, hook, fn if isinstance(fn, ffi.CData) else ffi.cast(ctype, fn))
    return NativeModel(c, source, table=t, keepalive=keep)
