#!/usr/bin/env bash
# Builds fastnn-lua and runs every spec (one ctest entry per spec file), then
# prints one line: "N passed, N failed" counted over all specs.
# With nvcc on the machine it also builds the CUDA backend (-DFASTNN_CUDA=ON)
# so GPU code never rots; the GPU parity spec runs on a GPU machine (spec/gpu/check.sh).
#
# tools/test.sh --sanitize [address,undefined|thread] [ctest args...]
#   builds build-san (ASan+UBSan, the default) or build-tsan (TSan) with -DFASTNN_SANITIZE and runs
#   every spec there instead (tools/sanitizers/run.sh; ctest args such as -R host_threads pick specs).
# tools/test.sh --portable
#   the portable build (-DFASTNN_ONEDNN=OFF: every GEMM through OpenBLAS) in build-portable, and
#   every spec there; no CUDA build.
# FASTNN_WERROR=ON (as CI sets it): a warning in the C, C++ or CUDA code fails the build.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  shift
  exec bash tools/sanitizers/run.sh "$@"
fi
dir=build
onednn=ON
if [ "${1:-}" = "--portable" ]; then
  shift
  dir=build-portable
  onednn=OFF
fi
JOBS=$(nproc 2>/dev/null || echo 2)
# with Open MPI present, libfastnn_dist too, and its mpirun specs must run (FASTNN_REQUIRE_MPI)
mpi=OFF
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
  mpi=ON
  export FASTNN_REQUIRE_MPI=1
fi
echo "== build in $dir (-DFASTNN_ONEDNN=$onednn)"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DFASTNN_MPI=$mpi -DFASTNN_ONEDNN=$onednn \
  -DFASTNN_WERROR="${FASTNN_WERROR:-OFF}" >/dev/null || exit 1
cmake --build "$dir" -j"$JOBS" || exit 1
cuda_failed=0
if [ "$dir" = build ] && { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }; then
  export PATH="$PATH:/usr/local/cuda/bin"
  # one architecture keeps the never-rot compile short; a release build makes the fat binary
  # (CMakeLists.txt's default list). FASTNN_CUDA_ARCHS overrides.
  archs=${FASTNN_CUDA_ARCHS:-90}
  echo "== CUDA build (-DFASTNN_CUDA=ON, sm_$archs, NCCL path with -DFASTNN_MPI=$mpi)"
  if ! { cmake -S . -B build-cuda -DCMAKE_BUILD_TYPE=Release -DFASTNN_CUDA=ON -DFASTNN_MPI=$mpi \
           -DCMAKE_CUDA_ARCHITECTURES="$archs" -DFASTNN_WERROR="${FASTNN_WERROR:-OFF}" >/dev/null && cmake --build build-cuda -j"$JOBS"; }; then
    echo "CUDA build FAILED"
    cuda_failed=1
  fi
fi
echo "== specs"
(cd "$dir" && ctest -j"$JOBS" --output-on-failure)
log=$dir/Testing/Temporary/LastTest.log
passed=0; failed=0
if [ -f "$log" ]; then
  # busted prints "<n> successes / <n> failures / <n> errors / <n> pending" per spec file
  read -r passed failed < <(grep -aE '^[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors? / [0-9]+ pending' "$log" |
    awk '{p += $1; f += $4 + $7 + $10} END {print p + 0, f + 0}')
  # a ctest entry (a spec file, or a bf16 spec's _native run) that crashed before printing its summary
  # counts as one failure
  summaries=$(grep -acE '^[0-9]+ success(es)? / ' "$log")
  entries=$(cd "$dir" && ctest -N | sed -n 's/^Total Tests: //p')   # rewrites $log: after the counts
  [ "$summaries" -lt "$entries" ] && failed=$((failed + entries - summaries))
fi
failed=$((failed + cuda_failed))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
