"""AgileRL's multi-agent on-policy loop on Aircraft, without importing AgileRL.

AgileRL pins ``pettingzoo<1.27`` (and much else), so it cannot live in our
venv; these helpers copy, line for line, what its vectorised PettingZoo
training does with a ``ParallelEnv`` (AgileRL 2.x:
``agilerl.vector.pz_async_vec_env._async_worker`` / ``process_transition`` /
``get_placeholder_value``, ``agilerl.vector.pz_vec_env.PettingZooVecEnv.step``
and ``agilerl.training.train_multi_agent_on_policy``):

* for every ``possible_agent`` missing from a returned dict (an agent that
  finished at an earlier step, as PettingZoo's convention wants) the worker
  writes a placeholder: an all-NaN observation, NaN reward, NaN
  termination and truncation, ``{}`` info;
* IPPO builds its networks with ``placeholder_value=None``, so those NaN rows
  go through the actor and critic as they are (NaN actions, log-probs,
  values), and ``IPPO.learn`` neither masks nor drops them: GAE, the
  minibatch advantage normalisation and the losses turn NaN, and after the
  first ``learn`` every weight is NaN;
* ``PettingZooVecEnv.step`` drops an all-NaN action before it reaches the env,
  so once the weights are NaN no live agent gets an action (our env then
  refuses: "missing actions for live agent(s)"; a plain PettingZoo env raises
  KeyError).

So the NaN is AgileRL's, and our outputs are finite (checked below under that
exact sequence). The working setting is SuperSuit's ``black_death_v3`` inside
the env factory (dead agents keep a zero observation and a zero reward until
every agent is done), checked below to give the learner only finite values
through deaths, the last step of an episode and AgileRL's autoreset.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

from seer_env.envs import aircraft_v0


def _make(black_death: bool) -> Any:
    env = aircraft_v0.parallel_env(num_uavs=8, max_cycles=200, threads=1)
    if black_death:
        ss = pytest.importorskip("supersuit")
        env = ss.black_death_v3(env)
    return env


def _placeholder(name: str, space: spaces.Box) -> Any:
    """``get_placeholder_value`` for a Box observation space."""
    if name == "info":
        return {}
    if name == "observation":
        return np.full(space.shape or (), np.nan)
    return np.nan  # reward, terminated, truncated


def _process_transition(transition: tuple[dict, ...], names: list[str],
                        agents: list[str], obs_spaces: dict) -> list[dict]:
    """``process_transition``: a value for every possible agent."""
    return [{a: (t[a] if a in t else _placeholder(n, obs_spaces[a])) for a in agents}
            for t, n in zip(transition, names, strict=True)]


class _Worker:
    """``_async_worker`` for one sub-env: step, autoreset, placeholders; the
    observation is written into a float32 buffer as the shared memory does."""

    def __init__(self, env: Any, agents: list[str]) -> None:
        self.env, self.agents = env, agents
        self.obs_spaces = {a: env.observation_space(a) for a in agents}
        self.raw: tuple[dict, ...] = ()  # what our env returned, for the checks

    def _write(self, observation: dict) -> dict:
        return {a: np.asarray(observation[a], dtype=self.obs_spaces[a].dtype).reshape(
            self.obs_spaces[a].shape) for a in self.agents}

    def reset(self, seed: int) -> tuple[dict, dict]:
        obs, info = self.env.reset(seed=seed)
        self.raw = (obs, {}, {}, {}, info)
        observation, info = _process_transition((obs, info), ["observation", "info"],
                                                self.agents, self.obs_spaces)
        return self._write(observation), info

    def step(self, data: dict) -> tuple[dict, ...]:
        data = {a: (np.array(data[a]).squeeze() if not isinstance(data[a], int) else data[a])
                for a in data}
        observation, reward, terminated, truncated, info = self.env.step(data)
        self.raw = (observation, reward, terminated, truncated, info)
        reset = all(te | tr for te, tr in zip(terminated.values(), truncated.values(),
                                              strict=False))
        if reset:
            observation, info = self.env.reset()
        out = _process_transition(
            (observation, reward, terminated, truncated, info),
            ["observation", "reward", "terminated", "truncated", "info"],
            self.agents, self.obs_spaces)
        out[0] = self._write(out[0])
        return (*out, reset)


class _VecEnv:
    """``AsyncPettingZooVecEnv`` (``PettingZooVecEnv.step``, ``step_wait``) over
    workers run in this process: the same values, no subprocesses."""

    def __init__(self, envs: list[Any]) -> None:
        self.agents = list(envs[0].possible_agents)
        self.workers = [_Worker(e, self.agents) for e in envs]
        self.resets = 0

    def _stack_obs(self, per_env: list[dict]) -> dict:
        return {a: np.stack([o[a] for o in per_env]) for a in self.agents}

    def reset(self, seed: int) -> tuple[dict, list]:
        res = [w.reset(seed + i) for i, w in enumerate(self.workers)]
        return self._stack_obs([r[0] for r in res]), [r[1] for r in res]

    def step(self, actions: dict[str, np.ndarray]) -> tuple[dict, ...]:
        passed = []
        for i in range(len(next(iter(actions.values())))):
            env_actions = {}
            for agent_id, action in actions.items():
                a = action[i]
                if np.isnan(a).all():  # "Skip if the action is NaN"
                    continue
                env_actions[agent_id] = int(a) if np.isscalar(a) else a
            passed.append(env_actions)
        res = [w.step(d) for w, d in zip(self.workers, passed, strict=True)]
        self.resets += sum(r[5] for r in res)
        rewards = {a: np.array([r[1][a] for r in res]) for a in self.agents}
        terms = {a: np.array([r[2][a] for r in res]) for a in self.agents}
        truncs = {a: np.array([r[3][a] for r in res]) for a in self.agents}
        return self._stack_obs([r[0] for r in res]), rewards, terms, truncs, [r[4] for r in res]


def _policy(obs: dict[str, np.ndarray], w: np.ndarray, rng: np.random.Generator) -> dict:
    """A stand-in for IPPO's Gaussian actor on raw observations (no placeholder
    replacement): NaN in, NaN out, then the loop's ``np.clip`` to the Box."""
    out = {}
    for a, o in obs.items():
        mean = np.tanh(o.astype(np.float64) @ w)
        out[a] = np.clip(mean + 0.6 * rng.standard_normal(mean.shape), -1.0, 1.0)
    return out


def _run(black_death: bool, steps: int = 300) -> dict[str, Any]:
    """The collection loop of ``train_multi_agent_on_policy`` (two sub-envs);
    returns what the learner would get and what our env returned."""
    vec = _VecEnv([_make(black_death) for _ in range(2)])
    rng = np.random.default_rng(0)
    n_obs = vec.workers[0].obs_spaces[vec.agents[0]].shape[0]
    w = rng.standard_normal((n_obs, 3)) / np.sqrt(n_obs)
    obs, _info = vec.reset(seed=0)
    seen = {"obs": [], "reward": [], "done": [], "placeholders": 0, "terminated": 0}
    ours_finite = True
    for _ in range(steps):
        action = _policy(obs, w, rng)
        seen["obs"].append(np.stack([obs[a] for a in vec.agents]))
        next_obs, reward, termination, truncation, _info = vec.step(action)
        for wk in vec.workers:
            raw_obs, raw_rew, raw_term, raw_trunc, raw_info = wk.raw
            base = getattr(wk.env, "unwrapped", wk.env)
            for a in raw_obs:
                ours_finite &= bool(np.isfinite(raw_obs[a]).all())
                ours_finite &= bool(base.observation_space(a).contains(
                    np.asarray(raw_obs[a], np.float32)))
            ours_finite &= all(np.isfinite(float(r)) for r in raw_rew.values())
            ours_finite &= all(np.isfinite(np.asarray(v, float)).all()
                               for i in raw_info.values() for v in i.values())
            seen["terminated"] += sum(bool(t) for t in raw_term.values())
            seen["placeholders"] += len(vec.agents) - len(raw_obs)
        seen["reward"].append(np.stack([reward[a] for a in vec.agents]))
        for agent_id in termination:  # the loop's next_done
            te, tr = termination[agent_id], truncation[agent_id]
            mask = ~(np.isnan(te) | np.isnan(tr))
            result = np.full_like(mask, np.nan, dtype=float)
            result[mask] = np.logical_or(te[mask], tr[mask])
            seen["done"].append(result)
        obs = next_obs
    seen["resets"] = vec.resets
    seen["ours_finite"] = ours_finite
    for k in ("obs", "reward", "done"):
        seen[k] = np.stack(seen[k])
    return seen


def test_the_nan_is_agilerls_placeholder_not_our_output() -> None:
    seen = _run(black_death=False)
    # agents died and episodes restarted through AgileRL's autoreset
    assert seen["terminated"] > 0 and seen["resets"] > 0
    # everything our env returned under that sequence is finite and in bounds
    assert seen["ours_finite"]
    # ... and yet the learner gets NaN: exactly AgileRL's placeholders for the
    # agents our step (PettingZoo's convention) no longer lists
    nan_rows = int(np.isnan(seen["obs"]).all(axis=-1).sum())
    assert nan_rows > 0
    assert np.isnan(seen["obs"]).any(axis=-1).sum() == nan_rows  # whole rows only
    assert int(np.isnan(seen["reward"]).sum()) == seen["placeholders"]


def test_black_death_gives_agilerl_only_finite_values() -> None:
    seen = _run(black_death=True)
    assert seen["terminated"] > 0 and seen["resets"] > 0
    assert seen["ours_finite"]
    assert np.isfinite(seen["obs"]).all()
    assert np.isfinite(seen["reward"]).all()
    assert np.isfinite(seen["done"]).all()
    # dead agents were exercised: black_death's zero observation rows
    assert (seen["obs"] == 0).all(axis=-1).any()
    low = aircraft_v0.parallel_env(num_uavs=8, threads=1).observation_space("uav_0")
    assert ((seen["obs"] >= low.low) & (seen["obs"] <= low.high)).all()


def _legal(space: Any, mask: np.ndarray, rng: np.random.Generator) -> Any:
    """A random action the mask allows (a multi-discrete one part by part), as
    a policy sampling from masked logits draws."""
    if hasattr(space, "nvec"):
        out, off = [], 0
        for k in space.nvec:
            out.append(rng.choice(np.flatnonzero(mask[off:off + int(k)])))
            off += int(k)
        return np.array(out, dtype=np.int64)
    return int(rng.choice(np.flatnonzero(mask)))


def test_masks_in_infos_drive_a_masked_policy_through_whole_episodes() -> None:
    """AgileRL reads masks from ``infos[agent]["action_mask"]``
    (``extract_action_masks``), not from the observation dict: with
    ``mask_in_infos=True`` every masked agent's infos hold its mask (equal to
    the observation's, a copy of its own) at reset and at every step, and a
    policy drawing only from those masks plays Hunt through whole episodes
    without one refused action; without the option the infos hold no mask."""
    from seer_env.envs import hunt_v0

    rng = np.random.default_rng(0)
    env = hunt_v0.parallel_env(mask_in_infos=True, max_cycles=40)
    plain = hunt_v0.parallel_env(max_cycles=40)
    steps = masked = 0
    for episode in range(3):
        obs, infos = env.reset(seed=episode)
        plain_obs, plain_infos = plain.reset(seed=episode)
        while env.agents:
            masks = {a: infos[a]["action_mask"] for a in env.agents if "action_mask" in infos[a]}
            for a in env.agents:
                if isinstance(obs[a], dict):
                    assert np.array_equal(masks[a], obs[a]["action_mask"])
                    assert masks[a] is not obs[a]["action_mask"]
                    assert masks[a].dtype == np.int8
                    masked += 1
                else:
                    assert a not in masks
                assert "action_mask" not in plain_infos[a]
            masks_before = {a: m.copy() for a, m in masks.items()}
            for m in masks.values():
                m[:] = 0  # a reader that changes its copy changes nothing else
            actions = {a: _legal(env.action_space(a), masks_before[a], rng) if a in masks_before
                       else env.action_space(a).sample() for a in env.agents}
            obs, _, _, _, infos = env.step(actions)
            plain_obs, _, _, _, plain_infos = plain.step(actions)
            steps += 1
    assert steps > 40 and masked > 0
    env.close()
    plain.close()


def test_mask_in_infos_must_be_a_bool_and_is_the_dict_faces_own() -> None:
    from seer_env import errors
    from seer_env.envs import hunt_v0

    for bad in ("yes", "Only", 2, -1, 1.0, None):
        with pytest.raises(errors.ConfigError,
                           match="mask_in_infos=.* must be True, False or 'only'"):
            hunt_v0.parallel_env(mask_in_infos=bad)
    # the one yes/no rule of every face option: 0 and 1 (NumPy's too) read as bools
    for v, want in ((1, True), (0, False), (np.int64(1), True), (np.bool_(True), True)):
        made = hunt_v0.parallel_env(mask_in_infos=v)
        assert made.mask_in_infos is want
        made.close()
    # the batched faces have their masks in infos["action_mask"] already
    with pytest.raises(errors.ConfigError, match="unknown config key.*mask_in_infos"):
        hunt_v0.vector_env(2, mask_in_infos=True)
    aec = hunt_v0.env(mask_in_infos=True)
    aec.reset(seed=1)
    a = aec.agent_selection
    obs = aec.observe(a)
    if isinstance(obs, dict):
        assert np.array_equal(aec.infos[a]["action_mask"], obs["action_mask"])
    aec.close()


def test_mask_in_infos_only_gives_agilerl_observations_without_masks() -> None:
    """``mask_in_infos="only"``: the observation (and its space) is the Box and
    the mask is in the infos alone -- AgileRL's ``IPPO.get_action`` asserts
    that no observation holds an ``"action_mask"`` (``key_in_nested_dict``);
    PettingZoo's API test passes, and a policy drawing from the infos' masks
    plays whole episodes with masks enforced."""
    from pettingzoo.test import parallel_api_test

    from seer_env.envs import hunt_v0

    env = hunt_v0.parallel_env(mask_in_infos="only", max_cycles=30, threads=1)
    ref = hunt_v0.parallel_env(max_cycles=30, threads=1)
    assert env.observation_space("predator_0") == ref.observation_space("predator_0")[
        "observation"]
    assert env.observation_space("prey_0") == ref.observation_space("prey_0")["observation"]
    rng = np.random.default_rng(2)
    for episode in range(2):
        obs, infos = env.reset(seed=episode)
        robs, rinfos = ref.reset(seed=episode)
        while env.agents:
            for a in env.agents:
                assert isinstance(obs[a], np.ndarray)  # no dict, no "action_mask" key
                assert np.array_equal(obs[a], robs[a]["observation"])
                assert np.array_equal(infos[a]["action_mask"], robs[a]["action_mask"])
            acts = {a: _legal(env.action_space(a), infos[a]["action_mask"], rng)
                    for a in env.agents}
            obs, rew, term, trunc, infos = env.step(acts)
            robs, rrew, _, _, rinfos = ref.step(acts)
            assert rew == rrew
    env.close()
    ref.close()
    parallel_api_test(hunt_v0.parallel_env(mask_in_infos="only", max_cycles=30, threads=1),
                      num_cycles=40)


def test_the_agilerl_example_stacks_masks_as_agilerl_with_finished_agents_free() -> None:
    """``examples/agilerl_hunt.py``'s `stack_masks` (its workaround for AgileRL
    2.58's ``extract_action_masks``): masks stacked per group as AgileRL
    stacks them, ``(agents, num_envs, n)``; an agent finished in a sub-env
    (its vector env's all-zero row) or in every sub-env (no mask) allows every
    action; the Gymnasium ``_<agent>`` flags are skipped."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "agilerl_hunt.py"
    spec = importlib.util.spec_from_file_location("agilerl_hunt", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    live = np.array([[1, 0, 1], [0, 1, 1]], np.int8)
    infos = {"prey_0": {"action_mask": live}, "_prey_0": np.array([True, True]),
             "prey_1": {"action_mask": np.array([[1, 1, 0], [0, 0, 0]], np.int8)},
             "prey_2": {}, "scout_0": {"steps": np.zeros(2)}}
    out = mod.stack_masks(infos, ["prey", "scout"], lambda a: a.split("_")[0])
    assert out["scout"] is None
    assert out["prey"].shape == (3, 2, 3) and out["prey"].dtype == np.float32
    assert out["prey"][0].tolist() == live.tolist()
    assert out["prey"][1].tolist() == [[1, 1, 0], [1, 1, 1]]
    assert out["prey"][2].tolist() == [[1, 1, 1], [1, 1, 1]]
