"""The library adapters: a seer_env model as another library's environment,
one module per library:

* [`seer_env.adapters.torchrl`][seer_env.adapters.torchrl]: ``SeerTorchEnv``,
  a TorchRL ``EnvBase`` over the batched env;
* [`seer_env.adapters.rllib`][seer_env.adapters.rllib]: ``SeerMultiAgentEnv``,
  an RLlib ``MultiAgentEnv`` over the ParallelEnv.

Their short paths, ``seer_env.torchrl`` and ``seer_env.rllib``, re-export them.
This package imports neither library.
"""

from __future__ import annotations

#: The adapters are its modules, each imported on its own (each needs its library).
__all__: list[str] = []
