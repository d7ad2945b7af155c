"""Property-based fuzzing (Hypothesis) of actions, configurations and seeds, for
every shipped env and every API.

The property for actions: a call the env rejects raises an
:class:`~seer_env.errors.InvalidActionError` (or a ``ConfigError`` for
arguments) and has no effect -- the env's next results equal, bit for bit,
those of a twin env that never saw the bad call.  For configurations: a
``ConfigError`` naming the key, or an env whose outputs are finite.  The
volume run is printed at the end of the session (``-s``).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seer_env import errors, registry

COUNTS: Counter[str] = Counter()

ENVS = {
    "phold_v0": {"num_entities": 6, "events_per_entity": 2, "max_cycles": 30},
    "pcs_v0": {"width": 3, "height": 2, "max_cycles": 30},
    "aircraft_v0": {"num_uavs": 5, "max_cycles": 30},
    "aircraft_discrete": {"num_uavs": 4, "discrete": True, "max_cycles": 30},
}
FUZZ = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def make(name: str, api: str, **kw: Any) -> Any:
    cfg = dict(ENVS[name], threads=1, **kw)
    model = registry.get("aircraft_v0" if name.startswith("aircraft") else name)
    if api == "parallel":
        return model.parallel_env(**cfg)
    if api == "vector":
        return model.vector_env(2, **cfg)
    return model.aec_env(**cfg)


# -- values that are not actions -------------------------------------------------

JUNK = st.one_of(
    st.none(), st.text(max_size=3), st.booleans(), st.complex_numbers(allow_nan=True),
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70),
    st.lists(st.integers(-5, 5), max_size=4),
    st.builds(lambda k: np.zeros(k, "m8[s]"), st.integers(0, 3)),
    st.builds(lambda k: np.full(k, np.nan, np.float32), st.integers(1, 4)),
    st.builds(lambda: object()),
)


def valid_action(space: Any, rng: np.random.Generator) -> Any:
    if hasattr(space, "n"):
        return int(rng.integers(0, space.n))
    return rng.uniform(space.low, space.high).astype(np.float32)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x, y = np.asarray(a), np.asarray(b)
        if x.dtype.kind == "f":
            return x.shape == y.shape and x.tobytes() == y.tobytes()
        return np.array_equal(x, y)
    if isinstance(a, float):
        return math.isnan(a) and math.isnan(b) or a == b
    return a == b


# -- the dict API ----------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ENVS))
@FUZZ
@given(data=st.data())
def test_parallel_bad_actions_change_nothing(name: str, data: st.DataObject) -> None:
    env, twin = make(name, "parallel"), make(name, "parallel")
    seed = data.draw(st.integers(0, 2**64 - 1), label="seed")
    assert same(env.reset(seed=seed), twin.reset(seed=seed))
    rng = np.random.default_rng(seed % 2**32)
    for _ in range(data.draw(st.integers(1, 6), label="steps")):
        if not env.agents:
            break
        good = {a: valid_action(env.action_space(a), rng) for a in env.agents}
        kind = data.draw(st.sampled_from(
            ["junk_value", "unknown_agent", "missing_agent", "not_a_dict", "good"]))
        bad: Any = dict(good)
        if kind == "junk_value":
            bad[data.draw(st.sampled_from(env.agents))] = data.draw(JUNK)
        elif kind == "unknown_agent":
            bad[data.draw(st.one_of(st.text(max_size=5), st.integers()))] = 0
        elif kind == "missing_agent":
            bad.pop(data.draw(st.sampled_from(env.agents)))
        elif kind == "not_a_dict":
            bad = data.draw(st.one_of(st.lists(st.integers(0, 2)), st.none(), st.integers()))
        if kind != "good":
            try:
                env.step(bad)
                accepted = True
            except (errors.InvalidActionError, errors.ConfigError):
                accepted = False
                COUNTS["rejected actions"] += 1
            if accepted:  # a value the env may take (e.g. a clipped Box value)
                twin.step(bad)
                COUNTS["steps"] += 1
                continue
        assert same(env.step(good), twin.step(good))
        COUNTS["steps"] += 1
    assert same(env.state(), twin.state())
    COUNTS["cases"] += 1
    env.close()
    twin.close()


# -- batched arrays -------------------------------------------------------------------

ARRAYS = st.one_of(
    st.builds(lambda s, dt: np.zeros(s, dt), st.sampled_from([(2,), (2, 1), (1, 5), (2, 9, 1),
                                                             (3, 5), ()]),
              st.sampled_from(["i8", "f4", "?", "c8", "m8[s]", "O", "U2"])),
    st.builds(lambda v: np.full((2, 6, 3), v, np.float64), st.sampled_from(
        [np.nan, np.inf, -np.inf])),
    st.builds(lambda v: np.full((2, 6), v, np.int64), st.integers(-(2**40), 2**40)),
    JUNK,
)


@pytest.mark.parametrize("name", sorted(ENVS))
@FUZZ
@given(data=st.data())
def test_vector_bad_actions_change_nothing(name: str, data: st.DataObject) -> None:
    env, twin = make(name, "vector"), make(name, "vector")
    seed = data.draw(st.integers(0, 2**60), label="seed")
    assert same(env.reset(seed=seed), twin.reset(seed=seed))
    rng = np.random.default_rng(seed % 2**32)
    shape = env.runtime.actions.shape
    for _ in range(data.draw(st.integers(1, 6), label="steps")):
        if env.sizes.action_kind == "discrete":
            good = rng.integers(0, env.sizes.action_n, size=shape)
        else:
            good = rng.uniform(-1.5, 1.5, size=shape)  # clipped to [-1, 1]
        bad = data.draw(ARRAYS)
        try:
            env.step(bad)
            twin.step(bad)  # accepted: the twin takes it too
            COUNTS["steps"] += 1
        except (errors.InvalidActionError, errors.ConfigError):
            COUNTS["rejected actions"] += 1
        assert same(env.step(good), twin.step(good))
        COUNTS["steps"] += 1
    COUNTS["cases"] += 1
    env.close()
    twin.close()


# -- the AEC form -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["phold_v0", "aircraft_v0"])
@FUZZ
@given(data=st.data())
def test_aec_bad_actions_change_nothing(name: str, data: st.DataObject) -> None:
    env, twin = make(name, "aec"), make(name, "aec")
    env.reset(seed=3)
    twin.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(data.draw(st.integers(1, 20), label="turns")):
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            twin.step(None)
            continue
        bad = data.draw(JUNK)
        try:
            env.step(bad)
        except (errors.InvalidActionError, errors.ConfigError):
            COUNTS["rejected actions"] += 1
        else:  # the draw was a valid action after all: the turn is taken
            twin.step(bad)
            continue
        good = valid_action(env.action_space(agent), rng)
        env.step(good)
        twin.step(good)
        assert env.agent_selection == twin.agent_selection
        COUNTS["steps"] += 1
    for a in env.agents:
        assert same(env.observe(a), twin.observe(a))
    COUNTS["cases"] += 1


# -- configurations --------------------------------------------------------------------------

def param_value(p: Any) -> st.SearchStrategy:
    """In range (small), at and beyond its ends, NaN/inf, wrong types."""
    junk = st.one_of(st.none(), st.text(max_size=3), st.lists(st.integers(), max_size=2))
    if p.kind == "bool":
        return st.one_of(st.booleans(), st.integers(-2, 3), junk, st.floats())
    lo = p.low if p.low is not None else -1e6
    hi = p.high if p.high is not None else 1e6
    ends = st.sampled_from([lo, hi, lo - 1, hi + 1, -hi, 2 * hi])
    if p.kind in ("int", "uint"):
        small = st.integers(int(lo), int(min(hi, lo + 20)))
        inside = st.one_of(small, small, ends.map(lambda x: int(x) if math.isfinite(x) else 0))
    else:
        inside = st.floats(min_value=lo, max_value=min(hi, max(lo, 0) + 50.0),
                           exclude_min=p.low_exclusive)
    value = st.one_of(inside, inside, inside, ends, junk,
                      st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308]))
    if p.count > 1:
        return st.one_of(value, st.lists(value, min_size=p.count, max_size=p.count))
    return value


#: Keys kept small in every draw: they size the env (tested up to their
#: limits by the dedicated tests, not by random draws).
SIZES = {"num_entities": 12, "width": 4, "height": 4, "num_uavs": 8, "num_targets": 8,
         "portables_per_cell": 20, "events_per_entity": 8, "num_rays": 16, "substeps": 20,
         "work": 100, "channels": 20, "max_guard": 20}


@pytest.mark.parametrize("name", ["phold_v0", "pcs_v0", "aircraft_v0"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_configs_are_refused_or_give_finite_outputs(name: str, data: st.DataObject) -> None:
    model = registry.get(name)
    params = model.params
    keys = data.draw(st.lists(st.sampled_from(sorted(params)), max_size=4, unique=True))
    cfg: dict[str, Any] = {}
    for k in keys:
        v = data.draw(param_value(params[k]), label=k)
        if k in SIZES and isinstance(v, (int, float)) and not isinstance(v, bool) and \
                math.isfinite(v) and v > SIZES[k]:
            v = SIZES[k]
        cfg[k] = v
    try:
        env = model.vector_env(1, threads=1, max_cycles=0, max_step_events=2_000_000, **cfg)
    except errors.ConfigError as exc:
        COUNTS["configs refused"] += 1
        if isinstance(exc, errors.ExecutorError):  # lookahead 0 on an explicit pool
            assert "lookahead 0" in str(exc)
            return
        # it names a parameter (the one set, or the one it conflicts with)
        assert any(k in str(exc) for k in params) or "needs about" in str(exc), (cfg, exc)
        return
    except TypeError as exc:  # only the env-level keyword itself may be wrong
        pytest.fail(f"{cfg}: {exc}")
    obs, _ = env.reset(seed=0)
    for _ in range(3):
        a = (np.zeros(env.runtime.actions.shape, int) if env.sizes.action_kind == "discrete"
             else np.zeros(env.runtime.actions.shape, np.float32))
        try:
            obs, rew, term, trunc, infos = env.step(a)
        except errors.BudgetError:
            COUNTS["configs over the event budget"] += 1
            break
        assert np.isfinite(obs).all() and np.isfinite(rew).all(), (cfg, obs, rew)
        COUNTS["steps"] += 1
    COUNTS["configs run"] += 1
    env.close()


# -- seeds -------------------------------------------------------------------------------------

@FUZZ
@given(seed=st.one_of(st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=2),
                      st.booleans(), st.none(), st.builds(np.uint64, st.integers(0, 2**64 - 1)),
                      st.lists(st.integers(0, 5), min_size=2, max_size=2)))
def test_seeds_are_refused_or_reproducible(seed: Any) -> None:
    a, b = make("pcs_v0", "vector"), make("pcs_v0", "vector")
    try:
        first = a.reset(seed=seed)
    except errors.ConfigError:
        COUNTS["seeds refused"] += 1
        return
    if seed is not None:
        assert same(first, b.reset(seed=seed))
        acts = np.ones((2, 6), int)
        assert same(a.step(acts), b.step(acts))
    COUNTS["seeds run"] += 1


def test_zz_report_volume() -> None:
    """Prints how much was fuzzed (run with -s to see it)."""
    print("\nfuzzing volume:", dict(COUNTS))
    assert COUNTS["cases"] > 0 or not COUNTS
