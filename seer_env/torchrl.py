"""The short path of the TorchRL adapter,
[`seer_env.adapters.torchrl`][seer_env.adapters.torchrl], importable without
torch: ``group_names`` is here at once, and ``SeerTorchEnv`` (a TorchRL
``EnvBase``) is the adapter's own class, made with torch, tensordict and
TorchRL the first time the name is looked up:

```python
from seer_env.torchrl import SeerTorchEnv   # the same class as
from seer_env.adapters.torchrl import SeerTorchEnv
```
"""

from __future__ import annotations

from typing import Any

from .adapters import torchrl as _adapter
from .adapters.torchrl import group_names

__all__ = ["SeerTorchEnv", "group_names"]  # noqa: F822 (SeerTorchEnv: on first use)


def __getattr__(name: str) -> Any:
    if name == "SeerTorchEnv":
        return _adapter.SeerTorchEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
