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

from ...sdk import declare

#: Moves (the first action component of both groups).
MOVES = ("stay", "north", "east", "south", "west")

MODEL = declare(__name__, warnings_as_errors=True)

parallel_env = MODEL.parallel_env
vector_env = MODEL.vector_env
agent_vector_env = MODEL.agent_vector_env
env = MODEL.env
