-- Elementwise ops against naive Lua loops, broadcasting rules and views.
local fnn = require 'fastnn'

local support = require 'support'
local approx = support.approx

local function map1(t, f)
   local r = {}
   for i, v in ipairs(t:to_flat()) do r[i] = f(v) end
   return r
end

local erf = support.erf

describe('unary ops', function()
   local x = fnn.tensor{{-1.5, -0.2, 0.3}, {0.9, 1.7, -2.0}}
   local refs = {
      neg = function(v) return -v end, abs = math.abs, exp = math.exp, sin = math.sin, cos = math.cos,
      tanh = function(v) return math.tanh(v) end,
      sigmoid = function(v) return 1 / (1 + math.exp(-v)) end,
      relu = function(v) return v > 0 and v or 0 end,
      silu = function(v) return v / (1 + math.exp(-v)) end,
      softplus = function(v) return math.log(1 + math.exp(v)) end,
      gelu = function(v) return 0.5 * v * (1 + erf(v / math.sqrt(2))) end,
   }
   for name, f in pairs(refs) do
      it(name .. ' matches the formula', function() approx(map1(x, f), x[name](x)) end)
   end
   it('log, sqrt, rsqrt on positive values', function()
      local p = fnn.tensor{0.5, 1, 4}
      approx({math.log(0.5), 0, math.log(4)}, p:log())
      approx({math.sqrt(0.5), 1, 2}, p:sqrt())
      approx({1 / math.sqrt(0.5), 1, 0.5}, p:rsqrt())
   end)
   it('gelu tanh approximation', function()
      approx(map1(x, function(v)
         return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ^ 3)))
      end), x:gelu{approximate = 'tanh'})
   end)
   it('clamp with one or two bounds', function()
      approx({-1, -0.2, 0.3, 0.9, 1, -1}, x:clamp(-1, 1))
      approx({-0.5, -0.2, 0.3, 0.9, 1.7, -0.5}, x:clamp(-0.5))
      local ok, err = pcall(function() return x:clamp(1, -1) end)
      assert.matches('clamp: min 1 is greater than max %-1', err)
   end)
end)

describe('binary ops', function()
   local a = fnn.tensor{{1, 2, 3}, {4, 5, 6}}
   local b = fnn.tensor{10, 20, 30}
   it('broadcast a row over a matrix', function()
      approx({11, 22, 33, 14, 25, 36}, a + b)
      approx({-9, -18, -27, -6, -15, -24}, a - b)
      approx({10, 40, 90, 40, 100, 180}, a * b)
      approx({0.1, 0.1, 0.1, 0.4, 0.25, 0.2}, a / b)
   end)
   it('broadcast a column against a row into a matrix', function()
      local col, row = fnn.tensor{{1}, {2}}, fnn.tensor{{10, 20, 30}}
      local r = col + row
      assert.same({2, 3}, r:shape())
      approx({11, 21, 31, 12, 22, 32}, r)
   end)
   it('numbers on either side', function()
      approx({3, 4, 5, 6, 7, 8}, a + 2)
      approx({1, 0, -1, -2, -3, -4}, 2 - a)
      approx({2, 4, 6, 8, 10, 12}, 2 * a)
      approx({0.5, 1, 1.5, 2, 2.5, 3}, a / 2)
      approx({2, 1, 2 / 3, 0.5, 0.4, 1 / 3}, 2 / a)
      approx({1, 4, 9, 16, 25, 36}, a ^ 2)
      approx({2, 4, 8, 16, 32, 64}, 2 ^ a)
      approx({-1, -2, -3, -4, -5, -6}, -a)
   end)
   it('pow, maximum, minimum, comparisons', function()
      local c = fnn.tensor{{3, 2, 1}, {4, 6, 5}}
      approx({1, 4, 3, 256, 15625, 7776}, a ^ c)
      approx({3, 2, 3, 4, 6, 6}, a:maximum(c))
      approx({1, 2, 1, 4, 5, 5}, a:minimum(c))
      approx({0, 1, 0, 1, 0, 0}, a:eq(c))
      approx({1, 0, 1, 0, 1, 1}, a:ne(c))
      approx({1, 0, 0, 0, 1, 0}, a:lt(c))
      approx({1, 1, 0, 1, 1, 0}, a:le(c))
      approx({0, 0, 1, 0, 0, 1}, a:gt(c))
      approx({0, 1, 1, 1, 0, 1}, a:ge(c))
      approx({0, 0, 1, 1, 1, 1}, a:gt(2))
   end)
   it('where picks by condition with broadcasting', function()
      local r = fnn.where(fnn.tensor{1, 0, 1}, a, fnn.tensor(-1))
      approx({1, -1, 3, 4, -1, 6}, r)
   end)
   it('broadcasts trailing dims of size 1 and leading new dims', function()
      local x = fnn.arange(6):reshape{2, 3, 1}
      local y = fnn.tensor{{1, 2}}          -- [1, 2]
      local r = x * y                       -- [2, 3, 2]
      assert.same({2, 3, 2}, r:shape())
      local want = {}
      for i = 0, 5 do want[#want + 1] = i; want[#want + 1] = 2 * i end
      approx(want, r)
   end)
   it('reads non-contiguous views', function()
      local t = a:t()                        -- [3, 2] view
      approx({2, 8, 4, 10, 6, 12}, t + t)
      approx({11, 24, 12, 25, 13, 26}, t + fnn.tensor{10, 20})
   end)
   it('reads a one-row view at its own stride (a leading size-1 dim that does not merge)', function()
      local m = fnn.tensor{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}, {13, 14, 15}}
      local row = m:t():narrow(1, 1, 1)      -- [1, 5], strides [1, 3]
      approx({-1, -4, -7, -10, -13}, row:neg())
      approx({2, 8, 14, 20, 26}, row + row)
   end)
   it('large tensors (threaded path) match the small path', function()
      local n = 300000
      local big = fnn.arange(n) * 0.001
      local r = (big * 2 + 1):to_flat()
      for _, i in ipairs{1, 2, 1000, n} do
         assert.is_true(math.abs(r[i] - ((i - 1) * 0.002 + 1)) < 1e-3)
      end
   end)
end)
