-- DataLoader:prefetch(k): batches assembled on a C thread (core/io/prefetch.c) must be exactly the
-- batches of the main-thread path, cover every item once per pass, and leave no thread or buffer
-- behind when a pass ends, is abandoned, or its loader is collected. Lua datasets fall back to the
-- main thread.
local fnn = require 'fastnn'
local data = fnn.data

local batches = require('support').batches

local function threads()
   local f = assert(io.open('/proc/self/stat'))
   local pid = f:read('*a'):match('^(%d+)')
   f:close()
   local p = io.popen('ls /proc/' .. pid .. '/task')
   local n = 0
   for _ in p:lines() do n = n + 1 end
   p:close()
   return n
end

local function settle()
   collectgarbage()
   collectgarbage()
end

-- 23 items: inputs [23, 3, 2] random, targets int64 ids (a permutation, so they identify items)
local function items(n)
   fnn.manual_seed(5)
   return data.TensorDataset(fnn.randn(n, 3, 2), fnn.randperm(n))
end

describe('DataLoader:prefetch', function()
   it('gives the same batches as the main thread, for every batch size, drop_last and depth', function()
      local ds = items(23)
      for _, b in ipairs{1, 4, 5, 23, 40} do
         for _, drop in ipairs{false, true} do
            for _, depth in ipairs{1, 2, 7} do
               local plain = batches(data.DataLoader(ds, b):shuffle(true):seed(b):drop_last(drop))
               local loader = data.DataLoader(ds, b):shuffle(true):seed(b):drop_last(drop):prefetch(depth)
               assert.is_true(loader:is_prefetching())
               local fetched = batches(loader)
               assert.same(plain, fetched)
               local want = drop and math.floor(23 / b) or math.ceil(23 / b)
               assert.equals(want, #fetched)
               if not drop and 23 % b ~= 0 then assert.equals(23 % b, fetched[#fetched].size) end
            end
         end
      end
   end)

   it('gives the same batches with any number of workers, rows and windows', function()
      local ds = items(41)
      local plain = batches(data.DataLoader(ds, 3):shuffle(true):seed(8))
      for _, w in ipairs{1, 2, 5, 64} do
         for _, depth in ipairs{1, 3, 16} do
            local loader = data.DataLoader(ds, 3):shuffle(true):seed(8):prefetch(depth, {workers = w})
            assert.same(plain, batches(loader))
         end
      end
      local text = data.TextDataset(('the quick brown fox jumps over the lazy dog. '):rep(5), 5, {text = true})
      local want = batches(data.DataLoader(text, 4):shuffle(true):seed(2))
      assert.same(want, batches(data.DataLoader(text, 4, {shuffle = true, seed = 2, prefetch = 4, workers = 3})))
   end)

   it('runs its workers as threads and stops them all when the pass ends or is abandoned', function()
      local ds = items(300)
      for _ in data.DataLoader(ds, 10):prefetch(2, {workers = 4}):iter() do end
      settle()
      local base_threads, base_bytes = threads(), fnn.live_bytes()
      local loader = data.DataLoader(ds, 3):prefetch(8, {workers = 4})
      assert.matches('prefetch 8, 4 workers', tostring(loader))
      local it = loader:iter()
      it()
      assert.equals(base_threads + 4, threads())
      it, loader = nil, nil
      settle()
      assert.equals(base_threads, threads())
      assert.equals(base_bytes, fnn.live_bytes())
      for _ = 1, 10 do
         for batch in data.DataLoader(ds, 7):shuffle(true):prefetch(3, {workers = 3}):iter() do
            if batch.size > 0 then break end
         end
      end
      settle()
      assert.equals(base_threads, threads())
      assert.equals(base_bytes, fnn.live_bytes())
   end)

   it('covers every item exactly once per pass, in a new order each pass, reproducible from the seed', function()
      local ds = items(50)
      local function pass(loader)
         local seen = {}
         for batch in loader:iter() do
            for _, id in ipairs(batch:labels():to_table()) do seen[#seen + 1] = id end
         end
         return seen
      end
      local loader = data.DataLoader(ds, 8):shuffle(true):seed(3):prefetch(2)
      local a, b = pass(loader), pass(loader)
      for _, p in ipairs{a, b} do
         assert.equals(50, #p)
         local count = {}
         for _, id in ipairs(p) do count[id] = (count[id] or 0) + 1 end
         for id = 1, 50 do assert.equals(1, count[id]) end
      end
      assert.are_not.same(a, b)
      local again = data.DataLoader(ds, 8):shuffle(true):seed(3):prefetch(3)
      assert.same(a, pass(again))
      assert.same(b, pass(again))
   end)

   it('handles inputs without targets and non-contiguous inputs', function()
      local x = fnn.arange(60):reshape(5, 12):t()      -- [12, 5], rows strided
      local ds = data.TensorDataset(x)
      local plain = batches(data.DataLoader(ds, 5):shuffle(true):seed(1))
      local fetched = batches(data.DataLoader(ds, 5):shuffle(true):seed(1):prefetch(2))
      assert.same(plain, fetched)
      assert.is_nil(fetched[1].targets)
      -- against the rows themselves
      local rows = x:to_table()
      local got = {}
      for batch in data.DataLoader(ds, 12):prefetch(1):iter() do got[#got + 1] = batch.inputs:to_table() end
      assert.same({rows}, got)
   end)

   it('batches text windows on the thread', function()
      local ds = data.TextDataset(('the quick brown fox jumps over the lazy dog. '):rep(4), 6, {text = true, stride = 2})
      local plain = batches(data.DataLoader(ds, 7):shuffle(true):seed(9))
      local fetched = batches(data.DataLoader(ds, 7):shuffle(true):seed(9):prefetch(2))
      assert.same(plain, fetched)
      assert.equals('int64', fetched[1].idtype)
      assert.same({7, 6}, fetched[1].ishape)
   end)

   it('falls back to the main thread for a Lua dataset, with the same batches', function()
      local get = {len = function() return 9 end, get = function(_, i) return fnn.tensor{i, -i}, i end}
      local write = {input_shape = {2}, target_shape = {}, len = function() return 9 end,
                     write = function(_, i, x, y) x[0], x[1] = i, -i; y[0] = i end}
      for _, ds in ipairs{get, write} do
         local loader = data.DataLoader(ds, 4):shuffle(true):seed(2):prefetch(3)
         assert.is_false(loader:is_prefetching())
         assert.matches('prefetch 3 %(main thread: a Lua dataset%)', tostring(loader))
         assert.same(batches(data.DataLoader(ds, 4):shuffle(true):seed(2)), batches(loader))
      end
   end)

   it('moves batches to the device asked for', function()
      local ds = items(6)
      local got = batches(data.DataLoader(ds, 4):prefetch(1):to_device('cpu'))
      assert.same(batches(data.DataLoader(ds, 4)), got)
   end)

   it('stops its thread and frees its batches when a pass is abandoned or the loader collected', function()
      local ds = items(200)
      -- warm up: thread pools and caches that stay
      for _ in data.DataLoader(ds, 10):prefetch(2):iter() do end
      settle()
      local base_threads, base_bytes = threads(), fnn.live_bytes()
      for _ = 1, 20 do
         for batch in data.DataLoader(ds, 10):shuffle(true):prefetch(4):iter() do
            if batch.size > 0 then break end            -- abandoned after one batch
         end
      end
      local loader = data.DataLoader(ds, 3):prefetch(8)
      local it = loader:iter()
      it()
      assert.is_true(threads() > base_threads)        -- a pass in flight holds its thread
      it, loader = nil, nil
      settle()
      assert.equals(base_threads, threads())
      assert.equals(base_bytes, fnn.live_bytes())
      -- finished passes stop their thread right away, without waiting for the GC
      collectgarbage('stop')
      for _ = 1, 30 do
         for _ in data.DataLoader(ds, 50):prefetch(2):iter() do end
      end
      local after = threads()
      collectgarbage('restart')
      assert.equals(base_threads, after)
   end)

   it('refuses a bad depth and a freed dataset tensor, at the caller', function()
      assert.has_error(function() data.DataLoader(items(3), 2):prefetch(-1) end,
                       'DataLoader:prefetch: depth is -1, expected an integer 0..1024')
      assert.has_error(function() data.DataLoader(items(3), 2):prefetch(1.5) end,
                       'DataLoader:prefetch: depth is 1.5, expected an integer 0..1024')
      assert.has_error(function() data.DataLoader(items(3), 2):prefetch(2, {workers = 0}) end)
      local ok, err = pcall(function() data.DataLoader(items(3), 2):prefetch(2, {workers = 65}) end)
      assert.is_false(ok)
      assert.matches('^spec/prefetch_spec%.lua:%d+: data%.DataLoader:prefetch: .*workers.*65', err)
      ok, err = pcall(function() data.DataLoader(items(3), 2):prefetch(2, {worker = 2}) end)
      assert.is_false(ok)
      assert.matches("data%.DataLoader:prefetch: .*'worker'.*workers", err)
      ok, err = pcall(function() data.DataLoader(items(3), 2, {workers = 1.5}) end)
      assert.matches('^spec/prefetch_spec%.lua:%d+: data%.DataLoader: .*workers', err)
      local ffi, C = require 'ffi', require('fastnn.tensor').C
      local pp, ids = ffi.new('fnn_prefetch *[1]'), ffi.new('int64_t[1]', 1)
      assert.equals(-2, C.fnn_prefetch_new(pp, C.FNN_PREFETCH_ROWS, fnn.randn(3), nil, 0, 0, 1, ids, 1, 1, 65))
      assert.matches('prefetch: 65 workers, expected 1%.%.64', ffi.string(C.fnn_last_error()))
      local x = fnn.randn(4, 3)
      local ds = data.TensorDataset(x)
      x:free()
      local ok, err = pcall(function() local _ = data.DataLoader(ds, 2):prefetch(2):iter() end)
      assert.is_false(ok)
      assert.matches('^spec/prefetch_spec%.lua:%d+: prefetch: tensor was freed', err)
      assert.is_false(data.DataLoader(items(3), 2):prefetch(0):is_prefetching())
   end)
end)

describe('DataLoader:prefetch on Fashion-MNIST', function()
   it('gives the same shuffled epoch as the main thread', function()
      local ds = data.FashionMnist.load('test')
      local a = data.DataLoader(ds, 128):shuffle(true):seed(4):iter()
      local b = data.DataLoader(ds, 128):shuffle(true):seed(4):prefetch(3):iter()
      local n = 0
      while true do
         local x, y = a(), b()
         if x == nil then assert.is_nil(y) break end
         assert.equals(x.size, y.size)
         assert.equals(0, (x.inputs - y.inputs):abs():max():item())
         local lx, ly = x:labels():to_table(), y:labels():to_table()
         assert.same(lx, ly)
         n = n + y.size
      end
      assert.equals(10000, n)
   end)
end)
