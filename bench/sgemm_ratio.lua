-- sgemm_ratio: fastnn matmul of n x n float32 (default 1024) in GFLOP/s, timed
-- exactly as reference/sgemm_peak.c times raw cblas_sgemm: FLOPs = 2n^3, one
-- warm-up call calibrating how many calls make a repetition of >= 0.1 s, best
-- of 7 repetitions. Threads follow OPENBLAS_NUM_THREADS when set (as the C
-- reference does), so the two runs compare like for like:
--   gcc -O2 -o /tmp/sgemm_peak /work/shared/bench/reference/sgemm_peak.c -lopenblas -lpthread
--   OPENBLAS_NUM_THREADS=1 /tmp/sgemm_peak --sgemm-only
--   OPENBLAS_NUM_THREADS=1 luajit bench/sgemm_ratio.lua
-- Usage: sgemm_ratio.lua [n]
local ffi = require 'ffi'
local fnn = require 'fastnn'

pcall(ffi.cdef, [[
typedef long time_t;
struct timespec { time_t tv_sec; long tv_nsec; };
int clock_gettime(int clk_id, struct timespec *tp);
]])
local ts = ffi.new('struct timespec')
local function now()
   ffi.C.clock_gettime(1, ts)   -- CLOCK_MONOTONIC
   return tonumber(ts.tv_sec) + 1e-9 * tonumber(ts.tv_nsec)
end

local n = tonumber(arg and arg[1]) or 1024
local threads = tonumber(os.getenv('OPENBLAS_NUM_THREADS') or '')
if threads then fnn.set_num_threads(threads) end

-- A, B in [-0.5, 0.5) like sgemm_peak.c; plain data, no graph
local a = fnn.rand(n, n) - 0.5
local b = fnn.rand(n, n) - 0.5
local flop = 2.0 * n * n * n

-- one call: the product into a fresh output, whose buffer is dropped at once
-- (the allocator's cache hands the same buffer to the next call, as C would reuse C)
local function call()
   local c = a:matmul(b)
   c:free()
end

local t0 = now()
call()
local t1 = now() - t0
local calls = math.floor(0.1 / math.max(t1, 1e-6)) + 1
local best = 0
for _ = 1, 7 do
   t0 = now()
   for _ = 1, calls do call() end
   local t = (now() - t0) / calls
   best = math.max(best, flop / t / 1e9)
end
print(('# fastnn %s, %d thread(s), n = %d, %d calls per repetition'):format(
   fnn._VERSION, fnn.get_num_threads(), n, calls))
print(('RESULT sgemm_fastnn_n%d gflops=%.1f GFLOP/s'):format(n, best))
io.stdout:flush()
os.exit(0)   -- skip lua_close: unloading libfastnn under live OpenMP workers crashes (reported)
