"""Hostile use of the env faces (ParallelEnv, AEC env, batched SeerVectorEnv,
agent_vector_env, the RLlib adapter): signal handlers that close the env or
call into it, Ctrl-C at every point of a step, action dicts and keys whose
methods change ``env.agents``, calls in every wrong order, close() racing
with calls.  Each test pins a failure once found.  What could hang or crash
the interpreter on failure runs in a subprocess with a timeout."""

from __future__ import annotations

import collections.abc
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import seer_env
from seer_env._bind import gate as _gate
from seer_env.envs import aircraft_v0, pcs_v0, phold_v0
from seer_env.errors import (
    ClosedError,
    ConfigError,
    InvalidActionError,
    SeerError,
    StateError,
)

# the tree whose seer_env is imported (a sanitized copy, under
# tests/native/run_sanitizers.sh): the subprocesses import the same one
ROOT = Path(seer_env.__file__).resolve().parent.parent

FACES = ("parallel", "aec", "vector", "agent_vector")

PRELUDE = '''
import gc, os, random, signal, sys, threading, time
import numpy as np
from seer_env._bind import gate as _gate
from seer_env.envs import phold_v0
from seer_env.errors import ClosedError, InvalidActionError, SeerError, StateError
if os.environ.get("SEER_TEST_PYGATE"):  # the pure-Python gate (no built _fast)
    _gate.new_gate = _gate.PyGate

CFG = dict(num_entities=4, threads=1, max_cycles=0)


class Face:
    """One face of a PHOLD env of 4 agents (2 instances for the batched ones)."""

    def __init__(self, kind):
        self.kind = kind
        if kind == "parallel":
            self.env = phold_v0.parallel_env(**CFG)
            self.rt = self.env.runtime
        elif kind == "aec":
            self.env = phold_v0.env(**CFG)
            self.rt = self.env.unwrapped.runtime
        elif kind == "vector":
            self.env = phold_v0.vector_env(2, **CFG)
            self.rt = self.env.runtime
        else:
            self.env = phold_v0.agent_vector_env(2, **CFG)
            self.rt = self.env.venv.runtime
        # face steps per native step
        self.per_step = 4 if kind == "aec" else 1

    @property
    def gate(self):
        inner = {"aec": lambda e: e.env, "agent_vector": lambda e: e.venv}.get(self.kind)
        return (inner(self.env) if inner else self.env)._busy

    def reset(self, seed=0):
        self.env.reset(seed=seed)

    def step1(self):
        """One call of the face's step (an AEC step is one agent's)."""
        e = self.env
        if self.kind == "parallel":
            e.step({a: 0 for a in e.possible_agents})
        elif self.kind == "aec":
            e.step(0)
        elif self.kind == "vector":
            e.step(np.zeros((2, 4), np.int64))
        else:
            e.step(np.zeros(8, np.int64))

    def step(self):
        """Face steps up to the next native step."""
        for _ in range(self.per_step):
            self.step1()

    def calls(self):
        """Every call of the face that must raise ClosedError once it is closed."""
        e = self.env
        out = {"reset": lambda: e.reset(seed=1), "step": self.step1}
        if self.kind in ("parallel", "vector", "aec"):
            out["state"] = e.state
        if self.kind == "parallel":
            out["render"] = e.render
        if self.kind == "aec":
            out.update(observe=lambda: e.observe("entity_0"), last=e.last, render=e.render,
                       agent_iter=lambda: e.agent_iter())
        if self.kind == "vector":
            out["alive"] = lambda: e.alive
        if self.kind == "agent_vector":
            out["render"] = e.render
        return out

    def all_closed(self):
        """The calls that did not raise ClosedError (none, when all is well)."""
        bad = []
        for name, call in self.calls().items():
            try:
                call()
                bad.append(f"{name}: returned")
            except ClosedError:
                pass
            except BaseException as exc:
                bad.append(f"{name}: {type(exc).__name__}: {exc}")
        return bad
'''


def run_python(code: str, timeout: float = 120, pygate: bool = False
               ) -> subprocess.CompletedProcess:
    """``code`` after PRELUDE in a fresh interpreter (a hang or a crash there
    fails the test instead of the suite)."""
    import os

    env = dict(os.environ)
    if pygate:
        env["SEER_TEST_PYGATE"] = "1"
    try:
        return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
                              capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                              env=env)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else \
            (exc.stdout or "")
        raise AssertionError(f"the interpreter hung (killed after {timeout} s); its output "
                             f"so far:\n{out}") from None


# ---- a SIGINT handler that closes the env ----------------------------------------


@pytest.mark.parametrize("pygate", [False, True], ids=["c-gate", "py-gate"])
@pytest.mark.parametrize("face", FACES)
def test_a_sigint_handler_closing_the_env_inside_a_step_does_not_deadlock(
        face: str, pygate: bool) -> None:
    # The handler runs on the stepping thread, between two bytecodes of the
    # step, while the step holds the env: close() used to wait for it for ever.
    # Now the env closes when the step ends, not before (the step still uses
    # the runtime), and the step raises ClosedError -- or the handler's
    # KeyboardInterrupt.
    r = run_python(f"""
    for raising in (False, True):
        face = Face({face!r})
        face.reset()
        face.step()
        seen = []
        def handler(signum, frame):
            face.env.close()
            seen.append(("closed in the handler", face.rt.closed))
            if raising:
                raise KeyboardInterrupt
        signal.signal(signal.SIGINT, handler)
        real = face.rt.step
        def stepping(*args, **kwargs):
            real(*args, **kwargs)
            signal.raise_signal(signal.SIGINT)  # the handler runs right after this
            seen.append(("open after the handler", not face.rt.closed))
        face.rt.step = stepping
        try:
            face.step()
            outcome = "returned"
        except ClosedError as exc:
            outcome = "ClosedError"
            assert "closed during" in str(exc), exc
        except KeyboardInterrupt:
            outcome = "KeyboardInterrupt"
        signal.signal(signal.SIGINT, signal.default_int_handler)
        print(outcome, seen, face.rt.closed, face.all_closed())
        face.env.close()  # again: nothing
        face.env.close()
    """, timeout=60, pygate=pygate)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.splitlines() == [
        "ClosedError [('closed in the handler', False), ('open after the handler', True)] "
        "True []",
        "KeyboardInterrupt [('closed in the handler', False)] True []",
    ], r.stdout + r.stderr[-3000:]


@pytest.mark.parametrize("face", FACES)
def test_sigints_at_random_moments_with_a_closing_handler_never_hang(face: str) -> None:
    r = run_python(f"""
    outcomes = {{}}
    for trial in range(40):
        face = Face({face!r})
        face.reset(seed=trial)
        raising = trial % 2 == 1
        def handler(signum, frame):
            face.env.close()
            if raising:
                raise KeyboardInterrupt
        signal.signal(signal.SIGINT, handler)
        timer = threading.Timer(random.random() * 0.003, os.kill, (os.getpid(), signal.SIGINT))
        try:
            timer.start()  # (the signal may come before the first step)
            while True:
                face.step1()
        except ClosedError:
            outcome = "ClosedError"
        except KeyboardInterrupt:
            outcome = "KeyboardInterrupt"
        timer.join()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        assert face.rt.closed
        bad = face.all_closed()
        assert not bad, bad
        face.env.close()
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print(sorted(outcomes))
    """, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.strip() in ("['ClosedError', 'KeyboardInterrupt']", "['ClosedError']",
                                "['KeyboardInterrupt']"), r.stdout


@pytest.mark.parametrize("pygate", [False, True], ids=["c-gate", "py-gate"])
def test_a_handler_calling_into_the_env_during_a_step_is_refused_and_marks_it(
        pygate: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # A call from a signal handler (or callback) on the thread inside a call
    # is refused at once -- not run in the middle of the step, not waited
    # for -- and the step it interrupted, having stepped the runtime, leaves
    # the env needing reset() (the refusal is a SeerError, but not the
    # runtime's own report of what happened).
    if pygate:
        monkeypatch.setattr(_gate, "new_gate", _gate.PyGate)
    env = phold_v0.parallel_env(num_entities=4, threads=1, max_cycles=0)
    env.reset(seed=0)
    real = env.runtime.step
    errs: list[BaseException] = []

    def stepping(*args: object) -> None:
        real(*args)
        try:
            env.state()
        except StateError as exc:
            errs.append(exc)
            raise

    env.runtime.step = stepping  # type: ignore[method-assign]
    with pytest.raises(StateError, match=r"state\(\) was called from inside another call"):
        env.step({a: 0 for a in env.agents})
    del env.runtime.step
    assert len(errs) == 1 and not isinstance(errs[0], ClosedError)
    with pytest.raises(StateError, match=r"cut short.*call reset\(\)"):
        env.step({a: 0 for a in env.agents})
    env.reset(seed=1)
    env.step({a: 0 for a in env.agents})
    assert env.runtime.step_index(0) == 1
    env.close()


# ---- Ctrl-C at the end of a step ------------------------------------------------


def _inject_after(monkeypatch: pytest.MonkeyPatch, rt: object, name: str) -> None:
    """``rt.<name>`` runs for real, then a KeyboardInterrupt (as from Ctrl-C)."""
    real = getattr(rt, name)

    def then_interrupt(*args: object, **kwargs: object) -> None:
        real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(rt, name, then_interrupt)


def _faces() -> dict[str, tuple]:
    """(make, runtime of, step, reset, state) per face."""
    cfg = dict(num_entities=4, threads=1, max_cycles=0)
    return {
        "parallel": (lambda: phold_v0.parallel_env(**cfg), lambda e: e.runtime,
                     lambda e: e.step({a: 0 for a in e.possible_agents}), lambda e: e.state()),
        "aircraft": (lambda: aircraft_v0.parallel_env(num_uavs=6, threads=1, max_cycles=50),
                     lambda e: e.runtime,
                     lambda e: e.step({a: np.zeros(3, np.float32) for a in e.agents}),
                     lambda e: e.state()),
        "aec": (lambda: phold_v0.env(**cfg), lambda e: e.unwrapped.runtime,
                lambda e: [e.step(0) for _ in range(4)], lambda e: e.observe("entity_0")),
        "vector": (lambda: phold_v0.vector_env(2, **cfg), lambda e: e.runtime,
                   lambda e: e.step(np.zeros((2, 4), np.int64)), lambda e: e.state()),
        "agent_vector": (lambda: phold_v0.agent_vector_env(2, **cfg), lambda e: e.venv.runtime,
                         lambda e: e.step(np.zeros(8, np.int64)), None),
    }


@pytest.mark.parametrize("face", ["parallel", "aircraft", "aec", "vector", "agent_vector"])
@pytest.mark.parametrize("where", ["step", "reset"])
def test_ctrl_c_right_after_the_native_call_leaves_the_env_needing_reset(
        face: str, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A KeyboardInterrupt between the native step's return and the line that
    # marked the step as cut short escaped unmarked: the next step() was
    # accepted and the runtime's step index jumped by 2 (on Aircraft, agents
    # that finished in the lost step stayed in env.agents).
    make, rt_of, step, state = _faces()[face]
    env = make()
    rt = rt_of(env)
    env.reset(seed=0)
    step(env)
    with monkeypatch.context() as m:
        _inject_after(m, rt, where)
        with pytest.raises(KeyboardInterrupt):
            env.reset(seed=3) if where == "reset" else step(env)
    for _ in range(2):  # refused, however often it is tried
        with pytest.raises(StateError, match=r"cut short before it finished.*call reset\(\)"):
            step(env)
        if state is not None:
            with pytest.raises(StateError, match=r"call reset\(\)"):
                state(env)
    assert rt.step_index(0) == (0 if where == "reset" else 2)  # the refusals stepped nothing
    env.reset(seed=1)
    step(env)
    step(env)
    assert rt.step_index(0) == 2
    env.close()


@pytest.mark.parametrize("face", ["parallel", "vector", "aec"])
def test_sigints_at_random_points_of_steps_never_lose_a_step(face: str) -> None:
    # SIGINT fired at random moments while a loop steps PHOLD; the handler
    # raises KeyboardInterrupt only while a state-changing call of the env
    # (step, reset) is running -- not after it returned, where the test's own
    # code would lose the outputs.  After each step that returns, the
    # runtime's step index is exactly the number of steps the test saw since
    # its last reset: an interrupted step either changed nothing, or the env
    # refuses every call but reset().
    r = run_python(f"""
    face = Face({face!r})
    cls = type(face.env.env) if face.kind == "aec" else type(face.env)
    codes = {{cls.step.__wrapped__.__code__, cls.reset.__wrapped__.__code__}}
    main = threading.get_ident()
    def handler(signum, frame):
        f = frame
        while f is not None:
            if f.f_code in codes:
                raise KeyboardInterrupt
            f = f.f_back
    signal.signal(signal.SIGINT, handler)
    stop = threading.Event()
    def fire():
        while not stop.is_set():
            time.sleep(random.random() * 0.0003)
            signal.pthread_kill(main, signal.SIGINT)
    def reset(seed):
        while True:
            try:
                face.reset(seed)
                return
            except KeyboardInterrupt:
                pass
    reset(0)
    sender = threading.Thread(target=fire, daemon=True)
    sender.start()
    count = interrupted = refused = 0
    t_end = time.monotonic() + 3.0
    i = 0
    while time.monotonic() < t_end:
        i += 1
        try:
            face.step1()
            count += 1
        except KeyboardInterrupt:
            interrupted += 1
            continue
        except StateError as exc:
            assert "call reset()" in str(exc), exc
            refused += 1
            reset(i)
            count = 0
            continue
        index = face.rt.step_index(0)
        assert index == count // face.per_step, (i, index, count, interrupted, refused)
    stop.set()
    sender.join()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("steps", i, "interrupted", interrupted, "refused", refused, file=sys.stderr)
    assert interrupted > 0
    print("ok")
    """, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr[-3000:]


# ---- action dicts and keys whose code changes env.agents --------------------------

HOSTILE = '''
import collections.abc
from seer_env import _fast
from seer_env.envs import aircraft_v0, pcs_v0


def zero(env):
    return 0 if env.sizes.action_kind == "discrete" else np.zeros(3, np.float32)


class Key:
    """Equal to (and hashed as) an agent's name; comparing runs `act`."""
    def __init__(self, name, act):
        self.name, self.act = name, act
    def __hash__(self):
        return hash(self.name)
    def __eq__(self, other):
        self.act()
        return other == self.name


def keyed(env, act):
    d = {a: zero(env) for a in env.agents}
    first = env.agents[0]
    del d[first]
    d[Key(first, act)] = zero(env)
    return d


class Hostile(collections.abc.Mapping):
    def __init__(self, env, d, act, where="getitem"):
        self.env, self.d, self.act, self.where = env, d, act, where
    def __getitem__(self, k):
        if self.where == "getitem":
            self.act()
        return self.d[k]
    def __iter__(self):
        if self.where == "iter":
            self.act()
        return iter(self.d)
    def __len__(self):
        if self.where == "len":
            self.act()
        return len(self.d)


class GetItem(dict):
    def __init__(self, d, act):
        super().__init__(d)
        self.act = act
    def __getitem__(self, k):
        self.act()
        return super().__getitem__(k)


def boom():
    raise RuntimeError("hostile")


def cases(env):
    """(name, a function building the actions): each act is done on the list
    env.agents is when it runs (the one a step reads)."""
    acts = {
        "clear": lambda: env.agents.clear(),
        "pop": lambda: env.agents.pop() if env.agents else None,
        "del_gc": lambda: (env.agents.__delitem__(slice(None)), gc.collect()),
        "extend": lambda: env.agents.extend([object()] * 50),
        "rebind": lambda: setattr(env, "agents", ["nobody"]),
        "raise": boom,
    }
    def live():
        return {a: zero(env) for a in env.agents}
    for name, act in acts.items():
        yield f"key-{name}", lambda act=act: keyed(env, act)
        yield f"mapping-{name}", lambda act=act: Hostile(env, live(), act)
        yield f"dict-subclass-{name}", lambda act=act: GetItem(live(), act)
    for where in ("iter", "len"):
        yield f"mapping-{where}-raise", lambda where=where: Hostile(env, live(), boom, where)
        yield f"mapping-{where}-clear", lambda where=where: Hostile(
            env, live(), lambda: env.agents.clear(), where)
    box = {}
    def clearing():
        box["d"] = keyed(env, lambda: box["d"].clear())
        return box["d"]
    yield "key-clears-the-dict", clearing
    yield "mixed-keys", lambda: {**live(), 3: zero(env)}
    yield "plain-mapping", lambda: Hostile(env, live(), lambda: None)
'''


@pytest.mark.parametrize("model", ["pcs", "aircraft"])
def test_action_keys_and_dicts_that_change_env_agents_never_crash(model: str) -> None:
    # The C fast path read env.agents by index after a key's __eq__ (user
    # code) had cleared it: a NULL or freed pointer, a crash.  Now the live
    # agents are a private tuple: each step either works (for the env's live
    # agents, whatever was done to the env.agents list) or raises
    # InvalidActionError, and the env goes on.
    make = ("pcs_v0.parallel_env(width=3, height=2, threads=1, max_cycles=0)" if model == "pcs"
            else "aircraft_v0.parallel_env(num_uavs=6, threads=1, max_cycles=0)")
    r = run_python(HOSTILE + textwrap.dedent(f"""
    env = {make}
    env.reset(seed=0)
    steps = 0
    outcomes = {{}}
    def live():  # the runtime's live agents
        return [a for a, x in zip(env.possible_agents, env.runtime.alive[0]) if x]
    for name, build in list(cases(env)):
        for _ in range(2):
            if not live():  # (aircraft: every UAV landed or crashed)
                env.reset(seed=steps)
                steps = 0
            env.agents = live()  # what a previous case did to it, undone
            actions = build()
            try:
                env.step(actions)
                steps += 1
                outcome = "ok"
            except InvalidActionError as exc:
                outcome = "InvalidActionError"
            outcomes.setdefault(name, set()).add(outcome)
            # the env is as it should be: the runtime's steps, and a step of
            # the runtime's live agents works (the env's own record of them
            # is the runtime's)
            assert env.runtime.step_index(0) == steps, (name, steps)
            if live():
                env.step({{a: zero(env) for a in live()}})
                steps += 1
    for name, seen in outcomes.items():
        print(name, sorted(seen))
    """), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    got = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    # InvalidActionError: user code raised (a key's __eq__, a Mapping's
    # __getitem__, or its __len__, which the checked path's list(actions) asks
    # for), the dict lost its keys during the lookup, or a key is no agent's.
    # (A Mapping whose __iter__ raises still works: with every live agent's
    # action there the step never iterates.)
    invalid = {"key-raise", "mapping-raise", "dict-subclass-raise", "mapping-len-raise",
               "key-clears-the-dict", "mixed-keys"}
    assert len(got) == 25, r.stdout
    for name, seen in got.items():
        want = "['InvalidActionError']" if name in invalid else "['ok']"
        assert seen == want, (name, seen, r.stdout)


def test_fast_functions_read_a_list_of_names_as_it_was_at_the_call() -> None:
    r = run_python(HOSTILE + textwrap.dedent("""
    names = ["a", "b", "c"]
    class Name(str):
        def __hash__(self):
            names.clear()
            gc.collect()
            return str.__hash__(self)
        def __eq__(self, other):
            names.clear()
            return str.__eq__(self, other)
    A, D = 3, 2
    obs = np.arange(A * D, dtype=np.float32).reshape(A, D)
    spec = (obs, np.zeros(A, np.float32), np.zeros(A, bool), np.zeros(A, bool),
            np.zeros((A, 1)), (0,), ("k",), {"k": None})
    for i in range(3):
        names[:] = [Name("a"), Name("b"), Name("c")]
        (o, r, te, tr, inf), done = _fast.dict_outputs(names, np.arange(3, dtype=np.intp), spec)
        assert list(o) == ["a", "b", "c"] and o["c"].tolist() == [4.0, 5.0]
        names[:] = ["a", "b", "c"]
        keys = {Key("a", names.clear): 1, "b": 2, "c": 3}
        dst = np.zeros(3, np.int32)
        assert _fast.dict_actions(keys, names, np.arange(3, dtype=np.intp), dst, 1, True)
        assert dst.tolist() == [1, 2, 3]
    print("ok")
    """))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr[-3000:]


# ---- errors: always a SeerError, naming what was wrong ----------------------------


def _raises(kind: type[BaseException], call, match: str | None = None) -> None:
    with pytest.raises(kind, match=match) as info:
        call()
    assert isinstance(info.value, SeerError), info.value


def test_parallel_env_errors_are_seer_errors() -> None:
    env = pcs_v0.parallel_env(width=3, height=2, max_cycles=2, threads=1)
    _raises(ConfigError, lambda: env.reset(seed=0, options=3), "options")
    env.reset(seed=0)
    while env.agents:
        env.step({a: 0 for a in env.agents})
    assert env.step({}) == ({}, {}, {}, {}, {})  # after the end: empty dicts for empty actions
    for actions in ({"cell_0": 1, 3: 0}, {object(): 0, object(): 1}, {(1, 2): 0}):
        _raises(StateError, lambda actions=actions: env.step(actions), "episode is over")
    env.reset(seed=0)
    _raises(InvalidActionError, lambda: env.step({**{a: 0 for a in env.agents}, 3: 0}),
            "unknown agent 3")
    env.step({a: 0 for a in env.agents})  # nothing changed: it goes on
    env.close()
    for call in (lambda: env.render(), lambda: env.state(), lambda: env.reset(seed=0),
                 lambda: env.step({})):
        _raises(ClosedError, call)
    env.close()


def test_aec_errors_are_seer_errors_and_leave_the_env_as_it_was() -> None:
    aec = pcs_v0.env(width=3, height=2, max_cycles=2, threads=1)
    # before reset: StateError (AssertionError and AttributeError before)
    for call in (lambda: aec.step(0), lambda: aec.step(None), lambda: aec.observe("cell_0"),
                 aec.last, aec.state, aec.render, aec.agent_iter):
        _raises(StateError, call, r"before reset\(\)|reset\(\) before")
    for attr in ("agents", "agent_selection", "rewards", "num_agents", "terminations"):
        _raises(StateError, lambda attr=attr: getattr(aec, attr), f"{attr} cannot be read")
        assert not hasattr(aec, attr)  # still an AttributeError too
    aec.reset(seed=0)
    _raises(InvalidActionError, lambda: aec.observe("nobody"), "unknown agent 'nobody'")
    _raises(InvalidActionError, lambda: aec.observe([1]), "unknown agent")
    first = aec.agent_selection
    for bad in (99, -1, "x", [1, 2], 0.5, None):
        _raises(InvalidActionError, lambda bad=bad: aec.step(bad))
        assert aec.agent_selection == first  # nothing changed
    # play to the end: the finished agents' only action is None
    dead_refused = 0
    for agent in aec.agent_iter():
        _, _, term, trunc, _ = aec.last()
        if term or trunc:
            _raises(InvalidActionError, lambda: aec.step(0), "only action is None")
            assert aec.agent_selection == agent
            dead_refused += 1
            aec.step(None)  # PettingZoo's convention: removes it
        else:
            aec.step(0)
    assert dead_refused == 6 and aec.agents == []
    for call in (lambda: aec.step(0), lambda: aec.step(None), aec.last):
        _raises(StateError, call, "episode is over")
    aec.reset(seed=1)
    aec.step(0)
    aec.close()
    for call in (lambda: aec.step(0), lambda: aec.observe("cell_0"), aec.last, aec.state,
                 aec.render, aec.agent_iter, lambda: aec.reset(seed=0)):
        _raises(ClosedError, call)
    aec.close()


def test_aec_observe_of_a_removed_agent_is_a_state_error() -> None:
    aec = aircraft_v0.env(num_uavs=4, max_cycles=30, threads=1)
    aec.reset(seed=0)
    for _agent in aec.agent_iter():
        _, _, term, trunc, _ = aec.last()
        aec.step(None if term or trunc else np.zeros(3, np.float32))
    # agents that finished before the last step have no observation any more
    gone = []
    for agent in aec.possible_agents:
        try:
            aec.observe(agent)
        except StateError as exc:
            assert f"{agent!r} finished and was removed" in str(exc)
            gone.append(agent)
    assert gone and len(gone) < 4  # (this seed: some finish early, some in the last step)
    _raises(StateError, aec.last, "episode is over")
    aec.close()


def test_aec_agent_iter_without_a_step_is_a_state_error() -> None:
    aec = phold_v0.env(num_entities=3, threads=1)
    aec.reset(seed=0)
    it = iter(aec.agent_iter())
    next(it)
    _raises(StateError, lambda: next(it), r"call step\(\)")
    aec.close()


def test_agent_vector_env_errors_are_seer_errors() -> None:
    envs = pcs_v0.agent_vector_env(2, width=3, height=2, max_cycles=3, threads=1)
    for options in (3, "reset_mask", [True]):
        _raises(ConfigError, lambda options=options: envs.reset(seed=0, options=options),
                "options")
    envs.reset(seed=0)
    for bad in ([[0, 0], [0]], [0] * 11 + [[0, 1]], None, "x", {"a": 1}, np.zeros(13, int),
                _NoArray()):
        _raises(InvalidActionError, lambda bad=bad: envs.step(bad), "actions")
        _raises(InvalidActionError, lambda bad=bad: envs.venv.step(bad), "actions")
    envs.step(np.zeros(12, np.int64))  # nothing changed: it goes on
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert envs.render() is None
    assert any("render_mode=None" in str(x.message) for x in w)
    envs.close()
    for call in (lambda: envs.step(np.zeros(12, np.int64)), lambda: envs.step([[0], [0, 1]]),
                 lambda: envs.reset(seed=0), lambda: envs.reset(options=3), envs.render):
        _raises(ClosedError, call)
    envs.close()


def test_vector_env_errors_after_close_are_closed_errors() -> None:
    venv = pcs_v0.vector_env(2, width=3, height=2, threads=1)
    venv.reset(seed=0)
    _raises(ConfigError, lambda: venv.reset(options=3), "options")
    venv.close()
    for call in (lambda: venv.step(np.zeros((2, 6), np.int64)), lambda: venv.step(None),
                 lambda: venv.reset(seed=0), venv.state, lambda: venv.alive):
        _raises(ClosedError, call)


def test_rllib_adapter_errors_are_seer_errors() -> None:
    rllib = pytest.importorskip("seer_env.rllib")
    pytest.importorskip("ray.rllib")
    cls = rllib.SeerMultiAgentEnv
    _raises(ConfigError, lambda: cls({}), "needs 'env'")
    env = cls({"env": "pcs_v0", "width": 3, "height": 2, "max_cycles": 2, "threads": 1})
    assert env.agents == []
    env.reset(seed=0)
    assert env.agents == env.possible_agents
    _raises(InvalidActionError, lambda: env.step({**{a: 0 for a in env.agents}, 3: 0}))
    # (RLlib's agents name the last step's agents after the episode's end too:
    # its checker wants them; the live ones are agents_alive)
    while env.agents_alive:
        _, _, term, _, _ = env.step({a: 0 for a in env.agents_alive})
    _raises(StateError, lambda: env.step({"cell_0": 0, 3: 0}), "episode is over")
    env.reset(seed=0)
    real = env.par_env.runtime.step

    def then_interrupt() -> None:
        real()
        raise KeyboardInterrupt

    env.par_env.runtime.step = then_interrupt
    with pytest.raises(KeyboardInterrupt):
        env.step({a: 0 for a in env.agents})
    del env.par_env.runtime.step
    _raises(StateError, lambda: env.step({a: 0 for a in env.agents}), r"call reset\(\)")
    env.reset(seed=1)
    env.step({a: 0 for a in env.agents})
    env.close()
    for call in (lambda: env.step({}), lambda: env.reset(seed=0), env.render):
        _raises(ClosedError, call)


class _NoArray:
    def __array__(self, *args: object, **kwargs: object) -> np.ndarray:
        raise RuntimeError("no array here")


@pytest.mark.parametrize("model", ["pcs", "aircraft"])
def test_values_numpy_cannot_read_are_invalid_action_errors(model: str) -> None:
    env = (pcs_v0.parallel_env(width=2, height=2, threads=1, max_cycles=0) if model == "pcs"
           else aircraft_v0.parallel_env(num_uavs=3, threads=1, max_cycles=0))
    env.reset(seed=0)
    first = env.agents[0]
    for bad in ([[1, 2], [3]], _NoArray()):
        _raises(InvalidActionError, lambda bad=bad: env.step({a: bad for a in env.agents}),
                f"action for {first!r} cannot be read as an array")
        _raises(InvalidActionError, lambda bad=bad: env.check_action(first, bad),
                "cannot be read as an array")
    good = 0 if model == "pcs" else np.zeros(3, np.float32)
    env.step({a: good for a in env.agents})
    assert env.runtime.step_index(0) == 1
    env.close()


def test_hostile_mapping_methods_become_invalid_action_errors() -> None:
    env = pcs_v0.parallel_env(width=3, height=2, threads=1, max_cycles=0)
    env.reset(seed=0)

    class Lying(collections.abc.Mapping):  # says it has a key, then has not
        def __init__(self, d: dict) -> None:
            self.d = d

        def __getitem__(self, k: object) -> object:
            if k == "cell_1":
                raise KeyError(k)
            return self.d[k]

        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter(self.d)

        def __len__(self) -> int:
            return len(self.d)

        def __contains__(self, k: object) -> bool:
            return k in self.d

    _raises(InvalidActionError, lambda: env.step(Lying({a: 0 for a in env.agents})),
            r"missing actions for live agent\(s\) \['cell_1'\]")
    env.step({a: 0 for a in env.agents})
    assert env.runtime.step_index(0) == 1
    env.close()


# ---- close() from another thread during a call ----------------------------------


@pytest.mark.parametrize("pygate", [False, True], ids=["c-gate", "py-gate"])
@pytest.mark.parametrize("face", FACES)
def test_close_from_another_thread_refuses_other_calls_with_closed_error(
        face: str, pygate: bool) -> None:
    # close() from another thread while a step runs: the step finishes
    # normally, close() waits for it, every other call from the moment
    # close() started raises ClosedError -- the stepping thread's next call
    # and calls racing with the close used to get "another thread is inside
    # a call".
    r = run_python(f"""
    face = Face({face!r})
    face.reset()
    inside, go = threading.Event(), threading.Event()
    real = face.rt.step
    def blocking(*args, **kwargs):
        inside.set()
        assert go.wait(30)
        return real(*args, **kwargs)
    face.rt.step = blocking
    result = []
    def stepper():
        for _ in range(2):
            try:
                face.step()
                result.append("returned")
            except BaseException as exc:
                result.append(type(exc).__name__)
    t = threading.Thread(target=stepper)
    t.start()
    assert inside.wait(30)
    closer = threading.Thread(target=face.env.close)
    closer.start()
    # until close() has started, a call is refused as busy (another thread
    # is inside); from then on, with ClosedError
    for _ in range(3000):
        try:
            face.step1()
            raise SystemExit("a step ran while another thread was inside one")
        except ClosedError:
            break
        except StateError as exc:
            assert "another thread is inside" in str(exc), exc
        time.sleep(0.001)
    else:
        raise SystemExit("no ClosedError: close() never started, or calls never say so")
    bad = face.all_closed()
    waiting = closer.is_alive() and not face.rt.closed  # it waits for the step
    go.set()
    t.join(30)
    closer.join(30)
    print(result, bad, waiting, face.rt.closed)
    """, timeout=90, pygate=pygate)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.strip() == "['returned', 'ClosedError'] [] True True", \
        r.stdout + r.stderr[-3000:]


@pytest.mark.parametrize("face", ["parallel", "vector"])
def test_calls_racing_with_close_get_closed_errors_only(face: str) -> None:
    r = run_python(f"""
    outcomes = {{}}
    for trial in range(150):
        face = Face({face!r})
        face.reset(seed=trial)
        errs = []
        def loop():
            try:
                for _ in range(2000):
                    face.step1()
                errs.append("finished")
            except BaseException as exc:
                errs.append(exc)
        t = threading.Thread(target=loop)
        t.start()
        threading.Event().wait(random.random() * 0.003)
        face.env.close()
        t.join()
        for e in errs:
            assert e == "finished" or type(e) is ClosedError, repr(e)
            key = "finished" if e == "finished" else "ClosedError"
            outcomes[key] = outcomes.get(key, 0) + 1
    print(outcomes)
    assert outcomes.get("ClosedError", 0) > 0
    """, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]


def test_gate_refusals_name_the_reason() -> None:
    env = phold_v0.parallel_env(num_entities=3, threads=1)
    env.reset(seed=0)
    gate = env._busy
    assert not gate.locked() and not gate.owned() and not gate.closing
    assert gate.acquire(False)
    try:
        assert gate.locked() and not gate.owned() and not gate.acquire(False)
        with pytest.raises(StateError, match="while another thread is inside"):
            env.step({a: 0 for a in env.agents})
    finally:
        gate.release()
    with pytest.raises(RuntimeError):
        gate.release()
    seen: list[bool] = []

    def inside() -> None:
        seen.append(env._busy.owned())

    real = env.runtime.step

    def stepping(*args: object) -> None:
        inside()
        real(*args)

    env.runtime.step = stepping  # type: ignore[method-assign]
    env.step({a: 0 for a in env.agents})
    del env.runtime.step
    assert seen == [True] and not gate.owned()
    gate.closing = False  # cannot be undone once set
    env.close()
    gate.closing = False
    assert gate.closing
    with pytest.raises(ClosedError, match=r"step\(\) on a closed env"):
        env.step({})


def test_a_thread_blocked_in_close_still_runs_signal_handlers() -> None:
    # close() on the main thread waits for a call on another thread in slices,
    # so a Ctrl-C there still reaches the user (and the close goes on later).
    r = run_python("""
    face = Face("parallel")
    face.reset()
    inside, go = threading.Event(), threading.Event()
    real = face.rt.step
    def blocking(*args):
        inside.set()
        go.wait(30)
        return real(*args)
    face.rt.step = blocking
    t = threading.Thread(target=face.step)
    t.start()
    assert inside.wait(30)
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        face.env.close()
        print("closed")
    except KeyboardInterrupt:
        print("interrupted", face.gate.closing, face.rt.closed, face.all_closed())
    go.set()
    t.join(30)
    face.env.close()
    print(face.rt.closed)
    """, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.splitlines() == ["interrupted True False []", "True"], r.stdout


def test_threads_racing_on_one_env_see_only_clear_errors() -> None:
    env = phold_v0.parallel_env(num_entities=4, threads=1, max_cycles=0)
    env.reset(seed=0)
    errs: list[BaseException] = []
    steps = [0, 0]

    def loop(k: int) -> None:
        for _ in range(500):
            try:
                env.step({a: 0 for a in env.possible_agents})
                steps[k] += 1
            except SeerError as exc:
                errs.append(exc)

    ts = [threading.Thread(target=loop, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(type(e) is StateError and "another thread" in str(e) for e in errs), errs[:3]
    assert env.runtime.step_index(0) == sum(steps)
    env.close()


def test_an_unknown_reset_option_is_refused_and_changes_nothing() -> None:
    """A mistyped "reset_mask" was ignored: the partial reset became a full
    one and threw the other instances' episodes away."""
    from seer_env.errors import ConfigError

    v = pcs_v0.vector_env(3, width=2, height=2, threads=1, autoreset_mode="disabled")
    v.reset(seed=0)
    for _ in range(3):
        v.step(np.ones((3, 4), int))
    before = v.state().copy()
    with pytest.raises(ConfigError, match=r"unknown option\(s\) 'reset_mak'.*'reset_mask'"):
        v.reset(options={"reset_mak": np.array([True, False, False])})
    assert np.array_equal(v.state(), before)
    v.reset(options={"reset_mask": np.array([True, False, False])})
    after = v.state()
    assert not np.array_equal(after[0], before[0])
    assert np.array_equal(after[1:], before[1:])
    v.close()
    # PettingZoo's envs take any option (its api_test passes {"options": 1})
    p = pcs_v0.parallel_env(width=2, height=2, threads=1)
    p.reset(seed=0, options={"options": 1})
    p.close()


def test_an_unknown_agent_is_a_key_error_too() -> None:
    """A name the env has no agent of raises UnknownAgentError: an
    InvalidActionError (as before) and a KeyError, what a dict lookup of the
    name raises, with the message as it is (not KeyError's quoted repr)."""
    from seer_env.errors import UnknownAgentError

    env = pcs_v0.parallel_env(width=2, height=2, threads=1)
    env.reset(seed=0)
    for call in (lambda: env.action_space("nobody"), lambda: env.observation_space("nobody"),
                 lambda: env.step({**dict.fromkeys(env.agents, 0), "nobody": 0})):
        with pytest.raises(KeyError) as exc:
            call()
        assert isinstance(exc.value, UnknownAgentError)
        assert isinstance(exc.value, InvalidActionError)
        assert str(exc.value) == "pcs_v0: unknown agent 'nobody'"
    env.close()
