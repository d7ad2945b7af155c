"""A Gymnasium ``VectorEnv`` over every agent of every instance: parameter sharing.

Each env module has ``agent_vector_env(num_envs, **config)``: ``num_envs``
instances of the env stepped together in one runtime, seen as one
:class:`gymnasium.vector.VectorEnv` whose sub-envs are the agents, so a single
policy network acts for all of them (parameter sharing, as in CleanRL-style
training scripts)::

    import numpy as np
    from gymnasium.wrappers.vector import RecordEpisodeStatistics
    from seer_env.envs import pcs_v0

    envs = RecordEpisodeStatistics(pcs_v0.agent_vector_env(4, width=8, height=8, threads=2))
    print(envs.num_envs)                  # 4 instances x 64 cells = 256 sub-envs
    obs, infos = envs.reset(seed=0)       # obs.shape == (256, 16)
    for _ in range(10):
        actions = envs.action_space.sample()          # shape (256,)
        obs, rewards, terminations, truncations, infos = envs.step(actions)

Sub-env ``j`` is agent ``j % A`` of instance ``j // A`` (``A`` agents per
instance); ``envs.agent_names[j]`` names it.  Spaces: ``single_observation_space``
and ``single_action_space`` are the env's per-agent spaces, ``observation_space``
and ``action_space`` their batched forms.  ``metadata["autoreset_mode"]`` is the
:class:`~gymnasium.vector.AutoresetMode` (``autoreset_mode=`` chooses it:
``NEXT_STEP`` by default, ``SAME_STEP``, ``DISABLED``).

**Dead agents.**  An instance runs until none of its agents is alive.  An agent
that finishes (terminated or truncated) while others of its instance go on
reports its flag in that step, as any Gymnasium sub-env does; its sub-env then
*idles* until its instance restarts: its observations are zeros, its rewards 0,
its flags False and its actions ignored, and ``infos["active"]`` is False for
it.  When the instance restarts (autoreset, or a reset), every one of its
sub-envs gets its real reset observation.  So a learner should drop samples
whose ``infos["active"]`` is False (``examples/ppo_pcs.py`` does).  With
``SAME_STEP`` an agent that dies early gets the zero (idle) observation in the
step where it finishes, its final observation in ``infos["final_obs"]``.
``RecordEpisodeStatistics`` reports exact returns and lengths for every
episode that does not follow such an idle stretch; after one, the idle steps
count into the next episode's length (their rewards are 0, so returns stay
exact).  Where all agents of an instance finish together (PCS, PHOLD), no
sub-env ever idles.

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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from .env import SeerVectorEnv
from .errors import ClosedError, ConfigError, InvalidActionError

__all__ = ["AgentVectorEnv", "agent_vector_env"]


class AgentVectorEnv(gymnasium.vector.VectorEnv):
    """Every agent of every instance of a :class:`~seer_env.env.SeerVectorEnv` as one
    sub-env of a Gymnasium ``VectorEnv`` (see the module docstring).

    Args:
        venv: the batched env; it must have been made with ``copy=False`` (this
            class copies once itself).
        copy: return fresh arrays (default) or read-only views.

    Attributes:
        venv: the underlying batched env (``venv.runtime`` is the native runtime).
        num_instances: ``B``; ``num_agents``: ``A``; ``num_envs`` is ``B * A``.
        agent_names: the agent name of each sub-env.
    """

    def __init__(self, venv: SeerVectorEnv, copy: bool = True) -> None:
        if venv.copy:
            raise ConfigError("AgentVectorEnv needs a vector env made with copy=False")
        self.venv = venv
        self.copy = bool(copy)
        self.num_instances = venv.num_envs
        self.num_agents = venv.num_agents
        self.num_envs = self.num_instances * self.num_agents
        self.single_observation_space = venv.single_observation_space
        self.single_action_space = venv.single_action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.autoreset_mode = venv.autoreset_mode
        self.metadata = {
            "name": venv.seer_model.name,
            "autoreset_mode": venv.autoreset_mode,
            "render_modes": [],
        }
        self.render_mode = None
        self.agent_names = [a for _ in range(self.num_instances) for a in venv.possible_agents]
        self.info_names = tuple(venv.info_names)
        sz = venv.sizes
        if sz.action_kind == "discrete":
            self._act_shape: tuple[int, ...] = (self.num_instances, self.num_agents)
        else:
            self._act_shape = (self.num_instances, self.num_agents, sz.action_dim)
        self._all = np.ones(self.num_envs, dtype=bool)

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
        return infos

    # -- API ----------------------------------------------------------------------

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset all instances (or the whole instances in ``options["reset_mask"]``)."""
        self._check_open("reset")
        if options is not None and not isinstance(options, Mapping):
            raise ConfigError(f"options={options!r} must be a dict (or None)")
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
        obs, vinfos = self.venv.reset(seed=seed, options=options)
        return self._flat(obs), self._infos(vinfos)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step all sub-envs; ``actions`` has shape ``(num_envs,)`` (discrete) or
        ``(num_envs, dim)`` (Box).  Actions of idle sub-envs are ignored."""
        self._check_open("step")
        try:
            arr = np.asarray(actions)
        except Exception as exc:  # ragged nested sequences, an __array__ that fails
            raise InvalidActionError(f"actions cannot be read as an array: {exc!r}") from exc
        if arr.shape[:1] != (self.num_envs,) or arr.size != int(np.prod(self._act_shape)):
            want = (self.num_envs, *self._act_shape[2:])
            raise InvalidActionError(f"actions must have shape {want}, got {arr.shape}")
        obs, rew, term, trunc, vinfos = self.venv.step(arr.reshape(self._act_shape))
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


def agent_vector_env(
    vector_env: Callable[..., SeerVectorEnv], num_envs: int, **config: Any
) -> AgentVectorEnv:
    """``AgentVectorEnv`` over ``vector_env(num_envs, copy=False, **config)``.

    ``config`` may hold ``copy=`` (for the returned arrays) and
    ``autoreset_mode=``; the rest goes to the env.  Env modules call it as
    ``agent_vector_env(vector_env, num_envs, **config)``.
    """
    copy = config.pop("copy", True)
    return AgentVectorEnv(vector_env(num_envs, copy=False, **config), copy=copy)
