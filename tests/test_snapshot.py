"""Snapshot and restore (native/runtime/snapshot.c, ``Runtime.snapshot``/``restore``,
the faces' ``snapshot()``/``restore()``): a restored instance continues bit for
bit as the original did, on any executor, thread count and batch size, in
another process too; bad snapshots are refused with a SnapshotError naming what
is wrong, and leave the env as it was."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import struct
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seer_env import registry
from seer_env._bind.runtime import Runtime
from seer_env.env import SNAPSHOT_VERSION, EnvSnapshot
from seer_env.envs import hunt_v0, pcs_v0, phold_v0
from seer_env.errors import ClosedError, SnapshotError, StateError
from seer_env.faces.gym_vector import random_batched_actions
from tests.models import load as load_test_model

ROOT = Path(__file__).resolve().parents[1]
TEAMS_PY = load_test_model("teams_py")

#: small configurations of every shipped model and the Python test model
MODELS: dict[str, tuple[Any, dict[str, Any]]] = {
    "pcs": (registry.native_model("pcs"), {"width": 4, "height": 4}),
    "aircraft": (registry.native_model("aircraft"), {"num_uavs": 4, "num_targets": 4,
                                                      "substeps": 2, "num_rays": 4}),
    "hunt": (registry.native_model("hunt"), {}),
    "phold": (registry.native_model("phold"), {"num_entities": 12}),
    "teams_py": (TEAMS_PY.native, {"life": 40}),
}
BUFFERS = ("obs", "reward", "terminated", "truncated", "alive", "active", "info", "mask")


def runtime(name: str, B: int, executor: str = "serial", threads: int = 1,
            **kw: Any) -> Runtime:
    native, cfg = MODELS[name]
    return Runtime(native, cfg, num_instances=B, executor=executor, threads=threads,
                   oversubscribe=True, **kw)


def executors(name: str) -> list[str]:
    native, cfg = MODELS[name]
    _, sz = native.describe(cfg)
    return ["serial", "parallel", "optimistic"] if sz.lookahead > 0 else ["serial",
                                                                          "optimistic"]


def legal_actions(rt: Runtime, rng: np.random.Generator) -> None:
    """Random actions every mask of ``rt`` allows, into its action buffer."""
    for g, acts in zip(rt.sizes.groups, rt.group_actions, strict=True):
        masks = rt.mask[:, g.first:g.first + g.count]
        B = rt.num_instances
        if g.action_kind == "box":
            acts[...] = rng.uniform(-2, 2, (B, g.count, g.action_dim)).astype(np.float32)
            continue
        sizes = [g.action_n] if g.action_kind == "discrete" else list(g.nvec)
        for i in range(B):
            for j in range(g.count):
                off, row = 0, []
                for n in sizes:
                    allowed = (np.flatnonzero(masks[i, j, off:off + n]) if g.mask_len
                               else np.arange(n))
                    row.append(int(rng.choice(allowed)) if allowed.size else 0)
                    off += n
                if g.action_kind == "discrete":
                    acts[i, j] = row[0]
                else:
                    acts[i, j] = row


def outputs(rt: Runtime, i: int) -> bytes:
    """Instance i's outputs and state, as raw bytes."""
    parts = [getattr(rt, b)[i].tobytes() for b in BUFFERS]
    parts += [rt.entity_states(i), struct.pack("<QQ", rt.step_index(i), rt.pending_events(i))]
    return b"".join(parts)


def live(rt: Runtime, i: int) -> bool:
    return bool(rt.alive[i].any())


def record(rt: Runtime, i: int, k: int, rng: np.random.Generator
           ) -> tuple[list[np.ndarray], list[bytes]]:
    """Step every live instance k times (random legal actions); instance i's
    action rows and outputs after each step, until its episode ends."""
    acts, outs = [], []
    for _ in range(k):
        if not live(rt, i):
            break
        legal_actions(rt, rng)
        acts.append(rt.actions[i].copy())
        rt.step(np.array([live(rt, j) for j in range(rt.num_instances)]))
        outs.append(outputs(rt, i))
    return acts, outs


def replay(rt: Runtime, i: int, acts: list[np.ndarray]) -> list[bytes]:
    """Step instance i alone with the recorded action rows."""
    mask = np.zeros(rt.num_instances, dtype=bool)
    mask[i] = True
    outs = []
    for a in acts:
        rt.actions[i] = a
        rt.step(mask)
        outs.append(outputs(rt, i))
    return outs


# -- the property -----------------------------------------------------------------


@st.composite
def setups(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(st.sampled_from(sorted(MODELS)))
    ex = executors(name)
    B = draw(st.integers(1, 3))
    return {
        "name": name,
        "executor": draw(st.sampled_from(ex)),
        "threads": draw(st.integers(1, 2)),
        "B": B,
        "inst": draw(st.integers(0, B - 1)),
        "warm": draw(st.integers(0, 4)),
        "k": draw(st.integers(1, 4)),
        "seed": draw(st.integers(0, 2**64 - 1)),
        "other": draw(st.sampled_from(ex)),
        "other_threads": draw(st.integers(1, 2)),
        "other_B": draw(st.integers(1, 3)),
        "other_inst": draw(st.integers(0, 2)),
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setups())
def test_restore_continues_bit_for_bit(s: dict[str, Any]) -> None:
    """Snapshot at a random step, run k steps, restore, run them again: the same
    bytes; restored again (the same snapshot, twice), and into a fresh runtime on
    another executor, thread count and batch size: the same bytes again."""
    name, B, i = s["name"], s["B"], s["inst"]
    threads = 1 if s["executor"] == "serial" else s["threads"]
    rt = runtime(name, B, s["executor"], threads)
    rng = np.random.default_rng(s["seed"] % 2**32)
    rt.reset([(s["seed"] + j) % 2**64 for j in range(B)])
    record(rt, i, s["warm"], rng)
    if not live(rt, i):
        rt.reset([s["seed"]] * B)
    snap = rt.snapshot(i)
    acts, want = record(rt, i, s["k"], rng)
    for _ in range(2):  # any number of times
        rt.restore(i, snap)
        assert rt.snapshot(i) == snap
        assert replay(rt, i, acts) == want
    # a fresh runtime: another executor, pool and batch size, another instance
    j = s["other_inst"] % s["other_B"]
    other = runtime(name, s["other_B"], s["other"],
                    1 if s["other"] == "serial" else s["other_threads"])
    other.reset([7] * s["other_B"])
    other.restore(j, snap)
    assert other.snapshot(j) == snap  # the bytes do not depend on the executor
    assert replay(other, j, acts) == want
    rt.close()
    other.close()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_snapshot_bytes_do_not_depend_on_the_executor(name: str) -> None:
    """The same instance stepped on each executor snapshots to the same bytes."""
    snaps = set()
    for ex in executors(name):
        rt = runtime(name, 2, ex, 1 if ex == "serial" else 2)
        rng = np.random.default_rng(5)
        rt.reset([11, 12])
        record(rt, 1, 3, rng)
        snaps.add(rt.snapshot(1))
        rt.close()
    assert len(snaps) == 1


def test_interpreted_python_model() -> None:
    """A Python model run interpreted (jit=False) restores with no code of its own,
    and its snapshot is the compiled model's, byte for byte."""
    interp = TEAMS_PY.interpreted().native
    rts = [Runtime(m, {"life": 40}, 1, "serial", 1) for m in (TEAMS_PY.native, interp)]
    snaps, outs = [], []
    for rt in rts:
        rng = np.random.default_rng(3)
        rt.reset([4])
        record(rt, 0, 2, rng)
        snap = rt.snapshot(0)
        acts, want = record(rt, 0, 3, rng)
        rt.restore(0, snap)
        assert replay(rt, 0, acts) == want
        snaps.append(snap)
        outs.append(want)
    assert snaps[0] == snaps[1]
    assert outs[0] == outs[1]


# -- another process ----------------------------------------------------------------

_CHILD = textwrap.dedent("""
    import pickle, sys
    import numpy as np
    from seer_env.envs import hunt_v0, pcs_v0
    job = pickle.loads(sys.stdin.buffer.read())
    env = pcs_v0.parallel_env(width=4, height=4, executor="serial")
    env.restore(job["pcs"])
    pcs = [env.step(a) for a in job["pcs_actions"]]
    venv = hunt_v0.vector_env(2, executor="parallel", threads=2)
    venv.restore(job["hunt"])
    hunt = [venv.step(a) for a in job["hunt_actions"]]
    sys.stdout.buffer.write(pickle.dumps({"pcs": pcs, "hunt": hunt}))
""")


def same(a: Any, b: Any) -> bool:
    """Equal, arrays bit for bit (raw bytes, dtypes and shapes)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and a.tobytes() == b.tobytes())
    return bool(a == b) and type(a) is type(b)


def test_restore_in_another_process() -> None:
    """Pickled snapshots restored in a fresh process (other executors) give the
    outputs this process got."""
    env = pcs_v0.parallel_env(width=4, height=4, executor="optimistic", threads=2)
    env.reset(seed=9)
    rng = np.random.default_rng(0)
    env.step({a: int(rng.integers(5)) for a in env.agents})
    pcs_snap = env.snapshot()
    pcs_actions = [{a: int(rng.integers(5)) for a in env.possible_agents} for _ in range(4)]
    pcs = [env.step(a) for a in pcs_actions]
    venv = hunt_v0.vector_env(2, executor="serial")
    venv.reset(seed=3)
    venv.step(random_batched_actions(venv, rng))
    hunt_snap = venv.snapshot()
    hunt_actions, hunt = [], []
    for _ in range(4):
        hunt_actions.append(random_batched_actions(venv, rng))
        hunt.append(venv.step(hunt_actions[-1]))
    job = pickle.dumps({"pcs": pcs_snap, "pcs_actions": pcs_actions, "hunt": hunt_snap,
                        "hunt_actions": hunt_actions})
    res = subprocess.run([sys.executable, "-c", _CHILD], input=job, capture_output=True,
                         cwd=ROOT, timeout=300, check=False)
    assert res.returncode == 0, res.stderr.decode()
    got = pickle.loads(res.stdout)
    assert same(got["pcs"], pcs)
    assert same(got["hunt"], hunt)


# -- the faces ------------------------------------------------------------------------


def test_parallel_env_restore_returns_the_live_agents() -> None:
    env = hunt_v0.parallel_env(num_prey=2)
    obs0, infos0 = env.reset(seed=1)
    snap = env.snapshot()
    obs, infos = env.restore(snap)
    assert same(obs, obs0) and same(infos, infos0)
    assert env.agents == list(obs0)
    # into a never-reset env
    fresh = hunt_v0.parallel_env(num_prey=2, executor="serial")
    obs, _ = fresh.restore(snap)
    assert same(obs, obs0) and fresh.agents == env.agents


def test_aec_env_restore() -> None:
    """The AEC env goes back mid-round: whose turn, the actions collected so far."""
    env = pcs_v0.env(width=3, height=3)
    env.reset(seed=2)
    for _ in range(13):  # a round and a half
        env.step(1)
    snap = env.snapshot()

    def play() -> list[Any]:
        out = []
        for n in range(20):
            out.append(env.agent_selection)
            env.step(n % 3)
            out.append(env.last())
        return out

    first = play()
    env.restore(snap)
    assert same(play(), first)
    other = pcs_v0.env(width=3, height=3, executor="optimistic", threads=2)
    other.restore(pickle.loads(pickle.dumps(snap)))
    env = other
    assert same(play(), first)


def test_vector_env_per_instance_and_all() -> None:
    venv = hunt_v0.vector_env(3, autoreset_mode="next_step")
    venv.reset(seed=0)
    rng = np.random.default_rng(1)
    for _ in range(3):
        venv.step(random_batched_actions(venv, rng))
    whole, one = venv.snapshot(), venv.snapshot(1)
    acts = []
    outs = []
    for _ in range(5):
        acts.append(random_batched_actions(venv, rng))
        outs.append(venv.step(acts[-1]))
    venv.restore(whole)
    assert same([venv.step(a) for a in acts], outs)
    # instance 1's snapshot into every instance of another env: each replays
    # instance 1's future under instance 1's actions
    other = hunt_v0.vector_env(3, executor="serial")
    other.reset(seed=50)
    for k in range(3):
        other.restore(one, env_id=k)
    for a, out in zip(acts, outs, strict=True):
        got = other.step({g: np.repeat(v[1:2], 3, axis=0) for g, v in a.items()})
        for k in range(3):
            for part in (0, 1, 2, 3):
                assert all(same(got[part][g][k], out[part][g][1]) for g in got[part])


def test_agent_vector_env_restore() -> None:
    envs = pcs_v0.agent_vector_env(2, width=3, height=3)
    envs.reset(seed=4)
    envs.action_space.seed(0)
    envs.step(envs.action_space.sample())
    snap = envs.snapshot()
    acts = [envs.action_space.sample() for _ in range(4)]
    outs = [envs.step(a) for a in acts]
    envs.restore(snap)
    assert same([envs.step(a) for a in acts], outs)


def test_agent_vector_env_of_a_group_keeps_the_others_generator() -> None:
    """The other groups' random actions come from the VectorEnv's generator: a
    restore puts it back too."""
    envs = hunt_v0.agent_vector_env(2, group="predator")
    _, infos = envs.reset(seed=4)
    snap = envs.snapshot()
    nvec = envs.single_action_space.nvec

    def play() -> list[Any]:
        out, masks = [], infos["action_mask"]
        for k in range(4):
            rng = np.random.default_rng(k)
            acts = np.zeros((envs.num_envs, len(nvec)), np.int64)
            for j in range(envs.num_envs):
                off = 0
                for d, n in enumerate(nvec):
                    acts[j, d] = rng.choice(np.flatnonzero(masks[j, off:off + n]))
                    off += n
            out.append(envs.step(acts))
            masks = out[-1][4]["action_mask"]
        return out

    first = play()
    _, infos = envs.restore(snap)
    assert same(play(), first)


# -- bad input ------------------------------------------------------------------------

M64 = 2**64 - 1


def _checksum(b: bytes) -> int:
    """The snapshot's checksum, an independent port of snapshot.c's."""
    K = 0x9E3779B97F4A7C15

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (64 - r))) & M64

    h = [0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89]
    n, i = len(b), 0
    while i + 32 <= n:
        for k in range(4):
            w = int.from_bytes(b[i + 8 * k:i + 8 * k + 8], "little")
            h[k] = rotl(h[k] ^ w, 31) * K & M64
        i += 32
    k = 0
    while i < n:
        w = int.from_bytes(b[i:i + 8].ljust(8, b"\0"), "little")
        h[k] = rotl(h[k] ^ w, 31) * K & M64
        i, k = i + 8, k + 1
    x = n * K & M64
    for k in range(4):
        x = rotl(x ^ h[k], 27) * K & M64
    x ^= x >> 33
    x = x * 0xFF51AFD7ED558CCD & M64
    return x ^ (x >> 33)


def resealed(b: bytes | bytearray) -> bytes:
    """Bytes with a valid checksum again (what a forger or a bug could make)."""
    body = bytes(b[:-8])
    return body + _checksum(body).to_bytes(8, "little")


HEADER = 160  # see snapshot.c


def layout(rt: Runtime) -> dict[str, int]:
    """Offsets of a snapshot's parts (the layout snapshot.c documents)."""
    sz = rt.sizes
    N, A = sz.num_entities, sz.num_agents
    off = HEADER + 24 + N * (48 + sz.entity_size + sz.snapshot_size) + sz.instance_size
    alive = off + A * sz.obs_dim * 4 + A * 4 + 2 * A
    events = alive + A + A * sz.info_dim * 8 + A + A * sz.mask_dim
    return {"step": HEADER + 8, "alive": alive, "nev": events, "ev0": events + 8}


@pytest.fixture()
def pcs_rt() -> Any:
    rt = runtime("pcs", 2, "serial")
    rt.reset([1, 2])
    rng = np.random.default_rng(0)
    record(rt, 0, 2, rng)
    yield rt
    rt.close()


def refused(rt: Runtime, data: Any, *words: str, instance: int = 1) -> None:
    """Restoring data into instance 1 raises SnapshotError naming ``words`` and
    changes nothing."""
    before = rt.snapshot(instance)
    with pytest.raises(SnapshotError) as exc:
        rt.restore(instance, data)
    for w in words:
        assert w in str(exc.value), str(exc.value)
    assert rt.snapshot(instance) == before


def test_checksum_port_matches(pcs_rt: Runtime) -> None:
    snap = pcs_rt.snapshot(0)
    assert resealed(snap) == snap


def test_bad_bytes_are_refused(pcs_rt: Runtime) -> None:
    rt = pcs_rt
    snap = rt.snapshot(0)
    refused(rt, b"", "not a seer_env snapshot")
    refused(rt, b"hello world" * 40, "not a seer_env snapshot")
    for n in (8, 100, HEADER, len(snap) // 2, len(snap) - 1):
        refused(rt, snap[:n], "truncated")
    refused(rt, snap + b"\0", "longer")
    for pos in (HEADER + 3, len(snap) // 2, len(snap) - 9, len(snap) - 1):
        bad = bytearray(snap)
        bad[pos] ^= 0x40
        refused(rt, bytes(bad), "corrupted")
    with pytest.raises(SnapshotError, match="bytes"):
        rt.restore(0, "not bytes")  # type: ignore[arg-type]


def test_other_versions_are_refused(pcs_rt: Runtime) -> None:
    snap = pcs_rt.snapshot(0)
    fmt = bytearray(snap)
    fmt[8:12] = (99).to_bytes(4, "little")
    refused(pcs_rt, bytes(fmt), "snapshot format 99")
    api = bytearray(snap)
    api[12:16] = (1).to_bytes(4, "little")
    refused(pcs_rt, resealed(api), "SEER_API_VERSION 1")
    bom = bytearray(snap)
    bom[16:20] = (0x04030201).to_bytes(4, "little")
    refused(pcs_rt, resealed(bom), "byte order")


def test_other_models_and_configurations_are_refused(pcs_rt: Runtime) -> None:
    snap = pcs_rt.snapshot(0)
    phold = runtime("phold", 1)
    phold.reset([0])
    refused(phold, snap, "model 'pcs'", instance=0)
    other = Runtime(registry.native_model("pcs"), {"width": 5, "height": 4}, 1, "serial", 1)
    other.reset([0])
    refused(other, snap, "another configuration", instance=0)
    horizon = runtime("pcs", 1, max_cycles=10)
    horizon.reset([0])
    refused(horizon, snap, "max_cycles=0", instance=0)


def test_malformed_contents_are_refused(pcs_rt: Runtime) -> None:
    """Well-sealed bytes whose contents a step could trip on (a forged or buggy
    snapshot) are refused by the contents' own checks."""
    rt = pcs_rt
    snap = rt.snapshot(0)
    at = layout(rt)
    nev = int.from_bytes(snap[at["nev"]:at["nev"] + 8], "little")
    assert nev == rt.pending_events(0) > 1

    def forged(pos: int, value: bytes) -> bytes:
        b = bytearray(snap)
        b[pos:pos + len(value)] = value
        return resealed(b)

    step = int.from_bytes(snap[at["step"]:at["step"] + 8], "little")
    refused(rt, forged(at["step"], (step + 1).to_bytes(8, "little")), "boundary time")
    refused(rt, forged(at["alive"], b"\x02"), "flag byte is 2")
    ev = at["ev0"]
    N = rt.sizes.num_entities
    refused(rt, forged(ev + 16, N.to_bytes(4, "little")), "event 0 of", "target")
    refused(rt, forged(ev + 24, (rt.sizes.payload_size + 8).to_bytes(4, "little")),
            "payload_size")
    refused(rt, forged(ev, struct.pack("<d", float("nan"))), "not finite")
    refused(rt, forged(ev + 8, ((N + 5) << 40).to_bytes(8, "little")), "source")
    refused(rt, forged(ev + 8, (M64 >> 24).to_bytes(8, "little")), "sequence number")
    refused(rt, forged(at["nev"], (nev + 1).to_bytes(8, "little")), "the bytes end")
    refused(rt, forged(at["nev"], (nev - 1).to_bytes(8, "little")), "past its last event")


def test_snapshot_needs_a_ready_instance() -> None:
    rt = runtime("pcs", 2)
    with pytest.raises(StateError, match="not been reset"):
        rt.snapshot(0)
    rt.reset([0, 1])
    snap = rt.snapshot(0)
    rt.restore(1, snap)  # a restored instance needs no reset of its own
    assert rt.snapshot(1) == snap
    rt.close()
    with pytest.raises(ClosedError):
        rt.snapshot(0)


def test_restore_revives_a_failed_instance() -> None:
    """An instance whose call failed needs a reset -- or a restore."""
    rt = runtime("pcs", 1, max_step_events=1)
    rt.reset([0])
    good = rt.snapshot(0)
    rt.actions[:] = 0
    with pytest.raises(Exception, match="budget|events"):
        rt.step()
    with pytest.raises(StateError):
        rt.snapshot(0)
    rt.restore(0, good)
    assert rt.snapshot(0) == good


def test_faces_refuse_bad_snapshots() -> None:
    env = pcs_v0.parallel_env(width=3, height=3)
    obs0, _ = env.reset(seed=1)
    snap = env.snapshot()
    with pytest.raises(SnapshotError, match="EnvSnapshot"):
        env.restore(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(SnapshotError, match="version 99"):
        env.restore(dataclasses.replace(snap, version=99))
    with pytest.raises(SnapshotError, match="'vector' env cannot restore"):
        env.restore(dataclasses.replace(snap, face="vector"))
    other = pcs_v0.parallel_env(width=4, height=3)
    with pytest.raises(SnapshotError, match="width=3 \\(here 4\\)"):
        other.restore(snap)
    with pytest.raises(SnapshotError, match="model 'pcs_v0'"):
        phold_v0.parallel_env().restore(snap)
    bad = dataclasses.replace(snap, instances=(snap.instances[0][:-1],))
    env.step({a: 0 for a in env.agents})
    after = env.snapshot()
    with pytest.raises(SnapshotError, match="truncated"):
        env.restore(bad)
    assert env.snapshot().instances == after.instances  # unchanged
    venv = pcs_v0.vector_env(2, width=3, height=3)
    with pytest.raises(StateError, match="reset"):
        venv.restore(dataclasses.replace(snap, face="vector", env_ids=(0,),
                                         state={"autoreset": (False,), "next_seeds": (1,),
                                                "seed_strides": (2,)}))
    venv.reset(seed=0)
    vsnap = venv.snapshot()
    three = pcs_v0.vector_env(3, width=3, height=3)
    with pytest.raises(SnapshotError, match="holds 2 instance"):
        three.restore(vsnap)
    env.close()
    with pytest.raises(ClosedError):
        env.restore(snap)
    with pytest.raises(ClosedError):
        env.snapshot()
    fresh = pcs_v0.parallel_env(width=3, height=3)
    with pytest.raises(StateError, match="reset"):
        fresh.snapshot()
    assert SNAPSHOT_VERSION == snap.version and isinstance(snap, EnvSnapshot)
    assert obs0  # the episode had started


_FORK = textwrap.dedent("""
    import os, pickle
    import numpy as np
    from seer_env.envs import phold_v0
    venv = phold_v0.vector_env(2, num_entities=16, threads=2, executor="parallel")
    venv.reset(seed=5)
    acts = np.zeros((2, 16), np.int64)
    venv.step(acts)
    snap = venv.snapshot()
    want = [venv.step(acts + k % 3) for k in range(4)]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child restores into the env it inherited (its pool re-created)
        os.close(r)
        venv.restore(snap)
        got = [venv.step(acts + k % 3) for k in range(4)]
        os.write(w, pickle.dumps(got))
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    got = pickle.loads(data)
    assert all(np.array_equal(a, b) for x, y in zip(want, got) for a, b in zip(x[:4], y[:4]))
    print("ok")
""")


def test_restore_in_a_fork_child() -> None:
    """A child of fork() restores a snapshot into the env it inherited (whose
    worker pool must be re-created first) and steps as the parent did."""
    res = subprocess.run([sys.executable, "-c", _FORK], capture_output=True, cwd=ROOT,
                         timeout=300, check=False, text=True)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-3000:]


def test_a_snapshot_of_every_instance_into_one_env_id_says_what_is_wrong() -> None:
    """The message said "holds 3 instance(s); this env has 3": true, and no help."""
    from seer_env.envs import pcs_v0

    v = pcs_v0.vector_env(3, width=2, height=2, threads=1)
    v.reset(seed=0)
    snap = v.snapshot()
    before = v.snapshot()
    with pytest.raises(SnapshotError, match=r"env_id=0 takes a snapshot of one instance; "
                                            r"this one holds 3"):
        v.restore(snap, env_id=0)
    assert v.snapshot().instances == before.instances
    v.restore(v.snapshot(env_id=1), env_id=0)  # what the message says to do
    v.close()


# -- forged event types (issue 33, item 9) ----------------------------------------------


def test_an_unknown_event_type_is_refused(pcs_rt: Runtime) -> None:
    """A re-sealed snapshot whose pending event has a type the model has no
    handler for is refused, naming the type and the instance (PCS failed on the
    next step; PHOLD, whose handler ignores the type, ran on)."""
    rt = pcs_rt
    snap = rt.snapshot(0)
    ev = layout(rt)["ev0"]
    count = MODELS["pcs"][0].table.event_type_count
    assert count == 6
    for typ in (count, 7, 2**32 - 1):
        b = bytearray(snap)
        b[ev + 20:ev + 24] = typ.to_bytes(4, "little")
        refused(rt, resealed(b), "restore of instance 1", f"type {typ}",
                "not one of the model's 6 event types")
    for typ in range(count):  # every known type is still fine
        b = bytearray(snap)
        b[ev + 20:ev + 24] = typ.to_bytes(4, "little")
        rt.restore(1, resealed(b), check_only=True)
    phold = runtime("phold", 2)
    phold.reset([3, 4])
    record(phold, 0, 2, np.random.default_rng(1))
    psnap = phold.snapshot(0)
    pev = layout(phold)["ev0"]
    b = bytearray(psnap)
    b[pev + 20:pev + 24] = (1).to_bytes(4, "little")
    refused(phold, resealed(b), "restore of instance 1", "type 1",
            "not one of the model's 1 event types")
    phold.close()


def test_a_face_refuses_an_unknown_event_type_and_steps_on_unchanged() -> None:
    env, twin = (phold_v0.parallel_env(num_entities=12, executor="serial") for _ in range(2))
    for e in (env, twin):
        e.reset(seed=3)
        e.step(dict.fromkeys(e.agents, 1))
    snap = env.snapshot()
    pev = layout(env.runtime)["ev0"]
    b = bytearray(snap.instances[0])
    b[pev + 20:pev + 24] = (5).to_bytes(4, "little")
    forged = dataclasses.replace(snap, instances=(resealed(b),))
    with pytest.raises(SnapshotError, match="type 5"):
        env.restore(forged)
    for k in range(3):
        acts = dict.fromkeys(env.agents, k % 2)
        assert same(env.step(acts), twin.step(acts))


# -- one instance into a batch of another size (issue 33, item 10) ------------------------


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
@pytest.mark.parametrize("other_B,env_id", [(2, 0), (5, 4), (1, 0)])
def test_one_instance_continues_alike_in_a_batch_of_another_size(
        mode: str, other_B: int, env_id: int) -> None:
    """An instance's snapshot restored into a batch of another num_envs gives the
    original instance's outputs, bit for bit, across its autoresets: it keeps its
    own seed sequence (it advanced by the new batch's num_envs and diverged at
    the second autoreset)."""
    cfg = {"width": 2, "height": 2, "max_cycles": 3, "autoreset_mode": mode}
    v1 = pcs_v0.vector_env(3, **cfg)
    v1.reset(seed=10)
    rng = np.random.default_rng(0)
    v1.step(random_batched_actions(v1, rng))
    snap = v1.snapshot(1)
    v2 = pcs_v0.vector_env(other_B, **cfg)
    v2.reset(seed=99)
    v2.restore(pickle.loads(pickle.dumps(snap)), env_id=env_id)
    ends = 0
    for _ in range(14):
        a1 = random_batched_actions(v1, rng)
        a2 = random_batched_actions(v2, rng)
        a2[env_id] = a1[1]
        o1, o2 = v1.step(a1), v2.step(a2)
        for part in range(4):
            assert same(o1[part][1], o2[part][env_id]), (part, ends)
        ends += bool(o1[3][1].all())
    assert ends >= 3  # three autoresets at least, each with the instance's next seed
    # and its snapshot goes back into the original batch, where it continues alike too
    back = v2.snapshot(env_id)
    v1.restore(back, env_id=1)
    v2.restore(back, env_id=env_id)
    for _ in range(7):
        a1 = random_batched_actions(v1, rng)
        a2 = random_batched_actions(v2, rng)
        a2[env_id] = a1[1]
        o1, o2 = v1.step(a1), v2.step(a2)
        for part in range(4):
            assert same(o1[part][1], o2[part][env_id])


# -- the face's part: digest and checks (issue 33, item 8) ----------------------------------


def twins(make: Any, seed: int = 1) -> tuple[Any, Any]:
    """Two envs made alike and reset alike: one to refuse snapshots, one that never
    sees them."""
    a, b = make(), make()
    a.reset(seed=seed)
    b.reset(seed=seed)
    return a, b


def refused_by(env: Any, snap: Any, *words: str, **kw: Any) -> None:
    with pytest.raises(SnapshotError) as exc:
        env.restore(snap, **kw)
    for w in words:
        assert w in str(exc.value), str(exc.value)


def forged(snap: EnvSnapshot, **state: Any) -> EnvSnapshot:
    """``snap`` with its face state changed and a digest made anew (a forger's)."""
    return dataclasses.replace(snap, state={**snap.state, **state})


def flipped(snap: EnvSnapshot, find: bytes, bits: int) -> EnvSnapshot:
    """``snap`` through pickle with ``bits`` flipped in the byte before the last
    of the one place ``find`` is."""
    blob = bytearray(pickle.dumps(snap))
    assert blob.count(find) == 1
    blob[blob.index(find) + len(find) - 2] ^= bits
    out = pickle.loads(bytes(blob))
    assert isinstance(out, EnvSnapshot)
    return out


def test_a_changed_live_list_is_refused_and_the_env_steps_on_unchanged() -> None:
    """A bit flipped in a pickled ParallelEnv snapshot's live list ('cell_1' ->
    'cell_3') was accepted, leaving env.agents out of step with the runtime."""
    env, twin = twins(lambda: pcs_v0.parallel_env(width=4, height=4, max_cycles=6,
                                                  executor="serial"))
    acts = [{a: (k + j) % 5 for j, a in enumerate(env.possible_agents)} for k in range(6)]
    for e in (env, twin):
        e.step(acts[0])
    snap = env.snapshot()
    bad = flipped(snap, b"\x8c\x06cell_1\x94", ord("1") ^ ord("3"))  # the name, memoised
    assert bad.state["live"].count("cell_3") == 2
    refused_by(env, bad, "damaged", "digest")
    live = snap.state["live"]
    refused_by(env, forged(snap, live=live[:1] + ("cell_3",) + live[2:]), "'cell_3'",
               "more than once")
    refused_by(env, forged(snap, live=live[:5] + live[6:]), "['cell_5'] alive there but not live")
    refused_by(env, forged(snap, live=live + ("nobody",)), "'nobody'", "not agents")
    refused_by(env, forged(snap, live=list(live)), "malformed")
    refused_by(env, forged(snap, live=live[1:2] + live[:1] + live[2:]), "order")
    refused_by(env, forged(snap, extra=1), "malformed")
    for seed_next in (-1, 2**64, 1.5, "7", True):
        refused_by(env, forged(snap, seed_next=seed_next), "malformed")
    refused_by(env, dataclasses.replace(snap, env_ids=(0, 1)), "env_ids")
    refused_by(env, dataclasses.replace(snap, config=(1, 2)), "configuration is malformed")
    snap.state["live"] = live[:-1]  # changed in place after snapshot() made it
    refused_by(env, snap, "damaged")
    snap.state["live"] = live
    env.restore(snap)  # as made: fine
    # at the end of the episode no agent is alive: a live one is refused
    for a in acts[1:]:
        assert same(env.step(a), twin.step(a))
    assert not env.agents
    end = env.snapshot()
    refused_by(env, forged(end, live=("cell_0",)), "['cell_0'] live but finished there")
    assert same(env.step({}), twin.step({}))
    assert env.snapshot().instances == twin.snapshot().instances


def test_refused_restores_leave_a_parallel_env_exactly_as_it_was() -> None:
    env, twin = twins(lambda: phold_v0.parallel_env(num_entities=12, executor="serial"))
    for e in (env, twin):
        e.step(dict.fromkeys(e.agents, 2))
    snap = env.snapshot()
    first = snap.state["live"][0]
    for bad in (forged(snap, live=snap.state["live"][1:]),
                forged(snap, live=snap.state["live"] * 2),
                flipped(snap, b"\x8c" + bytes([len(first)]) + first.encode() + b"\x94", 1)):
        with pytest.raises(SnapshotError):
            env.restore(bad)
    assert env.agents == twin.agents
    for k in range(6):
        acts = {a: (k + j) % 3 for j, a in enumerate(twin.agents)}
        assert same(env.step(acts), twin.step(acts))
    assert env.snapshot().instances == twin.snapshot().instances


def test_a_changed_vector_state_is_refused_and_the_env_steps_on_unchanged() -> None:
    big = 0x1122334455667788
    env, twin = twins(lambda: pcs_v0.vector_env(3, width=2, height=2, max_cycles=3,
                                                executor="serial"), seed=big)
    rng = np.random.default_rng(4)
    a = random_batched_actions(env, rng)
    assert same(env.step(a), twin.step(a))
    snap, one = env.snapshot(), env.snapshot(1)
    assert snap.state["next_seeds"][0] == big + 3
    refused_by(env, flipped(snap, (big + 3).to_bytes(8, "little"), 0x10), "damaged")
    refused_by(env, forged(snap, next_seeds=(-1, 0, 0)), "next seed of instance 0 is -1")
    refused_by(env, forged(snap, next_seeds=(1, 2**64, 0)), "next seed of instance 1")
    refused_by(env, forged(snap, next_seeds=(1, 2, "3")), "next seed of instance 2 is '3'")
    refused_by(env, forged(snap, next_seeds=(1, True, 3)), "next seed of instance 1 is True")
    refused_by(env, forged(snap, seed_strides=(3, 0, 3)), "seed stride of instance 1 is 0")
    refused_by(env, forged(snap, autoreset=(0, False, False)), "autoreset flag of instance 0")
    refused_by(env, forged(snap, autoreset=(False, True, False)),
               "instance 1 is marked for an autoreset but its runtime state has live agents")
    refused_by(env, forged(snap, autoreset=(False,)), "malformed")
    refused_by(env, dataclasses.replace(snap, env_ids=(0, 0, 2)), "env_ids")
    refused_by(env, forged(one, autoreset=(True,)), "autoreset", env_id=2)
    old = object.__new__(EnvSnapshot)  # what seer_env before the digest pickled
    old.__dict__.update({f.name: getattr(snap, f.name) for f in dataclasses.fields(snap)
                         if f.name != "digest"}, version=1)
    refused_by(env, pickle.loads(pickle.dumps(old)), "snapshot version 1",
               "older seer_env's snapshot", "take it again")
    for _ in range(8):  # across autoresets: nothing of the refused ones stayed
        a = random_batched_actions(env, rng)
        assert same(env.step(a), twin.step(a))
    assert env.snapshot().state == twin.snapshot().state


def test_a_changed_aec_state_is_refused() -> None:
    env, twin = twins(lambda: pcs_v0.env(width=2, height=2, executor="serial"))
    for e in (env, twin):
        for _ in range(5):
            e.step(1)
    snap = env.snapshot()

    def aec(**kw: Any) -> EnvSnapshot:
        return dataclasses.replace(snap, state={**snap.state, "aec": {**snap.state["aec"],
                                                                      **kw}})
    refused_by(env, flipped(snap, b"\x8c\x06cell_2\x94", 0x01), "damaged")
    refused_by(env, aec(agent_selection="nobody"), "AEC state is malformed: agent_selection")
    refused_by(env, aec(agents=["cell_0", "cell_0"]), "agents")
    refused_by(env, aec(agents=["cell_0"]), "a live agent is missing")
    refused_by(env, aec(rewards={"x": 0.0}), "rewards")
    refused_by(env, aec(terminations=dict.fromkeys(snap.state["aec"]["terminations"], 0)),
               "terminations")
    # values last() and observe() hand the user (a well-made forgery: a new digest)
    agents = list(snap.state["aec"]["rewards"])
    refused_by(env, aec(rewards=dict.fromkeys(agents, "1.0")), "rewards")
    refused_by(env, aec(rewards=dict.fromkeys(agents, True)), "rewards")
    refused_by(env, aec(_cumulative_rewards=dict.fromkeys(agents, "not a number")),
               "_cumulative_rewards")
    refused_by(env, aec(infos=dict.fromkeys(agents, 42)), "infos")
    refused_by(env, aec(_observations=dict.fromkeys(agents, "obs")), "_observations")
    env.restore(aec(rewards=dict.fromkeys(agents, np.float32(0.5))))  # NumPy's numbers are
    env.restore(snap)
    for k in range(9):
        env.step(k % 3)
        twin.step(k % 3)
        assert same(env.last(), twin.last()) and env.agent_selection == twin.agent_selection


def test_an_agent_vector_snapshot_of_a_group_checks_its_generator_and_forgets_last() -> None:
    """A group's VectorEnv snapshot: a generator state NumPy refuses
    (out of range: OverflowError) is a SnapshotError with nothing changed;
    the other groups' last outputs are no longer kept (the restored outputs
    are they), and an older snapshot's, even forged, change nothing (a forged
    one was handed on, and every later step raised AttributeError)."""
    envs = hunt_v0.agent_vector_env(2, group="predator", width=6, height=6,
                                    executor="serial")
    envs.reset(seed=4)
    nvec = envs.single_action_space.nvec
    acts = np.zeros((envs.num_envs, len(nvec)), np.int64)
    envs.step(acts)
    snap = envs.snapshot()
    assert set(snap.state) == {"venv", "group", "rng"}
    first = [envs.step(acts) for _ in range(4)]
    rng = copy.deepcopy(snap.state["rng"])
    rng["state"]["state"] = -5
    good = snap.state["rng"]
    # NumPy's setter refuses these with OverflowError, TypeError, ValueError
    # and IndexError (an array where the state goes: it escaped restore)
    for bad in (rng, None, "PCG64", {**good, "state": np.zeros(2)},
                {**good, "has_uint32": np.zeros(2)}, {**good, "bit_generator": "Nope"},
                {"bit_generator": "MT19937", "state": {"key": [], "pos": 0}}):
        with pytest.raises(SnapshotError, match="generator state is malformed|no generator state"):
            envs.restore(dataclasses.replace(snap, state={**snap.state, "rng": bad}))
    with pytest.raises(SnapshotError, match="malformed"):
        envs.restore(dataclasses.replace(snap, state={**snap.state, "extra": 1}))
    for last in ((1, 2), None):
        envs.restore(dataclasses.replace(snap, state={**snap.state, "last": last}))
        assert same([envs.step(acts) for _ in range(4)], first)
    envs.close()


def test_a_changed_agent_vector_snapshot_is_refused() -> None:
    envs = pcs_v0.agent_vector_env(2, width=2, height=2, executor="serial")
    envs.reset(seed=4)
    snap = envs.snapshot()
    copy_ = pickle.loads(pickle.dumps(snap))
    copy_.state["venv"]["next_seeds"] = (5, 5)
    with pytest.raises(SnapshotError, match="damaged"):
        envs.restore(copy_)
    envs.restore(pickle.loads(pickle.dumps(snap)))
