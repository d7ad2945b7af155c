"""Pure-Python splitmix64 / xoshiro256** matching the runtime's per-entity streams.

Stream of entity ``e`` under instance seed ``s``: ``x = s ^ (0xD1B54A32D192ED03 * (e + 1))``,
``sm = splitmix64(x)`` (one output), then the four state words are the next four
outputs of a splitmix64 sequence started at ``sm``.  Uniform draws are
``((next >> 11) + 0.5) * 2**-53``; exponential draws ``-mean * log(u)``
(``math.log``, i.e. the C library's log, so results match bit for bit);
``below(n)`` is ``((next >> 32) * n) >> 32``.
"""

from __future__ import annotations

import math

MASK = (1 << 64) - 1


def splitmix64(state: int) -> tuple[int, int]:
    """Advance a splitmix64 state; return (new_state, output)."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def seed_state(seed: int, entity: int) -> list[int]:
    x = (seed ^ ((0xD1B54A32D192ED03 * (entity + 1)) & MASK)) & MASK
    _, sm = splitmix64(x)
    s = []
    for _ in range(4):
        sm, out = splitmix64(sm)
        s.append(out)
    if not any(s):
        s[0] = 1
    return s


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & MASK


class Xoshiro256:
    """xoshiro256** with the runtime's draw conventions."""

    __slots__ = ("s",)

    def __init__(self, seed: int, entity: int) -> None:
        self.s = seed_state(seed, entity)

    def next(self) -> int:
        s = self.s
        result = (_rotl((s[1] * 5) & MASK, 7) * 9) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return result

    def uniform(self) -> float:
        return ((self.next() >> 11) + 0.5) * 2.0**-53

    def exponential(self, mean: float) -> float:
        return -mean * math.log(self.uniform())

    def below(self, n: int) -> int:
        return ((self.next() >> 32) * n) >> 32
