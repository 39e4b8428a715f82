#!/bin/sh
# spec/gpu/check.sh: the GPU check, for a machine with an NVIDIA GPU and the CUDA toolkit.
# Builds the CUDA backend into build-gpu, refuses to go on unless the build sees a GPU
# (without one, cuda_parity_spec.lua only checks the "no device" message and would pass),
# then runs the CPU-vs-GPU parity spec and prints one summary (no case may skip).
#   sh spec/gpu/check.sh            # from anywhere; extra args go to busted
# Env: CUDA_ARCHS (default 80;90), JOBS (default: all cores).
# Without a GPU, spec/gpu/emulate.sh runs the same spec against the kernels emulated on the host.
set -eu
cd "$(dirname "$0")/../.."
root=$PWD
build=$root/build-gpu

command -v nvcc >/dev/null || { echo "check.sh: nvcc not on PATH (add /usr/local/cuda/bin)" >&2; exit 2; }
command -v busted >/dev/null || { echo "check.sh: busted not found (luarocks install busted)" >&2; exit 2; }
command -v nvidia-smi >/dev/null && nvidia-smi -L || true

cmake -S "$root" -B "$build" -DFASTNN_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
      "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-80;90}" >/dev/null
cmake --build "$build" -j "${JOBS:-$(nproc)}"

export FASTNN_LIB="$build/libfastnn.so"
export LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;"
luajit -e '
local fnn = require "fastnn"
local gpu, why = fnn.Device.cuda(0)
if not gpu then io.stderr:write("check.sh: the CUDA build sees no GPU: ", why, "\n") os.exit(1) end
print(("check.sh: %s, %d GPU(s)"):format(tostring(gpu), fnn.Device.count("cuda")))'

# the parity specs (spec/cuda_parity*_spec.lua: every family the backend implements),
# then one summary: busted's counts, and how many cases skipped (must be 0 on a GPU machine)
log=$build/parity.log
start=$(date +%s)
set +e
{ busted --lua=luajit -o utfTerminal "$@" spec/cuda_parity*_spec.lua; echo $? > "$log.rc"; } 2>&1 | tee "$log"
set -e
rc=$(cat "$log.rc")   # busted's status, not tee's (sh has no pipefail)
skipped=$(grep -c 'skipped: no CUDA device' "$log" || true)
echo "check.sh summary: $(grep -E '[0-9]+ successes' "$log" | tail -1 | sed 's/\x1b\[[0-9;]*m//g')"
echo "check.sh summary: $skipped case(s) skipped, parity spec took $(( $(date +%s) - start )) s, exit $rc"
[ "$skipped" -eq 0 ] || { echo "check.sh: cases were skipped on a GPU machine" >&2; exit 1; }
exit "$rc"
