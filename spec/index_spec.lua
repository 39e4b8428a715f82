-- Index ops (core/ops/index.c, lua/fastnn/ops/index.lua) against naive Lua
-- loops: 1-based ids from Lua tables or tensors, repeated ids, non-contiguous
-- inputs, 0-size results, gradients (accumulating at repeated ids), and the
-- bad inputs, whose messages name the 1-based id, the range, the dim and the shape.
local fnn = require 'fastnn'

local support = require 'support'
local each_index, pos, build = support.each_index, support.pos, support.build
local approx, seq, err_of = support.approx_abs, support.seq, support.err_of

local function copy(t) local r = {} for i, v in ipairs(t) do r[i] = v end return r end

describe('index_select', function()
   local x = seq{4, 3}
   it('picks rows or columns by 1-based id, in the order given, repeats allowed', function()
      local ids = {3, 1, 3}
      local r = x:index_select(1, ids)
      assert.same({3, 3}, r:shape())
      approx(build({3, 3}, function(i) return pos({4, 3}, {ids[i[1]], i[2]}) end), r)
      local c = x:index_select(2, fnn.tensor{3, 2})
      approx(build({4, 2}, function(i) return pos({4, 3}, {i[1], ({3, 2})[i[2]]}) end), c)
      approx(c:to_flat(), x:index_select(-1, {3, 2}))
   end)
   it('reads a non-contiguous input and a strided index', function()
      local t = x:t()                                   -- [3, 4]
      local idx = fnn.tensor{{4, 0}, {1, 0}}:select(2, 1)   -- ids {4, 1} with stride 2
      approx(build({3, 2}, function(i) return pos({4, 3}, {({4, 1})[i[2]], i[1]}) end), t:index_select(2, idx))
   end)
   it('an empty id list gives a 0-size dim', function()
      assert.same({0, 3}, x:index_select(1, {}):shape())
   end)
   it('the gradient adds up at repeated ids', function()
      local p = fnn.Param(fnn.zeros(4, 2))
      p:tensor():index_select(1, {2, 4, 2}):backward(fnn.tensor{{1, 2}, {3, 4}, {5, 6}})
      approx({0, 0, 6, 8, 0, 0, 3, 4}, p:grad())
   end)
   it('refuses ids out of range, naming the 1-based id, the range, the dim and the shape', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = x:index_select(2, {1, 4}) end)
      assert.equals(('spec/index_spec.lua:%d: index_select: index 4 outside 1..3 in dim 2 of [4,3]'):format(line), err)
      assert.matches('index_select: index 0 outside 1..4 in dim 1 of %[4,3%]',
                     err_of(function() local _ = x:index_select(1, {0}) end))
      assert.matches('index_select: index 1.5 is not a whole number %(dim 1 of %[4,3%]%)',
                     err_of(function() local _ = x:index_select(1, {1.5}) end))
      assert.matches('index_select: index must be 1%-D, got %[1,2%] for input %[4,3%]',
                     err_of(function() local _ = x:index_select(1, fnn.tensor{{1, 2}}) end))
      assert.matches('index_select: dim 3 out of range for %[4,3%]',
                     err_of(function() local _ = x:index_select(3, {1}) end))
      assert.matches('index_select: ids is a string', err_of(function() local _ = x:index_select(1, 'a') end))
   end)
end)

describe('gather', function()
   local x = seq{3, 4}
   it('takes x[i][index[i][j]] along dim 2 and x[index[i][j]][j] along dim 1', function()
      local ix = {{4, 1}, {2, 2}, {3, 4}}
      local r = x:gather(2, fnn.tensor(ix))
      assert.same({3, 2}, r:shape())
      approx(build({3, 2}, function(i) return pos({3, 4}, {i[1], ix[i[1]][i[2]]}) end), r)
      local iy = {{3, 1, 2, 3}}
      approx(build({1, 4}, function(i) return pos({3, 4}, {iy[i[1]][i[2]], i[2]}) end), x:gather(1, fnn.tensor(iy)))
   end)
   it('reads a non-contiguous input', function()
      local ix = {{1, 3}, {2, 2}}
      local t = x:t()                                   -- [4, 3]
      approx(build({2, 2}, function(i) return pos({3, 4}, {ix[i[1]][i[2]], i[1]}) end), t:gather(2, fnn.tensor(ix)))
   end)
   it('the gradient adds up where ids repeat', function()
      local p = fnn.Param(fnn.zeros(2, 3))
      p:tensor():gather(2, fnn.tensor{{3, 3}, {1, 2}}):backward(fnn.tensor{{1, 2}, {3, 4}})
      approx({0, 0, 3, 3, 4, 0}, p:grad())
   end)
   it('refuses ids out of range and mismatched index shapes', function()
      assert.matches('gather: index 5 outside 1..4 in dim 2 of %[3,4%]',
                     err_of(function() local _ = x:gather(2, fnn.tensor{{5}}) end))
      assert.matches('gather: index %[3%] must have as many dims as input %[3,4%]',
                     err_of(function() local _ = x:gather(2, fnn.tensor{1, 2, 3}) end))
      assert.matches('gather: index %[4,1%] is larger than input %[3,4%] in dim 1 %(only dim 2 may differ%)',
                     err_of(function() local _ = x:gather(2, fnn.tensor{{1}, {1}, {1}, {1}}) end))
   end)
end)

describe('scatter_add', function()
   it('adds src into a copy of x at the given ids (repeats accumulate)', function()
      local x = seq{2, 4}
      local ix = {{1, 1, 3}, {4, 2, 4}}
      local src = fnn.tensor{{10, 20, 30}, {40, 50, 60}}
      local r = x:scatter_add(2, fnn.tensor(ix), src)
      local want = copy(x:to_flat())
      local s = src:to_flat()
      each_index({2, 3}, function(i)
         local at = pos({2, 4}, {i[1], ix[i[1]][i[2]]})
         want[at] = want[at] + s[pos({2, 3}, i)]
      end)
      approx(want, r)
      approx({1, 2, 3, 4, 5, 6, 7, 8}, x)               -- the input is untouched
   end)
   it('uses only the part of src the index covers; reads non-contiguous src', function()
      local x = fnn.zeros(3, 2)
      local src = seq{2, 3}:t()                          -- [3, 2]: {{1, 4}, {2, 5}, {3, 6}}
      local r = x:scatter_add(1, fnn.tensor{{3, 1}, {3, 3}}, src)
      approx({0, 4, 0, 0, 3, 5}, r)
   end)
   it('gradients: dx = g, dsrc = g gathered (zero where the index does not reach)', function()
      local px, ps = fnn.Param(fnn.zeros(2, 3)), fnn.Param(fnn.zeros(2, 2))
      px:tensor():scatter_add(2, fnn.tensor{{3}, {1}}, ps:tensor()):backward(seq{2, 3})
      approx({1, 2, 3, 4, 5, 6}, px:grad())
      approx({3, 0, 4, 0}, ps:grad())
   end)
   it('refuses ids out of range and a src smaller than the index', function()
      local x = fnn.zeros(2, 3)
      assert.matches('scatter_add: index 3 outside 1..2 in dim 1 of %[2,3%]',
                     err_of(function() local _ = x:scatter_add(1, fnn.tensor{{3}}, fnn.ones(1, 1)) end))
      assert.matches('scatter_add: index %[2,2%] is larger than src %[2,1%] in dim 2',
                     err_of(function() local _ = x:scatter_add(2, fnn.tensor{{1, 1}, {1, 1}}, fnn.ones(2, 1)) end))
      assert.matches('scatter_add: src is a nil', err_of(function() local _ = x:scatter_add(2, {{1}}) end))
   end)
end)

describe('masked_fill', function()
   local x = seq{2, 3}
   it('puts the value where the mask is non-zero, broadcasting the mask', function()
      approx({9, 2, 9, 9, 5, 9}, x:masked_fill(fnn.tensor{1, 0, 2}, 9))
      approx({1, 2, 3, -1, -1, -1}, x:masked_fill(fnn.tensor{{0}, {1}}, -1))
      approx({1, 0, 0, 5, 3, 6}, x:t():masked_fill(fnn.tensor{{0, 1}, {1, 0}, {0, 0}}, 0))
   end)
   it('the gradient is zero where the mask is set', function()
      local p = fnn.Param(fnn.zeros(2, 2))
      p:tensor():masked_fill(fnn.tensor{1, 0}, 5):backward(fnn.tensor{{1, 2}, {3, 4}})
      approx({0, 2, 0, 4}, p:grad())
   end)
   it('refuses a mask that does not broadcast to the input shape', function()
      assert.matches('masked_fill: mask %[2,2,3%] does not broadcast to input %[2,3%]',
                     err_of(function() local _ = x:masked_fill(fnn.zeros(2, 2, 3), 1) end))
      assert.matches('masked_fill: shapes %[2,3%] and %[2%] do not broadcast',
                     err_of(function() local _ = x:masked_fill(fnn.zeros(2), 1) end))
      assert.matches('masked_fill: value is a nil', err_of(function() local _ = x:masked_fill(fnn.zeros(3)) end))
   end)
end)
