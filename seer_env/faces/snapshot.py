"""`EnvSnapshot`: an env's whole state at one moment, what ``snapshot()`` returns
and ``restore()`` takes, with the digest that makes its face part tamper-evident.

Part of `seer_env.faces` (`seer_env.env`, its old path, re-exports the public names).
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
import struct
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import (
    SnapshotError,
)

if TYPE_CHECKING:  # pragma: no cover
    pass


#: The version of `EnvSnapshot`'s Python side (the runtime's bytes carry
#: their own format version, ``SEER_SNAPSHOT_FORMAT``).  2: a digest of the
#: whole snapshot; the batched env's instances carry their seed strides.
SNAPSHOT_VERSION = 2

#: Values the digest feeds as their repr (exact and canonical for these).
_REPR_TYPES = frozenset((type(None), bool, int, float, str))


def _feed(h: Any, x: Any) -> None:
    """Feed ``x`` to the hash ``h`` canonically: the same bytes for a value and
    its copy through pickle, deepcopy or another process; the type of every
    part included (a tuple is not a list, 1 is not True nor 1.0)."""
    t = type(x)
    if t in _REPR_TYPES:
        h.update(b"r%d:" % len(r := repr(x).encode("utf-8", "surrogatepass")) + r)
    elif t is tuple or t is list:
        if set(map(type, x)) <= _REPR_TYPES:  # the common case, at once
            h.update(b"R%d:" % len(r := repr(x).encode("utf-8", "surrogatepass")) + r)
        else:
            h.update(b"t%d:" % len(x) if t is tuple else b"l%d:" % len(x))
            for v in x:
                _feed(h, v)
    elif t is dict:
        h.update(b"d%d:" % len(x))
        for k, v in x.items():
            _feed(h, k)
            _feed(h, v)
    elif t is bytes or t is bytearray:
        h.update(b"b%d:" % len(x) + bytes(x))
    elif t is np.ndarray:
        if x.dtype.hasobject:
            h.update(b"o" + repr(x.shape).encode())
            _feed(h, x.tolist())
        else:
            h.update(b"a" + f"{x.dtype.str}{x.shape}".encode())
            h.update(np.ascontiguousarray(x).tobytes())
    elif isinstance(x, np.generic):
        h.update(b"g" + x.dtype.str.encode() + x.tobytes())
    elif hasattr(x, "__dict__") and not isinstance(x, type):  # an object: its type and fields
        h.update(b"O" + f"{t.__module__}.{t.__qualname__}".encode())
        _feed(h, vars(x))
    else:  # anything else pickle reads the same after a round trip
        h.update(b"p" + pickle.dumps(x, protocol=4))


def _digest(snap: EnvSnapshot) -> bytes:
    """The digest of everything ``snap`` holds.  The runtime's bytes of each
    instance count by their length and their own checksum (their last 8 bytes,
    which covers every byte before them and which restore checks): a snapshot
    costs no hashing of its megabytes twice."""
    h = hashlib.blake2b(digest_size=16, person=b"seer_env.snap")
    _feed(h, (snap.version, snap.face, snap.model, snap.config, snap.env_ids))
    for data in snap.instances:
        h.update(b"I" + struct.pack("<Q", len(data)) + bytes(data[-8:]))
    _feed(h, snap.state)
    return h.digest()


def check_intact(snap: EnvSnapshot, name: str) -> None:
    """SnapshotError unless ``snap`` (an EnvSnapshot) is of this seer_env's
    version and its contents still match the digest made with it: the first
    checks of every restore (a face that wraps another's snapshot makes them
    before it unwraps it)."""
    version = snap.__dict__.get("version")
    if version != SNAPSHOT_VERSION:
        older = isinstance(version, int) and version < SNAPSHOT_VERSION
        raise SnapshotError(
            f"{name}: snapshot version {version!r}; this seer_env reads version "
            f"{SNAPSHOT_VERSION}" + (" (an older seer_env's snapshot, without the digest "
                                     "this one checks: take it again)" if older else ""))
    try:
        ok = snap.__dict__.get("digest") == _digest(snap)
    except Exception:  # contents the digest cannot even read (a forged pickle)
        ok = False
    if not ok:
        raise SnapshotError(f"{name}: the snapshot is damaged: its contents do not match the "
                            "digest made with it (a changed or corrupted pickle)")


@dataclasses.dataclass(frozen=True, eq=False)
class EnvSnapshot:
    """An env's whole state at one moment: what ``env.snapshot()`` returns and
    ``env.restore(snap)`` goes back to.  Opaque, immutable, picklable:

    ```python
    snap = env.snapshot()
    for a in candidates:                  # try each from the same state
        env.restore(snap)
        obs, rew, term, trunc, infos = env.step({**others, agent: a})

    blob = pickle.dumps(snap)             # to disk, to another process...
    env2 = pcs_v0.parallel_env(executor="serial")   # same model and configuration
    env2.restore(pickle.loads(blob))      # continues bit for bit as env would
    ```

    It holds the runtime's bytes of each instance (``Runtime.snapshot``: entity
    states, RNG streams, pending events, instance data, the last outputs; each
    checksummed) and the face's own Python state (live agents, autoreset
    flags, next seeds and seed strides, the AEC wrapper's dicts).  It restores
    into the env it came from or a new env of the same face, model and
    configuration, on any executor and thread count, any number of times;
    anything else raises `SnapshotError` and leaves the env unchanged.

    A ``digest`` made with the snapshot covers all of it (the face's part, and
    each instance's bytes through their own checksum); ``restore`` refuses a
    snapshot whose contents no longer match it (a damaged pickle).  It detects
    damage, it is no signature: restore also checks that the face's part makes
    sense for this model and agrees with the runtime's bytes (live agents are
    this model's, each once, and those alive in the bytes; seeds are ints in
    range...), so a well-made forgery that does not is refused too.  Snapshots
    of an older seer_env (version 1, without a digest) are refused: take them
    again.
    """

    version: int
    face: str  # "parallel", "aec", "vector", "agent_vector"
    model: str
    config: tuple[tuple[str, Any], ...]  # the completed configuration, max_cycles included
    instances: tuple[bytes, ...]  # the runtime's snapshot of each instance
    env_ids: tuple[int, ...]  # the instance each came from
    state: dict[str, Any]  # the face's own state
    #: the digest of all the above, made with the snapshot (see `_digest`)
    digest: bytes = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "digest", _digest(self))

    @property
    def nbytes(self) -> int:
        """Bytes of the runtime snapshots it holds."""
        return sum(len(b) for b in self.instances)


#: NumPy's bit generators a snapshot's generator state may name
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


def generator_of(state: Any, name: str, what: str = "np_random") -> np.random.Generator | None:
    """The generator a snapshot's generator state (its bit generator's
    ``state`` dict; None: the env had none) gives; SnapshotError naming
    ``what`` for one no NumPy bit generator takes, whatever NumPy's setter
    raised (TypeError, ValueError, KeyError, IndexError, OverflowError, ...)."""
    if state is None:
        return None
    kind = state.get("bit_generator") if type(state) is dict else None
    if kind not in _BIT_GENERATORS:
        raise SnapshotError(f"{name}: the snapshot's {what} state is malformed (not the "
                            "state of one of NumPy's bit generators)")
    bits = getattr(np.random, kind)()
    try:
        bits.state = state
    except Exception as exc:  # the setter's own checks
        raise SnapshotError(f"{name}: the snapshot's {what} state is malformed "
                            f"({kind}: {exc})") from None
    return np.random.Generator(bits)
