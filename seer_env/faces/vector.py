"""`SeerVectorEnv`: ``num_envs`` instances in one runtime as batched arrays,
Gymnasium's autoreset modes and EnvPool's asynchronous ``send``/``recv``.

The env keeps its instances' state: resets, Gymnasium's autoreset, the seed
sequences, the sends in flight (the background thread is `async_step`'s) and
snapshots.  What goes into and out of the runtime's buffers -- actions checked
and written, outputs split by group, the rows a ``recv`` returns -- is
`vector_arrays`'s.

Part of `seer_env.faces` (`seer_env.env`, its old path, re-exports the public names).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from .._bind import kernels as _kernels
from .._bind.gate import close_now, exclusive
from .._bind.runtime import Runtime, yes_no
from ..errors import (
    AsyncStateError,
    ClosedError,
    ConfigError,
    SeerError,
    SnapshotError,
    StateError,
)
from .async_step import Job, Stepper
from .common import (
    _CUT_SHORT,
    _CUT_SHORT_RECV,
    _CUT_SHORT_RESET,
    _CUT_SHORT_RESTORE,
    _CUT_SHORT_SEND,
    _CUT_SHORT_STEP,
    _MAX_SEED,
    _SeerEnvCommon,
    check_options,
    raised_by_seer,
    seed_value,
)
from .snapshot import EnvSnapshot
from .vector_arrays import (
    by_group,
    final_outputs,
    gather,
    instance_ids,
    write_flat_actions,
    write_group_actions,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..model import Model


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
      that finished (rows of the others are zeros).  With agent groups they
      are split by group as the step's outputs are:
      ``infos["final_obs"][group]`` ``(B, count, obs_dim)``,
      ``infos["final_info"]["alive"][group]`` and
      ``infos["final_info"][group][name]``.
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
    import numpy as np
    from seer_env.envs import pcs_v0

    def policy(obs):                                  # yours: (4, A, obs) -> (4, A)
        return np.zeros(obs.shape[:2], np.int64)

    venv = pcs_v0.vector_env(8, batch_size=4, width=8, height=8)
    venv.async_reset(seed=0)
    for _ in range(100):
        obs, rew, term, trunc, infos = venv.recv()    # 4 instances
        ids = infos["env_id"]
        venv.send(policy(obs), ids)                   # (4, A) actions
    venv.close()
    ```
    """

    #: how a user of this face resets finished instances, as the refusal to
    #: step them says it (a face over this one that resets otherwise, as
    #: TorchRL's, says its own way)
    _reset_advice = "reset(options={'reset_mask': mask})"

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
        # (a string or None read by bool() hid the mistake: copy=None gave views)
        copy = yes_no("copy", copy)
        keys = config.get("info_keys")
        if keys is not None and not (isinstance(keys, str) and keys == "all"):
            # every counter is in the infos, as (B, A) arrays: choosing some is
            # the per-agent dicts' business (an ignored choice hid typos)
            raise ConfigError(
                f"info_keys={keys!r}: a vector env's infos hold every counter as an array "
                "(info_names); info_keys chooses the counters of the ParallelEnv's and "
                "the AEC env's per-agent info dicts (leave it out here, or 'all')")
        self.autoreset_mode = autoreset_mode_of(autoreset_mode)
        self._init_args = {"num_envs": int(num_envs), "copy": copy,
                           "autoreset_mode": self.autoreset_mode, "batch_size": batch_size,
                           **config}
        self._setup(model, int(num_envs), config)
        self._grouped = len(self.groups) > 1
        self.num_envs = int(num_envs)
        self.num_agents = self.sizes.num_agents
        self.copy = copy
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
        # which instances have a sequence (a reset or a restore gave them
        # one): a reset without a seed goes on with it
        self._seeded: list[bool] = [False] * self.num_envs
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
        # (a model with groups: its infos are per group, added by by_group)
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
        self._stepper: Stepper | None = None

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
            raise self._pending_error("alive (the property)")
        return self.runtime.alive.copy()

    # -- reset ---------------------------------------------------------------

    def _instance_seeds(self, seed: Any) -> tuple[list[int], list[bool]]:
        """The instances' seeds for a reset with ``seed``, and which of them go
        on with their own sequence (no seed for them, and they have one: a
        restored instance keeps the stride of the batch it came from) rather
        than start one of this batch's."""
        if isinstance(seed, np.ndarray) and seed.ndim == 0:
            seed = seed[()]  # a NumPy scalar array: its value
        if seed is None:
            return self._continued_seeds(), list(self._seeded)
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            return self._seeds(seed, self.num_envs), [False] * self.num_envs
        if isinstance(seed, (list, tuple, np.ndarray)):
            if len(seed) != self.num_envs:
                raise ConfigError(f"seed list has {len(seed)} entries; need {self.num_envs}")
            fresh = self._continued_seeds()
            return ([fresh[i] if s is None else seed_value(s) for i, s in enumerate(seed)],
                    [s is None and self._seeded[i] for i, s in enumerate(seed)])
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
        check_options(options, ("reset_mask",))
        mask = None if options is None else options.get("reset_mask")
        cut = self._interrupted
        if mask is None:
            seeds, kept = self._instance_seeds(seed)
            if self._stepper is not None:
                self._stepper.drain()  # a call in flight ends first (Ctrl-C: nothing changed)
            self._interrupted = _CUT_SHORT_RESET  # until Python has caught up
            self._drop_pending()  # every instance restarts: sends not received are dropped
            try:
                rt.reset(seeds)
            except SeerError as exc:
                if raised_by_seer(exc):  # the runtime reports the truth itself
                    self._interrupted = cut
                raise
            self._start_seeds(seeds, kept)
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
            given, kept = (None, []) if seed is None else self._instance_seeds(seed)
            if self._stepper is not None:
                self._stepper.drain()  # one native call at a time: the others' go first
            self._interrupted = _CUT_SHORT_RESET  # until Python has caught up
            seeds = self._take_seeds(mask) if given is None else given
            if given is not None:
                for i in np.flatnonzero(mask):
                    if not kept[i]:  # a seed given: a sequence of this batch's from it
                        self._seed_strides[i] = self.num_envs
                    self._next_seeds[i] = (seeds[i] + self._seed_strides[i]) & _MAX_SEED
            try:
                rt.reset(seeds, mask)
            except SeerError as exc:
                if raised_by_seer(exc):
                    self._interrupted = cut
                raise
            self._autoreset[mask] = False
            self._any_autoreset = bool(self._autoreset.any())
        (obs, _, _, _, infos), _ = _kernels.vec_outputs(self._bufs, self.copy, None)
        # a masked reset leaves the mark of an interrupted call (the other
        # instances' Python state may be behind): only a full reset clears it
        self._interrupted = cut
        if self._structured:
            obs, _, _, _, infos = by_group((obs, None, None, None, infos), self.runtime, self.copy,
                                           flat=self._flat)
        return obs, infos

    def _continued_seeds(self) -> list[int]:
        """The seeds of a reset without one: each instance's next seed where
        it has a sequence (as a Gymnasium env's generator goes on:
        ``reset(seed=s)`` once, then ``reset()``, replays the same episodes in
        every run), else the model's default or a fresh random one (a
        never-reset env)."""
        first = self._seeds(None, self.num_envs)
        return [self._next_seeds[i] if self._seeded[i] else first[i]
                for i in range(self.num_envs)]

    def _take_seeds(self, mask: np.ndarray) -> list[int]:
        """Seeds for the instances in ``mask`` (their next seeds), advancing them."""
        seeds = [0] * self.num_envs
        for i in np.flatnonzero(mask):
            seeds[i] = self._next_seeds[i]
            self._advance_seed(int(i))
        return seeds

    def _start_seeds(self, seeds: Sequence[int], kept: Sequence[bool] | None = None) -> None:
        """Every instance reset with ``seeds``: each continues on this batch's
        sequence (its seed, then steps of ``num_envs``), or, where ``kept``
        (`_instance_seeds`), on its own (steps of its stride)."""
        kept = kept or [False] * self.num_envs
        self._seed_strides = [st if k else self.num_envs
                              for st, k in zip(self._seed_strides, kept, strict=True)]
        self._next_seeds = [(s + st) & _MAX_SEED
                            for s, st in zip(seeds, self._seed_strides, strict=True)]
        self._seeded = [True] * self.num_envs

    def _advance_seed(self, i: int) -> None:
        """Instance ``i`` used its next seed: the one after it, by its stride."""
        self._next_seeds[i] = (self._next_seeds[i] + self._seed_strides[i]) & _MAX_SEED

    # -- step ----------------------------------------------------------------

    def _write_actions(self, actions: Any, rows: np.ndarray | None = None) -> None:
        """``actions`` into the runtime's action buffer, checked (``rows``: the
        instances they are for, `send`'s; else all)."""
        if self._structured:
            write_group_actions(self.runtime, self.seer_model.name, actions, rows, self._flat)
        # the common case, an array of the right shape and kind: one pass in C
        elif rows is not None or not _kernels.copy_actions(actions, self._act_buf):
            write_flat_actions(self.runtime, actions, rows)

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
            raise self._pending_error("step()")
        mode = self.autoreset_mode
        if mode is AutoresetMode.DISABLED and self._finished(rt, self._fin):
            raise StateError(
                f"{self.seer_model.name}: instance(s) {np.flatnonzero(self._fin).tolist()} "
                f"finished; with autoreset_mode=DISABLED reset them with "
                f"{self._reset_advice} before stepping"
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
            if raised_by_seer(exc):  # or its instances need a reset and say so)
                self._interrupted = ""
            raise
        self._interrupted = ""
        if self._structured:
            return by_group(out, rt, self.copy, flat=self._flat)
        return out

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
        final = [rt.obs.copy(), rt.alive.copy(), rt.active.copy(), rt.info.copy()]
        for a in final:
            a[keep] = 0
        rt.reset(self._take_seeds(finished), finished)
        infos = self._infos()
        final_obs, final_info = final_outputs(rt, *final)
        infos["final_obs"], infos["_final_obs"] = final_obs, finished
        infos["final_info"], infos["_final_info"] = final_info, finished.copy()
        return self._arr(rt.obs), self._arr(rew), self._arr(term), self._arr(trunc), infos

    # -- asynchronous stepping (EnvPool's send / recv) --------------------------

    def _pending_error(self, what: str) -> AsyncStateError:
        """``what`` (a call, "step()", or a property, "alive") refused while
        instances are in flight."""
        ids = np.flatnonzero(self._pending).tolist()
        return AsyncStateError(
            f"{self.seer_model.name}: {what} while instance(s) {ids} are in flight (sent with "
            "send(), not received yet): recv() them first (reset() drops them)")

    def _refuse_in_flight(self, what: str, ids: Iterable[int]) -> None:
        """AsyncStateError when one of the instances ``ids`` is in flight (its
        state is the background step's until recv() hands it over)."""
        if self._n_pending and any(self._pending[i] for i in ids):
            raise self._pending_error(f"{what}()")

    def _drop_pending(self) -> None:
        """Forget every send (after the stepper drained): a full reset."""
        self._pending[:] = False
        self._n_pending = 0
        if self._stepper is not None:
            self._stepper.clear()

    def _the_stepper(self) -> Stepper:
        st = self._stepper
        if st is None:
            st = self._stepper = Stepper(
                self.runtime, self.autoreset_mode is AutoresetMode.SAME_STEP, self)
            # the thread holds the stepper, never the env: once the env is
            # collected, the thread ends after the call that runs
            weakref.finalize(self, st.abandon)
        return st

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
        ids = instance_ids(env_ids, self.all_env_ids, self.seer_model.name)
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
                    f"autoreset_mode=DISABLED reset them with {self._reset_advice} before "
                    "sending them")
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
        self._the_stepper().submit(Job(ids, step, reset, seeds))
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
            raise self._pending_error("async_reset()")
        seeds, kept = self._instance_seeds(seed)
        B = self.num_envs
        self._interrupted = _CUT_SHORT.format("async_reset")
        self._start_seeds(seeds, kept)
        self._autoreset[:] = False
        self._any_autoreset = False
        self._needs_reset = False
        self._the_stepper().submit(Job(
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
        that failed in the background (a model error, a budget, Ctrl-C during
        the native call) raises its error here, with the runtime's message,
        and leaves the env as the same failure in `step` would: the
        instances that failed need `reset` (or `restore`) and say so when
        sent again, the others go on (a Python model's exception or a bug:
        the whole env needs `reset`).  Ctrl-C while waiting leaves everything as it
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
            if not (failure.known and raised_by_seer(failure.error)):
                # a model written in Python raised, or a bug: nothing is known
                # of what the call did.  Else the runtime's own report, as
                # after the same failure in step(): the instances that failed
                # need reset() or restore() and say so, the others go on
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
            self._advance_seed(i)
        self._interrupted = ""
        return out

    def _gather(self, ids: np.ndarray, finals: dict[int, tuple[np.ndarray, ...]]
                ) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """`recv`'s outputs: rows ``ids`` of the runtime's buffers (and,
        SAME_STEP, the final rows of the instances their step finished), by
        group for a structured model, with ``infos["env_id"]``."""
        out: tuple[Any, ...] = gather(self.runtime, ids, finals)
        if self._structured:
            out = by_group(out, self.runtime, self.copy, ids, self._flat)
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
        rt = self._idle_runtime("state")
        return np.stack([rt.global_state(i) for i in range(self.num_envs)])

    def _idle_runtime(self, what: str) -> Any:
        """The runtime once no `send` is queued or running (their results stay
        for `recv`): what reads the runtime's buffers between calls goes
        through it, as a model's own accessors do (``what``: the accessor, for
        the error on a closed env).  A background step writes the buffers;
        read meanwhile they are neither the state before it nor after it:

        ```python
        class MyVectorEnv(SeerVectorEnv):
            def totals(self):
                return self._idle_runtime("totals").info.sum(axis=1)
        ```
        """
        self._check_open(what)
        if self._stepper is not None:
            self._stepper.drain()
        return self.runtime

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
        instance on this batch's sequence again.

        Instances sent with `send` and not received yet cannot be restored
        (`AsyncStateError`); while they are in flight their steps end
        first, so the rows returned for them are those after their step
        (which `recv` then returns), as a masked `reset` does."""
        self._check_open("restore")
        self._check_snapshot(snap, "vector")
        name = self.seer_model.name
        n = len(snap.instances)
        st = snap.state
        if set(st) != {"autoreset", "next_seeds", "seed_strides"} or not all(
                type(v) is tuple and len(v) == n for v in st.values()):
            raise SnapshotError(f"{name}: the snapshot is malformed (a batched env's holds an "
                                "autoreset flag, a next seed and a seed stride per instance)")
        for what, values, ok, wanted in (
                ("autoreset flag", st["autoreset"], lambda v: type(v) is bool, "a bool"),
                ("next seed", st["next_seeds"], lambda v: type(v) is int and 0 <= v <= _MAX_SEED,
                 "an int in [0, 2**64)"),
                ("seed stride", st["seed_strides"],
                 lambda v: type(v) is int and 1 <= v <= _MAX_SEED, "an int in [1, 2**64)")):
            wrong = [(i, v) for i, v in zip(snap.env_ids, values, strict=True) if not ok(v)]
            if wrong:
                raise SnapshotError(f"{name}: the snapshot's {what} of instance {wrong[0][0]} "
                                    f"is {wrong[0][1]!r:.40}, not {wanted}")
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
        if self._stepper is not None:
            # the others' calls in flight end first: the rows returned are
            # after them, never a mix (as a masked reset's)
            self._stepper.drain()
        cut = self._interrupted
        self._interrupted = _CUT_SHORT_RESTORE  # until Python has caught up
        for (i, data), flag, seed, stride in zip(pairs, st["autoreset"], st["next_seeds"],
                                                 st["seed_strides"], strict=True):
            try:
                self.runtime.restore(i, data)
            except SeerError as exc:  # checked already: out of memory, nothing changed
                if raised_by_seer(exc) and i == targets[0]:
                    self._interrupted = cut
                raise
            self._autoreset[i] = bool(flag)
            self._next_seeds[i] = int(seed) & _MAX_SEED
            self._seed_strides[i] = int(stride)
            self._seeded[i] = True
        self._any_autoreset = bool(self._autoreset.any())
        if len(targets) == self.num_envs:
            self._needs_reset = False
            cut = ""  # every instance restored: nothing is left of an interrupted call
        self._interrupted = cut
        (obs, _, _, _, infos), _ = _kernels.vec_outputs(self._bufs, self.copy, None)
        if self._structured:
            obs, _, _, _, infos = by_group((obs, None, None, None, infos), self.runtime, self.copy,
                                           flat=self._flat)
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


def _rebuild_vector_env(ref: Callable[[], Model], args: dict[str, Any]) -> SeerVectorEnv:
    """An unpickled batched env: a fresh one made with the same arguments."""
    env: SeerVectorEnv = ref().vector_env(**args)
    return env
