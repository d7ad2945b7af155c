"""The old path of [`seer_env.perf.parallelism`][seer_env.perf.parallelism], kept so that
imports of it keep working (the performance tools are in `seer_env.perf` now).

```python
from seer_env.parallelism import *   # the same as: from seer_env.perf.parallelism import *
```
"""

from __future__ import annotations

from .perf.parallelism import *  # noqa: F403
from .perf.parallelism import __all__ as _all

__all__ = list(_all)
