"""The performance tools, by concern: the benchmarks that need only the package
([`seer_env.perf.bench`][seer_env.perf.bench], ``seer-env bench``), Chrome/Perfetto
traces of every worker ([`seer_env.perf.trace`][seer_env.perf.trace],
``seer-env trace``) and what more threads could give, read from a trace
([`seer_env.perf.parallelism`][seer_env.perf.parallelism]).

```python
from seer_env.perf import parallelism
report = parallelism.measure("phold_v0", {"num_entities": 256}, steps=20)
print(report.table())
```

Their old paths (``seer_env.bench``, ``seer_env.trace``,
``seer_env.parallelism``) re-export them.
"""
