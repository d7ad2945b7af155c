#!/usr/bin/env bash
# Build and run the runtime's stress tests plain, under ThreadSanitizer and
# under AddressSanitizer + UndefinedBehaviorSanitizer; and (fast) the tests of
# the Python layer's C extension seer_env._fast with it built under ASan+UBSan.
# Exits non-zero on any failure or sanitizer report.
# Usage: tests/native/run_sanitizers.sh [plain|tsan|asan|fast]...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rt="$root/native/runtime"
inc="$root/native/include"
phold="$root/envs/phold_v0"
out="$here/bin"
mkdir -p "$out"
CC=${CC:-gcc}
common=(-std=c11 -O1 -g -ffp-contract=off -Wall -Wextra -Werror -pthread -I"$inc" -I"$rt"
        -I"$phold")
# the runtime links the C library's generators and clocks through checking
# wrappers (seer_env/_bind/build.py passes the same flags)
wrap=()
for f in $(python3 -c "import ast,sys; t=ast.parse(open(sys.argv[1]).read()); print(' '.join(next(ast.literal_eval(n.value) for n in t.body if isinstance(n, ast.Assign) and getattr(n.targets[0], 'id', '') == 'WRAPPED')))" "$root/seer_env/_bind/build.py"); do
  wrap+=("-Wl,--wrap=$f")
done
runtime_src=("$rt"/*.c "$phold/phold.c")
# the runtime's objects, compiled once a mode (and once more with the failure
# injection) and linked into each test: one build of each instead of one a
# test, the sources compiled a core each (xargs -P)
jobs=$(nproc 2>/dev/null || echo 2)
compile_runtime() {  # folder, then the flags
  local dir=$1
  shift
  rm -rf "$dir"
  mkdir -p "$dir"
  # shellcheck disable=SC2016 # expanded by the inner bash
  printf '%s\n' "${runtime_src[@]}" | DIR=$dir xargs -P "$jobs" -I{} bash -c \
    '"$CC" "$@" -c "$0" -o "$DIR/$(basename "${0%.c}").o"' {} "$@"
  runtime_obj=("$dir"/*.o)
}
export CC
modes=("$@")
[ ${#modes[@]} -eq 0 ] && modes=(plain tsan asan fast)
# stress_failures: the pass that fails every call from the k-th on runs at
# every k plain and under ASan, at every 8th under TSan, and the pass that
# fails the k-th allocation alone at every k, at every 2nd under TSan (which
# is slow: each mode's run of the test stays within about a minute on 2 cores)
declare -A fi_stride=([plain]="1 1" [tsan]="8 2" [asan]="1 1")
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
export ASAN_OPTIONS="halt_on_error=1 detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
# seer_env._fast (CPython's and NumPy's C APIs) under ASan+UBSan: a copy of the
# built package whose _fast is the sanitized build, imported by the tests of the
# batched and dict APIs (the interpreter preloads the sanitizer runtimes; leaks
# are CPython's own business here)
run_fast() {
  local py=${SEER_PYTHON:-$root/.venv/bin/python}
  [ -x "$py" ] || py=python3
  local tmp
  tmp=$(mktemp -d)
  cp -r "$root/seer_env" "$root/native" "$root/envs" "$tmp/"
  local so
  so=$("$py" -c "import sysconfig; print('_fast' + sysconfig.get_config_var('EXT_SUFFIX'))")
  "$CC" -shared -fPIC -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
    -fno-sanitize-recover=all -Wall -Wextra -Werror \
    -I"$("$py" -c "import sysconfig; print(sysconfig.get_paths()['include'])")" \
    -I"$("$py" -c "import numpy; print(numpy.get_include())")" \
    "$root/native/fast/_fast.c" "$root/native/fast/gate.c" -o "$tmp/seer_env/$so"
  local pre
  pre="$("$CC" -print-file-name=libasan.so):$("$CC" -print-file-name=libubsan.so)"
  (cd "$tmp" && ASAN_OPTIONS="halt_on_error=1 detect_leaks=0" LD_PRELOAD="$pre" \
     "$py" -c "import seer_env._fast as f, sys; assert f.__file__.startswith(sys.argv[1]), f.__file__" "$tmp" &&
   ASAN_OPTIONS="halt_on_error=1 detect_leaks=0" LD_PRELOAD="$pre" \
     "$py" -m pytest -q -p no:cacheprovider "$root/tests/test_fastpath.py" \
     "$root/tests/test_vector_api.py" "$root/tests/test_gym_vector.py" "$root/tests/test_pcs_env.py")
  rm -rf "$tmp"
}
for mode in "${modes[@]}"; do
  if [ "$mode" = fast ]; then
    echo "== fast (seer_env._fast under ASan+UBSan) ($(date +%T))"
    run_fast
    continue
  fi
  case "$mode" in
    plain) flags=() ;;
    tsan) flags=(-fsanitize=thread) ;;
    asan) flags=(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all) ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
  echo "== $mode ($(date +%T))"
  "$CC" "${common[@]}" "${flags[@]}" "$here/stress_phases.c" "$rt/park.c" -o "$out/stress_phases-$mode" -lm
  "$out/stress_phases-$mode"
  "$CC" "${common[@]}" "${flags[@]}" "$here/test_squeue.c" "$rt/squeue.c" \
    -o "$out/test_squeue-$mode" -lm
  "$out/test_squeue-$mode"
  # the building blocks of the optimistic executor, alone (spsc_ring.h,
  # arena.h, vec.h: header-only)
  for t in stress_spsc test_arena test_vec; do
    "$CC" "${common[@]}" "${flags[@]}" "$here/$t.c" -o "$out/$t-$mode"
    "$out/$t-$mode"
  done
  compile_runtime "$out/obj-$mode" "${common[@]}" "${flags[@]}"
  plain_obj=("${runtime_obj[@]}")
  compile_runtime "$out/obj-$mode-faults" "${common[@]}" \
    "${flags[@]}" -DSEER_FAULT_INJECTION
  fault_obj=("${runtime_obj[@]}")
  "$CC" "${common[@]}" "${flags[@]}" "$here/stress_runtime.c" "${plain_obj[@]}" \
    "${wrap[@]}" -o "$out/stress_runtime-$mode" -lm
  "$out/stress_runtime-$mode"
  # snapshots: restored on every executor; damaged ones refused, read within bounds
  "$CC" "${common[@]}" "${flags[@]}" "$here/test_snapshot.c" "${plain_obj[@]}" \
    "${wrap[@]}" -o "$out/test_snapshot-$mode" -lm
  "$out/test_snapshot-$mode"
  # free event records in address order after a switch to serial and a reset
  "$CC" "${common[@]}" "${flags[@]}" "$here/test_event_order.c" "${plain_obj[@]}" \
    "${wrap[@]}" -o "$out/test_event_order-$mode" -lm
  "$out/test_event_order-$mode"
  # pending events moved into address order (serial, parallel, optimistic)
  "$CC" "${common[@]}" "${flags[@]}" "$here/test_event_relayout.c" "${plain_obj[@]}" \
    "${wrap[@]}" -o "$out/test_event_relayout-$mode" -lm
  "$out/test_event_relayout-$mode"
  # a pool's alone stretches: the policy, and real steps through them
  "$CC" "${common[@]}" "${flags[@]}" -DSEER_FAULT_INJECTION "$here/test_pool_alone.c" \
    "${fault_obj[@]}" "${wrap[@]}" -o "$out/test_pool_alone-$mode" -lm
  "$out/test_pool_alone-$mode"
  # every allocation and thread creation of the runtime failed in turn: the
  # only build with the failure injection (faults.h, faults.c)
  "$CC" "${common[@]}" "${flags[@]}" -DSEER_FAULT_INJECTION "$here/stress_failures.c" \
    "${fault_obj[@]}" "${wrap[@]}" -o "$out/stress_failures-$mode" -lm
  # shellcheck disable=SC2086 # two arguments
  "$out/stress_failures-$mode" ${fi_stride[$mode]}
  # again with the pending events relaid after every serial reset and
  # switch, and every pool's lists ordered (relaid) at each chance: their
  # allocations fail in turn too (not under TSan: single-threaded host code)
  if [ "$mode" != tsan ]; then
    # shellcheck disable=SC2086
    SEER_RELAYOUT=1 SEER_ORDER_POOLS=1 "$out/stress_failures-$mode" ${fi_stride[$mode]}
  fi
done
echo "sanitizer runs: all passed ($(date +%T))"
