"""The old path of `seer_env._bind.loader` (the extension modules and the build
cache), re-exporting it; the docs use it:

```python
from seer_env._loader import cache_dir   # the same function as
from seer_env._bind.loader import cache_dir
print(cache_dir())                        # where built models are kept
```
"""

from __future__ import annotations

from typing import Any

from ._bind import loader as _home
from ._bind.loader import *  # noqa: F403
from ._bind.loader import __all__ as _all

__all__ = list(_all)


def __getattr__(name: str) -> Any:
    # the module's other names
    return getattr(_home, name)
