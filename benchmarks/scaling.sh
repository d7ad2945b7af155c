#!/usr/bin/env bash
# Thread scaling on a many-core machine, one command:
#
#   bash benchmarks/scaling.sh [MAX_THREADS=16] [OUT=scaling_out]
#
# Installs seer_env with the [bench] extra into ./.venv (if needed), then runs
# `python benchmarks/bench_suite.py scaling`: PHOLD 4096 (work ~1 us/event and work=0; and with
# a lookahead too small for windows), default PCS 64x64 and classic PCS 64x64
# (lookahead 0): the serial executor, the parallel executor with 1..MAX_THREADS
# threads and the optimistic one with 2..MAX_THREADS (with its rollback
# counts), interleaved rounds, medians.  Writes OUT/bench_scaling.json,
# OUT/scaling.png and prints the markdown table.  Run it with no other load on
# the machine; threads beyond the usable CPUs oversubscribe (and say so).
set -euo pipefail
cd "$(dirname "$0")/.."
MAX=${1:-16}
OUT=${2:-scaling_out}
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q -e '.[bench]'
CPUS=$(.venv/bin/python -c 'import os; print(len(os.sched_getaffinity(0)))')
if [ "$CPUS" -lt "$MAX" ]; then
  echo "note: $CPUS usable CPUs < $MAX threads: the larger pools oversubscribe" >&2
fi
.venv/bin/python benchmarks/bench_suite.py scaling --max-threads "$MAX" -o "$OUT"
