"""An independent pure-Python/NumPy port of the PCS model (``envs/pcs``).

It re-implements, without importing ``seer_env``, everything the C model and
the serial executor do for one instance: the per-entity xoshiro256** streams
(seeded by splitmix64 exactly as the runtime seeds them), the classic CLCG4
streams, a ``(time, source entity, source sequence)`` event heap, the default
and classic dynamics, and the boundary outputs (observations, rewards,
truncations, infos, global state).  Tests compare it with the C model exactly::

    from oracles.pcs_numpy import PcsOracle
    cfg = dict(width=4, height=4, channels=10, portables_per_cell=16, max_guard=2,
               classic=0, move_mean=450.0, next_call_mean=360.0, call_time_mean=180.0,
               handoff_latency=1.0, report_interval=10.0, step_minutes=20.0,
               handoff_weight=10.0, shared_reward=0.0, profile_amplitude=0.0)
    o = PcsOracle(cfg)
    obs, reward, truncated, info = o.reset(seed=7)
    obs, reward, truncated, info = o.step(np.zeros(16, dtype=np.int32))

``math.log``/``math.sin`` call the same libm as C, and every floating-point
expression is evaluated in the same order as in ``pcs.c``, so results are
bit-identical, not merely close.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .rng import seed_state as xoshiro_seed
from .rng import splitmix64 as splitmix64_next
from .rng import xo_below, xo_exponential

MASK64 = (1 << 64) - 1
INF = math.inf
TWO_PI = 6.283185307179586
DAY_MINUTES = 1440.0
KEY_SEQ_BITS = 40

# event types (same numbering as pcs.c)
CALL, COMPLETE, MOVE_OUT, MOVE_IN, TICK, REPORT = range(6)
KIND_NONE, KIND_NORMAL, KIND_RESERVE = 0, 1, 2
OPPOSITE = (1, 0, 3, 2)

INFO_NAMES = (
    "call_attempts", "channel_blocks", "busy_lines", "handoff_blocks", "handoff_attempts",
    "guard_blocks", "calls_completed", "moves_in", "reports_received", "events",
    "busy_channels",
)

CLCG4_M = (2147483647, 2147483543, 2147483423, 2147483323)
CLCG4_A = (45991, 207707, 138556, 49689)
CLCG4_BASE = (11111111, 22222222, 33333333, 44444444)
# a_j^(2^72) mod m_j: the jump between consecutive cells' streams
CLCG4_JUMP = tuple(pow(a, 1 << 72, m) for a, m in zip(CLCG4_A, CLCG4_M, strict=True))


# ---- RNG ---------------------------------------------------------------------

def clcg4_seed(seed: int, cell: int) -> list[int]:
    """CLCG4 state of ``cell``; seed 0 is the engine's base seed."""
    if seed == 0:
        base = list(CLCG4_BASE)
    else:
        x = seed & MASK64
        base = []
        for m in CLCG4_M:
            x, out = splitmix64_next(x)
            base.append(1 + out % (m - 1))
    s = []
    for b, jump, m in zip(base, CLCG4_JUMP, CLCG4_M, strict=True):
        v = b * pow(jump, cell, m) % m
        s.append(v if v else 1)
    return s


def clcg4_uniform(s: list[int]) -> float:
    s[0] = s[0] * 45991 % 2147483647
    s[1] = s[1] * 207707 % 2147483543
    s[2] = s[2] * 138556 % 2147483423
    s[3] = s[3] * 49689 % 2147483323
    u = float(s[0]) * 4.65661287524579692e-10
    u -= float(s[1]) * 4.65661310075985993e-10
    if u < 0.0:
        u += 1.0
    u += float(s[2]) * 4.65661336096842131e-10
    if u >= 1.0:
        u -= 1.0
    u -= float(s[3]) * 4.65661357780891134e-10
    if u < 0.0:
        u += 1.0
    return u


# ---- cell state ------------------------------------------------------------------

class Cell:
    """One cell's state (mirrors ``seer_pcs_cell``)."""

    __slots__ = (
        "call_attempts", "channel_blocks", "busy_lines", "handoff_blocks",
        "handoff_attempts", "guard_blocks", "calls_completed", "moves_in",
        "reports_received", "clcg4", "rng", "report_time", "report_busy", "free",
        "reserve", "guard", "ticks", "step_attempts", "step_blocks", "step_handoffs",
        "step_drops", "seq", "events",
    )

    def __init__(self, channels: int) -> None:
        self.call_attempts = self.channel_blocks = self.busy_lines = 0
        self.handoff_blocks = self.handoff_attempts = self.guard_blocks = 0
        self.calls_completed = self.moves_in = self.reports_received = 0
        self.clcg4: list[int] = [0, 0, 0, 0]
        self.rng: list[int] = [0, 0, 0, 0]
        self.report_time = [-1.0] * 4
        self.report_busy = [0] * 4
        self.free = channels
        self.reserve = 0
        self.guard = 0
        self.ticks = 0
        self.step_attempts = self.step_blocks = self.step_handoffs = self.step_drops = 0
        self.seq = 0
        self.events = 0


class PcsOracle:
    """One PCS instance, stepped like the serial executor.

    Args:
        config: every field of the C config struct (``seer_pcs_config``) by name.
        max_cycles: truncate after that many steps (0 = never), as the runtime does.
    """

    def __init__(self, config: Mapping[str, Any], max_cycles: int = 0) -> None:
        c = dict(config)
        self.W = int(c["width"])
        self.H = int(c["height"])
        self.C = int(c["channels"])
        self.P = int(c["portables_per_cell"])
        self.G = int(c["max_guard"])
        self.classic = bool(c["classic"])
        self.move_mean = float(c["move_mean"])
        self.next_call_mean = float(c["next_call_mean"])
        self.call_time_mean = float(c["call_time_mean"])
        self.h = float(c["handoff_latency"])
        self.R = float(c["report_interval"])
        self.D = float(c["step_minutes"])
        self.hw = float(c["handoff_weight"])
        self.shared = float(c["shared_reward"])
        self.amp = float(c["profile_amplitude"])
        self.max_cycles = int(max_cycles)
        self.N = self.W * self.H
        self.profile = (not self.classic) and self.amp > 0.0
        self.obs_dim = 14 + (2 if self.profile else 0)
        self.state_dim = 6 * self.N + 2
        self.cells: list[Cell] = []
        self.heap: list[tuple[float, int, int, int, Any]] = []
        self.step_index = 0
        self.now = 0.0
        self.self_id = 0

    # -- plumbing ----------------------------------------------------------------

    def neighbour(self, cell: int, d: int) -> int:
        w, h = self.W, self.H
        x, y = cell % w, cell // w
        if d == 0:
            x = x - 1 if x else w - 1
        elif d == 1:
            x = 0 if x + 1 == w else x + 1
        elif d == 2:
            y = y - 1 if y else h - 1
        else:
            y = 0 if y + 1 == h else y + 1
        return x + y * w

    def schedule(self, target: int, t: float, etype: int, payload: Any) -> None:
        src = self.cells[self.self_id]
        if not (t >= self.now):
            raise AssertionError(f"event in the past: t={t} now={self.now}")
        if target != self.self_id and t < self.now + (0.0 if self.classic else self.h):
            raise AssertionError("lookahead violated")
        key = (self.self_id << KEY_SEQ_BITS) | src.seq
        src.seq += 1
        heapq.heappush(self.heap, (t, key, target, etype, payload))

    def next_mean(self, t: float) -> float:
        if self.amp > 0.0:
            return self.next_call_mean / (1.0 + self.amp * math.sin(TWO_PI * t / DAY_MINUTES))
        return self.next_call_mean

    # -- classic -----------------------------------------------------------------

    @staticmethod
    def classic_at(now: float, t: float) -> float:
        d = t - now
        return now + (d if d > 0.0 else 0.0)

    def c_exp(self, st: Cell, mean: float) -> float:
        return -mean * math.log(clcg4_uniform(st.clcg4))

    def c_idle(self, st: Cell, p: list) -> None:
        now, me = self.now, self.self_id
        if p[1] < p[2]:
            self.schedule(me, self.classic_at(now, p[1]), CALL, p)
            return
        cur, nw = 0, me
        while p[2] < p[1]:
            cur = nw
            nw = self.neighbour(cur, int(4.0 * clcg4_uniform(st.clcg4)))
            p[2] += self.c_exp(st, self.move_mean)
        self.schedule(cur, self.classic_at(now, p[1]), CALL, p)

    def c_busy(self, st: Cell, p: list) -> None:
        now, me = self.now, self.self_id
        while True:
            if p[0] < p[1]:
                if p[0] < p[2]:
                    self.schedule(me, self.classic_at(now, p[0]), COMPLETE, p)
                    return
                break
            if not p[1] < p[2]:
                break
            st.busy_lines += 1
            st.call_attempts += 1
            p[1] += self.c_exp(st, self.next_call_mean)
        self.schedule(me, self.classic_at(now, p[2]), MOVE_OUT, p)

    @staticmethod
    def admit_call(st: Cell) -> bool:
        """A new-call attempt (both modes): count it; take a normal channel unless
        free <= guard, which counts a block (a guard block if channels were free)."""
        st.call_attempts += 1
        st.step_attempts += 1
        if st.free <= st.guard:
            st.channel_blocks += 1
            st.step_blocks += 1
            if st.free:
                st.guard_blocks += 1
            return False
        st.free -= 1
        return True

    @staticmethod
    def c_release(st: Cell, p: list) -> None:
        if p[3] == KIND_NORMAL:
            st.free += 1
        elif p[3] == KIND_RESERVE:
            st.reserve += 1
        p[3] = KIND_NONE

    def c_handle(self, st: Cell, etype: int, p: list) -> None:
        if etype == CALL:
            if not self.admit_call(st):
                p[1] += self.c_exp(st, self.next_call_mean)
                self.c_idle(st, p)
                return
            p[3] = KIND_NORMAL
            p[0] = self.c_exp(st, self.call_time_mean) + p[1]
            p[1] += self.c_exp(st, self.next_call_mean)
            self.c_busy(st, p)
        elif etype == COMPLETE:
            self.c_release(st, p)
            p[0] = INF
            st.calls_completed += 1
            self.c_idle(st, p)
        elif etype == MOVE_OUT:
            self.c_release(st, p)
            dest = self.neighbour(self.self_id, int(4.0 * clcg4_uniform(st.clcg4)))
            self.schedule(dest, self.now, MOVE_IN, p)
        elif etype == MOVE_IN:
            p[2] += self.c_exp(st, self.move_mean)
            st.moves_in += 1
            st.handoff_attempts += 1
            st.step_handoffs += 1
            if st.free:
                st.free -= 1
                p[3] = KIND_NORMAL
            elif st.reserve:
                st.reserve -= 1
                p[3] = KIND_RESERVE
            else:
                st.handoff_blocks += 1
                st.step_drops += 1
                p[0] = INF
                self.c_idle(st, p)
                return
            self.c_busy(st, p)
        else:
            raise AssertionError(f"unknown event type {etype}")

    # -- default dynamics --------------------------------------------------------------

    def d_idle(self, st: Cell, p: list) -> None:
        now, me = self.now, self.self_id
        if p[1] < p[2]:
            self.schedule(me, p[1] if p[1] > now else now, CALL, p)
            return
        dest = self.neighbour(me, xo_below(st.rng, 4))
        self.schedule(dest, (p[2] if p[2] > now else now) + self.h, MOVE_IN, p)

    def d_busy(self, st: Cell, p: list) -> None:
        now, me = self.now, self.self_id
        while True:
            if p[0] < p[1]:
                if p[0] < p[2]:
                    self.schedule(me, p[0], COMPLETE, p)
                    return
                break
            if not p[1] < p[2]:
                break
            st.busy_lines += 1
            st.call_attempts += 1
            p[1] += xo_exponential(st.rng, self.next_mean(now))
        self.schedule(me, p[2], MOVE_OUT, p)

    def d_handle(self, st: Cell, etype: int, payload: Any) -> None:
        now = self.now
        if etype == REPORT:
            sent, busy, frm = payload
            st.reports_received += 1
            st.report_busy[frm] = busy
            st.report_time[frm] = sent
            return
        if etype == TICK:
            me = self.self_id
            busy = self.C - st.free
            for d in range(4):
                self.schedule(self.neighbour(me, d), now + self.h, REPORT,
                              (now, busy, OPPOSITE[d]))
            st.ticks += 1
            self.schedule(me, float(st.ticks) * self.R, TICK, None)
            return
        p = payload
        if etype == CALL:
            if not self.admit_call(st):
                p[1] = now + xo_exponential(st.rng, self.next_mean(now))
                self.d_idle(st, p)
                return
            p[3] = KIND_NORMAL
            p[0] = now + xo_exponential(st.rng, self.call_time_mean)
            p[1] = now + xo_exponential(st.rng, self.next_mean(now))
            self.d_busy(st, p)
        elif etype == COMPLETE:
            st.free += 1
            p[3] = KIND_NONE
            p[0] = INF
            st.calls_completed += 1
            self.d_idle(st, p)
        elif etype == MOVE_OUT:
            st.free += 1
            p[3] = KIND_NONE
            dest = self.neighbour(self.self_id, xo_below(st.rng, 4))
            self.schedule(dest, now + self.h, MOVE_IN, p)
        elif etype == MOVE_IN:
            st.moves_in += 1
            p[2] = now + xo_exponential(st.rng, self.move_mean)
            if p[0] < INF:
                if p[0] <= now:
                    p[0] = INF
                    st.calls_completed += 1
                    self.d_idle(st, p)
                    return
                st.handoff_attempts += 1
                st.step_handoffs += 1
                if st.free == 0:
                    st.handoff_blocks += 1
                    st.step_drops += 1
                    p[0] = INF
                    self.d_idle(st, p)
                    return
                st.free -= 1
                p[3] = KIND_NORMAL
                self.d_busy(st, p)
                return
            self.d_idle(st, p)
        else:
            raise AssertionError(f"unknown event type {etype}")

    # -- lifecycle -----------------------------------------------------------------------

    def _init_cell(self, e: int, seed: int) -> None:
        st = self.cells[e]
        self.self_id = e
        self.now = 0.0
        if self.classic:
            st.clcg4 = clcg4_seed(seed, e)
            for _ in range(self.P):
                m = self.c_exp(st, self.move_mean)
                n = self.c_exp(st, self.next_call_mean)
                self.c_idle(st, [INF, n, m, KIND_NONE])
            return
        moves = math.isfinite(self.move_mean)
        for _ in range(self.P):
            m = xo_exponential(st.rng, self.move_mean) if moves else INF
            n = xo_exponential(st.rng, self.next_mean(0.0))
            self.d_idle(st, [INF, n, m, KIND_NONE])
        if self.R > 0.0:
            self.schedule(e, 0.0, TICK, None)

    def reset(self, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Reset with ``seed``; returns the boundary outputs at t = 0."""
        seed &= MASK64
        self.cells = [Cell(self.C) for _ in range(self.N)]
        for e, st in enumerate(self.cells):
            st.rng = xoshiro_seed(seed, e)
        self.heap = []
        self.step_index = 0
        for e in range(self.N):
            self._init_cell(e, seed)
        return self._boundary(0.0, resetting=True)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One step with guard actions (int, one per cell)."""
        acts = [int(a) for a in np.asarray(actions).reshape(-1)]
        if len(acts) != self.N or any(a < 0 or a > self.G for a in acts):
            raise ValueError("bad actions")
        for st, a in zip(self.cells, acts, strict=True):
            st.guard = a
            st.step_attempts = st.step_blocks = st.step_handoffs = st.step_drops = 0
        bnd = float(self.step_index + 1) * self.D
        heap, cells = self.heap, self.cells
        handle = self.c_handle if self.classic else self.d_handle
        while heap and heap[0][0] < bnd:
            t, _key, target, etype, payload = heapq.heappop(heap)
            self.now = t
            self.self_id = target
            st = cells[target]
            handle(st, etype, payload)
            st.events += 1
        out = self._boundary(bnd, resetting=False)
        self.step_index += 1
        return out

    def _boundary(self, now: float, resetting: bool
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        N, C, P = self.N, float(self.C), float(self.P)
        self.now = now
        obs = np.zeros((N, self.obs_dim), dtype=np.float32)
        reward = np.zeros(N, dtype=np.float32)
        info = np.zeros((N, len(INFO_NAMES)), dtype=np.float64)
        tot_blocks = sum(st.step_blocks for st in self.cells)
        tot_drops = sum(st.step_drops for st in self.cells)
        for e, st in enumerate(self.cells):
            busy = self.C - st.free
            row = [busy / C, st.guard / C, st.step_attempts / P, st.step_blocks / P,
                   st.step_handoffs / P, st.step_drops / P]
            row += [b / C for b in st.report_busy]
            for sent in st.report_time:
                if not self.R > 0.0 or sent < 0.0:
                    row.append(1.0)
                else:
                    a = (now - sent) / (4.0 * self.R)
                    row.append(a if a < 1.0 else 1.0)
            if self.profile:
                ph = TWO_PI * now / DAY_MINUTES
                row += [math.sin(ph), math.cos(ph)]
            obs[e] = np.array(row, dtype=np.float64).astype(np.float32)
            local = -(float(st.step_blocks) + self.hw * float(st.step_drops)) / P
            r = local
            if self.shared > 0.0:
                shared = -(float(tot_blocks) + self.hw * float(tot_drops)) / (P * float(N))
                r = (1.0 - self.shared) * local + self.shared * shared
            reward[e] = np.float32(r)
            info[e] = [st.call_attempts, st.channel_blocks, st.busy_lines, st.handoff_blocks,
                       st.handoff_attempts, st.guard_blocks, st.calls_completed, st.moves_in,
                       st.reports_received, st.events, busy]
        truncated = np.zeros(N, dtype=bool)
        if resetting:
            reward[:] = 0.0
        elif self.max_cycles and self.step_index + 1 >= self.max_cycles:
            truncated[:] = True
        return obs, reward, truncated, info

    def global_state(self) -> np.ndarray:
        """The global state at the last boundary (mirrors ``pcs_global_state``)."""
        C, P = float(self.C), float(self.P)
        out = np.zeros(self.state_dim, dtype=np.float32)
        for e, st in enumerate(self.cells):
            out[6 * e: 6 * e + 6] = np.array(
                [(self.C - st.free) / C, st.guard / C, st.step_attempts / P,
                 st.step_blocks / P, st.step_handoffs / P, st.step_drops / P],
                dtype=np.float64).astype(np.float32)
        ph = TWO_PI * (float(self.step_index) * self.D) / DAY_MINUTES
        out[-2] = np.float32(math.sin(ph))
        out[-1] = np.float32(math.cos(ph))
        return out

    def entity_events(self) -> np.ndarray:
        return np.array([st.events for st in self.cells], dtype=np.uint64)

    def pending_events(self) -> int:
        return len(self.heap)
