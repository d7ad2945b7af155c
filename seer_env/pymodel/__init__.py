"""Models written in Python: handlers compiled with Numba, run by the runtime.

A Python model is the same thing as a C model (``seer.h``) written in Python:
entity state, event payload, snapshot record and per-instance data are NumPy
structured dtypes; the configuration is a list of [`param`][seer_env.pymodel.param]; the handlers
are plain Python functions that seer_env compiles with Numba (``pip install
"seer_env[numba]"``) into native functions the runtime's worker threads call
without the GIL.  Every API of a C model works unchanged: the PettingZoo
envs, the batched and Gymnasium vector envs, verify, ``seer-env check``,
traces and STPA.

A model folder's ``__init__.py`` (``seer-env new NAME --python`` writes a
complete one):

```python
import numpy as np
from seer_env import pymodel as seer

MODEL = seer.declare(
    __name__,
    params=[seer.param("num_entities", np.uint32, 16, lo=1, hi=4096,
                       doc="entities, each one an agent"),
            seer.param("rate", np.float64, 1.0, lo=0, hi=1e9, gt=True)],
    state=np.dtype([("count", np.uint64), ("last", np.float64)]),
    payload=np.dtype([("hops", np.uint32)]),
    snapshot=np.dtype([("count", np.uint64)]),
    info_names=("count",),
)

@MODEL.describe
def describe(c):                      # plain Python, once per configuration
    return seer.Sizes(num_entities=c.num_entities, num_agents=c.num_entities,
                      obs_dim=1, action_n=2, lookahead=0.5, step_duration=1.0)

@MODEL.init
def init(ctx, st):                    # compiled: runs on the worker threads
    seer.schedule(ctx, seer.self(ctx), seer.rng_exponential(ctx, 1.0), 0, (0,))

@MODEL.handle
def handle(ctx, st, event_type, payload):
    st.count += 1
    st.last = seer.now(ctx)
    c = seer.config(ctx)
    target = seer.rng_below(ctx, c.num_entities)
    seer.schedule(ctx, target, seer.now(ctx) + 0.5 + seer.rng_exponential(ctx, c.rate),
                  0, (payload.hops + 1,))

@MODEL.observe
def observe(ctx, agent, out):
    st = seer.entity_state(ctx, agent)
    out.obs[0] = st.count
    out.reward[0] = 1.0
    out.info[0] = st.count

@MODEL.publish
def publish(ctx, st, record):
    record.count = st.count

parallel_env = MODEL.parallel_env
```

Handlers and what they receive (the C hooks of ``seer.h``, one for one):

| handler | arguments | what it does |
|---|---|---|
| `init` | `(ctx, state)` | entity init at reset (state zeroed) |
| `act` | `(ctx, state, action)` | takes the agent's action (below) |
| `handle` | `(ctx, state, event_type, payload)` | handles an event (required) |
| `boundary` | `(ctx, data)` | once per instance; `data` is the instance record (writable) |
| `observe` | `(ctx, agent, out)` | writes the agent's outputs (required; below) |
| `publish` | `(ctx, state, record)` | writes the snapshot record |
| `global_state` | `(ctx, out)` | writes the global state, a float32 array of state_dim |
| `action_mask` | `(ctx, agent, mask)` | writes the agent's action mask (below) |

``act``'s ``action`` is an int32 array of one element (discrete), an int32
array of action_dim (multi-discrete: the components) or a float32 array of
action_dim (box; ``actions="mixed"``: int32, a box group reads
``action.view(np.float32)``).  ``observe``'s ``out.obs``, ``out.reward``,
``out.terminated``, ``out.truncated``, ``out.info`` are arrays to write (reward
and flags: one element).  ``action_mask`` runs for each agent that acts next,
at the boundary; ``mask`` is the agent's uint8 row of mask_dim bytes (its
group's choices first), all 1 on entry: write 0 where a choice is forbidden.

Host hooks (plain Python, like ``describe``): ``agent_name(c, i)``,
``obs_bounds(c)`` and ``state_bounds(c)`` (``(low, high)``); for agent groups
(``Sizes(num_groups=...)``) ``group(c, g)`` returning a [`Group`][seer_env.pymodel.Group] and
``group_obs_bounds(c, g)``; for multi-discrete actions ``action_nvec(c, g)``
(the choices of each component).  [`agent_group`][seer_env.pymodel.agent_group] and
[`group_first`][seer_env.pymodel.group_first] give an agent's group and a group's first agent in any
handler; ``declare(..., mask_advisory=True)`` makes the masks advisory.

Handlers return nothing.  A handler fails the step with [`fail`][seer_env.pymodel.fail]
(``seer.fail(ctx, "why")``) or by raising; either way the step raises
[`ModelError`][seer_env.errors.ModelError] naming the model, the handler, the
entity, the instance and the time.  Compiled code keeps no exception message:
run the model interpreted (``SEER_ENV_JIT=0`` in the environment,
``jit=False`` in the declaration or ``MODEL.interpreted()``: plain Python,
slow, with prints, tracebacks and ``pdb``) to see it.

The runtime calls (`now`, `self`, `schedule`, the RNG, ...)
mean exactly what they mean in C and are valid in the same handlers.  Helper
functions a handler calls must be compiled too: decorate them with
[`jit`][seer_env.pymodel.jit].  At build time a handler that allocates (NumPy arrays, lists,
strings), touches Python objects (``print``, object mode) or draws from
NumPy's or Python's random generators is refused with the handler, file and
line, and one that Numba cannot compile fails with Numba's message and the
handler's name.  The compiled code is cached on disk, keyed by the sources of
the handlers and of everything they call.
"""

from __future__ import annotations

import copy
import inspect
import math
import os
import sys
import threading
from collections import namedtuple
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import registry
from ..errors import ConfigError, MissingExtraError, ModelError, StateError
from ..model import Model, _caller_file

if TYPE_CHECKING:  # pragma: no cover
    from .._bind.native import NativeModel

__all__ = [
    "declare", "param", "Param", "Sizes", "PythonModel", "Output", "jit",
    "now", "self", "instance", "step_index", "seed", "config", "model_sizes", "snapshot",
    "instance_data", "schedule", "rng_u64", "rng_uniform", "rng_exponential", "rng_below",
    "entity_state", "agent_alive", "entity_events", "fail", "ConfigError",
    "Group", "agent_group", "group_first",
]

#: The handlers a Python model may define (the order of ``seer_model``).
HANDLERS = ("init", "act", "handle", "boundary", "observe", "publish", "global_state",
            "action_mask")
#: Host-side hooks: plain Python, run by the host thread.
HOST_HOOKS = ("describe", "agent_name", "obs_bounds", "state_bounds", "group",
              "group_obs_bounds", "action_nvec")
#: What ``actions=`` of `declare` accepts (the type of ``act``'s ``action``).
ACTIONS = ("discrete", "box", "multi_discrete", "mixed")
#: What `Group`'s ``action_kind`` accepts.
ACTION_KINDS = ("discrete", "box", "multi_discrete")
REQUIRED = ("describe", "handle", "observe")

#: ``out`` of observe: arrays of obs_dim, 1, 1, 1 and info_dim elements.
Output = namedtuple("Output", "obs reward terminated truncated info")


def require_numba() -> Any:
    """Import Numba or raise [`MissingExtraError`][seer_env.errors.MissingExtraError]."""
    try:
        import numba
    except ImportError as exc:
        raise MissingExtraError(
            "models written in Python are compiled with Numba, which is not installed: "
            "pip install \"seer_env[numba]\" (or run the model with jit=False, in plain "
            "Python, to debug it)") from exc
    return numba


def jit(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Make a helper function callable from compiled handlers:

    ```python
    @seer.jit
    def mix(z):
        return z ^ (z >> np.uint64(31))
    ```

    Compiled handlers compile it with them (Numba's ``register_jitable``);
    called from Python, interpreted models included, it is the plain
    function.  Without Numba it is returned as is.
    """
    try:
        from numba.extending import register_jitable
    except ImportError:  # pragma: no cover - exercised without the extra
        return fn if fn is not None else (lambda f: f)
    return register_jitable(fn, **options) if fn is not None else register_jitable(**options)


# -- the declaration ------------------------------------------------------------------


_KIND_OF = {"b": "bool", "i": "int", "u": "uint", "f": "float"}


@dataclass(frozen=True)
class Param:
    """One configuration parameter (see [`param`][seer_env.pymodel.param])."""

    name: str
    dtype: np.dtype
    default: float | int | bool | None
    lo: float | None = None
    hi: float | None = None
    gt: bool = False
    inf: bool = False
    none: bool = False
    none_value: float = math.nan
    count: int = 1
    doc: str = ""


def param(name: str, dtype: Any, default: float | int | bool | None, *, lo: float | None = None,
          hi: float | None = None, gt: bool = False, inf: bool = False, none: bool = False,
          none_value: float = math.nan, count: int = 1, doc: str = "") -> Param:
    """A configuration parameter: the Python side of a C ``seer_param``.

    Args:
        name: the key users pass (``env = MODEL.parallel_env(name=...)``).
        dtype: a NumPy scalar type: bool, a signed or unsigned integer of 1
            to 8 bytes, float32 or float64.
        default: the value of every element (None with ``none=True``: not
            set, for ``describe`` to derive).
        lo: the low end of the accepted range (lo and hi both None: the
            type's whole range, finite values for floats).
        hi: the high end of the accepted range.
        gt: the low end is exclusive (``value > lo``).
        inf: floats: +inf is accepted too.
        none: "not set" (Python None) is accepted and stored as
            ``none_value`` (NaN by default; describe fills it in).
        count: elements (> 1: an array parameter set from a sequence).
        doc: one line for ``seer-env info`` and ``config_help()``.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigError(f"param name {name!r} must be a Python identifier")
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise ConfigError(f"param {name}: {dtype!r} is not a NumPy scalar type") from exc
    if dt.kind not in _KIND_OF or dt.shape or (dt.kind == "f" and dt.itemsize not in (4, 8)):
        raise ConfigError(f"param {name}: dtype {dt} must be bool, an integer, float32 or "
                          "float64")
    if (lo is None) != (hi is None):
        raise ConfigError(f"param {name}: give both lo and hi, or neither")
    if default is None and not none:
        raise ConfigError(f"param {name}: default None needs none=True")
    if not isinstance(count, int) or not 1 <= count <= 1 << 20:
        raise ConfigError(f"param {name}: count={count!r} must be an int in [1, 2**20]")
    return Param(name, dt.newbyteorder("="), default, lo, hi, bool(gt), bool(inf), bool(none),
                 float(none_value), count, str(doc))


@dataclass
class Sizes:
    """What ``describe`` returns: the fields of C's ``seer_sizes``.

    ``entity_size``, ``payload_size``, ``snapshot_size`` and ``instance_size``
    come from the declared dtypes (given here, they must agree); ``info_dim``
    defaults to the number of ``info_names``; a discrete model gives
    ``action_n``, a box model ``action_dim``, ``action_low``, ``action_high``,
    a multi-discrete one ``action_dim`` (the components; ``action_nvec``
    gives their choices).

    A model with agent groups (a ``group`` hook) sets ``num_groups`` (>= 1;
    0: no groups, as before) and leaves the observation, action and info
    sizes out (``obs_dim=0``): each [`Group`][seer_env.pymodel.Group] gives its own, and the
    runtime sets these members to the largest group's.  A model declared
    ``actions="mixed"`` whose configuration has no groups (``num_groups=0``)
    says which kind its one group's actions are with ``action_kind``
    (``"discrete"``, ``"multi_discrete"`` or ``"box"``); other models leave it
    out (their declaration says).
    """

    num_entities: int
    num_agents: int
    obs_dim: int
    lookahead: float
    step_duration: float
    action_n: int = 0
    action_dim: int = 1
    action_low: float = 0.0
    action_high: float = 0.0
    info_dim: int | None = None
    state_dim: int = 0
    pending_events: int = 0
    entity_size: int | None = None
    payload_size: int | None = None
    snapshot_size: int | None = None
    instance_size: int | None = None
    num_groups: int = 0
    action_kind: str | None = None


@dataclass(frozen=True)
class Group:
    """What the ``group`` hook returns for group ``g``: the fields of C's
    ``seer_group``.  Group 0 takes the first ``count`` agents, group 1 the
    next, and so on; agents are named ``<name>_<i>``.

    ``action_kind`` is ``"discrete"`` (give ``action_n``), ``"box"``
    (``action_dim``, ``action_low``, ``action_high``) or
    ``"multi_discrete"`` (``action_dim`` components; ``action_nvec`` gives
    their choices).  ``info_dim`` defaults to the number of ``info_names``.
    """

    name: str
    count: int
    obs_dim: int
    action_kind: str = "discrete"
    action_dim: int = 1
    action_n: int = 0
    action_low: float = 0.0
    action_high: float = 0.0
    info_names: Sequence[str] = ()
    info_dim: int | None = None


@dataclass(frozen=True)
class Spec:
    """The compile-time facts of a Python model (dtypes and names); it keys
    the Numba context type and the compiled code's cache."""

    name: str
    config: np.dtype
    state: np.dtype
    payload: np.dtype
    snapshot: np.dtype
    instance: np.dtype
    actions: str
    has: tuple[bool, bool, bool, bool] = field(default=(True, True, True, True))

    @property
    def action_dtype(self) -> np.dtype:
        """``act``'s ``action``: float32 for box actions, int32 otherwise
        (``"mixed"``: a box group reads ``action.view(np.float32)``)."""
        return np.dtype(np.float32 if self.actions == "box" else np.int32)


def _struct(what: str, dt: Any, model: str) -> np.dtype:
    """A user's record dtype, checked (numbers only) and padded like a C struct."""
    if dt is None:
        return np.dtype([("_unused", np.uint8)])
    try:
        d = np.dtype(dt)
    except TypeError as exc:
        raise ConfigError(f"{model}: {what} {dt!r} is not a NumPy dtype") from exc
    if d.names is None:
        raise ConfigError(f"{model}: {what} must be a structured dtype (named fields), got {d}")
    if not d.names:
        raise ConfigError(f"{model}: {what} has no fields")
    align = 1
    for n in d.names:
        fd = d.fields[n][0]
        base = fd.base
        if base.kind not in _KIND_OF or base.hasobject or base.names is not None:
            raise ConfigError(
                f"{model}: {what} field {n!r} has dtype {fd}: only bool, integers and "
                "floats (scalars or fixed-size arrays of them) can live in native memory")
        if base.kind == "f" and base.itemsize not in (4, 8):
            raise ConfigError(f"{model}: {what} field {n!r}: float{base.itemsize * 8} is not "
                              "supported (float32 or float64)")
        if base.byteorder not in ("=", "|", "<" if sys.byteorder == "little" else ">"):
            raise ConfigError(f"{model}: {what} field {n!r} is not in native byte order")
        align = max(align, base.itemsize)
    size = -(-d.itemsize // align) * align
    if size != d.itemsize:
        d = np.dtype({"names": list(d.names), "formats": [d.fields[n][0] for n in d.names],
                      "offsets": [d.fields[n][1] for n in d.names], "itemsize": size})
    return d


def _config_dtype(params: Sequence[Param]) -> np.dtype:
    if not params:
        return np.dtype([("_unused", np.uint8)])
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ConfigError(f"parameters declared twice: {', '.join(dup)}")
    return np.dtype([(p.name, p.dtype, (p.count,)) if p.count > 1 else (p.name, p.dtype)
                     for p in params], align=True)


class PythonModel(Model):
    """A model whose handlers are Python functions (create it with `declare`).

    Register the handlers with the decorators of the same names:

    ```python
    @MODEL.handle
    def handle(ctx, state, event_type, payload): ...
    ```

    The model compiles on first use ([`native`][seer_env.sdk.Model.native], any env) or with
    `build`.  ``jit=False`` runs the same functions as plain Python
    (slowly, one thread at a time, with tracebacks): the way to debug them.
    """

    def __init__(self, folder: Any, name: str, *, module: str | None, params: Sequence[Param],
                 state: Any, payload: Any = None, snapshot: Any = None, instance: Any = None,
                 actions: str = "discrete", info_names: Sequence[str] = (),
                 event_names: Sequence[str] = (), max_cycles: int = 0, jit: bool = True,
                 mask_advisory: bool = False, **options: Any) -> None:
        super().__init__(folder, name, module=module, **options)
        if actions not in ACTIONS:
            raise ConfigError(f"{name}: actions={actions!r} must be one of "
                              f"{', '.join(map(repr, ACTIONS))}")
        params = list(params)
        for p in params:
            if not isinstance(p, Param):
                raise ConfigError(f"{name}: params must be made with seer_env.pymodel.param(), "
                                  f"got {p!r}")
        if state is None:
            raise ConfigError(f"{name}: the entity state dtype (state=) is required")
        self.py_params = params
        self.spec = Spec(
            name=name, config=_config_dtype(params), state=_struct("state", state, name),
            payload=_struct("payload", payload, name),
            snapshot=_struct("snapshot", snapshot, name),
            instance=_struct("instance", instance, name), actions=actions,
            has=(True, payload is not None, snapshot is not None, instance is not None))
        self.info_names = tuple(str(s) for s in info_names)
        self.event_names = tuple(str(s) for s in event_names)
        if not isinstance(max_cycles, int) or max_cycles < 0:
            raise ConfigError(f"{name}: max_cycles={max_cycles!r} must be an int >= 0")
        self.max_cycles = max_cycles
        #: SEER_MODEL_MASK_ADVISORY: masks advise, ``act`` treats forbidden actions
        self.mask_advisory = bool(mask_advisory)
        # SEER_ENV_JIT=0 runs every Python model interpreted (debugging)
        self.jit = bool(jit) and os.environ.get("SEER_ENV_JIT", "1").strip().lower() not in (
            "0", "false", "no", "off")
        self.functions: dict[str, Callable[..., Any]] = {}
        #: where the compiled handlers are cached (set by the first build)
        self.build_dir: Path | None = None
        self._where = ""
        for hook in (*HOST_HOOKS, *HANDLERS):
            setattr(self, hook, self._registrar(hook))

    def _registrar(self, hook: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            if self._native is not None:
                raise StateError(f"{self.name}: {hook} registered after the model was built; "
                                 "register every handler before the model is first used")
            if not callable(fn):
                raise ConfigError(f"{self.name}.{hook}: {fn!r} is not a function")
            py = getattr(fn, "py_func", fn)  # a @jit-decorated function: its Python source
            if not inspect.isfunction(py):
                raise ConfigError(f"{self.name}.{hook}: {fn!r} is not a Python function")
            self.functions[hook] = py
            return fn
        register.__name__ = hook
        register.__doc__ = f"Register the model's ``{hook}`` (a decorator)."
        return register

    def __repr__(self) -> str:
        how = "compiled" if self.jit else "interpreted"
        return f"<seer Python model {self.name!r} ({how}) from {self.folder}>"

    def interpreted(self) -> PythonModel:
        """The same model with its handlers run as plain Python (``jit=False``):
        slow, but prints, ``pdb`` and tracebacks work, and an exception's
        message reaches the error.  Not registered; its envs are made from it
        (``MODEL.interpreted().parallel_env()``)."""
        m = copy.copy(self)
        m.jit = False
        m._native = None
        m._lock = threading.Lock()
        m.functions = dict(self.functions)
        return m

    def _load(self, rebuild: bool, log: Callable[[str], None] | None = None) -> NativeModel:
        missing = [h for h in REQUIRED if h not in self.functions]
        if missing:
            raise ModelError(f"{self.name}: no {', '.join(missing)} registered "
                             f"(@MODEL.{missing[0]})")
        from . import _table

        native, self._where, self.build_log = _table.build(self, rebuild=rebuild, log=log)
        return native


def declare(module: str, *, name: str | None = None, params: Sequence[Param] = (),
            state: Any, payload: Any = None, snapshot: Any = None, instance: Any = None,
            actions: str = "discrete", info_names: Sequence[str] = (),
            event_names: Sequence[str] = (), max_cycles: int = 0, jit: bool = True,
            mask_advisory: bool = False, **options: Any) -> PythonModel:
    """Declare a Python model in its folder's ``__init__.py`` (or any module):

    ```python
    MODEL = seer.declare(__name__, params=[...], state=STATE, payload=PAYLOAD)
    ```

    Args:
        module: ``__name__`` of the declaring module (its folder is the model's).
        name: the env name (default: the folder's name; unique in a process).
        params: the configuration ([`param`][seer_env.pymodel.param], in order).
        state: the entity state's structured dtype (zeroed at reset).
        payload: the event payload's dtype (None: events carry none).
        snapshot: the published record's dtype (None: no snapshot).
        instance: the per-instance boundary data's dtype (None: none).
        actions: ``"discrete"``, ``"box"`` or ``"multi_discrete"`` (describe
            gives the sizes); with groups, the kind of every group's actions,
            or ``"mixed"`` for groups of different kinds (``act``'s action
            is then int32: a box group reads ``action.view(np.float32)``).
        info_names: names of the per-agent info values (a model with groups
            names them per group: [`Group`][seer_env.pymodel.Group]'s ``info_names``).
        event_names: names of the event types, for messages and traces.
        max_cycles: steps before every agent is truncated (0: never).
        jit: False runs the handlers as plain Python (debugging).
        mask_advisory: the action masks advise and do not forbid: an action
            a mask rules out reaches ``act`` like any other
            (``SEER_MODEL_MASK_ADVISORY``) instead of being refused.
        options: the keyword arguments of [`seer_env.sdk.Model`][seer_env.sdk.Model]
            (``render``, ``dict_info_keys``, ...).
    """
    folder = _caller_file(module)
    doc = options.pop("doc", None) or getattr(sys.modules.get(module), "__doc__", None)
    model = PythonModel(folder, name or folder.name, module=module, params=params, state=state,
                        payload=payload, snapshot=snapshot, instance=instance, actions=actions,
                        info_names=info_names, event_names=event_names, max_cycles=max_cycles,
                        jit=jit, mask_advisory=mask_advisory, doc=doc, **options)
    return registry.register(model)  # type: ignore[return-value]


# -- the runtime calls ----------------------------------------------------------------
#
# In compiled handlers these are Numba overloads (_numba.py) that call the
# runtime's C functions directly; the bodies below serve jit=False models,
# whose ctx is a _pure.Ctx (the bindings' HandlerContext, with the model's dtypes).


def now(ctx: Any) -> float:
    """The simulated time of the event (or phase) being handled (``seer_now``)."""
    return ctx.now()


def self(ctx: Any) -> int:  # noqa: A001 - the C name (seer_self)
    """The entity (or agent) the handler runs for (``seer_self``)."""
    return ctx.entity()


def instance(ctx: Any) -> int:
    """The instance's index in the batch (``seer_instance``)."""
    return ctx.instance()


def step_index(ctx: Any) -> int:
    """k of the current (or last) step (``seer_step_index``)."""
    return ctx.step_index()


def seed(ctx: Any) -> int:
    """The instance's reset seed (``seer_seed``)."""
    return ctx.seed()


def config(ctx: Any) -> Any:
    """The configuration record (read only; ``seer_config``)."""
    return ctx.record(ctx.config(ctx.spec.config))


def model_sizes(ctx: Any) -> Any:
    """The instance's sizes (a record with the fields of [`Sizes`][seer_env.pymodel.Sizes])."""
    return ctx.sizes()


def snapshot(ctx: Any, entity: int) -> Any:
    """Entity ``entity``'s published snapshot record (read only; ``seer_snapshot``)."""
    rec = ctx.snapshot(entity, ctx.spec.snapshot)
    if rec is None:
        ctx.fail("snapshot(): entity out of range")
        raise IndexError(f"snapshot({entity}): entity out of range")
    return ctx.record(rec)


def instance_data(ctx: Any) -> Any:
    """The per-instance record written by ``boundary`` (read only elsewhere)."""
    return ctx.record(ctx.instance_data(ctx.spec.instance))


def schedule(ctx: Any, target: int, t: float, event_type: int, payload: Any = None) -> int:
    """Schedule an event for ``target`` at time ``t`` (``seer_schedule``).

    ``payload`` is a tuple of the payload dtype's fields in order (missing
    trailing fields are zero), a payload record (forwarded as is), or
    omitted.  Returns 0, or the violation's status code; on a violation
    nothing is scheduled and the step fails once the handler returns.
    """
    return ctx.schedule(target, t, event_type, payload)


def rng_u64(ctx: Any) -> int:
    """64 random bits from the entity's stream (``seer_rng_u64``)."""
    return ctx.rng_u64()


def rng_uniform(ctx: Any) -> float:
    """Uniform in (0, 1) from the entity's stream (``seer_rng_uniform``)."""
    return ctx.rng_uniform()


def rng_exponential(ctx: Any, mean: float) -> float:
    """Exponential with ``mean`` from the entity's stream (``seer_rng_exponential``)."""
    return ctx.rng_exponential(mean)


def rng_below(ctx: Any, n: int) -> int:
    """Uniform in [0, n) from the entity's stream (``seer_rng_below``); n = 0
    fails the step (a ModelError: the range holds no value)."""
    return ctx.rng_below(n)


def entity_state(ctx: Any, entity: int) -> Any:
    """Any entity's state record, at the boundary only (boundary, observe,
    global_state; ``seer_entity_state``).  Elsewhere the step fails."""
    rec = ctx.entity_state(entity, ctx.spec.state)
    if rec is None:
        ctx.fail("entity_state(): only at the boundary (boundary, observe, global_state) "
                 "and for an entity in range")
        raise IndexError(f"entity_state({entity}) outside the boundary or out of range")
    return ctx.record(rec)


def agent_alive(ctx: Any, agent: int) -> bool:
    """Whether ``agent`` was alive at the start of this step (boundary only)."""
    return ctx.agent_alive(agent)


def agent_group(ctx: Any, agent: int) -> int:
    """The group of ``agent`` (0 for a model without groups; 2**32 - 1 out of
    range; ``seer_agent_group``).  Any handler."""
    return ctx.agent_group(agent)


def group_first(ctx: Any, group: int) -> int:
    """The first agent of ``group`` (2**32 - 1 out of range;
    ``seer_group_first``).  Any handler."""
    return ctx.group_first(group)


def entity_events(ctx: Any, entity: int) -> int:
    """Events ``entity`` handled since reset (boundary only)."""
    return ctx.entity_events(entity)


def fail(ctx: Any, why: str) -> int:
    """Fail the step: the host raises [`ModelError`][seer_env.errors.ModelError] with
    ``why`` (a string literal in compiled handlers), the handler, entity,
    instance and time.  Returns a non-zero status; the handler should return."""
    return ctx.fail(why)
