"""The old path of [`seer_env.perf.trace`][seer_env.perf.trace], kept so that imports of it
keep working (the performance tools are in `seer_env.perf` now).

```python
from seer_env.trace import *   # the same as: from seer_env.perf.trace import *
```
"""

from __future__ import annotations

from .perf.trace import *  # noqa: F403
from .perf.trace import __all__ as _all

__all__ = list(_all)
