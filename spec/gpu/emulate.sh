#!/bin/sh
# spec/gpu/emulate.sh: run the CUDA parity specs (spec/cuda_parity*_spec.lua) against the CUDA
# backend's kernels emulated on the host (spec/gpu/emulated*.cpp, -DFASTNN_CUDA_EMULATED=ON), for a
# machine without a GPU. It checks the core's device dispatch (every op, backward rule and
# optimizer step that reaches the backend table) and the kernels' logic (expressions, strides, the
# warp/block reductions, line geometry) against the CPU path. It is not a GPU run: nothing here
# counts as verified on a GPU (spec/gpu/check.sh is).
#   sh spec/gpu/emulate.sh                    # every parity spec, and registry_spec (the CUDA rows)
#   sh spec/gpu/emulate.sh spec/cuda_parity_spec.lua [busted args]
# Env: BUILD (default build-emu), JOBS (default 2).
set -eu
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/${BUILD:-build-emu}
cmake -S "$root" -B "$out" -DFASTNN_CUDA_EMULATED=ON -DCMAKE_BUILD_TYPE=Release -DFASTNN_WERROR="${FASTNN_WERROR:-OFF}" >/dev/null
cmake --build "$out" -j "${JOBS:-2}" --target fastnn >/dev/null
case "${1:-}" in
   spec/*) ;;
   *) set -- spec/cuda_parity*_spec.lua spec/registry_spec.lua "$@" ;;
esac
# one busted process for every file, not insulated: FFI metatypes are per process, so each file must
# see the same fastnn. The last line counts the cases as CI's other steps do.
log=$out/parity.log
set +e
{ FASTNN_LIB="$out/libfastnn.so" FASTNN_EMULATED_GPU=1 LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;" \
     busted --lua=luajit --no-auto-insulate "$@"; echo $? > "$log.rc"; } 2>&1 | tee "$log"
set -e
# (busted says "1 success", "1 failure", "1 error" in the singular)
counts=$(grep -aE '[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors?' "$log" | tail -1 | sed 's/\x1b\[[0-9;]*m//g')
passed=$(echo "$counts" | sed -n 's/^\([0-9]*\) success.*/\1/p')
failed=$(echo "$counts" | sed -n 's/.* \([0-9]*\) failures\{0,1\} \/ \([0-9]*\) errors\{0,1\}.*/\1 \2/p' | awk '{print $1 + $2}')
rc=$(cat "$log.rc")
[ -n "$passed" ] || { passed=0; failed=1; }
echo "${passed} passed, ${failed} failed"
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]
