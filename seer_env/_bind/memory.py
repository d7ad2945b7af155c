"""The host buffers' memory: zeroed, aligned NumPy buffers, and the
[`OutOfMemoryError`][seer_env.errors.OutOfMemoryError] messages that name what
could not be allocated, its size and the configuration's total.

```python
from seer_env._bind.memory import alloc_zeros
buf = alloc_zeros("my_model", "the reward buffer", (8, 64), "float32")
```

Beside `seer_env._bind.records`, below `seer_env._bind.runtime` (which
re-exports `alloc_zeros`); it needs neither ``ffi`` nor ``lib``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import OutOfMemoryError

__all__ = ["HOST_BUFFER_PARTS", "aligned_zeros", "alloc_zeros", "native_parts_note",
           "out_of_memory_error", "threads_note", "total_note"]

#: The host buffers by attribute, named as `memory_estimate` names their parts.
HOST_BUFFER_PARTS = {
    "actions": "action buffer", "obs": "observation buffer", "reward": "reward buffer",
    "terminated": "terminated flags", "truncated": "truncated flags", "alive": "alive flags",
    "active": "active flags", "info": "info buffer", "mask": "action masks",
}


def total_note(memory: Mapping[str, int]) -> str:
    """The end of an out-of-memory message: the configuration's total."""
    return (f"this configuration takes about {sum(memory.values())} bytes in all "
            "(seer_env.registry.memory_estimate); lower the sizes or num_instances, or "
            "raise the process's memory limit")


def native_parts_note(memory: Mapping[str, int]) -> str:
    """The runtime's native memory, by part, in an out-of-memory message."""
    host = set(HOST_BUFFER_PARTS.values())
    parts = [f"{k} {v} bytes" for k, v in memory.items() if k not in host]
    return f"the runtime's native memory ({', '.join(parts)}) could not be allocated"


def out_of_memory_error(owner: str, what: str, nbytes: int, shape: tuple[int, ...], dtype: Any,
                   tail: str = "") -> OutOfMemoryError:
    """The error for ``what`` of ``nbytes`` (``shape``, ``dtype``) not allocated."""
    return OutOfMemoryError(f"{owner}: out of memory allocating {what} ({nbytes} bytes, "
                            f"{tuple(shape)} {np.dtype(dtype).name}){tail}")


def threads_note(threads: int) -> str:
    return f" or its {threads} worker threads started" if threads > 1 else ""


def alloc_zeros(owner: str, what: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """``np.zeros(shape, dtype)`` for a face's own per-env buffer; out of
    memory raises [`OutOfMemoryError`][seer_env.errors.OutOfMemoryError]
    naming ``owner`` (the model), ``what`` and its size in bytes, not NumPy's
    bare `MemoryError`.  The caller closes what it made before."""
    try:
        return np.zeros(shape, dtype)
    except MemoryError:
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        raise out_of_memory_error(owner, what, nbytes, shape, dtype) from None


def aligned_zeros(shape: tuple[int, ...], dtype: Any, align: int = 64) -> np.ndarray:
    """Zeros with the data ``align``-byte aligned (the runtime's buffers are)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape)) * dt.itemsize
    raw = np.zeros(n + align, dtype=np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + n].view(dt).reshape(shape)
