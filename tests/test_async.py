"""Asynchronous stepping of the batched env (EnvPool's ``send``/``recv``/
``async_reset``, ``batch_size``; Gymnasium's ``step_async``/``step_wait`` on
the agent vector env): every instance's outputs equal stepping it
synchronously, whatever the interleaving of sends and receives; bad input and
hostile use (close, drop, fork, Ctrl-C with steps in flight) end in clear
errors, never a crash or a hang.  What could hang or crash runs in a
subprocess with a timeout."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seer_env
from seer_env.envs import hunt_v0, pcs_v0, phold_v0
from seer_env.errors import (
    AsyncStateError,
    BudgetError,
    ClosedError,
    ConfigError,
    InvalidActionError,
    SeerError,
    StateError,
)
from seer_env.faces.gym_vector import random_actions, random_batched_actions

ROOT = Path(seer_env.__file__).resolve().parent.parent

PCS = dict(width=3, height=2, max_cycles=4, portables_per_cell=8)
HUNT = dict(max_cycles=5)
MODELS = {"pcs": (pcs_v0, PCS), "hunt": (hunt_v0, HUNT)}
EXECUTORS = {"serial": dict(executor="serial", threads=1),
             "parallel": dict(executor="parallel", threads=2),
             "auto": dict(threads="auto")}  # STPA switching executors between steps
# a PHOLD step of about half a second (a busy loop per event), for the tests
# that must catch a step in flight
SLOW = ("phold_v0.vector_env(2, num_entities=64, events_per_entity=4, work=500000, "
        "mean=1.0, lookahead=1.0, step_duration=2.0, threads=1, max_cycles=0{extra})")


def run_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


# -- per-instance views of outputs ---------------------------------------------------


def _flat(out: tuple[Any, ...]) -> dict[tuple[str, ...], np.ndarray]:
    """A step's or recv's outputs as {path: array with the instances first}."""
    flat: dict[tuple[str, ...], np.ndarray] = {}

    def walk(path: tuple[str, ...], x: Any) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                walk((*path, k), v)
        elif x is not None:
            flat[path] = np.asarray(x)

    for name, x in zip(("obs", "rew", "term", "trunc", "infos"), out, strict=True):
        walk((name,), x)
    flat.pop(("infos", "env_id"), None)
    return flat


def _row(flat: dict[tuple[str, ...], np.ndarray], j: int) -> dict[tuple[str, ...], np.ndarray]:
    """Instance row ``j``; SAME_STEP's final values only where it finished (a
    call's final keys are there when any of its instances finished)."""
    row = {k: v[j] for k, v in flat.items()}
    if not bool(row.get(("infos", "_final_obs"), False)):
        row = {k: v for k, v in row.items()
               if not (len(k) > 1 and k[1].lstrip("_").startswith("final"))}
    return row


def _same(a: dict[tuple[str, ...], np.ndarray], b: dict[tuple[str, ...], np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a)


def _actions(venv: Any, seed: int, i: int, k: int, row: dict[tuple[str, ...], np.ndarray]
             ) -> Any:
    """Instance ``i``'s ``k``-th action: random, within the masks of its last
    outputs ``row``, the same whoever asks (its own generator)."""
    rng = np.random.default_rng([seed, i, k])
    acts = {}
    for g in venv.groups:
        mask = row.get(("infos", "action_mask", g.name)) if venv.grouped else \
            row.get(("infos", "action_mask"))
        if mask is not None:
            mask = mask[None, g.first:g.first + g.count, :g.mask_len] if not venv.grouped \
                else mask[None]
        acts[g.name] = random_actions(g, mask, 1, rng)[0]
    return acts if venv.grouped else acts[venv.groups[0].name]


def _stack(venv: Any, per: list[Any]) -> Any:
    if venv.grouped:
        return {g.name: np.stack([a[g.name] for a in per]) for g in venv.groups}
    return np.stack(per)


def _make(model: str, executor: str, B: int, **kw: Any) -> Any:
    mod, cfg = MODELS[model]
    return mod.vector_env(B, **cfg, **EXECUTORS[executor], **kw)


# -- 1. per-instance equality with synchronous stepping -------------------------------


CASES = [("pcs", AutoresetMode.NEXT_STEP), ("pcs", AutoresetMode.SAME_STEP),
         ("hunt", AutoresetMode.NEXT_STEP)]


@pytest.mark.parametrize("executor", sorted(EXECUTORS))
@pytest.mark.parametrize(("model", "mode"), CASES, ids=lambda c: getattr(c, "name", c))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_instance_steps_as_it_would_synchronously(
        model: str, mode: AutoresetMode, executor: str, data: st.DataObject) -> None:
    B = data.draw(st.integers(1, 4), label="num_envs")
    batch = data.draw(st.integers(1, B), label="batch_size")
    seed = data.draw(st.integers(0, 2**32), label="seed")
    start_async = data.draw(st.booleans(), label="async_reset")
    ops = data.draw(st.lists(st.tuples(st.sampled_from(["send", "recv"]),
                                       st.lists(st.integers(0, B - 1), unique=True, min_size=1)),
                             max_size=14), label="ops")
    venv = _make(model, executor, B, batch_size=batch, autoreset_mode=mode)
    # what each instance has been sent (k) and its last outputs
    k = [0] * B
    last: list[dict[tuple[str, ...], np.ndarray]] = [{} for _ in range(B)]
    got: list[list[dict[tuple[str, ...], np.ndarray]]] = [[] for _ in range(B)]
    if start_async:
        venv.async_reset(seed=seed)
        pending = set(range(B))
    else:
        obs, infos = venv.reset(seed=seed)
        flat = _flat((obs, None, None, None, infos))
        last = [_row(flat, i) for i in range(B)]
        pending = set()
    received_reset = set() if start_async else set(range(B))
    reset_rows: dict[int, dict[tuple[str, ...], np.ndarray]] = {}

    def recv() -> None:
        out = venv.recv()
        ids = out[-1]["env_id"]
        assert ids.dtype == np.int32 and len(ids) == min(batch, len(pending))
        flat = _flat(out)
        for j, i in enumerate(ids.tolist()):
            row = _row(flat, j)
            if i not in received_reset:  # async_reset's outputs: a reset's, zero rewards
                received_reset.add(i)
                assert not any(row[key].any() for key in row if key[0] != "obs" and
                               key[0] != "infos"), row
                reset_rows[i] = {key: v for key, v in row.items() if key[0] in ("obs", "infos")}
            else:
                got[i].append(row)
            last[i] = row
            pending.discard(i)

    for op, subset in ops:
        if op == "recv":
            if pending:
                recv()
            continue
        ids = [i for i in subset if i not in pending]
        if not ids:
            continue
        per = [_actions(venv, seed, i, k[i], last[i]) for i in ids]
        venv.send(_stack(venv, per), np.array(ids))
        for i in ids:
            k[i] += 1
            pending.add(i)
    while pending:
        recv()
    with pytest.raises(AsyncStateError, match="nothing in flight"):
        venv.recv()
    venv.close()

    # the reference: the same instances stepped synchronously, every one each time
    ref = _make(model, executor, B, autoreset_mode=mode)
    obs, infos = ref.reset(seed=seed)
    flat = _flat((obs, None, None, None, infos))
    rlast = [_row(flat, i) for i in range(B)]
    for i, row in reset_rows.items():  # async_reset's rows are a reset's outputs
        assert _same(row, rlast[i]), i
    for step in range(max(len(g) for g in got)):
        acts = [_actions(ref, seed, i, step, rlast[i]) for i in range(B)]
        flat = _flat(ref.step(_stack(ref, acts)))
        rlast = [_row(flat, i) for i in range(B)]
        for i in range(B):
            if step < len(got[i]):
                assert _same(got[i][step], rlast[i]), (i, step)
    ref.close()


def test_async_reset_gives_the_reset_outputs_with_zero_rewards() -> None:
    a = pcs_v0.vector_env(3, batch_size=2, **PCS, threads=1)
    b = pcs_v0.vector_env(3, **PCS, threads=1)
    a.async_reset(seed=7)
    obs, infos = b.reset(seed=7)
    o1, r1, te1, tr1, i1 = a.recv()
    o2, r2, te2, tr2, i2 = a.recv()
    assert i1["env_id"].tolist() == [0, 1] and i2["env_id"].tolist() == [2]
    assert np.array_equal(np.concatenate([o1, o2]), obs)
    for r in (r1, r2):
        assert r.dtype == np.float32 and not r.any()
    assert not (te1.any() or tr1.any() or te2.any() or tr2.any())
    for key in infos:
        assert np.array_equal(np.concatenate([i1[key], i2[key]]), infos[key]), key
    a.close()
    b.close()


def test_sends_queued_behind_a_call_are_merged_into_one_native_call() -> None:
    venv = pcs_v0.vector_env(4, **PCS, threads=1, batch_size=1)
    ref = pcs_v0.vector_env(4, **PCS, threads=1)
    venv.reset(seed=3)
    ref.reset(seed=3)
    rt = venv.runtime
    before = rt.stats()["steps"]
    acts = np.ones((4, venv.num_agents), np.int64)
    with rt._lock:  # the stepper's first call waits here; the next sends queue up
        venv.send(acts[:1], [0])
        deadline = time.monotonic() + 10
        while venv._stepper.jobs and time.monotonic() < deadline:  # taken by the thread
            time.sleep(0.001)
        assert not venv._stepper.jobs
        venv.send(acts[1:3], [2, 1])
        venv.send(acts[3:], [3])
    got = [venv.recv() for _ in range(4)]
    assert [g[-1]["env_id"].tolist() for g in got] == [[0], [2], [1], [3]]  # as sent
    assert rt.stats()["steps"] - before == 2  # [0], then [2, 1] and [3] in one call
    out = ref.step(acts)
    for g in got:
        i = int(g[-1]["env_id"][0])
        assert np.array_equal(g[0][0], out[0][i]) and np.array_equal(g[1][0], out[1][i])
    venv.close()
    ref.close()


# -- 2. bad input ----------------------------------------------------------------------


def test_batch_size_is_checked() -> None:
    for bad in (0, 4, -1, 1.5, True, "2"):
        with pytest.raises(ConfigError, match="batch_size"):
            pcs_v0.vector_env(3, **PCS, batch_size=bad)
    assert pcs_v0.vector_env(3, **PCS).batch_size == 3


def test_bad_sends_are_refused_at_once_and_send_nothing() -> None:
    venv = pcs_v0.vector_env(3, **PCS, threads=1)
    A = venv.num_agents
    ok = np.zeros((1, A), np.int64)
    with pytest.raises(StateError, match="reset"):
        venv.send(ok, [0])
    with pytest.raises(AsyncStateError, match="nothing in flight"):
        venv.recv()
    venv.reset(seed=0)
    for ids, match in (([3], "not instances"), ([-1], "not instances"),
                       ([1, 1], "more than once"), ([], "non-empty"), ([0.5], "ints"),
                       ([[0]], "1-D")):
        with pytest.raises(InvalidActionError, match=match):
            venv.send(np.zeros((max(1, len(ids)), A), np.int64), ids)
    with pytest.raises(InvalidActionError, match="shape"):
        venv.send(np.zeros((2, A), np.int64), [0])
    with pytest.raises(InvalidActionError, match="integers"):
        venv.send(np.zeros((1, A), np.float32), [0])
    bad = ok.copy()
    bad[0, 2] = 99  # the runtime's own check, made at send()
    with pytest.raises(InvalidActionError, match=r"'cell_2'.*99 is outside \[0, 5\)"):
        venv.send(bad, [1])
    with pytest.raises(AsyncStateError, match="nothing in flight"):
        venv.recv()  # nothing was sent
    assert venv.runtime.step_index(1) == 0
    venv.send(ok, [1])
    with pytest.raises(AsyncStateError, match=r"\[1\].*in flight already"):
        venv.send(np.zeros((2, A), np.int64), [0, 1])
    for call in (lambda: venv.step(np.zeros((3, A), np.int64)), lambda: venv.alive,
                 lambda: venv.async_reset(seed=1)):
        with pytest.raises(AsyncStateError, match=r"instance\(s\) \[1\] are in flight"):
            call()
    with pytest.raises(AsyncStateError, match=r"reset\(\) of instance\(s\) \[1\]"):
        venv.reset(options={"reset_mask": np.array([False, True, False])})
    # a masked reset of other instances waits for the call in flight and runs
    venv.reset(options={"reset_mask": np.array([True, False, False])})
    out = venv.recv()
    assert out[-1]["env_id"].tolist() == [1] and venv.runtime.step_index(1) == 1
    venv.step(np.zeros((3, A), np.int64))  # nothing in flight: the synchronous API again
    assert venv.runtime.step_index(1) == 2
    venv.close()


def test_a_send_of_an_action_its_mask_forbids_is_refused() -> None:
    venv = hunt_v0.vector_env(2, **HUNT, threads=1)
    _, infos = venv.reset(seed=0)
    masks = infos["action_mask"]["prey"]  # (2, prey, 5)
    acts = {g.name: random_actions(g, infos["action_mask"].get(g.name)[[1]], 1,
                                   np.random.default_rng(0)) for g in venv.groups}
    forbidden = np.flatnonzero(~masks[1, 0].astype(bool))
    if forbidden.size == 0:
        pytest.skip("prey_0 of instance 1 may take every move at the start")
    acts["prey"][0, 0] = forbidden[0]
    with pytest.raises(InvalidActionError, match="forbidden by its action mask"):
        venv.send(acts, [1])
    with pytest.raises(InvalidActionError, match="groups"):
        venv.send(acts["prey"], [1])
    with pytest.raises(AsyncStateError, match="nothing in flight"):
        venv.recv()
    venv.close()


def test_disabled_autoreset_refuses_a_finished_instance() -> None:
    venv = pcs_v0.vector_env(2, **{**PCS, "max_cycles": 1}, threads=1, autoreset_mode="disabled")
    venv.reset(seed=0)
    A = venv.num_agents
    venv.send(np.zeros((2, A), np.int64))
    out = venv.recv()
    assert out[3].all()  # truncated at max_cycles=1
    with pytest.raises(StateError, match=r"instance\(s\) \[0\] finished"):
        venv.send(np.zeros((1, A), np.int64), [0])
    venv.reset(options={"reset_mask": np.array([True, False])})
    venv.send(np.zeros((1, A), np.int64), [0])
    assert venv.recv()[-1]["env_id"].tolist() == [0]
    venv.close()


def test_a_full_reset_waits_for_the_call_in_flight_and_drops_every_send() -> None:
    venv = pcs_v0.vector_env(3, **PCS, threads=1, batch_size=1)
    venv.reset(seed=0)
    A = venv.num_agents
    venv.send(np.zeros((3, A), np.int64))
    venv.recv()  # one of three received, two left
    obs, _ = venv.reset(seed=5)
    with pytest.raises(AsyncStateError, match="nothing in flight"):
        venv.recv()
    assert [venv.runtime.step_index(i) for i in range(3)] == [0, 0, 0]
    venv.send(np.zeros((3, A), np.int64))
    assert [venv.recv()[-1]["env_id"].tolist() for _ in range(3)] == [[0], [1], [2]]
    venv.close()


def test_a_failed_background_step_is_raised_by_recv_as_step_raises_it() -> None:
    """A step that fails in the background (the runtime's own report: a
    budget) is raised by recv() and leaves the env as the same failure in
    step() does: the failed instances need reset() or restore() and say so
    (only reset() was allowed, where after step()'s failure restore()
    worked)."""
    venv = phold_v0.vector_env(2, num_entities=8, threads=1, max_step_events=1)
    venv.reset(seed=0)
    snap = venv.snapshot()
    venv.send(np.zeros((2, 8), np.int64))
    with pytest.raises(BudgetError, match="max_step_events") as info:
        venv.recv()
    assert isinstance(info.value, SeerError)
    with pytest.raises(AsyncStateError, match="nothing in flight"):
        venv.recv()
    # sent again without a reset: the runtime says which instance needs one
    with pytest.raises(StateError, match="instance 0 needs a reset: its last call failed"):
        venv.send(np.zeros((1, 8), np.int64), [0])
    venv.restore(snap)  # as after step()'s failure
    assert venv.snapshot().instances == snap.instances
    venv.reset(seed=0)  # usable again (the budget still fails the next step)
    venv.send(np.zeros((1, 8), np.int64), [1])
    with pytest.raises(BudgetError):
        venv.recv()
    venv.close()


def test_close_with_steps_in_flight_waits_for_the_call_and_ends_the_thread() -> None:
    venv = pcs_v0.vector_env(4, **PCS, threads=1, batch_size=1)
    venv.reset(seed=0)
    venv.send(np.zeros((4, venv.num_agents), np.int64))
    thread = venv._stepper.thread
    venv.close()
    assert venv.runtime.closed and not thread.is_alive()
    for call in (venv.recv, lambda: venv.send(np.zeros((1, 16), np.int64), [0]),
                 venv.async_reset):
        with pytest.raises(ClosedError):
            call()
    venv.close()  # again: nothing


# -- 3. the Gymnasium face ------------------------------------------------------------


@pytest.mark.parametrize("model", ["pcs", "hunt"])
def test_step_async_and_step_wait_equal_step(model: str) -> None:
    kw = dict(group="predator") if model == "hunt" else {}
    mod, cfg = MODELS[model]
    e1 = mod.agent_vector_env(2, **cfg, threads=1, **kw)
    e2 = mod.agent_vector_env(2, **cfg, threads=1, **kw)
    _, inf1 = e1.reset(seed=4)
    e2.reset(seed=4)
    snap = e2.snapshot()
    rng = np.random.default_rng(0)
    # in Gymnasium's words (the batched env's are EnvPool's: recv/send)
    with pytest.raises(AsyncStateError, match=r"step_wait\(\) with no step started: "
                                              r"call step_async\(actions\) first"):
        e2.step_wait()
    g = e1._g
    for _ in range(12):
        if model == "pcs":
            a = rng.integers(0, g.action_n, e1.num_envs)
        else:  # within the masks
            m = inf1["action_mask"].reshape(2, g.count, -1).astype(bool)
            a = random_actions(g, m, 2, rng).reshape(e1.num_envs, -1)
        out1 = e1.step(a)
        inf1 = out1[-1]
        e2.step_async(a)
        # in Gymnasium's words too (they spoke of send() and recv())
        for name, arg in (("step_async", a), ("step", a), ("snapshot", None),
                          ("restore", snap)):
            with pytest.raises(AsyncStateError, match=r"\(\) while a step started with "
                                                      r"step_async\(\) runs: call step_wait"):
                getattr(e2, name)(*(() if arg is None else (arg,)))
        out2 = e2.step_wait()
        snap = e2.snapshot()
        for x, y in zip(out1[:4], out2[:4], strict=True):
            assert np.array_equal(x, y)
        assert out1[4].keys() == out2[4].keys()
        for key in out1[4]:
            assert np.array_equal(out1[4][key], out2[4][key]), key
    e1.close()
    e2.close()


def test_in_flight_refusals_name_the_call_or_the_property() -> None:
    """The batched env's refusals while instances are in flight say ``step()``
    for a call and "alive (the property)" for the property (it said
    "alive()", a call nobody made)."""
    venv = pcs_v0.vector_env(2, **PCS, threads=1)
    venv.reset(seed=1)
    venv.send(random_batched_actions(venv, np.random.default_rng(0)))
    with pytest.raises(AsyncStateError, match=r"^pcs_v0: alive \(the property\) while "
                                              r"instance\(s\) \[0, 1\] are in flight"):
        _ = venv.alive
    with pytest.raises(AsyncStateError, match=r"^pcs_v0: step\(\) while instance"):
        venv.step(random_batched_actions(venv, np.random.default_rng(0)))
    with pytest.raises(AsyncStateError, match=r"^pcs_v0: snapshot\(\) while instance"):
        venv.snapshot()
    venv.recv()
    venv.close()


def test_the_agent_vector_env_needs_every_instance_per_batch() -> None:
    with pytest.raises(ConfigError, match="batch_size"):
        pcs_v0.agent_vector_env(2, **PCS, batch_size=1)


# -- 4. hostile use: Ctrl-C, fork, drop (subprocesses) --------------------------------


def test_ctrl_c_during_recv_reaches_the_user_and_leaves_a_usable_env() -> None:
    code = f"""
    import os, signal, threading, time
    import numpy as np
    from seer_env.envs import phold_v0
    from seer_env.errors import Interrupted, StateError
    venv = {SLOW.replace("work=500000", "work=2000000").format(extra="")}  # ~2 s
    venv.reset(seed=0)
    venv.send(np.zeros((2, 64), np.int64))
    threading.Timer(0.15, os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.monotonic()
    try:
        venv.recv()
    except KeyboardInterrupt:
        waited = time.monotonic() - t0
        assert waited < 1.5, waited  # promptly, not at the end of the step
    else:
        raise AssertionError("no KeyboardInterrupt")
    try:  # the step finished in the background, or the runtime abandoned it
        out = venv.recv()
        assert out[-1]["env_id"].tolist() == [0, 1]
        outcome = "completed"
    except StateError as exc:
        assert isinstance(exc, Interrupted) or "reset" in str(exc), exc
        outcome = "abandoned"
        try:
            venv.send(np.zeros((1, 64), np.int64), [0])
            raise AssertionError("send after a failed recv")
        except StateError as exc2:  # the runtime's: the instance needs a reset
            assert "needs a reset" in str(exc2), exc2
        venv.reset(seed=0)
    venv.send(np.zeros((2, 64), np.int64))
    assert venv.recv()[-1]["env_id"].tolist() == [0, 1]
    venv.close()
    print(outcome)
    """
    r = run_python(code, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]


def test_fork_with_steps_in_flight_leaves_the_child_needing_reset() -> None:
    code = f"""
    import os
    import numpy as np
    from seer_env.envs import phold_v0
    from seer_env.errors import StateError
    venv = {SLOW.format(extra="")}
    ref = {SLOW.format(extra="")}
    venv.reset(seed=0)
    ref.reset(seed=0)
    venv.send(np.zeros((2, 64), np.int64))
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            try:
                venv.recv()
                code = 3
            except StateError as exc:
                if "forked" not in str(exc):
                    code = 4
            venv.reset(seed=0)
            venv.send(np.zeros((2, 64), np.int64))
            if venv.recv()[-1]["env_id"].tolist() != [0, 1]:
                code = 5
            venv.close()
        except BaseException as exc:
            print("child:", repr(exc))
            code = 6
        os._exit(code)
    out = venv.recv()  # the parent's step is whole
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, os.waitstatus_to_exitcode(status)
    want = ref.step(np.zeros((2, 64), np.int64))
    assert np.array_equal(out[0], want[0]) and np.array_equal(out[1], want[1])
    # nothing in flight at the fork: the child receives what was finished
    venv.send(np.zeros((2, 64), np.int64))
    venv._stepper.drain()
    pid = os.fork()
    if pid == 0:
        ok = venv.recv()[-1]["env_id"].tolist() == [0, 1]
        venv.send(np.zeros((2, 64), np.int64))
        ok = ok and venv.recv()[-1]["env_id"].tolist() == [0, 1]
        os._exit(0 if ok else 7)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, os.waitstatus_to_exitcode(status)
    venv.recv()
    venv.close()
    print("ok")
    """
    r = run_python(code, timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr[-3000:]


def test_dropping_the_env_with_steps_in_flight_ends_its_thread() -> None:
    code = f"""
    import gc, threading, time, weakref
    import numpy as np
    from seer_env.envs import phold_v0
    venv = {SLOW.format(extra="")}
    venv.reset(seed=0)
    venv.send(np.zeros((1, 64), np.int64), [0])
    venv.send(np.zeros((1, 64), np.int64), [1])  # queued behind the first, or merged
    thread = venv._stepper.thread
    rt = weakref.ref(venv.runtime)
    del venv
    gc.collect()
    thread.join(30)
    assert not thread.is_alive()
    gc.collect()
    assert rt() is None  # the runtime went with its stepper
    # and once more, exiting the interpreter with the step running
    venv = {SLOW.format(extra="")}
    venv.reset(seed=0)
    venv.send(np.zeros((2, 64), np.int64))
    print("ok")
    """
    r = run_python(code, timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr[-3000:]


def test_dropping_an_idle_env_ends_its_thread_at_once() -> None:
    """An env dropped without close() after its sends were received: its idle
    thread is woken and ends, with the runtime, at once (it looked every
    0.25 s, and a loop that made and dropped envs held a thread and a
    runtime for each meanwhile).  The idle look is set to a minute here: the
    thread must end long before it."""
    code = """
    import gc, weakref
    import numpy as np
    from seer_env.envs import pcs_v0
    from seer_env.faces import async_step
    async_step._IDLE_S = 60.0
    for _ in range(3):
        venv = pcs_v0.vector_env(2, width=3, height=2, threads=1)
        venv.reset(seed=0)
        venv.send(np.zeros((2, 6), np.int64))
        venv.recv()
        thread = venv._stepper.thread
        rt = weakref.ref(venv.runtime)
        del venv
        gc.collect()
        thread.join(20)
        assert not thread.is_alive(), "the idle thread waited for its look"
        gc.collect()
        assert rt() is None
    print("ok")
    """
    r = run_python(code, timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr[-3000:]


def test_close_from_another_thread_while_recv_waits() -> None:
    venv = phold_v0.vector_env(2, num_entities=64, events_per_entity=4, work=100000, mean=1.0,
                               lookahead=1.0, step_duration=2.0, threads=1, max_cycles=0)
    venv.reset(seed=0)
    venv.send(np.zeros((2, 64), np.int64))
    errors: list[BaseException] = []

    def close() -> None:
        # close once recv() holds the env (a fixed delay lost the race to a
        # main thread descheduled for longer: about 1 run in 240 on a loaded host)
        deadline = time.monotonic() + 10
        while not venv._busy.locked() and time.monotonic() < deadline:
            time.sleep(0.001)
        try:
            venv.close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=close)
    t.start()
    out = venv.recv()  # the call holds the env: close() waits for it
    t.join(30)
    assert not errors and out[-1]["env_id"].tolist() == [0, 1]
    assert venv.runtime.closed
    with pytest.raises(ClosedError):
        venv.recv()


def test_ctrl_c_after_the_wait_of_recv_leaves_the_env_needing_reset(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a KeyboardInterrupt once recv() has taken finished instances from the
    # stepper but before it returned them: they are lost to the caller, so the
    # env is marked (only reset() works), as for a cut-short step()
    venv = pcs_v0.vector_env(2, **PCS, threads=1)
    venv.reset(seed=0)
    A = venv.num_agents
    venv.send(np.zeros((2, A), np.int64))

    def interrupted(*args: Any) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(venv, "_gather", interrupted)
        with pytest.raises(KeyboardInterrupt):
            venv.recv()
    for call in (venv.recv, lambda: venv.send(np.zeros((2, A), np.int64))):
        with pytest.raises(StateError, match=r"recv\(\) was cut short.*call reset\(\)"):
            call()
    venv.reset(seed=0)
    venv.send(np.zeros((2, A), np.int64))
    assert venv.recv()[-1]["env_id"].tolist() == [0, 1]
    assert [venv.runtime.step_index(i) for i in range(2)] == [1, 1]
    venv.close()


def test_another_thread_calling_in_while_recv_waits_is_refused() -> None:
    venv = phold_v0.vector_env(2, num_entities=64, events_per_entity=4, work=500000, mean=1.0,
                               lookahead=1.0, step_duration=2.0, threads=1, max_cycles=0)
    venv.reset(seed=0)
    venv.send(np.zeros((1, 64), np.int64), [0])
    seen: list[BaseException] = []

    def other() -> None:
        deadline = time.monotonic() + 10
        while not venv._busy.locked() and time.monotonic() < deadline:  # recv() holds the env
            time.sleep(0.001)
        try:
            venv.send(np.zeros((1, 64), np.int64), [1])
        except BaseException as exc:
            seen.append(exc)

    t = threading.Thread(target=other)
    t.start()
    venv.recv()
    t.join(30)
    assert len(seen) == 1 and isinstance(seen[0], StateError), seen
    assert "another thread" in str(seen[0])
    venv.close()


@pytest.mark.parametrize("model", ["pcs", "hunt"])
def test_recv_returns_fresh_arrays_even_in_zero_copy_mode(model: str) -> None:
    mod, cfg = MODELS[model]
    venv = mod.vector_env(4, **cfg, threads=1, copy=False, batch_size=2)
    rt = venv.runtime
    bufs = [rt.obs, rt.reward, rt.terminated, rt.truncated, rt.alive, rt.active, rt.info,
            rt.mask, rt.actions]
    venv.async_reset(seed=0)
    for _ in range(2):  # ids [0, 1] (a block), then [2, 3]
        out = venv.recv()
        for arr in _flat(out).values():
            assert not any(np.shares_memory(arr, b) for b in bufs)
    venv.close()


def test_state_waits_for_the_steps_in_flight() -> None:
    venv = pcs_v0.vector_env(3, **PCS, threads=1)
    ref = pcs_v0.vector_env(3, **PCS, threads=1)
    venv.reset(seed=2)
    ref.reset(seed=2)
    acts = np.ones((3, venv.num_agents), np.int64)
    venv.send(acts)
    ref.step(acts)
    assert np.array_equal(venv.state(), ref.state())  # after the step, not before
    assert venv.recv()[-1]["env_id"].tolist() == [0, 1, 2]
    venv.close()
    ref.close()


def test_keyboard_interrupt_while_recv_waits_leaves_the_step_going() -> None:
    # _thread.interrupt_main raises KeyboardInterrupt in the main thread without
    # a signal (the runtime does not abandon its call): recv() gives up its
    # wait, nothing changes, and the next recv() returns the whole step
    import _thread

    cfg = dict(num_entities=64, events_per_entity=4, work=500000, mean=1.0, lookahead=1.0,
               step_duration=2.0, threads=1, max_cycles=0)
    venv = phold_v0.vector_env(2, **cfg)
    ref = phold_v0.vector_env(2, **cfg)
    venv.reset(seed=0)
    ref.reset(seed=0)
    venv.send(np.zeros((2, 64), np.int64))
    threading.Timer(0.05, _thread.interrupt_main).start()
    with pytest.raises(KeyboardInterrupt):
        venv.recv()
    out = venv.recv()
    want = ref.step(np.zeros((2, 64), np.int64))
    for x, y in zip(out[:4], want[:4], strict=True):
        assert np.array_equal(x, y)
    venv.close()
    ref.close()


def test_a_sigint_handler_closing_the_env_during_recv_closes_it_when_recv_ends() -> None:
    code = f"""
    import os, signal, threading
    import numpy as np
    from seer_env.envs import phold_v0
    from seer_env.errors import ClosedError
    venv = {SLOW.format(extra="")}
    venv.reset(seed=0)
    venv.send(np.zeros((2, 64), np.int64))
    signal.signal(signal.SIGINT, lambda *a: venv.close())
    threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        venv.recv()
        raise AssertionError("recv() returned on a closed env")
    except ClosedError as exc:
        assert "closed during recv()" in str(exc), exc
    assert venv.runtime.closed
    try:
        venv.send(np.zeros((2, 64), np.int64))
        raise AssertionError("send() on a closed env")
    except ClosedError:
        pass
    print("ok")
    """
    r = run_python(code, timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr[-3000:]


def test_restore_beside_a_step_in_flight_returns_its_rows_after_it() -> None:
    """restore() of one instance while another is in flight returns every
    instance's rows, the in-flight one's after its step (as a masked reset
    does), never before it or a mix: restore waits for the call in flight
    (it read the rows while the background step could still be writing
    them).  The in-flight step takes about half a second."""
    venv = eval(SLOW.format(extra=""), {"phold_v0": phold_v0})
    try:
        obs0, _ = venv.reset(seed=0)
        snap = venv.snapshot(1)
        venv.send(np.zeros((1, 64), np.int64), [0])
        obs, _ = venv.restore(snap, env_id=1)
        assert obs[1].tobytes() == obs0[1].tobytes()
        got, *_, infos = venv.recv()
        assert infos["env_id"].tolist() == [0]
        assert not np.array_equal(got[0], obs0[0])  # the step changed its row
        assert obs[0].tobytes() == got[0].tobytes()
    finally:
        venv.close()


def test_snapshot_and_restore_refuse_instances_in_flight() -> None:
    """An instance sent and not received has no state to take or to replace (its
    state is the background step's): snapshot() and restore() of it raise
    AsyncStateError and change nothing; the instances not in flight can still be
    snapshot and restored, and what recv() returns is untouched."""
    ref = pcs_v0.vector_env(4, width=8, height=8)
    venv = pcs_v0.vector_env(4, batch_size=2, width=8, height=8)
    try:
        a = np.zeros((4, 64), np.int64)
        ref.reset(seed=3)
        venv.reset(seed=3)
        before = venv.snapshot()
        venv.send(a[:2], [0, 1])
        with pytest.raises(AsyncStateError, match=r"snapshot\(\) while instance\(s\) \[0, 1\]"):
            venv.snapshot()
        with pytest.raises(AsyncStateError, match="snapshot"):
            venv.snapshot(1)
        with pytest.raises(AsyncStateError, match=r"restore\(\) while instance\(s\) \[0, 1\]"):
            venv.restore(before)
        with pytest.raises(AsyncStateError, match="restore"):
            venv.restore(venv.snapshot(2), env_id=0)
        idle = venv.snapshot(3)  # not in flight: allowed
        venv.restore(idle, env_id=2)
        obs, rew, term, trunc, infos = venv.recv()
        assert infos["env_id"].tolist() == [0, 1]
        robs, rrew, *_ = ref.step(a)
        assert obs.tobytes() == robs[:2].tobytes() and rew.tobytes() == rrew[:2].tobytes()
        venv.restore(before)  # nothing in flight any more
        assert venv.snapshot().instances == before.instances
    finally:
        venv.close()
        ref.close()


def test_a_stepper_thread_that_cannot_start_leaves_a_usable_env(monkeypatch) -> None:
    """send() when no thread can start (a thread limit): it raised a bare
    RuntimeError and left its job queued with no thread, so every later
    reset() raised "the stepper thread ended with work left" and close()
    "cannot join thread before it is started".  Now it is an
    OutOfMemoryError, nothing is queued, the env asks for a reset, and after
    it steps as a fresh env does."""
    from seer_env.errors import OutOfMemoryError
    from seer_env.faces import async_step

    ref = pcs_v0.vector_env(4, width=8, height=8)
    venv = pcs_v0.vector_env(4, batch_size=2, width=8, height=8)
    a = np.zeros((4, 64), np.int64)
    try:
        venv.reset(seed=3)

        def no_thread(self):
            raise RuntimeError("can't start new thread")
        monkeypatch.setattr(async_step.threading.Thread, "start", no_thread)
        with pytest.raises(OutOfMemoryError):
            venv.async_reset(seed=1)
        venv.reset(seed=3)
        with pytest.raises(OutOfMemoryError, match=r"could not start \(can't start new "
                                                   r"thread\).*nothing was sent"):
            venv.send(a[:2], [0, 1])
        monkeypatch.undo()
        with pytest.raises(StateError, match="call reset"):
            venv.send(a[:2], [0, 1])
        got = venv.reset(seed=3)
        want = ref.reset(seed=3)
        assert got[0].tobytes() == want[0].tobytes()
        venv.send(a[:2], [0, 1])
        obs, *_, infos = venv.recv()
        assert infos["env_id"].tolist() == [0, 1]
        assert obs.tobytes() == ref.step(a)[0][:2].tobytes()
    finally:
        venv.close()
        ref.close()
