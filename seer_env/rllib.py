"""The short path of the RLlib adapter,
[`seer_env.adapters.rllib`][seer_env.adapters.rllib], importable without Ray:
the helpers (``shared_policy``, ``group_policies``, ``env_creator``,
``UntruncatedEpisodesWarning``) are here at once, and ``SeerMultiAgentEnv``
(an RLlib ``MultiAgentEnv``) is the adapter's own class, made with Ray the
first time the name is looked up:

```python
from seer_env.rllib import SeerMultiAgentEnv   # the same class as
from seer_env.adapters.rllib import SeerMultiAgentEnv
```
"""

from __future__ import annotations

from typing import Any

from .adapters import rllib as _adapter
from .adapters.rllib import (
    UntruncatedEpisodesWarning,
    env_creator,
    group_policies,
    shared_policy,
)

__all__ = ["SeerMultiAgentEnv", "shared_policy", "group_policies", "env_creator",  # noqa: F822
           "UntruncatedEpisodesWarning"]


def __getattr__(name: str) -> Any:
    if name == "SeerMultiAgentEnv":
        return _adapter.SeerMultiAgentEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
