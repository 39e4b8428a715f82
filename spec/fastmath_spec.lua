-- core/fastmath.h (the branch-free exp, log, tanh, sigmoid, erf behind the unary ops) against
-- references computed here in double precision: Lua's math library, and erf / log1p written
-- below. Errors are measured in ulps of the float result; special values must match exactly.
local fnn = require 'fastnn'
local ffi = require 'ffi'
local Param = fnn.Param
-- busted resolves globals through a chain of metatables, far too slow for 100k-value loops
local math, ipairs, pairs, assert = math, ipairs, pairs, assert

local inf, nan = math.huge, 0 / 0

-- the double r rounded to float (overflows to +-inf like a float result would)
local f32 = ffi.new('float[1]')
local function tofloat(r) f32[0] = r; return f32[0] end

-- the spacing of floats at r: 2^(e-24) for r in [2^(e-1), 2^e), 2^-149 among denormals
local function ulp(r)
   r = math.abs(r)
   if r < 2 ^ -126 then return 2 ^ -149 end
   local _, e = math.frexp(r)
   return 2 ^ (e - 24)
end

-- erf(x) = 2/sqrt(pi) e^-x^2 sum 2^n x^(2n+1) / (1*3*...*(2n+1)) (positive terms, no cancellation)
-- below 2; above, 1 - erfc(x) by erfc's continued fraction e^-x^2/sqrt(pi) / (x + (1/2)/(x + 1/(x + ...)))
local function erf(x)
   if x ~= x then return x end
   local a = math.abs(x)
   if a > 6 then return x > 0 and 1 or -1 end
   if a >= 2 then
      local f = a
      for k = 40, 1, -1 do f = a + (k / 2) / f end
      local r = 1 - math.exp(-a * a) / math.sqrt(math.pi) / f
      return x > 0 and r or -r
   end
   local s, term, n = x, x, 0
   repeat
      n = n + 1
      term = term * 2 * x * x / (2 * n + 1)
      s = s + term
   until math.abs(term) <= 1e-17 * math.abs(s)
   return 2 / math.sqrt(math.pi) * math.exp(-x * x) * s
end

-- log(1 + e) without losing a tiny e (Goldberg: log(u) * e / (u - 1) with u = 1 + e rounded)
local function log1p(e)
   local u = 1 + e
   if u == 1 then return e end
   return math.log(u) * e / (u - 1)
end

local function sigmoid(x) return 1 / (1 + math.exp(-x)) end
local K = math.sqrt(2 / math.pi)

-- each op: how to call it, its double reference, and the absolute slack allowed on top of the
-- ulps: gelu's 1 + erf(x) cancels for x < 0, as in PyTorch (the error of erf near -1, scaled by
-- x); silu = x * sigmoid(x) scales sigmoid's denormal results below -87, whose rounding is absolute
local ops = {
   exp = {f = function(t) return t:exp() end, ref = math.exp},
   log = {f = function(t) return t:log() end, ref = math.log},
   tanh = {f = function(t) return t:tanh() end, ref = math.tanh},
   sigmoid = {f = function(t) return t:sigmoid() end, ref = sigmoid},
   silu = {f = function(t) return t:silu() end, ref = function(x) return x / (1 + math.exp(-x)) end,
           slack = function(x) return 2 ^ -149 * math.abs(x) end},
   softplus = {f = function(t) return t:softplus() end,
               ref = function(x) return x > 0 and x + log1p(math.exp(-x)) or log1p(math.exp(x)) end},
   gelu = {f = function(t) return t:gelu() end,
           ref = function(x) return 0.5 * x * (1 + erf(x / math.sqrt(2))) end,
           slack = function(x) return 1e-7 * math.abs(x) end},
   gelu_tanh = {f = function(t) return t:gelu{approximate = 'tanh'} end,
                ref = function(x) return 0.5 * x * (1 + math.tanh(K * (x + 0.044715 * x ^ 3))) end,
                slack = function(x) return 1e-7 * math.abs(x) end},
}

-- the worst error of op over the tensor x, in ulps beyond its slack, and where; a reference that is
-- inf or nan in float must be met exactly
local function worst_ulps(op, x)
   local xs, ys = x:to_flat(), op.f(x):to_flat()
   local worst, at = 0, nil
   for i = 1, #xs do
      local v, got = xs[i], ys[i]
      local r = op.ref(v)
      local rf = tofloat(r)
      if rf ~= rf or math.abs(rf) == inf then
         if not ((got ~= got and rf ~= rf) or got == rf) then
            error(('at %.9g: got %.9g, want %.9g'):format(v, got, rf))
         end
      else
         local err = math.max(0, math.abs(got - r) - (op.slack and op.slack(v) or 0)) / ulp(r)
         if err > worst then worst, at = err, v end
      end
   end
   return worst, at
end

local function within(name, x, max)
   local worst, at = worst_ulps(ops[name], x)
   assert.is_true(worst <= max, ('%s: %.2f ulps at x = %.9g (allowed %g)'):format(name, worst, at or 0, max))
end

-- values 10^lo .. 10^hi, n per decade, built in Lua
local function decades(lo, hi, n)
   local v = {}
   for k = lo * n, hi * n do v[#v + 1] = 10 ^ (k / n) end
   return fnn.tensor(v)
end

describe('fastmath accuracy (max 4 ulps against double)', function()
   local wide, mid, unit = fnn.linspace(-100, 100, 100001), fnn.linspace(-10, 10, 100001), fnn.linspace(-1, 1, 100001)
   local tiny = fnn.linspace(-1e-3, 1e-3, 10001)

   for _, name in ipairs{'exp', 'tanh', 'sigmoid', 'silu', 'softplus', 'gelu', 'gelu_tanh'} do
      it(name .. ' over [-100, 100], [-10, 10], [-1, 1] and near 0', function()
         for _, x in ipairs{wide, mid, unit, tiny} do within(name, x, 4) end
      end)
   end

   it('exp near overflow and through the denormal results', function()
      within('exp', fnn.linspace(80, 89, 100001), 4)          -- inf past 88.7228
      within('exp', fnn.linspace(-104, -80, 100001), 4)       -- denormal below -87.34
   end)

   it('tanh across the switch at |x| = 0.625 and into saturation', function()
      within('tanh', fnn.linspace(0.6, 0.65, 100001), 4)
      within('tanh', fnn.linspace(-9.5, -8.5, 100001), 4)
   end)

   it('gelu across erf\'s switch at |x| = sqrt(2) and its saturation at 4 sqrt(2)', function()
      within('gelu', fnn.linspace(1.3, 1.55, 100001), 4)
      within('gelu', fnn.linspace(-6, 6, 100001), 4)
   end)

   it('log over (0, 1e30]: denormals, around 1 and up to 1e30', function()
      within('log', decades(-45, 30, 1000), 4)
      within('log', fnn.linspace(0.5, 2, 100001), 4)
      within('log', fnn.linspace(1 - 1e-3, 1 + 1e-3, 10001), 4)
   end)
end)

describe('fastmath special values', function()
   local function is_neg_zero(v) return v == 0 and 1 / v < 0 end
   -- the reference's float: nan for nan, the sign of a zero, else within 4 ulps (plus the slack)
   local function same(op, x, got, want)
      if want ~= want then return got ~= got end
      if want == 0 then return got == 0 and is_neg_zero(got) == is_neg_zero(want) end
      if math.abs(want) == inf then return got == want end
      return math.abs(got - want) <= 4 * ulp(want) + (op.slack and op.slack(x) or 0)
   end
   local special = {0, -0.0, inf, -inf, nan, 1e-40, -1e-40, 1e-45, -1e-45, 1e-30, -1e-30,
                    3.4028234e38, -3.4028234e38, 88.72, 88.73, -87.3, -87.4, -103.9, -104, -110, 9, -9, 10, 20}

   for _, name in ipairs{'exp', 'log', 'tanh', 'sigmoid', 'silu', 'softplus', 'gelu', 'gelu_tanh'} do
      it(name .. ' on inf, nan, +-0, denormals and the edges of the range like libm', function()
         local x = fnn.tensor(special)
         local xs, ys = x:to_flat(), ops[name].f(x):to_flat()
         for i = 1, #xs do
            local want = tofloat(ops[name].ref(xs[i]))
            assert.is_true(same(ops[name], xs[i], ys[i], want),
               ('%s(%.9g) = %.9g, want %.9g'):format(name, xs[i], ys[i], want))
         end
      end)
   end

   it('keeps the sign of zero and passes denormals through tanh and gelu', function()
      local y = fnn.tensor{-0.0, 1e-40}:tanh():to_flat()
      assert.is_true(is_neg_zero(y[1]))
      assert.equals(tofloat(1e-40), y[2])
      assert.is_true(is_neg_zero(fnn.tensor{-0.0}:gelu():to_flat()[1]))
      assert.equals(-inf, fnn.tensor{-0.0}:log():to_flat()[1])
   end)
end)

describe('fastmath on strided inputs and in gradients', function()
   it('a transposed input gives the same values as a contiguous one', function()
      local x = fnn.linspace(-12, 12, 64 * 37):reshape(64, 37)
      for _, name in ipairs{'exp', 'tanh', 'sigmoid', 'gelu', 'softplus'} do
         local a, b = ops[name].f(x:t()):to_flat(), ops[name].f(x):t():to_flat()
         for i = 1, #a do
            if math.abs(a[i] - b[i]) > ulp(b[i]) then
               error(('%s element %d: %.9g vs %.9g'):format(name, i, a[i], b[i]))
            end
         end
      end
   end)

   -- d/dx in double; the rows compute them from the float x and y, where 1 - y^2 and 1 + tanh
   -- cancel as they do in PyTorch: allow 1e-6 relative + 1e-7 (1 + |x|)
   local grads = {
      exp = math.exp,
      tanh = function(x) return 1 - math.tanh(x) ^ 2 end,
      sigmoid = function(x) local s = sigmoid(x); return s * (1 - s) end,
      silu = function(x) local s = sigmoid(x); return s * (1 + x * (1 - s)) end,
      softplus = sigmoid,
      gelu = function(x)
         return 0.5 * (1 + erf(x / math.sqrt(2))) + x * math.exp(-x * x / 2) / math.sqrt(2 * math.pi)
      end,
      gelu_tanh = function(x)
         local u = K * (x + 0.044715 * x ^ 3)
         local t = math.tanh(u)
         return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K * (1 + 3 * 0.044715 * x * x)
      end,
   }
   for name, d in pairs(grads) do
      it(name .. ' backward over [-10, 10]', function()
         local p = Param(fnn.linspace(-10, 10, 20001))
         local y = ops[name].f(p:tensor())
         y:backward(fnn.ones(20001))
         local xs, gs = p:tensor():to_flat(), p:grad():to_flat()
         for i = 1, #xs do
            local want = d(xs[i])
            if math.abs(gs[i] - want) > 1e-6 * math.abs(want) + 1e-7 * (1 + math.abs(xs[i])) then
               error(('%s\' at %.9g: got %.9g, want %.9g'):format(name, xs[i], gs[i], want))
            end
         end
      end)
   end
end)
