#!/usr/bin/env bash
# onednn_ops.sh: oneDNN 2.x primitives (bench/onednn_ops.c, C API) against fastnn's own CPU kernels
# (bench/onednn_ops.lua, public Lua API), op family by op family, on the same shapes:
#   GELU (erf) [2048,512]; LayerNorm last dim of [2048,128] with scale/shift; softmax last dim of
#   [8192,64]; BatchNorm2d training [64,64,32,32]; MaxPool2d 2x2/2 on [32,64,32,32];
#   LSTM 1 layer, batch 32, T 50, input 64, hidden 256 (batch-first, whole output sequence).
# Passes: fwd (forward, training), bwd (backward: input and parameter gradients), fwdbwd (both).
# Plain user layouts (row-major, NCHW, PyTorch's LSTM weights) on both sides; oneDNN primitives are
# created once, outside the timing; the LSTM reorders its weights (and their gradients) between
# the user layout and the primitive's every step, inside the timing. fastnn's bwd is fwdbwd - fwd
# (autograd runs it; it is not timed alone); oneDNN's bwd is timed alone.
# Each number is the median ms of >= ITERS runs (>= 0.5 s of runs) after 3 warm-up runs; the two
# sides run alternately REPS times (the machine is shared and noisy), `uptime`'s load beside each
# run, and the table holds the median over the reps, plus the ratio of the fastest single runs
# (fastnn's bwd there: its fastest fwdbwd - its fastest fwd).
# Both sides: OMP_NUM_THREADS=THREADS (2) and GOMP_SPINCOUNT=10000 (what fastnn sets under oneDNN).
#   bench/onednn_ops.sh [REPS=3] [ITERS=30]    (env: THREADS, BUILD=build)
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-3} ITERS=${2:-30} BUILD=${BUILD:-build}
export OMP_NUM_THREADS=${THREADS:-2} BENCH_THREADS=${THREADS:-2} GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-10000}
[ -x "$BUILD/fastnn-lua" ] || { cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
                                cmake --build "$BUILD" -j2 >/dev/null; }
mkdir -p "$BUILD/bench"
cc -O2 -std=c11 -Wall -Wextra bench/onednn_ops.c -o "$BUILD/bench/onednn_ops" -ldnnl
raw=$(mktemp); trap 'rm -f "$raw"' EXIT
echo "# oneDNN primitives vs fastnn's kernels: $(date -u '+%F %T UTC'), REPS=$REPS ITERS=$ITERS OMP_NUM_THREADS=$OMP_NUM_THREADS GOMP_SPINCOUNT=$GOMP_SPINCOUNT"
echo; echo '```'; lscpu | grep 'Model name'; "$BUILD/fastnn-lua" -e "print(require('fastnn').config())"; echo '```'; echo
load() { uptime | sed 's/.*load average: //'; }
for rep in $(seq "$REPS"); do
  for side in onednn fastnn; do
    l0=$(load)
    if [ $side = onednn ]; then "$BUILD/bench/onednn_ops" "$ITERS"; else "$BUILD/fastnn-lua" bench/onednn_ops.lua "$ITERS"; fi |
      grep -E '^(RESULT|ERROR|# impl|# onednn_lstm)' | sed "s/^/rep=$rep /" >> "$raw" ||
      echo "rep=$rep ERROR $side: the run failed (exit status above)" >> "$raw"
    echo "rep=$rep LOAD $side before: $l0, after: $(load)" >> "$raw"
  done
done
echo "## Raw (per rep; load averages 1/5/15 min)"; echo '```'; cat "$raw"; echo '```'; echo
python3 - "$raw" <<'EOF'
import re, sys, statistics as st
med, mins, order = {}, {}, []
for line in open(sys.argv[1]):
    m = re.match(r'rep=\d+ RESULT (onednn|fastnn)_(\w+)_(fwd|bwd|fwdbwd) ms=([-\d.]+)(?: min=([\d.]+))?', line)
    if not m: continue
    side, op, ps = m.group(1), m.group(2), m.group(3)
    if (op, ps) not in order: order.append((op, ps))
    med.setdefault((side, op, ps), []).append(float(m.group(4)))
    if m.group(5): mins.setdefault((side, op, ps), []).append(float(m.group(5)))
print('| op | pass | oneDNN ms | fastnn ms | fastnn/oneDNN | faster | fastest runs: fastnn/oneDNN |')
print('|---|---|---:|---:|---:|---|---:|')
for op, ps in order:
    o, f = med.get(('onednn', op, ps)), med.get(('fastnn', op, ps))
    if not o or not f:
        print(f'| {op} | {ps} | {st.median(o) if o else "n/a"} | {st.median(f) if f else "n/a"} | | | |'); continue
    o, f = st.median(o), st.median(f)
    om, fm = mins.get(('onednn', op, ps)), mins.get(('fastnn', op, ps))
    if ps == 'bwd' and om:   # fastnn's bwd is not timed alone: its fastest fwdbwd - its fastest fwd
        fm = [min(mins[('fastnn', op, 'fwdbwd')]) - min(mins[('fastnn', op, 'fwd')])]
    best = f'{min(fm) / min(om):.2f}' if om and fm else 'n/a'
    print(f'| {op} | {ps} | {o:.3f} | {f:.3f} | {f / o:.2f} | {"oneDNN" if o < f else "fastnn"} | {best} |')
print('\nfastnn bwd = fastnn fwdbwd - fastnn fwd (medians; autograd runs it, it is not timed alone).')
EOF
