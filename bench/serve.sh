#!/bin/bash
# bench/serve.sh: examples/serve (fastnn.serve in nginx) against a FastAPI + uvicorn server of the same
# PyTorch model and JSON (bench/reference/serve_fastapi.py), loaded by wrk with one MNIST-sized row per
# request at 1, 16 and 64 connections, the two servers interleaved in one run (fastnn, FastAPI, ... each
# round); then, at 64 connections, dynamic batching (/predict) against one forward pass per request
# (/predict_single). Both servers run 2 workers of one kernel thread each; wrk runs on the same machine.
#   bench/serve.sh [--seconds 10] [--rounds 2]
# Prints a markdown table (requests/s, wrk's p50 and p99 latency, the workers' summed RSS after the run,
# medians over the rounds) and writes it to bench/results/serve.md.
# Needs: wrk, nginx-light, libnginx-mod-http-lua, lua-cjson (tools/install-deps.sh); PyPI fastapi,
# uvicorn, torch, safetensors (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=10; rounds=2
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    *) echo "usage: bench/serve.sh [--seconds N] [--rounds N]" >&2; exit 2;;
  esac
done
PYTHON=${PYTHON:-python3}
command -v wrk >/dev/null || { echo "bench/serve.sh: wrk is missing (apt-get install wrk)" >&2; exit 1; }
$PYTHON -c 'import fastapi, uvicorn, torch, safetensors' 2>/dev/null ||
  $PYTHON -m pip install -q fastapi uvicorn torch safetensors
BUILD=${FASTNN_BUILD:-build}
[ -x "$BUILD/fastnn-lua" ] || { cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$BUILD" -j"$(nproc)"; }
out=$(mktemp -d /tmp/fastnn-serve-bench-XXXXXX)
fport=18180; pport=18181
cleanup() {
  [ -f "$out/serve-nginx/nginx.pid" ] && kill -QUIT "$(cat "$out/serve-nginx/nginx.pid")" 2>/dev/null
  [ -n "${upid:-}" ] && kill "$upid" 2>/dev/null
  wait 2>/dev/null || true
}
trap cleanup EXIT

# the model (mnist_mlp.lua's, trained by run.lua when missing) in nginx, then the same weights in FastAPI
FASTNN_LIB=$PWD/$BUILD/libfastnn.so "$BUILD/fastnn-lua" examples/serve/run.lua --detach --out "$out" --port $fport --workers 2 --quick
FDL=$out/mnist_mlp.fdl $PYTHON -m uvicorn --app-dir bench/reference serve_fastapi:app --host 127.0.0.1 --port $pport \
  --workers 2 --log-level warning &
upid=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$pport/health" >/dev/null && curl -sf "http://127.0.0.1:$fport/health" >/dev/null && break
  sleep 0.2
done

# one row of 784 numbers in [0, 1] as the body (both servers get the same bytes)
$PYTHON - "$out" <<'PY'
import json, random, sys
random.seed(1)
body = json.dumps({"inputs": [[round(random.random(), 4) for _ in range(784)]]})
open(sys.argv[1] + "/post.lua", "w").write(
    'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %s\n' % json.dumps(body))
PY

# the RSS (MB) of a master's worker processes together
rss() { ps -o rss= --ppid "$1" | awk '{s += $1} END {printf "%.0f", s / 1024}'; }
# the CPU time (clock ticks) a master's worker processes have used
cpu() { for p in $(ps -o pid= --ppid "$1"); do awk '{print $14 + $15}' "/proc/$p/stat"; done | awk '{s += $1} END {print s + 0}'; }
# run <name> <connections> <url> <master>: one wrk run, one line "name c rps p50_ms p99_ms rss_mb cpu_us"
# (cpu_us: the server's CPU time per request, which the other load on the machine disturbs least)
ms() { awk '{v = $1; if (v ~ /us$/) {sub(/us$/, "", v); v /= 1000} else if (v ~ /ms$/) sub(/ms$/, "", v);
             else if (v ~ /s$/) {sub(/s$/, "", v); v *= 1000}; printf "%.2f", v}'; }
run() {
  local text threads=$(( $2 < 2 ? 1 : 2 )) c0 c1 n
  c0=$(cpu "$4")
  text=$(wrk -t$threads -c"$2" -d"${seconds}s" --latency -s "$out/post.lua" "$3")
  c1=$(cpu "$4")
  n=$(echo "$text" | awk '/requests in/ {print $1}')
  local rps p50 p99 errors
  rps=$(echo "$text" | awk '/^Requests\/sec/ {print $2}')
  p50=$(echo "$text" | awk '$1 == "50%" {print $2}' | ms)
  p99=$(echo "$text" | awk '$1 == "99%" {print $2}' | ms)
  errors=$(echo "$text" | awk '/Non-2xx|Socket errors/ {print}' | tr '\n' ' ')
  echo "$1 $2 $rps $p50 $p99 $(rss "$4") $(( (c1 - c0) * 1000000 / $(getconf CLK_TCK) / n )) ${errors:+ERR $errors}" |
    tee -a "$out/runs"
}
nginx_master=$(cat "$out/serve-nginx/nginx.pid")
for c in 1 16 64; do   # warm both up
  wrk -t1 -c"$c" -d2s -s "$out/post.lua" "http://127.0.0.1:$fport/predict" >/dev/null
  wrk -t1 -c"$c" -d2s -s "$out/post.lua" "http://127.0.0.1:$pport/predict" >/dev/null
done
for r in $(seq "$rounds"); do
  for c in 1 16 64; do
    run fastnn $c "http://127.0.0.1:$fport/predict" "$nginx_master"
    run fastapi $c "http://127.0.0.1:$pport/predict" "$upid"
  done
  run fastnn_single 64 "http://127.0.0.1:$fport/predict_single" "$nginx_master"
done

# the table: medians over the rounds
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
mkdir -p bench/results
$PYTHON - "$out/runs" "$cpu" "$(nproc)" "$seconds" "$rounds" <<'PY' | tee bench/results/serve.md
import statistics, sys
runs, cpu, cores, seconds, rounds = sys.argv[1:]
rows = {}
for line in open(runs):
    f = line.split()
    rows.setdefault((f[0], int(f[1])), []).append([float(x) for x in f[2:7]])
def med(name, c, i):
    return statistics.median(r[i] for r in rows[(name, c)])
print(f"bench/serve.sh on {cpu} ({cores} cores, shared with wrk), {rounds} interleaved rounds of {seconds} s each, "
      "one 784-number row per request, 2 workers x 1 thread on each side; medians.\n")
print("| connections | fastnn.serve req/s | FastAPI+PyTorch req/s | ratio | fastnn p50 / p99 ms | FastAPI p50 / p99 ms "
      "| server CPU per request, fastnn / FastAPI | fastnn RSS MB | FastAPI RSS MB |")
print("|---|---|---|---|---|---|---|---|---|")
for c in (1, 16, 64):
    f = [med("fastnn", c, i) for i in range(5)]
    p = [med("fastapi", c, i) for i in range(5)]
    print(f"| {c} | {f[0]:.0f} | {p[0]:.0f} | {f[0] / p[0]:.1f}x | {f[1]:.2f} / {f[2]:.2f} | {p[1]:.2f} / {p[2]:.2f} "
          f"| {f[4]:.0f} / {p[4]:.0f} us | {f[3]:.0f} | {p[3]:.0f} |")
b = [med("fastnn", 64, i) for i in range(5)]
s = [med("fastnn_single", 64, i) for i in range(5)]
print(f"\nAt 64 connections, dynamic batching (/predict: up to 64 rows, 2 ms) {b[0]:.0f} req/s, p99 {b[2]:.2f} ms, "
      f"{b[4]:.0f} us of CPU per request; one forward pass per request (/predict_single) {s[0]:.0f} req/s, "
      f"p99 {s[2]:.2f} ms, {s[4]:.0f} us: {b[0] / s[0]:.1f}x the requests/s.")
PY
if grep -q ERR "$out/runs"; then echo "bench/serve.sh: some requests failed:"; grep ERR "$out/runs"; exit 1; fi
