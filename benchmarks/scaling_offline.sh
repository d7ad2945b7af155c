#!/usr/bin/env bash
# Thread scaling and the executors in company on a many-core machine that
# reaches no package index (a lent accelerator box: how
# benchmarks/results/scaling_16cores.json and company_16cores*.json were made).
#
#   bash benchmarks/scaling_offline.sh prepare [PYTHON=python3.12] [WHEELS=.whl]
#       here, with network: a wheel of this checkout built for PYTHON's
#       version, and the wheels of the dependencies the other machine lacks
#       (cffi, pycparser, gymnasium, pettingzoo, farama-notifications), in
#       WHEELS (ignore that folder in git: `echo /.whl/ >> .git/info/exclude`)
#   bash benchmarks/scaling_offline.sh run OUT [MAX=16] [THREADS=2,4,8,16] [SITUATIONS]
#       there, in a copy of the checkout holding WHEELS (.whl): installs them
#       into /tmp/site, then `bench_suite.py scaling --max-threads MAX` (OUT/scaling/)
#       and `seer-env bench company --threads THREADS` (OUT/company.json), each
#       with a time limit; the machine's description in OUT/machine.txt.
#
# The other machine needs numpy, typing_extensions, tqdm, cloudpickle (and
# torch for the company situations that train, matplotlib for the plot).  The
# results files carry no commit there (no git): stamp it after copying them.
set -u
cmd=${1:-}
case "$cmd" in
prepare)
  PY=${2:-python3.12}; W=${3:-.whl}
  VER=$($PY -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
  rm -rf /tmp/seer-offline-venv && $PY -m venv /tmp/seer-offline-venv || exit 1
  /tmp/seer-offline-venv/bin/pip install -q "setuptools>=77" wheel cffi "numpy>=2" || exit 1
  mkdir -p "$W" && rm -f "$W"/seer_env-*.whl
  /tmp/seer-offline-venv/bin/pip wheel -q --no-deps --no-build-isolation -w "$W" . || exit 1
  /tmp/seer-offline-venv/bin/pip download -q --no-deps --only-binary=:all: \
    --python-version "$VER" --implementation cp --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$W" \
    cffi pycparser gymnasium pettingzoo farama-notifications || exit 1
  ls "$W" ;;
run)
  OUT=${2:?OUT folder}; MAX=${3:-16}; TH=${4:-2,4,8,16}
  SIT=${5:-alone,torch,burner-100,procs-4,procs-8,envs-4,async}
  PY=${PYTHON:-python3}; REPO=$(pwd)
  mkdir -p "$OUT"
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site SEER_STPA_CACHE=0 PYTHONUNBUFFERED=1
  # outside the checkout, whose seer_env/ (no compiled modules) would shadow the wheel's
  rm -rf /tmp/seer-run && mkdir -p /tmp/seer-run/benchmarks
  cp -r "$REPO/oracles" /tmp/seer-run/ && cp "$REPO/benchmarks/bench_suite.py" /tmp/seer-run/benchmarks/
  cd /tmp/seer-run
  { nproc; $PY -c "import os, seer_env; print('usable', len(os.sched_getaffinity(0)), seer_env.__version__)"
    lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|NUMA"; uptime; } 2>&1 | tee "$OUT/machine.txt"
  t0=$(date +%s)
  timeout 280 $PY benchmarks/bench_suite.py scaling --max-threads "$MAX" -o "$OUT/scaling" \
    > "$OUT/scaling.log" 2>&1
  echo "scaling rc $? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/machine.txt"
  tail -30 "$OUT/scaling.log"
  t0=$(date +%s)
  timeout 260 $PY -m seer_env.cli bench company --threads "$TH" --situations "$SIT" \
    -o "$OUT/company.json" > "$OUT/company.log" 2>&1
  echo "company rc $? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/machine.txt"
  tail -40 "$OUT/company.log" ;;
*)
  echo "usage: bash benchmarks/scaling_offline.sh prepare [PYTHON] [WHEELS] | run OUT [MAX] [THREADS] [SITUATIONS]" >&2
  exit 2 ;;
esac
