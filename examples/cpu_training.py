"""Import before torch in a synchronous training loop on CPU (forward, then
``step()``): torch's OpenMP workers then spin a tenth of libgomp's default
after each operation before they sleep (``GOMP_SPINCOUNT=30000``, unless the
caller set ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY``).

At the default (300,000 rounds) a worker on an Intel Xeon spun some 5 ms of
CPU after each forward pass, longer than a PCS 64x64 step, so the env's pool
found its second core taken and lost to the serial executor; with a tenth
the whole iteration ran 7-10% faster than at the defaults, torch's own
operations as fast (``benchmarks/bench_torch_settings.py``, the Performance
page's "What to set when training on CPU").  libgomp reads the variable
once, when torch loads it: setting it after ``import torch`` does nothing.
For an asynchronous rollout (``send``/``recv``) import
``cpu_training_async`` instead.

```python
import cpu_training  # noqa: F401  (first: before torch)
import torch
```
"""

from __future__ import annotations

import os

if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "30000"
