"""Hostile use of the native runtime's process-wide parts: Ctrl-C (SIGINT)
with several copies of the runtime in one process.

Every extension module (each shipped env's ``_model``, each user model,
``seer_env._core``) carries its own copy of the runtime and of its SIGINT
chaining (``native/runtime/process.c``).  Each test runs in a fresh
interpreter with a timeout: a signal loop there (the bug these pin: after
two models were used, Ctrl-C spun for ever in the handler) fails the test
instead of hanging the suite.

The interpreter's C-level handler is counted exactly through
``signal.set_wakeup_fd``: CPython's handler writes one byte there per call.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Shared by every script: wakeup-fd counting, long steps, alternate use.
PRELUDE = """
import ctypes, os, signal, sys, threading
from seer_env.envs import aircraft_v0, pcs_v0, phold_v0
from seer_env.errors import Interrupted, StateError

r, w = os.pipe()
os.set_blocking(r, False)
os.set_blocking(w, False)
signal.set_wakeup_fd(w)

def interpreter_calls():
    '''C-level calls of the interpreter's handler since the last look.'''
    try:
        return len(os.read(r, 4096))
    except BlockingIOError:
        return 0

def alternate(times=4):
    '''Short calls into three models' copies of the runtime, alternating.'''
    envs = [phold_v0.parallel_env(num_entities=8), pcs_v0.parallel_env(width=2, height=2),
            aircraft_v0.parallel_env(num_uavs=2)]
    for _ in range(times):
        for e in envs:
            e.reset(seed=1)
            e.step({a: e.action_space(a).sample() for a in e.agents})
    for e in envs:
        e.close()

# steps of a minute or more each, unless interrupted
def long_phold():
    return phold_v0.parallel_env(num_entities=4096, events_per_entity=64, work=200000,
                                 mean=1.0, lookahead=1.0, step_duration=2.0, threads=1)

def long_pcs():
    return pcs_v0.parallel_env(width=64, height=64, step_minutes=1e6,
                               max_step_events=10**12, threads=2)

def step_with_sigint(env, delay=0.5):
    '''Step once with a SIGINT sent to this process while the step runs;
    returns what ended the step.'''
    env.reset(seed=0)
    actions = {a: 0 for a in env.agents}
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        env.step(actions)
        outcome = "finished"
    except KeyboardInterrupt:
        outcome = "KeyboardInterrupt"
    except Interrupted:
        outcome = "Interrupted"
    timer.join()
    return outcome

def marked_interrupted(env):
    '''The step was abandoned inside the runtime: the env needs a reset.'''
    try:
        env.step({a: 0 for a in env.agents})
    except StateError as exc:
        return "cut short" in str(exc) or "interrupted" in str(exc)
    return False
"""


def run_script(body: str, timeout: float = 60) -> subprocess.CompletedProcess:
    code = PRELUDE + textwrap.dedent(body)
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) \
            else (exc.stdout or "")
        raise AssertionError(f"the interpreter hung (killed after {timeout} s); "
                             f"its output so far:\n{out}") from None


def test_ctrl_c_after_alternating_models_interrupts_each_once() -> None:
    r = run_script("""
    alternate()
    for make in (long_phold, long_pcs, long_phold):
        env = make()
        outcome = step_with_sigint(env)
        print(make.__name__, outcome, interpreter_calls(), marked_interrupted(env), flush=True)
        env.close()
        alternate(2)
    print("done")
    """)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.splitlines() == [
        "long_phold KeyboardInterrupt 1 True",
        "long_pcs KeyboardInterrupt 1 True",
        "long_phold KeyboardInterrupt 1 True",
        "done",
    ], r.stdout + r.stderr[-3000:]


def test_a_python_handler_installed_after_the_models_is_called_once_per_signal() -> None:
    r = run_script("""
    alternate()
    calls = []
    def handler(signum, frame):
        calls.append(signum)
    signal.signal(signal.SIGINT, handler)
    for make in (long_pcs, long_phold):
        env = make()
        # the handler does not raise: the runtime's watch abandons the step
        print(make.__name__, step_with_sigint(env), len(calls), interpreter_calls(),
              marked_interrupted(env), flush=True)
        env.close()
        alternate(1)
    def raising(signum, frame):
        calls.append(signum)
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, raising)
    env = long_phold()
    print("raising", step_with_sigint(env), len(calls), interpreter_calls(), flush=True)
    """)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.splitlines() == [
        "long_pcs Interrupted 1 1 True",
        "long_phold Interrupted 2 1 True",
        "raising KeyboardInterrupt 3 1",
    ], r.stdout + r.stderr[-3000:]


def test_a_foreign_c_handler_in_place_of_ours_turns_the_watch_off() -> None:
    # libc's srand(int) as the SIGINT handler: it records the signal number as
    # the seed, which rand() then shows.  In place of the runtime's handler it
    # turns the watch off: the step runs to its end, the handler ran once;
    # the interpreter's handler back in place turns the watch on again.
    r = run_script("""
    alternate()
    libc = ctypes.CDLL(None)
    libc.signal.restype = ctypes.c_void_p
    libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
    libc.srand.argtypes = (ctypes.c_uint,)
    libc.srand(777)
    seed_777 = libc.rand()
    libc.srand(signal.SIGINT)
    seed_sigint = libc.rand()
    libc.srand(777)
    old = libc.signal(signal.SIGINT, ctypes.cast(libc.srand, ctypes.c_void_p).value)
    env = phold_v0.parallel_env(num_entities=256, events_per_entity=16, work=200000,
                                mean=1.0, lookahead=1.0, step_duration=2.0, threads=1)
    outcome = step_with_sigint(env, delay=0.2)
    seed = libc.rand()
    print("foreign", outcome, seed == seed_sigint, seed == seed_777, interpreter_calls(),
          flush=True)
    alternate(1)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    env = long_pcs()
    print("interpreter", step_with_sigint(env), interpreter_calls(), marked_interrupted(env),
          flush=True)
    """)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.splitlines() == [
        "foreign finished True False 0",
        "interpreter KeyboardInterrupt 1 True",
    ], r.stdout + r.stderr[-3000:]


def test_sig_dfl_in_place_of_ours_terminates_on_ctrl_c() -> None:
    r = run_script("""
    alternate()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    env = long_phold()
    print("stepping", flush=True)
    print(step_with_sigint(env), flush=True)
    """)
    assert r.returncode == -signal.SIGINT, r.stdout + r.stderr[-3000:]
    assert r.stdout.splitlines() == ["stepping"], r.stdout
