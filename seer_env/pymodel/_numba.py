"""The Numba side of Python models: the context type, the runtime calls
compiled as direct calls into the runtime's C functions, and the views
handlers get (records, arrays, ``out``).

The runtime's C functions live in ``seer_env._core`` (the runtime without a
model).  Their addresses (`seer_env._bind.pytable.function_address`) are
given to LLVM's symbol table under
``seerpy_<name>`` (``llvmlite.binding.add_symbol``) before anything compiles,
and compiled code refers to them by name: machine code cached on disk stays
valid in the next process, where the same names resolve to that process's
addresses.

Imported only when a Python model is built with Numba.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import llvmlite.binding as llb
import numba
import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.core import cgutils
from numba.extending import intrinsic, models, overload, register_model

from .. import pymodel as api
from .._bind.pytable import function_address, output_offsets, sizes_dtype

SYMBOL_PREFIX = "seerpy_"

#: Runtime functions handlers reach: C name -> (return type, parameter types).
EXTERNS: dict[str, tuple[Any, tuple[Any, ...]]] = {
    "seer_now": (types.float64, (types.voidptr,)),
    "seer_self": (types.uint32, (types.voidptr,)),
    "seer_instance": (types.uint32, (types.voidptr,)),
    "seer_step_index": (types.uint64, (types.voidptr,)),
    "seer_seed": (types.uint64, (types.voidptr,)),
    "seer_config": (types.voidptr, (types.voidptr,)),
    "seer_model_sizes": (types.voidptr, (types.voidptr,)),
    "seer_snapshot": (types.voidptr, (types.voidptr, types.uint32)),
    "seer_instance_data": (types.voidptr, (types.voidptr,)),
    "seer_schedule": (types.int32, (types.voidptr, types.uint32, types.float64, types.uint32,
                                    types.voidptr, types.uint32)),
    "seer_rng_u64": (types.uint64, (types.voidptr,)),
    "seer_rng_uniform": (types.float64, (types.voidptr,)),
    "seer_rng_exponential": (types.float64, (types.voidptr, types.float64)),
    "seer_rng_below": (types.uint32, (types.voidptr, types.uint32)),
    "seer_entity_state": (types.voidptr, (types.voidptr, types.uint32)),
    "seer_agent_alive": (types.int32, (types.voidptr, types.uint32)),
    "seer_entity_events": (types.uint64, (types.voidptr, types.uint32)),
    "seer_agent_group": (types.uint32, (types.voidptr, types.uint32)),
    "seer_group_first": (types.uint32, (types.voidptr, types.uint32)),
    "seer_fail_step": (types.int32, (types.voidptr, types.voidptr)),
}


def _register_symbols() -> None:
    for name in EXTERNS:
        llb.add_symbol(SYMBOL_PREFIX + name, function_address(name))


_register_symbols()


# -- the context type ---------------------------------------------------------------


class CtxType(types.Type):
    """``seer_ctx *`` of one Python model: the pointer, typed with the model's
    `Spec` so the runtime calls return its records."""

    def __init__(self, spec: api.Spec, key: str) -> None:
        self.spec = spec
        self.spec_key = key
        super().__init__(name=f"SeerCtx[{spec.name}:{key}]")


register_model(CtxType)(models.OpaqueModel)


def ctx_caster(ctx_type: CtxType) -> Any:
    """An intrinsic turning the raw ``void *`` a handler receives into ``ctx_type``."""

    @intrinsic
    def as_ctx(typingctx: Any, ptr: Any) -> Any:
        if ptr != types.voidptr:
            return None
        return ctx_type(types.voidptr), lambda context, builder, sig, args: args[0]

    return as_ctx


def _ll(context: Any, ty: Any) -> Any:
    return context.get_value_type(ty)


def _extern_codegen(cname: str) -> Any:
    ret, params = EXTERNS[cname]

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        fnty = ir.FunctionType(_ll(context, ret), [_ll(context, p) for p in params])
        fn = cgutils.get_or_insert_function(builder.module, fnty, SYMBOL_PREFIX + cname)
        conv = []
        for v, have, want in zip(args, sig.args, params, strict=False):
            if isinstance(have, CtxType) or have == want:
                conv.append(v)
            else:
                conv.append(context.cast(builder, v, have, want))
        return builder.call(fn, conv)

    return codegen


def _typed(cname: str, args: tuple[Any, ...]) -> Any:
    ret, params = EXTERNS[cname]
    if len(args) != len(params):
        return None
    first = args[0]
    if not (isinstance(first, CtxType) or first == types.voidptr):
        return None
    for a, p in zip(args[1:], params[1:], strict=False):
        if not (a == p or isinstance(a, (types.Integer, types.Float, types.Boolean))
                and isinstance(p, (types.Integer, types.Float)) or a == types.voidptr):
            return None
    return ret(*args), _extern_codegen(cname)


@intrinsic
def c_now(typingctx: Any, ctx: Any) -> Any:
    return _typed("seer_now", (ctx,))


@intrinsic
def c_self(typingctx: Any, ctx: Any) -> Any:
    return _typed("seer_self", (ctx,))


@intrinsic
def c_instance(typingctx: Any, ctx: Any) -> Any:
    return _typed("seer_instance", (ctx,))


@intrinsic
def c_step_index(typingctx: Any, ctx: Any) -> Any:
    return _typed("seer_step_index", (ctx,))


@intrinsic
def c_seed(typingctx: Any, ctx: Any) -> Any:
    return _typed("seer_seed", (ctx,))


@intrinsic
def c_config(typingctx: Any, ctx: Any) -> Any:
    return _typed("seer_config", (ctx,))


@intrinsic
def c_model_sizes(typingctx: Any, ctx: Any) -> Any:
    return _typed("seer_model_sizes", (ctx,))


@intrinsic
def c_snapshot(typingctx: Any, ctx: Any, e: Any) -> Any:
    return _typed("seer_snapshot", (ctx, e))


@intrinsic
def c_instance_data(typingctx: Any, ctx: Any) -> Any:
    return _typed("seer_instance_data", (ctx,))


@intrinsic
def c_schedule(typingctx: Any, ctx: Any, target: Any, t: Any, ty: Any, p: Any, n: Any) -> Any:
    return _typed("seer_schedule", (ctx, target, t, ty, p, n))


@intrinsic
def c_rng_u64(typingctx: Any, ctx: Any) -> Any:
    return _typed("seer_rng_u64", (ctx,))


@intrinsic
def c_rng_uniform(typingctx: Any, ctx: Any) -> Any:
    return _typed("seer_rng_uniform", (ctx,))


@intrinsic
def c_rng_exponential(typingctx: Any, ctx: Any, mean: Any) -> Any:
    return _typed("seer_rng_exponential", (ctx, mean))


@intrinsic
def c_rng_below(typingctx: Any, ctx: Any, n: Any) -> Any:
    return _typed("seer_rng_below", (ctx, n))


@intrinsic
def c_entity_state(typingctx: Any, ctx: Any, e: Any) -> Any:
    return _typed("seer_entity_state", (ctx, e))


@intrinsic
def c_agent_alive(typingctx: Any, ctx: Any, a: Any) -> Any:
    return _typed("seer_agent_alive", (ctx, a))


@intrinsic
def c_entity_events(typingctx: Any, ctx: Any, e: Any) -> Any:
    return _typed("seer_entity_events", (ctx, e))


@intrinsic
def c_agent_group(typingctx: Any, ctx: Any, a: Any) -> Any:
    return _typed("seer_agent_group", (ctx, a))


@intrinsic
def c_group_first(typingctx: Any, ctx: Any, g: Any) -> Any:
    return _typed("seer_group_first", (ctx, g))


@intrinsic
def c_fail(typingctx: Any, ctx: Any, why: Any) -> Any:
    """``seer_fail_step(ctx, why)`` with ``why`` a string literal (a constant C string)."""
    if not isinstance(why, types.StringLiteral):
        return None
    text = str(why.literal_value)
    sig = types.int32(ctx, why)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        fnty = ir.FunctionType(ir.IntType(32), [cgutils.voidptr_t, cgutils.voidptr_t])
        fn = cgutils.get_or_insert_function(builder.module, fnty, SYMBOL_PREFIX + "seer_fail_step")
        cstr = context.insert_const_string(builder.module, text)
        return builder.call(fn, [args[0], builder.bitcast(cstr, cgutils.voidptr_t)])

    return sig, codegen


@intrinsic
def is_null(typingctx: Any, p: Any) -> Any:
    if p != types.voidptr:
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.icmp_unsigned("==", args[0], cgutils.voidptr_t(None))

    return types.boolean(p), codegen


@intrinsic
def ptr_at(typingctx: Any, p: Any, offset: Any) -> Any:
    """The ``void *`` stored at byte ``offset`` (a literal) of ``p``."""
    if p != types.voidptr or not isinstance(offset, types.IntegerLiteral):
        return None
    off = int(offset.literal_value)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        addr = builder.gep(args[0], [ir.Constant(ir.IntType(64), off)])
        return builder.load(builder.bitcast(addr, cgutils.voidptr_t.as_pointer()))

    return types.voidptr(p, offset), codegen


@intrinsic
def record_ptr(typingctx: Any, rec: Any) -> Any:
    """The address of a record's data (records are passed by reference)."""
    if not isinstance(rec, types.Record):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], cgutils.voidptr_t)

    return types.voidptr(rec), codegen


def _payload_fields(dt: np.dtype) -> list[tuple[int, np.dtype, tuple[int, ...]]]:
    # a record (pymodel's _struct): its fields and names are set
    fields = cast("Mapping[str, tuple[Any, ...]]", dt.fields)
    return [(fields[n][1], fields[n][0].base, fields[n][0].shape)
            for n in cast("tuple[str, ...]", dt.names)]


def payload_packer(spec: api.Spec) -> Any:
    """An intrinsic packing a tuple into a zeroed stack copy of the payload
    dtype (scalars in field order; a nested tuple fills an array field) and
    returning its address.  The copy lives in the calling function's frame,
    which is where seer_schedule copies it from."""
    dt = spec.payload
    fields = _payload_fields(dt)

    @intrinsic
    def pack(typingctx: Any, tup: Any) -> Any:
        if not isinstance(tup, types.BaseTuple):
            return None
        if len(tup) > len(fields):
            raise numba.core.errors.TypingError(
                f"schedule(): a payload of {len(tup)} values for a payload dtype of "
                f"{len(fields)} fields ({', '.join(cast('tuple[str, ...]', dt.names))})")
        # every concrete BaseTuple (Tuple, UniTuple, the named ones) has .types, which
        # numba's stub leaves out of BaseTuple
        for i, (ty, (_, _base, shape)) in enumerate(zip(tup.types, fields,  # type: ignore[attr-defined]
                                                        strict=False)):
            n = int(np.prod(shape)) if shape else 0
            if n:
                if not (isinstance(ty, types.BaseTuple) and len(ty) == n):
                    raise numba.core.errors.TypingError(
                        f"schedule(): payload field {cast('tuple[str, ...]', dt.names)[i]!r} "
                        f"is an array of {n}: "
                        f"pass a tuple of {n} values")
            elif not isinstance(ty, (types.Integer, types.Float, types.Boolean)):
                raise numba.core.errors.TypingError(
                    f"schedule(): payload field {cast('tuple[str, ...]', dt.names)[i]!r} "
                    f"takes a number, got {ty}")

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            buf = cgutils.alloca_once(builder, ir.ArrayType(ir.IntType(8), dt.itemsize))
            cgutils.memset(builder, buf, ir.Constant(ir.IntType(64), dt.itemsize), 0)
            base_ptr = builder.bitcast(buf, cgutils.voidptr_t)
            for i, (off, fdt, shape) in enumerate(fields[:len(tup)]):
                ftype = numba.from_dtype(fdt)
                lt = context.get_data_type(ftype)
                val = builder.extract_value(args[0], i)
                vty = tup.types[i]  # type: ignore[attr-defined]  # (see above)
                items = ([(off, val, vty)] if not shape else
                         [(off + j * fdt.itemsize, builder.extract_value(val, j), vty.types[j])
                          for j in range(int(np.prod(shape)))])
                for o, v, t in items:
                    cv = context.cast(builder, v, t, ftype)
                    if cv.type != lt:  # booleans: i1 as a value, a byte in memory
                        cv = builder.zext(cv, lt)
                    addr = builder.gep(base_ptr, [ir.Constant(ir.IntType(64), o)])
                    builder.store(cv, builder.bitcast(addr, lt.as_pointer()))
            return base_ptr

        return types.voidptr(tup), codegen

    return pack


# -- the runtime calls as overloads ----------------------------------------------------


def _is_ctx(ctx: Any) -> bool:
    return isinstance(ctx, CtxType)


@overload(api.now, inline="always")
def _ov_now(ctx):
    if _is_ctx(ctx):
        return lambda ctx: c_now(ctx)
    return None


@overload(api.self, inline="always")
def _ov_self(ctx):
    if _is_ctx(ctx):
        return lambda ctx: c_self(ctx)
    return None


@overload(api.instance, inline="always")
def _ov_instance(ctx):
    if _is_ctx(ctx):
        return lambda ctx: c_instance(ctx)
    return None


@overload(api.step_index, inline="always")
def _ov_step_index(ctx):
    if _is_ctx(ctx):
        return lambda ctx: c_step_index(ctx)
    return None


@overload(api.seed, inline="always")
def _ov_seed(ctx):
    if _is_ctx(ctx):
        return lambda ctx: c_seed(ctx)
    return None


@overload(api.config)
def _ov_config(ctx):
    if _is_ctx(ctx):
        dt = ctx.spec.config
        return lambda ctx: carray(c_config(ctx), 1, dt)[0]
    return None


SIZES = sizes_dtype()


@overload(api.model_sizes)
def _ov_model_sizes(ctx):
    if _is_ctx(ctx):
        return lambda ctx: carray(c_model_sizes(ctx), 1, SIZES)[0]
    return None


@overload(api.snapshot)
def _ov_snapshot(ctx, entity):
    if not _is_ctx(ctx):
        return None
    dt = ctx.spec.snapshot

    def impl(ctx, entity):
        p = c_snapshot(ctx, entity)
        if is_null(p):
            c_fail(ctx, "snapshot(): entity out of range")
            raise IndexError("snapshot(): entity out of range")
        return carray(p, 1, dt)[0]

    return impl


@overload(api.instance_data)
def _ov_instance_data(ctx):
    if _is_ctx(ctx):
        dt = ctx.spec.instance
        return lambda ctx: carray(c_instance_data(ctx), 1, dt)[0]
    return None


@overload(api.entity_state)
def _ov_entity_state(ctx, entity):
    if not _is_ctx(ctx):
        return None
    dt = ctx.spec.state

    def impl(ctx, entity):
        p = c_entity_state(ctx, entity)
        if is_null(p):
            c_fail(ctx, "entity_state(): only at the boundary (boundary, observe, "
                   "global_state) and for an entity in range")
            raise IndexError("entity_state(): outside the boundary or out of range")
        return carray(p, 1, dt)[0]

    return impl


_packers: dict[str, Any] = {}


@overload(api.schedule)
def _ov_schedule(ctx, target, t, event_type, payload=None):
    if not _is_ctx(ctx):
        return None
    spec = ctx.spec
    size = spec.payload.itemsize if spec.has[1] else 0
    if payload is None or isinstance(payload, (types.NoneType, types.Omitted)):
        def impl_none(ctx, target, t, event_type, payload=None):
            return c_schedule(ctx, target, t, event_type, ptr_none(), 0)
        return impl_none
    if not spec.has[1]:
        raise numba.core.errors.TypingError(
            f"schedule(): model {spec.name!r} declares no payload dtype (payload=...)")
    if isinstance(payload, types.Record):
        if payload.dtype != spec.payload and np.dtype(payload.dtype) != spec.payload:
            raise numba.core.errors.TypingError(
                f"schedule(): a record payload must have the model's payload dtype "
                f"{spec.payload}, got {payload}")

        def impl_rec(ctx, target, t, event_type, payload=None):
            return c_schedule(ctx, target, t, event_type, record_ptr(payload), size)
        return impl_rec
    if isinstance(payload, types.BaseTuple):
        pack = _packers.get(ctx.spec_key)
        if pack is None:
            pack = _packers[ctx.spec_key] = payload_packer(spec)

        def impl_tup(ctx, target, t, event_type, payload=None):
            return c_schedule(ctx, target, t, event_type, pack(payload), size)
        return impl_tup
    raise numba.core.errors.TypingError(
        f"schedule(): payload must be a tuple of field values or a payload record, got "
        f"{payload}")


@intrinsic
def ptr_none(typingctx: Any) -> Any:
    return types.voidptr(), lambda context, builder, sig, args: cgutils.voidptr_t(None)


@overload(api.rng_u64, inline="always")
def _ov_rng_u64(ctx):
    if _is_ctx(ctx):
        return lambda ctx: c_rng_u64(ctx)
    return None


@overload(api.rng_uniform, inline="always")
def _ov_rng_uniform(ctx):
    if _is_ctx(ctx):
        return lambda ctx: c_rng_uniform(ctx)
    return None


@overload(api.rng_exponential, inline="always")
def _ov_rng_exponential(ctx, mean):
    if _is_ctx(ctx):
        return lambda ctx, mean: c_rng_exponential(ctx, mean)
    return None


@overload(api.rng_below, inline="always")
def _ov_rng_below(ctx, n):
    if _is_ctx(ctx):
        return lambda ctx, n: c_rng_below(ctx, n)
    return None


@overload(api.agent_alive, inline="always")
def _ov_agent_alive(ctx, agent):
    if _is_ctx(ctx):
        return lambda ctx, agent: c_agent_alive(ctx, agent) != 0
    return None


@overload(api.entity_events, inline="always")
def _ov_entity_events(ctx, entity):
    if _is_ctx(ctx):
        return lambda ctx, entity: c_entity_events(ctx, entity)
    return None


@overload(api.agent_group, inline="always")
def _ov_agent_group(ctx, agent):
    if _is_ctx(ctx):
        return lambda ctx, agent: c_agent_group(ctx, agent)
    return None


@overload(api.group_first, inline="always")
def _ov_group_first(ctx, group):
    if _is_ctx(ctx):
        return lambda ctx, group: c_group_first(ctx, group)
    return None


@overload(api.fail, prefer_literal=True)
def _ov_fail(ctx, why):
    if not _is_ctx(ctx):
        return None
    if not isinstance(why, types.StringLiteral):
        raise numba.core.errors.TypingError(
            "fail(ctx, why): why must be a string literal in compiled handlers")
    return lambda ctx, why: c_fail(ctx, why)


# -- the views the wrappers hand to handlers ---------------------------------------------


O_OBS, O_REWARD, O_TERM, O_TRUNC, O_INFO = output_offsets()

# The ignore[call-arg] comments below: numba's stub types a call of an @intrinsic
# with the typing function's signature, typingctx included, which compiled
# code does not pass (c_model_sizes(ctx) is right).


@numba.njit(inline="always")
def output(ctx: Any, out: Any) -> Any:
    """observe's ``out``: the arrays of one agent's boundary outputs."""
    sz = carray(c_model_sizes(ctx), 1, SIZES)[0]  # type: ignore[call-arg]  # numba stub: see above
    return api.Output(carray(ptr_at(out, O_OBS), sz.obs_dim, np.float32),
                      carray(ptr_at(out, O_REWARD), 1, np.float32),
                      carray(ptr_at(out, O_TERM), 1, np.uint8),
                      carray(ptr_at(out, O_TRUNC), 1, np.uint8),
                      carray(ptr_at(out, O_INFO), sz.info_dim, np.float64))


@numba.njit(inline="always")
def action_view(ctx: Any, action: Any, dt: Any) -> Any:
    sz = carray(c_model_sizes(ctx), 1, SIZES)[0]  # type: ignore[call-arg]  # numba stub: see above
    return carray(action, sz.action_dim, dt)


@numba.njit(inline="always")
def mask_view(ctx: Any, mask: Any) -> Any:
    """action_mask's ``mask``: the agent's row of mask_dim bytes (its group's
    choices first)."""
    sz = carray(c_model_sizes(ctx), 1, SIZES)[0]  # type: ignore[call-arg]  # numba stub: see above
    return carray(mask, sz.mask_dim, np.uint8)


@numba.njit(inline="always")
def state_view(ctx: Any, out: Any) -> Any:
    sz = carray(c_model_sizes(ctx), 1, SIZES)[0]  # type: ignore[call-arg]  # numba stub: see above
    return carray(out, sz.state_dim, np.float32)
