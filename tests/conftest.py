"""Shared test setup: make the repository root importable (for ``oracles``), and
keep STPA's decision cache off (a test that wants it turns it on): a decision
remembered by one test must not skip another's preflight.  A test that leaves
the process's signal handlers or the thread budget's cap changed fails (they
are put back first): the tests that send SIGINT to a fresh interpreter
inherit the handlers, and one test that left SIGINT ignored made every later
Ctrl-C test fail.  The suite runs in several processes (pytest-xdist,
``run_tests.sh``): a test that starts a Ray session takes `ray_turn` first,
so that one Ray session at a time runs on the machine."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("SEER_STPA_CACHE", "0")

#: the signals whose handlers a test must leave as it found them
_KEPT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGCHLD)


@pytest.fixture(autouse=True)
def _process_state_kept() -> Iterator[None]:
    """The signal handlers and the thread budget's explicit cap as the test
    found them (a cap left behind would run every later test's pools on
    fewer threads, unseen)."""
    from seer_env import budget

    before = {s: signal.getsignal(s) for s in _KEPT_SIGNALS}
    cap = budget._cap
    yield
    changed = [signal.Signals(s).name for s, h in before.items() if signal.getsignal(s) is not h]
    for s, h in before.items():
        if signal.getsignal(s) is not h and h is not None:
            signal.signal(s, h)
    left_cap = budget._cap != cap
    if left_cap:
        with budget._lock:
            budget._cap = cap
        budget.lease.forget()
    assert not changed, f"the test left the handlers of {changed} changed"
    assert not left_cap, "the test left set_thread_budget's cap changed"


def _one_ray_session() -> contextlib.AbstractContextManager[None]:
    """An exclusive lock on a file of the machine's temporary folder, held
    while the caller's Ray session lives (the package's own `file_lock`).
    pytest-xdist's workers run the suite's modules side by side, and two Ray
    clusters starting at once on a 2-core machine each wait for the other's
    processes."""
    from seer_env._bind.loader import file_lock

    return file_lock(Path(tempfile.gettempdir()) / "seer-env-tests-ray.lock")


@pytest.fixture(scope="module")
def ray_turn() -> Iterator[None]:
    """This process's turn for a Ray session (a local cluster of its own),
    for a module's session fixture (`_one_ray_session`)."""
    with _one_ray_session():
        yield


@pytest.fixture
def ray_turn_test() -> Iterator[None]:
    """`ray_turn` for one test (one that starts Ray in a child process)."""
    with _one_ray_session():
        yield
