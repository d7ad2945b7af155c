#!/usr/bin/env bash
# Install seer_env with its test dependencies into ./.venv and run everything:
# ruff, import-linter (the Python layers), mypy (the package's type
# annotations), the documentation site (strict),
# the pytest suite, BenchMARL's task and the TorchRL face at TorchRL 0.11 in a
# venv of their own (tests/in_benchmarl_venv/run.sh), the runtime's C stress tests plain and under
# ThreadSanitizer and AddressSanitizer+UBSan (and seer_env._fast under ASan),
# and the package as a user gets
# it (sdist and wheel built, the wheel installed in a fresh venv, a model
# written, built, checked and trained from outside the tree).  Exits non-zero
# on any failure.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# torch pinned first: the [train] extra's range then resolves to this CPU build
.venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -e '.[test,train,rllib,compat,docs,numba,torchrl]'
# each phase's start time: where the run's minutes go
phase() { echo "== $1 ($(date +%T))"; }
# the C stress tests (about 8 minutes of one core) start first, at the lowest
# priority: they take the cores the checks and pytest leave idle (mypy's one
# core, pytest's workers' waits, its last long tests); once pytest is done they
# run at the normal priority beside BenchMARL's venv and the wheel's test
# (mostly installs); their report is printed once they are done
san_log=$(mktemp)
phase "C stress tests (plain, TSan, ASan+UBSan) and seer_env._fast under ASan+UBSan: started (nice 19), beside the rest"
# A session of their own: stopped with this script, whichever way it ends,
# builds and stress tests included.  A new session is a new autogroup where the
# kernel groups sessions (sched_autogroup_enabled: a desktop's and most
# distributions' default): the group is scheduled against pytest's as one task
# of its own nice value, whatever its processes' nice, so the group's is set
# too (measured here: a nice-19 spinner in a session of its own got more of a
# core than each of two spinners beside it, 13308 loops to 8001-8563; with its
# group's nice at 19, 966 to 15742-16408)
setsid bash -c 'echo 19 2>/dev/null > /proc/self/autogroup; exec nice -n 19 bash "$0"' \
  tests/native/run_sanitizers.sh > "$san_log" 2>&1 &
san_pid=$!
trap 'kill -- -"$san_pid" 2>/dev/null || true' EXIT
phase "ruff"
.venv/bin/ruff check .
phase "lint-imports (the Python layer's one-way import order, pyproject.toml)"
.venv/bin/lint-imports
phase "mypy (the package's type annotations)"
.venv/bin/mypy
phase "docs (mkdocs build --strict)"
# no -q: with it mkdocs counts no warning, and --strict passes them
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict -d "$(mktemp -d)"
phase "pytest (pytest-xdist: SEER_TEST_WORKERS processes, default one a core up to 8)"
workers=${SEER_TEST_WORKERS:-$(n=$(nproc); echo $((n < 8 ? n : 8)))}
.venv/bin/python -m pytest -q -n "$workers" --dist worksteal "$@"
# the stress tests' priority back to the normal one (where this user may raise
# it: root, or a nice limit that allows it; else they finish later, alone)
renice -n 0 -g "$san_pid" > /dev/null 2>&1 || true
echo 0 2>/dev/null > "/proc/$san_pid/autogroup" || true
phase "BenchMARL's task and TorchRL 0.11 (a venv of their own: BenchMARL pins TorchRL < 0.12)"
bash tests/in_benchmarl_venv/run.sh
phase "the wheel, installed in a fresh venv"
bash tests/wheel_smoke.sh .venv/bin/python
phase "C stress tests: waiting for them"
san_rc=0
wait "$san_pid" || san_rc=$?
trap - EXIT
cat "$san_log"
rm -f "$san_log"
[ "$san_rc" -eq 0 ] || { echo "C stress tests failed (exit $san_rc)"; exit "$san_rc"; }
phase "done"
