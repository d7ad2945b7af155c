"""Serial-vs-parallel verification: run both executors side by side.

Example:

```python
import seer_env
report = seer_env.verify("phold_v0", steps=50, threads=2, num_envs=2, seed=0)
assert report.identical, report
```

The parallel executor must return, bit for bit, what the serial reference
returns.  [`verify`][seer_env.testing.verify] drives both with the same seeded random actions and
reports the first divergence (step, instance, agent, field) or none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ConfigError, ExecutorError
from .faces.gym_vector import random_batched_actions
from .registry import env_module

FIELDS = ("obs", "reward", "terminated", "truncated", "info", "alive", "mask")


@dataclass(frozen=True)
class Divergence:
    """Where two runs first differ."""

    step: int
    instance: int
    agent: str
    field: str
    serial: Any
    parallel: Any

    def __str__(self) -> str:
        return (
            f"step {self.step}, instance {self.instance}, agent {self.agent!r}, "
            f"field {self.field!r}: serial={self.serial!r} parallel={self.parallel!r}"
        )


@dataclass(frozen=True)
class VerifyReport:
    """The outcome of [`verify`][seer_env.testing.verify]."""

    env: str
    steps: int
    threads: int
    num_envs: int
    divergence: Divergence | None
    executor: str = "parallel"

    @property
    def identical(self) -> bool:
        return self.divergence is None

    def __str__(self) -> str:
        what = "identical" if self.identical else f"DIVERGED at {self.divergence}"
        return (
            f"{self.env}: serial vs {self.executor} (threads={self.threads}, "
            f"num_envs={self.num_envs}, {self.steps} steps): {what}"
        )


def _first_diff(step: int, names: list[str], field: str, a: np.ndarray, b: np.ndarray,
                info_names: tuple[str, ...]) -> Divergence | None:
    # Compare bit patterns so that NaN == NaN and -0.0 != 0.0.
    av = np.ascontiguousarray(a)
    bv = np.ascontiguousarray(b)
    if av.dtype.kind == "f":
        av = av.view(np.uint32 if av.dtype.itemsize == 4 else np.uint64)
        bv = bv.view(av.dtype)
    neq = av != bv
    if not neq.any():
        return None
    idx = tuple(int(x) for x in np.argwhere(neq)[0])
    inst, agent = idx[0], idx[1]
    label = field
    if field == "info" and len(idx) > 2 and idx[2] < len(info_names):
        label = f"info[{info_names[idx[2]]!r}]"
    elif field == "info" and len(idx) > 2:
        label = f"info[{idx[2]}]"
    elif len(idx) > 2:
        label = f"{field}[{idx[2]}]"
    return Divergence(step, inst, names[agent], label, a[idx].item(), b[idx].item())


def verify(
    env: str,
    steps: int = 100,
    threads: int = 2,
    num_envs: int = 1,
    seed: int = 0,
    action_seed: int | None = None,
    executor: str = "parallel",
    **config: Any,
) -> VerifyReport:
    """Run ``env`` on the serial executor and on ``executor`` with identical random actions.

    Example:

    ```python
    from seer_env.testing import verify
    print(verify("pcs_v0", steps=50, classic=True, executor="optimistic"))
    ```

    Args:
        env: registered env name, e.g. ``"pcs_v0"``.
        steps: steps to compare (instances whose episode ends are reset).
        threads: pool size of the compared run.
        num_envs: instances per runtime (the batch).
        seed: reset seed (instance i gets ``seed + i``).
        action_seed: seed of the random actions (default: ``seed``).
        executor: the executor compared with the serial one: ``"parallel"``
            (conservative windows; needs lookahead > 0) or ``"optimistic"``.
        **config: env config.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ConfigError(f"steps={steps!r} must be an int >= 0")
    if executor not in ("parallel", "optimistic"):
        raise ConfigError(f"executor={executor!r} must be 'parallel' or 'optimistic'")
    mod = env_module(env)
    serial = mod.vector_env(num_envs, executor="serial", threads=1, **config)
    if executor == "parallel" and not serial.sizes.lookahead > 0.0:
        serial.close()
        raise ExecutorError(
            f"{mod.name}: this configuration has lookahead 0, which the parallel executor "
            "cannot run; compare the optimistic executor instead (executor='optimistic', "
            "`seer-env verify --executor optimistic`)")
    parallel = mod.vector_env(num_envs, executor=executor, threads=threads, **config)
    names = serial.possible_agents
    rng = np.random.default_rng(seed if action_seed is None else action_seed)
    try:
        o1, i1 = serial.reset(seed=seed)
        o2, i2 = parallel.reset(seed=seed)
        div = _compare(0, names, serial, (o1, i1), (o2, i2), reset=True, other=parallel)
        done = 0
        while div is None and done < steps:
            acts = _random_actions(rng, serial)
            r1 = serial.step(acts)
            r2 = parallel.step(acts)
            done += 1
            div = _compare(done, names, serial, r1, r2, reset=False, other=parallel)
        return VerifyReport(env, done, threads, num_envs, div, executor)
    finally:
        serial.close()
        parallel.close()


def _random_actions(rng: np.random.Generator, venv: Any) -> Any:
    sz = venv.sizes
    if venv.structured:  # each group's kind, within the masks (a dict for groups)
        return random_batched_actions(venv, rng)
    if sz.action_kind == "discrete":
        return rng.integers(0, sz.action_n, size=(venv.num_envs, sz.num_agents))
    return rng.uniform(
        sz.action_low, sz.action_high, size=(venv.num_envs, sz.num_agents, sz.action_dim)
    ).astype(np.float32)


def _compare_buffers(step: int, names: list[str], a: Any, b: Any,
                     reset: bool) -> Divergence | None:
    """_compare for a structured model: the two runtimes' buffers (every group
    in its rows), the action masks included."""
    fields = ("obs", "mask", "alive", "info") if reset else (
        "obs", "reward", "terminated", "truncated", "mask", "alive", "info")
    for field in fields:
        d = _first_diff(step, names, field, getattr(a, field), getattr(b, field), ())
        if d is not None:
            return d
    return None


def _compare(step: int, names: list[str], venv: Any, r1: tuple, r2: tuple,
             reset: bool, other: Any = None) -> Divergence | None:
    if venv.structured and other is not None:
        return _compare_buffers(step, names, venv.runtime, other.runtime, reset)
    info_names = venv.info_names
    if reset:
        pairs = [("obs", r1[0], r2[0])]
        infos1, infos2 = r1[1], r2[1]
    else:
        pairs = [("obs", r1[0], r2[0]), ("reward", r1[1], r2[1]),
                 ("terminated", r1[2], r2[2]), ("truncated", r1[3], r2[3])]
        infos1, infos2 = r1[4], r2[4]
    pairs.append(("alive", infos1["alive"], infos2["alive"]))
    if info_names:
        pairs.append(("info", np.stack([infos1[n] for n in info_names], axis=-1),
                      np.stack([infos2[n] for n in info_names], axis=-1)))
    for field, a, b in pairs:
        d = _first_diff(step, names, field, a, b, info_names)
        if d is not None:
            return d
    return None
