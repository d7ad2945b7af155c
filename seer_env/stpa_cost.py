"""The old path of STPA's cost model, kept so that imports of it keep
working: it is [`seer_env.stpa.cost`][seer_env.stpa.cost] now (the public names are
also [`seer_env.stpa`][seer_env.stpa]'s).

```python
from seer_env.stpa_cost import select   # as before; the same function as
from seer_env.stpa.cost import select   # its home
```
"""

from __future__ import annotations

from .stpa.cost import *  # noqa: F403
from .stpa.cost import __all__ as _all

__all__ = list(_all)
