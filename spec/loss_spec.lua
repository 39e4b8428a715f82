-- cross_entropy and mse_loss against naive Lua loops, numerical safety with
-- large logits, gradients against hand-written formulas, and the errors.
local fnn = require 'fastnn'

local function close(expected, got, tol)
   assert.is_true(math.abs(expected - got) <= (tol or 1e-5) * math.max(1, math.abs(expected)),
                  ('expected %.7g got %.7g'):format(expected, got))
end

local function approx(expected, t, tol)
   local got = t:to_flat()
   assert.equals(#expected, #got)
   for i = 1, #expected do close(expected[i], got[i], tol) end
end

-- naive mean of -log softmax(x)[target], in doubles, via the textbook formula
local function naive_ce(rows, targets)
   local total = 0
   for i, row in ipairs(rows) do
      local s = 0
      for _, v in ipairs(row) do s = s + math.exp(v) end
      total = total - math.log(math.exp(row[targets[i]]) / s)
   end
   return total / #rows
end

describe('cross_entropy', function()
   it('is the mean negative log-softmax at the targets', function()
      local logits = fnn.randn(6, 10)
      local targets = {1, 10, 3, 3, 7, 2}
      local loss = fnn.cross_entropy(logits, targets)
      assert.are.same({}, loss:shape())
      close(naive_ce(logits:to_table(), targets), loss:item())
   end)

   it('takes the targets as a tensor too, and as a method', function()
      local logits = fnn.randn(3, 4)
      local t = fnn.tensor{4, 1, 2}
      close(naive_ce(logits:to_table(), {4, 1, 2}), logits:cross_entropy(t):item())
   end)

   it('reads non-contiguous logits and targets', function()
      local x = fnn.randn(5, 3)                  -- logits are x^T: [3,5], column-major
      local t = fnn.tensor{{2, 0}, {5, 0}, {1, 0}}:select(2, 1)   -- [3], stride 2
      close(naive_ce(x:t():to_table(), {2, 5, 1}), fnn.cross_entropy(x:t(), t):item())
   end)

   it('stays finite with huge logits (subtracts the row max)', function()
      local loss = fnn.cross_entropy(fnn.tensor{{1000, 0, -1000}, {-500, 500, 499}}, {1, 3})
      -- row 1: lse = 1000 -> 0; row 2: lse = 500 + log(1 + e^-1) -> 1 + log(1 + e^-1)
      close((0 + 1 + math.log(1 + math.exp(-1))) / 2, loss:item())
   end)

   it('has the gradient (softmax - onehot) / N, only for the logits', function()
      local p = fnn.Param(fnn.randn(3, 4))
      local loss = fnn.cross_entropy(p:tensor(), {2, 4, 1})
      assert.equals('cross_entropy', loss:grad_fn())
      loss:backward()
      local expected = {}
      for i, row in ipairs(p:tensor():to_table()) do
         local s = 0
         for _, v in ipairs(row) do s = s + math.exp(v) end
         for j, v in ipairs(row) do
            expected[#expected + 1] = (math.exp(v) / s - (j == ({2, 4, 1})[i] and 1 or 0)) / 3
         end
      end
      approx(expected, p:grad())
   end)

   it('scales its gradient by the incoming one', function()
      local p = fnn.Param(fnn.tensor{{0, 0}})
      local loss = fnn.cross_entropy(p:tensor(), {1}) * 4
      loss:backward()
      approx({4 * (0.5 - 1), 4 * 0.5}, p:grad())
   end)

   it('refuses a class id out of range, naming it and the range', function()
      local _, err = pcall(function() return fnn.cross_entropy(fnn.zeros(2, 10), {3, 11}) end)
      assert.matches('cross_entropy: class id 11 outside 1%.%.10', err)
      local _, e2 = pcall(function() return fnn.cross_entropy(fnn.zeros(2, 10), {0, 1}) end)
      assert.matches('cross_entropy: class id 0 outside 1%.%.10', e2)
      local _, e3 = pcall(function() return fnn.cross_entropy(fnn.zeros(1, 3), {1.5}) end)
      assert.matches('cross_entropy: class id 1.5 is not a whole number', e3)
   end)

   it('refuses shapes that do not agree, naming both', function()
      local _, err = pcall(function()
         local l = fnn.cross_entropy(fnn.zeros(4, 10), fnn.ones(5))
         return l
      end)
      assert.matches('loss_spec.lua:%d+: cross_entropy: logits %[4,10%] and targets %[5%] do not agree', err)
      local _, e2 = pcall(function() return fnn.cross_entropy(fnn.zeros(10), fnn.ones(1)) end)
      assert.matches('cross_entropy: logits %[10%] and targets %[1%] do not agree', e2)
      local _, e3 = pcall(function() return fnn.cross_entropy(fnn.zeros(2, 3), {1, 'a'}) end)
      assert.matches('cross_entropy: targets%[2%] is a string', e3)
   end)
end)

describe('mse_loss', function()
   it('is the mean squared difference', function()
      local p, t = fnn.randn(3, 5), fnn.randn(3, 5)
      local pv, tv, s = p:to_flat(), t:to_flat(), 0
      for i = 1, #pv do s = s + (pv[i] - tv[i]) ^ 2 end
      local loss = fnn.mse_loss(p, t)
      assert.are.same({}, loss:shape())
      close(s / #pv, loss:item())
      close(s / #pv, p:mse_loss(t):item())
   end)

   it('reads non-contiguous and expanded inputs', function()
      local p = fnn.tensor{{1, 2}, {3, 4}}:t()      -- {{1, 3}, {2, 4}}
      local t = fnn.tensor{{1, 1}}:expand(2, 2)
      close((0 + 4 + 1 + 9) / 4, fnn.mse_loss(p, t):item())
   end)

   it('gives 2 (p - t) / n to pred and its negative to target', function()
      local pp, pt = fnn.Param(fnn.tensor{1, 2, 3, 4}), fnn.Param(fnn.tensor{0, 2, 5, 1})
      fnn.mse_loss(pp:tensor(), pt:tensor()):backward()
      approx({0.5, 0, -1, 1.5}, pp:grad())
      approx({-0.5, 0, 1, -1.5}, pt:grad())
   end)

   -- PyTorch's reduction argument: 'sum' and 'none' against the same loop; a misspelt option or an unknown
   -- reduction is refused by name (it was ignored, giving the mean)
   it('takes {reduction = sum | none | mean}, as F.mse_loss does, and refuses what it does not know', function()
      local p, t = fnn.randn(4, 3), fnn.randn(4, 3)
      local pv, tv, s, each = p:to_flat(), t:to_flat(), 0, {}
      for i = 1, #pv do each[i] = (pv[i] - tv[i]) ^ 2; s = s + each[i] end
      close(s, fnn.mse_loss(p, t, {reduction = 'sum'}):item())
      close(s, p:mse_loss(t, 'sum'):item())
      close(s / #pv, fnn.mse_loss(p, t, {reduction = 'mean'}):item())
      approx(each, fnn.mse_loss(p, t, {reduction = 'none'}))
      assert.same({4, 3}, fnn.mse_loss(p, t, {reduction = 'none'}):shape())
      assert.matches("mse_loss: unknown option 'reduce'", select(2, pcall(fnn.mse_loss, p, t, {reduce = 'sum'})))
      assert.matches("mse_loss: reduction 'avg' is not one of 'mean', 'sum', 'none'",
                     select(2, pcall(fnn.mse_loss, p, t, {reduction = 'avg'})))
   end)

   it('refuses different shapes, naming both', function()
      local _, err = pcall(function() return fnn.mse_loss(fnn.zeros(2, 3), fnn.zeros(3, 2)) end)
      assert.matches('mse_loss: pred %[2,3%] and target %[3,2%] differ in shape', err)
      local _, e2 = pcall(function() return fnn.mse_loss(fnn.zeros(2), {1, 2}) end)
      assert.matches('mse_loss: target is a table, expected a tensor', e2)
   end)
end)
