#!/usr/bin/env bash
# Build and run the runtime's stress tests plain, under ThreadSanitizer and
# under AddressSanitizer + UndefinedBehaviorSanitizer.  Exits non-zero on any
# failure or sanitizer report.  Usage: native/tests/run_sanitizers.sh [plain|tsan|asan]...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$here/bin"
mkdir -p "$out"
CC=${CC:-gcc}
common=(-std=c11 -O1 -g -ffp-contract=off -Wall -Wextra -Werror -pthread
        -I"$root/native/include" -I"$root/envs/phold")
runtime_src=("$root"/native/src/*.c "$root/envs/phold/phold.c")
modes=("$@")
[ ${#modes[@]} -eq 0 ] && modes=(plain tsan asan)
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
export ASAN_OPTIONS="halt_on_error=1 detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
for mode in "${modes[@]}"; do
  case "$mode" in
    plain) flags=() ;;
    tsan) flags=(-fsanitize=thread) ;;
    asan) flags=(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all) ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
  echo "== $mode"
  for t in stress_phases; do
    "$CC" "${common[@]}" "${flags[@]}" "$here/$t.c" -o "$out/$t-$mode" -lm
    "$out/$t-$mode"
  done
  "$CC" "${common[@]}" "${flags[@]}" -I"$root/native/src" "$here/test_squeue.c" \
    "$root/native/src/squeue.c" -o "$out/test_squeue-$mode" -lm
  "$out/test_squeue-$mode"
  "$CC" "${common[@]}" "${flags[@]}" "$here/stress_runtime.c" "${runtime_src[@]}" \
    -o "$out/stress_runtime-$mode" -lm
  "$out/stress_runtime-$mode"
done
echo "sanitizer runs: all passed"
