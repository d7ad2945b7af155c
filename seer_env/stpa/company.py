"""STPA's view of the company a run keeps: what else uses the cores.

A training loop shares the cores with the learner's thread pool (torch's
OpenMP workers), with other env processes and with whatever else the machine
runs.  STPA times the user's whole iteration (from one step call to the next,
`seer_env.stpa.probe`), so a pool that loses in company loses its probe; this
module says *why*, in words a decision's reason ends with, from two pieces of
evidence:

* `CpuSample`: the process's CPU time and the machine's busy time
  (``/proc/self/stat``-free: ``time.process_time_ns`` and ``/proc/stat``) at
  one moment; between two samples, `others_busy_cores` is the cores' worth of
  CPU that *other* processes used (the machine's busy time less ours).
* `process_cpu_ns`: each other process's CPU time, read where the machine
  is busy, so that the cores are shared out process by process
  (`fair_cores` with ``loads``: other env processes that also adapt get an
  equal share each, a burner keeps what it uses).
* the caller's own work between steps (the iteration less the step), per
  candidate: slower beside a pool's threads than beside one thread means the
  caller's computation and our pool fight for the same cores.

```python
a = cpu_sample()
...                                   # steps run
b = cpu_sample()
print(others_busy_cores(a, b))        # e.g. 0.97: another process held a core
print(company_words(others=0.97, cores=2, between={}, one=None))
```

Pure functions and a sampler; at the bottom of `seer_env.stpa` beside the cost
model (`seer_env.stpa.cost`): it imports nothing of the package.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
import sysconfig
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np

K = TypeVar("K")


class _Pool(Protocol):
    @property
    def threads(self) -> int: ...


C = TypeVar("C", bound=_Pool)

#: other processes busy on at least this many cores' worth of CPU during a
#: probe: "another process holds a core"
OTHERS_BUSY = 0.5

#: the caller's work between steps slower beside a pool by this fraction (and
#: ``BETWEEN_MIN_NS``) than beside one thread: "another thread pool in this
#: process spins on the same cores"
BETWEEN_SLOWER = 0.10
BETWEEN_MIN_NS = 20_000.0

#: a pool whose windows ran on the calling thread alone this often during its
#: timed steps (the runtime's ``alone_windows``): "its other threads found no
#: free core"
ALONE_MOST = 0.5

#: a pool whose other threads each waited for a core (runnable, not running:
#: the kernel's ``run_delay``) this share of its timed steps' time, on
#: average (`sched_delay_ns`): "its other threads waited ... for a core"; a
#: sign of company by itself (alone they wait a few microseconds a step to
#: be woken; the host's other tenants, who take the virtual CPU itself,
#: leave no such trace)
WAITED_MOST = 0.25

#: this process's other threads (not the caller, not the pool) busy this many
#: cores' worth over a probe, or more: a pool's waits for a core may be theirs
#: ("another thread pool in this process"); under it, they are not
THREADS_BUSY = 0.1

#: company seen only as a pool's waits for a core, while other processes kept
#: under this many cores' worth busy and this process's other threads under
#: ``THREADS_BUSY``: nothing on the machine holds a core for long (a burner at
#: half duty keeps 0.4-0.5 busy), so the waits are a moment of the host's (a
#: virtual machine's other tenants, a short burst of another process), which
#: passes (`passing_company`)
PASSING_OTHERS = 0.25

#: the machine's steal time (`steal_cores`) at least this many cores' worth
#: over a probe, and half the other processes' load or more: the company the
#: words name is the virtual machine's host (other guests on its physical
#: cores), not a process of this machine.  On a 2-core VM, steal read 0-2% of
#: the machine's time beside the serial executor and up to 20% (0.4 cores)
#: beside parallel-2: the host took the second virtual CPU back
STEAL_MOST = 0.1

#: the shortest interval `others_busy_cores` reads (``/proc/stat`` counts in
#: ticks of 10 ms)
MIN_SPAN_NS = 50_000_000

#: `process_cpu_ns` reads no more than this many /proc entries (about 20 ms)
MAX_PROCS = 2048

_STAT = "/proc/stat"


@dataclass(frozen=True)
class CpuSample:
    """One moment's clocks: wall time, this process's CPU time (all its
    threads) and the machine's busy CPU time (all cores, every process; None
    where ``/proc/stat`` cannot be read), each in ns."""

    wall_ns: int
    self_ns: int
    machine_busy_ns: int | None
    #: every other process's CPU time (user and system, all its threads) by
    #: pid, in ns (`process_cpu_ns`); None where it was not read
    procs: Mapping[int, int] | None = None
    #: this process's other threads' time on a core (neither the caller nor
    #: the runtime's pool) by tid, in ns (`other_threads_cpu_ns`); None where
    #: it was not read
    threads: Mapping[int, int] | None = None
    #: the machine's steal time so far (``/proc/stat``'s eighth field: time
    #: a virtual CPU was ready to run while the hypervisor ran something
    #: else), in ns, all cores; part of ``machine_busy_ns``.  None where not
    #: read (no ``/proc/stat``, or a kernel that does not count it)
    steal_ns: int | None = None


#: where this package and the libraries it calls live (`raised_by_caller`):
#: seer_env, NumPy, and Python's standard library less its site-packages
_OWN_DIRS = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
             os.path.dirname(os.path.abspath(np.__file__)) + os.sep)
_STDLIB_DIRS = tuple(sorted({os.path.abspath(sysconfig.get_paths()[k]) + os.sep
                             for k in ("stdlib", "platstdlib")}))


def raised_by_caller(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by the caller's code that ran inside ours --
    a signal handler, which Python runs between two bytecodes of any frame
    (a timeout's alarm raising ``TimeoutError``, an ``OSError``) -- rather
    than by this package or the libraries it calls: its innermost frame's
    file is outside seer_env, NumPy and the standard library.  Such an
    exception is the caller's to see, never taken for a file that could
    not be read or for the controller's own failure.

    ```python
    try:
        statistics.median([])
    except statistics.StatisticsError as exc:
        raised_by_caller(exc)   # False: raised in the standard library
    ```
    """
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    name = tb.tb_frame.f_code.co_filename
    if name.startswith("<frozen"):
        return False
    f = os.path.abspath(name)
    stdlib = f.startswith(_STDLIB_DIRS) and not any(
        part in ("site-packages", "dist-packages") for part in f.split(os.sep))
    return not (stdlib or f.startswith(_OWN_DIRS))


def _machine_times_ns() -> tuple[int | None, int | None]:
    """The machine's busy CPU time so far (``/proc/stat``'s first line: user,
    nice, system, irq, softirq, steal; idle and iowait left out) and its
    steal time alone, in ns (None each where not read)."""
    try:
        with open(_STAT, "rb") as f:
            fields = f.readline().split()
    except OSError as exc:
        if raised_by_caller(exc):  # a signal handler's: the caller's
            raise
        return None, None
    if len(fields) < 8 or fields[0] != b"cpu":
        return None, None
    try:
        user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[1:8])
        steal = int(fields[8]) if len(fields) > 8 else None
    except ValueError:
        return None, None
    tick = 1_000_000_000 // max(1, _hz())
    busy = (user + nice + system + irq + softirq + (steal or 0)) * tick
    return busy, None if steal is None else steal * tick


def cpu_sample() -> CpuSample:
    """The clocks now (a read of ``/proc/stat``: 10-30 us)."""
    busy, steal = _machine_times_ns()
    return CpuSample(time.perf_counter_ns(), time.process_time_ns(), busy, steal_ns=steal)


def _read_proc(path: str, size: int) -> bytes:
    """The first ``size`` bytes of a ``/proc`` file, one read (OSError as
    ``os.open`` and ``os.read`` raise it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def process_cpu_ns(proc: str = "/proc", self_pid: int | None = None) -> dict[int, int] | None:
    """Every other process's CPU time so far (``/proc/<pid>/stat``'s utime
    and stime: all its threads), by pid, in ns; None where ``proc`` cannot be
    listed.  A process that ends while it is read, or whose file does not
    parse, is left out.  About 10 us a process (a scan of 70 processes
    0.8 ms here): read at a probe's start and, while other processes keep
    cores busy, at the monitor's marks -- never on a machine to itself; None
    on a host with more than ``MAX_PROCS`` entries in ``proc`` (the share is
    then the machine's busy time's).

    ```python
    mine = os.getpid()
    assert mine not in process_cpu_ns()
    ```
    """
    me = os.getpid() if self_pid is None else self_pid
    try:
        names = os.listdir(proc)
    except OSError as exc:
        if raised_by_caller(exc):  # a signal handler's: the caller's
            raise
        return None
    if len(names) > MAX_PROCS:  # a crowded host: the scan would cost tens of ms
        return None
    tick = 1_000_000_000 // max(1, _hz())
    out: dict[int, int] = {}
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            raw = _read_proc(f"{proc}/{name}/stat", 1024)
            # "pid (comm) state ppid ...": comm may hold spaces and parens;
            # utime and stime are the 14th and 15th fields
            fields = raw[raw.rindex(b")") + 2:].split()
            out[int(name)] = (int(fields[11]) + int(fields[12])) * tick
        except (OSError, ValueError, IndexError) as exc:
            if raised_by_caller(exc):  # a signal handler's: the caller's
                raise
            continue
    return out


def sched_delay_ns(tids: Sequence[int], task: str = "/proc/self/task") -> int | None:
    """How long the threads ``tids`` of this process have waited for a core
    so far, together: the time each was runnable but not running (the second
    field of ``/proc/self/task/<tid>/schedstat``, the kernel's
    ``run_delay``), in ns.  None where there is no thread to read (an empty
    ``tids``, a worker not started: tid 0) or a file is missing, unreadable
    or malformed (a kernel without schedstat, a thread that ended): no
    evidence, never an error.  About 10 us a thread; read around the pools'
    timed probe steps only.

    ```python
    import threading
    sched_delay_ns([threading.get_native_id()])    # e.g. 1843211
    sched_delay_ns([])                             # None
    ```
    """
    if not tids:
        return None
    total = 0
    for tid in tids:
        if tid <= 0:
            return None
        try:
            fields = _read_proc(f"{task}/{tid}/schedstat", 256).split()
            if len(fields) < 2:
                return None
            delay = int(fields[1])
        except (OSError, ValueError) as exc:
            if raised_by_caller(exc):  # a signal handler's: the caller's
                raise
            return None
        if delay < 0:
            return None
        total += delay
    return total


class _Workers(Protocol):
    def worker_tids(self) -> list[int]: ...


class _PoolThreads(Protocol):
    def pool_tids(self) -> list[int]: ...


def pool_wait_ns(rt: _Workers) -> int | None:
    """How long the pool's threads of ``rt`` other than the calling one have
    waited for a core so far, together (`sched_delay_ns` of
    ``rt.worker_tids()``); None for a pool of one thread or where it cannot
    be read."""
    return sched_delay_ns(rt.worker_tids())


def other_threads_cpu_ns(rt: _PoolThreads, task: str = "/proc/self/task",
                         caller: int | None = None, limit: int = MAX_PROCS
                         ) -> dict[int, int] | None:
    """This process's threads other than the caller (``caller``: its tid,
    the calling thread's where None) and ``rt``'s pool (`pool_tids`: the
    parked threads too, which ran the pools of other sizes the probe timed), each
    one's time on a core so far (the first field of
    ``/proc/self/task/<tid>/schedstat``), in ns by tid: a learner's thread
    pool, another runtime's.  A thread whose file is missing, unreadable or
    malformed (it ended) is left out; None where the task folder cannot be
    listed or holds more than ``limit`` threads.  About 10 us a thread; read
    where a probe's timed steps begin and at its decision.

    ```python
    other_threads_cpu_ns(rt)   # e.g. {4711: 90210033, 4712: 88000102}: torch's
    ```
    """
    me = threading.get_native_id() if caller is None else caller
    try:
        skip = {me, *rt.pool_tids()}
        names = os.listdir(task)
    except (OSError, AttributeError) as exc:
        if raised_by_caller(exc):  # a signal handler's: the caller's
            raise
        return None
    if len(names) > limit:
        return None
    out: dict[int, int] = {}
    for name in names:
        if not name.isdigit() or int(name) in skip:
            continue
        try:
            ns = int(_read_proc(f"{task}/{name}/schedstat", 256).split()[0])
        except (OSError, ValueError, IndexError) as exc:
            if raised_by_caller(exc):  # a signal handler's: the caller's
                raise
            continue
        if ns >= 0:
            out[int(name)] = ns
    return out


def with_threads(sample: CpuSample,
                 read: Callable[[_PoolThreads], Mapping[int, int] | None] | None,
                 rt: _PoolThreads) -> CpuSample:
    """``sample`` with this process's other threads' time read now
    (`CpuSample.threads`, by ``read``: `other_threads_cpu_ns`); as it is
    where there is no ``read``."""
    return sample if read is None else dataclasses.replace(sample, threads=read(rt))


def other_threads_busy_cores(a: CpuSample, b: CpuSample) -> float | None:
    """Cores' worth of CPU this process's other threads (`CpuSample.threads`,
    those seen at both) used between ``a`` and ``b``; None where either
    sample lacks them or no time passed."""
    wall = b.wall_ns - a.wall_ns
    if a.threads is None or b.threads is None or wall <= 0:
        return None
    used = sum(max(0, ns - a.threads[t]) for t, ns in b.threads.items() if t in a.threads)
    return used / wall


def with_processes(sample: CpuSample,
                   read: Callable[[], Mapping[int, int] | None] | None) -> CpuSample:
    """``sample`` with every other process's CPU time read now
    (`CpuSample.procs`, by ``read``: `process_cpu_ns`); as it is where there
    is no ``read``."""
    return sample if read is None else dataclasses.replace(sample, procs=read())


def _hz() -> int:
    return os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def others_loads(a: CpuSample, b: CpuSample) -> list[float] | None:
    """Each other process's cores' worth of CPU between ``a`` and ``b`` (those
    seen at both, busiest first; idle ones left out), or None where either
    sample lacks the processes (`CpuSample.procs`) or the interval is too
    short to say (`others_busy_cores`)."""
    wall = b.wall_ns - a.wall_ns
    if a.procs is None or b.procs is None or wall < MIN_SPAN_NS:
        return None
    before = a.procs
    loads = [(ns - before[pid]) / wall for pid, ns in b.procs.items()
             if pid in before and ns > before[pid]]
    return sorted(loads, reverse=True)


def others_busy_cores(a: CpuSample, b: CpuSample) -> float | None:
    """Cores' worth of CPU other processes used between ``a`` and ``b`` (the
    machine's busy time less this process's, over the wall time); None when
    the machine's time is unknown or the interval too short to say (under
    50 ms: ``/proc/stat`` counts in ticks of 10 ms)."""
    wall = b.wall_ns - a.wall_ns
    if a.machine_busy_ns is None or b.machine_busy_ns is None or wall < MIN_SPAN_NS:
        return None
    others = (b.machine_busy_ns - a.machine_busy_ns) - (b.self_ns - a.self_ns)
    return max(0.0, others / wall)


def steal_cores(a: CpuSample, b: CpuSample) -> float | None:
    """Cores' worth of the machine's steal time between ``a`` and ``b``: a
    virtual machine's host running other guests on its virtual CPUs (part of
    `others_busy_cores`); None when unknown or the interval is too short to
    say (under `MIN_SPAN_NS`).

    ```python
    steal_cores(CpuSample(0, 0, 0, steal_ns=0),
                CpuSample(10**8, 0, 0, steal_ns=4 * 10**7))   # 0.4
    ```
    """
    wall = b.wall_ns - a.wall_ns
    if a.steal_ns is None or b.steal_ns is None or wall < MIN_SPAN_NS:
        return None
    return max(0.0, (b.steal_ns - a.steal_ns) / wall)


#: rounding a share half up, with room for the float error of the water-filling
#: (its running sums put 2 cores less five loads of 0.1 at 1.4999999999999998:
#: one core, where the whole machine's rule gave 2)
_HALF = 0.5 + 1e-9


def fair_cores(others: float | None, cores: int, loads: Sequence[float] | None = None) -> int:
    """The cores a run takes beside other processes that kept ``others``
    cores' worth of CPU busy, rounded, one at least (all of them where
    ``others`` is unknown).

    Without ``loads``: the ``cores`` it may use less the others', as OpenMP's
    dynamic teams (``OMP_DYNAMIC``: the online CPUs less the load average)
    and ``make -l``: a pool that takes the cores other processes run on
    wins its own iterations, a little, and loses theirs more (two env
    processes on 2 cores, each with a pool of 2: 0.77-0.83x two serial
    ones, in aggregate).

    With ``loads``, each other process's cores (`others_loads`): a max-min
    fair share, as the kernel's scheduler gives each runnable thread.  A
    process that used less than the share keeps what it used (a burner, a
    serial env); those that used more -- other env processes whose pools
    took all they could while they probed, as this one -- get the same share
    as this run; CPU no process accounts for (``others`` less the loads:
    processes that ended, other containers) is left to its owners.  Without
    it, N env processes on 16 cores that probed at once each saw the
    others' probes as load and fell back to one thread (8 processes: 0.73x
    serial in aggregate, where pools of 2 ran 1.66x).  The two rules agree
    on 2 cores.

    ```python
    fair_cores(None, 2), fair_cores(0.3, 2), fair_cores(1.0, 2), fair_cores(3.0, 8)
    # (2, 2, 1, 5)
    fair_cores(14.0, 16, [2.0] * 7), fair_cores(14.5, 16, [4.5, 5.0, 5.0])
    # (2, 4)
    fair_cores(3.0, 16, [1.0, 1.0, 1.0]), fair_cores(16.0, 16, [8.0, 8.0])
    # (13, 5)
    ```
    """
    if others is None:
        return cores
    if loads is None:
        return max(1, min(cores, math.floor(cores - others + _HALF)))
    left = cores - max(0.0, others - sum(loads))  # unaccounted CPU: its owners'
    n = len(loads) + 1  # this run and every other process not yet served
    for x in sorted(loads):  # water-filling: the lightest keep what they used
        if x * n > left:
            break
        left -= x
        n -= 1
    return max(1, min(cores, math.floor(left / n + _HALF)))


def between_medians(between: Mapping[K, Sequence[float]]) -> dict[K, float]:
    """Median of each candidate's samples of the caller's work between steps."""
    return {c: statistics.median(v) for c, v in between.items() if v}


def iterations(steps_alone: Mapping[C, Sequence[float]], between: Mapping[C, Sequence[float]],
               timings: Mapping[C, Sequence[float]]) -> dict[C, list[float]]:
    """The iterations to choose from: each candidate's steps alone plus the
    caller's work between steps.  That work is the one-thread candidates'
    median (none of our threads runs while the caller works beside them, so
    which of them ran cannot change it: their own samples differ by noise
    alone -- a torch policy's forward wandering by 10-30% made parallel-1
    look 1.35x faster than the serial executor, which runs the same event
    loop); or everyone's median where no one-thread candidate was timed; or a
    pool's own where it differs from that by more than ``BETWEEN_SLOWER``
    (and ``BETWEEN_MIN_NS``): beside that pool's threads the caller's work
    really ran slower (or faster).  What the caller does between two steps
    varies for reasons of its own (a policy's update, another env of a
    round-robin loop probing at the same time), which, added sample by
    sample, only made the candidates' medians noisier.  Candidates without
    the split (``timings`` only) keep their timed iterations."""
    ones = [b for c, v in between.items() if c.threads <= 1 for b in v]
    pooled = ones or [b for v in between.values() for b in v]
    if not pooled:
        return {c: list(v) for c, v in timings.items()}
    mid = statistics.median(pooled)
    out: dict[C, list[float]] = {}
    for c, v in timings.items():
        alone, seen = steps_alone.get(c), between.get(c)
        if not alone:
            out[c] = list(v)
            continue
        b = mid
        if seen and c.threads > 1:
            own = statistics.median(seen)
            if abs(own - mid) > max(BETWEEN_MIN_NS, BETWEEN_SLOWER * mid):
                b = own
        out[c] = [a + b for a in alone]
    return out


def openmp_spins_by_default(maps: str | None = None,
                            environ: Mapping[str, str] | None = None) -> bool:
    """Whether GNU OpenMP (libgomp: torch's CPU thread pool on Linux) is
    loaded in this process at its default wait: neither ``GOMP_SPINCOUNT``
    nor ``OMP_WAIT_POLICY`` set, so its workers spin 300,000 rounds after
    each operation before they sleep (some 5 ms of CPU after a forward pass
    on an Intel Xeon: longer than many steps).  ``maps``: the text of
    ``/proc/self/maps`` (read where None; False where it cannot be read);
    ``environ``: the variables (``os.environ`` where None).

    ```python
    maps = "7f3c2a000000-7f3c2a040000 r-xp ... /torch/lib/libgomp-a34b3233.so.1"
    openmp_spins_by_default(maps, {})                            # True
    openmp_spins_by_default(maps, {"GOMP_SPINCOUNT": "30000"})   # False: set
    openmp_spins_by_default()                                    # this process, now
    ```
    """
    env = os.environ if environ is None else environ
    if "GOMP_SPINCOUNT" in env or "OMP_WAIT_POLICY" in env:
        return False
    if maps is None:
        try:
            with open("/proc/self/maps") as f:
                maps = f.read()
        except OSError as exc:
            if raised_by_caller(exc):  # a signal handler's: the caller's
                raise
            return False
    return "/libgomp" in maps


def company_words(others: float | None, cores: int, between: Mapping[str, float],
                  one: str | None, alone: Mapping[str, float] | None = None,
                  waited: Mapping[str, tuple[float, float]] | None = None,
                  openmp_spins: bool = False, in_process: float | None = None,
                  steal: float | None = None) -> str:
    """What company a probe saw, in words ("" for none worth saying).

    Args:
        others: `others_busy_cores` over the probe (None: unknown).
        cores: the cores the run may use.
        between: median ns of the caller's work between steps, by candidate label.
        one: the label of the one-thread candidate to compare the pools with.
        alone: the share of each pool's windows that ran on the calling
            thread alone during its timed steps, by label (the runtime's
            ``alone_windows``).  Where there is company (the signs here)
            and a pool's share is ``ALONE_MOST`` or more, the words say so:
            its other threads found no free core.  Alone it is no sign of
            company: a pool's threads also miss the windows of steps too
            short for them to wake in time.
        waited: how long each of a pool's other threads waited for a core a
            timed step (`sched_delay_ns`; on average, ns) and the steps' own
            time (ns), by label.  A wait of ``WAITED_MOST`` of the step or
            more is company by itself: another
            process where ``others`` says one was busy, else another thread
            of this process (a learner's thread pool spinning between its
            operations, as torch's OpenMP threads do by default).
        openmp_spins: libgomp is loaded at its default wait
            (`openmp_spins_by_default`): where another thread pool of this
            process is the company, the words name the setting that
            shortens its spin.
        in_process: cores' worth of CPU this process's other threads (not
            the caller, not the pool) used over the probe
            (`other_threads_busy_cores`; None: unknown).  Under
            ``THREADS_BUSY``, no thread pool of this process is company: the
            caller's work slower beside a pool is the pool's own cost (the
            iterations count it), and a pool's waits with no other process
            busy enough to blame are put on another process part of the
            time (a burner at half duty kept 0.4 of a core busy) or on
            something outside this one.
        steal: the machine's steal time over the probe, in cores
            (`steal_cores`; None: unknown).  Where it is ``STEAL_MOST`` or
            more and half of ``others`` or more, the company other processes
            stand for in the words is the virtual machine's host.

    ```python
    company_words(1.0, 2, {}, None, {"parallel-2": 0.9})
    # "parallel-2's other threads found no free core (90% of its windows ran
    #  on the calling thread alone); another process holds a core (...)"
    company_words(None, 2, {}, None, {"parallel-2": 0.9})   # ""
    company_words(0.6, 2, {}, None, steal=0.5)
    # "the virtual machine's host holds a core (steal time 0.5 of the
    #  machine's cores: the host ran other guests on ...)"
    company_words(0.0, 2, {}, None, waited={"parallel-2": (712e3, 1491e3)})
    # "another thread pool in this process spins on the same cores
    #  (parallel-2's other threads waited 712 us a step for a core, its steps
    #  took 1491 us, ...)"
    ```
    """
    said = []
    advice = ("a learner's threads between operations: the Performance page, \"What to set "
              "when training on CPU\"")
    if openmp_spins:
        advice = ("torch's OpenMP workers (libgomp, loaded here at its default wait) spin after "
                  "each operation: GOMP_SPINCOUNT=30000 set before torch is imported shortens "
                  "that; the Performance page, \"What to set when training on CPU\"")
    busy = others is not None and others >= OTHERS_BUSY
    waits = [(lab, w, t) for lab, (w, t) in (waited or {}).items()
             if t > 0 and w >= WAITED_MOST * t]
    waiting = ""
    if waits:
        lab, w, t = max(waits, key=lambda p: p[1] / p[2])
        waiting = (f"{lab}'s other threads waited {w / 1e3:.0f} us a step for a core, its "
                   f"steps took {t / 1e3:.0f} us")
    # the caller's work slower beside the pool is put on another thread pool of
    # this process only where one ran: with this process's other threads idle
    # it is the pool's own cost, which the iterations count (on a 2-core VM
    # the caller's 81 us of Python between steps took 127 beside parallel-2's
    # threads alone on the machine, and re-probes held the pool to its steps
    # of a slow moment as if in company)
    threads_idle = in_process is not None and in_process < THREADS_BUSY
    # the other processes' load is mostly the host's steal time: other guests
    hosted = (steal is not None and others is not None and steal >= STEAL_MOST
              and 2 * steal >= others)
    vm = (f"steal time {steal:.1f} of the machine's cores: the host ran other guests on "
          "this machine's virtual CPUs" if hosted and steal is not None else "")
    if one is not None and one in between and not threads_idle:
        base = between[one]
        slow = [(lab, v) for lab, v in between.items()
                if lab != one and v > base * (1 + BETWEEN_SLOWER) and v - base > BETWEEN_MIN_NS]
        if slow:
            lab, v = max(slow, key=lambda x: x[1])
            said.append(
                "another thread pool in this process spins on the same cores (the caller's "
                f"work between steps took {v / 1e3:.0f} us beside {lab}'s threads, "
                f"{base / 1e3:.0f} us beside {one}; {advice})")
    if waiting and not busy and not said and threads_idle:
        # no thread of this process busy either: outside it, part of the time
        mine = f"this process's other threads {in_process:.1f}"
        if hosted:
            said.append(f"the virtual machine's host holds a core part of the time "
                        f"({waiting}; {vm} during the probe, other processes "
                        f"{max(0.0, (others or 0.0) - (steal or 0.0)):.1f}, {mine})")
        elif others is not None and others >= THREADS_BUSY:
            said.append(f"another process holds a core part of the time ({waiting}; other "
                        f"processes kept {others:.1f} of the machine's cores busy during the "
                        f"probe, {mine})")
        else:
            seen = "" if others is None else f"other processes {others:.1f}, "
            said.append(f"something outside this process holds a core ({waiting}; {seen}"
                        f"{mine} of the machine's cores during the probe: a virtual "
                        "machine's host, or processes this one cannot see)")
        waiting = ""
    if waiting and not busy and not said:
        # no other process to blame: a thread of this one held the core
        idle = "" if others is None else \
            f", while other processes kept {others:.1f} of the machine's cores busy"
        said.append(f"another thread pool in this process spins on the same cores ({waiting}"
                    f"{idle}; {advice})")
        waiting = ""
    if busy and hosted:
        said.append(f"the virtual machine's host holds a core ({vm} during the probe, other "
                    f"processes {max(0.0, (others or 0.0) - (steal or 0.0)):.1f}; this run "
                    f"may use {cores})")
    elif busy:
        said.append(f"another process holds a core (other processes kept {others:.1f} of "
                    f"the machine's cores busy during the probe; this run may use {cores})")
    crowded = [(lab, x) for lab, x in (alone or {}).items() if x >= ALONE_MOST]
    if said and crowded:
        lab, x = max(crowded, key=lambda p: p[1])
        said.insert(0, f"{lab}'s other threads found no free core ({x:.0%} of its windows "
                       "ran on the calling thread alone)")
    if said and waiting:
        said.insert(0, waiting)
    return "; ".join(said)


def passing_company(others: float | None, in_process: float | None) -> bool:
    """Whether company a probe saw (in words, `company_words`) can only have
    been a moment of the host's: other processes kept under
    ``PASSING_OTHERS`` of a core busy and this process's other threads under
    ``THREADS_BUSY`` (both known), so the words came from the pool's own
    waits for a core alone.  A decision made on such company is timed again
    shortly, as one whose pools ran behind their trace with no company seen.

    ```python
    passing_company(0.1, 0.0)   # True: nothing held a core for long
    passing_company(0.4, 0.0)   # False: a burner at half duty, say
    passing_company(0.0, 0.5)   # False: a thread pool of this process
    passing_company(None, 0.0)  # False: other processes unknown
    ```
    """
    return (others is not None and in_process is not None
            and others < PASSING_OTHERS and in_process < THREADS_BUSY)


__all__ = ["ALONE_MOST", "BETWEEN_MIN_NS", "BETWEEN_SLOWER", "CpuSample", "MAX_PROCS",
           "MIN_SPAN_NS", "OTHERS_BUSY", "PASSING_OTHERS", "STEAL_MOST",
           "THREADS_BUSY", "WAITED_MOST",
           "between_medians", "company_words", "cpu_sample", "fair_cores", "iterations",
           "other_threads_busy_cores", "other_threads_cpu_ns", "others_busy_cores",
           "others_loads", "passing_company", "pool_wait_ns", "process_cpu_ns", "raised_by_caller",
           "sched_delay_ns", "steal_cores", "with_processes", "with_threads"]
