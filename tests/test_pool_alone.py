"""A pool's alone stretches (native/runtime/company.c), seen from Python.

With the caller and its pool's second thread on one CPU, the worker can
only take the caller's core: every pool step loses it, and the pool runs
stretches of steps on the caller alone (``alone_steps``), never with
``SEER_POOL_ALONE=0``; its outputs are the
serial executor's at every step either way.  The policy itself (when a
stretch begins, how long it lasts, what ends it) is tested on described
calls in ``tests/native/test_pool_alone.c``; speed is a benchmark's
(``benchmarks/bench_alone.py``), never a test's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seer_env.registry import Runtime

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import hashlib, json, os, sys, threading
import numpy as np
from seer_env.registry import Runtime

ALL = os.sched_getaffinity(0)
CPU = min(ALL)

MODEL = sys.argv[1]
CFG = {"phold": dict(num_entities=300, events_per_entity=4, remote=0.7, mean=1.0,
                     lookahead=0.5, work=20, step_duration=4.0),
       "pcs": dict(width=24, height=24)}[MODEL]
STEPS = int(sys.argv[2])

def run(executor, threads):
    rt = Runtime(MODEL, CFG, 2, executor, threads, oversubscribe=True)
    rng = np.random.default_rng(7)
    out = []
    rt.reset([3, 4])
    for _ in range(STEPS):
        # the caller and its pool's threads on one CPU (the process keeps
        # its CPUs, so the thread budget lends the pool both threads; a pool
        # made anew has new threads: each step): a worker gets a core only
        # by taking the caller's
        for tid in [threading.get_native_id(), *rt.worker_tids()]:
            os.sched_setaffinity(tid, {CPU})
        rt.actions[:] = rng.integers(0, rt.sizes.action_n, size=rt.actions.shape)
        rt.step()
        h = hashlib.sha256()
        for a in (rt.obs, rt.reward, rt.terminated, rt.truncated, rt.info):
            h.update(a.tobytes())
        out.append(h.hexdigest())
    s = rt.stats()
    rt.close()
    os.sched_setaffinity(threading.get_native_id(), ALL)
    return out, s

ref, _ = run("serial", 1)
res = {}
for ex in ("parallel", "optimistic"):
    got, s = run(ex, 2)
    first = next((k for k, (a, b) in enumerate(zip(ref, got)) if a != b), None)
    res[ex] = {"first_difference": first, "alone_steps": s["alone_steps"], "steps": s["steps"]}
print(json.dumps(res))
"""


def _run_child(script: str, *args: str, alone: str | None = None) -> dict:
    """``script`` in a child process with ``args`` (``alone``: its
    SEER_POOL_ALONE, unset where None): the JSON its last line prints."""
    env = {k: v for k, v in os.environ.items() if k != "SEER_POOL_ALONE"}
    env["SEER_KEEP_OFF_CALLER"] = "0"  # the workers stay where the child put them
    if alone is not None:
        env["SEER_POOL_ALONE"] = alone
    p = subprocess.run([sys.executable, "-c", script, *args], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=300, check=False)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def _child(alone: str | None, model: str = "phold", steps: int = 90) -> dict:
    return _run_child(CHILD, model, str(steps), alone=alone)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
@pytest.mark.parametrize("model", ["phold", "pcs"])
def test_a_pool_sharing_the_callers_cpu_runs_alone_stretches_with_the_serial_outputs(model):
    # 240 steps: stretches of 8, 16 and 32 on the pool's queues, then (where
    # the pool kept losing) one of 64 on the serial executor's, in and out,
    # and the next; the outputs compared at every step whatever ran them
    res = _child(None, model, 240)
    for ex, r in res.items():
        assert r["first_difference"] is None, (ex, r)
        assert r["steps"] == 240
        # three lost steps begin a stretch of 8: on one CPU most steps run alone
        assert 8 <= r["alone_steps"] < 240, (ex, r)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_seer_pool_alone_0_keeps_every_step_on_the_pool():
    res = _child("0")
    for ex, r in res.items():
        assert r["first_difference"] is None, (ex, r)
        assert r["alone_steps"] == 0, (ex, r)


def test_alone_steps_is_a_counter_of_every_runtime():
    rt = Runtime("phold", dict(num_entities=24, events_per_entity=2, remote=0.5, mean=1.0,
                               lookahead=0.5, work=3, step_duration=2.0), 1, "serial", 1)
    try:
        rt.reset([1])
        rt.step()
        assert rt.stats()["alone_steps"] == 0
    finally:
        rt.close()


LIFECYCLE_CHILD = r"""
import hashlib, json, os, sys, threading
import numpy as np
from seer_env.registry import Runtime

ALL = os.sched_getaffinity(0)
CPU = min(ALL)
MODEL, B, STEPS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
CFG = {"phold_v0": dict(num_entities=200, events_per_entity=4, remote=0.7, mean=1.0,
                        lookahead=0.5, work=20, step_duration=4.0),
       "pcs_v0": dict(width=16, height=16)}.get(MODEL, {})
# what happens at which step: each while the pool may be in a stretch
OPS = {90: "snapshot", 100: "queries", 110: "restore", 140: "reset", 160: "threads",
       175: "executor", 200: "snapshot", 215: "queries", 230: "restore"}

def digest(rt, extra=b""):
    h = hashlib.sha256(extra)
    for a in (rt.obs, rt.reward, rt.terminated, rt.truncated, rt.info):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()

def run(executor, threads, other):
    rt = Runtime(MODEL, CFG, B, executor, threads, oversubscribe=True)
    rng = np.random.default_rng(11)
    seeds = iter(range(100, 100000))
    out, snap = [], None
    rt.reset([next(seeds) for _ in range(B)])
    for k in range(STEPS):
        extra = b""
        op = OPS.get(k)
        if op == "snapshot":
            snap = rt.snapshot(B - 1)
            extra = hashlib.sha256(snap).digest()
        elif op == "queries":
            extra = repr((rt.entity_events(0), rt.pending_events(0))).encode()
        elif op == "restore":
            rt.restore(B - 1, snap)
        elif op == "reset":
            rt.reset([next(seeds) for _ in range(B)])
        elif op == "threads":
            rt.set_threads(threads)  # a pool made anew mid-run (new threads)
        elif op == "executor":
            rt.set_executor(other, threads)
        # the caller and its pool's threads on one CPU: a worker gets a core
        # only by taking the caller's, so the pool's steps lose and it runs
        # stretches on the caller alone (the long ones on the serial queues)
        for tid in [threading.get_native_id(), *rt.worker_tids()]:
            os.sched_setaffinity(tid, {CPU})
        a = rt.actions
        if a.dtype.kind in "iu":
            a[:] = rng.integers(0, max(1, int(rt.sizes.action_n)), size=a.shape)
        else:
            a[:] = rng.random(a.shape)
        rt.step()
        out.append(digest(rt, extra))
        done = ~np.asarray(rt.alive).reshape(B, -1).any(axis=1)
        if done.any():  # an instance whose agents are all gone starts again
            rt.reset([next(seeds) for _ in range(B)], mask=done)
    total = rt.stats()["alone_steps"]
    rt.close()
    os.sched_setaffinity(threading.get_native_id(), ALL)
    return out, total

ref, _ = run("serial", 1, "serial")
res = {}
for ex, other in (("parallel", "optimistic"), ("optimistic", "parallel")):
    got, total = run(ex, 2, other)
    first = next((k for k, (a, b) in enumerate(zip(ref, got)) if a != b), None)
    res[ex] = {"first_difference": first, "alone_steps": total, "steps": len(got)}
print(json.dumps(res))
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
@pytest.mark.parametrize("model,instances", [("pcs_v0", 1), ("pcs_v0", 2), ("phold_v0", 2),
                                             ("hunt_v0", 1), ("aircraft_v0", 2)])
def test_stretches_through_snapshots_restores_resets_and_switches_keep_the_serial_outputs(
        model, instances):
    # every shipped model, one and several instances, its pool pinned to the
    # caller's CPU for 260 steps: snapshots, queries, a restore, a reset of
    # every instance, a pool made anew and an executor switch come while the
    # pool runs its stretches (long ones on the serial executor's queues,
    # moved there and back around each); instances whose agents are all gone
    # are reset on their own; every step's outputs (and what each snapshot
    # and query returned) are the serial executor's
    res = _run_child(LIFECYCLE_CHILD, model, str(instances), "260")
    for ex, r in res.items():
        assert r["first_difference"] is None, (model, instances, ex, r)
        assert r["steps"] == 260
        assert 8 <= r["alone_steps"] < 260, (model, instances, ex, r)
