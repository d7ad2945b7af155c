"""The global state on every face: a MAPPO-style centralised critic reads
``infos["state"]`` beside each agent's observation, from the Gymnasium
``agent_vector_env`` (parameter sharing; a model with groups too) and from the
RLlib adapter, and it is exactly the ParallelEnv twin's ``state()``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from seer_env.envs import hunt_v0, pcs_v0
from seer_env.errors import ClosedError, ConfigError
from seer_env.faces.gym_vector import random_actions

PCS = dict(width=3, height=2, portables_per_cell=8, max_cycles=40, threads=1)
HUNT = dict(max_cycles=40, threads=1)


def _twins(make: Any, seed: int, n: int) -> list[Any]:
    """ParallelEnv twins of instances ``0..n-1`` (instance ``i`` is seeded ``seed + i``)."""
    out = []
    for i in range(n):
        par = make()
        par.reset(seed=seed + i)
        out.append(par)
    return out


def _critic_input(obs: np.ndarray, infos: dict[str, Any]) -> np.ndarray:
    """MAPPO's critic input: each agent's observation and the global state."""
    return np.concatenate([obs, infos["state"]], axis=1)


def test_agent_vector_env_state_and_infos_on_pcs() -> None:
    B, seed = 3, 5
    envs = pcs_v0.agent_vector_env(B, global_state_in_infos=True, **PCS)
    A = envs.num_agents
    assert envs.state_space == pcs_v0.parallel_env(**PCS).state_space
    obs, infos = envs.reset(seed=seed)
    twins = _twins(lambda: pcs_v0.parallel_env(**PCS), seed, B)
    rng = np.random.default_rng(0)
    for step in range(12):
        crit = _critic_input(obs, infos)
        assert crit.shape == (B * A, obs.shape[1] + envs.state_space.shape[0])
        assert infos["state"].dtype == np.float32 and infos["_state"].all()
        assert np.array_equal(envs.state(), np.stack([p.state() for p in twins]))
        for j in range(B * A):
            assert np.array_equal(crit[j, obs.shape[1]:], twins[j // A].state()), (step, j)
        acts = rng.integers(0, envs.single_action_space.n, B * A)
        obs, _, _, _, infos = envs.step(acts)
        for i, par in enumerate(twins):
            par.step({a: int(acts[i * A + k]) for k, a in enumerate(par.possible_agents)})
    for p in twins:
        p.close()
    envs.close()
    with pytest.raises(ClosedError):
        envs.state()


def test_agent_vector_env_leaves_the_state_out_unless_asked() -> None:
    envs = pcs_v0.agent_vector_env(2, **PCS)
    _, infos = envs.reset(seed=0)
    assert "state" not in infos and envs.state().shape == (2, envs.state_space.shape[0])
    _, _, _, _, infos = envs.step(envs.action_space.sample())
    assert "state" not in infos
    envs.close()
    with pytest.raises(ConfigError, match="global_state_in_infos"):
        pcs_v0.agent_vector_env(1, global_state_in_infos="yes", **PCS)


def test_agent_vector_env_state_on_hunt_by_group() -> None:
    B, seed = 2, 3
    prey_log: list[np.ndarray] = []
    venv_groups: dict[str, Any] = {}
    rng = np.random.default_rng(1)

    def prey(obs: Any, infos: Any) -> dict[str, np.ndarray]:  # legal, and logged for the twins
        acts = random_actions(venv_groups["prey"], infos["action_mask"]["prey"], B, rng)
        prey_log.append(acts)
        return {"prey": acts}

    envs = hunt_v0.agent_vector_env(B, group="predator", others=prey,
                                    global_state_in_infos=True, **HUNT)
    venv_groups.update({g.name: g for g in envs.venv.groups})
    A = envs.num_agents
    obs, infos = envs.reset(seed=seed)
    twins = _twins(lambda: hunt_v0.parallel_env(**HUNT), seed, B)
    pred_names = [a for a in twins[0].possible_agents if a.startswith("predator_")]
    prey_names = [a for a in twins[0].possible_agents if a.startswith("prey_")]
    for step in range(10):
        if any(not p.agents for p in twins):
            break  # an instance finished: its autoreset seed is the runtime's business
        crit = _critic_input(obs, infos)
        for j in range(B * A):
            assert np.array_equal(crit[j, obs.shape[1]:], twins[j // A].state()), (step, j)
        acts = random_actions(venv_groups["predator"],
                              infos["action_mask"].reshape(B, A, -1), B, rng).reshape(B * A, -1)
        obs, _, _, _, infos = envs.step(acts)
        for i, par in enumerate(twins):
            d = {a: acts[i * A + k] for k, a in enumerate(pred_names)}
            d.update({a: int(prey_log[-1][i, k]) for k, a in enumerate(prey_names)})
            par.step({a: v for a, v in d.items() if a in par.agents})
    else:
        step = 10
    assert step >= 3  # the comparison ran
    for p in twins:
        p.close()
    envs.close()


def test_rllib_adapter_state_in_infos_equals_the_parallel_env() -> None:
    pytest.importorskip("ray")
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    from seer_env import rllib

    # RLlib's checker accepts the arrays in the infos (its draws ignore masks)
    check_multiagent_environments(rllib.SeerMultiAgentEnv(
        {"env": "hunt_v0", **HUNT, "global_state_in_infos": True, "enforce_masks": False}))

    for cfg, twin in (({"env": "pcs_v0", **PCS}, lambda: pcs_v0.parallel_env(**PCS)),
                      ({"env": "hunt_v0", **HUNT}, lambda: hunt_v0.parallel_env(**HUNT))):
        env = rllib.SeerMultiAgentEnv({**cfg, "global_state_in_infos": True})
        par = twin()
        assert env.state_space == par.state_space
        obs, infos = env.reset(seed=2)
        par.reset(seed=2)
        rng = np.random.default_rng(0)
        for step in range(8):
            assert set(infos) == set(obs)
            want = par.state()
            for a in obs:
                assert np.array_equal(infos[a]["state"], want), (cfg["env"], step, a)
            assert np.array_equal(env.state(), want)
            # MAPPO's critic input per agent: its observation and the state
            crit = {a: np.concatenate([np.ravel(o["observation"] if isinstance(o, dict) else o),
                                       infos[a]["state"]]) for a, o in obs.items()}
            assert all(c.ndim == 1 for c in crit.values())
            acts = {}
            for a in env.agents:
                space = env.action_spaces[a]
                o = obs[a]
                if isinstance(o, dict):  # masked: a legal choice per component
                    m, off, pick = o["action_mask"].astype(bool), 0, []
                    sizes = space.nvec if hasattr(space, "nvec") else [space.n]
                    for k in sizes:
                        pick.append(int(rng.choice(np.flatnonzero(m[off:off + k]))))
                        off += k
                    acts[a] = np.array(pick) if hasattr(space, "nvec") else pick[0]
                else:
                    acts[a] = space.sample()
            if not acts:
                break
            obs, _, term, trunc, infos = env.step(acts)
            par.step(acts)
            if term["__all__"] or trunc["__all__"]:
                break
        # off by default
        plain = rllib.SeerMultiAgentEnv(cfg)
        _, pinfos = plain.reset(seed=2)
        assert all("state" not in d for d in pinfos.values())
        plain.close()
        env.close()
        par.close()
    with pytest.raises(ConfigError, match="global_state_in_infos"):
        rllib.SeerMultiAgentEnv({"env": "pcs_v0", "global_state_in_infos": "yes"})
