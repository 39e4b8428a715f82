-- bench/gpu/gpu_sgemm.lua: fastnn matmul on the GPU in TFLOP/s at n x n x n, n = 1024, 2048, 4096
-- (FLOPs = 2 n^3), against bench/gpu/cublas_sgemm (cuBLAS called directly, same sizes, same
-- timing): spec/gpu/check.sh prints the ratio against the 90% target at 4096; and the largest size
-- under set_float32_precision('bf16'), against float32. One warm-up call,
-- then best of 5 repetitions of a loop of >= 0.2 s; the device is synchronised around each timed
-- loop only (fnn.cuda.synchronize), never per call, so the figure includes fastnn's per-call host
-- work (checks, output allocation from the cache) overlapped with the GPU as in a training loop.
--   luajit bench/gpu/gpu_sgemm.lua [n ...]
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. (arg[0]:match('^(.*)/gpu/[^/]*$') or '..') ..
   '/?.lua;' .. package.path
local G = require 'gpu_util'
local B, fnn = G.B, G.fnn
local NAME = 'gpu_sgemm'

B.main(NAME, function()
   local gpu = G.device(NAME)
   local sizes = {}
   for i = 1, #arg do sizes[#sizes + 1] = tonumber(arg[i]) end
   if #sizes == 0 then sizes = G.smoke and {64, 128} or {1024, 2048, 4096} end
   for _, n in ipairs(sizes) do
      local a = (fnn.rand(n, n) - 0.5):to(gpu)
      local b = (fnn.rand(n, n) - 0.5):to(gpu)
      local flop = 2.0 * n * n * n
      local function call()
         local c = a:matmul(b)
         c:free()                      -- back to the cache: the next call reuses the block
      end
      -- the best TFLOP/s of 5 loops of >= 0.2 s, after a warm-up call (cuBLAS handle, the block) that calibrates
      local function tflops()
         return fnn.no_grad(function()
            local t1 = G.timed(1, call)
            local calls = G.smoke and 2 or math.floor(0.2 / math.max(t1, 1e-6)) + 1
            local top = 0
            for _ = 1, G.smoke and 1 or 5 do top = math.max(top, flop * calls / G.timed(calls, call) / 1e12) end
            return top
         end)
      end
      local best = tflops()
      B.result(('gpu_sgemm_n%d'):format(n), {'tflops', best, 'TFLOP/s'})
      -- the largest size again under fnn.set_float32_precision('bf16'): bf16 operands, float32 sums
      -- (cublasGemmStridedBatchedEx after the operands' casts, which the figure includes)
      if n == sizes[#sizes] then
         fnn.set_float32_precision('bf16')
         local bf = tflops()
         fnn.set_float32_precision('ieee')
         B.result(('gpu_bf16_gemm_n%d'):format(n), {'tflops', bf, 'TFLOP/s'})
      end
   end
end)
