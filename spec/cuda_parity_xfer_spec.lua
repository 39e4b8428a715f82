-- CUDA transfers: DataLoader(...):to_device(gpu) against the CPU loader, the pinned host buffer
-- cache, the async host->device copy (fnn_to_device_async) followed by compute, fnn.cuda's
-- synchronize and memory_stats, and device errors. A batch on the GPU is staged into a pinned
-- buffer and copied on the device's copy stream; the compute stream waits for the copy's event on
-- the GPU (no host wait), and the pinned buffer is reused only once its copy is done.
--
-- Tolerances: every comparison here is exact (atol 0, rtol 0): a copy moves bytes, and the
-- compute after it (x * 2 + 1, a sum of whole numbers) is exact in float32 under fast math.
--
-- Under spec/gpu/emulate.sh the copy is a memcpy at once (spec/gpu/emulated_xfer.cpp) and the
-- pinned cache is backend.cu's own HostCache over malloc, so the batches, the cache's reuse and
-- the pending-until-copied path are checked; the copy stream's overlap and the event ordering of
-- a real async copy run only on a GPU (spec/gpu/check.sh).
-- Without a usable GPU every case prints "<case>: skipped: no CUDA device" and checks the reason.
local ffi = require 'ffi'
local fnn = require 'fastnn'
local C = require 'fastnn.C'
local S = require 'cuda_support'
local data = fnn.data
local gpu, case = S.gpu, S.case

-- a dataset of n items: float inputs [n, w] with distinct values, int64 labels 1..10
local function dataset(n, w)
   local x = fnn.arange(n * w):reshape(n, w) / 8
   local v = {}
   for i = 1, n do v[i] = (i * 7) % 10 + 1 end
   return x, fnn.tensor(v):long()
end

-- every batch of one pass, each as {inputs, targets} on the CPU, checking each was on dev
local function pass(loader, dev)
   local out = {}
   for b, i in loader:iter() do
      assert.equals(dev, b.inputs:device())
      if b.targets ~= nil then assert.equals(dev, b.targets:device()) end
      local int = b.targets ~= nil and b.targets:dtype() == 'int64'
      out[i] = {b.inputs:to('cpu'), b.targets and b.targets:to('cpu'), b.size, int and b:labels():to('cpu')}
   end
   return out
end

local function same_passes(label, want, got)
   assert.equals(#want, #got, label .. ': batch counts differ')
   for i = 1, #want do
      local w, g = want[i], got[i]
      S.assert_close(w[1], g[1], 0, 0, ('%s: batch %d inputs'):format(label, i))
      assert.equals(w[3], g[3], ('%s: batch %d size'):format(label, i))
      if w[2] then
         assert.equals(w[2]:dtype(), g[2]:dtype(), ('%s: batch %d targets dtype'):format(label, i))
         assert.same(w[2]:to_table(), g[2]:to_table(), ('%s: batch %d targets'):format(label, i))
         if w[4] then assert.same(w[4]:to_table(), g[4]:to_table(), ('%s: batch %d labels'):format(label, i)) end
      end
   end
end

local four = ffi.new('int64_t[4]')
local function pinned()
   S.ok(C.fnn_cuda_pinned_stats(four))
   return {live = tonumber(four[0]), cached = tonumber(four[1]), allocs = tonumber(four[2]),
           reuses = tonumber(four[3])}
end

-- the raw async entry: x (CPU) -> device, as the loader calls it
local T = require 'fastnn.tensor'
local function async_to(x, dev)
   local h = T.new()
   S.ok(C.fnn_to_device_async(h, x, dev.id))
   return T.done(h)
end

describe('CUDA transfers: DataLoader:to_device and the pinned copy path', function()
   for _, n in ipairs{1, 127, 128, 129, 1025} do
      case(('a shuffled epoch of %d items (batch 128, int64 labels) on cuda equals the CPU epoch'):format(n), function()
         local x, y = dataset(n, 3)
         if not gpu then return S.skip('DataLoader', {x, y}) end
         local function loader() return data.DataLoader(data.TensorDataset(x, y), 128):shuffle(true):seed(7) end
         local want = pass(loader(), fnn.Device.cpu())
         local got = pass(loader():to_device(gpu), gpu)
         same_passes('to_device', want, got)
         -- the next epoch draws a new permutation on both sides alike
         local l1, l2 = loader(), loader():to_device(gpu)
         pass(l1, fnn.Device.cpu()); pass(l2, gpu)
         same_passes('second epoch', pass(l1, fnn.Device.cpu()), pass(l2, gpu))
      end)
   end

   case('prefetch(2) with to_device: the background thread\'s batches reach the GPU unchanged', function()
      local x, y = dataset(1023, 5)
      if not gpu then return S.skip('prefetch', {x, y}) end
      local function loader() return data.DataLoader(data.TensorDataset(x, y), 100):shuffle(true):seed(3) end
      local l = loader():prefetch(2):to_device('cuda:0')
      assert.is_true(l:is_prefetching())
      same_passes('prefetch', pass(loader(), fnn.Device.cpu()), pass(l, gpu))
   end)

   case('a dataset already on the GPU, prefetch(2): the worker\'s batches (gathered on its own stream) are whole', function()
      local x, y = dataset(1025, 6)
      if not gpu then return S.skip('gpu dataset', {x, y}) end
      local gx, gy = x:to(gpu), y:to(gpu)
      local function loader(a, b) return data.DataLoader(data.TensorDataset(a, b), 128):shuffle(true):seed(11) end
      local l = loader(gx, gy):prefetch(2)
      assert.is_true(l:is_prefetching())
      same_passes('gpu dataset', pass(loader(x, y), fnn.Device.cpu()), pass(l, gpu))
   end)

   case('a non-contiguous dataset and a write() dataset with float targets, drop_last', function()
      local base = fnn.arange(300 * 4):reshape(4, 300) / 3
      local xt = base:t()                                  -- [300, 4], transposed view
      if not gpu then return S.skip('views', {xt}) end
      local function l1() return data.DataLoader(data.TensorDataset(xt, xt:narrow(2, 2, 1)), 64):seed(1):shuffle() end
      same_passes('transposed', pass(l1():drop_last(), fnn.Device.cpu()), pass(l1():drop_last():to_device(gpu), gpu))
      local ds = {input_shape = {2, 2}, target_shape = {}}
      function ds.len() return 130 end
      function ds.write(_, i, xin, tgt)
         for k = 0, 3 do xin[k] = i * 10 + k end
         tgt[0] = i % 3 + 1
      end
      local function l2() return data.DataLoader(ds, 32):shuffle():seed(5) end
      same_passes('write()', pass(l2(), fnn.Device.cpu()), pass(l2():to_device(gpu), gpu))
   end)

   case('the pinned cache reuses its buffers across batches and empties on empty_cache', function()
      local x, y = dataset(40 * 64, 16)
      if not gpu then return S.skip('pinned cache', {x}) end
      collectgarbage(); collectgarbage()
      fnn.cuda.empty_cache()
      local s0 = pinned()
      assert.equals(0, s0.live)
      local batches = 0
      for b in data.DataLoader(data.TensorDataset(x, y), 64):to_device(gpu):iter() do
         batches = batches + 1
         assert.equals(64, b.size)
      end
      assert.equals(40, batches)
      local s1 = pinned()
      assert.equals(0, s1.live)                           -- every staging buffer went back
      assert.is_true(s1.cached > 0)
      -- two sizes (inputs, labels): a handful of buffers from the driver, the rest reuses
      assert.is_true(s1.allocs - s0.allocs <= 6, ('%d pinned buffers allocated'):format(s1.allocs - s0.allocs))
      assert.is_true(s1.reuses - s0.reuses >= 2 * 40 - 6, ('%d reuses'):format(s1.reuses - s0.reuses))
      local m = fnn.cuda.memory_stats()
      assert.equals(s1.allocs, m.pinned_allocs)
      assert.equals(s1.reuses, m.pinned_reuses)
      fnn.cuda.synchronize()
      fnn.cuda.empty_cache()
      -- the emulation's empty_cache (spec/gpu/emulated_backend.cpp) has no cache to give back
      if not os.getenv('FASTNN_EMULATED_GPU') then assert.equals(0, pinned().cached) end
   end)

   case('copy then compute: each async copy is seen by the kernels queued after it', function()
      local xs = {}
      for k = 1, 6 do xs[k] = fnn.arange(1025 * 16):reshape(1025, 16) + k end   -- ~64 KiB each
      if not gpu then return S.skip('copy then compute', xs) end
      local sums = {}
      for k = 1, 6 do
         local g = async_to(xs[k], gpu)
         assert.equals(gpu, g:device())
         sums[k] = (g * 2) + 1                            -- queued right behind the copy
      end
      for k = 1, 6 do S.assert_close((xs[k] * 2) + 1, sums[k]:to("cpu"), 0, 0, "copy " .. k) end
      -- the source is staged: writing it once the call returned does not change the device copy
      local src = fnn.empty(129, 7)
      local p = C.fnn_tensor_mutable_data(src)
      for i = 0, 129 * 7 - 1 do p[i] = i / 4 end
      local want = src * 1
      local g = async_to(src, gpu)
      for i = 0, 129 * 7 - 1 do p[i] = -1 end
      S.assert_close(want, g:to('cpu'), 0, 0, 'staged source')
      -- int64 through the same path, exact
      local ids = S.some_ids({1023}, 1000)
      local gi = async_to(ids, gpu)
      assert.equals('int64', gi:dtype())
      assert.same(ids:to_table(), gi:to('cpu'):to_table())
   end)

   case('fallbacks: a Param input keeps its gradient path, the CPU target is a plain ref, empty tensors copy', function()
      local x = S.uniform({127, 3}, -1, 1)
      if not gpu then return S.skip('fallbacks', {x}) end
      local p = fnn.Param(x)
      local g = async_to(p:tensor(), gpu)                  -- needs a gradient: fnn_to_device, with its node
      local loss = (g * 3):sum()
      loss:backward()
      S.assert_close(fnn.full({127, 3}, 3), p:grad(), 0, 0, 'gradient through the copy')
      local c = async_to(x, fnn.Device.cpu())
      assert.equals('cpu', tostring(c:device()))
      local e = async_to(fnn.zeros(0, 4), gpu)
      assert.equals(gpu, e:device())
      assert.equals('[0,4]', e:shape_str())
   end)

   case('synchronize, and device errors: a GPU batch with a CPU tensor, a missing GPU', function()
      local x, y = dataset(129, 4)
      if not gpu then
         S.skip('errors', {x})
         -- without a GPU, synchronize on the CPU is a no-op and on cuda an error naming why
         fnn.cuda.synchronize('cpu')
         assert.error_matches(function() fnn.cuda.synchronize() end, 'synchronize: ' .. S.reason)
         return
      end
      fnn.cuda.synchronize()
      fnn.cuda.synchronize(gpu)
      fnn.cuda.synchronize('cpu')
      local b = data.DataLoader(data.TensorDataset(x, y), 129):to_device(gpu):iter()()
      assert.error_matches(function() return b.inputs + x end, 'add: tensors on different devices')
      assert.error_matches(function() return b.inputs + x end, 'cuda:0')
      assert.error_matches(function() return b.inputs + x end, 'cpu')
      local n = fnn.Device.count('cuda')
      assert.error_matches(function() fnn.cuda.synchronize('cuda:' .. n) end, 'no GPU ' .. n)
      local h = T.new()
      assert.equals(-4, C.fnn_to_device_async(h, x, 256 + n))   -- FNN_STATUS_DEVICE
      assert.is_truthy(ffi.string(C.fnn_last_error()):find('cuda:' .. n, 1, true))
      assert.error_matches(function()
         for _ in data.DataLoader(data.TensorDataset(x, y), 64):to_device('cuda:' .. n):iter() do end
      end, 'no GPU ' .. n)
   end)

   for _, n in ipairs{1, 127, 128, 129, 1025} do
      case(('zeros, ones, full, empty and the *_like creators of %d elements are made on the GPU'):format(n), function()
         local probe = fnn.randn(n)
         if not gpu then
            S.skip('creators', {probe})
            assert.error_matches(function() return fnn.zeros(n, {device = 'cuda'}) end, 'zeros: ' .. S.reason)
            return
         end
         for _, c in ipairs{
            {'zeros', fnn.zeros(n, {device = gpu}), fnn.zeros(n)},
            {'ones', fnn.ones({n}, {device = 'cuda:0'}), fnn.ones(n)},
            {'full', fnn.full({n}, -2.5, {device = gpu}), fnn.full({n}, -2.5)},
            {'full int64', fnn.full({n}, 2^40 + 3, {device = gpu, dtype = 'int64'}), fnn.full({n}, 2^40 + 3, {dtype = 'int64'})},
            {'zeros_like', fnn.zeros_like(probe:to(gpu)), fnn.zeros(n)},
            {'ones_like int64', fnn.ones_like(probe:to(gpu), {dtype = 'int64'}), fnn.ones(n, {dtype = 'int64'})},
            {'full_like', fnn.full_like(probe:to(gpu), 4), fnn.full({n}, 4)},
         } do
            local label, got, want = c[1], c[2], c[3]
            assert.equals(gpu, got:device(), label)
            assert.equals(want:dtype(), got:dtype(), label)
            assert.same(want:to_flat(), got:to('cpu'):to_flat(), label)
         end
         local e = fnn.empty({n, 2}, {device = gpu})
         assert.equals(gpu, e:device())
         assert.same({n, 2}, e:shape())
         for _, r in ipairs{fnn.rand_like(probe:to(gpu)), fnn.randn_like(probe:to(gpu))} do
            assert.equals(gpu, r:device())
            assert.same({n}, r:shape())
         end
         local u = fnn.rand_like(fnn.zeros(4096, {device = gpu})):to('cpu'):to_flat()
         for i = 1, #u do assert.is_true(u[i] >= 0 and u[i] < 1, 'rand_like: ' .. u[i]) end
      end)
   end
end)
