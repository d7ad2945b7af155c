"""``jit=False``: a Python model's handlers as plain Python (callbacks the bindings make).

The same functions a compiled model runs, called through cffi with NumPy
record views: slow (every call takes the GIL) but debuggable with prints,
``pdb`` and tracebacks, and bit-identical to the compiled model as long as
the handlers compute in the same types.  A handler that raises fails the step
with the exception's type, message and line in the error.
"""

from __future__ import annotations

import traceback
from typing import Any, cast

import numpy as np

from .._bind.native import HandlerContext
from .._bind.pytable import agent_group, group_first, handler_hook, sizes_dtype
from . import HANDLERS, Output, PythonModel


class Record:
    """A record in native memory whose fields read and write as attributes
    (``st.count += 1``) or items (``st["count"]``), like a Numba record.
    (NumPy's own record lets methods such as ``mean`` shadow fields.)"""

    __slots__ = ("_a",)

    def __init__(self, arr: np.ndarray) -> None:
        object.__setattr__(self, "_a", arr)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._a[name][0]
        except (ValueError, KeyError):
            raise AttributeError(f"no field {name!r} (fields: "
                                 f"{', '.join(self._a.dtype.names)})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._a.dtype.names:
            raise AttributeError(f"no field {name!r} (fields: "
                                 f"{', '.join(self._a.dtype.names)})")
        self._a[name][0] = value

    __getitem__ = __getattr__
    __setitem__ = __setattr__

    def __repr__(self) -> str:
        return f"Record({self._a[0]!r})"


class Ctx(HandlerContext):
    """The ``ctx`` a plain-Python handler receives: the handler's ``seer_ctx *``
    (a `HandlerContext`) and the model's dtypes; the
    functions of [`seer_env.pymodel`][seer_env.pymodel] take it."""

    __slots__ = ("spec", "sizes_dtype", "model")

    def __init__(self, ptr: Any, model: PythonModel, sizes: np.dtype) -> None:
        super().__init__(ptr)
        self.model = model
        self.spec = model.spec
        self.sizes_dtype = sizes

    def record(self, arr: np.ndarray) -> Record:
        """A record view (`Record`) of a one-element array."""
        return Record(arr)

    def view(self, p: Any, dt: np.dtype) -> Record:
        return Record(self.at(p, dt))

    def sizes(self) -> Any:
        return Record(self.model_sizes(self.sizes_dtype))

    def schedule(self, target: int, t: float, event_type: int, payload: Any = None,
                 size: int = 0) -> int:
        """`seer_env.pymodel.schedule`: ``payload`` is None, a tuple of the
        payload dtype's fields or a payload `Record` (``size`` is unused)."""
        spec = self.spec
        if payload is None:
            return HandlerContext.schedule(self, target, t, event_type)
        if not spec.has[1]:
            raise TypeError(f"schedule(): model {spec.name!r} declares no payload dtype")
        buf = np.zeros(1, spec.payload)
        if isinstance(payload, Record):
            buf[0] = payload._a[0]
        else:
            vals = tuple(payload)
            # the payload dtype is a record (pymodel's _struct): its names are set
            if len(vals) > len(cast("tuple[str, ...]", spec.payload.names)):
                raise TypeError(f"schedule(): {len(vals)} payload values for "
                                f"{len(cast('tuple[str, ...]', spec.payload.names))} fields")
            for name, v in zip(cast("tuple[str, ...]", spec.payload.names), vals, strict=False):
                buf[name][0] = v
        return HandlerContext.schedule(self, target, t, event_type, buf, spec.payload.itemsize)

    def fail(self, why: str) -> int:
        return self.fail_step(str(why))

    def agent_group(self, agent: int) -> int:
        return agent_group(self.ptr, agent)

    def group_first(self, group: int) -> int:
        return group_first(self.ptr, group)


def _failure(hook: str, exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
    return f"{hook} raised {type(exc).__name__}: {exc}{where}"


def callbacks(model: PythonModel, keep: list[Any]) -> dict[str, Any]:
    """Table entries for the model's handlers, calling the Python functions."""
    spec = model.spec
    sizes = sizes_dtype()
    fns = model.functions
    act_dt = spec.action_dtype
    empty = {name: Record(np.zeros(1, dt))
             for name, dt in (("payload", spec.payload), ("instance", spec.instance))}
    out: dict[str, Any] = {}

    def guarded(hook: str, body: Any, status: bool) -> Any:
        def call(ctx: Any, *args: Any) -> Any:
            c = Ctx(ctx, model, sizes)
            try:
                # integers wrap silently, as in compiled code
                with np.errstate(over="ignore"):
                    body(c, *args)
            except BaseException as exc:  # the step fails with what was raised
                c.fail(_failure(hook, exc))
                return 1 if status else None
            return 0 if status else None
        return call

    def init(c: Ctx, ent: Any) -> None:
        fns["init"](c, c.view(ent, spec.state))

    def act(c: Ctx, ent: Any, action: Any) -> None:
        fns["act"](c, c.view(ent, spec.state), c.array(action, c.sizes().action_dim, act_dt))

    def handle(c: Ctx, ent: Any, event_type: int, payload: Any, size: int) -> None:
        pl = c.view(payload, spec.payload) if spec.has[1] else empty["payload"]
        fns["handle"](c, c.view(ent, spec.state), int(event_type), pl)

    def boundary(c: Ctx, data: Any) -> None:
        fns["boundary"](c, c.view(data, spec.instance) if spec.has[3] else empty["instance"])

    def observe(c: Ctx, agent: int, o: Any) -> None:
        sz = c.sizes()
        fns["observe"](c, int(agent), Output(*c.output(o, sz.obs_dim, sz.info_dim)))

    def publish(c: Ctx, ent: Any, record: Any) -> None:
        fns["publish"](c, c.view(ent, spec.state), c.view(record, spec.snapshot))

    def global_state(c: Ctx, o: Any) -> None:
        fns["global_state"](c, c.array(o, c.sizes().state_dim, np.float32))

    def action_mask(c: Ctx, agent: int, m: Any) -> None:
        fns["action_mask"](c, int(agent), c.array(m, c.sizes().mask_dim, np.uint8))

    bodies = {"init": (init, True), "act": (act, True), "handle": (handle, True),
              "boundary": (boundary, False), "observe": (observe, False),
              "publish": (publish, False), "global_state": (global_state, False),
              "action_mask": (action_mask, False)}
    for hook in HANDLERS:
        if hook in fns:
            body, status = bodies[hook]
            cb = handler_hook(hook, guarded(hook, body, status))
            keep.append(cb)
            out[hook] = cb
    return out
