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
# OUT/scaling.png and prints the markdown table.  Then the executors in
# company at the same sizes (`seer-env bench company --threads 2,4,..,MAX`,
# up to the usable CPUs:
# alone, beside a CPU burner at full duty, 4 (and MAX/2) env processes sharing
# the cores, and a torch training loop where torch is installed), writing
# OUT/company.json and printing its table.  Run it with no other load on the
# machine; threads beyond the usable CPUs oversubscribe (and say so).
# COMPANY=0 skips the company run; COMPANY_ARGS adds options to it (--quick).
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
TOP=$((MAX < CPUS ? MAX : CPUS)) # (company measures pools of the usable cores only)
if [ "${COMPANY:-1}" != 0 ] && [ "$TOP" -ge 2 ]; then
  THREADS=2
  t=4
  while [ "$t" -le "$TOP" ]; do THREADS="$THREADS,$t"; t=$((t * 2)); done
  case ",$THREADS," in *",$TOP,"*) ;; *) [ "$TOP" -gt 2 ] && THREADS="$THREADS,$TOP" ;; esac
  SITUATIONS=alone,torch,burner-100,procs-4
  if [ $((TOP / 2)) -gt 4 ]; then SITUATIONS="$SITUATIONS,procs-$((TOP / 2))"; fi
  SEER_STPA_CACHE=0 .venv/bin/seer-env bench company --threads "$THREADS" \
    --situations "$SITUATIONS" --json "$OUT/company.json" ${COMPANY_ARGS:-}
fi
