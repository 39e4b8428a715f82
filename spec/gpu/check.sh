#!/bin/sh
# spec/gpu/check.sh: the GPU check, for a machine with an NVIDIA GPU and the CUDA toolkit (an H200:
# under 8 minutes in all). Builds the CUDA backend into build-gpu, refuses to go on unless the build
# sees a GPU (without one, the parity specs only check the "no device" message and would pass), runs
# every CPU-vs-GPU parity spec (spec/cuda_parity*_spec.lua), then the GPU benchmarks (bench/gpu/), each
# under a timeout, and prints one summary: the parity counts, the skipped count (must be 0), each
# benchmark's figure, fastnn's sgemm against cuBLAS called directly (target >= 90% at 4096), and the
# mlp_fmnist epoch and char_gpt step against this repository's CPU figures (target >= 5x).
#   sh spec/gpu/check.sh            # from anywhere; extra args go to busted
# Env: CUDA_ARCHS (default 90: the H200; the default fat binary would cost build minutes), JOBS
# (default: all cores), CHECK_SPECS (default: every spec/cuda_parity*_spec.lua).
# CHECK_DRY_RUN=1: this script's logic on a machine without a GPU: no nvcc build, BUILD (default
# build-xfer-emu) is built with -DFASTNN_CUDA_EMULATED=ON (spec/gpu/emulate.sh's kernels on the host),
# the benchmarks run with FASTNN_GPU_BENCH_SMOKE=1 (tiny sizes) and cuBLAS is absent: the figures
# mean nothing, the plumbing (timeouts, parsing, the summary) is what it checks.
# Without a GPU, spec/gpu/emulate.sh runs the same specs against the kernels emulated on the host.
set -eu
cd "$(dirname "$0")/../.."
root=$PWD
start_all=$(date +%s)

# This machine's CPU figures (2 cores, 2 threads), from the bench runs recorded in this repository:
#   mlp_fmnist epoch 0.423 s: bench/results/latest.md (2026-12-01 13:01, reps 3);
#   char_gpt step 75.5 ms and resnet_small step 96 ms (batch 64): README's bench table
#   (bench/run.sh --reps 3 char_gpt ... resnet_small, 2026-12-01 10:29).
CPU_MLP_S=${CPU_MLP_S:-0.423}
CPU_CHAR_GPT_MS=${CPU_CHAR_GPT_MS:-75.5}
CPU_RESNET_MS=${CPU_RESNET_MS:-96}

if [ "${CHECK_DRY_RUN:-0}" = 1 ]; then
   build=$root/${BUILD:-build-xfer-emu}
   echo "check.sh: DRY RUN on the host emulation ($build): nothing here is a GPU figure"
   cmake -S "$root" -B "$build" -DFASTNN_CUDA_EMULATED=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
   cmake --build "$build" -j "${JOBS:-2}" --target fastnn >/dev/null
   export FASTNN_EMULATED_GPU=1 FASTNN_GPU_BENCH_SMOKE=1
else
   build=$root/build-gpu
   command -v nvcc >/dev/null || { echo "check.sh: nvcc not on PATH (add /usr/local/cuda/bin)" >&2; exit 2; }
   if command -v nvidia-smi >/dev/null; then nvidia-smi -L || true; fi
   cmake -S "$root" -B "$build" -DFASTNN_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
         "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-90}" >/dev/null
   cmake --build "$build" -j "${JOBS:-$(nproc)}"
fi
command -v busted >/dev/null || { echo "check.sh: busted not found (luarocks install busted)" >&2; exit 2; }
build_s=$(( $(date +%s) - start_all ))

export FASTNN_LIB="$build/libfastnn.so"
export LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;"
luajit -e '
local fnn = require "fastnn"
local gpu, why = fnn.Device.cuda(0)
if not gpu then io.stderr:write("check.sh: the CUDA build sees no GPU: ", why, "\n") os.exit(1) end
print(("check.sh: %s, %d GPU(s)"):format(tostring(gpu), fnn.Device.count("cuda")))'

# ---- the parity specs, then busted's counts and how many cases skipped (must be 0 on a GPU machine)
log=$build/parity.log
start=$(date +%s)
set +e
# shellcheck disable=SC2086
{ timeout "${PARITY_TIMEOUT:-240}" busted --lua=luajit --no-auto-insulate -o utfTerminal "$@" ${CHECK_SPECS:-spec/cuda_parity*_spec.lua}
  echo $? > "$log.rc"; } 2>&1 | tee "$log"
set -e
rc=$(cat "$log.rc")   # busted's status, not tee's (sh has no pipefail); 124: the timeout
parity_s=$(( $(date +%s) - start ))
skipped=$(grep -c 'skipped: no CUDA device' "$log" || true)
counts=$(grep -E '[0-9]+ successes' "$log" | tail -1 | sed 's/\x1b\[[0-9;]*m//g')

# ---- the benchmarks: each under its own timeout; their RESULT / SKIPPED lines go to bench.log
blog=$build/bench.log
: > "$blog"
bench_failed=""
bench() {   # bench <name> <timeout s> <command...>
   name=$1 limit=$2
   shift 2
   echo "check.sh: benchmark $name (timeout ${limit} s)"
   t0=$(date +%s)
   set +e
   timeout "$limit" "$@" > "$build/$name.out" 2>&1
   brc=$?
   set -e
   cat "$build/$name.out"
   grep -E '^(RESULT|SKIPPED) ' "$build/$name.out" >> "$blog" || true
   echo "check.sh: benchmark $name: exit $brc, $(( $(date +%s) - t0 )) s"
   [ "$brc" -eq 0 ] || bench_failed="$bench_failed $name(exit $brc)"
}
bench gpu_sgemm 90 luajit bench/gpu/gpu_sgemm.lua
if [ -x "$build/cublas_sgemm" ]; then
   bench cublas_sgemm 90 "$build/cublas_sgemm"
else
   echo "SKIPPED cublas_sgemm: skipped: $build/cublas_sgemm not built (the CUDA build makes it)" | tee -a "$blog"
fi
bench gpu_mlp_fmnist 120 luajit bench/gpu/gpu_mlp_fmnist.lua
bench gpu_char_gpt 150 luajit bench/gpu/gpu_char_gpt.lua
bench gpu_resnet_small 120 luajit bench/gpu/gpu_resnet_small.lua

# value <RESULT name> <metric>: the figure, or empty
value() { sed -En "s/^RESULT $1( | .* )$2=([^ ]*).*/\2/p" "$blog" | tail -1; }
# ratio <a> <b> [scale]: a / b (or empty), and "pass"/"FAIL" against a minimum
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print ""; else printf "%.3f", a / b }'; }
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { if (r == "") print "not measured"; else if (r + 0 >= t + 0) print "pass"; else print "FAIL" }'; }

echo
echo "check.sh summary: parity: ${counts:-no counts (see $log)}; exit $rc; $parity_s s"
echo "check.sh summary: parity: $skipped case(s) skipped (must be 0)"
for n in 1024 2048 4096; do
   f=$(value "gpu_sgemm_n$n" tflops); c=$(value "cublas_sgemm_n$n" tflops); r=$(ratio "$f" "$c")
   line="sgemm n=$n: fastnn ${f:-?} TFLOP/s, cuBLAS direct ${c:-?} TFLOP/s, ratio ${r:-?}"
   [ "$n" = 4096 ] && line="$line (target >= 0.90: $(verdict "$r" 0.90))"
   echo "check.sh summary: $line"
done
b=$(value gpu_bf16_gemm_n4096 tflops); r=$(ratio "$b" "$(value gpu_sgemm_n4096 tflops)")
echo "check.sh summary: bf16 gemm n=4096 (set_float32_precision('bf16'): casts + cublasGemmStridedBatchedEx): ${b:-?} TFLOP/s, ${r:-?}x float32"
m=$(value gpu_mlp_fmnist sec_per_epoch); ml=$(value gpu_mlp_fmnist loader_sec_per_epoch); r=$(ratio "$CPU_MLP_S" "$m")
echo "check.sh summary: mlp_fmnist epoch: GPU ${m:-?} s (DataLoader:to_device path ${ml:-?} s), CPU $CPU_MLP_S s: ${r:-?}x (target >= 5: $(verdict "$r" 5))"
g=$(value gpu_char_gpt cpu_config_ms_per_step); gg=$(value gpu_char_gpt gpu_config_ms_per_step); r=$(ratio "$CPU_CHAR_GPT_MS" "$g")
gb=$(value gpu_char_gpt gpu_config_batch)
echo "check.sh summary: char_gpt step, batch 32: GPU ${g:-?} ms, CPU $CPU_CHAR_GPT_MS ms: ${r:-?}x (target >= 5: $(verdict "$r" 5)); batch ${gb:-256}: ${gg:-?} ms"
rs=$(value gpu_resnet_small ms_per_step); ri=$(value gpu_resnet_small images_per_s); rb=$(value gpu_resnet_small batch)
cpu_img=$(awk -v t="$CPU_RESNET_MS" 'BEGIN { printf "%.0f", 64000 / t }')
echo "check.sh summary: resnet_small step, batch ${rb:-256}: ${rs:-?} ms, ${ri:-?} img/s (CPU, batch 64: $CPU_RESNET_MS ms, $cpu_img img/s)"
bskipped=$(grep -c '^SKIPPED ' "$blog" || true)
echo "check.sh summary: benchmarks skipped: $bskipped$(grep '^SKIPPED ' "$blog" | sed 's/^SKIPPED /; /' | tr -d '\n')"
[ -z "$bench_failed" ] || echo "check.sh summary: benchmarks failed:$bench_failed"
total=$(( $(date +%s) - start_all ))
echo "check.sh summary: total $total s (build $build_s s; budget 480 s on an H200)"

[ "$skipped" -eq 0 ] || { echo "check.sh: cases were skipped on a GPU machine" >&2; exit 1; }
[ -z "$bench_failed" ] || exit 1
exit "$rc"
