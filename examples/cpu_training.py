"""Import before torch in a CPU-training script: torch's OpenMP workers then
sleep between operations instead of spinning on the cores the env's threads
need (``OMP_WAIT_POLICY=PASSIVE``, unless the caller set it).

Measured on 2 cores in a CleanRL-style loop (PCS 64x64, the Performance page's
"What to set when training on CPU"): at torch's defaults every pool of the env
lost to the serial executor inside the loop (0.89-0.92x per iteration); with
this, the pools win (1.17-1.20x).  libgomp reads the variable once, when torch
loads it: setting it after ``import torch`` does nothing.

```python
import cpu_training  # noqa: F401  (first: before torch)
import torch
```
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
