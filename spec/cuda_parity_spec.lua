-- CUDA parity: each case runs on the CPU and on GPU 0 and the results must agree:
-- add/sub/mul/div to 1e-6 (both sides do one IEEE operation per element),
-- matmul to a tolerance that grows with the inner size k (cuBLAS sums in another order).
-- Sizes sit on both sides of launch edges (1, 127, 128, 129, 1023, 1024, 1025).
-- Without a usable GPU (no CUDA build, or no device) every case asserts instead that
-- Device.cuda(0) and moving the case's inputs there fail saying why, so this file
-- checks something real everywhere. spec/gpu/check.sh runs it on a GPU machine.
local ffi = require 'ffi'
local fnn = require 'fastnn'
local C = require 'fastnn.C'
local Device = fnn.Device

local gpu, why = Device.cuda(0)
local built = C.fnn_cuda_built() == 1
-- the reason we expect when there is no GPU (a Lua pattern)
local reason = built and 'cuda:0 is not available: no CUDA device found'
                      or 'cuda:0 is not available: this build has no CUDA backend; rebuild with %-DFASTNN_CUDA=ON'

local SIZES = {1, 127, 128, 129, 1023, 1024, 1025}

local function uniform(shape, lo, hi) return fnn.rand(shape) * (hi - lo) + lo end

-- got (a CPU tensor from the GPU) against want (the CPU result), |g - w| <= atol + rtol |w|
local function assert_close(want, got, atol, rtol, label)
   assert.equals(want:shape_str(), got:shape_str(), label .. ': shapes differ')
   local w, g = want:to_flat(), got:to_flat()
   for i = 1, #w do
      if math.abs(g[i] - w[i]) > atol + rtol * math.abs(w[i]) then
         error(('%s: element %d: cpu %.9g, cuda %.9g'):format(label, i, w[i], g[i]), 2)
      end
   end
end

-- run compute on CPU inputs and on their GPU copies and compare; without a GPU,
-- check that the reason is given both by Device.cuda and by moving each input
local function parity(label, inputs, compute, atol, rtol)
   if not gpu then
      assert.is_nil(gpu)
      assert.is_truthy(why:find(reason), ('%s: unexpected reason: %s'):format(label, tostring(why)))
      for _, x in ipairs(inputs) do
         assert.error_matches(function() return x:to('cuda:0') end, 'to: ' .. reason)
         assert.equals('cpu', tostring(x:device()))
      end
      return
   end
   local want = compute(unpack(inputs))
   local on_gpu = {}
   for i, x in ipairs(inputs) do
      on_gpu[i] = x:to(gpu)
      assert.equals(gpu, on_gpu[i]:device())
   end
   local got = compute(unpack(on_gpu))
   assert.equals(gpu, got:device(), label .. ': result left the GPU')
   assert_close(want, got:to('cpu'), atol, rtol, label)
end

describe('cuda parity: add, sub, mul, div', function()
   local ops = {
      add = function(a, b) return a + b end,
      sub = function(a, b) return a - b end,
      mul = function(a, b) return a * b end,
      div = function(a, b) return a / b end,
   }
   for _, name in ipairs{'add', 'sub', 'mul', 'div'} do
      local op = ops[name]
      -- the right operand stays away from 0 so div is well conditioned
      local function rhs(shape) return uniform(shape, 0.5, 2) end
      for _, n in ipairs(SIZES) do
         it(('%s, size %d: same shape, contiguous'):format(name, n), function()
            parity(name, {uniform({n}, -2, 2), rhs{n}}, op, 0, 1e-6)
         end)
         it(('%s, size %d: [3,n] with [n] (row broadcast)'):format(name, n), function()
            parity(name, {uniform({3, n}, -2, 2), rhs{n}}, op, 0, 1e-6)
         end)
         it(('%s, size %d: [n,1] with [1,5] (both broadcast)'):format(name, n), function()
            parity(name, {uniform({n, 1}, -2, 2), rhs{1, 5}}, op, 0, 1e-6)
         end)
         it(('%s, size %d: [2,n,7] with a 0-d tensor'):format(name, n), function()
            parity(name, {uniform({2, n, 7}, -2, 2), rhs{}}, op, 0, 1e-6)
         end)
         it(('%s, size %d: transposed (non-contiguous) [n,3]^T with [3,n]'):format(name, n), function()
            parity(name, {uniform({n, 3}, -2, 2), rhs{3, n}}, function(a, b) return op(a:t(), b) end, 0, 1e-6)
         end)
      end
   end
end)

describe('cuda parity: matmul', function()
   -- cuBLAS and OpenBLAS sum k products in different orders
   local function tol(k) return 1e-5 * math.sqrt(k) end
   local mm = function(a, b) return a:matmul(b) end
   for _, n in ipairs(SIZES) do
      it(('square %dx%d'):format(n, n), function()
         parity('matmul', {uniform({n, n}, -1, 1), uniform({n, n}, -1, 1)}, mm, tol(n), 1e-5)
      end)
   end
   local shapes = {   -- {a shape, b shape}: odd sizes, outer and inner products, batches
      {{1, 1025}, {1025, 1}}, {{1025, 1}, {1, 127}}, {{127, 129}, {129, 1023}}, {{3, 5}, {5, 7}},
      {{4, 33, 17}, {4, 17, 65}}, {{2, 129, 127}, {127, 1}}, {{1023}, {1023, 3}}, {{5, 128}, {128}},
   }
   for _, s in ipairs(shapes) do
      local a, b = s[1], s[2]
      it(('%s x %s'):format(fnn.shape_str(fnn.zeros(a)), fnn.shape_str(fnn.zeros(b))), function()
         parity('matmul', {uniform(a, -1, 1), uniform(b, -1, 1)}, mm, tol(a[#a]), 1e-5)
      end)
   end
   it('transposed operands [129,127]^T x [129,33]', function()
      parity('matmul', {uniform({129, 127}, -1, 1), uniform({129, 33}, -1, 1)},
             function(a, b) return a:t():matmul(b) end, tol(129), 1e-5)
   end)
end)

describe('cuda devices and memory', function()
   it('names devices and refuses to mix them', function()
      assert.equals('cpu', tostring(Device.cpu()))
      if not gpu then
         assert.is_truthy(why:find(reason), why)
         assert.equals(Device.cpu(), Device.best())
         assert.equals(0, Device.count('cuda'))
         return
      end
      assert.equals('cuda:0', tostring(gpu))
      assert.equals(gpu, Device.best())
      local x = fnn.ones(4, 5)
      assert.error_matches(function() return x:to(gpu) + x end, 'add: tensors on different devices')
      assert.error_matches(function() return x:to(gpu):item() end, 'on a GPU')
      local n = Device.count('cuda')
      local none, err = Device.cuda(n)
      assert.is_nil(none)
      assert.is_truthy(err:find(('no GPU %d; this machine has %d'):format(n, n), 1, true), err)
   end)

   it('caches freed GPU blocks and gives them back on empty_cache', function()
      collectgarbage(); collectgarbage()   -- earlier cases' GPU garbage must not land in the cache mid-test
      local stats = ffi.new('int64_t[2]')
      local rc = C.fnn_cuda_memory_stats(stats, stats + 1)
      if not gpu then
         if built then
            assert.equals(0, rc)
            assert.equals(0, tonumber(stats[0]))
         else
            assert.equals(-4, rc)   -- FNN_STATUS_DEVICE
            assert.is_truthy(ffi.string(C.fnn_last_error()):find('no CUDA backend', 1, true))
         end
         return
      end
      C.fnn_cuda_empty_cache()
      C.fnn_cuda_memory_stats(stats, stats + 1)
      local live0 = tonumber(stats[0])
      local x = fnn.ones(256, 1024):to(gpu)                 -- 1 MiB
      C.fnn_cuda_memory_stats(stats, stats + 1)
      assert.is_true(tonumber(stats[0]) >= live0 + 1024 * 1024)
      x:free()
      C.fnn_cuda_memory_stats(stats, stats + 1)
      assert.equals(live0, tonumber(stats[0]))
      assert.is_true(tonumber(stats[1]) >= 1024 * 1024)    -- kept for the next allocation
      local y = fnn.ones(256, 1024):to(gpu)                 -- same size: served from the cache
      C.fnn_cuda_memory_stats(stats, stats + 1)
      assert.equals(0, tonumber(stats[1]))
      y:free()
      C.fnn_cuda_empty_cache()
      C.fnn_cuda_memory_stats(stats, stats + 1)
      assert.equals(0, tonumber(stats[1]))
   end)
end)
