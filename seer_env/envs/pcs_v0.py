"""PCS: cellular channel management on a torus of cells (the classic PDES benchmark).

Each cell of a ``width x height`` torus is an agent (``"cell_<row>_<col>"``,
index ``col + row * width``) with ``channels`` channels.  Portables make calls,
move between neighbouring cells (a move reaches the neighbour after
``handoff_latency`` minutes) and hand their calls off; cells exchange load
reports every ``report_interval`` minutes.  Each step covers ``step_minutes``
simulated minutes.  An agent's action (``Discrete(max_guard + 1)``) is the number
of guard channels kept for handoffs in the next step: new calls are refused
when ``free channels <= guard``.  The reward is
``-(blocked new calls + handoff_weight * dropped handoffs) / portables_per_cell``
(optionally mixed with the network-wide mean, ``shared_reward``).
``envs/pcs/README.md`` documents every dynamic and every observation element.

``classic=True`` runs the exact ROSS-Models PCS dynamics (serial executor only;
``reset()`` without a seed uses the engine's base seed)::

    from seer_env.envs import pcs_v0
    env = pcs_v0.parallel_env(classic=True, width=32, height=32, executor="serial")
    env.reset()
    while env.agents:                      # 500 steps of 20 minutes = t 10000
        env.step({a: 0 for a in env.agents})
    print(env.totals())   # call_attempts 457193, channel_blocks 5158, ...

Default mode on the parallel executor::

    env = pcs_v0.parallel_env(width=16, height=16, threads=2)
    obs, infos = env.reset(seed=1)
    obs, rew, term, trunc, infos = env.step({a: 1 for a in env.agents})
    venv = pcs_v0.vector_env(4, width=16, height=16)   # batched arrays
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pettingzoo.utils import parallel_to_aec

from .. import gym_vector
from .._base import EnvSpec, SeerParallelEnv, SeerVectorEnv
from .._runtime import Sizes
from ..errors import ConfigError

NAME = "pcs_v0"

#: Every config key with its default (``threads``, ``executor``, ``render_mode``
#: are handled by the base).  Means and times are in simulated minutes.
DEFAULTS: dict[str, Any] = {
    "width": 8,
    "height": 8,
    "channels": 10,
    "portables_per_cell": 16,
    "move_mean": 4500.0,          # None or math.inf: no moves
    "next_call_mean": 360.0,
    "call_time_mean": 180.0,
    "handoff_latency": 1.0,       # h > 0, the model's lookahead (unused in classic mode)
    "report_interval": 10.0,      # None or 0: load reports off (unused in classic mode)
    "step_minutes": 20.0,
    "max_guard": 4,
    "max_cycles": 500,            # 500 x 20 min = 10000 min, the classic run length
    "classic": False,
    "handoff_weight": 10.0,
    "shared_reward": 0.0,
    "profile_amplitude": 0.0,     # daily call-rate profile, 0 = off (unused in classic mode)
}

#: Order of the info values per cell (same as the C model's info_names).
INFO_NAMES = (
    "call_attempts", "channel_blocks", "busy_lines", "handoff_blocks", "handoff_attempts",
    "guard_blocks", "calls_completed", "moves_in", "reports_received", "events",
    "busy_channels",
)

#: Observation elements (see envs/pcs/README.md for the formulas).
OBS_NAMES = (
    "busy_fraction", "guard_fraction", "attempts", "blocks", "handoffs", "drops",
    "nb0_busy", "nb1_busy", "nb2_busy", "nb3_busy",
    "nb0_age", "nb1_age", "nb2_age", "nb3_age",
    "day_sin", "day_cos",
)

_MAX_CELLS = 1 << 20


def _int(cfg: dict[str, Any], key: str, lo: int, hi: int) -> int:
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ConfigError(f"{NAME}: {key}={v!r} must be an int")
    if not lo <= int(v) <= hi:
        raise ConfigError(f"{NAME}: {key}={v} must be in [{lo}, {hi}]")
    return int(v)


def _float(cfg: dict[str, Any], key: str, *, positive: bool = False, allow_inf: bool = False,
           none_as: float | None = None) -> float:
    v = cfg[key]
    if v is None and none_as is not None:
        return none_as
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{NAME}: {key}={v!r} must be a number")
    f = float(v)
    if math.isnan(f) or (math.isinf(f) and not (allow_inf and f > 0)):
        raise ConfigError(f"{NAME}: {key}={v!r} must be finite")
    if positive and not f > 0:
        raise ConfigError(f"{NAME}: {key}={v!r} must be > 0")
    if not positive and f < 0:
        raise ConfigError(f"{NAME}: {key}={v!r} must be >= 0")
    return f


def _build(cfg: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Validate the Python config and return (C config fields, max_cycles)."""
    classic = cfg["classic"]
    if not isinstance(classic, (bool, np.bool_)) and classic not in (0, 1):
        raise ConfigError(f"{NAME}: classic={classic!r} must be a bool")
    classic = bool(classic)
    width = _int(cfg, "width", 1, _MAX_CELLS)
    height = _int(cfg, "height", 1, _MAX_CELLS)
    if width * height > _MAX_CELLS:
        raise ConfigError(
            f"{NAME}: width * height = {width * height} cells is too large (max {_MAX_CELLS})"
        )
    channels = _int(cfg, "channels", 1, 65535)
    portables = _int(cfg, "portables_per_cell", 1, 65535)
    if width * height * portables > 1 << 26:
        raise ConfigError(
            f"{NAME}: width * height * portables_per_cell = {width * height * portables} "
            f"portables is too large (max {1 << 26})"
        )
    max_guard = _int(cfg, "max_guard", 0, channels)
    move_mean = _float(cfg, "move_mean", positive=True, allow_inf=not classic,
                       none_as=None if classic else math.inf)
    fields: dict[str, Any] = {
        "width": width,
        "height": height,
        "channels": channels,
        "portables_per_cell": portables,
        "max_guard": max_guard,
        "classic": 1 if classic else 0,
        "move_mean": move_mean,
        "next_call_mean": _float(cfg, "next_call_mean", positive=True),
        "call_time_mean": _float(cfg, "call_time_mean", positive=True),
        "step_minutes": _float(cfg, "step_minutes", positive=True),
        "handoff_weight": _float(cfg, "handoff_weight"),
        "shared_reward": _float(cfg, "shared_reward"),
        "handoff_latency": 0.0,
        "report_interval": 0.0,
        "profile_amplitude": 0.0,
    }
    if fields["shared_reward"] > 1.0:
        raise ConfigError(f"{NAME}: shared_reward={cfg['shared_reward']!r} must be in [0, 1]")
    if not classic:
        fields["handoff_latency"] = _float(cfg, "handoff_latency", positive=True)
        fields["report_interval"] = _float(cfg, "report_interval", none_as=0.0)
        if 0.0 < fields["report_interval"] < 1e-3:
            raise ConfigError(
                f"{NAME}: report_interval={cfg['report_interval']!r} must be 0/None (off) "
                "or >= 0.001"
            )
        amp = _float(cfg, "profile_amplitude")
        if amp >= 1.0:
            raise ConfigError(f"{NAME}: profile_amplitude={amp!r} must be in [0, 1)")
        fields["profile_amplitude"] = amp
    max_cycles = _int(cfg, "max_cycles", 0, 2**62)
    return fields, max_cycles


def _agent_names(cfg: dict[str, Any]) -> list[str]:
    w, h = int(cfg["width"]), int(cfg["height"])
    return [f"cell_{r}_{c}" for r in range(h) for c in range(w)]


def _obs_bounds(cfg: dict[str, Any], sz: Sizes) -> tuple[np.ndarray, np.ndarray]:
    low = np.zeros(sz.obs_dim, dtype=np.float32)
    high = np.ones(sz.obs_dim, dtype=np.float32)
    high[2:6] = np.inf  # per-step counts / portables_per_cell (portables may gather)
    if sz.obs_dim > 14:
        low[14:16] = -1.0
    return low, high


def _default_seed(cfg: dict[str, Any]) -> int | None:
    return 0 if cfg["classic"] else None


def _render(env: Any) -> np.ndarray:
    """Occupancy heat map of instance 0; cells with a dropped handoff in the last
    step get a red frame.  Each cell is drawn as a ``s x s`` block
    (``s = max(1, min(32, 512 // max(width, height)))``)."""
    w, h = int(env.config["width"]), int(env.config["height"])
    rt = env.runtime
    busy = rt.obs[0][:, 0].reshape(h, w).astype(np.float64)
    drops = (rt.obs[0][:, 5] > 0).reshape(h, w)
    # dark blue (idle) -> yellow (full)
    rgb = np.empty((h, w, 3), dtype=np.float64)
    rgb[..., 0] = 20 + 235 * busy
    rgb[..., 1] = 30 + 190 * busy
    rgb[..., 2] = 120 * (1.0 - busy) + 20
    s = max(1, min(32, 512 // max(w, h)))
    img = np.repeat(np.repeat(rgb, s, axis=0), s, axis=1).astype(np.uint8)
    if s >= 3 and drops.any():
        b = max(1, s // 6)
        for r, c in zip(*np.nonzero(drops), strict=True):
            blk = img[r * s:(r + 1) * s, c * s:(c + 1) * s]
            blk[:b, :] = blk[-b:, :] = blk[:, :b] = blk[:, -b:] = (255, 0, 0)
    elif drops.any():
        img[np.repeat(np.repeat(drops, s, axis=0), s, axis=1)] = (255, 0, 0)
    return img


SPEC = EnvSpec(
    name=NAME,
    model="pcs",
    defaults=DEFAULTS,
    build=_build,
    agent_names=_agent_names,
    obs_bounds=_obs_bounds,
    default_seed=_default_seed,
    render=_render,
    render_fps=10,
    # Per-agent infos of the dict API: the cumulative counters of the classic
    # benchmark plus events processed (info_keys="all" gives all eleven).
    dict_info_keys=("call_attempts", "channel_blocks", "busy_lines", "handoff_blocks",
                    "events"),
)


class PcsParallelEnv(SeerParallelEnv):
    """The PCS ParallelEnv; adds :meth:`totals` (network-wide counters)."""

    def totals(self) -> dict[str, int]:
        """Cumulative counters summed over all cells (``events``: events processed)."""
        tot = self.runtime.info[0].sum(axis=0)
        return {name: int(v) for name, v in zip(self.info_names, tot, strict=True)}


class PcsVectorEnv(SeerVectorEnv):
    """The batched PCS env; adds :meth:`totals` (per-instance network counters)."""

    def totals(self) -> dict[str, np.ndarray]:
        """Cumulative counters summed over cells, each of shape ``(num_envs,)``."""
        tot = self.runtime.info.sum(axis=1)
        return {name: tot[:, j].astype(np.int64) for j, name in enumerate(self.info_names)}


def parallel_env(**config: Any) -> PcsParallelEnv:
    """PCS as a PettingZoo ParallelEnv (config keys: see ``DEFAULTS``)."""
    return PcsParallelEnv(SPEC, **config)


def vector_env(num_envs: int, **config: Any) -> PcsVectorEnv:
    """``num_envs`` PCS instances stepped together as arrays."""
    return PcsVectorEnv(SPEC, num_envs, **config)


def agent_vector_env(num_envs: int, **config: Any) -> gym_vector.AgentVectorEnv:
    """Every agent of ``num_envs`` PCS instances as one sub-env of a Gymnasium VectorEnv."""
    return gym_vector.agent_vector_env(vector_env, num_envs, **config)


def env(**config: Any) -> Any:
    """PCS as a PettingZoo AEC env."""
    return parallel_to_aec(parallel_env(**config))
