"""seer_env: PettingZoo/Gymnasium multi-agent environments on a parallel event runtime.

Example:

```python
import seer_env
env = seer_env.make("phold_v0", num_entities=64, threads=2)
obs, infos = env.reset(seed=0)
obs, rewards, terms, truncs, infos = env.step({a: 0 for a in env.agents})
print(seer_env.verify("phold_v0", steps=20, threads=2))

import pettingzoo                      # the same env through PettingZoo's registry
env = pettingzoo.make("parallel", "seer_env/phold_v0", num_entities=64)
```

Your own model (a folder of C sources and a declaration, see [`seer_env.sdk`][seer_env.sdk]):

```python
model = seer_env.sdk.load("path/to/mymodel")   # compiled on first use, cached
env = model.parallel_env()
print(seer_env.check(model))                   # the contract checker
```
"""

from . import sdk
from ._paths import get_include
from ._version import __version__ as __version__
from .check import CheckReport, check
from .errors import (
    AsyncStateError,
    BuildError,
    ClosedError,
    ConfigError,
    ContractViolation,
    ExecutorError,
    InvalidActionError,
    ModelError,
    SeerError,
    SnapshotError,
    StateError,
    UnknownAgentError,
)
from .faces import EnvSnapshot
from .registry import ENVS, available, make, register_pettingzoo
from .testing import VerifyReport, verify

register_pettingzoo()

__all__ = [
    "sdk",
    "get_include",
    "check",
    "CheckReport",
    "EnvSnapshot",
    "BuildError",
    "ENVS",
    "available",
    "make",
    "register_pettingzoo",
    "verify",
    "VerifyReport",
    "SeerError",
    "ConfigError",
    "ExecutorError",
    "InvalidActionError",
    "UnknownAgentError",
    "StateError",
    "AsyncStateError",
    "ClosedError",
    "ContractViolation",
    "ModelError",
    "SnapshotError",
]
