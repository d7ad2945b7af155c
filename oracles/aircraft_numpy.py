"""An independent pure-Python/NumPy port of the Aircraft dynamics (envs/aircraft/README.md).

It shares no code with the C model or the seer runtime: it has its own
splitmix64/xoshiro256** streams, integrates every flying UAV at once per
substep (vectorized RK4), finds message receivers, collisions, ray hits,
nearest targets and coverage by brute force over all pairs (no spatial hash),
and applies messages to the neighbour tables in the runtime's event order
(arrival time, then sender).  Tests compare it with the C model: exactly for
discrete quantities, within a tolerance for floats (the transcendental
functions of NumPy and libm may differ in the last bit).

Usage::

    from seer_env.envs import aircraft_v0          # only to get the C config fields
    from oracles.aircraft_numpy import AircraftNumpy
    sim = AircraftNumpy(aircraft_v0.c_config(num_uavs=32), seed=7, max_cycles=100)
    out = sim.reset()                        # dict: obs, reward, terminated, truncated, info
    out = sim.step(np.zeros((32, 3), np.float32))
    sim.alive, sim.pos, sim.tables           # state after the step

This module does not import seer_env.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .rng import Xoshiro256, splitmix64, u01

M64 = (1 << 64) - 1
TWO_PI = 2.0 * math.pi
GOLDEN = float("2.3999632297286533222315555066336")  # pi * (3 - sqrt(5))
TARGET_KEY = 0x5EEDA1C7A26E7500

CRASH_NONE, CRASH_GROUND, CRASH_ARENA, CRASH_BATTERY = 0, 1, 2, 3

DISCRETE = np.array(
    [[0, 0, 0], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]],
    dtype=np.float64,
)


# ---- random numbers: oracles/rng.py (splitmix64, xoshiro256**) ------------------


# ---- the port ----------------------------------------------------------------------

class AircraftNumpy:
    """The Aircraft model for one instance, stepped like the runtime steps it.

    Args:
        cfg: the C config fields (``seer_aircraft_config`` names, e.g. from
            ``aircraft_v0.c_config(...)``).
        seed: the instance seed.
        max_cycles: truncate after that many steps (0: never).
    """

    def __init__(self, cfg: Mapping[str, Any], seed: int, max_cycles: int = 0) -> None:
        self.c = dict(cfg)
        # the model's resolved arena_size (x, y, z) under the C struct's names
        self.c["arena_x"], self.c["arena_y"], self.c["arena_z"] = (
            float(v) for v in self.c["arena_size"])
        self.seed = int(seed) & M64
        self.max_cycles = int(max_cycles)
        c = self.c
        self.N = int(c["num_uavs"])
        self.M = int(c["num_targets"])
        self.K = int(c["substeps"])
        self.R = int(c["num_rays"])
        self.D = float(c["step_duration"])
        self.dt = self.D / self.K
        self.ext = np.array([c["arena_x"], c["arena_y"], c["arena_z"]], dtype=np.float64)
        self.obs_dim = 7 + 8 * c["num_neighbors"] + 4 * c["num_obs_targets"] + self.R

    # -- lifecycle --------------------------------------------------------------------

    def reset(self) -> dict[str, np.ndarray]:
        c, N = self.c, self.N
        self.k = 0
        self.rng = [Xoshiro256(self.seed, e) for e in range(N)]
        self.pos = np.zeros((N, 3))
        for e, r in enumerate(self.rng):
            x = c["arena_x"] * r.uniform()
            y = c["arena_y"] * r.uniform()
            z = c["spawn_z_min"] + (c["spawn_z_max"] - c["spawn_z_min"]) * r.uniform()
            self.pos[e] = (x, y, z)
        self.vel = np.zeros((N, 3))
        self.gust = np.zeros((N, 3))
        self.u = np.zeros((N, 3))
        self.gust_until = np.zeros(N)
        self.battery = np.ones(N)
        self.battery_step = np.ones(N)
        self.crashed = np.zeros(N, dtype=np.int64)
        self.rx_step = np.zeros(N, dtype=np.int64)
        self.tx_step = np.zeros(N, dtype=np.int64)
        #: per UAV: list of [sender, t_send, d2, pos(3), vel(3)]
        self.tables: list[list[list[Any]]] = [[] for _ in range(N)]
        self.pending: list[tuple[float, int, int, float, np.ndarray, np.ndarray]] = []
        self.alive = np.ones(N, dtype=bool)
        self.snap_live = np.ones(N, dtype=bool)
        self.snap_pos = self.pos.copy()
        self.targets = np.zeros((self.M, 2))
        x = (self.seed ^ TARGET_KEY) & M64
        for t in range(self.M):
            x, z1 = splitmix64(x)
            x, z2 = splitmix64(x)
            self.targets[t] = (c["arena_x"] * u01(z1), c["arena_y"] * u01(z2))
        i = np.arange(max(self.R, 1), dtype=np.float64)[: self.R]
        zc = 1.0 - (2.0 * i + 1.0) / self.R if self.R else i
        rr = np.sqrt(np.maximum(0.0, 1.0 - zc * zc))
        phi = GOLDEN * i
        self.rays = np.stack(
            [rr * np.array([math.cos(p) for p in phi]),
             rr * np.array([math.sin(p) for p in phi]), zc], axis=1
        ) if self.R else np.zeros((0, 3))
        out = self._boundary(reset=True)
        out["reward"][:] = 0.0
        out["terminated"][:] = False
        return out

    def step(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        c, N, K, dt = self.c, self.N, self.K, self.dt
        k = self.k
        act = np.asarray(actions)
        live = self.alive.copy()
        if c["discrete"]:
            u = DISCRETE[act.astype(np.int64).reshape(N)]
        else:
            u = np.clip(act.astype(np.float32).reshape(N, 3), np.float32(-1), np.float32(1))
            u = u.astype(np.float64)
        self.u[live] = u[live]
        self.battery_step[live] = self.battery[live]
        self.rx_step[live] = 0
        self.tx_step[live] = 0
        boundary = (k + 1) * self.D
        for j in range(K):
            t = k * self.D if j == 0 else float(k * K + j) * dt
            fly = live & (self.crashed == CRASH_NONE)
            idx = np.flatnonzero(fly)
            if idx.size == 0:
                break
            for e in idx:
                if t >= self.gust_until[e]:
                    r = self.rng[e]
                    g0 = c["gust_sigma"] * (2.0 * r.uniform() - 1.0)
                    g1 = c["gust_sigma"] * (2.0 * r.uniform() - 1.0)
                    g2 = c["gust_vert"] * c["gust_sigma"] * (2.0 * r.uniform() - 1.0)
                    self.gust[e] = (g0, g1, g2)
                    self.gust_until[e] = t + r.exponential(c["gust_mean"])
            self._rk4(idx, t, dt)
            uu = self.u[idx]
            usq = uu[:, 0] * uu[:, 0] + uu[:, 1] * uu[:, 1] + uu[:, 2] * uu[:, 2]
            self.battery[idx] = self.battery[idx] - dt * (
                c["battery_idle"] + c["battery_thrust"] * usq
            )
            p = self.pos[idx]
            ground = p[:, 2] <= 0.0
            out = (
                (p[:, 0] < 0.0) | (p[:, 0] > c["arena_x"]) | (p[:, 1] < 0.0)
                | (p[:, 1] > c["arena_y"]) | (p[:, 2] > c["arena_z"])
            )
            empty = self.battery[idx] <= 0.0
            reason = np.where(ground, CRASH_GROUND,
                              np.where(out, CRASH_ARENA, np.where(empty, CRASH_BATTERY, 0)))
            self.crashed[idx] = reason
            self.battery[idx] = np.maximum(self.battery[idx], 0.0)
            s = k * K + j
            if c["msg_every"] and s % c["msg_every"] == 0:
                senders = idx[reason == 0]
                self._broadcast(senders, t)
        # Deliver messages due in this step, in (arrival time, sender) order.
        due = [m for m in self.pending if m[0] < boundary]
        self.pending = [m for m in self.pending if m[0] >= boundary]
        due.sort(key=lambda m: (m[0], m[1]))
        for _arrival, sender, receiver, t_send, mpos, mvel in due:
            self._receive(receiver, sender, t_send, mpos, mvel)
        self.k += 1
        return self._boundary(reset=False)

    # -- physics --------------------------------------------------------------------------

    def _accel(self, idx: np.ndarray, t: float, p: np.ndarray, v: np.ndarray) -> np.ndarray:
        c = self.c
        kw = TWO_PI / c["wind_wavelength"]
        kt = TWO_PI / c["wind_period"]
        h = p[:, 2] / c["arena_z"]
        px = kw * p[:, 0]
        py = kw * p[:, 1]
        pt = kt * t
        wx = c["wind_x"] + c["wind_amp"] * h * np.sin(py + pt)
        wy = c["wind_y"] + c["wind_amp"] * h * np.cos(px - pt)
        wz = c["wind_vert"] * np.sin(px + py) * math.cos(pt)
        w = np.stack([wx, wy, wz], axis=1)
        return c["accel_max"] * self.u[idx] - c["drag"] * (v - (w + self.gust[idx]))

    def _rk4(self, idx: np.ndarray, t: float, dt: float) -> None:
        hdt = dt * 0.5
        dt6 = dt / 6.0
        p0 = self.pos[idx]
        v0 = self.vel[idx]
        a1 = self._accel(idx, t, p0, v0)
        p2 = p0 + hdt * v0
        v2 = v0 + hdt * a1
        a2 = self._accel(idx, t + hdt, p2, v2)
        p3 = p0 + hdt * v2
        v3 = v0 + hdt * a2
        a3 = self._accel(idx, t + hdt, p3, v3)
        p4 = p0 + dt * v3
        v4 = v0 + dt * a3
        a4 = self._accel(idx, t + dt, p4, v4)
        pos = p0 + dt6 * (((v0 + 2.0 * v2) + 2.0 * v3) + v4)
        vel = v0 + dt6 * (((a1 + 2.0 * a2) + 2.0 * a3) + a4)
        s2 = vel[:, 0] * vel[:, 0] + vel[:, 1] * vel[:, 1] + vel[:, 2] * vel[:, 2]
        vmax = self.c["v_max"]
        fast = s2 > vmax * vmax
        f = vmax / np.sqrt(s2[fast])
        vel[fast] = vel[fast] * f[:, None]
        self.pos[idx] = pos
        self.vel[idx] = vel

    # -- messaging ---------------------------------------------------------------------------

    def _broadcast(self, senders: np.ndarray, t: float) -> None:
        if senders.size == 0:
            return
        c = self.c
        rc2 = c["comm_radius"] * c["comm_radius"]
        ps = self.pos[senders]
        d = ps[:, None, :] - self.snap_pos[None, :, :]
        d2 = d[:, :, 0] * d[:, :, 0] + d[:, :, 1] * d[:, :, 1] + d[:, :, 2] * d[:, :, 2]
        ok = (d2 <= rc2) & self.snap_live[None, :]
        ok[np.arange(senders.size), senders] = False
        arrival = t + c["latency"]
        si, ri = np.nonzero(ok)
        wire_pos = self.pos.astype(np.float32)  # messages carry float32 position/velocity
        wire_vel = self.vel.astype(np.float32)
        for a, b in zip(si.tolist(), ri.tolist(), strict=True):
            s = int(senders[a])
            self.pending.append((arrival, s, b, t, wire_pos[s].astype(np.float64),
                                 wire_vel[s].astype(np.float64)))
        counts = ok.sum(axis=1)
        self.tx_step[senders] += counts

    def _receive(self, r: int, sender: int, t_send: float, mpos: np.ndarray,
                 mvel: np.ndarray) -> None:
        if not self.snap_live[r]:
            return
        self.rx_step[r] += 1
        sp = self.snap_pos[r]
        dx, dy, dz = mpos[0] - sp[0], mpos[1] - sp[1], mpos[2] - sp[2]
        d2 = dx * dx + dy * dy + dz * dz
        table = self.tables[r]
        entry = [sender, t_send, d2, mpos, mvel]
        for q, e in enumerate(table):
            if e[0] == sender:
                table[q] = entry
                return
        if len(table) < self.c["table_size"]:
            table.append(entry)
            return

        def worse_key(e: list[Any]) -> tuple[float, float, int]:
            # larger = evicted first: older, then farther, then larger id
            return (-e[1], e[2], e[0])

        w = max(range(len(table)), key=lambda q: worse_key(table[q]))
        if worse_key(entry) < worse_key(table[w]):
            table[w] = entry

    # -- boundary ---------------------------------------------------------------------------

    def _boundary(self, reset: bool) -> dict[str, np.ndarray]:
        c, N = self.c, self.N
        now = self.k * self.D
        start = self.alive.copy()
        hashed = np.flatnonzero(start)
        pos = self.pos
        # collisions among UAVs alive at the start of the step
        col = np.zeros(N, dtype=bool)
        if not reset and hashed.size:
            d = pos[hashed][:, None, :] - pos[hashed][None, :, :]
            d2 = d[:, :, 0] * d[:, :, 0] + d[:, :, 1] * d[:, :, 1] + d[:, :, 2] * d[:, :, 2]
            np.fill_diagonal(d2, np.inf)
            col[hashed] = (d2 < c["collision_radius"] * c["collision_radius"]).any(axis=1)
        # coverage counts
        cov_uav = start & (self.crashed == CRASH_NONE) & (pos[:, 2] <= c["sensor_ceiling"])
        rs2 = c["sensor_radius"] * c["sensor_radius"]
        if self.M:
            tdx = self.targets[None, :, 0] - pos[:, None, 0]
            tdy = self.targets[None, :, 1] - pos[:, None, 1]
            td2 = tdx * tdx + tdy * tdy
            within = (td2 <= rs2) & cov_uav[:, None]
            count = within.sum(axis=0)
        else:
            td2 = np.zeros((N, 0))
            within = np.zeros((N, 0), dtype=bool)
            count = np.zeros(0, dtype=np.int64)
        self.count = count
        self.collided = col
        obs = np.zeros((N, self.obs_dim), np.float32)
        reward = np.zeros(N, np.float32)
        term = np.zeros(N, dtype=bool)
        info = np.zeros((N, 8))
        for i in hashed:
            obs[i], reward[i], term[i], info[i] = self._observe(
                int(i), now, hashed, within[i], td2[i], count, bool(col[i])
            )
        trunc = np.zeros(N, dtype=bool)
        if not reset and self.max_cycles and self.k >= self.max_cycles:
            trunc[start] = True
        if reset:
            term[:] = False
        # publish
        self.snap_pos = pos.copy()
        self.snap_live = start & ~(term | ((self.crashed != 0) & ~reset))
        self.alive = start & ~term & ~trunc
        return {"obs": obs, "reward": reward, "terminated": term, "truncated": trunc,
                "info": info}

    def _observe(self, i: int, now: float, hashed: np.ndarray, within: np.ndarray,
                 td2: np.ndarray, count: np.ndarray, col: bool) -> tuple[Any, ...]:
        c = self.c
        p, v = self.pos[i], self.vel[i]
        o: list[float] = []
        o += list(np.clip(p / self.ext, 0.0, 1.0))
        o += list(np.clip(v / c["v_max"], -1.0, 1.0))
        o.append(min(max(self.battery[i], 0.0), 1.0))
        # neighbours
        valid = [e for e in self.tables[i] if not (now - e[1] > c["msg_ttl"])]

        def nd2(e: list[Any]) -> float:
            dx, dy, dz = e[3][0] - p[0], e[3][1] - p[1], e[3][2] - p[2]
            return dx * dx + dy * dy + dz * dz

        valid_sorted = sorted(valid, key=lambda e: (nd2(e), e[0]))[: c["num_neighbors"]]
        for e in valid_sorted:
            o.append(1.0)
            o += list(np.clip((e[3] - p) / c["comm_radius"], -2.0, 2.0))
            o += list(np.clip((e[4] - v) / c["v_max"], -2.0, 2.0))
            o.append(min(max((now - e[1]) / c["msg_ttl"], 0.0), 1.0))
        o += [0.0] * (8 * (c["num_neighbors"] - len(valid_sorted)))
        # nearest targets
        T = c["num_obs_targets"]
        order = np.lexsort((np.arange(self.M), td2))[:T] if self.M else []
        for t in order:
            o.append(1.0)
            o.append(min(max((self.targets[t, 0] - p[0]) / c["arena_x"], -1.0), 1.0))
            o.append(min(max((self.targets[t, 1] - p[1]) / c["arena_y"], -1.0), 1.0))
            o.append(min(int(count[t]), 4) * 0.25)
        o += [0.0] * (4 * (T - len(order)))
        # rays
        o += list(self._rays(i, hashed))
        share = float(np.sum(1.0 / count[within])) if within.any() else 0.0
        energy = self.battery_step[i] - self.battery[i]
        reward = c["w_coverage"] * share - c["w_energy"] * energy
        if col:
            reward -= c["collision_penalty"]
        if self.crashed[i]:
            reward -= c["crash_penalty"]
        term = bool(self.crashed[i]) or col
        reason = self.crashed[i] if self.crashed[i] else (4 if col else 0)
        info = [self.battery[i], share, energy, float(col), float(reason),
                float(self.rx_step[i]), float(self.tx_step[i]), float(len(valid))]
        return np.asarray(o, np.float32), np.float32(reward), term, np.asarray(info)

    def _rays(self, i: int, hashed: np.ndarray) -> np.ndarray:
        c = self.c
        if self.R == 0:
            return np.zeros(0)
        p = self.pos[i]
        d = self.rays
        rng = np.full(self.R, c["ray_range"])
        lim = self.ext
        for a in range(3):
            with np.errstate(divide="ignore", invalid="ignore"):
                pos_t = (lim[a] - p[a]) / d[:, a]
                neg_t = (0.0 - p[a]) / d[:, a]
            ta = np.where(d[:, a] > 0.0, pos_t, np.where(d[:, a] < 0.0, neg_t, np.inf))
            rng = np.minimum(rng, ta)
        rng = np.maximum(rng, 0.0)
        others = hashed[hashed != i]
        if others.size:
            rb = 0.5 * c["collision_radius"]
            rb2 = rb * rb
            oc = self.pos[others] - p
            oc2 = oc[:, 0] * oc[:, 0] + oc[:, 1] * oc[:, 1] + oc[:, 2] * oc[:, 2]
            tca = oc[:, None, 0] * d[None, :, 0] + oc[:, None, 1] * d[None, :, 1] \
                + oc[:, None, 2] * d[None, :, 2]
            m2 = oc2[:, None] - tca * tca
            hit = m2 <= rb2
            thc = np.sqrt(np.where(hit, rb2 - m2, 0.0))
            hit &= tca + thc >= 0.0
            t = np.maximum(tca - thc, 0.0)
            t = np.where(hit, t, np.inf)
            rng = np.minimum(rng, t.min(axis=0))
        return np.clip(rng / c["ray_range"], 0.0, 1.0)
