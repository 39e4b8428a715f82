-- Merge layers (Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate): values
-- against naive loops, gradients by fnn.gradcheck, shape rules, output_shape, refusals.
local fnn = require 'fastnn'
local nn = fnn.nn
local support = require 'support'
local approx, each_index, pos = support.approx, support.each_index, support.pos

local function here() return debug.getinfo(2, 'l').currentline end

-- element-wise references over Lua numbers
local refs = {
   Add = function(v) local s = 0; for _, x in ipairs(v) do s = s + x end; return s end,
   Subtract = function(v) return v[1] - v[2] end,
   Multiply = function(v) local s = 1; for _, x in ipairs(v) do s = s * x end; return s end,
   Average = function(v) local s = 0; for _, x in ipairs(v) do s = s + x end; return s / #v end,
   Maximum = function(v) local s = -math.huge; for _, x in ipairs(v) do s = math.max(s, x) end; return s end,
   Minimum = function(v) local s = math.huge; for _, x in ipairs(v) do s = math.min(s, x) end; return s end,
}
local names = {'Add', 'Subtract', 'Multiply', 'Average', 'Maximum', 'Minimum'}

local function naive(name, xs)
   local flats = {}
   for i, x in ipairs(xs) do flats[i] = x:to_flat() end
   local out = {}
   for e = 1, #flats[1] do
      local v = {}
      for i = 1, #flats do v[i] = flats[i][e] end
      out[e] = refs[name](v)
   end
   return out
end

-- inputs whose values are pairwise apart (no ties for max/min, even after a 1e-3 nudge)
local function distinct_inputs(n, shape)
   local xs = {}
   local count = 1
   for _, s in ipairs(shape) do count = count * s end
   for i = 1, n do
      local v = {}
      for e = 1, count do v[e] = math.sin(e * 1.7 + i * 2.3) * 1.5 + 0.05 * i end
      xs[i] = fnn.tensor(v, shape)
   end
   return xs
end

describe('element-wise merge layers', function()
   for _, name in ipairs(names) do
      local counts = name == 'Subtract' and {2} or {2, 3}
      for _, n in ipairs(counts) do
         it(('%s of %d inputs matches a naive loop, as a list and as arguments'):format(name, n), function()
            local xs = distinct_inputs(n, {2, 3, 2})
            local layer = nn[name]()
            local y = layer(xs)
            assert.same({2, 3, 2}, y:shape())
            approx(naive(name, xs), y)
            approx(naive(name, xs), layer:forward(unpack(xs)))
            assert.same({2, 3, 2}, layer:output_shape{{2, 3, 2}, {2, 3, 2}, n == 3 and {2, 3, 2} or nil})
         end)

         it(('%s of %d inputs passes gradcheck'):format(name, n), function()
            local layer = nn[name]()
            local xs = distinct_inputs(n, {3, 2})
            assert.is_true(fnn.gradcheck(function(...) return layer({...}) end, xs))
         end)
      end
   end

   it('gradients have the closed forms of each rule', function()
      local a, b = fnn.Param(fnn.tensor{1, -2, 3}), fnn.Param(fnn.tensor{2, -5, 1})
      nn.Average()(a:tensor(), b:tensor()):sum():backward()
      approx({0.5, 0.5, 0.5}, a:grad())
      a:zero_grad(); b:zero_grad()
      nn.Subtract()(a:tensor(), b:tensor()):sum():backward()
      approx({1, 1, 1}, a:grad())
      approx({-1, -1, -1}, b:grad())
      a:zero_grad(); b:zero_grad()
      nn.Maximum()(a:tensor(), b:tensor()):sum():backward()
      approx({0, 1, 1}, a:grad())    -- max picks b, a, a
      approx({1, 0, 0}, b:grad())
      a:zero_grad(); b:zero_grad()
      nn.Multiply()(a:tensor(), b:tensor()):sum():backward()
      approx({2, -5, 1}, a:grad())
      approx({1, -2, 3}, b:grad())
   end)

   it('average of int64 inputs is float32', function()
      local y = nn.Average()(fnn.tensor{1, 2}:long(), fnn.tensor{2, 5}:long())
      assert.equals('float32', y:dtype())
      approx({1.5, 3.5}, y)
   end)

   it('refuses inputs of different shapes, naming the layer and every shape', function()
      for _, name in ipairs(names) do
         local ok, err = pcall(function() nn[name]()(fnn.zeros(2, 3), fnn.zeros(2, 4)) end)
         local line = here() - 1
         assert.is_false(ok)
         assert.matches('merge_spec%.lua:' .. line .. ': ' .. name
                        .. ': inputs must all have the same shape, got %[2,3%], %[2,4%]$', err)
      end
      -- no broadcasting either
      local ok, err = pcall(function() nn.Add()({fnn.zeros(2, 3), fnn.zeros(2, 3), fnn.zeros(1, 3)}) end)
      assert.is_false(ok)
      assert.matches('Add: inputs must all have the same shape, got %[2,3%], %[2,3%], %[1,3%]$', err)
   end)

   it('refuses a merge of one input or none, and Subtract of three', function()
      local ok, err = pcall(function() nn.Maximum()({fnn.zeros(4)}) end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches('merge_spec%.lua:' .. line .. ': Maximum: needs at least 2 inputs, got 1 %(%[4%]%)$', err)
      ok, err = pcall(function() nn.Add()({}) end)
      assert.matches('Add: needs at least 2 inputs, got 0$', err)
      ok, err = pcall(function() nn.Subtract()(fnn.zeros(2), fnn.zeros(2), fnn.zeros(2)) end)
      assert.matches('Subtract: needs exactly 2 inputs, got 3 %(%[2%], %[2%], %[2%]%)$', err)
   end)

   it('refuses what is not a tensor', function()
      local ok, err = pcall(function() nn.Multiply()({fnn.zeros(2), 'x'}) end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches('merge_spec%.lua:' .. line .. ': Multiply: input 2 is a string, expected a tensor$', err)
      ok, err = pcall(function() nn.Add()(fnn.zeros(2), nil, fnn.zeros(2)) end)
      assert.matches('Add: input 2 is nil, expected a tensor$', err)
      ok, err = pcall(function() nn.Add()(5) end)
      assert.matches('Add: expected a Lua array of tensors %(or tensors as arguments%), got a number$', err)
   end)

   it('output_shape raises what forward raises, at the caller line', function()
      local add = nn.Add()
      local ok, err = pcall(function() add:output_shape{{8, 4}, {8, 5}} end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches('merge_spec%.lua:' .. line .. ': Add: inputs must all have the same shape, got %[8,4%], %[8,5%]$',
                     err)
      ok, err = pcall(function() nn.Subtract():output_shape{{8, 4}} end)
      assert.matches('Subtract: needs exactly 2 inputs, got 1 %(%[8,4%]%)$', err)
      ok, err = pcall(function() add:output_shape{{8, 4}, 'big'} end)
      assert.matches('Add: output_shape: shape 2 is a string, expected a table of sizes$', err)
      ok, err = pcall(function() add:output_shape{{8, 4}, {8, 4.5}} end)
      assert.matches('Add: output_shape: shape 2 is not a list of sizes, expected a table of sizes$', err)
      ok, err = pcall(function() add:output_shape(7) end)
      assert.matches('Add: output_shape expects a list of shapes, got a number$', err)
      -- a fresh table each time: the caller may change it
      local s1 = add:output_shape{{3}, {3}}
      s1[1] = 99
      assert.same({3}, add:output_shape{{3}, {3}})
   end)

   it('prints as its class', function()
      assert.equals('nn.Add', tostring(nn.Add()))
      assert.equals('nn.Sequential {\n  (1): nn.Minimum\n}', tostring(nn.Sequential(nn.Minimum())))
   end)
end)

-- y = cat(xs, d) by walking y's indices: find the input that holds position idx[d]
local function naive_cat(xs, d)
   local shapes = {}
   for i, x in ipairs(xs) do shapes[i] = x:shape() end
   local out_shape = {}
   for k, s in ipairs(shapes[1]) do out_shape[k] = s end
   out_shape[d] = 0
   for _, s in ipairs(shapes) do out_shape[d] = out_shape[d] + s[d] end
   local flats = {}
   for i, x in ipairs(xs) do flats[i] = x:to_flat() end
   local out = {}
   each_index(out_shape, function(idx)
      local i, at = 1, idx[d]
      while at > shapes[i][d] do at = at - shapes[i][d]; i = i + 1 end
      local src = {}
      for k = 1, #idx do src[k] = idx[k] end
      src[d] = at
      out[#out + 1] = flats[i][pos(shapes[i], src)]
   end)
   return out, out_shape
end

describe('nn.Concatenate', function()
   local configs = {   -- dim option, input shapes, resolved dim
      {nil, {{2, 3}, {2, 4}}, 2},
      {-1, {{2, 3, 1}, {2, 3, 2}, {2, 3, 3}}, 3},
      {1, {{1, 3}, {4, 3}}, 1},
      {2, {{2, 1, 2}, {2, 3, 2}}, 2},
      {-2, {{2, 1, 2}, {2, 2, 2}}, 2},
      {{dim = 1}, {{2}, {3}, {1}}, 1},
   }
   for i, c in ipairs(configs) do
      it(('config %d: values against a naive loop, output_shape and gradcheck'):format(i), function()
         local layer = nn.Concatenate(c[1])
         local xs = {}
         for k, s in ipairs(c[2]) do xs[k] = fnn.randn(s) + k end
         local want, want_shape = naive_cat(xs, c[3])
         local y = layer(xs)
         assert.same(want_shape, y:shape())
         approx(want, y)
         approx(want, layer:forward(unpack(xs)))
         assert.same(want_shape, layer:output_shape(c[2]))
         assert.is_true(fnn.gradcheck(function(...) return layer({...}) end, xs))
      end)
   end

   it('defaults to the last dim and prints its dim', function()
      assert.equals(-1, nn.Concatenate().dim)
      assert.equals('nn.Concatenate(dim -1)', tostring(nn.Concatenate()))
      assert.equals('nn.Concatenate(dim 2)', nn.Concatenate{dim = 2}:short_str())
   end)

   it('refuses inputs that differ outside dim, naming every shape', function()
      local ok, err = pcall(function() nn.Concatenate(2)(fnn.zeros(2, 3), fnn.zeros(2, 1), fnn.zeros(3, 1)) end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches('merge_spec%.lua:' .. line .. ': Concatenate%(dim 2%): inputs must agree outside dim 2, '
                     .. 'got %[2,3%], %[2,1%], %[3,1%]$', err)
      ok, err = pcall(function() nn.Concatenate()(fnn.zeros(2, 3), fnn.zeros(2, 3, 1)) end)
      assert.matches('Concatenate%(dim %-1%): inputs must have the same number of dims, got %[2,3%], %[2,3,1%]$', err)
      ok, err = pcall(function() nn.Concatenate(3)(fnn.zeros(2, 3), fnn.zeros(2, 3)) end)
      assert.matches('Concatenate%(dim 3%): dim 3 out of range for inputs %[2,3%], %[2,3%] %(dims are 1%.%.2 or '
                     .. '%-2%.%.%-1%)$', err)
      ok, err = pcall(function() nn.Concatenate()(fnn.zeros(2)) end)
      assert.matches('Concatenate%(dim %-1%): needs at least 2 inputs, got 1 %(%[2%]%)$', err)
      ok, err = pcall(function() nn.Concatenate(1):output_shape{{2, 3}, {2, 4}} end)
      assert.matches('Concatenate%(dim 1%): inputs must agree outside dim 1, got %[2,3%], %[2,4%]$', err)
   end)

   it('refuses a bad dim at construction', function()
      local ok, err = pcall(function() nn.Concatenate(0) end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches('merge_spec%.lua:' .. line .. ': nn%.Concatenate: dim is 0, expected a non%-zero integer', err)
      assert.has_error(function() nn.Concatenate{dim = 1.5} end)
   end)

   it('works as the head of a Sequential fed a list, with the prefix on errors', function()
      local m = nn.Sequential(nn.Concatenate(), nn.Linear(5, 1))
      assert.same({4, 1}, m({fnn.randn(4, 2), fnn.randn(4, 3)}):shape())
      local ok, err = pcall(function() m({fnn.randn(4, 2), fnn.randn(3, 3)}) end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches('merge_spec%.lua:' .. line .. ': Sequential%[1%] nn%.Concatenate%(dim %-1%): Concatenate%(dim %-1%): '
                     .. 'inputs must agree outside dim 2, got %[4,2%], %[3,3%]$', err)
   end)
end)
