"""PCS: cellular channel management on a torus of cells (the classic PDES benchmark).

Each cell of a ``width x height`` torus is an agent (``"cell_<index>"``,
``index = row * width + col``; ``env.cell_of(agent)`` gives ``(row, col)``,
``env.agent_at(row, col)`` the name) with ``channels`` channels.  Portables make calls,
move between neighbouring cells (a move reaches the neighbour after
``handoff_latency`` minutes) and hand their calls off; cells exchange load
reports every ``report_interval`` minutes.  Each step covers ``step_minutes``
simulated minutes.  An agent's action (``Discrete(max_guard + 1)``) is the number
of guard channels kept for handoffs in the next step: new calls are refused
when ``free channels <= guard``.  The reward is
``-(blocked new calls + handoff_weight * dropped handoffs) / portables_per_cell``
(optionally mixed with the network-wide mean, ``shared_reward``).
``README.md`` (beside this file) documents every dynamic and observation
element; the configuration keys, defaults and ranges are the model's
parameters (``MODEL.config_help()``).

``classic=True`` runs the exact ROSS-Models PCS dynamics (lookahead 0: the
serial executor, or the optimistic one on several threads, between which
``threads="auto"`` chooses by itself; the first ``reset()`` without a seed
uses the engine's base seed, as ``reset(seed=0)`` does; later ones go on with
the env's seed sequence):

```python
from seer_env.envs import pcs_v0
env = pcs_v0.parallel_env(classic=True, width=32, height=32)
env.reset()
while env.agents:                      # 500 steps of 20 minutes = t 10000
    env.step({a: 0 for a in env.agents})
print(env.totals())   # call_attempts 457193, channel_blocks 5158, ...
```

Default mode on the parallel executor:

```python
env = pcs_v0.parallel_env(width=16, height=16, threads=2)
obs, infos = env.reset(seed=1)
obs, rew, term, trunc, infos = env.step({a: 1 for a in env.agents})
venv = pcs_v0.vector_env(4, width=16, height=16)   # batched arrays
```
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...faces import SeerParallelEnv, SeerVectorEnv
from ...sdk import declare

#: Observation elements (``README.md`` has the formulas); the last two only
#: with ``profile_amplitude > 0``.
OBS_NAMES = (
    "busy_fraction", "guard_fraction", "attempts", "blocks", "handoffs", "drops",
    "nb0_busy", "nb1_busy", "nb2_busy", "nb3_busy",
    "nb0_age", "nb1_age", "nb2_age", "nb3_age",
    "day_sin", "day_cos",
)


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


def agent_at(row: int, col: int, width: int) -> str:
    """The name of the agent of cell ``(row, col)`` on a torus ``width`` cells wide:
    ``"cell_<row * width + col>"``."""
    if not (0 <= col < width) or row < 0:
        raise ValueError(f"no cell ({row}, {col}) on a torus {width} cells wide")
    return f"cell_{row * width + col}"


def cell_of(agent: str, width: int) -> tuple[int, int]:
    """``(row, col)`` of agent ``"cell_<index>"`` on a torus ``width`` cells wide
    (``divmod(index, width)``)."""
    prefix, _, index = str(agent).rpartition("_")
    if prefix != "cell" or not index.isdigit():
        raise ValueError(f"{agent!r} is not a PCS agent name ('cell_<index>')")
    row, col = divmod(int(index), width)
    return row, col


class _Cells:
    """``cell_of`` / ``agent_at`` with this env's width."""

    config: dict[str, Any]
    possible_agents: list[str]

    def cell_of(self, agent: str) -> tuple[int, int]:
        """``(row, col)`` of ``agent`` (``"cell_<row * width + col>"``)."""
        if agent not in self.possible_agents:
            raise ValueError(f"pcs_v0: no agent {agent!r}")
        return cell_of(agent, int(self.config["width"]))

    def agent_at(self, row: int, col: int) -> str:
        """The name of the agent of cell ``(row, col)``."""
        if not 0 <= row < int(self.config["height"]):
            raise ValueError(f"pcs_v0: no row {row} (height {self.config['height']})")
        return agent_at(row, col, int(self.config["width"]))


class PcsParallelEnv(_Cells, SeerParallelEnv):
    """The PCS ParallelEnv; adds `totals` (network-wide counters) and
    `cell_of` / `agent_at` (agent name <-> ``(row, col)``)."""

    def totals(self) -> dict[str, int]:
        """Cumulative counters summed over all cells (``events``: events processed)."""
        self._check_open("totals")
        tot = self.runtime.info[0].sum(axis=0)
        return {name: int(v) for name, v in zip(self.info_names, tot, strict=True)}


class PcsVectorEnv(_Cells, SeerVectorEnv):
    """The batched PCS env; adds `totals` (per-instance network counters) and
    `cell_of` / `agent_at`."""

    def totals(self) -> dict[str, np.ndarray]:
        """Cumulative counters summed over cells, each of shape ``(num_envs,)``
        (instances in flight: once their step has finished, as `state`)."""
        tot = self._idle_runtime("totals").info.sum(axis=1)
        return {name: tot[:, j].astype(np.int64) for j, name in enumerate(self.info_names)}


MODEL = declare(
    __name__,
    render=_render,
    render_fps=10,
    default_seed=_default_seed,
    # Per-agent infos of the dict API: the cumulative counters of the classic
    # benchmark plus events processed (info_keys="all" gives all eleven).
    dict_info_keys=("call_attempts", "channel_blocks", "busy_lines", "handoff_blocks",
                    "events"),
    parallel_class=PcsParallelEnv,
    vector_class=PcsVectorEnv,
    warnings_as_errors=True,
)

parallel_env = MODEL.parallel_env
vector_env = MODEL.vector_env
agent_vector_env = MODEL.agent_vector_env
env = MODEL.env
