"""Import before torch in an asynchronous rollout (``send``/``recv``, where
the policy's forward pass runs while the env steps): torch's OpenMP workers
then sleep between operations instead of spinning on the cores the env's
threads need at that very moment (``OMP_WAIT_POLICY=PASSIVE``, unless the
caller set it).  ``examples/async_rollout.py`` does; its figure in the
README was measured with it.

Not for a synchronous loop (forward, then ``step()``): there sleeping workers
slow torch's own operations more than they free the cores
(``benchmarks/bench_torch_settings.py``); ``cpu_training`` shortens their
spin instead.  libgomp reads the variable once, when torch loads it: setting
it after ``import torch`` does nothing.

```python
import cpu_training_async  # noqa: F401  (first: before torch)
import torch
```
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
