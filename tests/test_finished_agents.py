"""Actions for agents that are no longer live are ignored (PettingZoo's own
envs do the same), so loops keyed by the last observations work; unknown
names, missing live agents and bad values for live agents are still refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from seer_env.envs import aircraft_v0
from seer_env.errors import InvalidActionError
from tests.models import load as load_test_model
from tests.test_fuzz import same

DYING = load_test_model("dying")

#: (make an env, steps at most): agents of each die at different steps
CASES = {
    "dying": (lambda: DYING.parallel_env(num_agents=8, threads=1), 40),
    "aircraft": (lambda: aircraft_v0.parallel_env(
        num_uavs=12, arena_size=40.0, collision_radius=6.0, battery_thrust=0.02, threads=1,
        max_cycles=150), 150),
}


def _action(env: Any, agent: str, rng: np.random.Generator) -> Any:
    space = env.action_space(agent)
    if hasattr(space, "n"):
        return int(rng.integers(0, space.n))
    return rng.uniform(space.low, space.high).astype(np.float32)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_loop_keyed_by_the_last_observations_runs_to_the_end(name: str) -> None:
    make, steps = CASES[name]
    env, twin = make(), make()
    obs, _ = env.reset(seed=3)
    twin.reset(seed=3)
    rng, extra = np.random.default_rng(0), 0
    for _ in range(steps):
        if not env.agents:
            break
        acts = {a: _action(env, a, rng) for a in env.agents}
        finished = [a for a in obs if a not in env.agents]
        extra += len(finished)
        # the finished agents get an action too, even a value no space allows
        keyed = {**acts, **{a: (99 if i % 2 else None) for i, a in enumerate(finished)}}
        out = env.step(keyed)
        assert same(out, twin.step(acts))  # as if the extra keys were not there
        obs = out[0]
    assert extra > 0  # agents died before the end: the extra keys were sent
    env.close()
    twin.close()


def test_unknown_names_missing_agents_and_bad_live_values_are_still_refused() -> None:
    env = DYING.parallel_env(num_agents=8, threads=1)
    obs, _ = env.reset(seed=3)
    while len(env.agents) == len(env.possible_agents):
        obs, *_ = env.step(dict.fromkeys(env.agents, 0))
    gone = next(a for a in env.possible_agents if a not in env.agents)
    live = list(env.agents)
    before = env.runtime.entity_states(0)
    for acts, match in (({**dict.fromkeys(live, 0), gone: 0, "nobody": 0}, "unknown agent"),
                        ({gone: 0, **dict.fromkeys(live[1:], 0)}, "missing actions"),
                        ({gone: 0, **dict.fromkeys(live, 0), live[0]: 99}, "outside")):
        with pytest.raises(InvalidActionError, match=match):
            env.step(acts)
        assert env.runtime.entity_states(0) == before  # nothing changed
    env.step({gone: 0, **dict.fromkeys(live, 0)})
    env.close()


def test_torchrl_wrapper_runs_aircraft_to_natural_episode_ends() -> None:
    """TorchRL's PettingZooWrapper with done_on_any=False acts on every agent of
    its last observations, dead ones included: episodes now run past deaths to
    their natural end (they failed at the first death before); with
    done_on_any=True TorchRL itself ends an episode at the first death."""
    pytest.importorskip("torchrl")
    import warnings

    import torch
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = PettingZooWrapper(aircraft_v0.parallel_env(num_uavs=8, max_cycles=80, threads=1),
                                use_mask=True, done_on_any=False)
        torch.manual_seed(0)
        td = env.rollout(300, break_when_any_done=False)
    done = td["next", "done"].squeeze(-1)
    alive = td["next", "uav", "mask"].sum(-1)
    assert int(done.sum()) >= 2  # whole episodes ended, and were reset by TorchRL
    # steps where some UAVs are dead and the episode goes on
    assert bool(((alive < 8) & (alive > 0) & ~done).any())
    # an episode ends only when every UAV is done, or at max_cycles (80 steps)
    start = 0
    for t in torch.nonzero(done).flatten().tolist():
        assert int(alive[t]) == 0 or t + 1 - start == 80, (t, start, int(alive[t]))
        start = t + 1
    env.close()
