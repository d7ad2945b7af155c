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
echo "== ruff"
.venv/bin/ruff check .
echo "== lint-imports (the Python layer's one-way import order, pyproject.toml)"
.venv/bin/lint-imports
echo "== mypy (the package's type annotations)"
.venv/bin/mypy
echo "== docs (mkdocs build --strict)"
# no -q: with it mkdocs counts no warning, and --strict passes them
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict -d "$(mktemp -d)"
echo "== pytest"
.venv/bin/python -m pytest -q "$@"
echo "== BenchMARL's task and TorchRL 0.11 (a venv of their own: BenchMARL pins TorchRL < 0.12)"
bash tests/in_benchmarl_venv/run.sh
echo "== C stress tests (plain, TSan, ASan+UBSan) and seer_env._fast under ASan+UBSan"
bash tests/native/run_sanitizers.sh
echo "== the wheel, installed in a fresh venv"
bash tests/wheel_smoke.sh .venv/bin/python
