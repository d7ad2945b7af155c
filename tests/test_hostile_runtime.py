"""Hostile use of the runtime layer: refused and failed steps in the middle of
STPA's preflight and probes, on every face that uses STPA (the PettingZoo dict
API, the batched vector env, the agent vector env); configurations too large
for memory_limit (or the machine), host buffers included."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from seer_env import errors
from seer_env.envs import pcs_v0
from seer_env.stpa import Stpa

# -- the faces ---------------------------------------------------------------------

B = 3  # instances of the batched faces


class Face:
    """One way of using an env: how to make it, step it, refuse a step, reset it."""

    def __init__(self, name: str, make: Callable[..., Any], runtime: Callable[[Any], Any],
                 good: Callable[[Any, np.random.Generator], Any],
                 refused: Callable[[Any, str], Any], instances: int, agents_per: int) -> None:
        self.name = name
        self.make = make
        self.runtime = runtime
        self.good = good
        self.refused = refused
        self.instances = instances
        self.agents_per = agents_per

    def __repr__(self) -> str:
        return self.name

    def masked_reset(self, env: Any, mask: list[bool]) -> Any:
        if self.name == "parallel":  # no masked reset: a plain one (a seed from the mask)
            return env.reset(seed=sum(b << i for i, b in enumerate(mask)))
        m = np.asarray(mask, dtype=bool)
        if self.name == "agents":
            m = np.repeat(m, self.agents_per)
        return env.reset(options={"reset_mask": m})


N_ACT = 5  # PCS: Discrete(5)
A = 64  # 8 x 8 cells


def _dict_refused(env: Any, kind: str) -> Any:
    if kind == "range":  # refused by the runtime (values are checked in C)
        return {a: N_ACT + 3 for a in env.agents}
    return {a: [0, 0] for a in env.agents}  # refused in Python (shape)


def _array_refused(shape: tuple[int, ...]) -> Callable[[Any, str], Any]:
    def refused(env: Any, kind: str) -> Any:
        if kind == "range":
            return np.full(shape, N_ACT + 3, dtype=np.int64)
        return np.zeros((*shape, 2), dtype=np.int64)

    return refused


FACES = [
    Face("parallel", lambda **kw: pcs_v0.parallel_env(width=8, height=8, **kw),
         lambda env: env.runtime,
         lambda env, rng: {a: int(rng.integers(N_ACT)) for a in env.agents},
         _dict_refused, 1, A),
    Face("vector", lambda **kw: pcs_v0.vector_env(B, width=8, height=8, **kw),
         lambda env: env.runtime,
         lambda env, rng: rng.integers(0, N_ACT, size=(B, A)),
         _array_refused((B, A)), B, A),
    Face("agents", lambda **kw: pcs_v0.agent_vector_env(B, width=8, height=8, **kw),
         lambda env: env.venv.runtime,
         lambda env, rng: rng.integers(0, N_ACT, size=(B * A,)),
         _array_refused((B * A,)), B, A),
]


# -- comparing ---------------------------------------------------------------------


def assert_same(x: Any, y: Any, where: str = "") -> None:
    """Exactly the same outputs (dicts, tuples, arrays, scalars)."""
    assert type(x) is type(y), f"{where}: {type(x)} != {type(y)}"
    if isinstance(x, dict):
        assert list(x) == list(y), f"{where}: keys differ"
        for k in x:
            assert_same(x[k], y[k], f"{where}[{k!r}]")
    elif isinstance(x, (tuple, list)):
        assert len(x) == len(y), f"{where}: lengths differ"
        for i, (a, b) in enumerate(zip(x, y, strict=True)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(x, np.ndarray):
        assert x.dtype == y.dtype and x.shape == y.shape, where
        assert x.tobytes() == y.tobytes(), f"{where}: values differ"
    else:
        assert x == y, f"{where}: {x!r} != {y!r}"


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", outputs) or ("error", the SeerError's class); any other exception
    escapes (and fails the test)."""
    try:
        return "ok", call()
    except errors.SeerError as exc:
        return "error", type(exc)


def stpa_state(st: Stpa) -> dict[str, Any]:
    """Everything the controller holds, and where its runtime runs."""
    d = {k: copy.deepcopy(v) for k, v in vars(st).items() if k not in ("rt", "_clock", "caches")}
    d["running"] = (st.rt.executor, st.rt.threads)
    return d


def assert_consistent(st: Stpa) -> None:
    """What the next step needs: a probe has a visit to run (or runs its
    features step first) and is called at the next step."""
    pr = st.prober.probe
    if pr is not None:
        assert st.countdown <= 1
        assert pr.stage == "features" or (pr.queue and st.features is not None), pr
    else:
        assert st.decision is not None and st.countdown >= 1


def stpa_key(st: Stpa) -> Any:
    """The choices and the timings behind them (not the traced step's real times)."""
    return ([(d.candidate, dict(d.medians_ns), d.trigger) for d in st.history], st.timings,
            st.state, st.preflight_steps, st.probe_steps, (st.rt.executor, st.rt.threads))


# -- the exact sequence that broke STPA for good --------------------------------------


@pytest.mark.parametrize("face", FACES, ids=repr)
def test_refused_good_refused_then_every_step_works(face: Face) -> None:
    """threads="auto" (the default): a refused step, a good one, a refused one
    made every later step raise IndexError (pop from empty list), reset()
    included.  Now the run goes on, STPA decides, and the outputs are those of
    the serial executor."""
    env = face.make()
    ref = face.make(executor="serial", threads=1)
    rt = face.runtime(env)
    assert rt.stpa is not None
    rng = np.random.default_rng(0)
    try:
        assert_same(env.reset(seed=4), ref.reset(seed=4))
        for i in range(400):
            if i in (0, 1):  # refused, good, refused, good, ...: as found
                with pytest.raises(errors.InvalidActionError):
                    env.step(face.refused(env, "range"))
                with pytest.raises(errors.InvalidActionError):
                    ref.step(face.refused(ref, "range"))
            acts = face.good(env, rng)
            assert_same(env.step(acts), ref.step(acts), f"step {i}")
            if i >= 60 and rt.stpa.decision is not None:
                break
        assert rt.stpa.decision is not None
        assert_same(env.reset(seed=9), ref.reset(seed=9))
        acts = face.good(env, rng)
        assert_same(env.step(acts), ref.step(acts))
    finally:
        env.close()
        ref.close()


# -- a refused step at every position of the preflight and the probes after it --------


def _deterministic_stpa(rt: Any) -> Stpa:
    """A short preflight whose course does not depend on the machine: a clock
    charging each configuration a fixed cost per read (serial 1000, parallel-1
    1100, parallel-2 1050 ns: serial and parallel-2 are a close call, which
    adds extra rounds), every pool timed (prune=1e9), confirmation re-probes
    every few steps."""
    costs = {("serial", 1): 1000, ("parallel", 1): 1100, ("parallel", 2): 1050}
    now = [0]

    def clock() -> int:
        now[0] += costs.get((rt.executor, rt.threads), 1000)
        return now[0]

    rt.stpa = Stpa(rt, cores=2, rounds=2, min_visit_ns=1.0, prune=1e9, extra_rounds=2,
                   check_every=3, reprobe_gap=6, clock=clock)
    return rt.stpa


STEPS = 48


@functools.cache
def _reference(face_name: str) -> tuple[list[Any], Any]:
    """The serial executor's outputs of the good calls, and the choices of an
    auto run of them without a refused step."""
    face = next(f for f in FACES if f.name == face_name)
    ref = face.make(executor="serial", threads=1)
    env = face.make()
    st = _deterministic_stpa(face.runtime(env))
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    outs = [ref.reset(seed=2)]
    env.reset(seed=2)
    for _ in range(STEPS):
        outs.append(ref.step(face.good(ref, rng_a)))
        env.step(face.good(env, rng_b))
    key = stpa_key(st)
    ref.close()
    env.close()
    return outs, key


@pytest.mark.parametrize("face", FACES, ids=repr)
@pytest.mark.parametrize("pos", range(STEPS))
def test_refused_steps_at_every_position(face: Face, pos: int) -> None:
    """Refused steps (by the runtime, and in Python) before good step ``pos``:
    each leaves STPA exactly as it was, every output is the serial executor's,
    and the run makes the same choices as one without them."""
    outs, key = _reference(face.name)
    env = face.make()
    st = _deterministic_stpa(face.runtime(env))
    rng = np.random.default_rng(1)
    try:
        assert_same(env.reset(seed=2), outs[0])
        for i in range(STEPS):
            if i == pos:
                for kind in ("range", "shape", "range"):
                    before = stpa_state(st)
                    with pytest.raises(errors.InvalidActionError):
                        env.step(face.refused(env, kind))
                    assert stpa_state(st) == before, f"{kind} refused at {pos} changed STPA"
            assert_same(env.step(face.good(env, rng)), outs[i + 1], f"step {i}")
            assert_consistent(st)
        assert stpa_key(st) == key
    finally:
        env.close()


# -- random sequences -----------------------------------------------------------------

_OPS = hs.one_of(
    hs.tuples(hs.just("step"), hs.integers(0, 2**32 - 1)),
    hs.tuples(hs.just("step"), hs.integers(0, 2**32 - 1)),
    hs.tuples(hs.just("step"), hs.integers(0, 2**32 - 1)),
    hs.tuples(hs.just("refuse"), hs.sampled_from(["range", "shape"])),
    hs.tuples(hs.just("reset"), hs.integers(0, 1000)),
    hs.tuples(hs.just("masked"), hs.lists(hs.booleans(), min_size=B, max_size=B)),
)


def _call(face: Face, env: Any, op: str, arg: Any) -> Any:
    if op == "step":
        return env.step(face.good(env, np.random.default_rng(arg)))
    if op == "refuse":
        return env.step(face.refused(env, arg))
    if op == "reset":
        return env.reset(seed=arg)
    return face.masked_reset(env, arg)


@pytest.mark.parametrize("face", FACES, ids=repr)
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=hs.lists(_OPS, max_size=70))
def test_random_calls_match_the_serial_executor(face: Face, ops: list[tuple[str, Any]]) -> None:
    """Good steps, refused steps, resets and masked resets in any order, on a
    short STPA preflight with frequent re-probes (real clock): no exception
    but a SeerError, the same outcome as the serial executor for every call,
    and STPA consistent after every one (unchanged after one that raised)."""
    kw = {"max_cycles": 7}  # episodes end (and autoreset) within a sequence
    env = face.make(**kw)
    ref = face.make(executor="serial", threads=1, **kw)
    rt = face.runtime(env)
    rt.stpa = st = Stpa(rt, cores=2, rounds=1, min_visit_ns=1.0, extra_rounds=1,
                        check_every=2, reprobe_gap=4)
    try:
        for k, (op, arg) in enumerate(ops):
            before = stpa_state(st)
            got, want = (outcome(functools.partial(_call, face, e, op, arg)) for e in (env, ref))
            assert got[0] == want[0], (k, op, got, want)
            if got[0] == "error":
                assert got[1] is want[1], (k, op)
                assert stpa_state(st) == before, (k, op)
            else:
                assert_same(got[1], want[1], f"call {k} ({op})")
            assert_consistent(st)
    finally:
        env.close()
        ref.close()


# -- memory: the host buffers count, and are counted before they are allocated --------

#: in range, observation-heavy: 5 instances x 500000 UAVs x 1351 floats = 12.6 GiB
#: of observation buffer alone
BIG_AIRCRAFT = {"num_uavs": 500_000, "num_rays": 1024, "num_obs_targets": 64,
                "num_neighbors": 8}


def _peak_bytes(call: Callable[[], Any]) -> tuple[Any, int]:
    """``call``'s outcome and the most memory Python and NumPy held during it
    (NumPy reports its buffers to tracemalloc)."""
    import tracemalloc

    tracemalloc.start()
    try:
        return outcome(call), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("face", ["vector", "agents"])
def test_a_config_over_memory_limit_is_refused_before_its_buffers_exist(face: str) -> None:
    """The 12.6 GiB of observation buffer used to be asked of NumPy before the
    runtime checked anything, whatever memory_limit said; now the check comes
    first, counts the host buffers, and names the total, the biggest part and
    the limit."""
    from seer_env.envs import aircraft_v0
    from seer_env.registry import memory_estimate

    parts = memory_estimate("aircraft_v0", BIG_AIRCRAFT, 5)
    total = sum(parts.values())
    assert max(parts, key=parts.__getitem__) == "observation buffer"
    assert parts["observation buffer"] == 5 * 500_000 * 1351 * 4  # 12.6 GiB
    make = aircraft_v0.vector_env if face == "vector" else aircraft_v0.agent_vector_env
    (kind, err), peak = _peak_bytes(lambda: make(5, memory_limit=1 << 30, **BIG_AIRCRAFT))
    assert (kind, err) == ("error", errors.ConfigError)
    assert peak < 64 << 20  # nothing near the buffers' size was allocated
    with pytest.raises(errors.ConfigError) as info:
        make(5, memory_limit=1 << 30, **BIG_AIRCRAFT)
    msg = str(info.value)
    assert f"needs about {total / 2**30:.1f} GiB ({total} bytes)" in msg
    assert "more than the 1.0 GiB (1073741824 bytes) allowed (memory_limit)" in msg
    assert ("the biggest part is the observation buffer: 12.6 GiB (5 instance(s) x 500000 "
            "agents x 1351 value(s) of 4 byte(s))") in msg


def test_a_config_over_the_machine_is_refused_before_its_buffers_exist() -> None:
    """Without memory_limit the machine's memory is the cap (2**20 instances of
    the 12.6 GiB configuration's: petabytes)."""
    from seer_env.envs import aircraft_v0

    (kind, err), peak = _peak_bytes(lambda: aircraft_v0.vector_env(1 << 20, **BIG_AIRCRAFT))
    assert (kind, err) == ("error", errors.ConfigError)
    assert peak < 64 << 20
    with pytest.raises(errors.ConfigError, match=r"allowed \(the machine's memory\); the "
                       r"biggest part is the observation buffer"):
        aircraft_v0.vector_env(1 << 20, **BIG_AIRCRAFT)


@pytest.mark.parametrize("env_name", ["phold_v0", "aircraft_v0", "hunt_v0", "pcs_v0"])
def test_a_memory_limit_under_the_first_block_of_events_is_refused_when_made(
        env_name: str) -> None:
    """Event records come in blocks (256 KiB at least): a memory_limit that
    passed the estimate but left no room for the first block let the env be
    made and failed its every reset ("0 events ... in use", the limit in
    GiB: "0.00 GiB").  The estimate counts that block: such a limit is a
    ConfigError naming the pending events when the env is made, and at the
    estimate's total the env resets and steps on every executor (a block a
    thread: a pool's first calls failed now and then at one block, a worker's
    stock of records out of the other's reach)."""
    import importlib

    from seer_env.registry import memory_estimate

    mod = importlib.import_module(f"seer_env.envs.{env_name}")
    parts = memory_estimate(env_name, {}, 1)
    assert parts["pending events"] >= 256 << 10
    with pytest.raises(errors.ConfigError, match=r"the biggest part is the pending events: "
                       r".*at least a block of event records") as info:
        mod.parallel_env(memory_limit=65536)
    assert "(65536 bytes) allowed (memory_limit)" in str(info.value)
    for ex, th in (("serial", 1), ("parallel", 2), ("optimistic", 2)):
        try:
            # a block a thread: a pool's workers each stock records of their own
            total = sum(memory_estimate(env_name, {}, 1, ex, threads=th).values())
            assert total >= sum(parts.values()) + (th - 1) * (256 << 10)
            env = mod.parallel_env(memory_limit=total, executor=ex, threads=th)
        except errors.ConfigError as exc:  # a model of lookahead 0: no parallel executor
            assert "lookahead 0" in str(exc) and ex == "parallel"
            continue
        env.reset(seed=0)
        for _ in range(3):
            env.step({a: env.action_space(a).sample() for a in env.agents})
        env.close()


@pytest.mark.parametrize("discrete", [False, True])
def test_memory_limit_counts_every_host_buffer(discrete: bool) -> None:
    """The host buffers' bytes come from the sizes the model reports; their
    sum with the runtime's own parts is the limit's measure to the byte:
    memory_limit=total passes, total - 1 fails."""
    from seer_env import registry
    from seer_env.envs import aircraft_v0
    from seer_env.registry import memory_estimate

    cfg = {"num_uavs": 40, "num_rays": 1024, "num_obs_targets": 64, "num_neighbors": 8,
           "discrete": discrete}
    n = 3
    sz = registry.native_model("aircraft_v0").describe(cfg)[1]
    parts = memory_estimate("aircraft_v0", cfg, n)
    agents = n * sz.num_agents
    assert parts["observation buffer"] == agents * sz.obs_dim * 4
    assert parts["action buffer"] == agents * sz.action_dim * 4
    assert parts["reward buffer"] == agents * 4
    assert parts["info buffer"] == agents * sz.info_dim * 8
    for flags in ("terminated", "truncated", "alive", "active"):
        assert parts[f"{flags} flags"] == agents
    assert parts["global-state outputs"] == n * sz.state_dim * 4
    assert parts["instance data"] == n * sz.instance_size
    total = sum(parts.values())
    host = sum(v for k, v in parts.items() if "buffer" in k or "flags" in k)
    assert host > total // 2  # observation-heavy: the host buffers are most of it

    venv = aircraft_v0.vector_env(n, memory_limit=total, **cfg)  # just fits
    rt = venv.runtime
    assert rt.memory == parts
    assert [a.nbytes for a in (rt.actions, rt.obs, rt.reward, rt.terminated, rt.truncated,
                               rt.alive, rt.info, rt.active)] == [
        parts[k] for k in ("action buffer", "observation buffer", "reward buffer",
                           "terminated flags", "truncated flags", "alive flags",
                           "info buffer", "active flags")]
    venv.close()
    for limit in (total - 1, total - host):  # one byte over; the runtime's parts alone
        with pytest.raises(errors.ConfigError) as info:
            aircraft_v0.vector_env(n, memory_limit=limit, **cfg)
        assert f"({total} bytes), more than the" in str(info.value)
        assert f"({limit} bytes) allowed (memory_limit)" in str(info.value)
        assert "the biggest part is the observation buffer" in str(info.value)
