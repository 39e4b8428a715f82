-- bench/allreduce/allreduce.lua [MB = 100] [REPEATS = 10]: the all-reduce (sum) of a float32
-- gradient of MB megabytes through fnn.distributed, timed as bench/allreduce/raw_allreduce.c
-- times the raw MPI_Allreduce (best of the repeats after one warm-up, the slowest rank's time).
-- Run under mpirun (bench/allreduce/run.sh runs both and prints the ratio). Rank 0 prints
-- `fnn_allreduce <MB> MB: <seconds> s/op, <GB/s> GB/s`.
local fnn = require 'fastnn'
local dist = fnn.distributed
local ffi = require 'ffi'
ffi.cdef [[
   struct fastnn_bench_ts { int64_t sec; int64_t nsec; };
   int clock_gettime(int clk, struct fastnn_bench_ts *ts);
]]
local ts = ffi.new('struct fastnn_bench_ts')
local function now()
   ffi.C.clock_gettime(1, ts)
   return tonumber(ts.sec) + 1e-9 * tonumber(ts.nsec)
end

dist.init()
local mb, repeats = tonumber(arg[1] or '100'), tonumber(arg[2] or '10')
local n = math.floor(mb * 1e6 / 4)
local grad = fnn.rand(n)
local best = math.huge
for r = 0, repeats do
   dist.barrier()
   local t0 = now()
   local out = dist.all_reduce(grad)
   local t = now() - t0
   -- untimed: hand the output back to the buffer cache, so the next call reuses warm pages as
   -- the C probe reuses its receive buffer (a training step's gradients recycle the same way)
   out = nil
   collectgarbage()
   t = dist.all_reduce(fnn.tensor{t}, {op = 'max'})[1]
   if r > 0 and t < best then best = t end
end
if dist.is_main() then
   print(('fnn_allreduce %.0f MB: %.4f s/op, %.2f GB/s'):format(mb, best, n * 4 / best / 1e9))
end
