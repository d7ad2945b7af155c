"""Pure-Python splitmix64 / xoshiro256** matching the runtime's per-entity streams.

The one RNG implementation every oracle port uses (written from the documented
algorithm, sharing no code with the C runtime).

Stream of entity ``e`` under instance seed ``s``: ``x = s ^ (0xD1B54A32D192ED03 * (e + 1))``,
``sm = splitmix64(x)`` (one output), then the four state words are the next four
outputs of a splitmix64 sequence started at ``sm``.  Uniform draws are
``((next >> 11) + 0.5) * 2**-53``; exponential draws ``-mean * log(u)``
(``math.log``, i.e. the C library's log, so results match bit for bit);
``below(n)`` is ``((next >> 32) * n) >> 32``.

Two faces of the same functions: a state list ``s`` advanced by
:func:`xoshiro_next` / :func:`xo_uniform` / ... (the fastest in a hot loop),
and the :class:`Xoshiro256` object.
"""

from __future__ import annotations

import math

MASK = (1 << 64) - 1
SEED_KEY = 0xD1B54A32D192ED03


def splitmix64(state: int) -> tuple[int, int]:
    """Advance a splitmix64 state; return (new_state, output)."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def u01(z: int) -> float:
    """53-bit uniform in (0, 1) from a 64-bit word."""
    return ((z >> 11) + 0.5) * 2.0**-53


def seed_state(seed: int, entity: int) -> list[int]:
    """The xoshiro256** state of ``entity`` under instance seed ``seed``."""
    x = (seed ^ ((SEED_KEY * (entity + 1)) & MASK)) & MASK
    _, sm = splitmix64(x)
    s = []
    for _ in range(4):
        sm, out = splitmix64(sm)
        s.append(out)
    if not any(s):
        s[0] = 1
    return s


def xoshiro_next(s: list[int]) -> int:
    """Advance ``s`` in place and return the next 64-bit output."""
    s1 = s[1]
    r = (s1 * 5) & MASK
    r = ((r << 7) | (r >> 57)) & MASK
    result = (r * 9) & MASK
    t = (s1 << 17) & MASK
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s3 = s[3]
    s[3] = ((s3 << 45) | (s3 >> 19)) & MASK
    return result


def xo_uniform(s: list[int]) -> float:
    return u01(xoshiro_next(s))


def xo_exponential(s: list[int], mean: float) -> float:
    return -mean * math.log(xo_uniform(s))


def xo_below(s: list[int], n: int) -> int:
    return ((xoshiro_next(s) >> 32) * n) >> 32


class Xoshiro256:
    """xoshiro256** with the runtime's seeding and draw conventions."""

    __slots__ = ("s",)

    def __init__(self, seed: int, entity: int) -> None:
        self.s = seed_state(seed, entity)

    def next(self) -> int:
        return xoshiro_next(self.s)

    def uniform(self) -> float:
        return xo_uniform(self.s)

    def exponential(self, mean: float) -> float:
        return xo_exponential(self.s, mean)

    def below(self, n: int) -> int:
        return xo_below(self.s, n)
