#!/usr/bin/env bash
# Install seer_env with its test dependencies into ./.venv and run everything:
# ruff, import-linter (the Python layers), mypy (the package's type
# annotations), the pytest suite (the documentation site, strict, among its
# tests), BenchMARL's task and the TorchRL face at TorchRL 0.11 in a
# venv of their own (tests/in_benchmarl_venv/run.sh), the runtime's C stress tests plain and under
# ThreadSanitizer and AddressSanitizer+UBSan (and seer_env._fast under ASan),
# and the package as a user gets
# it (sdist and wheel built, the wheel installed in a fresh venv, a model
# written, built, checked and trained from outside the tree).  Exits non-zero
# on any failure.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
# each phase's start time: where the run's minutes go
phase() { echo "== $1 ($(date +%T))"; }
# Jobs run beside the rest, each in a session of its own (stopped with this
# script, whichever way it ends, builds and tests included), its output kept
# in a log that is printed when the job is waited for.
bg_pids=()
trap 'for p in "${bg_pids[@]}"; do kill -- -"$p" 2>/dev/null || true; done' EXIT
logs=$(mktemp -d)
# bg NAME NICE COMMAND...: start COMMAND as job NAME; NICE 19: only on the
# cores the rest leaves idle.  A new session is a new autogroup where the
# kernel groups sessions (sched_autogroup_enabled: a desktop's and most
# distributions' default): the group is scheduled against the others as one
# task of its own nice value, whatever its processes' nice, so the group's is
# set too (measured here: a nice-19 spinner in a session of its own got more
# of a core than each of two spinners beside it, 13308 loops to 8001-8563;
# with its group's nice at 19, 966 to 15742-16408)
bg() {
  local name=$1 prio=$2
  shift 2
  setsid bash -c 'echo "$0" 2>/dev/null > /proc/self/autogroup; exec nice -n "$0" "$@"' \
    "$prio" "$@" > "$logs/$name" 2>&1 &
  bg_pids+=("$!")
  eval "pid_$name=$!"
}
# wait_bg NAME TITLE: wait for job NAME, print its output, fail with it
wait_bg() {
  local name=$1 rc=0 pid
  pid=$(eval echo "\$pid_$name")
  wait "$pid" || rc=$?
  phase "$2: done"
  cat "$logs/$name"
  [ "$rc" -eq 0 ] || { echo "$2 failed (exit $rc)"; exit "$rc"; }
}
# normal priority again for a niced job (where this user may raise it: root,
# or a nice limit that allows it; else it finishes later, alone)
unnice() {
  local pid
  pid=$(eval echo "\$pid_$1")
  renice -n 0 -g "$pid" > /dev/null 2>&1 || true
  echo 0 2>/dev/null > "/proc/$pid/autogroup" || true
}
# The runtime's C stress tests (about 8 minutes of one core; gcc and python3
# only, no venv) start first, at the lowest priority: they take the core that
# pip's installs and the checks leave idle, and pytest's idle moments (its
# workers' waits, its last long tests); once pytest is done they run at the
# normal priority beside the rest.
phase "C stress tests (plain, TSan, ASan+UBSan): started (nice 19), beside the rest"
bg stress 19 bash tests/native/run_sanitizers.sh plain tsan asan
phase "install (.venv)"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# torch pinned first: the [train] extra's range then resolves to this CPU build
.venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -e '.[test,train,rllib,compat,docs,numba,torchrl]'
# The tree's bytecode, once: where Python writes none (PYTHONDONTWRITEBYTECODE
# set, as on the machines this was measured on), every interpreter the tests
# start (the checker's child, the CLI, each docs page) would compile the
# package again: tests/test_check.py took 139-146 s of CPU without it, 112-114
# s with it.  (The templates are copied by `seer-env new`, not imported.)
.venv/bin/python -m compileall -q -j 0 -x '/templates/' seer_env envs examples oracles
phase "ruff"
.venv/bin/ruff check .
phase "lint-imports (the Python layer's one-way import order, pyproject.toml)"
.venv/bin/lint-imports
# mypy (a minute of one core) beside pytest: its report comes after it.  (The
# docs site is built, strict, by pytest: tests/test_docs_site.py.)
phase "mypy (the package's type annotations): started, beside pytest"
bg mypy 0 .venv/bin/mypy
phase "pytest (pytest-xdist: SEER_TEST_WORKERS processes, default one a core up to 8)"
workers=${SEER_TEST_WORKERS:-$(n=$(nproc); echo $((n < 8 ? n : 8)))}
.venv/bin/python -m pytest -q -n "$workers" --dist worksteal "$@"
unnice stress
wait_bg mypy "mypy"
# What is left is mostly one core's work each (pip's installs, one pytest
# process, one build): two at a time.  The wheel is built (sdist, then the
# wheel from it) beside seer_env._fast's ASan build and tests (which copy the
# tree's package); then the wheel is tried in a fresh venv beside BenchMARL's
# venv, whose editable install writes the tree's extensions and
# seer_env.egg-info (as the sdist's build does: not at the same time).
dist=$(mktemp -d)
phase "seer_env._fast under ASan+UBSan, and the sdist and the wheel built: started, two at a time"
bg fast 0 bash tests/native/run_sanitizers.sh fast
bg wheel_build 0 bash tests/wheel_smoke.sh .venv/bin/python build "$dist"
wait_bg wheel_build "the sdist and the wheel"
wait_bg fast "seer_env._fast under ASan+UBSan"
phase "BenchMARL's task and TorchRL 0.11 (a venv of their own: BenchMARL pins TorchRL < 0.12), and the wheel in a fresh venv: started, two at a time"
bg benchmarl 0 bash tests/in_benchmarl_venv/run.sh
bg wheel 0 bash tests/wheel_smoke.sh .venv/bin/python test "$dist"
wait_bg wheel "the wheel, installed in a fresh venv"
wait_bg benchmarl "BenchMARL's task and TorchRL 0.11"
phase "C stress tests: waiting for them"
wait_bg stress "C stress tests (plain, TSan, ASan+UBSan)"
rm -rf "$logs" "$dist"
phase "done"
