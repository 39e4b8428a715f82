-- nn.Embedding and fnn.embedding: rows against a naive lookup in Lua, ids from int64 tensors,
-- float tensors and (nested) Lua arrays, the weight's gradient against naive accumulation, the
-- padding row (zero at init, no gradient), the init, and the errors.
local fnn = require 'fastnn'
local nn = fnn.nn
local S = require 'support'
local approx, err_of = S.approx, S.err_of

-- naive lookup: rows of the weight table for a flat list of ids
local function naive(wt, flat_ids)
   local out = {}
   for _, id in ipairs(flat_ids) do
      for _, v in ipairs(wt[id]) do out[#out + 1] = v end
   end
   return out
end

describe('nn.Embedding', function()
   it('looks up rows for ids from an int64 tensor, a float tensor and Lua arrays', function()
      local m = nn.Embedding(6, 3)
      local wt = m.weight:tensor():to_table()
      local y = m:lookup(fnn.long{2, 6, 2, 1})
      assert.same({4, 3}, y:shape())
      approx(naive(wt, {2, 6, 2, 1}), y)
      approx(naive(wt, {5, 3}), m:lookup(fnn.tensor{5, 3}))
      approx(naive(wt, {4, 4, 1}), m:lookup{4, 4, 1})
      local y2 = m({{1, 2, 3}, {6, 5, 4}})             -- nested: [2, 3] ids -> [2, 3, 3]
      assert.same({2, 3, 3}, y2:shape())
      approx(naive(wt, {1, 2, 3, 6, 5, 4}), y2)
      local y3 = fnn.embedding(fnn.long{{3}, {1}}, m.weight:tensor())
      assert.same({2, 1, 3}, y3:shape())
      approx(naive(wt, {3, 1}), y3)
   end)

   it('names its weight [vocab, width] and draws it from N(0, 1)', function()
      local m = nn.Embedding(400, 25)
      local named = m:named_parameters()
      assert.equals(1, #named)
      assert.equals('weight', named[1][1])
      assert.same({400, 25}, named[1][2]:tensor():shape())
      local v = m.weight:tensor():to_flat()
      local s, s2 = 0, 0
      for _, x in ipairs(v) do s, s2 = s + x, s2 + x * x end
      local mean = s / #v
      local std = math.sqrt(s2 / #v - mean * mean)
      assert.is_true(math.abs(mean) < 0.05, 'mean ' .. mean)
      assert.is_true(math.abs(std - 1) < 0.05, 'std ' .. std)
   end)

   it('adds the gradient of each looked-up row into its id\'s row', function()
      local m = nn.Embedding(5, 2)
      local ids = {4, 1, 4, 4, 2}
      local g = fnn.randn(5, 2)
      m:lookup(ids):backward(g)
      local gt, want = g:to_table(), {}
      for r = 1, 5 do want[r] = {0, 0} end
      for k, id in ipairs(ids) do
         for j = 1, 2 do want[id][j] = want[id][j] + gt[k][j] end
      end
      local flat = {}
      for r = 1, 5 do flat[#flat + 1] = want[r][1]; flat[#flat + 1] = want[r][2] end
      approx(flat, m.weight:grad())
   end)

   it('keeps the padding row zero and gives it no gradient', function()
      local m = nn.Embedding(5, 3, {padding_idx = 2})
      local wt = m.weight:tensor():to_table()
      assert.same({0, 0, 0}, wt[2])
      assert.is_true(math.abs(wt[1][1]) + math.abs(wt[3][1]) > 0)
      local y = m:lookup{2, 3, 2}
      approx({0, 0, 0}, y:select(1, 1))
      y:backward(fnn.ones(3, 3))
      local gt = m.weight:grad():to_table()
      assert.same({0, 0, 0}, gt[2])
      assert.same({1, 1, 1}, gt[3])
      assert.same({0, 0, 0}, gt[1])
      -- negative padding_idx counts from the end
      local m2 = nn.Embedding(4, 2, {padding_idx = -1})
      assert.equals(4, m2.padding_idx)
      assert.same({0, 0}, m2.weight:tensor():to_table()[4])
   end)

   it('refuses an id outside the vocabulary, naming it and the vocabulary size', function()
      local m = nn.Embedding(10, 4)
      local e1 = err_of(function() local _ = m:lookup{3, 11, 1} end)
      assert.matches('embedding_spec.lua:%d+: embedding: id 11 at position 2 of ids %[3%] is outside the vocabulary 1%.%.10 %(weight %[10,4%]%)', e1)
      local e2 = err_of(function() local _ = m(fnn.long{{1, 2}, {0, 3}}) end)
      assert.matches('embedding_spec.lua:%d+: embedding: id 0 at position 3 of ids %[2,2%] is outside the vocabulary 1%.%.10', e2)
      local e3 = err_of(function() local _ = m:lookup(fnn.tensor{1.5}) end)
      assert.matches('embedding_spec.lua:%d+: embedding: id 1%.5 at position 1 of ids %[1%] is not a whole number', e3)
      local e4 = err_of(function() local _ = fnn.embedding({1, 12}, fnn.zeros(10, 2)) end)
      assert.matches('embedding_spec.lua:%d+: embedding: id 12 at position 2 of ids %[2%] is outside the vocabulary 1%.%.10', e4)
   end)

   it('refuses bad ids, sizes and padding_idx', function()
      local m = nn.Embedding(10, 4)
      assert.matches('embedding_spec.lua:%d+: nn%.Embedding%(10, 4%): ids are a string',
                     err_of(function() local _ = m:lookup('abc') end))
      assert.matches('embedding_spec.lua:%d+: nn%.Embedding%(10, 4%): ids: ',
                     err_of(function() local _ = m:lookup{1, 'x'} end))
      assert.matches('embedding_spec.lua:%d+: nn%.Embedding: sizes are 0 and 4',
                     err_of(function() local _ = nn.Embedding(0, 4) end))
      assert.matches('embedding_spec.lua:%d+: nn%.Embedding%(10, 4%): padding_idx 11 outside the vocabulary',
                     err_of(function() local _ = nn.Embedding(10, 4, {padding_idx = 11}) end))
      assert.matches('embedding_spec.lua:%d+: embedding: weight %[10%] is not %[vocabulary,width%]',
                     err_of(function() local _ = fnn.embedding({1}, fnn.zeros(10)) end))
   end)
end)
