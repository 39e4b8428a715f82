-- DataLoader {reuse = true}: each batch written into buffers the loader owns and overwrites with a
-- later batch. The batches must be exactly the default loader's (values, order, sizes, the last
-- partial batch), on the main thread and with prefetch; a held batch is really overwritten by the
-- next one (the documented semantics); the buffers are the same storage across batches; the
-- option is refused where it cannot apply.
local fnn = require 'fastnn'
local data = fnn.data

local batches = require('support').batches

-- 23 items: inputs [23, 3, 2] random, targets int64 ids (a permutation, so they identify items)
local function items(n)
   fnn.manual_seed(5)
   return data.TensorDataset(fnn.randn(n, 3, 2), fnn.randperm(n))
end

local TEXT = ('the quick brown fox jumps over the lazy dog. '):rep(5)

describe('DataLoader reuse', function()
   it('gives the default batches: shuffle, drop_last, prefetch 0..3, workers 1 and 2', function()
      local ds = items(23)
      for _, b in ipairs{1, 5, 23, 40} do
         for _, shuffle in ipairs{false, true} do
            for _, drop in ipairs{false, true} do
               local want = batches(data.DataLoader(ds, b, {shuffle = shuffle, seed = b, drop_last = drop}))
               assert.equals(drop and math.floor(23 / b) or math.ceil(23 / b), #want)
               for _, depth in ipairs{0, 1, 2, 3} do
                  for _, w in ipairs{1, 2} do
                     local loader = data.DataLoader(ds, b, {shuffle = shuffle, seed = b, drop_last = drop,
                                                            reuse = true}):prefetch(depth, {workers = w})
                     local got = batches(loader)
                     assert.same(want, got)
                     if not drop and 23 % b ~= 0 then assert.equals(23 % b, got[#got].size) end
                     if depth == 0 then break end   -- workers only matter with prefetch
                  end
               end
            end
         end
      end
   end)

   it('gives the default batches of a TextDataset, Mnist-like byte images and targets-less data', function()
      local text = data.TextDataset(TEXT, 5, {text = true})
      local want = batches(data.DataLoader(text, 4, {shuffle = true, seed = 2}))
      assert.same(want, batches(data.DataLoader(text, 4, {shuffle = true, seed = 2}):reuse()))
      assert.same(want, batches(data.DataLoader(text, 4, {shuffle = true, seed = 2, reuse = true, prefetch = 3,
                                                          workers = 2})))
      fnn.manual_seed(1)
      local plain = data.TensorDataset(fnn.rand(17, 28, 28))
      local want2 = batches(data.DataLoader(plain, 8):shuffle(true):seed(3))
      assert.is_nil(want2[1].targets)
      assert.same(want2, batches(data.DataLoader(plain, 8):shuffle(true):seed(3):reuse(true)))
      assert.same(want2, batches(data.DataLoader(plain, 8):shuffle(true):seed(3):reuse(true):prefetch(2)))
   end)

   it('overwrites a held batch with the next one: a batch is valid until the loop asks for the next', function()
      local ds = items(23)
      local want = batches(data.DataLoader(ds, 5, {shuffle = true, seed = 9}))
      local it = data.DataLoader(ds, 5, {shuffle = true, seed = 9, reuse = true}):iter()
      local first = it()
      assert.same(want[1].inputs, first.inputs:to_flat())
      local kept = first.inputs * 1   -- what a loop must do to keep one: a copy
      local second = it()
      assert.same(want[2].inputs, second.inputs:to_flat())
      assert.same(want[2].inputs, first.inputs:to_flat())   -- the held batch now reads the second
      assert.same(want[1].inputs, kept:to_flat())
      assert.are_not.same(want[1].inputs, want[2].inputs)
      -- the last, shorter batch is a view of the buffer's first rows
      local last
      for batch in function() return it() end do last = batch end
      assert.equals(3, last.size)
      assert.same({3, 3, 2}, last.inputs:shape())
      assert.same(want[5].inputs, last.inputs:to_flat())
      assert.same(want[5].targets, last.targets:to_flat())
   end)

   it('writes every batch of a pass into the same storage, and the default does not', function()
      local ds = items(40)
      local function ids(loader)
         local seen, n = {}, 0
         for batch in loader:iter() do
            local id = batch.inputs:storage_id()
            if not seen[id] then seen[id], n = true, n + 1 end
         end
         return n
      end
      assert.equals(1, ids(data.DataLoader(ds, 4, {shuffle = true, reuse = true})))
      assert.equals(10, ids(data.DataLoader(ds, 4, {shuffle = true})))
      -- prefetch: a pool of depth + 1 + workers buffers at most
      for _, depth in ipairs{1, 3} do
         for _, w in ipairs{1, 2} do
            local n = ids(data.DataLoader(ds, 4, {shuffle = true, reuse = true, prefetch = depth, workers = w}))
            assert.is_true(n >= 1 and n <= depth + 1 + w, ('%d buffers for depth %d, %d workers'):format(n, depth, w))
         end
      end
      -- the windows of a TextDataset too (44 windows, 11 batches)
      local text = data.TextDataset(TEXT, 5, {text = true, stride = 5})
      assert.equals(11, ids(data.DataLoader(text, 4)))
      assert.equals(1, ids(data.DataLoader(text, 4, {reuse = true})))
      local n = ids(data.DataLoader(text, 4, {reuse = true, prefetch = 2, workers = 2}))
      assert.is_true(n >= 1 and n <= 5, n .. ' buffers for depth 2, 2 workers')
   end)

   it('leaves no buffer behind when a pass ends or is abandoned, main thread or prefetch', function()
      local ds = items(300)
      local function settle() collectgarbage(); collectgarbage() end
      for _, depth in ipairs{0, 3} do
         for _ in data.DataLoader(ds, 10, {reuse = true, prefetch = depth, workers = 2}):iter() do end
      end
      settle()
      local base = fnn.live_bytes()
      for _, depth in ipairs{0, 1, 3} do
         for _ = 1, 5 do   -- whole passes, and passes left after a few batches
            for _ in data.DataLoader(ds, 7, {shuffle = true, reuse = true, prefetch = depth, workers = 2}):iter() do end
            for batch, i in data.DataLoader(ds, 7, {shuffle = true, reuse = true, prefetch = depth}):iter() do
               if i == 3 then break end
            end
         end
      end
      settle()
      assert.equals(base, fnn.live_bytes())
      -- a batch held past its pass keeps its buffer alive (and readable) until it is dropped
      local last
      for batch in data.DataLoader(ds, 7, {reuse = true, prefetch = 2}):iter() do last = batch end
      settle()
      assert.equals(300 % 7, last.size)
      assert.same(ds.inputs:narrow(1, 295, 6):to_flat(), last.inputs:to_flat())
      assert.is_true(fnn.live_bytes() > base)
      last = nil
      settle()
      assert.equals(base, fnn.live_bytes())
   end)

   it('makes batches with no autograd history, from a dataset that has some', function()
      local p = fnn.Param(fnn.randn(10, 3))
      local ds = data.TensorDataset(p:tensor() * 2, fnn.randperm(10))
      assert.equals('mul_scalar', ds.inputs:grad_fn())
      for _, depth in ipairs{0, 2} do
         for batch in data.DataLoader(ds, 4, {reuse = true, prefetch = depth}):iter() do
            assert.is_nil(batch.inputs:grad_fn())
            assert.is_nil(batch.targets:grad_fn())
         end
      end
   end)

   it('keeps batches on the cpu with to_device("cpu") and refuses where it cannot apply', function()
      local ds = items(12)
      local want = batches(data.DataLoader(ds, 5, {shuffle = true, seed = 1}))
      assert.same(want, batches(data.DataLoader(ds, 5, {shuffle = true, seed = 1, reuse = true, device = 'cpu'})))
      local function refused(pattern, f)
         local ok, err = pcall(f)
         assert.is_false(ok)
         assert.matches(pattern, err)
      end
      local by_get = {len = function() return 3 end, get = function(_, i) return fnn.ones(2) * i, i end}
      local by_take = {len = function() return 3 end, take = function() return fnn.ones(3, 2) end}
      refused('reuse is not supported for a Lua dataset with get%(%)', function()
         return data.DataLoader(by_get, 2, {reuse = true})
      end)
      refused('reuse is not supported for a Lua dataset with take%(%)', function()
         return data.DataLoader(by_take, 2):reuse(true)
      end)
      refused('spec/loader_reuse_spec%.lua:%d+: DataLoader: reuse is not supported for ImageFolder', function()
         local l = data.DataLoader(data.ImageFolder('spec/fixtures'), 2):reuse()   -- not a tail call: the line
         return l
      end)
      -- refused, not silently ignored: the loader stays as it was and makes fresh batches
      local loader = data.DataLoader(by_get, 2)
      assert.is_false(pcall(loader.reuse, loader, true))
      assert.is_nil(loader._reuse)
      assert.is_true(#batches(loader) == 2)
      if fnn.cuda and fnn.cuda.is_available and fnn.cuda.is_available() then
         refused('reuse is for batches on the cpu, not moved to cuda:0', function()
            return data.DataLoader(ds, 2, {reuse = true}):to_device('cuda')
         end)
         refused('reuse is for batches on the cpu, not moved to cuda:0', function()
            return data.DataLoader(ds, 2, {device = 'cuda'}):reuse()
         end)
      end
      -- reuse(false) turns it off again: fresh batches
      local off = data.DataLoader(ds, 5, {reuse = true}):reuse(false)
      local a, b
      for batch, i in off:iter() do if i == 1 then a = batch.inputs elseif i == 2 then b = batch.inputs end end
      assert.are_not.equal(a:storage_id(), b:storage_id())
   end)
end)
