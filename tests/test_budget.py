"""The thread budget (seer_env.budget): the cgroup quota read from fixture
files (v2, v1, nested, missing, unreadable, malformed), the explicit cap's
validation, and the process-wide lease of threads to calls."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from seer_env import budget
from seer_env.errors import ConfigError


def _fs(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


@pytest.fixture(autouse=True)
def _no_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(budget.ENV_VAR, raising=False)
    budget.set_thread_budget(None)
    yield
    budget.set_thread_budget(None)


def test_v2_quota_of_the_container(tmp_path: Path) -> None:
    root = _fs(tmp_path, {"proc/self/cgroup": "0::/\n",
                          "sys/fs/cgroup/cpu.max": "150000 100000\n"})
    q, src, notes = budget.cgroup_cpu_quota(root)
    assert q == 1.5 and src == "cgroup v2 /sys/fs/cgroup/cpu.max" and notes == []


def test_v2_no_quota(tmp_path: Path) -> None:
    root = _fs(tmp_path, {"proc/self/cgroup": "0::/user.slice/x.scope\n",
                          "sys/fs/cgroup/user.slice/x.scope/cpu.max": "max 100000\n",
                          "sys/fs/cgroup/user.slice/cpu.max": "max 100000\n"})
    assert budget.cgroup_cpu_quota(root) == (None, "", [])


def test_v2_the_smallest_along_the_path(tmp_path: Path) -> None:
    root = _fs(tmp_path, {"proc/self/cgroup": "0::/a/b\n",
                          "sys/fs/cgroup/a/b/cpu.max": "400000 100000\n",
                          "sys/fs/cgroup/a/cpu.max": "50000 50000\n",
                          "sys/fs/cgroup/cpu.max": "max\n"})
    q, src, _ = budget.cgroup_cpu_quota(root)
    assert q == 1.0 and src.endswith("/sys/fs/cgroup/a/cpu.max")


def test_v1_cfs_quota(tmp_path: Path) -> None:
    root = _fs(tmp_path, {
        "proc/self/cgroup": "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n",
        "proc/self/mountinfo":
            "30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
            "31 25 0:27 /docker/abc /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup "
            "rw,cpu,cpuacct\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "250000\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n"})
    q, src, notes = budget.cgroup_cpu_quota(root)
    assert q == 2.5 and "cpu.cfs_quota_us" in src and notes == []


def test_v1_no_quota(tmp_path: Path) -> None:
    root = _fs(tmp_path, {
        "proc/self/cgroup": "4:cpu,cpuacct:/\n",
        "proc/self/mountinfo": "31 25 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
        "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n",
        "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"})
    assert budget.cgroup_cpu_quota(root)[0] is None


@pytest.mark.parametrize("text", ["", "abc 100000", "100000 0", "-5 100000", "1 2 3",
                                  "max abc", "\xff",
                                  # a quota no float holds: OverflowError escaped
                                  "9" * 400 + " 100000"])
def test_a_malformed_file_is_skipped_and_noted(tmp_path: Path, text: str) -> None:
    root = _fs(tmp_path, {"proc/self/cgroup": "0::/\n"})
    (root / "sys/fs/cgroup").mkdir(parents=True)
    (root / "sys/fs/cgroup/cpu.max").write_bytes(text.encode("latin-1"))
    q, src, notes = budget.cgroup_cpu_quota(root)
    assert q is None and src == ""
    assert len(notes) == 1 and notes[0].startswith("/sys/fs/cgroup/cpu.max skipped")


def test_a_v1_quota_no_float_holds_is_skipped(tmp_path: Path) -> None:
    root = _fs(tmp_path, {
        "proc/self/cgroup": "4:cpu,cpuacct:/\n",
        "proc/self/mountinfo": "31 25 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
        "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "9" * 400 + "\n",
        "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"})
    q, src, notes = budget.cgroup_cpu_quota(root)
    assert q is None and src == "" and len(notes) == 1 and "too large" in notes[0]
    assert budget.thread_budget(root).quota is None  # the budget goes on without it


def test_missing_files_mean_no_quota(tmp_path: Path) -> None:
    assert budget.cgroup_cpu_quota(tmp_path) == (None, "", [])
    root = _fs(tmp_path, {"proc/self/cgroup": "0::/\n"})
    assert budget.cgroup_cpu_quota(root) == (None, "", [])


def test_an_unreadable_file_is_skipped(tmp_path: Path) -> None:
    root = _fs(tmp_path, {"proc/self/cgroup": "0::/\n"})
    (root / "sys/fs/cgroup/cpu.max").mkdir(parents=True)  # a folder: EISDIR
    q, _, notes = budget.cgroup_cpu_quota(root)
    assert q is None and len(notes) == 1 and "skipped" in notes[0]


def test_the_quota_rounds_up_and_binds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    root = _fs(tmp_path, {"proc/self/cgroup": "0::/\n",
                          "sys/fs/cgroup/cpu.max": "50000 100000\n"})
    monkeypatch.setattr(budget, "usable_cpus", lambda: 8)
    b = budget.thread_budget(root)
    assert (b.threads, b.cpus, b.quota, b.binding) == (1, 8, 0.5, "quota")
    assert "CPU quota" in b.describe() and "0.5 CPUs" in b.describe()
    (root / "sys/fs/cgroup/cpu.max").write_text("150000 100000\n")
    b = budget.thread_budget(root)
    assert (b.threads, b.binding) == (2, "quota")


# "+1", "0_1" and other scripts' digits ("١", fullwidth "１") were taken by int()
@pytest.mark.parametrize("value", ["0", "-3", "abc", "1.5", "99999", "+1", "0_1", "\u0661",
                                   "\uff11", "1" * 5000])
def test_a_bad_cap_is_a_config_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(budget.ENV_VAR, value)
    with pytest.raises(ConfigError, match=r"SEER_ENV_THREADS=.* must be a whole "
                                          r"number from 1 to \d+"):
        budget.thread_budget()


def test_a_cap_with_spaces_around_it_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(budget.ENV_VAR, " 1\n")
    assert budget.thread_budget().cap == 1


@pytest.mark.parametrize("value", [0, -3, "abc", 1.5, True, 99999, np.bool_(True), 1.0])
def test_a_bad_api_cap_is_a_config_error(value: object) -> None:
    with pytest.raises(ConfigError, match="must be a whole number from 1 to"):
        budget.set_thread_budget(value)  # type: ignore[arg-type]
    assert budget.thread_budget().cap is None


def test_the_api_cap_takes_numpys_ints_as_threads_does() -> None:
    """set_thread_budget(np.int64(1)) was refused with "must be a whole number"
    (an env's threads= takes NumPy's ints)."""
    for value in (np.int64(1), np.uint8(1)):
        budget.set_thread_budget(value)  # type: ignore[arg-type]
        b = budget.thread_budget()
        assert b.cap == 1 and type(b.cap) is int and b.threads == 1
    budget.set_thread_budget(None)


def test_the_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(budget.ENV_VAR, "1")
    b = budget.thread_budget()
    assert (b.threads, b.cap, b.binding) == (1, 1, "cap")
    assert b.describe() == "1 thread: capped by SEER_ENV_THREADS=1"
    budget.set_thread_budget(1, source="Ray (1 CPU for this env runner)")
    assert budget.thread_budget().describe() == \
        "1 thread: capped by Ray (1 CPU for this env runner)"


def test_the_lease_shares_the_budget() -> None:
    lease = budget._Lease()
    lease._budget = 4
    assert lease.take(3) == 3          # one call: its caller and two workers
    assert lease.take(4) == 1          # a second call at the same time: the rest
    assert lease.take(2) == 1          # the caller's own thread, always
    assert lease.busy == 5
    lease.give(3)
    lease.give(1)
    lease.give(1)
    assert lease.busy == 0
    assert lease.take(8) == 4


def test_the_lease_under_threads() -> None:
    lease = budget._Lease()
    lease._budget = 3
    peak = []
    stop = threading.Event()

    def call() -> None:
        while not stop.is_set():
            got = lease.take(3)
            peak.append(lease.busy)
            lease.give(got)

    ts = [threading.Thread(target=call) for _ in range(4)]
    for t in ts:
        t.start()
    stop.wait(0.3)
    stop.set()
    for t in ts:
        t.join()
    assert lease.busy == 0
    # each call's caller counts even when the budget is spent: at most 3 from
    # the budget plus the callers beyond the first
    assert max(peak) <= 3 + len(ts) - 1


def test_the_lease_starts_empty_after_fork() -> None:
    got = budget.lease.take(2)
    try:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.write(w, str(budget.lease.busy).encode())
            os._exit(0)
        os.waitpid(pid, 0)
        assert os.read(r, 16) == b"0"
    finally:
        budget.lease.give(got)


def _pcs(threads: int, executor: str = "parallel") -> object:
    from seer_env.envs import pcs_v0
    v = pcs_v0.vector_env(3, width=12, height=12, threads=threads, executor=executor)
    v.reset(seed=7)
    v.single_action_space.seed(0)
    return v


def _run(v: object, steps: int) -> list[tuple[object, object]]:
    import numpy as np
    out = []
    for _ in range(steps):
        a = np.stack([[v.single_action_space.sample() for _ in range(v.num_agents)]
                      for _ in range(v.num_envs)])
        o, r, *_ = v.step(a)
        out.append((o.copy(), r.copy()))
    return out


def test_a_call_borrows_its_threads_from_the_budget() -> None:
    """A runtime whose call finds the budget taken runs on its caller's
    thread alone (the other worker skips the call); once the budget is free
    again, on its whole pool; the outputs are the serial executor's."""
    import numpy as np
    if budget.thread_budget().threads < 2:
        pytest.skip("needs 2 usable cores")
    ref = _pcs(1, "serial")
    want = _run(ref, 6)
    ref.close()
    v = _pcs(2)
    rt = v.runtime
    assert rt.threads == 2
    rt.trace(4096, events=False)
    held = budget.lease.take(budget.lease.budget())  # another call holds the budget
    try:
        got = _run(v, 3)
        assert rt._call_cap == 1
        recs = rt.trace_records()
        assert len(recs[0]) > 0 and all(len(r) == 0 for r in recs[1:])
    finally:
        budget.lease.give(held)
    rt.trace(0)
    rt.trace(4096, events=False)
    got += _run(v, 3)
    assert rt._call_cap == 0
    assert budget.lease.busy == 0
    v.close()
    for (o1, r1), (o2, r2) in zip(want, got, strict=True):
        assert np.array_equal(o1, o2) and np.array_equal(r1, r2)


def test_runtimes_stepped_at_once_share_the_budget() -> None:
    """Two pools of 2 stepped from two threads at once on a budget of 2: the
    threads inside calls never exceed the budget plus the second caller, and
    each keeps the serial executor's outputs."""
    import numpy as np
    budget.set_thread_budget(min(2, budget.usable_cpus()))
    peak = [0]
    take = budget.lease.take

    def spy(want: int) -> int:
        got = take(want)
        peak[0] = max(peak[0], budget.lease.busy)
        return got

    ref = _pcs(1, "serial")
    want = _run(ref, 8)
    ref.close()
    envs = [_pcs(2), _pcs(2)]
    results: list[object] = [None, None]
    try:
        budget.lease.take = spy  # type: ignore[method-assign]
        ts = [threading.Thread(target=lambda k=k: results.__setitem__(k, _run(envs[k], 8)))
              for k in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        budget.lease.take = take  # type: ignore[method-assign]
        for v in envs:
            v.close()
    assert peak[0] <= budget.thread_budget().threads + 1
    assert budget.lease.busy == 0
    for res in results:
        for (o1, r1), (o2, r2) in zip(want, res, strict=True):
            assert np.array_equal(o1, o2) and np.array_equal(r1, r2)


def test_a_one_thread_call_counts_against_the_budget() -> None:
    """A serial env's step holds its caller's thread: a pool's call beside it
    gets the rest of the budget, not all of it (one-thread calls were not
    counted, so budget + 1 threads worked at once)."""
    from seer_env.envs import phold_v0
    if budget.usable_cpus() < 2:
        pytest.skip("needs 2 usable cores")
    budget.set_thread_budget(2)
    slow = phold_v0.parallel_env(num_entities=256, events_per_entity=4, work=20000,
                                 executor="serial", threads=1)
    slow.reset(seed=0)
    acts = {a: 0 for a in slow.agents}
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            slow.step(acts)
    grants: list[tuple[int, int]] = []
    take = budget.lease.take

    def spy(want: int) -> int:
        before = len(budget.lease.solo)
        got = take(want)
        # counted only where the serial step ran before and after the take
        # (one that ended in between is no test of it)
        grants.append((before and len(budget.lease.solo), got))
        return got
    v = _pcs(2)
    t = threading.Thread(target=busy)
    t.start()
    try:
        budget.lease.take = spy  # type: ignore[method-assign]
        for _ in range(2000):
            if sum(1 for solo, _ in grants if solo) >= 3:
                break
            _run(v, 1)
    finally:
        budget.lease.take = take  # type: ignore[method-assign]
        stop.set()
        t.join()
        v.close()
        slow.close()
    beside = [got for solo, got in grants if solo]
    assert len(beside) >= 3 and set(beside) == {1}, grants
    assert budget.lease.busy == 0 and budget.lease.solo == []


def test_a_bad_cap_stops_the_env_being_made(monkeypatch: pytest.MonkeyPatch) -> None:
    from seer_env.envs import pcs_v0
    monkeypatch.setenv(budget.ENV_VAR, "abc")
    with pytest.raises(ConfigError, match="SEER_ENV_THREADS='abc'"):
        pcs_v0.vector_env(1, width=4, height=4)


def test_auto_threads_take_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from seer_env.envs import pcs_v0
    monkeypatch.setenv(budget.ENV_VAR, "1")
    v = pcs_v0.vector_env(1, width=8, height=8, executor="optimistic")
    assert v.runtime.threads == 1
    v.close()
    monkeypatch.setenv("SEER_STPA_CACHE", "0")
    v = pcs_v0.vector_env(1, width=24, height=24)  # STPA: the candidates stop at 1 thread
    st = v.runtime.stpa
    assert st.cores == 1
    v.reset(seed=1)
    a = np.zeros((1, v.num_agents), dtype=np.int64)
    for _ in range(200):
        v.step(a)
        if st.settled:
            break
    assert st.threads == 1
    assert "Limit: the thread budget: 1 thread: capped by SEER_ENV_THREADS=1" in st.reason
    v.close()


def test_the_api_cap_overrides_a_bad_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """set_thread_budget wins over SEER_ENV_THREADS, so a bad variable is not
    the call's error (it was: the call read the whole budget, variable and all)."""
    monkeypatch.setenv(budget.ENV_VAR, "abc")
    budget.set_thread_budget(1)
    assert budget.thread_budget().describe() == "1 thread: capped by set_thread_budget(1)"


def test_a_ray_cap_follows_each_tasks_cpus_in_a_reused_worker(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray reuses a worker process for tasks of other CPU counts: the cap the
    first task's env set (1 CPU) stayed for a later task given 2 (its budget
    1 thread, its reason "1 CPU(s) assigned to this env runner"), and for
    code there that made no env at all.  A cap of ours now gives way to each
    call's CPUs, and is lifted where Ray assigned none."""
    from seer_env.adapters import rllib_config

    if budget.usable_cpus() < 2:
        pytest.skip("needs 2 usable cores")
    monkeypatch.setattr(rllib_config, "_ray_worker_kind", lambda: "Ray task (num_cpus)")
    for cpus, want in ((1.0, 1), (2.0, 2), (0.5, 1)):
        monkeypatch.setattr(rllib_config, "ray_assigned_cpus", lambda c=cpus: c)
        assert rllib_config.take_ray_cpus() == want
        b = budget.thread_budget()
        assert b.threads == want
        if want == 1:
            assert b.describe() == (f"1 thread: capped by Ray: {cpus:g} CPU(s) assigned to "
                                    "this Ray task (num_cpus)")
    monkeypatch.setattr(rllib_config, "ray_assigned_cpus", lambda: None)
    assert rllib_config.take_ray_cpus() is None
    assert budget.thread_budget().cap is None
    budget.set_thread_budget(1)  # the user's own cap is not Ray's to lift
    assert rllib_config.take_ray_cpus() is None and budget.thread_budget().cap == 1
