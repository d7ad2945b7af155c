"""PHOLD as an environment: the standard PDES benchmark, exposed through the same API.

Each entity is an agent (``"entity_<i>"``).  On each event an entity schedules
one new event, to itself or, with probability ``remote``, to a uniformly
random entity, at ``(t + lookahead) + scale * Exp(mean)``.  An agent's action
(``Discrete(3)``) sets ``scale`` (0: 1.0, 1: 0.5, 2: 2.0) for its future
events; its observation is ``[events handled last step / events_per_entity,
log1p(total handled), checksum bits / 2**24, work accumulator]`` and its reward
the first of those.  ``README.md`` (beside this file) has the details; the
configuration keys, defaults and ranges are the model's parameters
(``MODEL.config_help()``).

``render_mode="rgb_array"`` (or ``"human"``) draws the events each entity handled
in the last step as a heat map (`render_frame`).

Example:

```python
from seer_env.envs import phold_v0
env = phold_v0.parallel_env(num_entities=64, remote=0.5, threads=2)
obs, infos = env.reset(seed=1)
obs, rew, term, trunc, infos = env.step({a: 0 for a in env.agents})
```
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...sdk import declare


def render_frame(env: Any) -> np.ndarray:
    """Events handled in the last step, per entity, of instance 0 as an RGB image.

    Entity ``e`` is the cell ``(e // side, e % side)`` of a ``side x side`` grid
    (``side = ceil(sqrt(N))``; cells past ``N - 1`` are grey), each drawn as an
    ``s x s`` block (``s = max(1, min(32, 512 // side))``).  Colour: dark blue
    (no event) to yellow (the most any entity handled in that step)."""
    counts = env.runtime.obs[0][:, 0].astype(np.float64)  # handled_step / E
    n = counts.shape[0]
    side = math.isqrt(n - 1) + 1 if n > 1 else 1
    top = counts.max() if n else 0.0
    level = counts / top if top > 0 else np.zeros_like(counts)
    rgb = np.full((side * side, 3), 90.0)
    rgb[:n, 0] = 20 + 235 * level
    rgb[:n, 1] = 30 + 190 * level
    rgb[:n, 2] = 120 * (1.0 - level) + 20
    s = max(1, min(32, 512 // side))
    img = rgb.reshape(side, side, 3)
    return np.repeat(np.repeat(img, s, axis=0), s, axis=1).astype(np.uint8)


MODEL = declare(__name__, render=render_frame, render_fps=10, warnings_as_errors=True)

parallel_env = MODEL.parallel_env
vector_env = MODEL.vector_env
agent_vector_env = MODEL.agent_vector_env
env = MODEL.env

__all__ = ["MODEL", "parallel_env", "vector_env", "agent_vector_env", "env", "render_frame"]
