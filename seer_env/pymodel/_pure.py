"""``jit=False``: a Python model's handlers as plain Python (cffi callbacks).

The same functions a compiled model runs, called through cffi with NumPy
record views: slow (every call takes the GIL) but debuggable with prints,
``pdb`` and tracebacks, and bit-identical to the compiled model as long as
the handlers compute in the same types.  A handler that raises fails the step
with the exception's type, message and line in the error.
"""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np

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


class Ctx:
    """The ``ctx`` a plain-Python handler receives (``seer_ctx *`` and the
    model's dtypes); the functions of :mod:`seer_env.pymodel` take it."""

    __slots__ = ("ptr", "ffi", "lib", "spec", "sizes_dtype", "model")

    def __init__(self, ptr: Any, ffi: Any, lib: Any, model: PythonModel, sizes: np.dtype
                 ) -> None:
        self.ptr = ptr
        self.ffi = ffi
        self.lib = lib
        self.model = model
        self.spec = model.spec
        self.sizes_dtype = sizes

    def view(self, p: Any, dt: np.dtype) -> Record:
        return Record(np.frombuffer(self.ffi.buffer(p, dt.itemsize), dtype=dt))

    def array(self, p: Any, n: int, dt: Any) -> np.ndarray:
        dt = np.dtype(dt)
        if n == 0:
            return np.zeros(0, dt)
        return np.frombuffer(self.ffi.buffer(p, n * dt.itemsize), dtype=dt)

    def sizes(self) -> Any:
        return self.view(self.lib.seer_model_sizes(self.ptr), self.sizes_dtype)

    def schedule(self, target: int, t: float, event_type: int, payload: Any) -> int:
        spec = self.spec
        if payload is None:
            return int(self.lib.seer_schedule(self.ptr, target, t, event_type,
                                              self.ffi.NULL, 0))
        if not spec.has[1]:
            raise TypeError(f"schedule(): model {spec.name!r} declares no payload dtype")
        buf = np.zeros(1, spec.payload)
        if isinstance(payload, Record):
            buf[0] = payload._a[0]
        else:
            vals = tuple(payload)
            if len(vals) > len(spec.payload.names):
                raise TypeError(f"schedule(): {len(vals)} payload values for "
                                f"{len(spec.payload.names)} fields")
            for name, v in zip(spec.payload.names, vals, strict=False):
                buf[name][0] = v
        return int(self.lib.seer_schedule(self.ptr, target, t, event_type,
                                          self.ffi.from_buffer(buf), spec.payload.itemsize))

    def fail(self, why: str) -> int:
        return int(self.lib.seer_fail_step(self.ptr, str(why).encode("utf-8", "replace")))


def _failure(hook: str, exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
    return f"{hook} raised {type(exc).__name__}: {exc}{where}"


def callbacks(model: PythonModel, ffi: Any, lib: Any, keep: list[Any]) -> dict[str, Any]:
    """cffi callbacks for the model's handlers, calling the Python functions."""
    from ._table import sizes_dtype

    spec = model.spec
    sizes = sizes_dtype(ffi)
    fns = model.functions
    act_dt = spec.action_dtype
    empty = {name: Record(np.zeros(1, dt))
             for name, dt in (("payload", spec.payload), ("instance", spec.instance))}
    out: dict[str, Any] = {}

    def guarded(hook: str, body: Any, status: bool) -> Any:
        def call(ctx: Any, *args: Any) -> Any:
            c = Ctx(ctx, ffi, lib, model, sizes)
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
        fns["observe"](c, int(agent), Output(
            c.array(o.obs, sz.obs_dim, np.float32), c.array(o.reward, 1, np.float32),
            c.array(o.terminated, 1, np.uint8), c.array(o.truncated, 1, np.uint8),
            c.array(o.info, sz.info_dim, np.float64)))

    def publish(c: Ctx, ent: Any, record: Any) -> None:
        fns["publish"](c, c.view(ent, spec.state), c.view(record, spec.snapshot))

    def global_state(c: Ctx, o: Any) -> None:
        fns["global_state"](c, c.array(o, c.sizes().state_dim, np.float32))

    bodies = {"init": (init, "int(*)(seer_ctx *, void *)", True),
              "act": (act, "int(*)(seer_ctx *, void *, const void *)", True),
              "handle": (handle, "int(*)(seer_ctx *, void *, uint32_t, const void *, uint32_t)",
                         True),
              "boundary": (boundary, "void(*)(seer_ctx *, void *)", False),
              "observe": (observe, "void(*)(seer_ctx *, uint32_t, const seer_output *)", False),
              "publish": (publish, "void(*)(seer_ctx *, const void *, void *)", False),
              "global_state": (global_state, "void(*)(seer_ctx *, float *)", False)}
    for hook in HANDLERS:
        if hook in fns:
            body, ctype, status = bodies[hook]
            cb = ffi.callback(ctype, guarded(hook, body, status))
            keep.append(cb)
            out[hook] = cb
    return out
