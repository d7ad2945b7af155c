"""The env faces: generic PettingZoo / batched environments over a native model.

A model's declaration ([`seer_env.sdk.Model`][seer_env.sdk.Model]) gets both faces from
here:

```python
from seer_env.envs import phold_v0
env = phold_v0.parallel_env(num_entities=16)     # SeerParallelEnv(MODEL, ...)
venv = phold_v0.vector_env(4, num_entities=16)   # SeerVectorEnv(MODEL, 4, ...)
```

Configuration keys are the model's parameters (names, defaults and ranges
from its C table, which validates every value) plus the keys in
`COMMON_KEYS`.  Every step is one native call; Python only validates the
actions' structure (agents, shapes, dtypes) and copies the outputs the user
keeps.

The package, by concern (bottom to top): `snapshot` (`EnvSnapshot`),
`spaces` (action spaces and values) and `async_step` (the batched env's
background stepper), `common` (what every face shares) and `vector_arrays`
(the batched env's arrays in and out), `parallel`
(`SeerParallelEnv`) and `vector` (`SeerVectorEnv`), `aec` (`SeerAECEnv`, over
the parallel face) and `gym_vector` (every agent as one Gymnasium
``VectorEnv``, over the batched face).  ``seer_env.env``, the old path,
re-exports the public names; ``seer_env.gym_vector`` those of `gym_vector`.
"""

from __future__ import annotations

from .aec import SeerAECEnv, aec_env
from .common import COMMON_KEYS
from .parallel import SeerParallelEnv, env_class
from .snapshot import SNAPSHOT_VERSION, EnvSnapshot
from .spaces import DiscreteMasked, MultiDiscreteMasked
from .vector import SeerVectorEnv, autoreset_mode_of

__all__ = ["SeerParallelEnv", "SeerAECEnv", "SeerVectorEnv", "EnvSnapshot", "MultiDiscreteMasked",
           "DiscreteMasked",
           "COMMON_KEYS", "SNAPSHOT_VERSION", "aec_env", "autoreset_mode_of", "env_class"]
