"""The agent groups of the TorchRL adapter, by name, without torch: what
[`SeerTorchEnv`][seer_env.adapters.torchrl.SeerTorchEnv] calls each of a
model's groups (the keys of its ``group_map``), importable where torch and
TorchRL are not installed:

```python
from seer_env.adapters.torchrl_groups import group_names
group_names(["agents"], ["cell_0", "cell_1"], [2])            # ['cell']
group_names(["predator", "prey"], ["p_0", "q_0"], [1, 1])     # ['predator', 'prey']
```

The rule is the module description of
[`seer_env.adapters.torchrl`][seer_env.adapters.torchrl] ("Groups").
"""

from __future__ import annotations

import re

__all__ = ["group_names"]

_SUFFIX = re.compile(r"(_\d+)+$")


def group_names(model_groups: list[str], agents: list[str], counts: list[int]) -> list[str]:
    """The TorchRL group name of each of the model's groups (see "Groups" in
    [`seer_env.adapters.torchrl`][seer_env.adapters.torchrl]): the model's own
    names where it declares groups, else the agents' common prefix
    (``"agents"`` without one)."""
    if len(model_groups) > 1 or model_groups[0] != "agents":
        return list(model_groups)
    prefixes = {_SUFFIX.sub("", a) for a in agents}
    if len(prefixes) == 1:
        (p,) = prefixes
        if p and _SUFFIX.search(agents[0]):
            return [p]
    return ["agents"]
