#!/usr/bin/env bash
# The package as a user gets it: build the sdist and the wheel (python -m build:
# the wheel is built from the sdist), install the wheel into a fresh venv and,
# from outside the source tree, write, build, check and train a model with
# the SDK (in C and in Python; a C model with agent groups and masks too),
# check and train the example model, and build the documentation site against
# the installed package.  Usage:
#   tests/wheel_smoke.sh [PYTHON]            both steps (default PYTHON: the repository's .venv python)
#   tests/wheel_smoke.sh PYTHON build DIST   only build the sdist and the wheel into DIST
#   tests/wheel_smoke.sh PYTHON test DIST    only install and try the wheel DIST holds
# (run_tests.sh builds first, then tests the wheel beside BenchMARL's venv: the
# build writes seer_env.egg-info in the tree, as BenchMARL's editable install does)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${1:-$root/.venv/bin/python}
step=${2:-all}
work=$(mktemp -d /tmp/seer-wheel-XXXXXX)
trap 'rm -rf "$work"' EXIT
case "$step" in
  all) dist="$work/dist" ;;
  build|test)  # absolute: the test step installs from it in other folders
    dist=${3:?"tests/wheel_smoke.sh: $step needs the dist folder"}
    dist=$(mkdir -p "$dist" && cd "$dist" && pwd) ;;
  *) echo "tests/wheel_smoke.sh: unknown step $step (all, build or test)" >&2; exit 2 ;;
esac
if [ "$step" != test ]; then
  echo "== build the sdist and the wheel"
  "$py" -m build --outdir "$dist" "$root" > "$work/build.log" 2>&1 || {
    tail -50 "$work/build.log"; exit 1; }
  ls "$dist"
  [ "$step" = build ] && exit 0
fi
echo "== a fresh venv with the wheel (not editable) and torch"
"$py" -m venv "$work/venv"
v="$work/venv/bin"
"$v/python" -m pip install -q --upgrade pip
"$v/python" -m pip install -q torch==2.13.0
whl=$(ls "$dist"/seer_env-*.whl)
"$v/python" -m pip install -q "$whl[numba]" pytest
export SEER_ENV_CACHE="$work/cache"
mkdir "$work/user" && cd "$work/user"
"$v/python" - <<'PY'
import seer_env, pathlib
assert "site-packages" in seer_env.__file__, seer_env.__file__
from seer_env.envs import pcs_v0
assert pcs_v0.MODEL.build() == "package", "the shipped model must come with the wheel"
print("installed:", pathlib.Path(seer_env.__file__).parent)
PY
echo "== seer-env new / build / check / run / its tests, outside the tree"
"$v/seer-env" --version
"$v/seer-env" new mymodel
"$v/seer-env" build mymodel
"$v/seer-env" check mymodel --quick
"$v/seer-env" run mymodel --steps 50 --quiet
"$v/python" -m pytest -q -p no:cacheprovider mymodel
echo "== a model with two agent groups, masks and multi-discrete actions: new --groups"
"$v/seer-env" new mygroups --groups
"$v/seer-env" build mygroups
"$v/seer-env" check mygroups --quick
"$v/seer-env" run mygroups --steps 30 --quiet
"$v/python" -m pytest -q -p no:cacheprovider mygroups
echo "== the example model: check, PettingZoo's parallel_api_test, PPO updates"
"$v/seer-env" check "$root/examples/traffic" --quick
"$v/python" - "$root/examples/traffic" <<'PY'
import sys
from pettingzoo.test import parallel_api_test
import seer_env
model = seer_env.sdk.load(sys.argv[1])
parallel_api_test(model.parallel_env(max_cycles=40), num_cycles=50)
PY
"$v/python" "$root/examples/ppo.py" --env "$root/examples/traffic" --smoke
"$v/python" "$root/examples/ppo.py" --env mymodel --smoke
echo "== a model written in Python: new --python / build / check / its tests / PPO updates"
"$v/seer-env" new mypymodel --python
"$v/seer-env" build mypymodel
"$v/seer-env" check mypymodel --quick
"$v/python" -m pytest -q -p no:cacheprovider mypymodel
"$v/python" "$root/examples/ppo.py" --env mypymodel --smoke
echo "== seer-env bench from the installed wheel (no repository needed)"
"$v/seer-env" bench phold --quick
echo "== the documentation site from the installed wheel (mkdocs build --strict)"
# as a user builds it: the wheel's [docs] extra, the pages and mkdocs.yml (with
# the files they include) copied out of the tree, the API read from site-packages
"$v/python" -m pip install -q "$whl[docs]"
site_src="$work/site-src"
mkdir -p "$site_src/benchmarks"
cp -r "$root/docs" "$root/mkdocs.yml" "$root/README.md" "$root/CHANGELOG.md" "$site_src/"
cp -r "$root/benchmarks/results" "$root/benchmarks/results_marks.py" "$site_src/benchmarks/"
for d in "$root"/envs/*/; do
  if [ -f "$d/README.md" ]; then
    mkdir -p "$site_src/envs/$(basename "$d")" && cp "$d/README.md" "$site_src/envs/$(basename "$d")/"
  fi
done
(cd "$site_src" && [ ! -e seer_env ] \
  && NO_MKDOCS_2_WARNING=1 "$v/mkdocs" build --strict -d "$work/site")
grep -q 'id="seer_env.env.SeerParallelEnv"' "$work/site/api/envs/index.html"
echo "wheel smoke test: all passed"
