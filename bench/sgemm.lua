-- sgemm: fastnn matmul on 1024x1024 float32, in GFLOP/s, at 1 and 2 threads, and on the workloads'
-- GEMM shapes at 2 threads (bench/run.sh holds those against the measured 2-thread FMA peak)
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

-- the GEMM shapes the workloads run (../shared/bench/reference/gemm_shapes.c), row-major
-- C[M,N] = op(A) op(B), as fastnn's matmul runs them (a transposed operand is a view, not a copy)
local SHAPES = {
   {'qkv', 'char_gpt qkv forward', 2048, 128, 384, 'N', 'T'},
   {'fc1', 'char_gpt fc1 forward', 2048, 128, 512, 'N', 'T'},
   {'fc2', 'char_gpt fc2 forward', 2048, 512, 128, 'N', 'T'},
   {'fc1_dx', 'char_gpt fc1 dx', 2048, 512, 128, 'N', 'N'},
   {'fc1_dw', 'char_gpt fc1 dW', 512, 2048, 128, 'T', 'N'},
   {'lstm_step', 'lstm_seq recurrent step', 32, 256, 1024, 'N', 'T'},
   {'lstm_input', 'lstm_seq input projection', 1600, 64, 1024, 'N', 'T'},
   {'mlp1', 'mlp_fmnist layer 1', 128, 784, 128, 'N', 'T'},
}

local function shape_gflops(m, k, n, ta, tb)
   local a = ta == 'N' and fnn.rand(m, k) - 0.5 or (fnn.rand(k, m) - 0.5):transpose(1, 2)
   local b = tb == 'N' and fnn.rand(k, n) - 0.5 or (fnn.rand(n, k) - 0.5):transpose(1, 2)
   local flop = 2.0 * m * n * k
   return fnn.no_grad(function()
      local function call() a:matmul(b):free() end
      local t0 = B.now()
      call()
      local calls = math.floor(0.05 / math.max(B.now() - t0, 1e-6)) + 1
      local best = 0
      for _ = 1, 5 do
         t0 = B.now()
         for _ = 1, calls do call() end
         best = math.max(best, flop / ((B.now() - t0) / calls) / 1e9)
      end
      return best
   end)
end

B.main('sgemm', function()
   B.need{{'Tensor:matmul', function() return fnn.Tensor.matmul end}}
   print(('# sgemm: fastnn %s, matmul through fnn.set_num_threads(k) (OpenBLAS + core kernels), %s'):format(
      fnn._VERSION, jit and jit.version or _VERSION))
   print('# ' .. tostring(fnn.config()):gsub('\n', '\n# '))
   for _, threads in ipairs{1, 2} do
      fnn.set_num_threads(threads)
      for _, n in ipairs(sizes) do
         B.result(('sgemm_fastnn_t%d_n%d'):format(fnn.get_num_threads(), n), {'gflops', gflops(n), 'GFLOP/s'})
      end
   end
   fnn.set_num_threads(2)
   for _, s in ipairs(SHAPES) do
      B.result(('sgemm_shape_%s_t2'):format(s[1]), {'gflops', shape_gflops(s[3], s[4], s[5], s[6], s[7]), 'GFLOP/s'})
   end
   -- the same products under fnn.set_float32_precision('bf16'): float32 tensors in and out, the
   -- operands' conversion to bfloat16 counted in the time (bench/run.sh holds them against the
   -- float32 FMA peak: bf16 units go past it)
   fnn.set_float32_precision('bf16')
   print('# bf16 path: ' .. fnn.config().bf16_path)
   for _, n in ipairs(sizes) do
      B.result(('bf16_fastnn_t2_n%d'):format(n), {'gflops', gflops(n), 'GFLOP/s'})
   end
   for _, s in ipairs(SHAPES) do
      B.result(('bf16_shape_%s_t2'):format(s[1]), {'gflops', shape_gflops(s[3], s[4], s[5], s[6], s[7]), 'GFLOP/s'})
   end
   -- where the CPU has bf16 units that 'auto' passes over (no faster than its float32 FMA,
   -- core/bf16_units.c), the same products on them too: the figures that decided it
   if fnn.set_bf16_path and fnn.get_bf16_path() == 'auto' and fnn.config().bf16_path:match('^emulated.*no faster') then
      fnn.set_bf16_path('native')
      print('# bf16 path (side rows): ' .. fnn.config().bf16_path)
      B.result('bf16_native_fastnn_t2_n1024', {'gflops', gflops(1024), 'GFLOP/s'})
      for _, s in ipairs(SHAPES) do
         B.result(('bf16_native_shape_%s_t2'):format(s[1]),
                  {'gflops', shape_gflops(s[3], s[4], s[5], s[6], s[7]), 'GFLOP/s'})
      end
      fnn.set_bf16_path('auto')
   end
   fnn.set_float32_precision('ieee')
end)
