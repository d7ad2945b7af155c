"""The old path of [`seer_env.perf.bench`][seer_env.perf.bench], kept so that imports of it
keep working (the performance tools are in `seer_env.perf` now).

```python
from seer_env.bench import *   # the same as: from seer_env.perf.bench import *
```
"""

from __future__ import annotations

from .perf.bench import *  # noqa: F403
from .perf.bench import __all__ as _all

__all__ = list(_all)
