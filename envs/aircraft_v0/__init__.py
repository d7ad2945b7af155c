"""Aircraft: a UAV swarm surveying ground targets (PettingZoo ParallelEnv on the seer runtime).

``N`` UAVs (agents ``"uav_<i>"``) fly in a box arena as point masses with drag,
wind and gusts (RK4 over ``substeps`` substep events per step), broadcast their
position and velocity to the UAVs within ``comm_radius`` (cross-entity messages
with latency ``latency``), sense with ``num_rays`` range rays at every step
boundary and are rewarded for covering ``num_targets`` ground targets.  A UAV
that collides, hits the ground, leaves the arena or empties its battery
terminates.  ``README.md`` (beside this file) documents every formula and
observation element; the configuration keys, defaults and ranges are the
model's parameters (``MODEL.config_help()``).

Actions: ``Box(-1, 1, (3,), float32)`` (commanded acceleration as a fraction of
``accel_max``; finite out-of-range values are clipped to [-1, 1], NaN/inf raise
`InvalidActionError`), or ``Discrete(7)`` with
``discrete=True`` (0 hold, 1 +x, 2 -x, 3 +y, 4 -y, 5 +z, 6 -z).

Example:

```python
from seer_env.envs import aircraft_v0
env = aircraft_v0.parallel_env(num_uavs=32, threads=2, render_mode="rgb_array")
obs, infos = env.reset(seed=0)
while env.agents:
    actions = {a: env.action_space(a).sample() for a in env.agents}
    obs, rewards, terminations, truncations, infos = env.step(actions)
frame = env.render()          # (512, 512, 3) uint8, top-down view
env.close()

venv = aircraft_v0.vector_env(4, num_uavs=64)   # batched arrays
```
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...sdk import declare


def obs_layout(cfg: dict[str, Any]) -> dict[str, slice]:
    """Slices of the observation vector for a config (``env.config``): own,
    neighbors, targets, rays."""
    k, t, r = cfg["num_neighbors"], cfg["num_obs_targets"], cfg["num_rays"]
    a = 7
    b = a + 8 * k
    c = b + 4 * t
    return {"own": slice(0, a), "neighbors": slice(a, b), "targets": slice(b, c),
            "rays": slice(c, c + r)}


# ---- rendering -------------------------------------------------------------------

_SIZE = 512


def _disc(img: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: int, color: np.ndarray) -> None:
    """Draw filled discs of radius r (pixels) at integer centres, colors (n, 3)."""
    h, w, _ = img.shape
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            if dx * dx + dy * dy > r * r:
                continue
            x = cx + dx
            y = cy + dy
            ok = (x >= 0) & (x < w) & (y >= 0) & (y < h)
            img[y[ok], x[ok]] = color[ok]


def _lines(img: np.ndarray, x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray,
           color: tuple[int, int, int]) -> None:
    """Draw segments by sampling points along them (NumPy only)."""
    if x0.size == 0:
        return
    h, w, _ = img.shape
    n = int(max(2, np.max(np.maximum(np.abs(x1 - x0), np.abs(y1 - y0))) + 1))
    s = np.linspace(0.0, 1.0, n)[None, :]
    xs = np.rint(x0[:, None] + (x1 - x0)[:, None] * s).astype(np.int64).ravel()
    ys = np.rint(y0[:, None] + (y1 - y0)[:, None] * s).astype(np.int64).ravel()
    ok = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
    img[ys[ok], xs[ok]] = color


def uav_states(env: Any, instance: int = 0) -> np.ndarray:
    """Every UAV's native state of one instance as a NumPy structured array.

    Fields are the model's state fields (``seer_aircraft_uav`` in
    ``aircraft.h``: ``pos``, ``vel``, ``battery``, ``crashed``, ``table_n``,
    ``nbr_id`` ...).
    """
    return env.runtime.entity_array(instance)


def render_frame(env: Any) -> np.ndarray:
    """Top-down view of instance 0: targets, communication links and UAVs.

    Targets are grey squares (yellow when covered); a line joins each live UAV
    to every neighbour whose message in its table is younger than ``msg_ttl``;
    UAVs are discs coloured by altitude (blue low, white high), dead ones dark
    red.  Returns a ``(512, 512, 3)`` uint8 array.
    """
    full = env.config
    ax, ay, az = full["arena_size"]
    n, m = full["num_uavs"], full["num_targets"]
    img = np.empty((_SIZE, _SIZE, 3), np.uint8)
    img[:] = (24, 48, 32)
    scale = (_SIZE - 1) / max(ax, ay)
    state = env.runtime.global_state(0)
    uav = state[: 8 * n].reshape(n, 8)
    tgt = state[8 * n: 8 * n + 3 * m].reshape(m, 3)
    if m:
        tx = np.rint(tgt[:, 0] * ax * scale).astype(np.int64)
        ty = np.rint((1.0 - tgt[:, 1]) * ay * scale).astype(np.int64)
        col = np.where(tgt[:, 2:3] > 0, [[230, 200, 40]], [[120, 120, 120]]).astype(np.uint8)
        _disc(img, tx, ty, 2, col)
    px = uav[:, 0] * ax * scale
    py = (1.0 - uav[:, 1]) * ay * scale
    live = uav[:, 7] > 0
    states = uav_states(env)
    t_now = env.runtime.step_index(0) * full["step_duration"]
    ids = states["nbr_id"]
    fresh = (t_now - states["nbr_t"] <= full["msg_ttl"])
    used = np.arange(ids.shape[1])[None, :] < states["table_n"][:, None]
    src, slot = np.nonzero(used & fresh & live[:, None])
    dst = ids[src, slot].astype(np.int64)
    keep = live[dst]
    _lines(img, px[src[keep]], py[src[keep]], px[dst[keep]], py[dst[keep]], (70, 140, 220))
    alt = np.clip(uav[:, 2], 0.0, 1.0)
    col = np.stack([60 + 195 * alt, 110 + 145 * alt, 255 + 0 * alt], axis=1).astype(np.uint8)
    col[~live] = (140, 30, 30)
    _disc(img, np.rint(px).astype(np.int64), np.rint(py).astype(np.int64), 3, col)
    return img


MODEL = declare(__name__, render=render_frame, render_fps=10, warnings_as_errors=True)

parallel_env = MODEL.parallel_env
vector_env = MODEL.vector_env
agent_vector_env = MODEL.agent_vector_env
env = MODEL.env

__all__ = ["MODEL", "parallel_env", "vector_env", "agent_vector_env", "env", "obs_layout",
           "uav_states", "render_frame"]
