"""The short path of the BenchMARL task,
[`seer_env.adapters.benchmarl`][seer_env.adapters.benchmarl], importable without
BenchMARL: ``SeerTask``, ``SeerTaskClass`` and ``task`` are the adapter's own,
imported with BenchMARL, TorchRL and torch the first time a name is looked up:

```python
from seer_env.benchmarl import SeerTask, task   # the same as
from seer_env.adapters.benchmarl import SeerTask, task
```

Without BenchMARL, looking a name up raises
[`MissingExtraError`][seer_env.errors.MissingExtraError] (an ``ImportError``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["SeerTask", "SeerTaskClass", "task"]  # noqa: F822 (on first use)


def __getattr__(name: str) -> Any:
    # the task classes subclass BenchMARL's: imported when first looked up
    if name in __all__:
        from .adapters import benchmarl

        value = getattr(benchmarl, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
