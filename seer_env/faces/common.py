"""What every face shares: `_SeerEnvCommon` (a runtime, its configuration,
seeds, options, the call gate, snapshots of the face's state), the keys
every env takes (`COMMON_KEYS`) and how a call cut short is told.

Part of `seer_env.faces` (`seer_env.env`, its old path, re-exports the public names).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np
import pettingzoo

from .._bind import gate as _gate
from .._bind import native as _native
from .._bind.runtime import Runtime, alloc_zeros, yes_no
from ..budget import thread_budget
from ..errors import (
    ClosedError,
    ConfigError,
    OutOfMemoryError,
    SnapshotError,
    StateError,
)
from ..stpa import attach as attach_stpa
from ..stpa import describe as describe_stpa
from .flat_actions import Flat, flat_groups
from .snapshot import SNAPSHOT_VERSION, EnvSnapshot, check_intact
from .spaces import _group_action_space

if TYPE_CHECKING:  # pragma: no cover
    from ..model import Model


# the package's folder (seer_env/, above this one's): frames from any of its modules
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_PZ_DIR = os.path.dirname(os.path.abspath(pettingzoo.__file__)) + os.sep


def raised_by_seer(exc: BaseException, also: str = "") -> bool:
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

#: Keys every env accepts besides its model's parameters (the bindings' list:
#: a model may name no parameter like one, `NativeModel` checks).
COMMON_KEYS = _native.COMMON_KEYS

_MAX_SEED = 2**64 - 1


def seed_value(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ConfigError(f"seed={seed!r} must be an int (or None)")
    if not 0 <= int(seed) <= _MAX_SEED:
        raise ConfigError(f"seed={seed} must be in [0, 2**64)")
    return int(seed)


def check_options(options: Any, known: tuple[str, ...] | None = None) -> None:
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


def next_seed(seed: int) -> int:
    """The seed after ``seed`` in an env's own sequence (SplitMix64's step:
    an odd constant added, then its finalizer), which a ParallelEnv's
    ``reset()`` without a seed goes on with: as a Gymnasium env's generator
    goes on, the episodes after ``reset(seed=s)`` are the same in every run,
    and an env seeded ``s + 1`` does not replay them (``s + 1`` would)."""
    z = (seed + 0x9E3779B97F4A7C15) & _MAX_SEED
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MAX_SEED
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MAX_SEED
    return z ^ (z >> 31)


def _box(low: np.ndarray, high: np.ndarray) -> gymnasium.spaces.Box:
    return gymnasium.spaces.Box(np.asarray(low, np.float32), np.asarray(high, np.float32),
                                dtype=np.float32)


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
            # the executor given runs as asked, on the process's thread budget
            # (as "auto" does for the optimistic one; seer_env.budget): STPA
            # chooses only when neither is given
            threads = thread_budget().threads
        self.render_mode = config.get("render_mode")
        if self.render_mode is not None and self.render_mode not in ("rgb_array", "human"):
            raise ConfigError(
                f"render_mode={self.render_mode!r} must be None, 'rgb_array' or 'human'"
            )
        if self.render_mode is not None and model.render is None:
            raise ConfigError(f"{model.name} cannot render")
        #: multi-discrete groups handed out as one Discrete of their joint actions
        #: (`seer_env.faces.flat_actions`)
        self.flatten_actions = yes_no("flatten_actions", config.get("flatten_actions", False))
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
        #: the agent groups (one, "agents", for a model without groups), as the
        #: face hands them out: with ``flatten_actions``, a multi-discrete group is
        #: a discrete one of its joint actions (``_flat`` translates)
        self.groups = sz.groups
        self._flat: dict[int, Flat] = {}
        if self.flatten_actions:
            self.groups, self._flat = flat_groups(sz.groups, self.seer_model.name)
        self._group_of = np.repeat(np.arange(len(sz.groups)), [g.count for g in sz.groups])
        self._group_obs_spaces = [self._group_obs_space(native, i, g)
                                  for i, g in enumerate(self.groups)]
        self._group_act_spaces = [_group_action_space(g) for g in self.groups]
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

    def _mask_rows(self, gi: int, raw: np.ndarray) -> np.ndarray:
        """Group ``gi``'s action-mask rows as the face hands them out, from the
        runtime's rows ``raw`` (``(..., mask_dim)``): its first ``mask_len``
        bytes (a view), or the joint mask of a flattened group (a new bool
        array)."""
        f = self._flat.get(gi)
        return raw[..., :self.groups[gi].mask_len] if f is None else f.joint_mask(raw)

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
        check_intact(snap, name)
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
        """Seeds of n instances: ``seed + i`` (mod 2**64); for None the spec's
        default, else fresh random ones (the faces go on with their own
        sequences first, where they have one)."""
        if seed is None and self.seer_model.default_seed is not None:
            seed = self.seer_model.default_seed(self.config)
        base = _fresh_seed() if seed is None else seed_value(seed)
        return [(base + i) & _MAX_SEED for i in range(n)]
