#!/usr/bin/env bash
# The per-event path's instruction counts under callgrind: PHOLD on the serial
# executor (benchmarks/callgrind_schedule.c), the runtime built with the
# extension's flags (-O2, seer_env/_bind/build.py).  Prints the events handled, and
# Ir per event of the whole run of the steps (seer_runtime_step, inclusive),
# of seer_schedule (inclusive) and of the event loop (seer_run_queue,
# inclusive).  Compare two versions of the runtime with the same arguments.
# Usage: benchmarks/callgrind_schedule.sh [steps] [entities]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rt="$root/native/runtime"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
[ -n "${KEEP:-}" ] && trap - EXIT && echo "files: $out"
CC=${CC:-gcc}
# the runtime links the C library's generators and clocks through checking
# wrappers (as seer_env/_bind/build.py and tests/native/run_sanitizers.sh do)
wrap=()
for f in $(python3 -c "import ast,sys; t=ast.parse(open(sys.argv[1]).read()); print(' '.join(next(ast.literal_eval(n.value) for n in t.body if isinstance(n, ast.Assign) and getattr(n.targets[0], 'id', '') == 'WRAPPED')))" "$root/seer_env/_bind/build.py"); do
  wrap+=("-Wl,--wrap=$f")
done
"$CC" -std=c11 -O2 -g -ffp-contract=off -fno-strict-aliasing -Wall -Wextra -Werror -pthread \
  -I"$root/native/include" -I"$rt" -I"$root/envs/phold_v0" \
  "$root/benchmarks/callgrind_schedule.c" "$rt"/*.c "$root/envs/phold_v0/phold.c" \
  "${wrap[@]}" -o "$out/driver" -lm
steps=${1:-200}
ents=${2:-256}
(cd "$out" && valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" \
   --toggle-collect=seer_runtime_step "$out/driver" "$steps" "$ents" 2>/dev/null) > "$out/run.txt"
cat "$out/run.txt"
events=$(awk '{print $2}' "$out/run.txt")
callgrind_annotate --inclusive=yes "$out/cg.out" 2>/dev/null > "$out/ann.txt"
total=$(awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}' "$out/ann.txt")
fn() { awk -v f="$1" '$0 ~ (":" f "[ (]") || $0 ~ (":" f "$") {gsub(",", "", $1); print $1; exit}' "$out/ann.txt"; }
sched=$(fn seer_schedule)
loop=$(fn seer_run_queue)
python3 - "$events" "$total" "${sched:-0}" "${loop:-0}" <<'PY'
import sys
ev, total, sched, loop = (int(x) for x in sys.argv[1:])
print(f"Ir per event: steps {total / ev:.1f}, seer_schedule {sched / ev:.1f}, "
      f"event loop (seer_run_queue) {loop / ev:.1f}")
PY
