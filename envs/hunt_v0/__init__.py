"""Hunt: predators and prey on a grid with obstacles -- agent groups, a
multi-discrete action space and action masks.

Two groups on a ``width x height`` grid (a torus, or bounded with
``torus=0``) whose obstacles follow the instance seed:

* ``"predator_<i>"`` (``num_predators``): ``MultiDiscrete([5, 2])`` actions
  (move: stay/N/E/S/W, signal: 0/1); they see their position, the prey left,
  the nearest prey's offset, every predator's signal and three
  ``(2*view+1)**2`` windows (obstacles, prey, other predators);
* ``"prey_<i>"`` (``num_prey``): ``Discrete(5)`` moves; they see their
  position, the nearest predator's offset and two windows (obstacles,
  predators).

The action masks forbid moves into obstacles (and off a bounded grid); with
``enforce_masks=False`` such a move is a stay plus ``forbidden_penalty``.  A
prey is caught when at least ``catch_need`` predators land on its cell in one
step: it terminates, each of those predators earns ``catch_reward`` and the
prey loses it; the predators terminate when no prey is left.  ``README.md``
(beside this file) states every observation element, mask and reward; the
configuration keys, defaults and ranges are the model's parameters
(``MODEL.config_help()``).

``render_mode="rgb_array"`` (or ``"human"``) draws the grid from the global
state (`render_frame`).

On the raw runtime:

```python
from seer_env._runtime import Runtime
from seer_env.envs import hunt_v0
rt = Runtime(hunt_v0.MODEL.native, {"width": 10, "height": 10}, num_instances=4,
             executor="parallel", threads=2)
rt.reset([1, 2, 3, 4])
predators, prey = rt.group_actions      # (B, P, 2) and (B, Q) int32 views
predators[:] = 0; prey[:] = 0           # everyone stays (always allowed)
rt.step()                               # rt.obs, rt.mask, rt.reward, ...
```
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...sdk import declare

#: Moves (the first action component of both groups).
MOVES = ("stay", "north", "east", "south", "west")

_SIZE = 512  # the frame's longer side, at most (pixels)
_COLORS = {"floor": (236, 232, 220), "obstacle": (70, 70, 78), "grid": (214, 209, 196),
           "predator": (200, 40, 40), "prey": (40, 150, 70)}


def render_frame(env: Any) -> np.ndarray:
    """Top-down view of instance 0, from the model's global state (every
    agent's cell and whether it is caught, and the obstacle map): floor light,
    obstacles dark grey, predators red squares (on top), prey not caught green
    discs (caught prey are not drawn).  A cell is ``512 // max(width, height)``
    pixels (at least 2); returns an ``(H, W, 3)`` uint8 array.

    ```python
    env = hunt_v0.parallel_env(width=16, height=12, render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()      # (384, 512, 3) uint8
    ```
    """
    cfg = env.config
    w, h = int(cfg["width"]), int(cfg["height"])
    p, q = int(cfg["num_predators"]), int(cfg["num_prey"])
    cs = max(2, _SIZE // max(w, h))
    state = env.runtime.global_state(0)
    agents = state[: 3 * (p + q)].reshape(p + q, 3)
    walls = state[3 * (p + q): 3 * (p + q) + w * h].reshape(h, w) > 0.5
    grid = np.empty((h, w, 3), np.uint8)
    grid[:] = _COLORS["floor"]
    grid[walls] = _COLORS["obstacle"]
    img = np.repeat(np.repeat(grid, cs, axis=0), cs, axis=1)
    if cs >= 6:  # grid lines on the floor where cells are large enough to show them
        line = np.zeros(img.shape[:2], bool)
        line[::cs, :] = True
        line[:, ::cs] = True
        img[line & ~np.repeat(np.repeat(walls, cs, axis=0), cs, axis=1)] = _COLORS["grid"]
    xs = np.rint(agents[:, 0] * w).astype(np.int64) % w
    ys = np.rint(agents[:, 1] * h).astype(np.int64) % h
    pad = max(0, cs // 6)
    yy, xx = np.mgrid[0:cs, 0:cs]
    rr = (cs - 1) / 2.0
    disc = (yy - rr) ** 2 + (xx - rr) ** 2 <= (rr - pad) ** 2 + 0.25
    for e in [*range(p, p + q), *range(p)]:  # predators drawn last, on top
        if e >= p and agents[e, 2] < 0.5:
            continue  # a caught prey
        cell = img[ys[e] * cs:(ys[e] + 1) * cs, xs[e] * cs:(xs[e] + 1) * cs]
        if e < p:
            cell[pad:cs - pad, pad:cs - pad] = _COLORS["predator"]
        else:
            cell[disc] = _COLORS["prey"]
    return img


MODEL = declare(__name__, render=render_frame, render_fps=5, warnings_as_errors=True)

parallel_env = MODEL.parallel_env
vector_env = MODEL.vector_env
agent_vector_env = MODEL.agent_vector_env
env = MODEL.env
