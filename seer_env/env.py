"""The old path of [`seer_env.faces`][seer_env.faces] (the env faces: `SeerParallelEnv`,
`SeerAECEnv`, `SeerVectorEnv`, `EnvSnapshot`), kept so that imports of it keep
working:

```python
from seer_env.env import SeerParallelEnv   # the same class as
from seer_env.faces import SeerParallelEnv
```
"""

from __future__ import annotations

from .faces import *  # noqa: F403
from .faces import __all__ as _all

__all__ = list(_all)
