"""An independent pure-Python PHOLD, with the runtime's step semantics.

Used by the tests as an oracle for both the runtime (event order, windows,
act/boundary phases, RNG streams) and the C PHOLD model.  Only the documented
semantics are shared: one (time, source, sequence)-ordered queue per
instance; act at k*D; events with time < (k+1)*D; then observe and publish.
"""

from __future__ import annotations

import heapq
import math
import struct

import numpy as np

from .rng import MASK, Xoshiro256

SCALES = (1.0, 0.5, 2.0)


def mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


class PholdPy:
    """One PHOLD instance."""

    def __init__(self, num_entities: int, events_per_entity: int, remote: float, mean: float,
                 lookahead: float, work: int, step_duration: float, seed: int) -> None:
        self.n = num_entities
        self.epe = events_per_entity
        self.remote = remote
        self.mean = mean
        self.L = lookahead
        self.work = work
        self.D = step_duration
        self.rng = [Xoshiro256(seed, e) for e in range(self.n)]
        self.seq = [0] * self.n
        self.checksum = [mix64(e + 1) for e in range(self.n)]
        self.handled = [0] * self.n
        self.handled_step = [0] * self.n
        self.remote_in = [0] * self.n
        self.acc = [0.0] * self.n
        self.scale = [1.0] * self.n
        self.snapshot = [0] * self.n
        self.queue: list[tuple[float, int, int, int, int]] = []
        self.step_index = 0
        for e in range(self.n):
            for _ in range(self.epe):
                t = 0.0 + self.rng[e].exponential(self.mean)
                self._schedule(e, e, t, 0, e)
        self._publish()

    def _schedule(self, src: int, target: int, t: float, hops: int, origin: int) -> None:
        key = (src << 40) | self.seq[src]
        self.seq[src] += 1
        heapq.heappush(self.queue, (t, key, target, hops, origin))

    def _publish(self) -> None:
        self.snapshot = list(self.handled)

    def step(self, actions: np.ndarray) -> None:
        for e in range(self.n):
            self.scale[e] = SCALES[int(actions[e])]
            self.handled_step[e] = 0
        boundary = float(self.step_index + 1) * self.D
        q = self.queue
        while q and q[0][0] < boundary:
            now, _key, e, hops, origin = heapq.heappop(q)
            x = self.acc[e] + float(hops & 1023) * 1e-3
            for _ in range(self.work):
                x = x * 0.999999 + 0.5
            self.acc[e] = x - math.floor(x)
            self.handled[e] += 1
            self.handled_step[e] += 1
            if origin != e:
                self.remote_in[e] += 1
            target = e
            if self.remote > 0.0 and self.rng[e].uniform() < self.remote:
                target = self.rng[e].below(self.n)
            rec = self.snapshot[target]
            self.checksum[e] = mix64(
                self.checksum[e] ^ bits(now) ^ ((hops << 32) & MASK) ^ origin
                ^ ((rec * 0x9E3779B97F4A7C15) & MASK)
            )
            t = (now + self.L) + self.scale[e] * self.rng[e].exponential(self.mean)
            self._schedule(e, target, t, hops + 1, e)
        self.step_index += 1
        self._publish()

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        per = float(self.epe)
        obs = np.zeros((self.n, 4), dtype=np.float32)
        for e in range(self.n):
            obs[e, 0] = np.float32(self.handled_step[e] / per)
            obs[e, 1] = np.float32(math.log1p(float(self.handled[e])))
            obs[e, 2] = np.float32(float(self.checksum[e] >> 40) * 2.0**-24)
            obs[e, 3] = np.float32(self.acc[e])
        return obs, obs[:, 0].copy()
