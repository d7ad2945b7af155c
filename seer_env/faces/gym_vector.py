"""A Gymnasium ``VectorEnv`` over every agent of every instance: parameter sharing.

Each env module has ``agent_vector_env(num_envs, **config)``: ``num_envs``
instances of the env stepped together in one runtime, seen as one
`gymnasium.vector.VectorEnv` whose sub-envs are the agents, so a single
policy network acts for all of them (parameter sharing, as in CleanRL-style
training scripts):

```python
import numpy as np
from gymnasium.wrappers.vector import RecordEpisodeStatistics
from seer_env.envs import pcs_v0

envs = RecordEpisodeStatistics(pcs_v0.agent_vector_env(4, width=8, height=8, threads=2))
print(envs.num_envs)                  # 4 instances x 64 cells = 256 sub-envs
obs, infos = envs.reset(seed=0)       # obs.shape == (256, 14)
for _ in range(10):
    actions = envs.action_space.sample()          # shape (256,)
    obs, rewards, terminations, truncations, infos = envs.step(actions)
```

Sub-env ``j`` is agent ``j % A`` of instance ``j // A`` (``A`` agents per
instance); ``envs.agent_names[j]`` names it.  Spaces: ``single_observation_space``
and ``single_action_space`` are the env's per-agent spaces, ``observation_space``
and ``action_space`` their batched forms.  ``metadata["autoreset_mode"]`` is the
`AutoresetMode` (``autoreset_mode=`` chooses it:
``NEXT_STEP`` by default, ``SAME_STEP``, ``DISABLED``).

**Dead agents.**  An instance runs until none of its agents is alive.  An agent
that finishes (terminated or truncated) while others of its instance go on
reports its flag in that step, as any Gymnasium sub-env does; its sub-env then
*idles* until its instance restarts: its observations are zeros, its rewards 0,
its flags False and its actions ignored, and ``infos["active"]`` is False for
it.  When the instance restarts (autoreset, or a reset), every one of its
sub-envs gets its real reset observation.  So a learner should drop samples
whose observation came with ``infos["active"]`` False (``examples/ppo_pcs.py``
does): ``active`` speaks of the row's observation.  With ``SAME_STEP`` an agent
that dies early gets the zero (idle) observation in the step where it finishes,
with ``active`` False, while the reward and flags of that step are its last
transition's, real (``infos["final_info"]["active"]`` is True, its final
observation in ``infos["final_obs"]``): count them with the sample of the
observation it acted on, not by that step's ``active``.
With ``NEXT_STEP`` (the default) and ``DISABLED``,
``RecordEpisodeStatistics`` reports exact returns and lengths for every
episode that does not follow such an idle stretch; after one, the idle steps
count into the next episode's length (their rewards are 0, so returns stay
exact).  Where all agents of an instance finish together (PCS, PHOLD), no
sub-env ever idles.  With ``SAME_STEP`` Gymnasium's wrapper (1.2) counts as
if ``NEXT_STEP`` were in force, for its own ``SyncVectorEnv`` too: every
episode after the first is one step short and misses its first reward.

**Infos** are a dict of ``(num_envs,)`` arrays with Gymnasium's ``_key`` masks:
``alive`` (the agent acts in the next step), ``active`` (this step's row is
real), and every model info value (``envs.info_names``; masked by ``active``).
``SAME_STEP`` adds ``final_obs``/``final_info`` for the sub-envs that finished.

**Seeds.** ``reset(seed=s)`` seeds instance ``i`` with ``s + i`` (a list gives one
seed per instance); autoresets continue deterministically.  A masked reset
(``options={"reset_mask": m}``, ``m`` of shape ``(num_envs,)``) must select whole
instances: all ``A`` sub-envs of an instance or none.

Returned arrays are fresh copies unless ``copy=False``; then observations,
rewards and flags are read-only views overwritten by the next call.

**Global state** (a centralised critic's input, as in MAPPO).  ``envs.state()``
is every instance's global state, ``(num_instances, state_dim)`` float32 (the
batched env's ``state()``; ``envs.state_space`` is one instance's).  With
``global_state_in_infos=True``, ``reset`` and ``step`` also put it in
``infos["state"]``, ``(num_envs, state_dim)``: row ``j`` is the state of sub-env
``j``'s instance (``j // A``), so a critic reads it beside each agent's
observation without indexing (idle sub-envs get their instance's state too;
``infos["_state"]`` is all True).  It is off by default because it costs a
native call per instance and ``num_envs * state_dim`` floats per step (PCS:
``6 * W * H + 2`` floats for each of its ``W * H`` cells).  In the step where an
instance finishes, ``NEXT_STEP`` (the default) gives its final state beside its
final observations; with ``SAME_STEP`` the rows of a restarted instance hold
the state after its reset (the one that goes with ``obs``), and the final state
is not kept:

```python
envs = pcs_v0.agent_vector_env(4, global_state_in_infos=True)
obs, infos = envs.reset(seed=0)
critic_in = np.concatenate([obs, infos["state"]], axis=1)   # (num_envs, obs + state)
```

**Action masks** (models that declare them) come in ``infos["action_mask"]``,
``(num_envs, n)`` int8, 1 where a choice is allowed (a multi-discrete action's
components one after another), as Gymnasium's own masked envs put them in
``info``; the idle sub-envs' rows are all 1.

**Asynchronous steps.**  ``step_async(actions)`` starts a step of every sub-env
and returns at once, ``step_wait()`` returns its outputs (the names of
Gymnasium's ``AsyncVectorEnv``): the instances step on a background thread
(the batched env's ``send``/``recv``) while the caller's Python runs, and the
outputs are those ``step`` would give:

```python
envs.step_async(actions)
...                                       # e.g. the learner's update
obs, rewards, terminations, truncations, infos = envs.step_wait()
```

**Agent groups.**  For a model with several groups (agents that see and choose
different things), ``agent_vector_env(num_envs, group="predator")`` is the
VectorEnv of one group: its sub-envs are that group's agents of every instance,
its spaces the group's.  The other groups act by ``others(obs, infos)`` (given
the batched env's outputs, keyed by group; it returns one action array per other
group), by default uniformly random actions their masks allow, drawn from a
generator seeded by ``reset(seed=...)``:

```python
from seer_env.envs import hunt_v0

envs = hunt_v0.agent_vector_env(8, group="predator")
obs, infos = envs.reset(seed=0)     # obs: (8 * predators, obs_dim)
mask = infos["action_mask"].astype(bool)   # (8 * predators, 5 + 2): both parts' choices
logits = np.zeros(mask.shape)              # a policy's logits, one row per sub-env
logits[~mask] = -np.inf                    # masked sampling
```
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from .._bind.runtime import alloc_zeros, yes_no
from ..errors import (
    AsyncStateError,
    ClosedError,
    ConfigError,
    InvalidActionError,
    SnapshotError,
    StateError,
)
from .common import check_options
from .snapshot import EnvSnapshot, check_intact, generator_of
from .vector import SeerVectorEnv

__all__ = ["AgentVectorEnv", "agent_vector_env", "random_actions", "random_batched_actions"]


class AgentVectorEnv(gymnasium.vector.VectorEnv):
    """Every agent of every instance of a [`SeerVectorEnv`][seer_env.env.SeerVectorEnv] as one
    sub-env of a Gymnasium ``VectorEnv`` (see the module docstring).

    Args:
        venv: the batched env; it must have been made with ``copy=False`` (this
            class copies once itself).
        copy: return fresh arrays (default) or read-only views.
        group: the agent group to step (a model with groups), see the module docstring.
        others: the other groups' actions (a model with groups).
        global_state_in_infos: put each sub-env's instance's global state in
            ``infos["state"]`` (see "Global state" in the module docstring).

    Attributes:
        venv: the underlying batched env (``venv.runtime`` is the native runtime).
        num_instances: ``B``; ``num_agents``: ``A``; ``num_envs`` is ``B * A``.
        agent_names: the agent name of each sub-env.
        state_space: one instance's global state space (``state()`` gives one row
            per instance).
    """

    def __init__(self, venv: SeerVectorEnv, copy: bool = True, group: str | None = None,
                 others: Callable[[Any, Any], Mapping[str, Any]] | None = None,
                 global_state_in_infos: bool = False) -> None:
        if venv.copy:
            raise ConfigError("AgentVectorEnv needs a vector env made with copy=False")
        if venv.batch_size != venv.num_envs:
            raise ConfigError(
                f"AgentVectorEnv steps every instance together: the vector env's batch_size "
                f"({venv.batch_size}) must be its num_envs ({venv.num_envs})")
        self.venv = venv
        self.copy = yes_no("copy", copy)
        self.num_instances = venv.num_envs
        names = [g.name for g in venv.groups]
        if group is None and venv.grouped:
            raise ConfigError(
                f"{venv.seer_model.name} has agent groups {names}: choose one with "
                "agent_vector_env(num_envs, group=...), one VectorEnv per group")
        if group is not None and group not in names:
            raise ConfigError(f"{venv.seer_model.name}: group={group!r} is not one of {names}")
        if others is not None and not callable(others):
            raise ConfigError(f"others={others!r} must be a callable (obs, infos) -> actions")
        #: whether reset/step put the global state in infos["state"]
        self.global_state_in_infos = yes_no("global_state_in_infos", global_state_in_infos)
        self.state_space = venv._state_space
        #: the group this VectorEnv steps (None: a model without groups)
        self.group = group if venv.grouped else None
        self._g = next(g for g in venv.groups if g.name == (group or names[0]))
        self._others = others
        self._rng = np.random.default_rng()
        self._last: tuple[Any, Any] | None = None
        self.num_agents = self._g.count
        self.num_envs = self.num_instances * self.num_agents
        self.single_observation_space = venv.single_observation_spaces[self._g.name]
        self.single_action_space = venv.single_action_spaces[self._g.name]
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.autoreset_mode = venv.autoreset_mode
        self.metadata = {
            "name": venv.seer_model.name,
            "autoreset_mode": venv.autoreset_mode,
            "render_modes": [],
        }
        self.render_mode = None
        mine = venv.possible_agents[self._g.first:self._g.first + self._g.count]
        self.agent_names = [a for _ in range(self.num_instances) for a in mine]
        self.info_names = tuple(self._g.info_names) if self.group else tuple(venv.info_names)
        g = self._g
        if g.action_kind == "discrete":
            self._act_shape: tuple[int, ...] = (self.num_instances, self.num_agents)
        else:
            self._act_shape = (self.num_instances, self.num_agents, g.action_dim)
        self._all = alloc_zeros(venv.seer_model.name, "the all-agents mask", (self.num_envs,),
                                bool)
        self._all[:] = True

    # -- groups -------------------------------------------------------------------

    def _mine(self, out: tuple[Any, ...]) -> tuple[Any, ...]:
        """The batched env's outputs of this VectorEnv's group (a model with
        groups), its infos flattened to what a one-group model's look like."""
        if self.group is None:
            return out
        self._last = (out[0], out[-1])
        g = self.group
        vinfos = out[-1]
        infos = {"alive": vinfos["alive"][g], "active": vinfos["active"][g], **vinfos[g]}
        if g in vinfos.get("action_mask", {}):
            infos["action_mask"] = vinfos["action_mask"][g]
        if "final_obs" in vinfos:  # SAME_STEP: the finished instances' final rows
            fin = vinfos["final_info"]
            infos["final_obs"] = vinfos["final_obs"][g]
            infos["_final_obs"] = vinfos["_final_obs"]
            infos["final_info"] = {"alive": fin["alive"][g], "active": fin["active"][g],
                                   **fin[g]}
        picked = tuple(None if a is None else a[g] for a in out[:-1])
        return (*picked, infos)

    def _other_actions(self) -> dict[str, Any]:
        """Actions of the other groups: ``others(obs, infos)``, or random legal ones."""
        assert self._last is not None
        obs, infos = self._last
        if self._others is not None:
            got = self._others(obs, infos)
            if not isinstance(got, Mapping):
                names = ", ".join(repr(g.name) for g in self.venv.groups if g.name != self.group)
                raise InvalidActionError(
                    f"others(obs, infos) must return a mapping of the other groups' names "
                    f"({names}) to their action arrays, got {type(got).__name__}")
            acts = dict(got)
        else:
            acts = {g.name: random_actions(g, infos.get("action_mask", {}).get(g.name),
                                           self.num_instances, self._rng)
                    for g in self.venv.groups if g.name != self.group}
        return acts

    # -- conversion -------------------------------------------------------------

    def _flat(self, a: np.ndarray) -> np.ndarray:
        """``(B, A, ...)`` -> ``(B * A, ...)``, copied unless ``copy=False``."""
        flat = a.reshape((self.num_envs, *a.shape[2:]))
        if self.copy:
            return flat.copy()
        flat.flags.writeable = False
        return flat

    def _infos(self, vinfos: dict[str, Any]) -> dict[str, Any]:
        n = self.num_envs
        active = np.asarray(vinfos["active"]).reshape(n).copy()
        infos: dict[str, Any] = {
            "alive": np.asarray(vinfos["alive"]).reshape(n).copy(),
            "_alive": self._all.copy(),
            "active": active,
            "_active": self._all.copy(),
        }
        for name in self.info_names:
            infos[name] = vinfos[name].reshape(n)
            infos[f"_{name}"] = active
        if "action_mask" in vinfos:  # int8, as the dict faces' masks
            mask = np.asarray(vinfos["action_mask"])
            infos["action_mask"] = mask.reshape((n, mask.shape[-1])).astype(np.int8)
            infos["_action_mask"] = self._all.copy()
        if self.global_state_in_infos:  # row j: the state of sub-env j's instance
            infos["state"] = np.repeat(self.venv.state(), self.num_agents, axis=0)
            infos["_state"] = self._all.copy()
        return infos

    def state(self) -> np.ndarray:
        """Every instance's global state, shape ``(num_instances, state_dim)`` (float32):
        the batched env's ``state()``.  Sub-env ``j``'s is row ``j // num_agents``."""
        self._check_open("state")
        return self.venv.state()

    # -- API ----------------------------------------------------------------------

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset all instances (or the whole instances in ``options["reset_mask"]``)."""
        self._check_open("reset")
        check_options(options, ("reset_mask",))
        if options is not None and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.dtype != np.bool_ or mask.shape != (self.num_envs,):
                raise ConfigError(
                    f"options['reset_mask'] must be a bool array of shape ({self.num_envs},), "
                    f"got {mask.dtype} {mask.shape}"
                )
            per = mask.reshape(self.num_instances, self.num_agents)
            if (per.any(axis=1) != per.all(axis=1)).any():
                raise ConfigError(
                    "options['reset_mask'] must select whole instances (all "
                    f"{self.num_agents} sub-envs of an instance, or none): an agent's "
                    "sub-env restarts only with its instance"
                )
            options = {**options, "reset_mask": per[:, 0].copy()}
        out = self.venv.reset(seed=seed, options=options)  # a bad seed is refused here
        if self.group is not None and seed is not None:
            # the other groups' generator, seeded once the reset took the seed
            # (a refused one leaves it as it was)
            self._rng = np.random.default_rng(
                [int(s or 0) for s in seed] if isinstance(seed, (list, tuple, np.ndarray))
                else int(seed))
        obs, vinfos = self._mine(out)
        return self._flat(obs), self._infos(vinfos)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step all sub-envs; ``actions`` has shape ``(num_envs,)`` (discrete) or
        ``(num_envs, dim)`` (Box).  Actions of idle sub-envs are ignored."""
        self._check_open("step")
        self._refuse_started("step")
        self._refuse_unreset("step")
        return self._outputs(self._unless_refused(self.venv.step, actions))

    def step_async(self, actions: Any) -> None:
        """Start a step of all sub-envs and return at once (Gymnasium's
        ``AsyncVectorEnv.step_async``); `step_wait` returns what
        `step` would have.  The instances step on a background thread
        (the batched env's `send`), so the
        caller's Python runs meanwhile.  Bad actions raise here, before
        anything is sent; a second ``step_async`` before ``step_wait``, or a
        ``step`` in between, raises `AsyncStateError`:

        ```python
        envs.step_async(actions)
        ...                                   # e.g. a learner update
        obs, rew, term, trunc, infos = envs.step_wait()
        ```
        """
        self._check_open("step_async")
        self._refuse_started("step_async")
        self._refuse_unreset("step_async")
        self._unless_refused(self.venv.send, actions)

    def _refuse_started(self, what: str) -> None:
        """AsyncStateError for ``what()`` while a step `step_async` started
        runs (in this face's words: the batched env's are EnvPool's,
        send/recv)."""
        if self.venv._n_pending:
            raise AsyncStateError(f"{self.metadata['name']}: {what}() while a step started "
                                  "with step_async() runs: call step_wait() first (reset() "
                                  "drops it)")

    def _refuse_unreset(self, what: str) -> None:
        """StateError for ``what()`` before the first `reset` (or after a
        failed step left the instances needing one), in this face's words,
        before the other groups' actions are asked for."""
        if self.venv._needs_reset:
            raise StateError(f"{self.metadata['name']}: call reset() before {what}()")

    def _unless_refused(self, call: Callable[[Any], Any], actions: Any) -> Any:
        """``call`` (the batched env's step or send) with the batched actions;
        a refused call leaves the other groups' generator as it was."""
        state = self._rng.bit_generator.state
        try:
            return call(self._venv_actions(actions))
        except BaseException:
            self._rng.bit_generator.state = state
            raise

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The outputs of the step `step_async` started (waiting for it);
        without one, `AsyncStateError`."""
        self._check_open("step_wait")
        if not self.venv._n_pending:  # (the batched env's words are EnvPool's: recv/send)
            raise AsyncStateError(f"{self.metadata['name']}: step_wait() with no step "
                                  "started: call step_async(actions) first")
        out = self.venv.recv()
        infos = out[-1]
        ids = infos.pop("env_id")
        # step_async sent every instance in one send(): they come back in order
        assert np.array_equal(ids, np.arange(self.num_instances)), ids
        return self._outputs(out)

    def _venv_actions(self, actions: Any) -> Any:
        """The batched env's actions from ``(num_envs, ...)`` sub-env actions."""
        try:
            arr = np.asarray(actions)
        except Exception as exc:  # ragged nested sequences, an __array__ that fails
            raise InvalidActionError(f"actions cannot be read as an array: {exc!r}") from exc
        if arr.shape[:1] != (self.num_envs,) or arr.size != int(np.prod(self._act_shape)):
            want = (self.num_envs, *self._act_shape[2:])
            raise InvalidActionError(f"actions must have shape {want}, got {arr.shape}")
        act: np.ndarray | dict[str, Any] = arr.reshape(self._act_shape)
        if self.group is not None:
            act = {**self._other_actions(), self.group: act}
        return act

    def _outputs(self, out: tuple[Any, ...]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The sub-envs' outputs from the batched env's (all instances)."""
        obs, rew, term, trunc, vinfos = self._mine(out)
        infos = self._infos(vinfos)
        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            obs = self._same_step_infos(obs, term, trunc, vinfos, infos)
        return self._flat(obs), self._flat(rew), self._flat(term), self._flat(trunc), infos

    def _same_step_infos(self, obs: np.ndarray, term: np.ndarray, trunc: np.ndarray,
                         vinfos: dict[str, Any], infos: dict[str, Any]) -> np.ndarray:
        """Final observations and infos of every sub-env that finished this step.

        Agents of finished instances have them in ``vinfos["final_*"]`` (their
        ``obs`` row is already the reset one); agents that died early have their
        final values in this step's rows, which become idle (zero) rows."""
        done = term | trunc
        if not done.any():
            return obs
        n = self.num_envs
        inst_done = vinfos.get("_final_obs", np.zeros(self.num_instances, dtype=bool))
        early = done & ~inst_done[:, None]
        final_obs = np.zeros_like(obs)
        final_obs[early] = obs[early]
        obs = obs.copy()
        obs[early] = 0.0
        final: dict[str, Any] = {}
        flat_done = done.reshape(n)
        if inst_done.any():
            final_obs[inst_done] = vinfos["final_obs"][inst_done]
            src_final = vinfos["final_info"]
        else:
            src_final = None
        keys = ("alive", "active", *self.info_names)
        for key in keys:
            step_vals = np.asarray(vinfos[key]).copy()
            if key == "active":
                # this step's rows of early finishers were real
                step_vals = np.where(early, True, step_vals)
            if src_final is not None:
                step_vals[inst_done] = src_final[key][inst_done]
            vals = step_vals.reshape(n)
            final[key] = np.where(flat_done, vals, np.zeros_like(vals))
            final[f"_{key}"] = flat_done.copy()
        # early finishers are idle from now on: their current rows are padding
        infos["active"] = infos["active"] & ~early.reshape(n)
        for name in self.info_names:
            infos[name] = np.where(early.reshape(n), 0.0, infos[name])
            infos[f"_{name}"] = infos["active"]
        infos["final_obs"] = final_obs.reshape((n, *obs.shape[2:]))
        infos["_final_obs"] = flat_done.copy()
        infos["final_info"] = final
        infos["_final_info"] = flat_done.copy()
        return obs

    def snapshot(self) -> EnvSnapshot:
        """Every sub-env's state (every instance of the batched env, and the
        generator of the other groups' random actions) as an
        `EnvSnapshot`:

        ```python
        snap = envs.snapshot()
        out_a = envs.step(actions)
        envs.restore(snap)
        out_b = envs.step(actions)     # identical to out_a
        ```

        It restores into this VectorEnv or a new one of the same model,
        configuration and group (any executor and thread count)."""
        self._check_open("snapshot")
        self._refuse_started("snapshot")
        snap = self.venv.snapshot()
        mine = {"venv": snap.state, "group": self.group,
                "rng": copy.deepcopy(self._rng.bit_generator.state)}
        return dataclasses.replace(snap, face="agent_vector", state=mine)

    def restore(self, snap: EnvSnapshot) -> tuple[np.ndarray, dict[str, Any]]:
        """Go back to a `snapshot`; returns ``(obs, infos)`` as ``reset()``
        does.  A snapshot of another model, configuration, group or face, or
        damaged bytes, raise `SnapshotError` and change
        nothing."""
        self._check_open("restore")
        name = self.metadata["name"]
        if not isinstance(snap, EnvSnapshot) or snap.face != "agent_vector":
            what = snap.face if isinstance(snap, EnvSnapshot) else type(snap).__name__
            raise SnapshotError(f"{name}: restore() takes an agent_vector_env's snapshot(), "
                                f"got {what!r}")
        check_intact(snap, name)
        self._refuse_started("restore")
        st = snap.state
        # "last" (the other groups' last outputs, which the restored outputs
        # are) is no longer written, and ignored where an older snapshot has
        # it: a forged one was handed to ``others`` unchecked
        if not (type(st) is dict and {"venv", "group", "rng"} <= set(st)
                and set(st) <= {"venv", "group", "rng", "last"}):
            raise SnapshotError(f"{name}: the snapshot is malformed")
        if st["group"] != self.group:
            raise SnapshotError(f"{name}: the snapshot is of group {st['group']!r}, this "
                                f"VectorEnv steps {self.group!r}")
        rng = generator_of(st["rng"], name, "other groups' generator")
        if rng is None:
            raise SnapshotError(f"{name}: the snapshot is malformed (no generator state for "
                                "the other groups' actions)")
        obs, vinfos = self._mine(self.venv.restore(
            dataclasses.replace(snap, face="vector", state=st["venv"])))
        self._rng = rng
        return self._flat(obs), self._infos(vinfos)

    def _check_open(self, what: str) -> None:
        if self.venv._closed():
            raise ClosedError(f"{self.metadata['name']}: {what}() on a closed env")

    def render(self) -> None:
        """Nothing to show (``render_mode`` is None): a warning, as the envs give."""
        self._check_open("render")
        gymnasium.logger.warn("render() called with render_mode=None")
        return None

    def close_extras(self, **kwargs: Any) -> None:
        venv = getattr(self, "venv", None)  # absent if __init__ failed
        if venv is not None:
            venv.close()

    def __repr__(self) -> str:
        return (f"AgentVectorEnv({self.metadata['name']}, {self.num_instances} instances x "
                f"{self.num_agents} agents = {self.num_envs} sub-envs)")


def random_actions(g: Any, mask: np.ndarray | None, B: int,
                   rng: np.random.Generator) -> np.ndarray:
    """Uniformly random actions of group ``g`` for ``B`` instances that its
    ``(B, count, mask_len)`` masks allow (every choice without a mask)."""
    n = g.count
    if g.action_kind == "box":
        return rng.uniform(g.action_low, g.action_high, (B, n, g.action_dim)).astype(np.float32)
    sizes = [g.action_n] if g.action_kind == "discrete" else list(g.nvec)
    out = np.zeros((B, n, len(sizes)), np.int64)
    off = 0
    for j, k in enumerate(sizes):
        if mask is None:
            out[:, :, j] = rng.integers(0, k, (B, n))
        else:
            # the r-th allowed choice, r uniform among the allowed ones
            m = np.asarray(mask[:, :, off:off + k], bool)
            counts = m.sum(axis=2)
            r = (rng.random((B, n)) * np.maximum(counts, 1)).astype(np.int64)
            out[:, :, j] = (np.cumsum(m, axis=2) > r[:, :, None]).argmax(axis=2)
        off += k
    return out[:, :, 0] if g.action_kind == "discrete" else out


def random_batched_actions(venv: SeerVectorEnv, rng: np.random.Generator) -> Any:
    """Uniformly random actions for every agent of a batched env, within the
    masks of its last outputs (`random_actions` group by group): one
    array for a model with one group, a dict group -> array otherwise."""
    rt = venv.runtime
    acts = {g.name: random_actions(
        g, venv._mask_rows(gi, rt.mask[:, g.first:g.first + g.count]) if g.mask_len else None,
        venv.num_envs, rng) for gi, g in enumerate(venv.groups)}
    return acts if venv.grouped else acts[venv.groups[0].name]


def agent_vector_env(
    vector_env: Callable[..., SeerVectorEnv], num_envs: int, **config: Any
) -> AgentVectorEnv:
    """``AgentVectorEnv`` over ``vector_env(num_envs, copy=False, **config)``.

    ``config`` may hold ``copy=`` (for the returned arrays), ``group=``,
    ``others=``, ``global_state_in_infos=`` and ``autoreset_mode=``; the rest goes to
    the env.  Env modules call it as
    ``agent_vector_env(vector_env, num_envs, **config)``.
    """
    copy = config.pop("copy", True)
    group = config.pop("group", None)
    others = config.pop("others", None)
    in_infos = config.pop("global_state_in_infos", False)
    venv = vector_env(num_envs, copy=False, **config)
    try:
        return AgentVectorEnv(venv, copy=copy, group=group, others=others,
                              global_state_in_infos=in_infos)
    except BaseException:  # refused, or out of memory: the runtime made is closed
        venv.close()
        raise
