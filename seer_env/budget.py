"""The thread budget: how many threads seer_env's runtimes may use together in this process.

A runtime's pool never needs more threads than the cores it can really get, and
a training loop shares those with the learner, other env processes and a
container's CPU quota.  The budget is the smallest of:

* the CPUs of the process's affinity mask (``os.sched_getaffinity``: ``taskset``,
  ``docker --cpuset-cpus``, Slurm's ``--cpus-per-task``);
* the CPU quota of its cgroup, rounded up: cgroup v2 ``cpu.max`` or v1
  ``cpu.cfs_quota_us / cpu.cfs_period_us``, the smallest along the path to the
  root, as Go 1.25's ``GOMAXPROCS`` and the JVM read them (``docker --cpus=1.5``
  gives 2);
* an explicit cap: the environment variable ``SEER_ENV_THREADS`` or
  `set_thread_budget` (which wins over the variable; the RLlib adapter sets it
  to the CPUs Ray gave the env runner).

```python
import seer_env.budget as budget
b = budget.thread_budget()
b.threads                  # 2 on a 2-core machine
print(b.describe())        # "2 threads: the process's 2 usable CPUs"
budget.set_thread_budget(1)   # every runtime of this process on one thread
budget.set_thread_budget(None)  # back to the machine's budget
```

**Who obeys it.** `threads="auto"` (STPA) never tries more threads than the
budget; ``executor="parallel"`` or ``"optimistic"`` without ``threads`` takes
the budget.  An explicit ``threads=N`` is created as asked (tests use it to
check that outputs do not depend on the pool), but its calls, like every
call, borrow their threads from the budget: **all runtimes of one process
share it**.  A call takes its own thread (the caller's) and as many of its
workers as the budget has free at that moment; the others skip the call.  One
env stepped at a time uses its whole pool; two envs stepped at the same time
from two threads (async ``send``/``recv``, a thread per env) share the budget
instead of oversubscribing the cores.  Outputs never depend on it.  The
optimistic executor's speculative steps need every slot's thread and are not
capped (their threads still count against the others).

**Bad input.** ``SEER_ENV_THREADS`` (or ``set_thread_budget``) that is not a
whole number from 1 to the usable cores is a `ConfigError` when a runtime is
made.  A cgroup file that is missing, unreadable or malformed is skipped
(the budget is then the affinity mask's, and ``ThreadBudget.notes`` says
what was skipped): a system file we cannot read never stops an env.
"""

from __future__ import annotations

import math
import operator
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError

__all__ = [
    "ENV_VAR",
    "ThreadBudget",
    "cgroup_cpu_quota",
    "lease",
    "set_thread_budget",
    "thread_budget",
    "usable_cpus",
]

#: the environment variable that caps the budget
ENV_VAR = "SEER_ENV_THREADS"

_MAX_READ = 1 << 16  # a cgroup file is a line; anything longer is not one


@dataclass(frozen=True)
class ThreadBudget:
    """The process's thread budget and where it comes from.

    ``threads`` is the budget; ``cpus`` the affinity mask's CPUs; ``quota``
    the cgroup's CPU quota in CPUs (None: no quota); ``cap`` the explicit cap
    and ``cap_source`` who set it; ``notes`` the system files skipped.
    """

    threads: int
    cpus: int
    quota: float | None = None
    quota_source: str = ""
    cap: int | None = None
    cap_source: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def binding(self) -> str:
        """What sets the budget: ``"cap"``, ``"quota"`` or ``"cpus"``."""
        if self.cap is not None and self.cap == self.threads:
            return "cap"
        if self.quota is not None and _cores(self.cpus, self.quota) == self.threads < self.cpus:
            return "quota"
        return "cpus"

    def describe(self) -> str:
        """One line for a reason or a log: the budget and what binds it."""
        n = f"{self.threads} thread{'s' if self.threads != 1 else ''}"
        if self.binding == "cap":
            return f"{n}: capped by {self.cap_source}"
        if self.binding == "quota":
            return (f"{n}: the container's CPU quota ({self.quota_source}: "
                    f"{self.quota:g} CPUs, rounded up)")
        return f"{n}: the process's {self.cpus} usable CPU{'s' if self.cpus != 1 else ''}"


def usable_cpus() -> int:
    """The CPUs of the process's affinity mask (``os.cpu_count()`` where there is none)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def _read(path: Path) -> str:
    with open(path, "rb") as f:  # noqa: PTH123 - bounded read
        data = f.read(_MAX_READ)
    return data.decode("ascii")


def _v2_quota(text: str) -> float | None:
    """``cpu.max``: ``"max 100000"`` (none) or ``"<quota> <period>"`` microseconds."""
    parts = text.split()
    if len(parts) not in (1, 2):
        raise ValueError(f"expected '<quota|max> [period]', got {text.strip()[:60]!r}")
    period = int(parts[1]) if len(parts) == 2 else 100000
    if parts[0] == "max":
        return None
    quota = int(parts[0])
    if quota <= 0 or period <= 0:
        raise ValueError(f"quota and period must be positive, got {text.strip()[:60]!r}")
    return _cpus(quota, period)


def _cpus(quota: int, period: int) -> float:
    """``quota / period`` CPUs; a ValueError (the file is skipped) where it
    is no float (a 400-digit quota raised OverflowError through every env)."""
    try:
        return quota / period
    except OverflowError:
        raise ValueError(f"quota {str(quota)[:20]}... over period {period} is too "
                         "large a number") from None


def _v1_quota(quota_text: str, period_text: str) -> float | None:
    quota, period = int(quota_text.strip()), int(period_text.strip())
    if quota < 0:  # -1: no quota
        return None
    if quota == 0 or period <= 0:
        raise ValueError(f"quota {str(quota)[:20]} and period {str(period)[:20]} must be "
                         "positive")
    return _cpus(quota, period)


def _ancestors(base: Path, rel: str) -> list[Path]:
    """``base/rel`` and every folder above it up to ``base`` (the cgroup's limits
    are the smallest along that path)."""
    parts = [p for p in rel.strip("/").split("/") if p and p != ".."]
    return [base.joinpath(*parts[:k]) for k in range(len(parts), -1, -1)]


def _mounts_v1(root: Path) -> list[tuple[str, Path]]:
    """cgroup v1 mounts of the ``cpu`` controller: (mount root, mount point)."""
    out = []
    for line in _read(root / "proc/self/mountinfo").splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3 or rfields[0] != "cgroup":
            continue
        if "cpu" in rfields[2].split(","):
            out.append((fields[3], root / fields[4].lstrip("/")))
    return out


def cgroup_cpu_quota(root: str | os.PathLike[str] = "/") -> tuple[float | None, str, list[str]]:
    """The CPU quota of this process's cgroup, in CPUs.

    Returns ``(quota, source, notes)``: ``quota`` None when there is none (or
    none could be read), ``source`` the file that set it, ``notes`` the files
    skipped and why.  ``root`` is the file system's root (tests give a folder
    holding ``proc/self/cgroup``, ``proc/self/mountinfo`` and ``sys/fs/cgroup``).
    """
    root = Path(root)
    notes: list[str] = []
    try:
        lines = _read(root / "proc/self/cgroup").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        if not isinstance(e, FileNotFoundError):
            notes.append(f"/proc/self/cgroup unreadable ({e.__class__.__name__}): no quota read")
        return None, "", notes
    best: tuple[float, str] | None = None

    def consider(q: float | None, src: str) -> None:
        nonlocal best
        if q is not None and (best is None or q < best[0]):
            best = (q, src)

    for line in lines:
        ident, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if ident == "0" and controllers == "":  # cgroup v2
            for d in _ancestors(root / "sys/fs/cgroup", path):
                f = d / "cpu.max"
                try:
                    consider(_v2_quota(_read(f)), f"cgroup v2 {'/' / f.relative_to(root)}")
                except FileNotFoundError:
                    continue
                except (OSError, ValueError, UnicodeDecodeError) as e:
                    notes.append(f"{'/' / f.relative_to(root)} skipped: {e}")
        elif "cpu" in controllers.split(","):  # cgroup v1
            try:
                mounts = _mounts_v1(root)
            except (OSError, UnicodeDecodeError) as e:
                notes.append(f"/proc/self/mountinfo unreadable ({e.__class__.__name__})")
                continue
            for mroot, mpoint in mounts:
                rel = path
                if mroot != "/" and (path == mroot or path.startswith(mroot.rstrip("/") + "/")):
                    rel = path[len(mroot):]
                for d in _ancestors(mpoint, rel):
                    qf, pf = d / "cpu.cfs_quota_us", d / "cpu.cfs_period_us"
                    try:
                        consider(_v1_quota(_read(qf), _read(pf)),
                                 f"cgroup v1 {'/' / qf.relative_to(root)}")
                    except FileNotFoundError:
                        continue
                    except (OSError, ValueError, UnicodeDecodeError) as e:
                        notes.append(f"{'/' / qf.relative_to(root)} skipped: {e}")
    if best is None:
        return None, "", notes
    return best[0], best[1], notes


_lock = threading.Lock()
_cap: tuple[int, str] | None = None  # set_thread_budget's (threads, source)


def _whole(name: str, value: object, most: int) -> int:
    """``value`` as a whole number from 1 to ``most``, else a `ConfigError`."""
    n: int | None = None
    if hasattr(value, "__index__") and not isinstance(value, bool):
        n = operator.index(value)  # an int, NumPy's included (threads= takes them too)
    elif isinstance(value, str) and re.fullmatch(r"[0-9]{1,18}", value.strip()):
        # ASCII digits only: int() also takes "+2", "0_1" and other scripts' digits
        n = int(value.strip())
    if n is None or not 1 <= n <= most:
        raise ConfigError(f"{name}={value!r} must be a whole number from 1 to {most} "
                          f"(the cores this process may use)")
    return n


def _cores(cpus: int, quota: float | None) -> int:
    """The cores the process can really get: its CPUs, within the quota rounded up."""
    return cpus if quota is None else max(1, min(cpus, math.ceil(quota - 1e-9)))


def thread_budget(root: str | os.PathLike[str] = "/") -> ThreadBudget:
    """The thread budget now (read afresh: the files are small).

    Raises `ConfigError` when ``SEER_ENV_THREADS`` is set to anything but a
    whole number from 1 to the usable cores.
    """
    cpus = usable_cpus()
    quota, qsrc, notes = cgroup_cpu_quota(root)
    cores = _cores(cpus, quota)
    cap: int | None = None
    src = ""
    with _lock:
        explicit = _cap
    if explicit is not None:
        cap, src = min(explicit[0], cores), explicit[1]
    elif (raw := os.environ.get(ENV_VAR, "").strip()) != "":
        cap, src = _whole(ENV_VAR, raw, cores), f"{ENV_VAR}={raw}"
    threads = cores if cap is None else min(cap, cores)
    return ThreadBudget(threads=threads, cpus=cpus, quota=quota, quota_source=qsrc,
                        cap=cap, cap_source=src, notes=tuple(notes))


def set_thread_budget(threads: int | None, source: str = "") -> None:
    """Cap the budget of every runtime of this process (None: no cap).

    Wins over ``SEER_ENV_THREADS``.  ``threads`` must be a whole number from
    1 to the usable cores (`ConfigError` otherwise).  ``source`` names who set
    it in reasons (default ``set_thread_budget(N)``).
    """
    global _cap
    if threads is None:
        with _lock:
            _cap = None
        lease.forget()
        return
    # the cores alone: a bad SEER_ENV_THREADS is not this call's error
    n = _whole("threads", threads, _cores(usable_cpus(), cgroup_cpu_quota()[0]))
    with _lock:
        _cap = (n, source or f"set_thread_budget({n})")
    lease.forget()


class _Lease:
    """The process-wide count of threads inside calls (`lease`).

    A call takes its caller's thread (always) and as many more as the
    budget has free; it gives them back when it returns.  Thread-safe; a
    child of fork starts with none taken.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy = 0
        #: calls on one thread in progress (the caller's alone): one entry
        #: each, appended and popped without the lock (both atomic), so that
        #: a serial step pays no lock for being counted
        self.solo: list[None] = []
        self._budget: int | None = None
        #: changes when the budget is to be read again (`forget`): STPA
        #: reads its cores again when it moves
        self.generation = 0

    def budget(self) -> int:
        """The budget the lease hands out (read once; `forget` reads it again)."""
        b = self._budget
        if b is None:
            try:
                b = thread_budget().threads
            except ConfigError:
                b = usable_cpus()  # the runtime's creation reports the bad cap
            self._budget = b
        return b

    def forget(self) -> None:
        """Read the budget again at the next call (after a change of the cap)."""
        self._budget = None
        self.generation += 1

    def take(self, want: int) -> int:
        """Threads for a call that wants ``want`` (the caller's included): at
        least 1, at most what the budget has free besides the calls running."""
        budget = self.budget()
        with self._lock:
            got = 1 + max(0, min(want - 1, budget - self._busy - len(self.solo) - 1))
            self._busy += got
        return got

    def give(self, n: int) -> None:
        """Give back what `take` returned."""
        with self._lock:
            self._busy = max(0, self._busy - n)

    @property
    def busy(self) -> int:
        """Threads inside calls now, one-thread calls' included (tests and
        benchmarks read it)."""
        return self._busy + len(self.solo)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        self._busy = 0
        self.solo.clear()  # in place: the runtimes hold it
        self._budget = None
        self.generation += 1


#: the process's lease of threads to calls
lease = _Lease()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lease._after_fork)
