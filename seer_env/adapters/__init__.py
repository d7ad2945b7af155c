"""The library adapters: a seer_env model as another library's environment,
one module per library, each a plain module-level class (as TorchRL keeps its
own wrappers, one module per library in ``torchrl/envs/libs/``):

* [`seer_env.adapters.torchrl`][seer_env.adapters.torchrl]:
  [`SeerTorchEnv`][seer_env.adapters.torchrl.SeerTorchEnv], a TorchRL
  ``EnvBase`` over the batched env;
* [`seer_env.adapters.rllib`][seer_env.adapters.rllib]:
  [`SeerMultiAgentEnv`][seer_env.adapters.rllib.SeerMultiAgentEnv], an RLlib
  ``MultiAgentEnv`` over the ParallelEnv.

Each adapter module subclasses its library's class, so it imports the library
at its top: importing it without the extra (``pip install
'seer_env[torchrl]'``, ``'seer_env[rllib]'``) raises
[`MissingExtraError`][seer_env.errors.MissingExtraError], an ``ImportError``.
This package imports neither library, nor do the small modules beside the
adapters that hold what needs no library (`torchrl_groups`, `rllib_config`),
nor the short paths ``seer_env.torchrl`` and ``seer_env.rllib``, which import
the classes on first use:

```python
from seer_env.adapters.torchrl import SeerTorchEnv      # imports torch and TorchRL
from seer_env.torchrl import SeerTorchEnv               # the same class
```
"""

from __future__ import annotations

#: The adapters are its modules, each imported on its own (each needs its library).
__all__: list[str] = []
