#!/bin/bash
# bench/run.sh: fastnn-lua side by side with PyTorch on the perf-anchor workloads
# (../shared/bench/WORKLOADS.md), in one interleaved, noise-guarded run.
#
#   bench/run.sh                  # every workload, 3 interleaved reps (takes a while)
#   bench/run.sh --quick          # 1 rep of tiny_ops, mlp_fmnist, sgemm; no idle wait (< 2 min)
#   bench/run.sh --avx2           # also every training workload and nn_ops as an AVX2-only CPU runs
#                                 #   them (fastnn: a build with FASTNN_MAX_CLONE=v3 in <build>-avx2,
#                                 #   ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell;
#                                 #   PyTorch: ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2
#                                 #   ONEDNN_MAX_CPU_ISA=AVX2), interleaved with the rest
#   bench/run.sh --bf16           # also every training workload in bf16, both ways on both sides:
#                                 #   FASTNN_PRECISION=bf16 (fnn.set_float32_precision('bf16')) against
#                                 #   TORCH_MODE=bf16 (mkldnn fp32_precision = 'bf16'), and
#                                 #   FASTNN_PRECISION=autocast_bf16 (fnn.autocast) against
#                                 #   TORCH_MODE=autocast_bf16 (torch.autocast), interleaved with the rest
#   bench/run.sh --compile        # also PyTorch's training workloads under torch.compile
#                                 #   (TORCH_MODE=compile; compiled in the untimed warm-up): side rows
#                                 #   fastnn float32 / compiled PyTorch, interleaved with the rest
#   bench/run.sh --reps 5 char_gpt lstm_seq    # a subset (mlp_fmnist cnn_fmnist resnet_small char_gpt lstm_seq
#                                               #   tiny_ops nn_ops optim_step data_loader checkpoint
#                                               #   keras_fit_overhead gpt_generate sgemm; data_loader,
#                                               #   checkpoint and keras_fit_overhead are fastnn against its own figures)
#
# It builds the project (cmake Release into build/, or into $FASTNN_BUILD), builds
# the OpenBLAS probe sgemm_peak from the shared reference, then runs, through
# ../shared/bench/measure.py, for each workload the fastnn job (bench/<w>.lua) and
# the PyTorch reference job (../shared/bench/reference/<w>.py, or bench/reference/<w>.py for the
# workloads this project adds, such as nn_ops) alternately, each
# wrapped in bench/rss.py for its peak resident memory. It prints the table
# (fastnn median, PyTorch median, ratio, target, pass/fail, peak RSS of each side)
# and writes it to bench/results/latest.md; full outputs go to bench/results/*.log.
#
# Threads: PyTorch runs in the anchor setup (torch.set_num_threads(2), OPENBLAS_NUM_THREADS=1);
# fastnn runs fnn.set_num_threads(2), one setting for OpenBLAS and the core's kernels.
# BENCH_THREADS changes both. PYTHON picks the python that has torch; without torch
# the table says so and the fastnn side still runs. Other knobs: FASTNN_BUILD (build
# dir), SHARED_BENCH (the shared bench dir), MEASURE_ARGS (extra measure.py flags).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED_BENCH:-$(cd "$(dirname "$0")/../../shared/bench" 2>/dev/null && pwd || true)}
if [ -z "$SHARED" ] || [ ! -f "$SHARED/measure.py" ]; then
  echo "bench/run.sh: cannot find ../shared/bench/measure.py beside the repository (set SHARED_BENCH)" >&2
  exit 2
fi

QUICK=0
AVX2=0
BF16=0
COMPILE=0
REPS=3
REPS_SET=0
WANT=()
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --avx2) AVX2=1 ;;
    --bf16) BF16=1 ;;
    --compile) COMPILE=1 ;;
    --reps) REPS=$2; REPS_SET=1; shift ;;
    --reps=*) REPS=${1#--reps=}; REPS_SET=1 ;;
    --no-wait) EXTRA+=(--no-wait) ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    mlp_fmnist|cnn_fmnist|resnet_small|char_gpt|lstm_seq|tiny_ops|nn_ops|optim_step|data_loader|checkpoint|keras_fit_overhead|gpt_generate|sgemm|image_loader) WANT+=("$1") ;;
    *) echo "bench/run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
ALL=(tiny_ops mlp_fmnist cnn_fmnist resnet_small char_gpt lstm_seq nn_ops optim_step data_loader checkpoint keras_fit_overhead gpt_generate sgemm image_loader)
if [ "$QUICK" = 1 ]; then
  [ "$REPS_SET" = 1 ] || REPS=1
  [ ${#WANT[@]} -gt 0 ] || WANT=(tiny_ops mlp_fmnist sgemm)
  EXTRA+=(--no-wait --retries 0)      # --quick trades the noise guard for a bounded run time
fi
[ ${#WANT[@]} -gt 0 ] || WANT=("${ALL[@]}")
# shellcheck disable=SC2206
EXTRA+=(${MEASURE_ARGS:-})

# ---- pythons: one for the harness (measure.py, rss.py, report.py), one with torch ----
HPY=/usr/bin/python3
[ -x "$HPY" ] || HPY=$(command -v python3)
has_torch() { "$1" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' 2>/dev/null; }
PY=
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON
elif command -v python3 >/dev/null && has_torch "$(command -v python3)"; then PY=$(command -v python3)
elif has_torch /usr/bin/python3; then PY=/usr/bin/python3
fi
if [ -n "$PY" ] && ! has_torch "$PY"; then PY=; fi

# ---- build ----
BUILD=${FASTNN_BUILD:-$ROOT/build}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
RESULTS=$ROOT/bench/results
mkdir -p "$RESULTS" "$BUILD/bench"
STAMP=$(date +%Y%m%d_%H%M%S)
LOG=$RESULTS/run_$STAMP.log
echo "# building fastnn into $BUILD"
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$RESULTS/build_$STAMP.log" 2>&1 \
    || { tail -20 "$RESULTS/build_$STAMP.log"; echo "bench/run.sh: cmake configure failed" >&2; exit 1; }
fi
cmake --build "$BUILD" -j"$(nproc)" >>"$RESULTS/build_$STAMP.log" 2>&1 \
  || { grep -E 'error' "$RESULTS/build_$STAMP.log" | head -20; echo "bench/run.sh: build failed" >&2; exit 1; }
BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
LIB=$BUILD/libfastnn.so
gcc -O2 -o "$BUILD/bench/sgemm_peak" "$SHARED/reference/sgemm_peak.c" -lopenblas -lpthread

# the launcher once it runs scripts, else plain luajit on the source tree; both load $LIB
export FASTNN_LIB=$LIB
export LUA_PATH="$ROOT/lua/?.lua;$ROOT/lua/?/init.lua;;"
if [ -x "$BUILD/fastnn-lua" ] && [ "$("$BUILD/fastnn-lua" -e 'print("fastnn-ok")' 2>/dev/null)" = fastnn-ok ]; then
  LUA=("$BUILD/fastnn-lua"); LUA_DESC="${BUILD#"$ROOT"/}/fastnn-lua"
else
  LUA=("$(command -v luajit)"); LUA_DESC="luajit $(luajit -v 2>/dev/null | awk '{print $2}') (launcher not ready)"
fi

# what the kernels run on (CPU, instruction sets, BLAS core, oneDNN and its ISA): the header names it
CONFIG=$(env -u OPENBLAS_NUM_THREADS "${LUA[@]}" -e "local c = require('fastnn').config(); print(('kernels %s; isa %s; %s core %s (%s); oneDNN %s, ISA %s; threads %s; bf16 path %s; build %s'):format(c.kernels, c.isa, c.blas, c.blas_core, c.blas_core_note, c.onednn, c.onednn_isa or '-', c.threads, c.bf16_path, c.build))" 2>/dev/null || echo "fnn.config() failed")
echo "# fnn.config(): $CONFIG" 
# raw OpenBLAS (sgemm_peak) runs on the core libfastnn runs it on (corrected where OpenBLAS chose a
# generic one), so the "vs raw OpenBLAS" rows compare like with like
BLAS_CORE=$(printf '%s' "$CONFIG" | sed -n 's/.*OpenBLAS [0-9.]* core \([A-Za-z0-9]*\).*/\1/p')

T=${BENCH_THREADS:-2}
q() { printf '%q ' "$@"; }
jobs=()
notes=()
FNN_ENV=(env -u OPENBLAS_NUM_THREADS "BENCH_THREADS=$T")
TORCH_ENV=(env "BENCH_THREADS=$T" "OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}")
# image_loader reads one folder of JPEGs on both sides: written once here, before the timed runs
IMGDIR=$BUILD/bench/images
wargs() { [ "$1" = image_loader ] && printf '%s\n' "$IMGDIR"; }
case " ${WANT[*]} " in *" image_loader "*)
  mkdir -p "$IMGDIR"
  "${LUA[@]}" "$ROOT/bench/image_loader.lua" "$IMGDIR" >/dev/null 2>&1 || echo "# image_loader: could not write $IMGDIR" ;;
esac
for w in "${WANT[@]}"; do
  mapfile -t WARGS < <(wargs "$w")
  if [ -f "$ROOT/bench/$w.lua" ]; then
    jobs+=("fnn_$w=$(q "${FNN_ENV[@]}" "$HPY" "$ROOT/bench/rss.py" "$w" "${LUA[@]}" "$ROOT/bench/$w.lua" "${WARGS[@]}")")
  else
    notes+=(--note "fnn_$w=not yet: no bench/$w.lua")
  fi
  case "$w" in
    sgemm)
      # the clock and FMA probes of sgemm_peak (its zmm probe only where the CPU has AVX-512)
      probes=(--sgemm-only)
      if [ "$QUICK" = 0 ]; then probes=(); fi
      jobs+=("blas_sgemm_t1=$(q env OPENBLAS_NUM_THREADS=1 ${BLAS_CORE:+OPENBLAS_CORETYPE=$BLAS_CORE} "$HPY" "$ROOT/bench/rss.py" sgemm_peak "$BUILD/bench/sgemm_peak" "${probes[@]}")")
      jobs+=("blas_sgemm_t2=$(q env OPENBLAS_NUM_THREADS=2 ${BLAS_CORE:+OPENBLAS_CORETYPE=$BLAS_CORE} "$HPY" "$ROOT/bench/rss.py" sgemm_peak "$BUILD/bench/sgemm_peak" --sgemm-only)") ;;
    *)
      refdir=$SHARED/reference
      [ -f "$refdir/$w.py" ] || refdir=$ROOT/bench/reference
      if [ ! -f "$refdir/$w.py" ]; then
        :   # a fastnn-only workload (data_loader, checkpoint): its rows compare its own figures
      elif [ -n "$PY" ]; then
        jobs+=("torch_$w=$(q "${TORCH_ENV[@]}" SHARED_BENCH="$SHARED" "$HPY" "$ROOT/bench/rss.py" --cwd "$refdir" "$w" "$PY" "$w.py" "${WARGS[@]}")")
        if [ "$w" = cnn_fmnist ] && [ "$QUICK" = 0 ]; then
          jobs+=("torch_cnn_fmnist_im2col=$(q "${TORCH_ENV[@]}" CNN_MKLDNN=0 "$HPY" "$ROOT/bench/rss.py" --cwd "$SHARED/reference" "$w" "$PY" "$w.py")")
        fi
      else
        notes+=(--note "torch_$w=PyTorch missing (no python3 with torch; pip install torch numpy)")
      fi ;;
  esac
done
# the same workloads as an AVX2-only CPU runs them (Zen 3, say), in the same interleaved run: oneDNN and
# OpenBLAS capped by their variables, and the core's own loops by a build whose CPU variants stop at
# AVX2 (FASTNN_MAX_CLONE=v3: GCC's function clones pick by the CPU itself, so the default build would run
# its AVX-512 variants there)
if [ "$AVX2" = 1 ]; then
  AVX2_BUILD=${BUILD}-avx2
  echo "# building fastnn with its CPU variants capped at AVX2 into $AVX2_BUILD"
  cmake -S "$ROOT" -B "$AVX2_BUILD" -DCMAKE_BUILD_TYPE=Release -DFASTNN_MAX_CLONE=v3 >>"$RESULTS/build_$STAMP.log" 2>&1 \
    && cmake --build "$AVX2_BUILD" -j"$(nproc)" >>"$RESULTS/build_$STAMP.log" 2>&1 \
    || { grep -E 'error' "$RESULTS/build_$STAMP.log" | head -20; echo "bench/run.sh: the AVX2 build failed" >&2; exit 1; }
  AVX2_ENV=(FASTNN_LIB="$AVX2_BUILD/libfastnn.so" ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell)
  AVX2_LUA=("${LUA[@]}")
  [ -x "$AVX2_BUILD/fastnn-lua" ] && [ "${LUA[0]}" = "$BUILD/fastnn-lua" ] && AVX2_LUA=("$AVX2_BUILD/fastnn-lua")
  for w in "${WANT[@]}"; do
    case "$w" in mlp_fmnist|cnn_fmnist|resnet_small|char_gpt|lstm_seq|nn_ops) ;; *) continue ;; esac
    jobs+=("fnn_avx2_$w=$(q "${FNN_ENV[@]}" "${AVX2_ENV[@]}" "$HPY" "$ROOT/bench/rss.py" "$w" "${AVX2_LUA[@]}" "$ROOT/bench/$w.lua")")
    refdir=$SHARED/reference
    [ -f "$refdir/$w.py" ] || refdir=$ROOT/bench/reference
    if [ -n "$PY" ]; then
      jobs+=("torch_avx2_$w=$(q "${TORCH_ENV[@]}" ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 SHARED_BENCH="$SHARED" "$HPY" "$ROOT/bench/rss.py" --cwd "$refdir" "$w" "$PY" "$w.py")")
    fi
  done
fi
# the training workloads under bf16 precision on both sides, in the same interleaved run
if [ "$BF16" = 1 ]; then
  for w in "${WANT[@]}"; do
    case "$w" in mlp_fmnist|cnn_fmnist|resnet_small|char_gpt|lstm_seq) ;; *) continue ;; esac
    for mode in bf16 autocast_bf16; do
      tag=${mode%_bf16}   # bf16 | autocast
      jobs+=("fnn_${tag}_$w=$(q "${FNN_ENV[@]}" FASTNN_PRECISION=$mode "$HPY" "$ROOT/bench/rss.py" "$w" "${LUA[@]}" "$ROOT/bench/$w.lua")")
      if [ -n "$PY" ]; then
        jobs+=("torch_${tag}_$w=$(q "${TORCH_ENV[@]}" TORCH_MODE=$mode SHARED_BENCH="$SHARED" "$HPY" "$ROOT/bench/rss.py" --cwd "$SHARED/reference" "$w" "$PY" "$w.py")")
      fi
    done
  done
fi
# the training workloads under torch.compile, against fastnn's float32 jobs above
if [ "$COMPILE" = 1 ] && [ -n "$PY" ]; then
  for w in "${WANT[@]}"; do
    case "$w" in mlp_fmnist|cnn_fmnist|resnet_small|char_gpt|lstm_seq) ;; *) continue ;; esac
    jobs+=("torch_compile_$w=$(q "${TORCH_ENV[@]}" TORCH_MODE=compile SHARED_BENCH="$SHARED" "$HPY" "$ROOT/bench/rss.py" --cwd "$SHARED/reference" "$w" "$PY" "$w.py")")
  done
fi
for w in "${ALL[@]}"; do
  case " ${WANT[*]} " in *" $w "*) ;; *)
    notes+=(--note "fnn_$w=not run (--quick or not selected)" --note "torch_$w=not run")
    [ "$w" = sgemm ] && notes+=(--note "blas_sgemm_t1=not run" --note "blas_sgemm_t2=not run") ;;
  esac
done
notes+=(--note "torch_cnn_fmnist_im2col=not run (full runs only)")

CPU="$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1) (family $(lscpu | sed -n 's/^CPU family:[[:space:]]*//p' | head -1), model $(lscpu | sed -n 's/^Model:[[:space:]]*//p' | head -1))"
CORES=$(nproc)
GIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)
if [ -n "$(git -C "$ROOT" status --porcelain -- . 2>/dev/null)" ]; then GIT="$GIT+dirty"; fi
CMD=bench/run.sh
if [ -n "${FASTNN_BUILD:-}" ]; then CMD="FASTNN_BUILD=$FASTNN_BUILD $CMD"; fi
if [ "$QUICK" = 1 ]; then CMD="$CMD --quick"; fi
if [ "$REPS_SET" = 1 ]; then CMD="$CMD --reps $REPS"; fi
if [ "$AVX2" = 1 ]; then CMD="$CMD --avx2"; fi
if [ "$BF16" = 1 ]; then CMD="$CMD --bf16"; fi
if [ "$COMPILE" = 1 ]; then CMD="$CMD --compile"; fi

if [ ${#WANT[@]} -lt ${#ALL[@]} ] && [ "$QUICK" = 0 ]; then CMD="$CMD ${WANT[*]}"; fi
echo "# $(date -Is) $CMD: reps=$REPS, workloads: ${WANT[*]}; torch python: ${PY:-none}; fastnn via $LUA_DESC, $LIB ($BUILD_TYPE)"
echo "# log: $LOG"
"$HPY" "$SHARED/measure.py" --reps "$REPS" --log "$LOG" "${EXTRA[@]}" "${jobs[@]}" | tee "$RESULTS/measure_$STAMP.out"

TABLE=$RESULTS/run_$STAMP.md
"$HPY" "$ROOT/bench/report.py" --log "$LOG" --workloads "${WANT[*]}" "${notes[@]}" \
  --meta "cpu=$CPU" --meta "cores=$CORES" --meta "reps=$REPS" --meta "quick=$QUICK" \
  --meta "date=$(date -Is)" --meta "git=$GIT" --meta "command=$CMD" --meta "log=${LOG#"$ROOT"/}" \
  --meta "torch=PyTorch: ${PY:-missing (no python3 with torch)}" --meta "config=$CONFIG" \
  --meta "fastnn=fastnn $(sed -n 's/^project(fastnn_lua VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt") ($BUILD_TYPE build), fnn.set_num_threads($T): one setting for the core's OpenMP kernels and the GEMM library; run with $LUA_DESC" \
  >"$TABLE"
cp "$TABLE" "$RESULTS/latest.md"
echo
cat "$TABLE"
echo
echo "# table written to bench/results/latest.md"
