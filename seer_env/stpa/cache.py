"""STPA's decisions remembered across processes: `DecisionCache`, one small JSON
file beside the built models, and the controllers whose decision it has not
got yet (written when their runtime closes, or at exit).

Above `seer_env.stpa.cost`, below the controller (`seer_env.stpa.controller`).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import platform
import re
import stat
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from .._bind.loader import cache_dir
from .._bind.runtime import EXECUTORS, cpu_model, max_threads
from .._version import __version__

#: a candidate's label: "serial", "parallel-N" or "optimistic-N"
_LABEL = re.compile(r"serial|(?:parallel|optimistic)-[1-9][0-9]{0,3}")

log = logging.getLogger("seer_env.stpa")


class _Saver(Protocol):
    def save_decision(self) -> None: ...


# controllers whose decision the cache has not got yet: written at exit
_UNSAVED: weakref.WeakSet[_Saver] = weakref.WeakSet()


def save_at_exit(st: _Saver) -> None:
    """Write ``st``'s decision at exit unless it is written before (`saved`)."""
    _UNSAVED.add(st)


def saved(st: _Saver) -> None:
    """``st``'s decision is written (or dropped): nothing to do at exit."""
    _UNSAVED.discard(st)


@atexit.register
def _save_unsaved() -> None:
    for st in list(_UNSAVED):
        with contextlib.suppress(Exception):
            st.save_decision()


# -- decisions remembered across processes ---------------------------------------------


class DecisionCache:
    """STPA's decisions kept across processes: one small JSON file beside the
    built models (``stpa-decisions.json`` in the model cache folder).

    An entry is keyed by everything a decision depends on: the model, its
    complete configuration, the number of instances, the pool cap, and the
    build and the machine it was made on (the model's extension module, the
    package version, the CPU, the usable cores and the cache sizes), so a
    rebuilt model, a new version or another machine finds nothing and probes
    afresh.  A run whose key is found starts on the remembered choice without
    a preflight; its confirmation re-probes still check the neighbourhood.
    The file is replaced atomically; a missing, unreadable or corrupted file
    is an empty cache (it is rewritten on the next decision).  Off with
    ``SEER_STPA_CACHE=0`` or ``stpa_options={"cache": False}``; elsewhere
    with ``SEER_STPA_CACHE_FILE``.

    Example:

    ```python
    cache = DecisionCache()
    print(cache.path, len(cache.entries()))
    ```
    """

    #: 2: decisions made in company are no longer written; files of 1 may
    #: hold such ones (a serial decision made beside a busy process, kept by
    #: every later run alone), so they are read as empty
    VERSION = 2
    MAX_ENTRIES = 256
    #: a file larger than this is no cache of ours (256 entries take about 200 KB)
    MAX_BYTES = 4 << 20
    #: a remembered decision whose runner-up was within this factor is
    #: confirmed early in the runs that start from it
    CLOSE = 1.25

    def __init__(self, path: Path | None = None) -> None:
        env = os.environ.get("SEER_STPA_CACHE_FILE")
        self.path = (Path(path) if path is not None else Path(env) if env
                     else cache_dir() / "stpa-decisions.json")

    @staticmethod
    def key(runtime: Any, max_threads: int | None, cores: int, caches: Any) -> str:
        """The entry's key for ``runtime`` (a hash of what the decision depends on)."""
        module = getattr(getattr(runtime, "native", None), "module", None)
        build: list[Any] = [__version__, getattr(runtime.native, "source", "")]
        path = getattr(module, "__file__", None)
        if path:
            with contextlib.suppress(OSError):
                st = os.stat(path)
                build += [path, st.st_size, st.st_mtime_ns]
        what = {"model": runtime.model, "config": runtime.config,
                "instances": runtime.num_instances, "max_threads": max_threads,
                "build": build, "machine": [platform.machine(), cpu_model(), cores,
                                            caches]}
        blob = json.dumps(what, sort_keys=True, default=repr).encode()
        return hashlib.sha256(blob).hexdigest()

    def entries(self) -> dict[str, dict[str, Any]]:
        """Every valid entry.  A missing, unreadable or corrupted file reads as
        none, and so does a path that is no regular file (a device, a FIFO, a
        folder: never opened for writing, and never waited on); an entry with a
        field out of its range is left out and logged."""
        data = self._read()
        if not isinstance(data, dict) or data.get("version") != self.VERSION:
            return {}
        raw = data.get("entries")
        if not isinstance(raw, dict):
            return {}
        out = {}
        for k, v in raw.items():
            why = self.invalid(v) if isinstance(k, str) else "its key is not a string"
            if why is None:
                out[k] = v
            else:
                log.info("STPA decision cache %s: entry %.16s ignored: %s", self.path, k, why)
        return out

    def _read(self) -> Any:
        """The file's JSON, or None (logged) when it cannot be had."""
        try:
            # O_NONBLOCK: opening a FIFO does not wait for a writer
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                log.warning("STPA decision cache %s is not a regular file: not used",
                            self.path)
                return None
            if st.st_size > self.MAX_BYTES:
                log.info("STPA decision cache %s: %d bytes, over %d: ignored", self.path,
                         st.st_size, self.MAX_BYTES)
                return None
            # and as it reads: a file whose size stat does not tell (procfs
            # says 0 for /proc/self/pagemap, which holds gigabytes)
            chunks, got = [], 0
            while chunk := os.read(fd, 1 << 16):
                got += len(chunk)
                if got > self.MAX_BYTES:
                    log.info("STPA decision cache %s: over %d bytes: ignored", self.path,
                             self.MAX_BYTES)
                    return None
                chunks.append(chunk)
            text = b"".join(chunks).decode("utf-8")
            return json.loads(text)
        except (OSError, ValueError, RecursionError, MemoryError) as exc:
            # ValueError: not JSON (or not UTF-8); RecursionError: nested too deep
            log.info("STPA decision cache %s unreadable (%s): ignored", self.path,
                     type(exc).__name__)
            return None
        finally:
            os.close(fd)

    @staticmethod
    def invalid(e: Any) -> str | None:
        """Why ``e`` is no valid cache entry (None when it is one)."""
        def number(v: Any, lo: float, hi: float) -> bool:  # in [lo, hi): never NaN nor inf
            return isinstance(v, (int, float)) and not isinstance(v, bool) and lo <= v < hi

        def time_ns(v: Any) -> bool:
            return number(v, 0.0, 1e15) and v > 0
        if not isinstance(e, dict):
            return "not an object"
        if e.get("executor") not in EXECUTORS:
            return f"executor {e.get('executor')!r} unknown"
        if type(e.get("threads")) is not int or not 1 <= e["threads"] <= max_threads():
            return f"threads {e.get('threads')!r} not an int in 1..{max_threads()}"
        if not isinstance(e.get("reason"), str):
            return "reason not a string"
        if not number(e.get("events_per_step"), 0.0, 1e15):
            return f"events_per_step {e.get('events_per_step')!r} not a finite count"
        if type(e.get("alive_agents")) is not int or not 0 <= e["alive_agents"] < 1 << 31:
            return f"alive_agents {e.get('alive_agents')!r} not a count"
        med = e.get("medians_ns")
        if not isinstance(med, dict) or not all(
                isinstance(k, str) and _LABEL.fullmatch(k) and time_ns(v)
                for k, v in med.items()):
            return "medians_ns not a map of labels to positive finite times"
        step_ns = e.get("step_ns")
        if step_ns is not None and not time_ns(step_ns):
            return f"step_ns {step_ns!r} not a positive finite time"
        if not number(e.get("t"), 0.0, 1e12):  # seconds since the epoch
            return f"t {e.get('t')!r} not a time"
        return None

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry for ``key``, or None."""
        return self.entries().get(key)

    def put(self, key: str, entry: dict[str, Any], wait_s: float | None = None) -> bool:
        """Store ``entry`` under ``key`` (the oldest entries go past MAX_ENTRIES).
        Best effort: a cache that cannot be written is left as it is.  A write
        takes 0.3-0.8 ms here, several times a tiny env's preflight: `Stpa`
        writes its decision once the run has paid for that, or at close or exit.
        Writers in several processes take turns (`_writing`): none loses
        another's entry.  A writer waits for the others at most ``wait_s``
        seconds (default `LOCK_WAIT_S`), then writes nothing and returns
        False (the caller may try again later); True otherwise.
        An entry that is no valid one (`invalid`) is not written; nor is the
        file replaced unless it is a regular file or missing (a symbolic link
        is followed: the file it names is replaced)."""
        entry = {**entry, "t": time.time()}
        why = self.invalid(entry)
        if why is not None:
            log.info("STPA decision cache %s: decision not written: %s", self.path, why)
            return True
        path = Path(os.path.realpath(self.path))
        try:
            st = os.stat(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.debug("STPA decision cache %s not written: %s", self.path, exc)
            return True
        else:
            if not stat.S_ISREG(st.st_mode):
                log.warning("STPA decision cache %s is not a regular file: not replaced",
                            self.path)
                return True
        wait = self.LOCK_WAIT_S if wait_s is None else wait_s
        with self._writing(path, wait) as turn:
            if not turn:
                log.info("STPA decision cache %s: another writer held it %.2f s: not "
                         "written", self.path, wait)
                return False
            self._replace(path, key, entry)
        return True

    #: seconds a writer waits at most for another's write to end (`_writing`):
    #: each takes a millisecond or so, and many processes writing at once on
    #: a loaded machine (a test suite's workers, env runners closing) queue
    #: for a few seconds; a writer that holds it longer is stopped or stuck
    LOCK_WAIT_S = 10.0

    @contextlib.contextmanager
    def _writing(self, path: Path, wait_s: float) -> Iterator[bool]:
        """One writer at a time (read, add, replace) among the processes
        sharing the file: an exclusive ``flock`` on a lock file beside it
        (``<name>.lock``), waited for at most ``wait_s``.  Yields whether it
        is this writer's turn: False once another writer held it all that
        while (writing then would drop that one's entry); True where the lock
        file cannot be made or locked (a read-only folder, a folder in its
        place, a file system without locks: the file is written as before
        there were locks).  Without it, two processes writing at once each
        replaced the file with their own read of it plus their entry: one
        entry lost (8 processes writing 10 entries each at once kept 13-52 of
        the 80); writing anyway after a 2-second wait lost 7 of them once on
        a loaded 2-core machine."""
        fd = -1
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path.with_name(path.name + ".lock"),
                         os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                         0o644)
        try:
            turn = True
            if fd >= 0:
                deadline = time.monotonic() + wait_s
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            turn = False
                            break
                        time.sleep(0.001)
                    except OSError:  # a file system without locks
                        break
            yield turn
        finally:
            if fd >= 0:
                os.close(fd)  # the lock goes with it

    def _replace(self, path: Path, key: str, entry: dict[str, Any]) -> None:
        """The file's valid entries and ``entry``, written to a temporary file
        beside it and renamed over it (the caller holds `_writing`)."""
        entries = self.entries()
        entries[key] = entry
        if len(entries) > self.MAX_ENTRIES:
            keep = sorted(entries, key=lambda k: entries[k]["t"])[-self.MAX_ENTRIES:]
            entries = {k: entries[k] for k in keep}
        data = json.dumps({"version": self.VERSION, "entries": entries},
                          allow_nan=False).encode()
        # a name of this process and thread, not tempfile.mkstemp: its random
        # names cost 0.4 ms to set up in a process
        tmp = path.with_name(f".stpa-{os.getpid()}-{threading.get_ident()}.json")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                finally:
                    os.close(fd)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            log.debug("STPA decision cache %s not written: %s", self.path, exc)


def cache_wanted(option: bool | None) -> bool:
    if option is not None:
        return bool(option)
    return os.environ.get("SEER_STPA_CACHE", "1") not in ("0", "", "false", "no")


__all__ = ["DecisionCache", "cache_wanted", "save_at_exit", "saved"]
