"""An independent NumPy port of the Hunt model (``envs/hunt_v0``), written from
its README's specification.

It shares no code with ``seer_env``: the obstacle hash, the start cells
(xoshiro256** streams from :mod:`oracles.rng`, seeded as the runtime seeds
them, drawn with ``below``), the moves, masks, catches, rewards, terminations,
truncation at ``max_cycles`` and the runtime's rows for finished agents (all
zeros, masks all ones) are computed here for one instance.  The event chain of
the C model (STRIKE, RESOLVE, CAUGHT within one step) is replaced by what it
computes: after every live agent has moved, a prey on whose new cell at least
``catch_need`` predators stand is caught and each of those predators is
credited.  Every float is computed in the README's order (double precision,
then rounded to float32), so results are bit-identical::

    from oracles.hunt_numpy import HuntOracle
    o = HuntOracle(dict(width=8, height=8, num_predators=3, num_prey=2))
    out = o.reset(seed=7)               # dict: obs, reward, terminated, ...
    out = o.step(np.zeros((5, 2), np.int32))   # row a: agent a's action
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .rng import Xoshiro256

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15

DEFAULTS: dict[str, Any] = dict(
    width=8, height=8, num_predators=3, num_prey=2, torus=1, view=2, catch_need=1,
    obstacle_density=0.15, catch_reward=1.0, step_cost=0.01, forbidden_penalty=0.1,
)

#: move -> (dx, dy): stay, north (row - 1), east (col + 1), south, west
MOVES = ((0, 0), (0, -1), (1, 0), (0, 1), (-1, 0))


def mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def obstacle_map(seed: int, width: int, height: int, density: float) -> np.ndarray:
    """(height, width) bool: cell c = col + row * width is an obstacle when
    ``(mix64(seed + GOLDEN * (c + 1)) >> 11) * 2**-53 < density``."""
    grid = np.zeros(width * height, dtype=bool)
    if density > 0.0:
        for c in range(width * height):
            z = mix64((seed + GOLDEN * (c + 1)) & MASK64)
            grid[c] = (z >> 11) * 2.0**-53 < density
    return grid.reshape(height, width)


class HuntOracle:
    """One Hunt instance; ``max_cycles`` 0 never truncates."""

    def __init__(self, config: Mapping[str, Any], max_cycles: int = 0) -> None:
        c = dict(DEFAULTS)
        c.update(config)
        self.c = c
        self.W, self.H = int(c["width"]), int(c["height"])
        self.P, self.Q = int(c["num_predators"]), int(c["num_prey"])
        self.A = self.P + self.Q
        self.r = int(c["view"])
        self.S = (2 * self.r + 1) ** 2
        self.torus = bool(c["torus"])
        self.max_cycles = max_cycles
        self.obs_dim = {0: 5 + self.P + 3 * self.S, 1: 4 + 2 * self.S}
        self.row_dim = max(self.obs_dim.values())
        self.mask_dim = 7

    # -- geometry --------------------------------------------------------------

    def _shift(self, col: int, row: int, dx: int, dy: int) -> tuple[int, int] | None:
        col, row = col + dx, row + dy
        if self.torus:
            return col % self.W, row % self.H
        if 0 <= col < self.W and 0 <= row < self.H:
            return col, row
        return None

    def _blocked(self, col: int, row: int, dx: int, dy: int) -> bool:
        t = self._shift(col, row, dx, dy)
        return t is None or bool(self.obst[t[1], t[0]])

    def _axis(self, a: int, b: int, n: int) -> int:
        if not self.torus:
            return b - a
        d = (b - a) % n
        return d - n if 2 * d > n else d

    def _delta(self, i: int, j: int) -> tuple[int, int]:
        return (self._axis(int(self.col[i]), int(self.col[j]), self.W),
                self._axis(int(self.row[i]), int(self.row[j]), self.H))

    # -- episode ---------------------------------------------------------------

    def reset(self, seed: int) -> dict[str, np.ndarray]:
        self.seed = seed & MASK64
        self.obst = obstacle_map(self.seed, self.W, self.H, float(self.c["obstacle_density"]))
        free = ~self.obst.reshape(-1)
        n = self.W * self.H
        self.col = np.zeros(self.A, dtype=np.int64)
        self.row = np.zeros(self.A, dtype=np.int64)
        for e in range(self.A):
            c0 = Xoshiro256(self.seed, e).below(n)
            cell = c0
            for i in range(n):
                if free[(c0 + i) % n]:
                    cell = (c0 + i) % n
                    break
            self.col[e], self.row[e] = cell % self.W, cell // self.W
        z = lambda dt: np.zeros(self.A, dtype=dt)  # noqa: E731
        self.signal, self.forbidden = z(np.int64), z(np.int64)
        self.caught, self.caught_now, self.catches_step = z(bool), z(np.int64), z(np.int64)
        self.catches, self.forbidden_total, self.signals_total = (
            z(np.int64), z(np.int64), z(np.int64))
        self.steps_acted = z(np.int64)
        self.alive = np.ones(self.A, dtype=bool)
        self.k = 0
        return self._boundary(resetting=True)

    def step(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        """``actions``: (A, 2) ints (a prey's row: its move, then anything);
        actions of agents that are not alive are ignored."""
        P = self.P
        acting = self.alive.copy()
        for a in np.flatnonzero(acting):
            move = int(actions[a][0])
            self.steps_acted[a] += 1
            self.forbidden[a] = 0
            dx, dy = MOVES[move]
            if move != 0 and self._blocked(int(self.col[a]), int(self.row[a]), dx, dy):
                self.forbidden[a] = 1
                self.forbidden_total[a] += 1
            elif move != 0:
                self.col[a], self.row[a] = self._shift(int(self.col[a]), int(self.row[a]), dx, dy)
            if a < P:
                self.signal[a] = int(actions[a][1])
                self.signals_total[a] += self.signal[a]
                self.catches_step[a] = 0
            else:
                self.caught_now[a] = 0
        for j in range(P, self.A):
            if not acting[j] or self.caught[j]:
                continue
            on = [i for i in range(P) if acting[i] and self.col[i] == self.col[j]
                  and self.row[i] == self.row[j]]
            if len(on) >= int(self.c["catch_need"]):
                self.caught[j] = True
                self.caught_now[j] = 1
                for i in on:
                    self.catches_step[i] += 1
                    self.catches[i] += 1
        out = self._boundary(resetting=False)
        self.k += 1
        return out

    # -- boundary outputs --------------------------------------------------------

    def _window(self, i: int) -> list[float]:
        r, col, row = self.r, int(self.col[i]), int(self.row[i])
        return [1.0 if self._blocked(col, row, dx, dy) else 0.0
                for dy in range(-r, r + 1) for dx in range(-r, r + 1)]

    def _observe(self, a: int) -> tuple[np.ndarray, float, bool, list[float]]:
        c, P, Q, r, S = self.c, self.P, self.Q, self.r, self.S
        pred = a < P
        o: list[float] = [int(self.col[a]) / self.W, int(self.row[a]) / self.H]
        left = int(np.count_nonzero(~self.caught[P:]))
        if pred:
            o.append(left / Q)
        others = [j for j in (range(P, self.A) if pred else range(P)) if not self.caught[j]]
        best, bdx, bdy = None, 0, 0
        for j in others:
            dx, dy = self._delta(a, j)
            if best is None or abs(dx) + abs(dy) < best:
                best, bdx, bdy = abs(dx) + abs(dy), dx, dy
        o += [bdx / self.W, bdy / self.H]
        if pred:
            o += [float(self.signal[i]) for i in range(P)]
        o += self._window(a)
        prey_win, pred_win = [0.0] * S, [0.0] * S
        for j in range(self.A):
            if j == a or (j >= P and (not pred or self.caught[j])):
                continue
            dx, dy = self._delta(a, j)
            if abs(dx) > r or abs(dy) > r:
                continue
            (prey_win if j >= P else pred_win)[(dy + r) * (2 * r + 1) + dx + r] += 1.0
        o += (prey_win + pred_win) if pred else pred_win
        if pred:
            rew = (c["catch_reward"] * float(self.catches_step[a]) - c["step_cost"]
                   - c["forbidden_penalty"] * float(self.forbidden[a]))
            term = left == 0
            info = [float(self.catches[a]), float(self.forbidden_total[a]),
                    float(self.signals_total[a])]
        else:
            rew = (c["step_cost"] - c["catch_reward"] * float(self.caught_now[a])
                   - c["forbidden_penalty"] * float(self.forbidden[a]))
            term = bool(self.caught[a])
            info = [float(self.steps_acted[a]), float(self.forbidden_total[a])]
        return np.asarray(o, dtype=np.float32), rew, term, info

    def _boundary(self, resetting: bool) -> dict[str, np.ndarray]:
        A = self.A
        obs = np.zeros((A, self.row_dim), dtype=np.float32)
        reward = np.zeros(A, dtype=np.float32)
        term = np.zeros(A, dtype=bool)
        trunc = np.zeros(A, dtype=bool)
        info = np.zeros((A, 3), dtype=np.float64)
        mask = np.ones((A, self.mask_dim), dtype=bool)
        for a in range(A):
            if not self.alive[a]:
                continue
            o, rew, t, inf = self._observe(a)
            obs[a, :len(o)] = o
            info[a, :len(inf)] = inf
            if not resetting:
                reward[a] = np.float32(rew)
                term[a] = t
                trunc[a] = bool(self.max_cycles) and self.k + 1 >= self.max_cycles
            if not term[a] and not trunc[a]:
                col, row = int(self.col[a]), int(self.row[a])
                for m in range(1, 5):
                    mask[a, m] = not self._blocked(col, row, *MOVES[m])
        state = np.zeros(3 * A + self.W * self.H, dtype=np.float32)
        for e in range(A):
            state[3 * e] = int(self.col[e]) / self.W
            state[3 * e + 1] = int(self.row[e]) / self.H
            state[3 * e + 2] = 0.0 if self.caught[e] else 1.0
        state[3 * A:] = self.obst.reshape(-1)
        self.alive &= ~(term | trunc)
        return dict(obs=obs, reward=reward, terminated=term, truncated=trunc, info=info,
                    mask=mask, state=state)
