"""The old path of [`seer_env.faces.gym_vector`][seer_env.faces.gym_vector] (every agent of
every instance as one Gymnasium ``VectorEnv``: `AgentVectorEnv`), kept so that imports of
it keep working:

```python
from seer_env.gym_vector import AgentVectorEnv   # the same class as
from seer_env.faces.gym_vector import AgentVectorEnv
```
"""

from __future__ import annotations

from .faces.gym_vector import *  # noqa: F403
from .faces.gym_vector import __all__ as _all

__all__ = list(_all)
