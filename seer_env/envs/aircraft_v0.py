"""Aircraft: a UAV swarm surveying ground targets (PettingZoo ParallelEnv on the seer runtime).

``N`` UAVs (agents ``"uav_<i>"``) fly in a box arena as point masses with drag,
wind and gusts (RK4 over ``substeps`` substep events per step), broadcast their
position and velocity to the UAVs within ``comm_radius`` (cross-entity messages
with latency ``latency``), sense with ``num_rays`` range rays at every step
boundary and are rewarded for covering ``num_targets`` ground targets.  A UAV
that collides, hits the ground, leaves the arena or empties its battery
terminates.  ``envs/aircraft/README.md`` documents every formula, default and
observation element.

Actions: ``Box(-1, 1, (3,), float32)`` (commanded acceleration as a fraction of
``accel_max``; finite out-of-range values are clipped to [-1, 1], NaN/inf raise
:class:`~seer_env.errors.InvalidActionError`), or ``Discrete(7)`` with
``discrete=True`` (0 hold, 1 +x, 2 -x, 3 +y, 4 -y, 5 +z, 6 -z).

Example::

    from seer_env.envs import aircraft_v0
    env = aircraft_v0.parallel_env(num_uavs=32, threads=2, render_mode="rgb_array")
    obs, infos = env.reset(seed=0)
    while env.agents:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        obs, rewards, terminations, truncations, infos = env.step(actions)
    frame = env.render()          # (512, 512, 3) uint8, top-down view
    env.close()

    venv = aircraft_v0.vector_env(4, num_uavs=64)   # batched arrays
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pettingzoo.utils import parallel_to_aec

from .. import gym_vector
from .._base import EnvSpec, SeerParallelEnv, SeerVectorEnv
from .._runtime import Sizes
from ..errors import ConfigError

NAME = "aircraft_v0"

#: Neighbour-table capacity of the C model (SEER_AIRCRAFT_MAX_TABLE).
MAX_TABLE = 8

#: Every config key with its default (``None`` = derived, see :func:`resolve_derived`).
DEFAULTS: dict[str, Any] = {
    "num_uavs": 16,
    "num_targets": None,  # -> num_uavs
    "substeps": 10,
    "num_rays": 16,
    "comm_radius": 60.0,
    "arena_size": None,  # -> side max(200, 40*sqrt(num_uavs)); or (x, y, z)
    "arena_height": 100.0,
    "max_cycles": 500,
    "discrete": False,
    "step_duration": 1.0,
    "msg_every": 2,
    "latency": None,  # -> step_duration / substeps (one substep)
    "msg_ttl": None,  # -> step_duration
    "table_size": 8,
    "num_neighbors": 4,
    "num_obs_targets": 4,
    "ray_range": 30.0,
    "collision_radius": 2.0,
    "sensor_radius": 20.0,
    "sensor_ceiling": 60.0,
    "spawn_z_min": 20.0,
    "spawn_z_max": 60.0,
    "accel_max": 5.0,
    "v_max": 15.0,
    "drag": 0.3,
    "wind_x": 2.0,
    "wind_y": 1.0,
    "wind_amp": 3.0,
    "wind_vert": 0.5,
    "wind_wavelength": 200.0,
    "wind_period": 60.0,
    "gust_sigma": 1.5,
    "gust_vert": 0.25,
    "gust_mean": 3.0,
    "battery_idle": 0.001,
    "battery_thrust": 0.005,
    "w_coverage": 1.0,
    "w_energy": 10.0,
    "collision_penalty": 10.0,
    "crash_penalty": 10.0,
}

_INT_KEYS = {
    "num_uavs": (1, 1 << 20),
    "num_targets": (0, 1 << 20),
    "substeps": (1, 1000),
    "num_rays": (0, 1024),
    "msg_every": (0, 1 << 20),
    "table_size": (1, MAX_TABLE),
    "num_neighbors": (0, MAX_TABLE),
    "num_obs_targets": (0, 64),
    "max_cycles": (0, 2**62),
}
_FLOAT_KEYS = (
    "comm_radius", "arena_height", "step_duration", "latency", "msg_ttl", "ray_range",
    "collision_radius", "sensor_radius", "sensor_ceiling", "spawn_z_min", "spawn_z_max",
    "accel_max", "v_max", "drag", "wind_x", "wind_y", "wind_amp", "wind_vert",
    "wind_wavelength", "wind_period", "gust_sigma", "gust_vert", "gust_mean",
    "battery_idle", "battery_thrust", "w_coverage", "w_energy", "collision_penalty",
    "crash_penalty",
)


def _int(cfg: dict[str, Any], key: str) -> int:
    v = cfg[key]
    lo, hi = _INT_KEYS[key]
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ConfigError(f"{NAME}: {key}={v!r} must be an int")
    if not lo <= int(v) <= hi:
        raise ConfigError(f"{NAME}: {key}={v} must be in [{lo}, {hi}]")
    return int(v)


def _float(key: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{NAME}: {key}={v!r} must be a number")
    f = float(v)
    if not math.isfinite(f):
        raise ConfigError(f"{NAME}: {key}={v!r} must be finite")
    return f


def arena_extent(cfg: dict[str, Any]) -> tuple[float, float, float]:
    """The arena's (x, y, z) extent in metres for a resolved config."""
    a = cfg["arena_size"]
    if a is None:
        side = max(200.0, 40.0 * math.sqrt(_int(cfg, "num_uavs")))
        return side, side, _float("arena_height", cfg["arena_height"])
    if isinstance(a, (int, float, np.integer, np.floating)) and not isinstance(a, bool):
        side = _float("arena_size", a)
        return side, side, _float("arena_height", cfg["arena_height"])
    if isinstance(a, Sequence) and not isinstance(a, str) and len(a) == 3:
        x, y, z = (_float("arena_size", v) for v in a)
        return x, y, z
    raise ConfigError(f"{NAME}: arena_size={a!r} must be a number (side), (x, y, z) or None")


def resolve_derived(cfg: dict[str, Any]) -> dict[str, Any]:
    """The config with every derived (``None``) value filled in."""
    out = dict(cfg)
    n = _int(cfg, "num_uavs")
    if out["num_targets"] is None:
        out["num_targets"] = n
    if out["step_duration"] is None:
        raise ConfigError(f"{NAME}: step_duration must be a number")
    d = _float("step_duration", out["step_duration"])
    k = _int(out, "substeps")
    if out["latency"] is None:
        out["latency"] = d / k
    if out["msg_ttl"] is None:
        out["msg_ttl"] = d
    out["arena_size"] = arena_extent(cfg)
    return out


def _build(cfg: dict[str, Any]) -> tuple[dict[str, Any], int]:
    full = resolve_derived(cfg)
    if not isinstance(full["discrete"], (bool, np.bool_)):
        raise ConfigError(f"{NAME}: discrete={full['discrete']!r} must be a bool")
    ax, ay, az = full["arena_size"]
    fields: dict[str, Any] = {k: _int(full, k) for k in _INT_KEYS if k != "max_cycles"}
    fields.update({k: _float(k, full[k]) for k in _FLOAT_KEYS if k != "arena_height"})
    fields["discrete"] = 1 if full["discrete"] else 0
    fields.update({"arena_x": ax, "arena_y": ay, "arena_z": az})
    if fields["num_neighbors"] > fields["table_size"]:
        raise ConfigError(
            f"{NAME}: num_neighbors={fields['num_neighbors']} must be <= "
            f"table_size={fields['table_size']}"
        )
    return fields, _int(full, "max_cycles")


def c_config(**config: Any) -> dict[str, Any]:
    """The C config struct fields for ``config`` (defaults filled in)."""
    return _build(SPEC.resolve(config))[0]


def _agent_names(cfg: dict[str, Any]) -> list[str]:
    return [f"uav_{i}" for i in range(_int(cfg, "num_uavs"))]


def obs_layout(cfg: dict[str, Any]) -> dict[str, slice]:
    """Slices of the observation vector: own, neighbors, targets, rays."""
    full = resolve_derived(cfg)
    k, t, r = full["num_neighbors"], full["num_obs_targets"], full["num_rays"]
    a = 7
    b = a + 8 * k
    c = b + 4 * t
    return {"own": slice(0, a), "neighbors": slice(a, b), "targets": slice(b, c),
            "rays": slice(c, c + r)}


def _obs_bounds(cfg: dict[str, Any], sizes: Sizes) -> tuple[np.ndarray, np.ndarray]:
    full = resolve_derived(cfg)
    k, t, r = full["num_neighbors"], full["num_obs_targets"], full["num_rays"]
    low = [0.0, 0.0, 0.0, -1.0, -1.0, -1.0, 0.0]
    high = [1.0] * 7
    low += [0.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, 0.0] * k
    high += [1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0] * k
    low += [0.0, -1.0, -1.0, 0.0] * t
    high += [1.0, 1.0, 1.0, 1.0] * t
    low += [0.0] * r
    high += [1.0] * r
    lo = np.asarray(low, np.float32)
    hi = np.asarray(high, np.float32)
    if lo.shape != (sizes.obs_dim,):
        raise ConfigError(f"{NAME}: observation layout {lo.shape} != obs_dim {sizes.obs_dim}")
    return lo, hi


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

    Fields follow ``seer_aircraft_uav`` in ``envs/aircraft/aircraft.h``
    (``pos``, ``vel``, ``battery``, ``crashed``, ``table_n``, ``nbr_id`` ...).
    """
    rt = env.runtime
    raw = rt.entity_states(instance)
    dt = UAV_DTYPE
    if dt.itemsize != rt.sizes.entity_size:
        raise ConfigError(
            f"{NAME}: UAV_DTYPE has {dt.itemsize} bytes, the model {rt.sizes.entity_size}"
        )
    return np.frombuffer(raw, dtype=dt)


UAV_DTYPE = np.dtype(
    [("pos", "<f8", (3,)), ("vel", "<f8", (3,)), ("gust", "<f8", (3,)), ("u", "<f8", (3,)),
     ("gust_until", "<f8"), ("battery", "<f8"), ("battery_step", "<f8"), ("t_crash", "<f8"),
     ("crashed", "<u4"), ("substeps", "<u4"), ("rx_step", "<u4"), ("tx_step", "<u4"),
     ("rx_total", "<u8"), ("tx_total", "<u8"), ("table_n", "<u4"),
     ("nbr_id", "<u4", (MAX_TABLE,)), ("pad_", "<u4"), ("nbr_t", "<f8", (MAX_TABLE,)),
     ("nbr_d2", "<f8", (MAX_TABLE,)), ("nbr_pos", "<f4", (MAX_TABLE, 3)),
     ("nbr_vel", "<f4", (MAX_TABLE, 3))],
    align=True,
)


def render_frame(env: Any) -> np.ndarray:
    """Top-down view of instance 0: targets, communication links and UAVs.

    Targets are grey squares (yellow when covered); a line joins each live UAV
    to every neighbour whose message in its table is younger than ``msg_ttl``;
    UAVs are discs coloured by altitude (blue low, white high), dead ones dark
    red.  Returns a ``(512, 512, 3)`` uint8 array.
    """
    full = resolve_derived(env.config)
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
    used = np.arange(MAX_TABLE)[None, :] < states["table_n"][:, None]
    src, slot = np.nonzero(used & fresh & live[:, None])
    dst = ids[src, slot].astype(np.int64)
    keep = live[dst]
    _lines(img, px[src[keep]], py[src[keep]], px[dst[keep]], py[dst[keep]], (70, 140, 220))
    alt = np.clip(uav[:, 2], 0.0, 1.0)
    col = np.stack([60 + 195 * alt, 110 + 145 * alt, 255 + 0 * alt], axis=1).astype(np.uint8)
    col[~live] = (140, 30, 30)
    _disc(img, np.rint(px).astype(np.int64), np.rint(py).astype(np.int64), 3, col)
    return img


SPEC = EnvSpec(
    name=NAME,
    model="aircraft",
    defaults=DEFAULTS,
    build=_build,
    agent_names=_agent_names,
    obs_bounds=_obs_bounds,
    render=render_frame,
    render_fps=10,
)


def parallel_env(**config: Any) -> SeerParallelEnv:
    """Aircraft as a PettingZoo ParallelEnv (config keys: :data:`DEFAULTS`, plus
    ``threads``, ``executor`` and ``render_mode``)."""
    return SeerParallelEnv(SPEC, **config)


def vector_env(num_envs: int, **config: Any) -> SeerVectorEnv:
    """``num_envs`` Aircraft instances stepped together as arrays."""
    return SeerVectorEnv(SPEC, num_envs, **config)


def agent_vector_env(num_envs: int, **config: Any) -> gym_vector.AgentVectorEnv:
    """Every UAV of ``num_envs`` Aircraft instances as one sub-env of a Gymnasium VectorEnv."""
    return gym_vector.agent_vector_env(vector_env, num_envs, **config)


def env(**config: Any) -> Any:
    """Aircraft as a PettingZoo AEC env (``parallel_to_aec`` of :func:`parallel_env`)."""
    return parallel_to_aec(parallel_env(**config))


__all__ = ["DEFAULTS", "SPEC", "parallel_env", "vector_env", "agent_vector_env", "env",
           "c_config",
           "resolve_derived", "obs_layout", "uav_states", "render_frame", "UAV_DTYPE"]
