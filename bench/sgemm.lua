-- sgemm: fastnn matmul on 1024x1024 float32, in GFLOP/s, at 1 and 2 threads
-- (fnn.set_num_threads). Measured as reference/sgemm_peak.c measures raw
-- cblas_sgemm: FLOPs = 2n^3, one warm-up call that calibrates how many calls
-- make a repetition of >= 0.1 s, best of 7 repetitions. bench/run.sh pairs
-- `sgemm_fastnn_t<k>_n1024` with sgemm_peak's `sgemm_t<k>_n1024` (same thread count).
-- (The same measurement as bench/sgemm_ratio.lua, for both thread counts in one run.)
-- Usage: sgemm.lua [n ...]   (default 1024)
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn

local sizes = {}
for i = 1, #arg do sizes[#sizes + 1] = tonumber(arg[i]) end
if #sizes == 0 then sizes = {1024} end

local function gflops(n)
   -- A, B in [-0.5, 0.5) like sgemm_peak.c; plain data, no graph
   local a = fnn.rand(n, n) - 0.5
   local b = fnn.rand(n, n) - 0.5
   local flop = 2.0 * n * n * n
   -- one call: the product into a fresh output whose buffer is dropped at once, so
   -- the allocator's cache hands it to the next call (as the C program reuses C)
   local function call()
      local c = a:matmul(b)
      assert(c:size(1) == n)
      c:free()
   end
   return fnn.no_grad(function()
      local t0 = B.now()
      call()                                         -- warm-up and calibration
      local t1 = B.now() - t0
      local calls = math.floor(0.1 / math.max(t1, 1e-6)) + 1
      local best = 0
      for _ = 1, 7 do
         t0 = B.now()
         for _ = 1, calls do call() end
         local t = (B.now() - t0) / calls
         best = math.max(best, flop / t / 1e9)
      end
      return best
   end)
end

B.main('sgemm', function()
   B.need{{'Tensor:matmul', function() return fnn.Tensor.matmul end}}
   print(('# sgemm: fastnn %s, matmul through fnn.set_num_threads(k) (OpenBLAS + core kernels), %s'):format(
      fnn._VERSION, jit and jit.version or _VERSION))
   for _, threads in ipairs{1, 2} do
      fnn.set_num_threads(threads)
      for _, n in ipairs(sizes) do
         B.result(('sgemm_fastnn_t%d_n%d'):format(fnn.get_num_threads(), n), {'gflops', gflops(n), 'GFLOP/s'})
      end
   end
end)
