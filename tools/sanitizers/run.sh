#!/usr/bin/env bash
# tools/test.sh --sanitize [address,undefined|thread] [ctest args...]
#
# Builds libfastnn, the launcher, the host library and the test hosts with -DFASTNN_SANITIZE
# (build-san for address,undefined; build-tsan for thread), runs every spec file through ctest
# there, and prints "N passed, N failed". Each spec runs through tools/sanitizers/busted.sh,
# whose luajit (tools/sanitizers/bin/luajit) LD_PRELOADs the compiler's sanitizer runtime into
# the uninstrumented luajit. Every
# sanitizer report (from a spec or any process it spawns) goes to <build>/sanitizer-reports/,
# is printed at the end and counts as a failure, even when the spec itself passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
kind=address,undefined
case "${1:-}" in ''|-*) ;; *) kind=$1; shift ;; esac
case "$kind" in
  thread) dir=build-tsan ;;
  *) dir=build-san ;;
esac
JOBS=$(nproc 2>/dev/null || echo 2)
busted_exe=$(command -v busted) || { echo "busted not found"; exit 1; }
start=$(date +%s)
echo "== sanitizer build ($kind) in $dir"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DFASTNN_SANITIZE="$kind" \
      -DBUSTED_EXE="$root/tools/sanitizers/busted.sh" >/dev/null || exit 1
cmake --build "$dir" -j"$JOBS" || exit 1

# the runtime the library was linked against, from the compiler that built it
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt")
runtime() {   # runtime <gcc name> <clang name>: gcc's libasan.so, clang's libclang_rt.asan-x86_64.so
  local f names=("$@")
  "$cc" --version 2>/dev/null | grep -qi clang && names=("$2")
  for name in "${names[@]}"; do
    f=$("$cc" -print-file-name="$name" 2>/dev/null)
    if [ -n "$f" ] && [ "$f" != "$name" ] && [ -e "$f" ]; then echo "$f"; return; fi
  done
}
reports="$root/$dir/sanitizer-reports"
rm -rf "$reports"; mkdir -p "$reports"
supp="$root/tools/sanitizers"
export FASTNN_SAN_BUSTED="$busted_exe"
FASTNN_SAN_LUAJIT=$(command -v luajit) || { echo "luajit not found"; exit 1; }
export FASTNN_SAN_LUAJIT
export FASTNN_HOST_CFLAGS="-fsanitize=$kind -fno-omit-frame-pointer"   # specs that compile a C host
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp:log_path=$reports/ubsan"
if [ "$kind" = thread ]; then
  FASTNN_SAN_PRELOAD=$(runtime libtsan.so libclang_rt.tsan-x86_64.so)
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1:suppressions=$supp/tsan.supp:log_path=$reports/tsan"
  # OpenBLAS's threads are not instrumented (TSan cannot see their barriers; the TSan build has no
  # OpenMP for the same reason): one thread, so the specs' host threads are what TSan checks (tsan.supp)
  export FASTNN_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
else
  FASTNN_SAN_PRELOAD=$(runtime libasan.so libclang_rt.asan-x86_64.so)
  # allocator_may_return_null: a failed huge allocation is an error the core reports (oom_spec)
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=0:log_path=$reports/asan"
  # use_tls=0: GCC 12's LeakSanitizer crashes ("Tracer caught signal 11") scanning the dynamic
  # TLS of OpenMP workers that ran oneDNN (dlopen'ed, thread_local state) and never reports then;
  # libfastnn keeps nothing only in thread-local storage at exit (per-thread caches are drained)
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:use_tls=0"
fi
[ -n "$FASTNN_SAN_PRELOAD" ] || { echo "no sanitizer runtime found for $cc ($kind)"; exit 1; }
export FASTNN_SAN_PRELOAD

echo "== specs under $kind"
(cd "$dir" && ctest -j"$JOBS" --output-on-failure "$@")
log=$dir/Testing/Temporary/LastTest.log
passed=0; failed=0
if [ -f "$log" ]; then
  # per ctest entry: busted's "<n> successes / <n> failures / <n> errors / <n> pending"; an entry
  # that failed with a clean summary (a sanitizer report at exit) or with none counts as one failure
  read -r passed failed < <(awk '
    / Test: / { name = $3; s = 0; f = 0; seen = 0 }
    /^[0-9]+ success(es)? \/ [0-9]+ failures? \/ [0-9]+ errors? \/ [0-9]+ pending/ { s += $1; f += $4 + $7 + $10; seen = 1 }
    /^Test Passed\./ { P += s; F += f }
    /^Test Failed\./ { P += s; F += (f > 0 ? f : 1) }
    END { print P + 0, F + 0 }' "$log")
fi
# a report is a file with an error; files with only warnings (ASan's "failed to allocate" for the
# allocations oom_spec makes fail on purpose) are not
mapfile -t found < <(grep -lE 'ERROR: |runtime error:|WARNING: ThreadSanitizer' "$reports"/* 2>/dev/null)
if [ "${#found[@]}" -gt 0 ]; then
  echo "== ${#found[@]} sanitizer report(s):"
  for f in "${found[@]}"; do echo "--- $f"; head -80 "$f"; done
  failed=$((failed + ${#found[@]}))
fi
echo "sanitizer pass ($kind): $(( $(date +%s) - start )) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
