"""Generic PettingZoo / batched environments over a native model.

A model's declaration ([`seer_env.sdk.Model`][seer_env.sdk.Model]) gets both faces from
here:

```python
from seer_env.envs import phold_v0
env = phold_v0.parallel_env(num_entities=16)     # SeerParallelEnv(MODEL, ...)
venv = phold_v0.vector_env(4, num_entities=16)   # SeerVectorEnv(MODEL, 4, ...)
```

Configuration keys are the model's parameters (names, defaults and ranges
from its C table, which validates every value) plus the keys in
`COMMON_KEYS`.  Every step is one native call; Python only validates the
actions' structure (agents, shapes, dtypes) and copies the outputs the user
keeps.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import functools
import hashlib
import itertools
import os
import pickle
import struct
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np
import pettingzoo
from gymnasium.vector import AutoresetMode
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.env import AECIterator
from pettingzoo.utils.wrappers import OrderEnforcingWrapper
from pettingzoo.utils.wrappers.order_enforcing import (
    AECOrderEnforcingIterable,
    AECOrderEnforcingIterator,
)

from . import _async, _gate, _kernels
from ._gate import close_now, exclusive
from ._runtime import Runtime, alloc_zeros, cpu_count
from .errors import (
    AsyncStateError,
    ClosedError,
    ConfigError,
    InvalidActionError,
    OutOfMemoryError,
    SeerError,
    SnapshotError,
    StateError,
    UnknownAgentError,
)
from .stpa import attach as attach_stpa
from .stpa import describe as describe_stpa

if TYPE_CHECKING:  # pragma: no cover
    from .model import Model

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_PZ_DIR = os.path.dirname(os.path.abspath(pettingzoo.__file__)) + os.sep


def _raised_by_seer(exc: BaseException, also: str = "") -> bool:
    """``exc`` came from seer_env's own code (the runtime saying what happened:
    nothing changed, or its instances need a reset and say so), not from user
    code that ran during the call -- a signal handler, which Python runs between
    two bytecodes of the call, or a model written in Python -- after which
    nothing is known about what the call did.  ``also``: one more folder whose
    code counts as the env's (PettingZoo's, for the AEC wrapper)."""
    tb = exc.__traceback__
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if not (f.startswith((_PKG_DIR, "<seer_env.")) or also and f.startswith(also)):
            return False
        tb = tb.tb_next
    return True


_CUT_SHORT = ("the last {}() was cut short before it finished (an interrupt such as "
              "Ctrl-C, or an unexpected error raised inside it)")
_CUT_SHORT_STEP = _CUT_SHORT.format("step")
_CUT_SHORT_RESET = _CUT_SHORT.format("reset")
_CUT_SHORT_SEND = _CUT_SHORT.format("send")
_CUT_SHORT_RECV = _CUT_SHORT.format("recv")
_CUT_SHORT_RESTORE = _CUT_SHORT.format("restore")

#: Keys every env accepts besides its model's parameters.
COMMON_KEYS = ("threads", "executor", "render_mode", "info_keys", "max_cycles",
               "max_step_events", "memory_limit", "enforce_masks")

_MAX_SEED = 2**64 - 1


def _seed_value(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ConfigError(f"seed={seed!r} must be an int (or None)")
    if not 0 <= int(seed) <= _MAX_SEED:
        raise ConfigError(f"seed={seed} must be in [0, 2**64)")
    return int(seed)


def _check_options(options: Any, known: tuple[str, ...] | None = None) -> None:
    """``reset(options=)``: None or a dict; with ``known``, of those keys only.

    The batched envs refuse an unknown key rather than ignore it: a mistyped
    ``"reset_mask"`` turned a partial reset into a full one, throwing the other
    instances' episodes away.  A PettingZoo env takes any (its ``api_test``
    resets with ``options={"options": 1}``) and reads none."""
    if options is None:
        return
    if not isinstance(options, Mapping):
        raise ConfigError(f"options={options!r} must be a dict (or None)")
    unknown = sorted(map(repr, set(options) - set(known))) if known is not None else []
    if unknown:
        raise ConfigError(f"reset(): unknown option(s) {', '.join(unknown)}; this env's "
                          f"reset takes the keys {list(known or ())} (or options=None)")


def _fresh_seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


def _box(low: np.ndarray, high: np.ndarray) -> gymnasium.spaces.Box:
    return gymnasium.spaces.Box(np.asarray(low, np.float32), np.asarray(high, np.float32),
                                dtype=np.float32)


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


def _check_intact(snap: EnvSnapshot, name: str) -> None:
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


class _SeerEnvCommon:
    """Construction shared by the ParallelEnv and the batched env."""

    seer_model: Model
    runtime: Runtime
    _needs_reset: bool  # the faces set it: True until reset(), and after close()

    def _setup(self, model: Model, num_instances: int, config: Mapping[str, Any]) -> None:
        self._busy = _gate.new_gate()  # every call passes through it (exclusive), and close()
        self._interrupted = ""  # why a call was cut short (then only reset() works)
        _gate.track(self)
        self.seer_model = model
        native = model.native
        params = {k: v for k, v in config.items() if k not in COMMON_KEYS}
        unknown = sorted(k for k in params if k not in native.params)
        if unknown:
            raise ConfigError(
                f"{model.name}: unknown config key(s) {unknown}; valid keys: "
                f"{sorted(set(native.params) | set(COMMON_KEYS))}"
            )
        self.threads = config.get("threads", "auto")
        given = config.get("executor")
        self.executor = "parallel" if given is None else given
        threads = self.threads
        if given == "parallel" and threads == "auto":
            # the executor given runs as asked, on every CPU (as "auto" does for
            # the optimistic one): STPA chooses only when neither is given
            threads = cpu_count()
        self.render_mode = config.get("render_mode")
        if self.render_mode is not None and self.render_mode not in ("rgb_array", "human"):
            raise ConfigError(
                f"render_mode={self.render_mode!r} must be None, 'rgb_array' or 'human'"
            )
        if self.render_mode is not None and model.render is None:
            raise ConfigError(f"{model.name} cannot render")
        self.runtime = Runtime(native, params, num_instances, self.executor, threads,
                               config.get("max_cycles", native.max_cycles),
                               max_step_events=config.get("max_step_events", 0),
                               memory_limit=config.get("memory_limit", 0),
                               enforce_masks=config.get("enforce_masks", True))
        rt = self.runtime
        rt.requested_threads = self.threads  # ("auto" above became every CPU)
        attach_stpa(rt)  # threads="auto", no executor given: STPA chooses
        self.max_cycles = rt.max_cycles
        #: the configuration as the model completed it, plus max_cycles
        self.config = {**rt.config, "max_cycles": rt.max_cycles}
        self.sizes = rt.sizes
        try:
            self._faces(native)
        except BaseException:
            rt.close()  # names or bounds no env can be made of (ModelError)
            raise

    def _faces(self, native: Any) -> None:
        """The agents' names and the spaces, from the model's hooks."""
        rt = self.runtime
        self.possible_agents = native.agent_names(rt._config_ptr, self.sizes.num_agents, self.sizes)
        self.agent_index = {a: i for i, a in enumerate(self.possible_agents)}
        obs_lo, obs_hi, st_lo, st_hi = native.bounds(rt._config_ptr, self.sizes)
        self._obs_space: gymnasium.Space = _box(obs_lo, obs_hi)
        self._state_space = _box(st_lo, st_hi)
        sz = self.sizes
        if sz.action_kind == "discrete":
            self._act_space: gymnasium.Space = gymnasium.spaces.Discrete(sz.action_n)
        elif sz.action_kind == "box":
            self._act_space = gymnasium.spaces.Box(
                sz.action_low, sz.action_high, shape=(sz.action_dim,), dtype=np.float32
            )
        self.info_names = rt.info_names
        #: agent groups, masks or multi-discrete actions: each agent's spaces
        #: are its group's (the one-group, unmasked models keep the fast paths)
        self._structured = sz.num_groups > 1 or sz.mask_dim > 0 or any(
            g.action_kind == "multi_discrete" for g in sz.groups)
        #: the agent groups (one, "agents", for a model without groups)
        self.groups = sz.groups
        self._group_of = np.repeat(np.arange(len(sz.groups)), [g.count for g in sz.groups])
        self._group_obs_spaces = [self._group_obs_space(native, i, g)
                                  for i, g in enumerate(sz.groups)]
        self._group_act_spaces = [_group_action_space(g) for g in sz.groups]
        if self._structured:
            self._obs_space = self._group_obs_spaces[0]
            self._act_space = self._group_act_spaces[0]

    def _group_obs_space(self, native: Any, i: int, g: Any) -> gymnasium.Space:
        """A group's observation space: its Box, in PettingZoo's dict with the
        action mask when the group's actions are masked."""
        box = _box(*native.group_bounds(self.runtime._config_ptr, self.sizes, i))
        if not g.mask_len:
            return box
        return gymnasium.spaces.Dict({
            "observation": box,
            "action_mask": gymnasium.spaces.Box(0, 1, shape=(g.mask_len,), dtype=np.int8),
        })

    def _zeros(self, what: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """Zeros for one of the face's own per-env buffers.  Out of memory
        closes the runtime (nothing half-made is kept) and raises
        `OutOfMemoryError` naming the buffer and its bytes."""
        try:
            return alloc_zeros(self.seer_model.name, what, shape, dtype)
        except OutOfMemoryError:
            self.runtime.close()
            raise

    def _check_open(self, what: str) -> None:
        if self.runtime.closed:
            raise ClosedError(f"{self.seer_model.name}: {what}() on a closed env")

    def _closed(self) -> bool:
        """close() started (or the runtime was closed)."""
        return bool(self._busy.closing) or self.runtime.closed

    @property
    def stpa(self) -> Any:
        """What chooses the executor and pool, and why: the
        [`Stpa`][seer_env.stpa.Stpa] controller (``threads="auto"``, no
        executor given), else a [`FixedChoice`][seer_env.stpa.FixedChoice] (the
        configuration was given).  Both have ``executor``, ``threads``,
        ``reason``, ``workload`` (the run's figures so far) and ``as_dict()``."""
        return describe_stpa(self.runtime)

    # -- snapshots ---------------------------------------------------------------

    def _snapshot_of(self, face: str, env_ids: Sequence[int], state: dict[str, Any]
                     ) -> EnvSnapshot:
        """An `EnvSnapshot` of the instances ``env_ids`` with the face's state."""
        self._check_open("snapshot")
        name = self.seer_model.name
        if self._needs_reset:
            raise StateError(f"{name}: call reset() before snapshot()")
        if self._interrupted:
            raise StateError(f"{name}: {self._interrupted}; call reset() before snapshot()")
        rt = self.runtime
        return EnvSnapshot(SNAPSHOT_VERSION, face, name, tuple(sorted(self.config.items())),
                           tuple(rt.snapshot(i) for i in env_ids), tuple(env_ids), state)

    def _check_snapshot(self, snap: Any, face: str) -> None:
        """Raise SnapshotError unless ``snap`` is a snapshot of this face, model and
        configuration (the runtime checks its bytes: `_check_instances`)."""
        name = self.seer_model.name
        if not isinstance(snap, EnvSnapshot):
            raise SnapshotError(f"{name}: restore() takes what snapshot() returned (an "
                                f"EnvSnapshot), got {type(snap).__name__}")
        _check_intact(snap, name)
        if snap.face != face:
            raise SnapshotError(f"{name}: a snapshot of a {snap.face!r} env cannot restore a "
                                f"{face!r} env (restore into the kind of env it came from)")
        if snap.model != name:
            raise SnapshotError(f"{name}: the snapshot is of model {snap.model!r}")
        try:
            mine, theirs = self.config, dict(snap.config)
        except (TypeError, ValueError):
            raise SnapshotError(f"{name}: the snapshot's configuration is malformed") from None
        if theirs != mine:
            diff = [f"{k}={theirs.get(k)!r} (here {mine.get(k)!r})"
                    for k in sorted(set(mine) | set(theirs), key=str)
                    if theirs.get(k) != mine.get(k)]
            raise SnapshotError(f"{name}: the snapshot was taken with another configuration: "
                                f"{', '.join(diff)}; restore it into an env made the same way")
        ids, inst = snap.env_ids, snap.instances
        if not (type(inst) is tuple and all(type(b) is bytes for b in inst)):
            raise SnapshotError(f"{name}: the snapshot is malformed (its instances are not "
                                "a tuple of the runtime's bytes)")
        if not (type(ids) is tuple and len(ids) == len(inst) and len(set(ids)) == len(ids)
                and all(type(i) is int and i >= 0 for i in ids)):
            raise SnapshotError(f"{name}: the snapshot is malformed (env_ids {ids!r:.80} are not "
                                f"{len(inst)} distinct instance numbers)")
        if type(snap.state) is not dict:
            raise SnapshotError(f"{name}: the snapshot is malformed (its face state is a "
                                f"{type(snap.state).__name__}, not a dict)")

    def _check_instances(self, pairs: Sequence[tuple[int, bytes]]) -> list[np.ndarray]:
        """Every runtime snapshot checked (model, configuration, format, checksum,
        events) before any is restored; the alive flags of each."""
        return [self.runtime.snapshot_alive(i, data) for i, data in pairs]

    def _seeds(self, seed: int | np.integer | None, n: int) -> list[int]:
        """Seeds of n instances: ``seed + i`` (mod 2**64), or the spec's default."""
        if seed is None and self.seer_model.default_seed is not None:
            seed = self.seer_model.default_seed(self.config)
        base = _fresh_seed() if seed is None else _seed_value(seed)
        return [(base + i) & _MAX_SEED for i in range(n)]


class SeerParallelEnv(_SeerEnvCommon, ParallelEnv):
    """A PettingZoo ``ParallelEnv`` whose steps run on the seer runtime.

    Example:

    ```python
    from seer_env.envs import phold_v0
    env = phold_v0.parallel_env(num_entities=16, max_cycles=10)
    obs, infos = env.reset(seed=3)
    while env.agents:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        obs, rewards, terminations, truncations, infos = env.step(actions)
    env.close()
    ```

    Returned observations are fresh arrays (not overwritten by later steps).
    ``env.runtime`` is the underlying [`Runtime`][seer_env.registry.Runtime].

    Actions are checked before anything changes: an unknown or finished
    agent, a missing live agent, a wrong shape or dtype, a discrete value
    outside ``[0, n)`` or a NaN/inf raises
    [`InvalidActionError`][seer_env.errors.InvalidActionError] and the env is as before.
    Box actions: finite values outside the space's bounds are **clipped** to
    them (the action space says ``Box(low, high)``; the runtime clips).

    ``observation_spaces`` / ``action_spaces`` map every possible agent to its
    space (the same object ``observation_space(agent)`` returns).  An env is
    used by one thread at a time: a call from a second thread while another
    is inside one raises [`StateError`][seer_env.errors.StateError]; ``close()`` may
    come from any thread at any time (see `close`), after which every
    call raises [`ClosedError`][seer_env.errors.ClosedError].  A call cut short by
    Ctrl-C (KeyboardInterrupt) after it changed the runtime leaves the env
    needing ``reset()``: every other call raises StateError until then.

    ``env.agents`` is the env's answer, not its state: the env keeps its own
    record of the live agents (a user or wrapper changing the list changes
    nothing inside).
    """

    #: PettingZoo's metadata; each model's env class has its own
    #: (`env_class`): name, render modes and fps.
    metadata: dict[str, Any] = {"name": "seer", "render_modes": [], "render_fps": 10,
                                "is_parallelizable": True}

    def __init__(self, model: Model, **config: Any) -> None:
        self._init_config = dict(config)
        self._setup(model, 1, config)
        self.agents: list[str] = []
        if self._structured:
            self.observation_spaces = {a: self._group_obs_spaces[self._group_of[i]]
                                       for i, a in enumerate(self.possible_agents)}
            self.action_spaces = {a: self._group_act_spaces[self._group_of[i]]
                                  for i, a in enumerate(self.possible_agents)}
        else:
            self.observation_spaces = dict.fromkeys(self.possible_agents, self._obs_space)
            self.action_spaces = dict.fromkeys(self.possible_agents, self._act_space)
        self.info_keys = self._choose_info_keys(config.get("info_keys"))
        self._info_cols = np.array(
            [self.info_names.index(k) for k in self.info_keys], dtype=np.intp
        )
        for k in self.info_keys:
            if not isinstance(k, str):
                raise ConfigError(f"info name {k!r} is not a string")
        self._needs_reset = True
        self._window: Any = None
        self._names = np.array(self.possible_agents, dtype=object)
        self._all_names = tuple(self.possible_agents)
        #: the live agents (what self.agents shows): a tuple nothing else holds,
        #: so user code run by a hostile action key cannot change it under us
        self._live_names: tuple[str, ...] = ()
        # the runtime's buffers, instance 0 (the arrays live as long as the env)
        rt = self.runtime
        self._act_row = rt.actions[0]
        self._out_rows = (rt.obs[0], rt.reward[0], rt.terminated[0], rt.truncated[0],
                          rt.info[0])
        # dict_outputs's buffers, columns, keys and per-agent info template
        self._out_spec = (*self._out_rows, tuple(int(c) for c in self._info_cols),
                          tuple(self.info_keys), dict.fromkeys(self.info_keys))

    def _choose_info_keys(self, keys: Any) -> tuple[str, ...]:
        if keys is None:
            keys = self.seer_model.dict_info_keys
        if keys is None or keys == "all":
            return tuple(self.info_names)
        if isinstance(keys, str):
            raise ConfigError(f"info_keys={keys!r} must be 'all' or a list of names")
        try:
            keys = tuple(keys)
        except TypeError:
            raise ConfigError(f"info_keys={keys!r} must be 'all' or a list of names") from None
        bad = [k for k in keys if k not in self.info_names]
        if bad:
            raise ConfigError(f"info_keys {bad} unknown; available: {list(self.info_names)}")
        return keys

    def __reduce__(self) -> tuple[Any, tuple[Any, dict[str, Any]]]:
        """Pickle as (the model's reference, config): the copy is a fresh env of the same
        configuration (call ``reset`` on it), which is what process-based vector
        wrappers (SuperSuit's ``concat_vec_envs_v1``, Ray) need."""
        m = self.seer_model
        ref = m.reference or functools.partial(type(m), m.folder, m.name)
        return (_rebuild_parallel_env, (ref, self._init_config))

    # -- spaces ---------------------------------------------------------------

    def observation_space(self, agent: str) -> gymnasium.Space:
        """``agent``'s observation space (its group's; a finished agent keeps it)."""
        i = self._agent_idx(agent)
        return self._group_obs_spaces[self._group_of[i]] if self._structured else self._obs_space

    def action_space(self, agent: str) -> gymnasium.Space:
        """``agent``'s action space (its group's; a finished agent keeps it)."""
        i = self._agent_idx(agent)
        return self._group_act_spaces[self._group_of[i]] if self._structured else self._act_space

    def group_of(self, agent: str) -> str:
        """The name of ``agent``'s group (``"agents"`` for a model without groups)."""
        return self.groups[self._group_of[self._agent_idx(agent)]].name

    @property
    def state_space(self) -> gymnasium.Space:
        """The space of `state()`: a float32 Box of the model's state_dim."""
        return self._state_space

    def _agent_idx(self, agent: str) -> int:
        try:
            return self.agent_index[agent]
        except (KeyError, TypeError):
            raise UnknownAgentError(f"{self.seer_model.name}: unknown agent {agent!r}") from None

    # -- episode --------------------------------------------------------------

    @exclusive
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Start a new episode: every agent is live again (`agents` is `possible_agents`).

        Args:
            seed: the episode's seed, an int in ``[0, 2**64)``; the same seed
                gives the same episode on every executor and thread count.
                None: the model's default seed where it has one (PCS in
                classic mode: 0), else a fresh random one.
            options: accepted for PettingZoo's signature (a dict or None);
                no key is read.

        Returns:
            ``(observations, infos)``, dicts keyed by agent name: fresh
            observation arrays, and each agent's info values.

        Raises:
            ConfigError: a seed that is not an int in range, options that are
                not a dict (its keys are not read); the env is as before.
            ClosedError: the env was closed.
        """
        self._check_open("reset")
        _check_options(options)
        seeds = self._seeds(seed, 1)
        cut = self._interrupted
        self._interrupted = _CUT_SHORT_RESET  # until Python has caught up
        try:
            self.runtime.reset(seeds)
        except SeerError as exc:
            if _raised_by_seer(exc):  # the runtime reports the truth (and marks its instances)
                self._interrupted = cut
            raise
        self._live_names = self._all_names
        self._live_idx = np.arange(len(self._all_names))
        self.agents = list(self._all_names)
        self._needs_reset = False
        (obs, _, _, _, infos), _ = self._outputs(self._live_idx)
        self._interrupted = ""
        if self.render_mode == "human":
            self._render()
        return obs, infos

    def _write_actions(self, actions: Mapping[str, Any]) -> None:
        """Check the actions' structure and write them into the runtime's buffer.

        Value checks (range, NaN/inf) happen in C, before any state changes.
        """
        sz = self.sizes
        names = self._live_names
        if self._structured:  # each agent's group's kind: agent by agent
            self._write_actions_checked(actions)
            return
        # exactly the live agents with plain values: one pass in C
        if type(actions) is dict and _kernels.dict_actions(
                actions, names, self._live_idx, self._act_row, sz.action_dim,
                sz.action_kind == "discrete"):
            return
        if not isinstance(actions, Mapping):
            raise InvalidActionError(
                f"actions must be a dict agent -> action, got {type(actions).__name__}"
            )
        # Fast path: exactly the live agents, homogeneous well-typed values.
        # (A Mapping's own methods are user code: anything they raise takes
        # the checked path, which says what was wrong.)
        try:
            vals = [actions[a] for a in names] if len(actions) == len(names) else None
        except Exception:
            vals = None
        if vals is not None and self._fast_types(vals):
            try:
                arr = np.asarray(vals)
            except ValueError:  # ragged shapes: let the slow path say which
                arr = None
            if arr is not None and self._fast_ok(arr):
                if sz.action_kind == "discrete":
                    self.runtime.actions[0][self._live_idx] = arr.reshape(-1)
                else:
                    self.runtime.actions[0][self._live_idx] = _to_float32(arr)
                return
        self._write_actions_checked(actions)

    def _fast_types(self, vals: list[Any]) -> bool:
        """Values whose types cannot hide a wrong dtype once stacked (bools
        stacked with ints become ints, so they take the checked path)."""
        if self.sizes.action_kind == "discrete":
            return set(map(type, vals)) <= _INT_TYPES
        return all(type(v) is np.ndarray and v.dtype.kind == "f" for v in vals)

    def _fast_ok(self, arr: np.ndarray) -> bool:
        sz = self.sizes
        n = len(self._live_names)
        if sz.action_kind == "discrete":
            return (
                arr.dtype.kind in "iu"
                and arr.shape in ((n,), (n, 1))
                and (n == 0 or (int(arr.min()) >= -(2**31) and int(arr.max()) < 2**31))
            )
        return arr.dtype.kind in "fiu" and arr.shape == (n, sz.action_dim)

    def check_action(self, agent: str, action: Any) -> None:
        """Raise `InvalidActionError` if ``action`` is not one ``agent`` may
        take now (unknown or finished agent, wrong shape or dtype, out of range,
        NaN); the AEC form checks each action as it comes."""
        self._agent_idx(agent)
        if agent not in self._live_names:
            raise InvalidActionError(
                f"{self.seer_model.name}: agent {agent!r} is done or the episode has not "
                "started, and cannot act")
        sz = self.sizes
        if self._structured:
            self._check_group_action(agent, action)
            return
        if sz.action_kind == "discrete":
            v = _discrete_value(agent, action, sz.action_n)
            if not 0 <= v < sz.action_n:
                raise InvalidActionError(
                    f"{self.seer_model.name}: action for {agent!r} is {v}, outside "
                    f"[0, {sz.action_n})")
        else:
            arr = _box_value(agent, action, sz.action_dim)
            if not np.isfinite(arr).all():
                raise InvalidActionError(
                    f"{self.seer_model.name}: action for {agent!r} is {arr.tolist()}: "
                    "actions must be finite")

    def _check_group_action(self, agent: str, action: Any) -> None:
        """check_action for an agent of a structured model: its group's kind,
        range and (unless ``enforce_masks=False``) its current mask."""
        i = self._agent_idx(agent)
        g = self.groups[self._group_of[i]]
        model = self.seer_model.name
        v = _group_value(agent, action, g)
        if g.action_kind == "box":
            if not np.isfinite(v).all():
                raise InvalidActionError(
                    f"{model}: action for {agent!r} is {v.tolist()}: actions must be finite")
            return
        parts = [int(v)] if g.action_kind == "discrete" else [int(x) for x in v]
        sizes = [g.action_n] if g.action_kind == "discrete" else list(g.nvec)
        mask = self.runtime.mask[0, i] if g.mask_len and self.runtime.enforce_masks else None
        off = 0
        for j, (x, n) in enumerate(zip(parts, sizes, strict=True)):
            what = "" if g.action_kind == "discrete" else f" component {j}"
            if not 0 <= x < n:
                raise InvalidActionError(
                    f"{model}: action for {agent!r}{what} is {x}, outside [0, {n})")
            if mask is not None and not mask[off + x]:
                raise InvalidActionError(
                    f"{model}: action for {agent!r}{what} is {x}, which its action mask "
                    f"forbids at step {self.runtime.step_index(0)}")
            off += n

    def _write_actions_checked(self, actions: Mapping[str, Any]) -> None:
        """Agent by agent, with a message naming the first bad agent or value.

        The actions' keys and a Mapping's methods are user code: what they
        raise (an Exception) becomes an InvalidActionError naming the agent."""
        model = self.seer_model.name
        names = self._live_names
        try:
            keys = list(actions)
        except Exception as exc:
            raise InvalidActionError(f"{model}: the actions' keys cannot be read: {exc!r}") \
                from exc
        # Keys of agents no longer live (finished earlier in the episode or in
        # the last step) are ignored, values and all, as PettingZoo's own envs
        # do: loops that act on every observation they got work.  Unknown
        # names are refused.
        for agent in keys:
            try:
                known = agent in self.agent_index
            except TypeError:  # unhashable
                known = False
            except Exception as exc:
                raise InvalidActionError(
                    f"{model}: the action key {agent!r} cannot be compared with the agents' "
                    f"names: {exc!r}") from exc
            if not known:
                raise UnknownAgentError(f"{model}: unknown agent {agent!r}")
        sz = self.sizes
        rows = []
        missing = []
        for agent in names:
            try:
                value = actions[agent]
            except KeyError:
                missing.append(agent)
                continue
            except Exception as exc:
                raise InvalidActionError(
                    f"{model}: reading the action for {agent!r} failed: {exc!r}") from exc
            if self._structured:
                rows.append(_group_value(agent, value, self.groups[self._group_of[
                    self.agent_index[agent]]]))
            elif sz.action_kind == "discrete":
                rows.append(_discrete_value(agent, value, sz.action_n))
            else:
                rows.append(_box_value(agent, value, sz.action_dim))
        if missing:
            raise InvalidActionError(
                f"{model}: missing actions for live agent(s) {missing[:5]}"
                + (" ..." if len(missing) > 5 else "")
            )
        if self._structured:  # each into its group's view of the buffer
            views = self.runtime.group_actions
            for a, row in zip(self._live_idx.tolist(), rows, strict=True):
                g = self.groups[self._group_of[a]]
                views[self._group_of[a]][0, a - g.first] = row
        elif rows:
            self.runtime.actions[0][self._live_idx] = np.asarray(rows)

    @exclusive
    def step(self, actions: Mapping[str, Any]) -> tuple[
        dict[str, np.ndarray],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """Apply one action per live agent and run the step's events; returns
        ``(observations, rewards, terminations, truncations, infos)`` for the
        agents live when the call started (those that finish in it report their
        flags, then leave [`agents`][seer_env.env.SeerParallelEnv.agents]).

        ``actions`` must name every live agent.  Actions for agents that are
        no longer live (finished earlier in the episode, or in the last step)
        are ignored, values and all, as PettingZoo's own envs do, so a loop
        keyed by the last observations works:

        ```python
        obs, infos = env.reset(seed=0)
        while env.agents:
            actions = {a: env.action_space(a).sample() for a in obs}
            obs, rewards, terminations, truncations, infos = env.step(actions)
        ```

        Unknown agent names, a missing live agent, wrong shapes or dtypes,
        out-of-range values and NaN raise `InvalidActionError` before
        anything changes."""
        self._check_open("step")
        if self._needs_reset:
            raise StateError(f"{self.seer_model.name}: call reset() before step()")
        if not self._live_names:
            self._step_after_the_end(actions)
            return {}, {}, {}, {}, {}
        self._write_actions(actions)
        # set before the native step: a KeyboardInterrupt anywhere from here
        # until Python has caught up leaves the env needing reset()
        self._interrupted = _CUT_SHORT_STEP
        try:
            self.runtime.step()
        except SeerError as exc:  # the runtime reports the truth itself (nothing changed,
            if _raised_by_seer(exc):  # or its instances need a reset and say so)
                self._interrupted = ""
            raise
        live_idx = self._live_idx
        out, ndone = self._outputs(live_idx)
        if ndone:
            _, _, term, trunc, _ = self._out_rows
            done = term[live_idx] | trunc[live_idx]
            self._live_idx = live_idx[~done]
            self._live_names = tuple(self._names[self._live_idx].tolist())
            self.agents = list(self._live_names)
        self._interrupted = ""
        if self.render_mode == "human":
            self._render()
        return out

    def _step_after_the_end(self, actions: Any) -> None:
        """A step once every agent finished: empty dicts for empty actions
        (wrappers that step until their own notion of the end, such as
        SuperSuit's black_death, get empty dicts back), else StateError."""
        name = self.seer_model.name
        if isinstance(actions, Mapping):
            try:
                if not actions:
                    return
                some = list(itertools.islice(iter(actions), 3))
            except Exception:
                some = []
            raise StateError(f"{name}: the episode is over (every agent finished); actions "
                             f"for {some} cannot be applied: call reset()")
        raise StateError(f"{name}: the episode is over; call reset()")

    def _outputs(self, live_idx: np.ndarray) -> tuple[tuple[dict, dict, dict, dict, dict], int]:
        """Dicts for the agents ``live_idx`` (alive when the call started: the
        agents of ``self._live_names``, which is only replaced after this
        call), and how many of them finished."""
        if self._structured:
            return self._group_outputs(live_idx)
        # one pass (in C where _fast is built), the observations' copy included
        return _kernels.dict_outputs(
            self._live_names, live_idx, self._out_spec)

    def _group_outputs(self, live_idx: np.ndarray) -> tuple[tuple[dict, dict, dict, dict, dict],
                                                              int]:
        """_outputs for a structured model: each agent's observation is its
        group's elements (with its action mask, PettingZoo's observation dict,
        for a masked group), its infos its group's values."""
        rt = self.runtime
        names = self._live_names
        obs: dict[str, Any] = {}
        infos: dict[str, dict[str, Any]] = {}
        keys = set(self.info_keys)
        rows = live_idx.tolist()
        ob, mk, info = rt.obs[0], rt.mask[0], rt.info[0]
        for name, a in zip(names, rows, strict=True):
            g = self.groups[self._group_of[a]]
            o = ob[a, :g.obs_dim].copy()
            obs[name] = {"observation": o, "action_mask": mk[a, :g.mask_len].astype(np.int8)} \
                if g.mask_len else o
            infos[name] = {k: float(info[a, j]) for j, k in enumerate(g.info_names) if k in keys}
        term, trunc = rt.terminated[0][live_idx], rt.truncated[0][live_idx]
        return (
            obs,
            dict(zip(names, rt.reward[0][live_idx].tolist(), strict=True)),
            _kernels.flags(list(names), term),
            _kernels.flags(list(names), trunc),
            infos,
        ), int((term | trunc).sum())

    @exclusive
    def state(self) -> np.ndarray:
        """The global state (a fresh float32 array in `state_space`), for a
        centralised critic; `StateError` before the first `reset()`."""
        self._check_open("state")
        if self._needs_reset:
            raise StateError(f"{self.seer_model.name}: call reset() before state()")
        return self.runtime.global_state(0)

    # -- snapshots ---------------------------------------------------------------

    @exclusive
    def snapshot(self) -> EnvSnapshot:
        """The env's whole state now, as an `EnvSnapshot` (opaque,
        picklable) that `restore` returns to, here or in a new env of the
        same model and configuration (any executor and thread count):

        ```python
        obs, infos = env.reset(seed=0)
        snap = env.snapshot()
        a = env.step(actions)
        env.restore(snap)
        b = env.step(actions)        # the same outputs as a, bit for bit
        ```

        Raises `StateError` before ``reset()`` and
        `ClosedError` after ``close()``."""
        return self._snapshot_of("parallel", (0,), {"live": self._live_names})

    @exclusive
    def restore(self, snap: EnvSnapshot) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Go back to ``snap`` (from `snapshot` of this env or of one of the
        same model and configuration); returns ``(observations, infos)`` of the
        live agents, as at that moment.  Steps from here are those the env
        made after the snapshot, bit for bit.  Another model, configuration or
        face, or damaged bytes, raise `SnapshotError`
        and leave the env unchanged; a never-reset env may be restored."""
        self._check_open("restore")
        self._check_parallel_snapshot(snap, "parallel")
        return self._restore_unchecked(snap)

    def _check_parallel_snapshot(self, snap: Any, face: str) -> None:
        """Everything of a ParallelEnv's snapshot checked, nothing changed: its
        live agents are this model's, each once, and those alive in its bytes."""
        self._check_snapshot(snap, face)
        name = self.seer_model.name
        live = snap.state.get("live")
        if len(snap.instances) != 1 or set(snap.state) != {"live"} or type(live) is not tuple:
            raise SnapshotError(f"{name}: the snapshot is malformed (a "
                                "ParallelEnv's holds one instance and its live agents)")
        idx = [self.agent_index.get(a) if type(a) is str else None for a in live]
        unknown = [a for a, i in zip(live, idx, strict=True) if i is None]
        if unknown:
            raise SnapshotError(f"{name}: the snapshot's live agents {unknown[:5]!r} are not "
                                "agents of this model")
        if len(set(live)) != len(live):
            twice = sorted((a for a, c in collections.Counter(live).items() if c > 1),
                           key=lambda a: self.agent_index[a])
            raise SnapshotError(f"{name}: the snapshot names live agent(s) {twice[:5]!r} more "
                                "than once")
        (alive,) = self._check_instances([(0, snap.instances[0])])
        if not np.array_equal(np.asarray(idx, dtype=np.intp), np.flatnonzero(alive)):
            want = tuple(self.possible_agents[i] for i in np.flatnonzero(alive))
            ended = [a for a in live if not alive[self.agent_index[a]]]
            have = set(live)
            left = [a for a in want if a not in have]
            raise SnapshotError(
                f"{name}: the snapshot's live agents do not agree with its runtime state: "
                + (f"{ended[:5]!r} live but finished there; " if ended else "")
                + (f"{left[:5]!r} alive there but not live; " if left else "")
                + ("" if ended or left else "not in the agents' order; ")
                + "it was changed after snapshot() made it")

    def _restore_unchecked(self, snap: EnvSnapshot) -> tuple[dict[str, np.ndarray],
                                                             dict[str, dict[str, Any]]]:
        cut = self._interrupted
        self._interrupted = _CUT_SHORT_RESTORE  # until Python has caught up
        try:
            self.runtime.restore(0, snap.instances[0])
        except SeerError as exc:  # checked already: out of memory, and nothing changed
            if _raised_by_seer(exc):
                self._interrupted = cut
            raise
        live: tuple[str, ...] = snap.state["live"]
        self._live_names = live
        self._live_idx = np.array([self.agent_index[a] for a in live], dtype=np.intp)
        self.agents = list(live)
        self._needs_reset = False
        self._interrupted = ""
        (obs, _, _, _, infos), _ = self._outputs(self._live_idx)
        return obs, infos

    @exclusive
    def render(self) -> np.ndarray | None:
        """The current frame: an ``(H, W, 3)`` uint8 array with
        ``render_mode="rgb_array"``; shown in a window with ``"human"`` (returns
        None); None with a warning without a render mode."""
        return self._render()

    def _render(self) -> np.ndarray | None:
        self._check_open("render")
        if self.render_mode is None:
            gymnasium.logger.warn("render() called with render_mode=None")
            return None
        if self._needs_reset:
            raise StateError(f"{self.seer_model.name}: call reset() before render()")
        assert self.seer_model.render is not None
        frame = self.seer_model.render(self)
        if self.render_mode == "rgb_array":
            return frame
        self._show(frame)
        return None

    def _show(self, frame: np.ndarray) -> None:
        """Show a frame in a window (pygame) where a display exists."""
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            if not getattr(self, "_warned_display", False):
                gymnasium.logger.warn("render_mode='human' but no display: frames not shown")
                self._warned_display = True
            return
        try:
            import pygame
        except ImportError:
            raise StateError("render_mode='human' needs pygame (pip install pygame)") from None
        if self._window is None:
            pygame.init()
            self._window = pygame.display.set_mode((frame.shape[1], frame.shape[0]))
            pygame.display.set_caption(self.seer_model.name)
        surf = pygame.surfarray.make_surface(np.transpose(frame, (1, 0, 2)))
        self._window.blit(surf, (0, 0))
        pygame.event.pump()
        pygame.display.flip()

    def close(self) -> None:
        """Free the env; safe at any time, from any thread; again: nothing.

        From the moment it is called every other call raises
        [`ClosedError`][seer_env.errors.ClosedError].  A call running on another
        thread ends normally first (close() waits for it).  On the thread
        inside a call -- a signal handler (``signal.signal(SIGINT, ...)``) or a
        callback, which Python runs between two bytecodes of that call --
        close() returns at once and the env is closed when the call ends; the
        call then raises ClosedError (or the exception it was raising, such as
        a KeyboardInterrupt)."""
        self._busy.close(close_now, self)

    def _close_now(self) -> None:
        if self._window is not None:
            import pygame

            pygame.display.quit()
            self._window = None
        self.runtime.close()
        self._needs_reset = True


def env_class(model: Model, base: type[SeerParallelEnv]) -> type[SeerParallelEnv]:
    """``base`` specialised for ``model``: a subclass named after it whose class
    attribute ``metadata`` is the model's (as PettingZoo envs declare it)."""
    meta = {
        "name": model.name,
        "render_modes": ["rgb_array", "human"] if model.render else [],
        "render_fps": model.render_fps,
        "is_parallelizable": True,
    }
    return type(f"{model.name}_ParallelEnv", (base,),
                {"metadata": meta, "__module__": base.__module__,
                 "__doc__": base.__doc__})


class SeerAECEnv(parallel_to_aec_wrapper):
    """The AEC form of a [`SeerParallelEnv`][seer_env.env.SeerParallelEnv] (PettingZoo's
    ``parallel_to_aec`` wrapper), checking each action when it is given, so a
    bad one is refused at once and leaves nothing behind.

    Its calls follow the ParallelEnv's rules (one at a time, through a gate of
    its own; ClosedError after ``close()``; StateError before ``reset()``, once
    the episode is over, or after a call cut short by Ctrl-C until the next
    ``reset()``).  A finished agent's only action is None (PettingZoo's
    convention: it removes the agent)."""

    def __init__(self, parallel_env: SeerParallelEnv) -> None:
        super().__init__(parallel_env)
        self.seer_model = parallel_env.seer_model
        self._busy = _gate.new_gate()
        self._interrupted = ""
        self._reset_done = False
        _gate.track(self)

    def _check_ready(self, what: str) -> None:
        if self._busy.closing or self.env._closed():
            raise ClosedError(f"{self.seer_model.name}: {what}() on a closed env")
        if not self._reset_done:
            raise StateError(f"{self.seer_model.name}: call reset() before {what}()")

    @exclusive
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if self.env._closed():
            raise ClosedError(f"{self.seer_model.name}: reset() on a closed env")
        cut = self._interrupted
        self._interrupted = _CUT_SHORT_RESET  # until this wrapper has caught up
        try:
            super().reset(seed=seed, options=options)
        except SeerError as exc:  # the ParallelEnv changed nothing of ours
            if _raised_by_seer(exc, _PZ_DIR):
                self._interrupted = cut
            raise
        self._reset_done = True
        self._interrupted = ""

    @exclusive
    def step(self, action: Any) -> None:
        self._check_ready("step")
        name = self.seer_model.name
        if not self.agents:
            raise StateError(f"{name}: the episode is over (every agent finished); call reset()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise InvalidActionError(
                    f"{name}: agent {agent!r} is done (terminated or truncated): its only "
                    f"action is None (which removes it), got {action!r}")
        else:
            self.env.check_action(agent, action)
        # set before anything changes: a KeyboardInterrupt from here until this
        # wrapper has caught up with the ParallelEnv leaves it needing reset()
        self._interrupted = _CUT_SHORT_STEP
        try:
            super().step(action)
        except SeerError as exc:  # nothing changed, or the ParallelEnv says what needs a reset
            if _raised_by_seer(exc, _PZ_DIR):
                self._interrupted = ""
            raise
        self._interrupted = ""

    @exclusive
    def snapshot(self) -> EnvSnapshot:
        """The AEC env's whole state (the ParallelEnv's, plus this wrapper's:
        whose turn it is, the actions collected so far this round, the last
        rewards, flags and infos) as an `EnvSnapshot`; see
        `SeerParallelEnv.snapshot`."""
        self._check_ready("snapshot")
        if self._interrupted:
            raise StateError(f"{self.seer_model.name}: {self._interrupted}; call reset() "
                             "before snapshot()")
        par = self.env.snapshot()
        mine = {k: copy.deepcopy(self.__dict__[k]) for k in _AEC_STATE if k in self.__dict__}
        return dataclasses.replace(par, face="aec", state={"parallel": par.state, "aec": mine})

    @exclusive
    def restore(self, snap: EnvSnapshot) -> None:
        """Go back to a `snapshot` of an AEC env of the same model and
        configuration (`SnapshotError` otherwise, with
        nothing changed)."""
        if self._busy.closing or self.env._closed():
            raise ClosedError(f"{self.seer_model.name}: restore() on a closed env")
        self.env._check_snapshot(snap, "aec")
        state = snap.state
        if not (isinstance(state.get("parallel"), dict) and isinstance(state.get("aec"), dict)
                and set(state["aec"]) <= set(_AEC_STATE)):
            raise SnapshotError(f"{self.seer_model.name}: the snapshot is malformed")
        par = dataclasses.replace(snap, face="parallel", state=state["parallel"])
        self.env._check_parallel_snapshot(par, "parallel")
        self._check_aec_state(state["aec"], state["parallel"]["live"])
        cut = self._interrupted
        self._interrupted = _CUT_SHORT_RESTORE  # until this wrapper has caught up
        try:
            self.env._restore_unchecked(par)
        except SeerError as exc:  # checked already: out of memory, and nothing changed
            if _raised_by_seer(exc):
                self._interrupted = cut
            raise
        for k in _AEC_STATE:
            if k in state["aec"]:
                setattr(self, k, copy.deepcopy(state["aec"][k]))  # restorable again
            else:
                self.__dict__.pop(k, None)
        self._reset_done = True
        self._interrupted = ""

    def _check_aec_state(self, aec: dict[str, Any], live: tuple[str, ...]) -> None:
        """SnapshotError naming the parts of a snapshot's AEC state that are not
        what this wrapper keeps: lists and dicts of this model's agents (each
        once), whose turn it is, every live agent among ``agents``."""
        names = self.env.agent_index

        def agent(a: Any) -> bool:
            return type(a) is str and a in names

        def listed(v: Any) -> bool:
            return type(v) is list and all(map(agent, v)) and len(set(v)) == len(v)

        bad: list[str] = [k for k in ("agents", "_live_agents", "new_agents")
                          if k in aec and not listed(aec[k])]
        bad += [k for k in ("terminations", "truncations", "rewards", "_cumulative_rewards",
                            "infos", "_observations", "_actions")
                if k in aec and not (type(aec[k]) is dict and all(map(agent, aec[k])))]
        bad += [k for k in ("terminations", "truncations") if k in aec and k not in bad
                and not all(type(v) is bool for v in aec[k].values())]
        if "agent_selection" in aec and not agent(aec["agent_selection"]):
            bad.append("agent_selection")
        if aec.get("_skip_agent_selection") is not None and not agent(
                aec["_skip_agent_selection"]):
            bad.append("_skip_agent_selection")
        sel = aec.get("_agent_selector")
        if sel is not None and not listed(getattr(sel, "agent_order", None)):
            bad.append("_agent_selector")
        if "agents" not in bad and not set(live) <= set(aec.get("agents", live)):
            bad.append("agents (a live agent is missing)")
        if bad:
            raise SnapshotError(f"{self.seer_model.name}: the snapshot's AEC state is "
                                f"malformed: {', '.join(bad)}")

    def _observe(self, agent: Any) -> Any:
        self.env._agent_idx(agent)  # unknown: InvalidActionError
        try:
            return self._observations[agent]
        except KeyError:
            raise StateError(f"{self.seer_model.name}: agent {agent!r} finished and was "
                             "removed: it has no observation now") from None

    @exclusive
    def observe(self, agent: Any) -> Any:
        self._check_ready("observe")
        return self._observe(agent)

    @exclusive
    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._check_ready("last")
        agent = self.agent_selection
        if agent not in self._cumulative_rewards:
            raise StateError(f"{self.seer_model.name}: the episode is over (every agent "
                             "finished and was removed); call reset()")
        return (self._observe(agent) if observe else None, self._cumulative_rewards[agent],
                self.terminations[agent], self.truncations[agent], self.infos[agent])

    @exclusive
    def state(self) -> np.ndarray:
        self._check_ready("state")
        return self.env.state()

    @exclusive
    def render(self) -> Any:
        self._check_ready("render")
        return self.env.render()

    def agent_iter(self, max_iter: int = 2**63) -> Any:
        self._check_ready("agent_iter")
        return super().agent_iter(max_iter)

    def close(self) -> None:
        """Close the ParallelEnv under it; the rules of `SeerParallelEnv.close`."""
        self._busy.close(close_now, self)

    def _close_now(self) -> None:
        self.env.close()


#: The AEC wrapper's episode state (PettingZoo's parallel_to_aec_wrapper keeps
#: it in these attributes), which its snapshots hold.
_AEC_STATE = ("_observations", "infos", "agents", "_live_agents", "_actions",
              "_agent_selector", "agent_selection", "terminations", "truncations", "rewards",
              "_cumulative_rewards", "new_agents", "new_values", "_skip_agent_selection")


class _NotResetError(StateError, AttributeError):
    """An AEC env's episode attribute read before reset() (an AttributeError
    too, so that ``hasattr`` and ``getattr(env, name, default)`` work)."""


_AEC_EPISODE_ATTRS = frozenset(
    {"rewards", "terminations", "truncations", "infos", "agent_selection", "num_agents",
     "agents"})


class _SeerAECIterator(AECOrderEnforcingIterator):
    def __next__(self) -> Any:
        agent = AECIterator.__next__(self)
        if not self.env._has_updated:
            raise StateError(f"{self.env.env.seer_model.name}: call step() (or reset()) for "
                             "each agent of a loop over agent_iter()")
        self.env._has_updated = False
        return agent


class _SeerAECIterable(AECOrderEnforcingIterable):
    def __iter__(self) -> Any:
        return _SeerAECIterator(self.env, self.max_iter)


class _SeerOrderEnforcingWrapper(OrderEnforcingWrapper):
    """PettingZoo's order-enforcing wrapper with seer_env's errors: StateError
    (not AssertionError or AttributeError) before reset(), and StateError (not
    a warning and nothing done) for a step once the episode is over."""

    def _name(self) -> str:
        return str(self.env.seer_model.name)

    def __getattr__(self, name: str) -> Any:
        if name in _AEC_EPISODE_ATTRS and not self._has_reset:
            raise _NotResetError(f"{self._name()}: {name} cannot be read before reset()")
        return super().__getattr__(name)

    def _check_reset(self, what: str) -> None:
        if not self._has_reset:
            self.env._check_ready(what)  # ClosedError first, then StateError

    def step(self, action: Any) -> None:
        self._check_reset("step")
        self._has_updated = True
        self.env.step(action)

    def observe(self, agent: Any) -> Any:
        self._check_reset("observe")
        return self.env.observe(agent)

    def last(self, observe: bool = True) -> Any:
        self._check_reset("last")
        return self.env.last(observe)

    def state(self) -> np.ndarray:
        self._check_reset("state")
        return self.env.state()

    def render(self) -> Any:
        self._check_reset("render")
        return self.env.render()

    def agent_iter(self, max_iter: int = 2**63) -> Any:
        self.env._check_ready("agent_iter")
        return _SeerAECIterable(self, max_iter)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.env.reset(seed=seed, options=options)  # refused or failed: not reset
        self._has_reset = True
        self._has_updated = True

    def snapshot(self) -> EnvSnapshot:
        """The AEC env's state (`SeerAECEnv.snapshot`)."""
        self._check_reset("snapshot")
        return self.env.snapshot()

    def restore(self, snap: EnvSnapshot) -> None:
        """Go back to ``snap`` (`SeerAECEnv.restore`); as after a reset, the
        order of calls starts afresh."""
        self.env.restore(snap)  # refused: nothing changed
        self._has_reset = True
        self._has_updated = True


def aec_env(par_env: SeerParallelEnv) -> Any:
    """``par_env`` as a PettingZoo AEC env (order-enforcing, actions checked)."""
    return _SeerOrderEnforcingWrapper(SeerAECEnv(par_env))


def _rebuild_vector_env(ref: Callable[[], Model], args: dict[str, Any]) -> SeerVectorEnv:
    """An unpickled batched env: a fresh one made with the same arguments."""
    env: SeerVectorEnv = ref().vector_env(**args)
    return env


def _rebuild_parallel_env(ref: Callable[[], Model], config: dict[str, Any]) -> SeerParallelEnv:
    """An unpickled env: a fresh one of the same configuration, of the model
    ``ref()`` (the model's picklable reference, `Model.reference`)."""
    env: SeerParallelEnv = ref().parallel_env(**config)
    return env


def _as_array(agent: str, a: Any) -> np.ndarray:
    """``np.asarray(a)``; what it raises (ragged nesting, an ``__array__`` that
    fails: the value's own code) as an InvalidActionError naming the agent."""
    try:
        return np.asarray(a)
    except Exception as exc:
        raise InvalidActionError(
            f"action for {agent!r} cannot be read as an array: {exc!r}") from exc


def _discrete_value(agent: str, a: Any, n: int) -> int:
    arr = _as_array(agent, a)
    if arr.shape not in ((), (1,)):
        raise InvalidActionError(
            f"action for {agent!r} must be a scalar int, got shape {arr.shape}"
        )
    if arr.dtype.kind not in "iu":  # bool, timedelta, float, complex, object: no
        raise InvalidActionError(
            f"action for {agent!r} must be an integer, got dtype {arr.dtype} ({a!r})"
        )
    v = int(arr.reshape(()))
    if not -(2**31) <= v < 2**31:
        # The range check against [0, n) happens in C; this only keeps the
        # value representable in the runtime's int32 buffer.
        raise InvalidActionError(f"action for {agent!r} is {v}, outside [0, {n})")
    return v


class MultiDiscreteMasked(gymnasium.spaces.MultiDiscrete):
    """A ``MultiDiscrete`` whose `sample` also takes the mask as the
    agents' observations carry it: one flat ``int8`` array, every component's
    choices one after another (the layout MaskablePPO and RLlib's action
    masking read).  Gymnasium's own form, a tuple of one mask per component,
    works as well; everything else is a plain ``MultiDiscrete``:

    ```python
    space = env.action_space("runner_0")      # MultiDiscreteMasked([3 2])
    space.sample(mask=obs["runner_0"]["action_mask"])   # 5 bytes: 3 + 2
    ```
    """

    def sample(self, mask: Any = None, *args: Any, **kwargs: Any) -> np.ndarray:
        nvec = self.nvec
        if isinstance(mask, np.ndarray) and nvec.ndim == 1 and mask.shape == (int(nvec.sum()),):
            mask = tuple(np.split(mask.astype(np.int8), np.cumsum(nvec)[:-1].tolist()))
        return super().sample(mask, *args, **kwargs)


def _group_action_space(g: Any) -> gymnasium.Space:
    """The action space of a group (``seer_env._runtime.Group``)."""
    if g.action_kind == "discrete":
        return gymnasium.spaces.Discrete(g.action_n)
    if g.action_kind == "multi_discrete":
        space = np.array(g.nvec, dtype=np.int64)
        return MultiDiscreteMasked(space) if g.mask_len else gymnasium.spaces.MultiDiscrete(space)
    return gymnasium.spaces.Box(g.action_low, g.action_high, shape=(g.action_dim,),
                                dtype=np.float32)


def _group_value(agent: str, a: Any, g: Any) -> Any:
    """One agent's action as its group's buffer row takes it (ranges and masks
    are checked by the runtime, before anything changes)."""
    if g.action_kind == "discrete":
        return _discrete_value(agent, a, g.action_n)
    if g.action_kind == "box":
        return _box_value(agent, a, g.action_dim)
    arr = _as_array(agent, a)
    if arr.shape != (g.action_dim,):
        raise InvalidActionError(
            f"action for {agent!r} must have shape ({g.action_dim},) (one choice per "
            f"component of MultiDiscrete{list(g.nvec)}), got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise InvalidActionError(
            f"action for {agent!r} must be integers, got dtype {arr.dtype} ({a!r})")
    if arr.size and (int(arr.min()) < -(2**31) or int(arr.max()) >= 2**31):
        raise InvalidActionError(f"action for {agent!r} is {arr.tolist()}, outside "
                                 f"MultiDiscrete{list(g.nvec)}")
    return arr.astype(np.int32)


def _box_value(agent: str, a: Any, dim: int) -> np.ndarray:
    arr = _as_array(agent, a)
    if arr.shape != (dim,):
        raise InvalidActionError(
            f"action for {agent!r} must have shape ({dim},), got {arr.shape}"
        )
    if arr.dtype.kind not in "fiu":  # bool, timedelta, complex, object: no
        raise InvalidActionError(f"action for {agent!r} has dtype {arr.dtype}; need float")
    return _to_float32(arr)


_F32_MAX = float(np.finfo(np.float32).max)
_INT_TYPES = {int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64}


def _to_float32(arr: np.ndarray) -> np.ndarray:
    """Cast to float32 keeping finite values finite (C clips them to the Box and
    rejects NaN/inf, so a huge finite float64 must not turn into inf here)."""
    arr = np.asarray(arr, dtype=np.float64)
    return np.where(np.isfinite(arr), np.clip(arr, -_F32_MAX, _F32_MAX), arr).astype(np.float32)


def autoreset_mode_of(mode: Any) -> AutoresetMode:
    """Gymnasium's `AutoresetMode` from the enum itself, its
    value (``"NextStep"``) or its name in any case (``"same_step"``)."""
    if isinstance(mode, AutoresetMode):
        return mode
    if isinstance(mode, str):
        for m in AutoresetMode:
            if mode in (m.value, m.name) or mode.upper() == m.name:
                return m
    raise ConfigError(
        f"autoreset_mode={mode!r} must be a gymnasium.vector.AutoresetMode or one of "
        f"{[m.name.lower() for m in AutoresetMode]}"
    )


class SeerVectorEnv(_SeerEnvCommon):
    """``num_envs`` independent instances stepped together, as arrays.

    Shapes (``B = num_envs``, ``A = num_agents``): observations ``(B, A, obs_dim)``;
    rewards, terminations, truncations ``(B, A)``.  Actions: ``(B, A)`` ints or
    ``(B, A, dim)`` floats; entries of agents that are not alive are ignored;
    finite Box values outside the bounds are clipped to them, NaN/inf and
    out-of-range discrete values raise [`InvalidActionError`][seer_env.errors.InvalidActionError]
    before anything changes.

    ``infos`` is a dict of arrays: ``infos["alive"]`` ``(B, A)`` says which agents
    act in the next step (the others' actions are ignored); ``infos["active"]``
    ``(B, A)`` which rows of this call's outputs are real (the agent was alive
    when the step started, or its instance was just reset: every other row is
    zeros); and one ``(B, A)`` float64 array per model info value
    (``venv.info_names``).  An agent reports ``terminated``/``truncated`` once, in
    the step where it finishes; an instance is *finished* when no agent is alive.

    Autoreset follows Gymnasium's `AutoresetMode`
    (``autoreset_mode=``; ``venv.metadata["autoreset_mode"]`` holds the enum):

    * ``NEXT_STEP`` (default): the step after an instance finishes resets it
      instead of stepping it (its actions are ignored) and returns its reset
      observations with zero rewards and no flags.
    * ``SAME_STEP``: an instance that finishes is reset in the same call: the
      returned observations (and ``alive``, ``active``, info values) are the
      reset ones, rewards and flags those of the final step, and
      ``infos["final_obs"]`` ``(B, A, obs_dim)`` / ``infos["final_info"]`` (a
      dict of ``(B, A)`` arrays) hold the final step's, with the ``(B,)`` masks
      ``infos["_final_obs"]`` / ``infos["_final_info"]`` marking the instances
      that finished (rows of the others are zeros).
    * ``DISABLED``: nothing resets by itself; stepping a finished instance
      raises [`StateError`][seer_env.errors.StateError].  Reset chosen instances with
      ``reset(options={"reset_mask": mask})`` (``mask`` a ``(B,)`` bool array).

    Seeds: ``reset(seed=s)`` gives instance ``i`` the seed ``s + i``; a list gives
    one seed per instance.  An instance reset later (autoreset, or a masked
    reset without a seed) continues with its previous seed ``+ num_envs``; one
    restored from a snapshot keeps the sequence it had (``+`` the ``num_envs``
    of the batch it was taken in), so it continues as it would have there.

    Example:

    ```python
    import numpy as np
    from seer_env.envs import phold_v0
    venv = phold_v0.vector_env(4, num_entities=16, max_cycles=10,
                               autoreset_mode="same_step")
    obs, infos = venv.reset(seed=0)
    obs, rew, term, trunc, infos = venv.step(np.zeros((4, 16), np.int64))
    ```

    Returned arrays are fresh copies, safe to keep.  With ``copy=False``
    (zero-copy mode) observations, rewards, flags and the ``alive``/``active``
    masks are read-only views of buffers that the next ``step``/``reset``
    overwrites: copy what you keep.

    **Asynchronous stepping** (EnvPool's ``send``/``recv``): `send` hands
    the actions of some instances to a background thread and returns at once;
    they step on the runtime's pool while your Python (a policy's forward pass)
    runs; `recv` returns ``batch_size`` finished instances (constructor
    option, default ``num_envs``), with their ids in ``infos["env_id"]``.  Each
    instance's outputs are those a synchronous `step` would give it, bit
    for bit, whatever the order of sends and receives.  The double-buffering
    loop (``examples/async_rollout.py``):

    ```python
    venv = pcs_v0.vector_env(8, batch_size=4, width=8, height=8)
    venv.async_reset(seed=0)
    for _ in range(100):
        obs, rew, term, trunc, infos = venv.recv()    # 4 instances
        ids = infos["env_id"]
        venv.send(policy(obs), ids)                   # (4, A) actions
    ```
    """

    def __init__(
        self,
        model: Model,
        num_envs: int,
        copy: bool = True,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        batch_size: int | None = None,
        **config: Any,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
            raise ConfigError(f"num_envs={num_envs!r} must be a positive int")
        if num_envs < 1:
            raise ConfigError(f"num_envs={num_envs} must be >= 1")
        if batch_size is None:
            batch_size = int(num_envs)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or not 1 <= batch_size <= num_envs:
            raise ConfigError(
                f"batch_size={batch_size!r} must be an int in [1, num_envs={num_envs}]")
        self.autoreset_mode = autoreset_mode_of(autoreset_mode)
        self._init_args = {"num_envs": int(num_envs), "copy": copy,
                           "autoreset_mode": self.autoreset_mode, "batch_size": batch_size,
                           **config}
        self._setup(model, int(num_envs), config)
        self._grouped = len(self.groups) > 1
        if self._grouped and self.autoreset_mode is AutoresetMode.SAME_STEP:
            self.runtime.close()
            raise ConfigError(
                f"{model.name}: autoreset_mode=SAME_STEP is not supported for a model with "
                "agent groups yet; use NEXT_STEP (the default) or DISABLED")
        self.num_envs = int(num_envs)
        self.num_agents = self.sizes.num_agents
        self.copy = bool(copy)
        self.metadata: dict[str, Any] = {
            "name": model.name,
            "autoreset_mode": self.autoreset_mode,
        }
        self.single_observation_space = self._obs_space
        self.single_action_space = self._act_space
        #: per group (a dict keyed by group name, as TorchRL and BenchMARL group
        #: agents): one agent's observation Box and action space
        self.single_observation_spaces = {
            g.name: sp["observation"] if isinstance(sp, gymnasium.spaces.Dict) else sp
            for g, sp in zip(self.groups, self._group_obs_spaces, strict=True)}
        self.single_action_spaces = {g.name: sp for g, sp in
                                     zip(self.groups, self._group_act_spaces, strict=True)}
        if self._structured:  # a masked group's observation is the Box alone here
            self.single_observation_space = self.single_observation_spaces[self.groups[0].name]
        self._needs_reset = True
        self._autoreset = self._zeros("the autoreset flags", (self.num_envs,), bool)
        self._next_seeds: list[int] = [0] * self.num_envs
        # what each instance's seed advances by: num_envs, or the num_envs of the
        # batch a restored instance's snapshot came from (its own sequence)
        self._seed_strides: list[int] = [self.num_envs] * self.num_envs
        # SAME_STEP keeps the final step's rewards and flags here (the reset
        # that follows overwrites the runtime's buffers).
        B, A = self.num_envs, self.num_agents
        self._final = (self._zeros("the final-step rewards", (B, A), np.float32),
                       self._zeros("the final-step terminations", (B, A), bool),
                       self._zeros("the final-step truncations", (B, A), bool))
        self._fin = self._zeros("the finished-instance flags", (B,), bool)  # scratch
        self._any_autoreset = False
        rt = self.runtime
        self._act_buf = rt.actions  # (B, A) int32 or (B, A, dim) float32
        # the buffers a call's outputs come from, for vec_outputs
        # (a model with groups: its infos are per group, added by _structure)
        self._bufs = (rt.obs, rt.reward, rt.terminated, rt.truncated, rt.alive, rt.active,
                      np.zeros((B, A, 0)) if self._grouped else rt.info,
                      () if self._grouped else tuple(self.info_names))
        #: instances `recv` returns at a time (EnvPool's ``batch_size``)
        self.batch_size = int(batch_size)
        #: every instance's id (EnvPool's ``all_env_ids``)
        self.all_env_ids = np.arange(B, dtype=np.int32)
        # the asynchronous API: instances sent and not yet received, and the
        # background stepper (made by the first send)
        self._pending = self._zeros("the pending-instance flags", (B,), bool)
        self._n_pending = 0
        self._stepper: _async.Stepper | None = None

    # -- outputs -------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, tuple[Any, dict[str, Any]]]:
        """Pickle as (the model's reference, the constructor's arguments), as
        the ParallelEnv does: the copy is a fresh env of the same
        configuration and batch (call ``reset`` on it).  A process-based
        wrapper (Ray, a subprocess vector) ships it this way; its instances'
        state travels with [`snapshot`][seer_env.env.SeerVectorEnv.snapshot]."""
        m = self.seer_model
        ref = m.reference or functools.partial(type(m), m.folder, m.name)
        return (_rebuild_vector_env, (ref, dict(self._init_args)))

    def _arr(self, a: np.ndarray) -> np.ndarray:
        return _kernels.view_or_copy(a, self.copy)

    def _infos(self) -> dict[str, Any]:
        return _kernels.batched_infos(self._bufs, self.copy)

    @property
    def state_space(self) -> gymnasium.Space:
        """The global state's space, one instance's (``state()`` has one row per
        instance)."""
        return self._state_space

    @property
    def grouped(self) -> bool:
        """Whether the model has several agent groups (then actions, outputs and
        infos are dicts keyed by group name)."""
        return self._grouped

    @property
    def structured(self) -> bool:
        """Whether the model has agent groups, action masks or multi-discrete
        actions (then actions and outputs follow the groups; see the class
        docstring)."""
        return self._structured

    @property
    def alive(self) -> np.ndarray:
        """``(B, A)`` copy of the agents alive now (those whose next action counts)."""
        if self._closed():  # closed, or closing (waiting for a call on another thread)
            raise ClosedError(f"{self.seer_model.name}: alive on a closed env")
        if self._n_pending:
            raise self._pending_error("alive")
        return self.runtime.alive.copy()

    # -- reset ---------------------------------------------------------------

    def _instance_seeds(self, seed: Any) -> list[int]:
        if isinstance(seed, np.ndarray) and seed.ndim == 0:
            seed = seed[()]  # a NumPy scalar array: its value
        if seed is None or isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            return self._seeds(seed, self.num_envs)
        if isinstance(seed, (list, tuple, np.ndarray)):
            if len(seed) != self.num_envs:
                raise ConfigError(f"seed list has {len(seed)} entries; need {self.num_envs}")
            fresh = self._seeds(None, self.num_envs)
            return [fresh[i] if s is None else _seed_value(s) for i, s in enumerate(seed)]
        raise ConfigError(f"seed={seed!r} must be an int, a list of {self.num_envs} ints or None")

    @exclusive
    def reset(
        self, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every instance, or those in ``options["reset_mask"]`` (a ``(B,)`` bool array).

        Returns ``(obs, infos)`` for all instances (rows of the others unchanged).
        With sends in flight (`send`) it first waits for the native call
        that runs; a full reset then drops every send not received yet, a
        masked one refuses instances in flight
        (`AsyncStateError`) and leaves the others'.
        """
        rt = self.runtime
        self._check_open("reset")
        _check_options(options, ("reset_mask",))
        mask = None if options is None else options.get("reset_mask")
        cut = self._interrupted
        if mask is None:
            seeds = self._instance_seeds(seed)
            if self._stepper is not None:
                self._stepper.drain()  # a call in flight ends first (Ctrl-C: nothing changed)
            self._interrupted = _CUT_SHORT_RESET  # until Python has caught up
            self._drop_pending()  # every instance restarts: sends not received are dropped
            try:
                rt.reset(seeds)
            except SeerError as exc:
                if _raised_by_seer(exc):  # the runtime reports the truth itself
                    self._interrupted = cut
                raise
            self._next_seeds = [(s + self.num_envs) & _MAX_SEED for s in seeds]
            self._seed_strides = [self.num_envs] * self.num_envs
            self._autoreset[:] = False
            self._any_autoreset = False
            self._needs_reset = False
            cut = ""  # every instance restarted: nothing is left of an interrupted call
        else:
            mask = np.asarray(mask)
            if mask.dtype != np.bool_ or mask.shape != (self.num_envs,):
                raise ConfigError(
                    f"options['reset_mask'] must be a bool array of shape ({self.num_envs},), "
                    f"got {mask.dtype} {mask.shape}"
                )
            if self._needs_reset:
                raise StateError(
                    f"{self.seer_model.name}: the first reset() must reset every instance"
                )
            if (mask & self._pending).any():
                raise AsyncStateError(
                    f"{self.seer_model.name}: reset() of instance(s) "
                    f"{np.flatnonzero(mask & self._pending).tolist()} sent with send() and not "
                    "received yet: recv() them first (or reset() every instance)")
            given = None if seed is None else self._instance_seeds(seed)
            if self._stepper is not None:
                self._stepper.drain()  # one native call at a time: the others' go first
            self._interrupted = _CUT_SHORT_RESET  # until Python has caught up
            seeds = self._take_seeds(mask) if given is None else given
            if given is not None:
                for i in np.flatnonzero(mask):
                    self._next_seeds[i] = (seeds[i] + self.num_envs) & _MAX_SEED
                    self._seed_strides[i] = self.num_envs
            try:
                rt.reset(seeds, mask)
            except SeerError as exc:
                if _raised_by_seer(exc):
                    self._interrupted = cut
                raise
            self._autoreset[mask] = False
            self._any_autoreset = bool(self._autoreset.any())
        (obs, _, _, _, infos), _ = _kernels.vec_outputs(self._bufs, self.copy, None)
        # a masked reset leaves the mark of an interrupted call (the other
        # instances' Python state may be behind): only a full reset clears it
        self._interrupted = cut
        if self._structured:
            obs, _, _, _, infos = self._structure((obs, None, None, None, infos))
        return obs, infos

    def _take_seeds(self, mask: np.ndarray) -> list[int]:
        """Seeds for the instances in ``mask`` (their next seeds), advancing them."""
        seeds = [0] * self.num_envs
        for i in np.flatnonzero(mask):
            seeds[i] = self._next_seeds[i]
            self._next_seeds[i] = (self._next_seeds[i] + self._seed_strides[i]) & _MAX_SEED
        return seeds

    # -- step ----------------------------------------------------------------

    def _write_group_actions(self, actions: Any, rows: np.ndarray | None = None) -> None:
        """Actions of a structured model: one array per group (a dict keyed by
        group name; a model with one group also takes the array itself),
        ``(B, count)`` ints (discrete), ``(B, count, components)`` ints
        (multi-discrete) or ``(B, count, dim)`` floats (box).  Every array is
        checked before any is written.  ``rows``: the instances the actions are
        for (`send`; ``B`` is their number), else all."""
        names = [g.name for g in self.groups]
        if not self._grouped and not isinstance(actions, Mapping):
            actions = {names[0]: actions}
        if not isinstance(actions, Mapping):
            raise InvalidActionError(
                f"{self.seer_model.name}: actions must be a dict group -> array with the "
                f"groups {names}, got {type(actions).__name__}")
        try:
            keys = list(actions)
        except Exception as exc:
            raise InvalidActionError(f"the actions' keys cannot be read: {exc!r}") from exc
        if sorted(map(str, keys)) != sorted(names) or len(keys) != len(names):
            raise InvalidActionError(
                f"{self.seer_model.name}: actions must have one array per group {names}, got "
                f"keys {keys}")
        staged = []
        for g in self.groups:
            try:
                arr = np.asarray(actions[g.name])
            except Exception as exc:
                raise InvalidActionError(
                    f"actions of group {g.name!r} cannot be read as an array: {exc!r}") from exc
            B = self.num_envs if rows is None else len(rows)
            want = (B, g.count) if g.action_kind == "discrete" else (B, g.count, g.action_dim)
            if g.action_kind == "box":
                if arr.dtype.kind not in "fiu":
                    raise InvalidActionError(
                        f"actions of group {g.name!r} must be real numbers, got {arr.dtype}")
            elif arr.dtype.kind not in "iu":
                raise InvalidActionError(
                    f"actions of group {g.name!r} must be integers, got dtype {arr.dtype}")
            if arr.shape != want:
                raise InvalidActionError(
                    f"actions of group {g.name!r} must have shape {want}, got {arr.shape}")
            if g.action_kind != "box" and arr.size and (
                    arr.min() < -(2**31) or arr.max() >= 2**31):
                raise InvalidActionError(f"actions of group {g.name!r} out of int32 range")
            staged.append(_to_float32(arr) if g.action_kind == "box" else arr)
        for view, arr in zip(self.runtime.group_actions, staged, strict=True):
            if rows is None:
                view[...] = arr
            else:
                view[rows] = arr

    def _write_actions(self, actions: Any, rows: np.ndarray | None = None) -> None:
        if self._structured:
            self._write_group_actions(actions, rows)
            return
        # the common case, an array of the right shape and kind: one pass in C
        if rows is None and _kernels.copy_actions(actions, self._act_buf):
            return
        sz = self.sizes
        try:
            arr = np.asarray(actions)
        except Exception as exc:  # ragged nested sequences, an __array__ that fails
            raise InvalidActionError(f"actions cannot be read as an array: {exc!r}") from exc
        B = self.num_envs if rows is None else len(rows)
        if sz.action_kind == "discrete":
            want: tuple[int, ...] = (B, sz.num_agents)
            if arr.dtype.kind not in "iu":  # not bool, timedelta, complex, object
                raise InvalidActionError(f"actions must be integers, got dtype {arr.dtype}")
        else:
            want = (B, sz.num_agents, sz.action_dim)
            if arr.dtype.kind not in "fiu":
                raise InvalidActionError(f"actions must be real numbers, got dtype {arr.dtype}")
        if arr.shape != want:
            raise InvalidActionError(f"actions must have shape {want}, got {arr.shape}")
        if sz.action_kind == "discrete" and arr.size and (
            arr.min() < -(2**31) or arr.max() >= 2**31
        ):
            raise InvalidActionError("discrete actions out of int32 range")
        val = arr if sz.action_kind == "discrete" else _to_float32(arr)
        if rows is None:
            self.runtime.actions[:] = val
        else:
            self.runtime.actions[rows] = val

    @exclusive
    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every instance (see the class docstring for autoreset)."""
        rt = self.runtime
        if rt.closed:
            self._check_open("step")
        if self._needs_reset:
            raise StateError(f"{self.seer_model.name}: call reset() before step()")
        if self._n_pending:
            raise self._pending_error("step")
        mode = self.autoreset_mode
        if mode is AutoresetMode.DISABLED and self._finished(rt, self._fin):
            raise StateError(
                f"{self.seer_model.name}: instance(s) {np.flatnonzero(self._fin).tolist()} "
                "finished; with autoreset_mode=DISABLED reset them with "
                "reset(options={'reset_mask': mask}) before stepping"
            )
        self._write_actions(actions)
        # set before the native step: a KeyboardInterrupt anywhere from here
        # until Python has caught up leaves the env needing reset()
        self._interrupted = _CUT_SHORT_STEP
        try:
            if mode is AutoresetMode.NEXT_STEP and not self._any_autoreset:
                # the common case (_step_and_autoreset's first branch, inlined): every
                # instance steps; the outputs and the finished instances in one call
                rt.step()
                out, n = _kernels.vec_outputs(self._bufs, self.copy, self._autoreset)
                self._any_autoreset = n > 0
            else:
                out = self._step_and_autoreset(rt, mode)
        except SeerError as exc:  # the runtime reports the truth itself (nothing changed,
            if _raised_by_seer(exc):  # or its instances need a reset and say so)
                self._interrupted = ""
            raise
        self._interrupted = ""
        if self._structured:
            return self._structure(out)
        return out

    def _structure(self, out: tuple[Any, ...], rows: np.ndarray | None = None
                   ) -> tuple[Any, ...]:
        """A structured model's outputs: the action masks in ``infos`` and, for a
        model with groups, every array split by group (dicts keyed by group
        name; each group's own observation and info elements).  ``rows``: the
        instances ``out`` holds (`recv`), else all of them."""
        obs, rew, term, trunc, infos = out
        rt = self.runtime
        sz = self.sizes
        if not self._grouped:
            if sz.mask_dim:
                infos["action_mask"] = self._arr(rt.mask) if rows is None else rt.mask[rows]
            return obs, rew, term, trunc, infos

        def split(a: Any, dim: str | None = None) -> dict[str, Any] | None:
            if a is None:
                return None
            return {g.name: a[:, g.first:g.first + g.count] if dim is None else
                    a[:, g.first:g.first + g.count, :getattr(g, dim)] for g in self.groups}

        grouped: dict[str, Any] = {"alive": split(infos["alive"]),
                                   "active": split(infos["active"])}
        if sz.mask_dim:
            mask = self._arr(rt.mask) if rows is None else rt.mask[rows]
            grouped["action_mask"] = {g.name: mask[:, g.first:g.first + g.count, :g.mask_len]
                                      for g in self.groups if g.mask_len}
        info = rt.info[rows] if rows is not None else rt.info.copy() if self.copy \
            else self._arr(rt.info)
        for g in self.groups:
            grouped[g.name] = {k: info[:, g.first:g.first + g.count, j]
                               for j, k in enumerate(g.info_names)}
        return split(obs, "obs_dim"), split(rew), split(term), split(trunc), grouped

    def _step_and_autoreset(
        self, rt: Runtime, mode: AutoresetMode
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if mode is AutoresetMode.NEXT_STEP:
            if not self._any_autoreset:
                rt.step()
            else:
                stepping = ~self._autoreset
                if stepping.any():
                    rt.step(stepping)
                rt.reset(self._take_seeds(self._autoreset), self._autoreset)
            # the outputs and the finished instances in one call
            out, n = _kernels.vec_outputs(self._bufs, self.copy, self._autoreset)
            self._any_autoreset = n > 0
            return out
        rt.step()
        finished = self._fin
        out, n = _kernels.vec_outputs(
            self._bufs, self.copy, None if mode is AutoresetMode.DISABLED else finished)
        if n == 0:
            return out
        finished = finished.copy()
        # SAME_STEP with finished instances: keep the final step, then reset them.
        rew, term, trunc = self._final
        np.copyto(rew, rt.reward)
        np.copyto(term, rt.terminated)
        np.copyto(trunc, rt.truncated)
        keep = ~finished
        final_obs = rt.obs.copy()
        final_obs[keep] = 0.0
        final_info = self._infos()
        final_info = {k: np.where(keep[:, None], np.zeros_like(v), v)
                      for k, v in final_info.items()}
        rt.reset(self._take_seeds(finished), finished)
        infos = self._infos()
        infos["final_obs"] = final_obs
        infos["_final_obs"] = finished
        infos["final_info"] = final_info
        infos["_final_info"] = finished.copy()
        return self._arr(rt.obs), self._arr(rew), self._arr(term), self._arr(trunc), infos

    # -- asynchronous stepping (EnvPool's send / recv) --------------------------

    def _pending_error(self, what: str) -> AsyncStateError:
        ids = np.flatnonzero(self._pending).tolist()
        return AsyncStateError(
            f"{self.seer_model.name}: {what}() while instance(s) {ids} are in flight (sent with "
            "send(), not received yet): recv() them first (reset() drops them)")

    def _refuse_in_flight(self, what: str, ids: Iterable[int]) -> None:
        """AsyncStateError when one of the instances ``ids`` is in flight (its
        state is the background step's until recv() hands it over)."""
        if self._n_pending and any(self._pending[i] for i in ids):
            raise self._pending_error(what)

    def _drop_pending(self) -> None:
        """Forget every send (after the stepper drained): a full reset."""
        self._pending[:] = False
        self._n_pending = 0
        if self._stepper is not None:
            self._stepper.clear()

    def _the_stepper(self) -> _async.Stepper:
        st = self._stepper
        if st is None:
            st = self._stepper = _async.Stepper(
                self.runtime, self.autoreset_mode is AutoresetMode.SAME_STEP, self)
            # the thread holds the stepper, never the env: once the env is
            # collected, the thread ends after the call that runs
            weakref.finalize(self, st.abandon)
        return st

    def _env_ids(self, env_ids: Any) -> np.ndarray:
        """``env_ids`` as an int32 array of distinct instance ids (None: all)."""
        if env_ids is None:
            return self.all_env_ids.copy()
        try:
            ids = np.asarray(env_ids)
        except Exception as exc:
            raise InvalidActionError(f"env_ids cannot be read as an array: {exc!r}") from exc
        if ids.ndim == 0:
            ids = ids.reshape(1)
        if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
            raise InvalidActionError(
                f"env_ids must be a non-empty 1-D array of ints (instance ids), got "
                f"{ids.dtype} {ids.shape}")
        bad = ids[(ids < 0) | (ids >= self.num_envs)]
        if bad.size:
            raise InvalidActionError(
                f"{self.seer_model.name}: env_ids {bad.tolist()} are not instances "
                f"(num_envs={self.num_envs}: ids 0..{self.num_envs - 1})")
        ids = ids.astype(np.int32)
        counts = np.bincount(ids, minlength=self.num_envs)
        if len(ids) != self.num_envs - int((counts == 0).sum()):  # a repeated id
            raise InvalidActionError(
                f"{self.seer_model.name}: env_ids {np.flatnonzero(counts > 1).tolist()} appear "
                "more than once in one send()")
        return ids

    @exclusive
    def send(self, actions: Any, env_ids: Any = None) -> None:
        """Start stepping the instances ``env_ids`` (all if None) with ``actions``
        and return at once (EnvPool's ``send``); `recv` collects them.

        ``actions`` are those of `step` for ``len(env_ids)`` instances, in
        the order of ``env_ids``: ``(n, A)`` ints or ``(n, A, dim)`` floats; one
        array per group for a model with groups.  Everything a step would refuse
        is refused here, before anything is sent: a bad shape or value, an
        action a mask forbids (`InvalidActionError`), an
        unknown or repeated id (also ``InvalidActionError``), an instance
        already in flight (`AsyncStateError`), one that
        finished with ``autoreset_mode=DISABLED`` or needs a reset
        (`StateError`).  Autoreset is the env's: with
        ``NEXT_STEP`` an instance that finished is reset instead of stepped.

        The step runs on a background thread (the native call releases the
        GIL); sends queued while a call runs are merged into the next call.
        Each instance's outputs are those of stepping it synchronously:

        ```python
        venv.reset(seed=0)
        venv.send(actions[:2], env_ids=[0, 1])
        venv.send(actions[2:], env_ids=[2, 3])   # queued, or merged
        obs, rew, term, trunc, infos = venv.recv()
        infos["env_id"]                          # which instances these are
        ```
        """
        rt = self.runtime
        if rt.closed:
            self._check_open("send")
        if self._needs_reset:
            raise StateError(f"{self.seer_model.name}: call reset() (or async_reset()) "
                             "before send()")
        ids = self._env_ids(env_ids)
        busy = ids[self._pending[ids]]
        if busy.size:
            raise AsyncStateError(
                f"{self.seer_model.name}: send() for instance(s) {busy.tolist()}, which are in "
                "flight already (sent, not received yet): recv() them first")
        mode = self.autoreset_mode
        B = self.num_envs
        if mode is AutoresetMode.DISABLED:
            done = ids[~rt.alive[ids].any(axis=1)]
            if done.size:
                raise StateError(
                    f"{self.seer_model.name}: instance(s) {done.tolist()} finished; with "
                    "autoreset_mode=DISABLED reset them with reset(options={'reset_mask': "
                    "mask}) before sending them")
        self._write_actions(actions, ids)
        sel = np.zeros(B, dtype=bool)
        sel[ids] = True
        reset = sel & self._autoreset if mode is AutoresetMode.NEXT_STEP else \
            np.zeros(B, dtype=bool)
        step = sel & ~reset
        if step.any():  # the checks of the native step, now, beside a call in flight
            rt.check_actions(step)
        self._interrupted = _CUT_SHORT_SEND  # until Python has caught up
        seeds = np.zeros(B, dtype=np.uint64)
        if reset.any():
            seeds[reset] = np.asarray(self._take_seeds(reset), dtype=np.uint64)[reset]
        if mode is AutoresetMode.SAME_STEP:  # the seeds of a reset the step may cause
            seeds[step] = [self._next_seeds[i] for i in np.flatnonzero(step)]
        self._the_stepper().submit(_async.Job(ids, step, reset, seeds))
        self._pending[ids] = True
        self._n_pending += len(ids)
        self._interrupted = ""

    @exclusive
    def async_reset(self, seed: int | list[int | None] | None = None) -> None:
        """Reset every instance in the background (EnvPool's ``async_reset``):
        `recv` then returns their reset observations, ``batch_size`` at a
        time, with zero rewards and no flags.  Seeds as `reset`'s.
        Refused (`AsyncStateError`) while sends are in
        flight: `reset` drops them instead:

        ```python
        venv.async_reset(seed=0)
        obs, rew, term, trunc, infos = venv.recv()
        ```
        """
        self._check_open("async_reset")
        if self._n_pending:
            raise self._pending_error("async_reset")
        seeds = self._instance_seeds(seed)
        B = self.num_envs
        self._interrupted = _CUT_SHORT.format("async_reset")
        self._next_seeds = [(s + B) & _MAX_SEED for s in seeds]
        self._seed_strides = [B] * B
        self._autoreset[:] = False
        self._any_autoreset = False
        self._needs_reset = False
        self._the_stepper().submit(_async.Job(
            self.all_env_ids.copy(), np.zeros(B, dtype=bool), np.ones(B, dtype=bool),
            np.asarray(seeds, dtype=np.uint64)))
        self._pending[:] = True
        self._n_pending = B
        self._interrupted = ""

    @exclusive
    def recv(self) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """The outputs of ``batch_size`` instances that finished (EnvPool's
        ``recv``), waiting for them if needed: ``(obs, rewards, terminations,
        truncations, infos)`` as `step` returns them (per group for a
        model with groups), for those instances only, and
        ``infos["env_id"]``, their ids (int32), in the order they were sent.
        Fewer than ``batch_size`` only when fewer are in flight (EnvPool would
        wait for ever).  The arrays are always fresh copies.

        Nothing in flight: `AsyncStateError`.  A step
        that failed in the background (a model error, Ctrl-C during the native
        call) raises its error here, with the runtime's message, and the env
        then needs `reset`.  Ctrl-C while waiting leaves everything as it
        was: the step goes on, the next recv() returns it."""
        self._check_open("recv")
        st = self._stepper
        if not self._n_pending or st is None:
            raise AsyncStateError(
                f"{self.seer_model.name}: recv() with nothing in flight: send() actions "
                "first (or async_reset())")
        want = min(self.batch_size, self._n_pending)
        st.wait(want)  # Ctrl-C here changes nothing
        with st.cond:
            failure = st.failures.pop(0) if st.failures else None
        if failure is not None:
            self._pending[failure.ids] = False
            self._n_pending = int(self._pending.sum())
            self._interrupted = (f"a step sent with send() failed in the background "
                                 f"({type(failure.error).__name__}: {failure.error})")
            raise failure.error
        self._interrupted = _CUT_SHORT_RECV  # until Python has caught up
        with st.cond:
            ids = np.array([st.ready.popleft() for _ in range(want)], dtype=np.int32)
            finals = {i: st.finals.rows.pop(i) for i in ids.tolist() if i in st.finals.rows}
        out = self._gather(ids, finals)
        self._pending[ids] = False
        self._n_pending -= len(ids)
        if self.autoreset_mode is AutoresetMode.NEXT_STEP:
            self._autoreset[ids] = ~self.runtime.alive[ids].any(axis=1)
            self._any_autoreset = bool(self._autoreset.any())
        for i in finals:  # SAME_STEP: these were reset with their next seeds
            self._next_seeds[i] = (self._next_seeds[i] + self._seed_strides[i]) & _MAX_SEED
        self._interrupted = ""
        return out

    def _gather(self, ids: np.ndarray, finals: dict[int, tuple[np.ndarray, ...]]
                ) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """`recv`'s outputs: rows ``ids`` of the runtime's buffers (and,
        SAME_STEP, the final rows of the instances their step finished)."""
        rt = self.runtime
        lo = int(ids[0])
        if int(ids[-1]) - lo == len(ids) - 1 and (len(ids) < 3 or (np.diff(ids) == 1).all()):
            sel: Any = slice(lo, lo + len(ids))  # consecutive ids (two halves): block copies

            def take(a: np.ndarray) -> np.ndarray:
                return a[sel].copy()
        else:
            sel = ids

            def take(a: np.ndarray) -> np.ndarray:
                return a[sel]  # fancy indexing: a copy
        obs, rew, term, trunc = take(rt.obs), take(rt.reward), take(rt.terminated), \
            take(rt.truncated)
        infos: dict[str, Any] = {"alive": take(rt.alive), "active": take(rt.active)}
        if not self._grouped:
            inf = rt.info[sel].transpose(2, 0, 1).copy(order="C")  # a copy, always
            for j, name in enumerate(self.info_names):
                infos[name] = inf[j]
        if finals:
            fin = np.array([i in finals for i in ids.tolist()])
            final_obs = np.zeros_like(obs)
            final_info = {k: np.zeros_like(v) for k, v in infos.items()}
            for k, i in enumerate(ids.tolist()):
                if i in finals:
                    o, r, te, tr, al, ac, inf_i = finals[i]
                    rew[k], term[k], trunc[k], final_obs[k] = r, te, tr, o
                    final_info["alive"][k], final_info["active"][k] = al, ac
                    for j, name in enumerate(self.info_names):
                        final_info[name][k] = inf_i[:, j]
            infos["final_obs"] = final_obs
            infos["_final_obs"] = fin
            infos["final_info"] = final_info
            infos["_final_info"] = fin.copy()
        out: tuple[Any, ...] = (obs, rew, term, trunc, infos)
        if self._structured:
            out = self._structure(out, ids)
        out[-1]["env_id"] = ids
        return out

    @staticmethod
    def _finished(rt: Runtime, out: np.ndarray) -> int:
        """out[i] = instance i has no live agent; returns how many have none."""
        return int(_kernels.finished(rt.alive, out))

    @exclusive
    def state(self) -> np.ndarray:
        """Global states, shape (num_envs, state_dim) (instances in flight: once
        their step has finished)."""
        self._check_open("state")
        if self._stepper is not None:
            self._stepper.drain()
        return np.stack([self.runtime.global_state(i) for i in range(self.num_envs)])

    # -- snapshots ---------------------------------------------------------------

    def _env_id(self, env_id: Any) -> int:
        if isinstance(env_id, bool) or not isinstance(env_id, (int, np.integer)) or not (
                0 <= int(env_id) < self.num_envs):
            raise ConfigError(f"env_id={env_id!r} must be an int in [0, {self.num_envs})")
        return int(env_id)

    @exclusive
    def snapshot(self, env_id: int | None = None) -> EnvSnapshot:
        """Instance ``env_id``'s whole state (None: every instance's) as an
        `EnvSnapshot`, with its autoreset flag and next seed:

        ```python
        snap = venv.snapshot(0)                 # instance 0 now
        for i in range(1, venv.num_envs):
            venv.restore(snap, env_id=i)        # every instance a copy of it
        obs, rew, term, trunc, infos = venv.step(candidate_actions)
        ```

        Restores into this env or a new one of the same model and configuration
        (any executor, thread count and ``num_envs``).  An instance sent with
        `send` and not received yet has no state to take: `AsyncStateError`."""
        ids = range(self.num_envs) if env_id is None else (self._env_id(env_id),)
        self._refuse_in_flight("snapshot", ids)
        state = {"autoreset": tuple(bool(self._autoreset[i]) for i in ids),
                 "next_seeds": tuple(int(self._next_seeds[i]) for i in ids),
                 "seed_strides": tuple(int(self._seed_strides[i]) for i in ids)}
        return self._snapshot_of("vector", tuple(ids), state)

    @exclusive
    def restore(self, snap: EnvSnapshot, env_id: int | None = None
                ) -> tuple[np.ndarray, dict[str, Any]]:
        """Go back to ``snap``: a snapshot of every instance restores them all
        (``env_id`` None), one of one instance restores into ``env_id`` (None: the
        instance it was taken of).  Returns ``(obs, infos)`` of every instance,
        as ``reset()`` does.  Everything is checked before anything changes
        (`SnapshotError`).  Restoring one instance needs
        the env reset first (the first reset starts every instance); a snapshot
        of all of them also restores a never-reset env.

        A restored instance keeps its seed sequence: its next autoresets use
        the seeds the original instance would have used (its next seed, then
        steps of the ``num_envs`` of the batch it was taken in), so a
        one-instance snapshot restored into a batch of another ``num_envs``
        continues bit for bit as the original instance did, autoresets
        included.  A full ``reset()`` (or ``async_reset()``) starts every
        instance on this batch's sequence again."""
        self._check_open("restore")
        self._check_snapshot(snap, "vector")
        name = self.seer_model.name
        n = len(snap.instances)
        st = snap.state
        if set(st) != {"autoreset", "next_seeds", "seed_strides"} or not all(
                type(v) is tuple and len(v) == n for v in st.values()):
            raise SnapshotError(f"{name}: the snapshot is malformed (a batched env's holds an "
                                "autoreset flag, a next seed and a seed stride per instance)")
        for what, values, ok in (
                ("autoreset flag", st["autoreset"], lambda v: type(v) is bool),
                ("next seed", st["next_seeds"], lambda v: type(v) is int and 0 <= v <= _MAX_SEED),
                ("seed stride", st["seed_strides"],
                 lambda v: type(v) is int and 1 <= v <= _MAX_SEED)):
            wrong = [(i, v) for i, v in zip(snap.env_ids, values, strict=True) if not ok(v)]
            if wrong:
                raise SnapshotError(
                    f"{name}: the snapshot's {what} of instance {wrong[0][0]} is "
                    f"{wrong[0][1]!r:.40}, not " + ("a bool" if what == "autoreset flag" else
                                                     "an int in [0, 2**64)" if what == "next seed"
                                                     else "an int in [1, 2**64)"))
        if n == 1 and (env_id is not None or snap.env_ids[0] < self.num_envs):
            targets: tuple[int, ...] = (
                self._env_id(snap.env_ids[0] if env_id is None else env_id),)
        elif n == self.num_envs and env_id is None:
            targets = tuple(range(n))
        elif n > 1 and env_id is not None:
            raise SnapshotError(
                f"{name}: env_id={env_id!r} takes a snapshot of one instance; this one holds "
                f"{n} ({list(snap.env_ids)[:8]}): restore it with env_id=None, or take "
                "snapshot(env_id=...) of the one instance to move")
        else:
            raise SnapshotError(
                f"{name}: the snapshot holds {n} instance(s) {list(snap.env_ids)[:8]}; this env "
                f"has {self.num_envs} (restore a snapshot of one instance into any env_id, "
                "or one of every instance into an env of as many)")
        if self._needs_reset and len(targets) < self.num_envs:
            raise StateError(f"{name}: call reset() before restoring one instance (or restore a "
                             "snapshot of every instance)")
        self._refuse_in_flight("restore", targets)
        pairs = list(zip(targets, snap.instances, strict=True))
        for k, alive in enumerate(self._check_instances(pairs)):
            if st["autoreset"][k] and alive.any():
                raise SnapshotError(
                    f"{name}: the snapshot's instance {snap.env_ids[k]} is marked for an "
                    "autoreset but its runtime state has live agents: it was changed after "
                    "snapshot() made it")
        cut = self._interrupted
        self._interrupted = _CUT_SHORT_RESTORE  # until Python has caught up
        for (i, data), flag, seed, stride in zip(pairs, st["autoreset"], st["next_seeds"],
                                                 st["seed_strides"], strict=True):
            try:
                self.runtime.restore(i, data)
            except SeerError as exc:  # checked already: out of memory, nothing changed
                if _raised_by_seer(exc) and i == targets[0]:
                    self._interrupted = cut
                raise
            self._autoreset[i] = bool(flag)
            self._next_seeds[i] = int(seed) & _MAX_SEED
            self._seed_strides[i] = int(stride)
        self._any_autoreset = bool(self._autoreset.any())
        if len(targets) == self.num_envs:
            self._needs_reset = False
            cut = ""  # every instance restored: nothing is left of an interrupted call
        self._interrupted = cut
        (obs, _, _, _, infos), _ = _kernels.vec_outputs(self._bufs, self.copy, None)
        if self._structured:
            obs, _, _, _, infos = self._structure((obs, None, None, None, infos))
        return obs, infos

    def close(self) -> None:
        """Free the env; safe at any time, from any thread; again: nothing (see
        `SeerParallelEnv.close`: a call on another thread ends first; on
        the thread inside a call, the env closes when that call ends)."""
        self._busy.close(close_now, self)

    def _close_now(self) -> None:
        if self._stepper is not None:  # the call in flight ends, the queued ones are dropped
            self._stepper.stop()
        self.runtime.close()
        self._needs_reset = True
