"""RLlib adapter: seer_env envs as RLlib ``MultiAgentEnv``s (new API stack).

This module imports Ray (``pip install 'seer_env[rllib]'``; without it,
importing it raises [`MissingExtraError`][seer_env.errors.MissingExtraError],
an ``ImportError``).  ``seer_env.rllib``, the short path below, imports
without Ray: its helpers (`shared_policy`, `group_policies`, `env_creator`,
`UntruncatedEpisodesWarning`) are there at once, and `SeerMultiAgentEnv`, this
module's class, is imported with Ray the first time the name is looked up.

Example (PPO, one policy shared by every agent, two remote env runners):

```python
import ray
from ray.rllib.algorithms.ppo import PPOConfig
from seer_env.rllib import SeerMultiAgentEnv, shared_policy

ray.init(num_cpus=3)
config = (
    PPOConfig()
    .environment(SeerMultiAgentEnv,
                 env_config={"env": "pcs_v0", "width": 4, "height": 4, "threads": 1})
    .env_runners(num_env_runners=2)
    .multi_agent(**shared_policy("shared"))
    .training(train_batch_size_per_learner=2000, minibatch_size=500, num_epochs=2)
)
algo = config.build_algo()
print(algo.train()["env_runners"]["episode_return_mean"])
```

``env_config`` holds ``"env"`` (a name from `seer_env.ENVS`) and the env's
config (``threads=1`` suits env runners, which get one CPU each).

**The CPUs Ray gave the runner.**  Each remote env runner is a Ray actor
with ``num_cpus_per_env_runner`` CPUs (1 by default).  The env caps its
process's thread budget (`seer_env.budget`) at that, rounded up
(`take_ray_cpus`), so ``threads="auto"`` and every runtime of the runner's
process stay within the CPUs Ray reserved, and ``env.stpa.reason`` says so
when it binds.  Give the runners more CPUs to let STPA use pools:
``.env_runners(num_env_runners=2, num_cpus_per_env_runner=4)``.

What this adapter does that RLlib's ``ParallelPettingZooEnv`` does not:

* ``agents`` and ``possible_agents`` are lists in the env's order (not built
  from a set); ``agents`` is the agents the last results speak of: those
  alive now and those that finished in the last step (whose final
  observations it returned), as RLlib's env checker requires (every key of a
  step's results must be in ``agents``; with the alive ones only, a death in
  the checker's step failed the build of the env runners), the episode's
  last step included (emptied there, an episode that ended in the checker's
  one step -- ``max_cycles=1``, every prey of a small Hunt grid caught at
  once -- failed the build).  So, unlike a PettingZoo ``ParallelEnv``'s,
  ``agents`` is not empty once the episode is over: end a loop on
  ``terminateds["__all__"] or truncateds["__all__"]`` (RLlib's way) or on
  ``agents_alive``, the live ones alone (``while env.agents_alive:``);
* ``__all__``: the episode ends when no agent is alive, even when, in the
  last step, one agent terminated and another truncated (``ParallelPettingZooEnv``
  sets ``__all__`` to ``all(...)`` of each dict and then never ends such an
  episode).  Exactly one of ``terminateds["__all__"]`` and
  ``truncateds["__all__"]`` is True then: ``truncateds`` if any agent
  finishing in that step was truncated without terminating, else
  ``terminateds`` (an agent both terminated and truncated in one step, as
  at ``max_cycles`` in the step that ends it, terminated: no value to
  bootstrap, as Gymnasium reads the pair and as the TorchRL face says);
* flags are Python ``bool``, rewards Python ``float`` (never ``np.bool_``,
  ``np.float32`` or arrays);
* infos have exactly the keys of the observations (the agents that acted),
  with plain-float values (``info_keys=`` in ``env_config`` chooses them, as
  for the ParallelEnv).

RLlib's own checker (``check_multiagent_environments``) runs on it when
RLlib builds the env runners (leave ``disable_env_checking`` False).

**Global state (centralised critics).**  ``MultiAgentEnv`` has no global-state
method, and RLlib's centralised-critic examples build the critic's input from
what the episodes hold: the new API stack's MAPPO example
(``rllib/examples/algorithms/mappo``, ``pettingzoo_shared_value_function.py``)
concatenates every agent's observations, which works with this adapter as it
is; per-agent extras that are not observations travel in the infos, read back
from the episodes by a learner connector (``sa_episode.get_infos()``, as the
``RewardsFromInfosConnector`` of RLlib's ``two_agent_cartpole_with_global_observations``
example does).  That is where this adapter puts the model's own global state:
with ``env_config["global_state_in_infos"] = True`` every agent's info dict of
``reset`` and ``step`` holds ``"state"``, the instance's global state (a read-only
float32 array of ``state_dim``, the same for every agent of that step, equal to
the ParallelEnv's ``state()``; ``env.state_space`` is its space).  It is off by
default: it costs a native call per step.  ``env.state()`` returns it at any
time, as PettingZoo's ``state()`` does:

```python
env_config = {"env": "pcs_v0", "global_state_in_infos": True}
# in a learner connector: for each single-agent episode,
#   states = np.stack([info["state"] for info in sa_episode.get_infos()])
```

**Agent groups and masks.**  A model with groups gives each agent its group's
spaces; [`group_policies`][seer_env.adapters.rllib.group_policies] maps each
group to a policy of its own (a policy per group, as RLlib's multi-agent
examples do with predators and prey).
A masked group's observation is a dict with ``"action_mask"`` (1 = allowed; a
multi-discrete action's components one after another) beside the
observation, under ``"observation"`` as PettingZoo has it, or under the key
``env_config["observation_key"]`` names: ``"observations"`` is what RLlib's
action-masking RLModule (its ``action_masking`` example) reads:

```python
from ray.rllib.algorithms.ppo import PPOConfig
from seer_env.rllib import SeerMultiAgentEnv, group_policies

config = PPOConfig().environment(SeerMultiAgentEnv,
                                 env_config={"env": "hunt_v0",
                                             "observation_key": "observations"})
config.multi_agent(**group_policies({"env": "hunt_v0"}))
```

RLlib's env checker (on by default) steps the env with
``get_action_space(agent).sample()``: a masked agent's space samples within
the mask the agent has now (`seer_env.faces.DiscreteMasked`,
`seer_env.faces.MultiDiscreteMasked`), so the checker passes with masks
enforced.  A space RLlib copies to its learners is a plain one (unbound).

**``episode_return_mean`` is NaN.**  RLlib's ``env_runners/episode_return_mean``
(and ``episode_len_mean``, ``module_episode_returns_mean``) are means over the
episodes that *ended* in the iteration; when none did, they are NaN (or the key
is missing, on Ray 2.60) and no error is logged.  It is not a failure of the
env: an episode ends (``__all__``) when its last agent terminates or is
truncated, and with ``max_cycles=0`` nothing is truncated, so an episode of
Hunt lasts until every prey is caught: prey that learned to evade, or
predators that learned to wander, make it outlast an iteration's sampling (each
env runner samples ``train_batch_size_per_learner / num_env_runners`` env steps
per iteration, carrying an unfinished episode into the next).  This adapter
warns (`UntruncatedEpisodesWarning`) when ``max_cycles`` is 0.  Keep a
``max_cycles`` (each model has a default: Hunt's is 100) no larger than that
per-runner sample, and read ``env_runners/num_episodes`` beside the mean.  With
Hunt's defaults, PPO with RLlib's ``ActionMaskingTorchRLModule`` and one
policy per group ran 10 iterations of 4,000 steps with 87-111 episodes in each
and a finite mean throughout.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from importlib.util import find_spec
from typing import Any, cast

import gymnasium
import numpy as np

from .._bind.runtime import yes_no
from ..errors import ConfigError, MissingExtraError, SeerError, SnapshotError, StateError
from ..faces import EnvSnapshot
from ..faces.common import raised_by_seer
from ..faces.snapshot import check_intact
from ..registry import make
from .rllib_config import (
    UntruncatedEpisodesWarning,
    group_policies,
    ray_assigned_cpus,
    shared_policy,
    take_ray_cpus,
)

# RLlib's MultiAgentEnv is this module's base class: without Ray it cannot be
# imported at all (seer_env.rllib, the short path, can)
if find_spec("ray") is None:
    raise MissingExtraError(
        "seer_env.adapters.rllib (SeerMultiAgentEnv) needs Ray's RLlib; not installed: "
        "ray.  Install it with: pip install 'seer_env[rllib]'")

from ray.rllib.env.multi_agent_env import MultiAgentEnv

__all__ = ["SeerMultiAgentEnv", "shared_policy", "group_policies", "env_creator",
           "UntruncatedEpisodesWarning", "ray_assigned_cpus", "take_ray_cpus", "check_nodes"]


_NO_TRUNCATION = (
    "{name}: max_cycles=0, so the runtime truncates no episode: one ends only when the "
    "model has finished every agent, however long that takes.  RLlib "
    "reports env_runners/episode_return_mean (and episode_len_mean) only for the "
    "episodes that ended in an iteration, and NaN (or no such key) when none did, "
    "with no error: give max_cycles, at most the env steps each env runner samples "
    "in an iteration (train_batch_size_per_learner / num_env_runners)")


def _rename_obs(obs: dict[str, Any], key: str) -> dict[str, Any]:
    """Masked agents' observation dicts with the observation under ``key``."""
    return {a: {key: o["observation"], "action_mask": o["action_mask"]}
            if isinstance(o, dict) else o for a, o in obs.items()}


def _to_python_infos(infos: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each agent's infos with its numbers as Python floats and its arrays (an
    ``action_mask`` where the env was made with ``mask_in_infos``) as copies
    (``float()`` of a mask raised TypeError on every reset)."""
    return {a: {k: float(v) if np.ndim(v) == 0 else np.array(v) for k, v in d.items()}
            for a, d in infos.items()}


class SeerMultiAgentEnv(MultiAgentEnv):
    """A seer_env ParallelEnv as an RLlib ``MultiAgentEnv`` (see the module docstring).

    Args:
        config: ``{"env": name, **env config}`` (RLlib's ``env_config``; an
            ``EnvContext`` works too).
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        cfg = dict(config or {})
        if "env" not in cfg:
            raise ConfigError("env_config needs 'env', e.g. {'env': 'pcs_v0', ...}")
        name = cfg.pop("env")
        self._obs_key = str(cfg.pop("observation_key", "observation"))
        #: whether reset/step put the global state in every agent's infos
        self.global_state_in_infos = yes_no("global_state_in_infos",
                                            cfg.pop("global_state_in_infos", False))
        self._cut_short = False
        #: the process's thread budget, set from the CPUs Ray assigned to this
        #: env runner where Ray assigned some (`take_ray_cpus`), else None
        self.ray_budget = take_ray_cpus()
        self.par_env = make(name, api="parallel", **cfg)
        if self.par_env.max_cycles == 0:
            warnings.warn(_NO_TRUNCATION.format(name=name), UntruncatedEpisodesWarning,
                          stacklevel=2)
        self.metadata = self.par_env.metadata
        self.render_mode = self.par_env.render_mode
        self.possible_agents = list(self.par_env.possible_agents)
        self._agent_ids = set(self.possible_agents)
        self.observation_spaces = {
            a: self._space(self.par_env.observation_space(a)) for a in self.possible_agents
        }
        self.action_spaces = {a: self.par_env.action_space(a) for a in self.possible_agents}
        # the old API stack reads these; RLlib's checker needs them present
        # (keyed by the agents' names: str, where RLlib's AgentID is any hashable)
        self.observation_space = gymnasium.spaces.Dict(
            cast("dict[str, gymnasium.Space]", self.observation_spaces))
        self.action_space = gymnasium.spaces.Dict(
            cast("dict[str, gymnasium.Space]", self.action_spaces))
        #: the global state's space (``state()``, ``infos[agent]["state"]``)
        self.state_space = self.par_env.state_space

    def _space(self, space: Any) -> Any:
        if self._obs_key == "observation" or not isinstance(space, gymnasium.spaces.Dict):
            return space
        return gymnasium.spaces.Dict({self._obs_key: space["observation"],
                                      "action_mask": space["action_mask"]})

    def _obs(self, obs: dict[str, Any]) -> dict[str, Any]:
        return obs if self._obs_key == "observation" else _rename_obs(obs, self._obs_key)

    def _infos(self, infos: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        out = _to_python_infos(infos)
        if self.global_state_in_infos and out:
            st = self.par_env.state()
            st.flags.writeable = False  # one array, shared by every agent's infos
            for d in out.values():
                d["state"] = st
        return out

    def state(self) -> Any:
        """The global state now (the ParallelEnv's ``state()``, float32)."""
        return self.par_env.state()

    @property
    def agents(self) -> list[Any]:
        """The agents the last results speak of: alive now (the ParallelEnv's,
        so never behind it) or finished in the last step, the episode's last
        included (RLlib's checker; loop on `agents_alive` to end with the
        episode):

        ```python
        obs, infos = env.reset(seed=0)
        while env.agents_alive:
            obs, rew, term, trunc, infos = env.step(
                {a: env.get_action_space(a).sample() for a in env.agents_alive})
        assert set(obs) <= set(env.agents)     # the last step's agents
        ```
        """
        par_env = self.__dict__.get("par_env")
        if par_env is None:
            return []
        just = self.__dict__.get("_just_finished", ())
        if not just:
            return list(par_env.agents)
        keep = set(par_env.agents) | set(just)
        return [a for a in self.possible_agents if a in keep]

    @agents.setter
    def agents(self, value: Any) -> None:  # MultiAgentEnv.__init__ sets it
        pass

    @property
    def agents_alive(self) -> list[Any]:
        """The agents alive now (those that act in the next step)."""
        par_env = self.__dict__.get("par_env")
        return [] if par_env is None else list(par_env.agents)

    # reset and step: dicts keyed by the agents' names (str), where RLlib's
    # types allow any hashable AgentID and gymnasium.Env's step is one agent's
    def reset(  # type: ignore[override]  # str agent ids (see above)
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        cut, self._cut_short = self._cut_short, True  # until this call is done (see step)
        try:
            obs, infos = self.par_env.reset(seed=seed, options=options)
        except SeerError as exc:  # refused, or failed and the ParallelEnv says so
            if raised_by_seer(exc):
                self._cut_short = cut
            raise
        out = self._obs(obs), self._infos(infos)
        self._just_finished: tuple[Any, ...] = ()
        self._cut_short = False
        return out

    def step(self, action_dict: dict[str, Any]) -> tuple[  # type: ignore[override]  # (above)
        dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, Any]
    ]:
        if self._cut_short:
            raise StateError(f"{self.par_env.seer_model.name}: the last reset() or step() "
                             "was interrupted before it finished; call reset()")
        # set first: a KeyboardInterrupt between the ParallelEnv's step and
        # the end of this one would lose that step's flags (RLlib would not
        # end the episode of an agent that finished in it)
        self._cut_short = True
        try:
            obs, rew, term, trunc, infos = self.par_env.step(action_dict)
        except SeerError as exc:  # refused, or failed and the ParallelEnv says so
            if raised_by_seer(exc):
                self._cut_short = False
            raise
        rewards = {a: float(r) for a, r in rew.items()}
        terminateds = {a: bool(x) for a, x in term.items()}
        truncateds = {a: bool(x) for a, x in trunc.items()}
        self._just_finished = tuple(a for a in obs if terminateds[a] or truncateds[a])
        over = not self.agents_alive
        # cut short: an agent truncated without terminating (one that did
        # both, at max_cycles, terminated: as Gymnasium reads the pair, and
        # as the TorchRL face's root flags say)
        cut = any(truncateds[a] and not terminateds[a] for a in truncateds)
        terminateds["__all__"] = over and not cut
        truncateds["__all__"] = over and cut
        out = self._obs(obs), rewards, terminateds, truncateds, self._infos(infos)
        self._cut_short = False
        return out

    def snapshot(self) -> EnvSnapshot:
        """The env's state: the ParallelEnv's
        (`seer_env.env.SeerParallelEnv.snapshot`) and the agents that
        finished in the last step (`agents` still names them)."""
        if self._cut_short:
            raise StateError(f"{self.par_env.seer_model.name}: the last reset() or step() "
                             "was interrupted before it finished; call reset()")
        snap = self.par_env.snapshot()
        just = tuple(self.__dict__.get("_just_finished", ()))
        return dataclasses.replace(snap, face="rllib",
                                   state={"parallel": snap.state, "just_finished": just})

    def restore(self, snap: EnvSnapshot) -> tuple[dict[str, Any], dict[str, Any]]:
        """Go back to a `snapshot` of an env of the same model and
        configuration; returns ``(obs, infos)`` of the live agents, as
        ``reset`` does.  Anything else raises
        `SnapshotError` and changes nothing."""
        name = self.par_env.seer_model.name
        st = snap.state if isinstance(snap, EnvSnapshot) else None
        if not isinstance(snap, EnvSnapshot) or snap.face != "rllib":
            what = snap.face if isinstance(snap, EnvSnapshot) else type(snap).__name__
            raise SnapshotError(f"{name}: restore() takes this adapter's snapshot(), got "
                                f"{what!r}")
        check_intact(snap, name)
        if not (isinstance(st, dict) and isinstance(st.get("parallel"), dict)
                and isinstance(st.get("just_finished"), tuple)
                and set(st["just_finished"]) <= self._agent_ids):
            raise SnapshotError(f"{name}: the snapshot is malformed")
        obs, infos = self.par_env.restore(
            dataclasses.replace(snap, face="parallel", state=st["parallel"]))
        self._just_finished = st["just_finished"]
        self._cut_short = False
        return self._obs(obs), self._infos(infos)

    def render(self) -> Any:
        return self.par_env.render()

    def close(self) -> None:
        self.par_env.close()


def env_creator(env_config: Mapping[str, Any]) -> SeerMultiAgentEnv:
    """``SeerMultiAgentEnv(env_config)``; for ``ray.tune.registry.register_env``."""
    return SeerMultiAgentEnv(env_config)


def check_nodes(env_config: Mapping[str, Any], timeout_s: float = 120.0) -> dict[str, str]:
    """Make the env of ``env_config`` once on every alive node of the Ray
    cluster this process is connected to (``ray.init`` first) and close it;
    returns ``{node_id: hostname}``.

    Where an env runner cannot make its env (a model folder missing on its
    node, a configuration its node's seer_env refuses), RLlib logs the
    runner's error and ``build_algo()`` raises ``IndexError: list index out of
    range`` from ``get_spaces``, without the cause.  Call this before
    ``build_algo()``: it raises a `ConfigError` naming each node that failed
    (address, host and our message: e.g. "no such model folder on node-7 ...")
    or that did not answer within ``timeout_s`` seconds.  Each node's probe
    asks for no CPU (it runs beside busy runners).

    ```python
    ray.init(address="auto")
    check_nodes({"env": "path/to/mymodel", "threads": 1})   # before build_algo()
    ```
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    if not ray.is_initialized():
        raise StateError("check_nodes: connect to the cluster first (ray.init(address=...))")
    cfg = dict(env_config)

    def probe(cfg: dict[str, Any]) -> str:  # on the node
        import socket

        env = SeerMultiAgentEnv(cfg)
        try:
            env.reset(seed=0)
        finally:
            env.close()
        return socket.gethostname()

    task = ray.remote(num_cpus=0, max_retries=0)(probe)
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    refs = {n["NodeID"]: task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        n["NodeID"], soft=False)).remote(cfg) for n in nodes}
    _, late = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s)
    hosts: dict[str, str] = {}
    failures: list[str] = []
    for n in nodes:
        node, ref = n["NodeID"], refs[n["NodeID"]]
        where = f"node {n.get('NodeManagerAddress', '?')} ({node[:8]})"
        if ref in late:
            ray.cancel(ref, force=True)
            failures.append(f"{where}: no answer within {timeout_s:g} s")
            continue
        try:
            hosts[node] = ray.get(ref)
        except Exception as exc:  # the task's error, raised here as a RayTaskError
            cause = getattr(exc, "cause", None) or exc
            failures.append(f"{where}: {type(cause).__name__}: {cause}")
    if failures:
        raise ConfigError(
            f"the env {cfg.get('env')!r} cannot be made on {len(failures)} of {len(nodes)} "
            f"Ray node(s): " + "; ".join(failures))
    return hosts
