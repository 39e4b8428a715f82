-- The int64 dtype (core/tensor.c, every op family's entry checks): ids, labels,
-- indices and permutations stay exact past 2^24, where float32 rounds. Producers
-- of indices return int64; consumers take int64, whole-number floats and Lua
-- arrays; int64 arithmetic follows PyTorch's promotion; float-only ops refuse
-- int64 naming the op and the dtype; no gradient ever reaches an int64 tensor.
local fnn = require 'fastnn'
local support = require 'support'
local err_of = support.err_of

local BIG = 2^24            -- the first float32 that has no neighbour one above it

describe('dtype', function()
   it('is float32 by default and int64 when asked; tostring prints integers and names the dtype', function()
      assert.equals('float32', fnn.tensor{1, 2}:dtype())
      assert.equals('float32', fnn.randn(3):dtype())
      local t = fnn.long{{1, -2}, {30, 4}}
      assert.equals('int64', t:dtype())
      assert.equals('int64', fnn.tensor({5, 6}, {dtype = 'int64'}):dtype())
      assert.equals('int64', fnn.tensor({5, 6}, {2}, {dtype = 'int64'}):dtype())
      local s = tostring(t)
      assert.matches('tensor%(%[%[ *1, *%-2%],', s)
      assert.matches('int64', s)
      assert.is_nil(s:find('1%.'))
      assert.is_nil(tostring(fnn.tensor{1, 2}):find('int64'))
      assert.matches("tensor: dtype is int32, expected 'float32', 'int64' or 'bfloat16'",
                     err_of(function() return fnn.tensor({1}, {dtype = 'int32'}) end))
   end)

   it('keeps whole numbers exact past 2^24 (float32 would round them)', function()
      local ids = fnn.long{BIG + 1, BIG + 3, -BIG - 1, 2^53}
      assert.same({BIG + 1, BIG + 3, -BIG - 1, 2^53}, ids:to_table())
      assert.equals(BIG + 1, ids[1])
      assert.equals(4, #ids)
      assert.equals(BIG + 3, ids:narrow(1, 2, 1):item())
      assert.are_not.equal(BIG + 1, fnn.tensor{BIG + 1}[1])   -- the float32 it replaces
   end)

   it('refuses values int64 cannot hold, naming the value and its position', function()
      assert.matches('tensor: element 3 of %[3%] is 2.5, not a whole number',
                     err_of(function() return fnn.long{1, 2, 2.5} end))
      assert.matches('element 2 of %[2%] is nan', err_of(function() return fnn.long{1, 0 / 0} end))
      assert.matches('element 1 of %[1%] is 1e%+30, outside the int64 range',
                     err_of(function() return fnn.long{1e30} end))
      assert.matches('long: element 4 of %[2,2%] is 0.5, not a whole number',
                     err_of(function() return fnn.tensor{{1, 2}, {3, 0.5}}:long() end))
      assert.matches('long: element 1 of %[1%] is inf', err_of(function() return fnn.tensor{math.huge}:long() end))
   end)
end)

describe('conversion', function()
   it('long() and float() convert, strided inputs included; same dtype returns the tensor itself', function()
      local f = fnn.tensor{{1, 2, 3}, {-4, 5, 6}}
      local l = f:t():long()
      assert.equals('int64', l:dtype())
      assert.same({{1, -4}, {2, 5}, {3, 6}}, l:to_table())
      local back = l:float()
      assert.equals('float32', back:dtype())
      assert.same({{1, -4}, {2, 5}, {3, 6}}, back:to_table())
      local big = fnn.arange(100)
      assert.equals(big:storage_id(), big:long():storage_id())
      assert.equals('int64', fnn.long(f):dtype())
      assert.equals('int64', fnn.tensor(f, {dtype = 'int64'}):dtype())
   end)
end)

describe('creation', function()
   it('arange gives int64 for whole numbers (as PyTorch) and float32 otherwise', function()
      local a = fnn.arange(5)
      assert.equals('int64', a:dtype())
      assert.same({0, 1, 2, 3, 4}, a:to_table())
      assert.same({10, 7, 4, 1}, fnn.arange(10, 0, -3):to_table())
      assert.equals('float32', fnn.arange(0, 1, 0.25):dtype())
      assert.same({0, 0.25, 0.5, 0.75}, fnn.arange(0, 1, 0.25):to_table())
      local f = fnn.arange(3, {dtype = 'float32'})
      assert.equals('float32', f:dtype())
      assert.same({0, 1, 2}, f:to_table())
      assert.equals('int64', fnn.arange(1, 4, {dtype = 'int64'}):dtype())
      assert.matches('arange: an int64 range takes whole numbers',
                     err_of(function() return fnn.arange(0, 2, 0.5, {dtype = 'int64'}) end))
      local big = fnn.arange(BIG + 10)
      assert.equals(BIG + 9, big[BIG + 10])
      assert.equals(BIG, big[BIG + 1])
   end)

   it('zeros, ones, full and the *_like creators take a dtype; *_like keeps the one they copy', function()
      local z = fnn.zeros(2, 3, {dtype = 'int64'})
      assert.equals('int64', z:dtype())
      assert.same({{0, 0, 0}, {0, 0, 0}}, z:to_table())
      assert.equals('int64', fnn.ones({4}, {dtype = 'int64'}):dtype())
      assert.same({7, 7}, fnn.full({2}, 7, {dtype = 'int64'}):to_table())
      assert.matches('full: element 1 of the fill value is 7.5', err_of(function()
         return fnn.full({2}, 7.5, {dtype = 'int64'})
      end))
      assert.equals('int64', fnn.zeros_like(fnn.long{1, 2}):dtype())
      assert.equals('float32', fnn.ones_like(fnn.long{1, 2}, {dtype = 'float32'}):dtype())
      assert.equals('float32', fnn.zeros_like(fnn.randn(2)):dtype())
   end)

   it('randperm(2^25) is an int64 permutation of 1..2^25 (a counting pass)', function()
      local n = 2^25
      fnn.manual_seed(3)
      local p = fnn.randperm(n)
      assert.equals('int64', p:dtype())
      assert.same({n}, p:shape())
      -- each id once: scatter a 1 at every id; every count must be exactly 1
      local counts = fnn.zeros(n):scatter_add(1, p, fnn.ones(n))
      assert.equals(1, counts:min():item())
      assert.equals(1, counts:max():item())
      assert.equals(n * (n + 1) / 2, p:sum():item())      -- exact in int64
      assert.equals(1, p:min():item())
      assert.equals(n, p:max():item())
      assert.is_true(p:ne(fnn.arange(1, n + 1)):sum():item() > n / 2)   -- shuffled, not the identity
   end)
end)

describe('index producers', function()
   it('argmax of arange(2^24 + 10) is 2^24 + 10', function()
      local x = fnn.arange(BIG + 10)
      local i = x:argmax()
      assert.equals('int64', i:dtype())
      assert.equals(BIG + 10, i:item())
      assert.equals(1, x:argmin():item())
      -- the same positions in a float32 tensor that holds distinct values
      local f = fnn.zeros(BIG + 10):scatter_add(1, fnn.long{BIG + 7}, fnn.tensor{5})
      assert.equals(BIG + 7, f:argmax():item())
      assert.equals(1, f:argmin():item())
   end)

   it('argmax/argmin/max/min along a dim return int64 1-based indices, for float and int64 inputs', function()
      local x = fnn.tensor{{1, 9, 3}, {7, 2, 7}}
      for _, input in ipairs{x, x:long()} do
         local am = input:argmax(2)
         assert.equals('int64', am:dtype())
         assert.same({2, 1}, am:to_table())
         assert.same({{1}, {2}}, input:argmin(2, true):to_table())
         assert.same({2, 1, 2}, input:argmax(1):to_table())
         local v, i = input:max(2)
         assert.equals('int64', i:dtype())
         assert.same({9, 7}, v:to_table())
         assert.same({2, 1}, i:to_table())
         local v2, i2 = input:min(1)
         assert.same({1, 2, 3}, v2:to_table())
         assert.same({1, 2, 1}, i2:to_table())
         assert.equals(input:dtype(), v:dtype())
      end
   end)

   it('sort and topk return int64 indices', function()
      local v, i = fnn.tensor{3, 1, 2}:sort()
      assert.same({1, 2, 3}, v:to_table())
      assert.equals('int64', i:dtype())
      assert.same({2, 3, 1}, i:to_table())
      local tv, ti = fnn.tensor{3, 1, 2}:topk(2)
      assert.same({3, 2}, tv:to_table())
      assert.same({1, 3}, ti:to_table())
      assert.equals('int64', ti:dtype())
   end)

   it('max(dim) indices carry the gradient back to the right positions', function()
      local p = fnn.Param(fnn.tensor{{1, 5, 2}, {8, 3, 8}})
      local v = p:tensor():max(2)
      v:backward(fnn.tensor{10, 20})
      assert.same({{0, 10, 0}, {20, 0, 0}}, p:grad():to_table())
      local p2 = fnn.Param(fnn.tensor{{1, 5, 2}, {8, 3, 8}})
      p2:tensor():min(1, true):backward(fnn.tensor{{1, 2, 3}})
      assert.same({{1, 0, 3}, {0, 2, 0}}, p2:grad():to_table())
   end)
end)

describe('index consumers', function()
   local x = fnn.tensor{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}
   local forms = {
      {'int64', function(t) return fnn.long(t) end},
      {'float', function(t) return fnn.tensor(t) end},
      {'Lua array', function(t) return t end},
   }
   for _, form in ipairs(forms) do
      local name, make = form[1], form[2]
      it('index_select, gather and scatter_add take ' .. name .. ' ids', function()
         assert.same({{7, 8, 9}, {1, 2, 3}, {7, 8, 9}}, x:index_select(1, make{3, 1, 3}):to_table())
         assert.same({{1, 1}, {6, 4}}, x:gather(2, make{{1, 1}, {3, 1}}):to_table())
         local s = fnn.zeros(2, 3):scatter_add(2, make{{1, 1, 3}, {2, 2, 2}}, fnn.ones(2, 3))
         assert.same({{2, 0, 1}, {0, 3, 0}}, s:to_table())
      end)
      it('cross_entropy takes ' .. name .. ' targets, with the same loss and gradient', function()
         local logits = fnn.tensor{{1, 2, 0.5}, {0.1, -1, 3}}
         local want = (math.log(math.exp(1) + math.exp(2) + math.exp(0.5)) - 2
                       + math.log(math.exp(0.1) + math.exp(-1) + math.exp(3)) - 0.1) / 2
         local targets = make{2, 1}
         if type(targets) == 'table' then targets = fnn.tensor(targets) end
         local p = fnn.Param(logits)
         local loss = fnn.cross_entropy(p:tensor(), targets)
         assert.is_true(math.abs(loss:item() - want) < 1e-5)
         loss:backward()
         local g = p:grad():to_table()
         local e1 = math.exp(1) + math.exp(2) + math.exp(0.5)
         assert.is_true(math.abs(g[1][2] - (math.exp(2) / e1 - 1) / 2) < 1e-5)
         assert.is_true(math.abs(g[2][2] - math.exp(-1) / (math.exp(0.1) + math.exp(-1) + math.exp(3)) / 2) < 1e-5)
      end)
   end

   it('index_select and gather past 2^24 return the right rows, of float and int64 tensors', function()
      local n = BIG + 10
      local ids = fnn.long{BIG + 1, BIG + 10, BIG + 3}
      local exact = fnn.arange(n)                                    -- int64: value = position - 1
      assert.same({BIG, BIG + 9, BIG + 2}, exact:index_select(1, ids):to_table())
      assert.same({BIG, BIG + 9, BIG + 2}, exact:gather(1, ids):to_table())
      -- float32 rows told apart by their values: 1 at row BIG + 1, 2 at BIG + 10, 3 at BIG + 3
      local marks = fnn.zeros(n, 1):scatter_add(1, fnn.long{{BIG + 1}, {BIG + 10}, {BIG + 3}},
                                                  fnn.tensor{{1}, {2}, {3}})
      assert.same({{1}, {2}, {3}}, marks:index_select(1, ids):to_table())
      assert.same({{1}, {2}, {3}}, marks:gather(1, fnn.long{{BIG + 1}, {BIG + 10}, {BIG + 3}}):to_table())
      assert.same({{0}}, marks:index_select(1, fnn.long{BIG + 2}):to_table())
   end)

   it('bounds checks name the 1-based id and the valid range', function()
      assert.matches('index_select: index 4 outside 1..3 in dim 1 of %[3,3%]',
                     err_of(function() return x:index_select(1, fnn.long{1, 4}) end))
      assert.matches('gather: index 0 outside 1..3 in dim 2 of %[3,3%]',
                     err_of(function() return x:gather(2, fnn.long{{0}, {1}, {1}}) end))
      assert.matches('cross_entropy: class id 4 outside 1..3 %(row 2 of targets %[2%]%)',
                     err_of(function() return fnn.cross_entropy(fnn.zeros(2, 3), fnn.long{1, 4}) end))
      assert.matches('index_select: index 16777217 outside 1..3',
                     err_of(function() return x:index_select(1, fnn.long{BIG + 1}) end))
   end)

   it('take_rows (a TensorDataset) batches int64 targets exactly', function()
      local data = fnn.data
      local ds = data.TensorDataset(fnn.tensor{{1}, {2}, {3}}, fnn.long{BIG + 1, BIG + 2, BIG + 3})
      local batch = data.DataLoader(ds, 3):iter()()
      assert.equals('int64', batch.targets:dtype())
      assert.same({BIG + 1, BIG + 2, BIG + 3}, batch.targets:to_table())
      assert.same({BIG + 1, BIG + 2, BIG + 3}, batch:labels():to_table())
   end)
end)

describe('int64 tensors', function()
   local t = fnn.long{{1, 2, 3}, {4, 5, BIG + 1}}
   it('view, slice and join like float tensors', function()
      assert.same({{1, 4}, {2, 5}, {3, BIG + 1}}, t:t():contiguous():to_table())
      assert.same({1, 2, 3, 4, 5, BIG + 1}, t:reshape(-1):to_table())
      assert.same({4, 5, BIG + 1}, t:select(1, 2):to_table())
      assert.same({{2, 3}, {5, BIG + 1}}, t:narrow(2, 2, 2):to_table())
      assert.same({{{1, 2, 3}}, {{4, 5, BIG + 1}}}, t:unsqueeze(2):to_table())
      assert.same({3, 2}, t:permute(2, 1):shape())
      assert.same({{1, 1}, {2, 2}}, fnn.long{{1}, {2}}:expand(2, 2):to_table())
      assert.same({{1, 2, 3}, {4, 5, BIG + 1}, {1, 2, 3}}, fnn.cat({t, t:narrow(1, 1, 1)}, 1):to_table())
      assert.same({{1, 1}, {2, 2}, {3, 3}}, fnn.stack({fnn.long{1, 2, 3}, fnn.long{1, 2, 3}}, 2):to_table())
      assert.same({1, 2, 1, 2}, fnn.long{1, 2}:tile(2):to_table())
      assert.same({{1, 2, 1, 2}, {1, 2, 1, 2}}, fnn.long{1, 2}['repeat'](fnn.long{1, 2}, 2, 2):to_table())
      assert.same({-1, 1, 2, -1}, fnn.long{1, 2}:pad({1, 1}, -1):to_table())
      assert.same({{1, 0, 0}, {4, 5, 0}}, t:tril():to_table())
      assert.equals('int64', t:t():contiguous():dtype())
      assert.matches('cat: tensors of different dtypes', err_of(function() return fnn.cat({t, t:float()}) end))
   end)

   it('add, sub, mul with integers stay int64 and exact; sum is exact', function()
      local a = fnn.long{BIG, BIG + 1}
      local r = a + 1
      assert.equals('int64', r:dtype())
      assert.same({BIG + 1, BIG + 2}, r:to_table())
      assert.same({BIG - 1, BIG}, (a - 1):to_table())
      assert.same({1 - BIG, -BIG}, (1 - a):to_table())
      assert.same({2 * BIG, 2 * BIG + 2}, (a * 2):to_table())
      assert.same({BIG + 1, BIG + 3}, (a + fnn.long{1, 2}):to_table())
      assert.same({{BIG + 1}, {BIG + 2}}, (a:narrow(1, 1, 1) + fnn.long{{1}, {2}}):to_table())
      assert.same({-BIG, -BIG - 1}, (-a):to_table())
      assert.equals('int64', a:sum():dtype())
      assert.equals(2 * BIG + 1, a:sum():item())
      assert.same({5, 7, BIG + 4}, t:sum(1):to_table())
      assert.same({6, BIG + 10}, t:sum(2):to_table())
      local n = BIG + 10
      assert.equals((n - 1) * n / 2, fnn.arange(n):sum():item())
   end)

   it('with fractions or float tensors promote to float32, as PyTorch; the float side keeps its gradient', function()
      local a = fnn.long{1, 2, 3}
      local h = a * 0.5
      assert.equals('float32', h:dtype())
      assert.same({0.5, 1, 1.5}, h:to_table())
      assert.same({0.5, 1, 1.5}, (a / 2):to_table())
      assert.same({1.5, 2.5, 3.5}, (a + 0.5):to_table())
      assert.equals('float32', (a / fnn.long{1, 1, 1}):dtype())
      local p = fnn.Param(fnn.tensor{1, 1, 1})
      local y = (p:tensor() * a):sum()
      assert.equals(6, y:item())
      y:backward()
      assert.same({1, 2, 3}, p:grad():to_table())
   end)

   it('compare exactly with int64 and numbers, and as doubles with floats; results are float32 masks', function()
      local a = fnn.long{BIG, BIG + 1, 5}
      local m = a:eq(BIG + 1)
      assert.equals('float32', m:dtype())
      assert.same({0, 1, 0}, m:to_table())
      assert.same({1, 0, 0}, a:eq(fnn.long{BIG, BIG, BIG}):to_table())
      assert.same({0, 1, 0}, a:gt(BIG):to_table())
      assert.same({0, 0, 1}, a:lt(5.5):to_table())
      assert.same({0, 0, 1}, a:le(fnn.tensor{1, 1, 5}):to_table())
      assert.same({1, 1, 0}, a:ne(5):to_table())
      -- accuracy the usual way: argmax (int64) against labels (int64)
      local logits = fnn.tensor{{0, 3}, {2, 1}, {0, 1}}
      assert.equals(2, logits:argmax(2):eq(fnn.long{2, 2, 2}):sum():item())
   end)

   it('read back through item, to_table, r[i] and #r', function()
      assert.equals(BIG + 1, t[2][3])
      assert.equals(2, #t)
      assert.equals(3, #t[1])
      assert.equals(BIG + 1, t:select(1, 2):select(1, 3):item())
      assert.same({{1, 2, 3}, {4, 5, BIG + 1}}, t:to_table())
      assert.same({1, 2, 3, 4, 5, BIG + 1}, t:to_flat())
   end)

   it('float-only ops refuse them, naming the op and int64', function()
      local i = fnn.long{{1, 2}, {3, 4}}
      local cases = {
         exp = function() return i:exp() end,
         tanh = function() return i:tanh() end,
         relu = function() return i:relu() end,
         softmax = function() return i:softmax(2) end,
         log_softmax = function() return i:log_softmax() end,
         mean = function() return i:mean() end,
         matmul = function() return i:matmul(i) end,
         linear = function() return fnn.linear(fnn.randn(2, 2), i) end,
         layer_norm = function() return fnn.layer_norm(i) end,
         masked_fill = function() return i:masked_fill(fnn.tensor{1, 0}, 0) end,
         mse_loss = function() return fnn.mse_loss(i, i) end,
         sort = function() return i:sort() end,
         Param = function() return fnn.Param(i) end,
      }
      for op, f in pairs(cases) do
         local err = err_of(f)
         assert(err, op .. ' accepted an int64 tensor')
         assert(err:find(op, 1, true) and err:find('int64', 1, true), op .. ': ' .. tostring(err))
      end
   end)

   it('never carry a gradient', function()
      local p = fnn.Param(fnn.randn(3, 2))
      local ids = fnn.long{3, 1}
      local r = p:tensor():index_select(1, ids)
      assert.is_not_nil(r:grad_fn())
      assert.is_nil(ids:grad_fn())
      local _, idx = p:tensor():max(2)
      assert.is_nil(idx:grad_fn())
      assert.is_nil(p:tensor():argmax():grad_fn())
      assert.is_nil((ids + 1):grad_fn())
      r:sum():backward()
      assert.same({{1, 1}, {0, 0}, {1, 1}}, p:grad():to_table())
   end)
end)
