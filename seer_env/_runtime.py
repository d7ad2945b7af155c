"""The old path of `seer_env._bind.runtime` (the runtime's bindings: `Runtime`),
re-exporting it; the docs and the shipped models' examples use it:

```python
from seer_env._runtime import Runtime   # the same class as
from seer_env._bind.runtime import Runtime
```
"""

from __future__ import annotations

from typing import Any

from ._bind import runtime as _home
from ._bind.runtime import *  # noqa: F403
from ._bind.runtime import __all__ as _all

__all__ = list(_all)


def __getattr__(name: str) -> Any:
    # the module's other names, TRACE_DTYPE and TRACE_KINDS (computed on first use) among them
    return getattr(_home, name)
