"""Property-based fuzzing (Hypothesis) of call orders, on every face of every
shipped env, with the default ``threads="auto"`` (STPA's preflight included).

A state machine makes random calls: resets (seeded, masked), good steps,
refused steps (junk values, unknown agents, wrong shapes), ``state()``,
``close()`` and calls after it.  The properties:

* every exception that escapes is a :class:`~seer_env.errors.SeerError`
  (``ClosedError`` after ``close()``, ``StateError`` for a call in the wrong
  order, ``InvalidActionError`` for a bad action);
* a refused call changes nothing: the env's results equal, bit for bit, those
  of a serial twin (``threads=1, executor="serial"``) that only ever saw the
  accepted calls.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from seer_env import errors, registry
from tests.test_fuzz import ENVS, JUNK, same, valid_action

CALLS = settings(max_examples=25, stateful_step_count=30, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _model(name: str) -> Any:
    return registry.get("aircraft_v0" if name.startswith("aircraft") else name)


def _pair(name: str, face: str) -> tuple[Any, Any]:
    """The env under test (default threads and executor) and its serial twin."""
    model = _model(name)
    make = {"parallel": model.parallel_env, "aec": model.aec_env,
            "vector": lambda **kw: model.vector_env(2, **kw),
            "agent_vector": lambda **kw: model.agent_vector_env(2, **kw)}[face]
    return make(**ENVS[name]), make(**ENVS[name], threads=1, executor="serial")


def _call(fn: Any, *args: Any, **kw: Any) -> tuple[bool, Any]:
    """(True, result) or (False, the SeerError); anything else fails the test."""
    try:
        return True, fn(*args, **kw)
    except errors.SeerError as exc:
        return False, exc


class _Calls(RuleBasedStateMachine):
    """Shared rules; subclasses set ``face`` and ``name`` and the action makers."""

    face = ""
    name = ""

    def __init__(self) -> None:
        super().__init__()
        self.env, self.twin = _pair(self.name, self.face)
        self.closed = False
        self.was_reset = False
        self.rng = np.random.default_rng(0)

    def teardown(self) -> None:
        self.env.close()
        self.twin.close()

    def both(self, method: str, *args: Any, **kw: Any) -> None:
        """Call ``method`` on both; they must agree on the outcome exactly."""
        ok, got = _call(getattr(self.env, method), *args, **kw)
        if self.closed:
            assert not ok and isinstance(got, errors.ClosedError), (method, got)
            return
        ok2, want = _call(getattr(self.twin, method), *args, **kw)
        assert ok == ok2, (method, got, want)
        if ok:
            assert same(got, want), method
        else:
            assert type(got) is type(want), (method, got, want)

    def refused(self, method: str, *args: Any) -> None:
        """A call that may be refused: when refused, the twin does not see it."""
        ok, got = _call(getattr(self.env, method), *args)
        if self.closed:
            assert not ok and isinstance(got, errors.ClosedError), (method, got)
            return
        if ok:  # a value the env may take after all (a clipped Box value)
            ok2, want = _call(getattr(self.twin, method), *args)
            assert ok2 and same(got, want), method

    @rule(seed=st.integers(0, 2**32))
    def reset(self, seed: int) -> None:
        self.both("reset", seed=seed)
        self.was_reset = self.was_reset or not self.closed

    @rule()
    def close(self) -> None:
        self.env.close()
        self.env.close()  # twice: a no-op
        self.closed = True

    @invariant()
    def closed_env_refuses(self) -> None:
        if self.closed:
            ok, got = _call(self.env.reset, seed=0)
            assert not ok and isinstance(got, errors.ClosedError), got


class _DictCalls(_Calls):
    face = "parallel"

    def good(self) -> dict[str, Any]:
        return {a: valid_action(self.env.action_space(a), self.rng) for a in self.env.agents}

    @rule()
    def step(self) -> None:
        self.both("step", self.good() if not self.closed else {})

    @rule(data=st.data())
    def bad_step(self, data: st.DataObject) -> None:
        acts: Any = self.good() if not self.closed else {}
        kind = data.draw(st.sampled_from(["junk", "unknown", "not_a_dict"]))
        if kind == "junk" and acts:
            acts[data.draw(st.sampled_from(sorted(acts)))] = data.draw(JUNK)
        elif kind == "unknown":
            acts[data.draw(st.one_of(st.text(max_size=4), st.integers()))] = 0
        else:
            acts = data.draw(st.one_of(st.lists(st.integers(0, 2)), st.none(), st.integers()))
        self.refused("step", acts)

    @rule()
    def state(self) -> None:
        self.both("state")


class _ArrayCalls(_Calls):
    face = "vector"

    def good(self) -> np.ndarray:
        if self.closed or not self.was_reset:
            return np.zeros(1)
        shape = self.twin.runtime.actions.shape
        sz = self.twin.sizes
        if sz.action_kind == "discrete":
            return self.rng.integers(0, sz.action_n, size=shape)
        return self.rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)

    @rule()
    def step(self) -> None:
        self.both("step", self.good())

    @rule(bad=st.one_of(JUNK, st.builds(lambda s: np.zeros(s), st.sampled_from(
        [(), (1,), (2, 1), (2, 99), (3, 4, 5)]))))
    def bad_step(self, bad: Any) -> None:
        self.refused("step", bad)

    @rule(mask=st.lists(st.booleans(), min_size=2, max_size=2))
    def masked_reset(self, mask: list[bool]) -> None:
        self.both("reset", seed=5, options={"reset_mask": np.array(mask)})


class _AgentVectorCalls(_Calls):
    face = "agent_vector"

    @rule()
    def step(self) -> None:
        if self.closed:
            return self.both("step", np.zeros(1))
        space = self.twin.single_action_space
        n = self.twin.num_envs
        acts = np.stack([valid_action(space, self.rng) for _ in range(n)])
        self.both("step", acts)

    @rule(bad=st.one_of(JUNK, st.lists(st.lists(st.integers(0, 1), max_size=3), max_size=3)))
    def bad_step(self, bad: Any) -> None:
        self.refused("step", bad)

    @rule(options=st.one_of(st.none(), st.integers(), st.text(max_size=3),
                            st.just({"reset_mask": "x"})))
    def odd_reset(self, options: Any) -> None:
        ok, got = _call(self.env.reset, seed=1, options=options)
        if self.closed:
            assert not ok and isinstance(got, errors.ClosedError)
        elif ok:
            assert same(got, self.twin.reset(seed=1, options=options))


class _AecCalls(_Calls):
    face = "aec"

    @precondition(lambda self: self.was_reset and not self.closed)
    @rule(data=st.data())
    def turn(self, data: st.DataObject) -> None:
        if not self.twin.agents:
            ok, got = _call(self.env.step, 0)
            assert not ok and isinstance(got, errors.StateError), got
            return
        agent = self.twin.agent_selection
        assert self.env.agent_selection == agent
        if self.twin.terminations[agent] or self.twin.truncations[agent]:
            self.both("step", None)
            return
        if data.draw(st.booleans(), label="bad"):
            self.refused("step", data.draw(JUNK))
        else:
            self.both("step", valid_action(self.twin.action_space(agent), self.rng))

    @precondition(lambda self: self.was_reset and not self.closed)
    @rule()
    def observe(self) -> None:
        for a in self.twin.agents:
            self.both("observe", a)

    @rule()
    def early(self) -> None:
        """Calls that need a reset first are refused with StateError before one."""
        if self.was_reset or self.closed:
            return
        for call in (lambda: self.env.step(0), lambda: self.env.observe("x"),
                     lambda: self.env.last()):
            ok, got = _call(call)
            assert not ok and isinstance(got, errors.StateError), got

    @initialize()
    def start(self) -> None:
        self.early()


def _machine(base: type[_Calls], name: str) -> type:
    return type(f"{base.__name__}_{name}", (base,), {"name": name})


CASES = [(_DictCalls, n) for n in sorted(ENVS)] + [(_ArrayCalls, n) for n in sorted(ENVS)] + [
    (_AecCalls, "phold_v0"), (_AecCalls, "aircraft_v0"),
    (_AgentVectorCalls, "pcs_v0"), (_AgentVectorCalls, "aircraft_v0")]


@pytest.mark.parametrize(("base", "name"), CASES,
                         ids=[f"{b.face}-{n}" for b, n in CASES])
def test_call_orders(base: type[_Calls], name: str) -> None:
    machine = _machine(base, name)
    machine.TestCase.settings = CALLS
    machine.TestCase().runTest()
