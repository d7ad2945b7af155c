"""The short path of the TorchRL adapter,
[`seer_env.adapters.torchrl`][seer_env.adapters.torchrl], importable without
torch: ``group_names`` is here at once, and ``SeerTorchEnv`` (a TorchRL
``EnvBase``) is the adapter's own class, imported with torch, tensordict and
TorchRL the first time the name is looked up:

```python
from seer_env.torchrl import SeerTorchEnv   # the same class as
from seer_env.adapters.torchrl import SeerTorchEnv
```

Without TorchRL, looking ``SeerTorchEnv`` up raises
[`MissingExtraError`][seer_env.errors.MissingExtraError] (an ``ImportError``:
``pip install 'seer_env[torchrl]'``).
"""

from __future__ import annotations

from typing import Any

from .adapters.torchrl_groups import group_names

__all__ = ["SeerTorchEnv", "group_names"]  # noqa: F822 (SeerTorchEnv: on first use)


def __getattr__(name: str) -> Any:
    # SeerTorchEnv subclasses TorchRL's EnvBase: its module imports torch, so it
    # is imported when the name is first looked up, not with this module
    if name == "SeerTorchEnv":
        from .adapters.torchrl import SeerTorchEnv

        globals()["SeerTorchEnv"] = SeerTorchEnv
        return SeerTorchEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
