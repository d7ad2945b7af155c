"""A reset without a seed goes on with the env's own seed sequence, as a
Gymnasium env's generator goes on: ``reset(seed=s)`` once, then ``reset()``
(SuperSuit's and CleanRL's autoresets, evaluation loops), replays the same
episodes in every run, on every face.  Each unseeded reset drew a fresh
random seed (os.urandom) before: every run diverged after its first episode."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from seer_env.envs import aircraft_v0, hunt_v0, pcs_v0
from seer_env.faces.common import next_seed

AIR = {"num_uavs": 4, "max_cycles": 5}


def _episodes(make: Any, first_seed: int | None, episodes: int = 4) -> list[np.ndarray]:
    """The first observation of each episode of a ParallelEnv, reset with
    ``first_seed`` once and without a seed after, played to its end."""
    env = make()
    out = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=first_seed) if ep == 0 else env.reset()
        out.append(np.concatenate([np.ravel(o["observation"] if isinstance(o, dict) else o)
                                   for o in obs.values()]))
        while env.agents:
            obs, *_ = env.step({a: env.action_space(a).sample(
                mask=obs[a]["action_mask"] if isinstance(obs[a], dict) else None)
                for a in env.agents})
    env.close()
    return out


@pytest.mark.parametrize("make", [
    lambda: aircraft_v0.parallel_env(threads=1, **AIR),
    lambda: aircraft_v0.parallel_env(threads=2, **AIR),
    lambda: hunt_v0.parallel_env(width=8, height=8, max_cycles=6, threads=1),
], ids=["aircraft-1", "aircraft-2", "hunt"])
def test_a_parallel_env_seeded_once_replays_every_later_episode(make: Any) -> None:
    a, b = _episodes(make, 3), _episodes(make, 3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    # the episodes differ from each other (the sequence moves on), and its
    # seeds are next_seed's: episode 1 is a fresh env's reset(seed=next_seed(3))
    assert not np.array_equal(a[0], a[1]) and not np.array_equal(a[1], a[2])
    assert np.array_equal(_episodes(make, next_seed(3), 1)[0], a[1])
    # an env seeded 4 does not replay the episodes of one seeded 3 (seed + 1 would)
    assert not np.array_equal(_episodes(make, 4, 1)[0], a[1])


def test_an_unseeded_env_is_random_and_then_goes_on_with_its_own_sequence() -> None:
    make = lambda: aircraft_v0.parallel_env(threads=1, **AIR)  # noqa: E731
    a, b = _episodes(make, None, 2), _episodes(make, None, 2)
    assert not np.array_equal(a[0], b[0])  # a fresh random first seed
    env = make()
    env.reset()
    env.reset(seed=9)  # a seed given later starts a new sequence
    obs, _ = env.reset()
    assert np.array_equal(np.concatenate([np.ravel(o) for o in obs.values()]),
                          _episodes(make, next_seed(9), 1)[0])
    env.close()


def test_a_refused_reset_does_not_move_the_sequence() -> None:
    make = lambda: aircraft_v0.parallel_env(threads=1, **AIR)  # noqa: E731
    env = make()
    env.reset(seed=3)
    with pytest.raises(Exception, match="seed"):
        env.reset(seed=-1)
    obs, _ = env.reset()
    assert np.array_equal(np.concatenate([np.ravel(o) for o in obs.values()]),
                          _episodes(make, 3, 2)[1])
    env.close()


def test_the_aec_face_goes_on_as_its_parallel_env() -> None:
    def firsts() -> list[np.ndarray]:
        env = aircraft_v0.env(threads=1, **AIR)
        out = []
        for ep in range(3):
            env.reset(seed=5) if ep == 0 else env.reset()
            out.append(env.observe("uav_0").copy())
        env.close()
        return out

    a, b = firsts(), firsts()
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[0], a[1])


@pytest.mark.parametrize("face", ["vector", "agent_vector"])
def test_a_batched_env_reset_without_a_seed_continues_each_instance(face: str) -> None:
    """Instance i, seeded ``s + i``, goes on with ``s + i + B`` (the sequence
    its autoresets follow); a seed list's None entries do the same; a
    restored instance goes on with its snapshot's sequence."""
    B = 3

    def make() -> Any:
        return (aircraft_v0.vector_env(B, threads=1, **AIR) if face == "vector"
                else aircraft_v0.agent_vector_env(B, threads=1, **AIR))

    def first(seed: Any) -> np.ndarray:
        v = make()
        obs, _ = v.reset(seed=seed)
        v.close()
        return obs

    v = make()
    o0, _ = v.reset(seed=10)
    o1, _ = v.reset()
    o2, _ = v.reset(seed=[None, 50, None])
    assert np.array_equal(o0, first(10))
    assert np.array_equal(o1, first([10 + B, 11 + B, 12 + B]))
    assert np.array_equal(o2, first([10 + 2 * B, 50, 12 + 2 * B]))
    v.close()
    if face == "vector":
        v, w = make(), make()
        v.reset(seed=10)
        snap = v.snapshot()
        w.restore(snap)  # never reset: its sequence is the snapshot's
        assert np.array_equal(v.reset()[0], w.reset()[0])
        v.close()
        w.close()


def test_classic_pcs_starts_from_its_default_seed_then_goes_on() -> None:
    """The model's default seed (classic PCS: 0) is the first reset's; later
    unseeded resets go on from it, as from any seed."""
    def run() -> list[Any]:
        env = pcs_v0.parallel_env(classic=True, width=4, height=4, max_cycles=3,
                                  executor="serial", threads=1)
        out = []
        for _ in range(3):
            env.reset()
            for _ in range(3):
                if not env.agents:
                    break
                _, rew, *_ = env.step({a: 0 for a in env.agents})
            out.append(sorted(rew.items()))
        env.close()
        return out

    def seeded(seed: int) -> Any:
        env = pcs_v0.parallel_env(classic=True, width=4, height=4, max_cycles=3,
                                  executor="serial", threads=1)
        env.reset(seed=seed)
        for _ in range(3):
            if not env.agents:
                break
            _, rew, *_ = env.step({a: 0 for a in env.agents})
        env.close()
        return sorted(rew.items())

    a = run()
    assert a == run()
    assert a[0] == seeded(0) and a[1] == seeded(next_seed(0))


def test_supersuits_frame_skip_draws_from_np_random_seeded_by_reset() -> None:
    """SuperSuit's frame_skip_v0 on a ParallelEnv reads
    ``env.unwrapped.np_random`` (an AttributeError before): the skips it
    draws, and so the run, are the same for the same seed."""
    supersuit = pytest.importorskip("supersuit")

    def run() -> list[Any]:
        env = supersuit.frame_skip_v0(aircraft_v0.parallel_env(threads=1, num_uavs=4,
                                                               max_cycles=20), (1, 4))
        obs, _ = env.reset(seed=2)
        out = []
        while env.agents:
            obs, rew, *_ = env.step({a: np.full(3, 0.5, np.float32) for a in env.agents})
            out.append(sorted(rew.items()))
        env.close()
        return out

    a = run()
    assert a == run() and 5 <= len(a) < 20  # skips of 1..4 steps: fewer calls than steps
    env = aircraft_v0.parallel_env(threads=1, num_uavs=4)
    env.reset(seed=2)
    assert env.np_random.integers(1 << 30) == np.random.default_rng(2).integers(1 << 30)
    env.close()


def test_a_restored_instance_goes_on_with_its_own_batchs_stride() -> None:
    """An instance restored from a batch of another size goes on, through
    unseeded full and masked resets (and None entries of a seed list), with
    the sequence it had there (its seed, then steps of that batch's
    num_envs), as the docs say: it took this batch's stride before."""
    orig = aircraft_v0.vector_env(2, threads=1, **AIR)
    orig.reset(seed=0)
    snap = orig.snapshot(0)
    new = aircraft_v0.vector_env(4, threads=1, **AIR)
    new.reset(seed=100)
    new.restore(snap, 0)
    for call in ("reset", "reset", "list", "masked"):
        if call == "reset":
            a, b = orig.reset()[0][0], new.reset()[0][0]
        elif call == "list":
            a, b = orig.reset(seed=[None, 7])[0][0], new.reset(seed=[None, 1, 2, 3])[0][0]
        else:
            a = orig.reset(options={"reset_mask": np.array([True, False])})[0][0]
            b = new.reset(options={"reset_mask": np.array([True, False, False, False])})[0][0]
        assert np.array_equal(a, b), call
    orig.close()
    new.close()


@pytest.mark.parametrize("face", ["parallel", "aec"])
def test_a_snapshot_carries_the_seed_sequence(face: str) -> None:
    """A ParallelEnv's (and an AEC env's) snapshot holds its next seed: an
    env restored from it, fresh or moved on, then reset() without a seed,
    plays the episode the original plays (a fresh one drew a random seed,
    one moved on went on with its own sequence); an older snapshot without
    one leaves the env's sequence as it is."""
    def make() -> Any:
        return (aircraft_v0.parallel_env(threads=1, **AIR) if face == "parallel"
                else aircraft_v0.env(threads=1, **AIR))

    def first_obs(env: Any) -> np.ndarray:
        if face == "parallel":
            obs, _ = env.reset()
            return np.concatenate([np.ravel(o) for o in obs.values()])
        env.reset()
        return env.observe(env.agent_selection).copy()

    a = make()
    a.reset(seed=7)
    snap = a.snapshot()
    want = first_obs(a)
    for moved in (0, 2):
        b = make()
        for _ in range(moved):
            b.reset()
        b.restore(snap)
        assert np.array_equal(first_obs(b), want), moved
        b.close()
    if face == "parallel":  # an older snapshot, without the sequence: the env's own goes on
        import dataclasses

        old = dataclasses.replace(snap, state={"live": snap.state["live"]})
        b, c = make(), make()
        for e in (b, c):
            e.reset(seed=3)
        b.restore(old)
        assert np.array_equal(first_obs(b), first_obs(c))
        b.close()
        c.close()
    a.close()


def test_a_snapshot_carries_np_randoms_state() -> None:
    """A ParallelEnv's snapshot holds its `np_random`'s state: after a
    restore a wrapper's draws (SuperSuit's frame skips) are those of the run
    it was taken from, so the steps are too (the generator stayed where the
    env had moved it before).  A state no NumPy bit generator takes is
    refused and changes nothing; an older snapshot without one leaves the
    env's generator as it is."""
    import dataclasses

    from seer_env.errors import SnapshotError

    env = aircraft_v0.parallel_env(threads=1, num_uavs=4, max_cycles=30)
    env.reset(seed=5)
    env.np_random.integers(10, size=3)
    snap = env.snapshot()
    want = env.np_random.integers(1 << 30, size=8)
    env.np_random.integers(10, size=5)  # moved on
    env.restore(snap)
    assert np.array_equal(env.np_random.integers(1 << 30, size=8), want)
    fresh = aircraft_v0.parallel_env(threads=1, num_uavs=4, max_cycles=30)
    fresh.restore(snap)  # never reset: its generator is the snapshot's
    assert np.array_equal(fresh.np_random.integers(1 << 30, size=8), want)
    before = env.np_random.bit_generator.state
    good = snap.state["np_random"]
    for bad in ("PCG64", {"bit_generator": "Nope"}, {**good, "state": "x"},
                {**good, "state": {"state": 1}}, {"bit_generator": "MT19937", "state": 3},
                {"bit_generator": "MT19937", "state": {"key": [], "pos": 0}},
                {**good, "state": np.zeros(2)}):
        with pytest.raises(SnapshotError, match="np_random state is malformed"):
            env.restore(dataclasses.replace(snap, state={**snap.state, "np_random": bad}))
        assert env.np_random.bit_generator.state == before
    old = dataclasses.replace(snap, state={"live": snap.state["live"],
                                           "seed_next": snap.state["seed_next"]})
    env.restore(old)
    assert env.np_random.bit_generator.state == before
    fresh.close()
    env.close()

    supersuit = pytest.importorskip("supersuit")
    inner = pcs_v0.parallel_env(width=4, height=4, max_cycles=60, threads=1)
    wrapped = supersuit.frame_skip_v0(inner, (1, 4))
    wrapped.reset(seed=2)
    act = {a: i % 3 for i, a in enumerate(inner.possible_agents)}
    for _ in range(3):
        wrapped.step({a: act[a] for a in wrapped.agents})
    snap = inner.snapshot()

    def rest() -> list[Any]:
        out = []
        while wrapped.agents:
            _, rew, *_ = wrapped.step({a: act[a] for a in wrapped.agents})
            out.append(sorted(rew.items()))
        return out

    first = rest()
    inner.restore(snap)
    assert rest() == first and 10 <= len(first) < 50  # skips of 1..4 steps drawn
    wrapped.close()
