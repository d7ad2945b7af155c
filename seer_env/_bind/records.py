"""Facts the runtime's core module and the machine give: the trace record's
layout and kinds, the optimistic executor's window limit, the RNG's seeding,
the CPUs this process may run on.

```python
from seer_env._bind.records import trace_dtype, rng_seed_state
print(trace_dtype().names)          # the fields of seer_trace_rec, from the header
print(rng_seed_state(seed=1, entity=0))
```

Beside `seer_env._bind.memory`, below `seer_env._bind.runtime` (which
re-exports every public name here), above `seer_env._bind.loader`.
"""

from __future__ import annotations

import functools
import os
import platform
from typing import Any

import numpy as np

from .loader import core, runtime_module

__all__ = ["cpu_count", "cpu_model", "opt_speculates", "opt_windows_max", "rng_seed_state",
           "trace_dtype", "trace_dtype_of", "trace_kinds", "trace_kinds_of"]


def cpu_count() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else ``platform.processor()``."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


_trace_dtype: np.dtype | None = None

_CTYPE_NP = {"uint64_t": "<u8", "int64_t": "<i8", "uint32_t": "<u4", "int32_t": "<i4",
             "double": "<f8", "float": "<f4", "uint8_t": "u1"}


def trace_dtype_of(ffi: Any) -> np.dtype:
    t = ffi.typeof("seer_trace_rec")
    return np.dtype({
        "names": [name for name, _ in t.fields],
        "formats": [_CTYPE_NP[f.type.cname] for _, f in t.fields],
        "offsets": [f.offset for _, f in t.fields],
        "itemsize": ffi.sizeof(t),
    })


def trace_dtype() -> np.dtype:
    """NumPy layout of ``seer_trace_rec``, read from the header's declaration."""
    global _trace_dtype
    if _trace_dtype is None:
        _trace_dtype = trace_dtype_of(runtime_module().ffi)
    return _trace_dtype


def trace_kinds() -> dict[int, str]:
    """Trace record kind -> name."""
    return trace_kinds_of(runtime_module().lib)


def trace_kinds_of(lib: Any) -> dict[int, str]:
    return {
        int(lib.SEER_TRACE_EVENT): "event",
        int(lib.SEER_TRACE_ACT): "act",
        int(lib.SEER_TRACE_WINDOW): "window",
        int(lib.SEER_TRACE_BOUNDARY): "boundary",
        int(lib.SEER_TRACE_BARRIER): "barrier",
        int(lib.SEER_TRACE_INIT): "init",
        int(lib.SEER_TRACE_ROLLBACK): "rollback",
    }


@functools.cache
def max_threads() -> int:
    """``SEER_MAX_THREADS`` (``seer_runtime.h``): the largest pool a runtime
    runs, the calling thread included; the runtime refuses more.  Read from
    the runtime once (a constant of its header): the decision cache checks
    every entry against it."""
    return int(runtime_module().lib.SEER_MAX_THREADS)


def opt_windows_max() -> int:
    """``SEER_OPT_WINDOWS_MAX``: the most conservative windows of width L the
    optimistic executor runs in one step before it speculates instead."""
    return int(runtime_module().lib.SEER_OPT_WINDOWS_MAX)


def opt_speculates(lookahead: float, step_duration: float) -> bool:
    """Whether the optimistic executor speculates on a model of this
    lookahead L and step duration (the runtime's rule, ``seer_runtime.h``):
    L of 0, or more than `opt_windows_max` windows of width L a step;
    otherwise it runs the parallel executor's windows."""
    return not lookahead > 0.0 or step_duration > opt_windows_max() * lookahead


def rng_seed_state(seed: int, entity: int) -> tuple[int, int, int, int]:
    """The xoshiro256** state of entity ``entity`` under instance seed ``seed``."""
    m = core()
    s = m.ffi.new("uint64_t[4]")
    m.lib.seer_rng_seed_state(int(seed) & 0xFFFFFFFFFFFFFFFF, int(entity), s)
    return (int(s[0]), int(s[1]), int(s[2]), int(s[3]))
