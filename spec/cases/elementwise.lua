-- Cases for core/ops/elementwise.c, one or more per registered op.
-- A case is the whole test of an op (the same format in every spec/cases/<family>.lua):
--   op       the registry name;
--   inputs   function(n) returning the input tensors (each is differentiated); n is one of
--            `sizes` where the case has them, else nil (the case's own small shape);
--   fn       the computation (it may add views, broadcasting or extra non-differentiated arguments);
--   ref      the values by a naive loop over plain Lua numbers (registry_spec checks fn against it,
--            for each of `sizes`), within value_tol (default 1e-5, relative to 1 + |want|);
--   sizes    optional list of n: registry_spec's values and the CUDA parity run cover each (a sweep
--            across launch edges), gradcheck only inputs() (n nil);
--   atol, rtol, eps   gradcheck's tolerances and step (defaults 2e-2, 2e-2, 1e-3);
--   parity   the CUDA parity tolerance {atol, rtol[, gtol]} (gtol: the gradients' factor, default
--            2), or function(n) returning it; default {1e-5, 1e-4};
--   gradcheck = false   a values-only case: ties, nan/inf, or too large for finite differences;
--   requires = 'cuda'   runs only where a GPU is.
-- Inputs live in [-2, 2] away from kinks (abs, relu, clamp bounds, ties).
local fnn = require 'fastnn'

-- values in [lo, hi] kept at least `gap` away from each point in `avoid`
local function away(shape, lo, hi, avoid, gap)
   local t = fnn.rand(shape) * (hi - lo) + lo
   local v = t:to_flat()
   for i = 1, #v do
      for _, k in ipairs(avoid or {}) do
         if math.abs(v[i] - k) < gap then v[i] = k + (v[i] >= k and gap or -gap) end
      end
   end
   return fnn.tensor(v, shape)
end
local function u(shape) return away(shape, -2, 2) end
-- a [2, 3] and a [3] that ties it in some places, for the comparisons
local function ties() return fnn.tensor{{1, 2, 3}, {0.5, -1, 3}}, fnn.tensor{1, -1, 4} end
-- 1/0 of rel over a [r, c] against a broadcast [c], by a loop
local function relation(a, b, rel)
   local av, bv, out, c = a:to_flat(), b:to_flat(), {}, #b:to_flat()
   for k = 1, #av do out[k] = rel(av[k], bv[(k - 1) % c + 1]) and 1 or 0 end
   return fnn.tensor(out, a:shape())
end
local function pos(shape) return away(shape, 0.5, 2) end
-- f over every value of a, by a loop
local function unary_ref(a, f)
   local v, out = a:to_flat(), {}
   for k = 1, #v do out[k] = f(v[k]) end
   return fnn.tensor(out, a:shape())
end
local function kinkless(shape) return away(shape, -2, 2, {0}, 0.1) end

return {
   {op = 'add', inputs = function() return u{2, 3}, u{3} end, fn = function(a, b) return a + b end},
   {op = 'sub', inputs = function() return u{2, 1}, u{1, 3} end, fn = function(a, b) return a - b end},
   {op = 'mul', inputs = function() return u{3, 2}, u{3, 2} end, fn = function(a, b) return a:t() * b:t() end},
   {op = 'div', inputs = function() return u{2, 3}, pos{3} end, fn = function(a, b) return a / b end},
   {op = 'pow', inputs = function() return pos{2, 3}, u{2, 3} end, fn = function(a, b) return a ^ b end},
   {op = 'maximum', inputs = function() return u{2, 3}, u{2, 3} end, fn = function(a, b) return a:maximum(b) end},
   {op = 'minimum', inputs = function() return u{2, 3}, u{3} end, fn = function(a, b) return a:minimum(b) end},
   {op = 'add_scalar', inputs = function() return u{4} end, fn = function(a) return a + 3 end},
   {op = 'mul_scalar', inputs = function() return u{4} end, fn = function(a) return 2.5 * a end},
   {op = 'rsub_scalar', inputs = function() return u{4} end, fn = function(a) return 1 - a end},
   {op = 'rdiv_scalar', inputs = function() return pos{4} end, fn = function(a) return 2 / a end},
   {op = 'pow_scalar', inputs = function() return pos{4} end, fn = function(a) return a ^ 3 end},
   {op = 'rpow_scalar', inputs = function() return u{4} end, fn = function(a) return 2 ^ a end},
   {op = 'neg', inputs = function() return u{2, 2} end, fn = function(a) return -a end},
   {op = 'abs', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:abs() end},
   {op = 'exp', inputs = function() return u{2, 3} end, fn = function(a) return a:exp() end},
   {op = 'log', inputs = function() return pos{2, 3} end, fn = function(a) return a:log() end},
   {op = 'sqrt', inputs = function() return pos{2, 3} end, fn = function(a) return a:sqrt() end},
   {op = 'rsqrt', inputs = function() return pos{2, 3} end, fn = function(a) return a:rsqrt() end},
   {op = 'sin', inputs = function() return u{2, 3} end, fn = function(a) return a:sin() end},
   {op = 'cos', inputs = function() return u{2, 3} end, fn = function(a) return a:cos() end},
   {op = 'tanh', inputs = function() return u{2, 3} end, fn = function(a) return a:tanh() end},
   {op = 'sigmoid', inputs = function() return u{2, 3} end, fn = function(a) return a:sigmoid() end},
   {op = 'relu', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:relu() end},
   {op = 'gelu', inputs = function() return u{2, 3} end, fn = function(a) return a:gelu() end},
   {op = 'gelu_tanh', inputs = function() return u{2, 3} end, fn = function(a) return a:gelu{approximate = 'tanh'} end},
   {op = 'silu', inputs = function() return u{2, 3} end, fn = function(a) return a:silu() end},
   {op = 'softplus', inputs = function() return u{2, 3} end, fn = function(a) return a:softplus() end},
   {op = 'clamp', inputs = function() return away({2, 3}, -2, 2, {-1, 1}, 0.1) end,
    fn = function(a) return a:clamp(-1, 1) end},
   {op = 'leaky_relu', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:leaky_relu(0.2) end},
   {op = 'elu', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:elu(1.5) end},
   {op = 'selu', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:selu() end},
   {op = 'celu', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:celu(0.7) end},
   -- erf against a power series (|x| <= 2: 40 terms are exact to float32)
   {op = 'erf', inputs = function() return u{2, 3} end, fn = function(a) return a:erf() end,
    ref = function(a)
       return unary_ref(a, function(x)
          local term, sum = x, x
          for n = 1, 40 do term = -term * x * x / n; sum = sum + term / (2 * n + 1) end
          return 2 / math.sqrt(math.pi) * sum
       end)
    end},
   -- logit: inside (0, 1); with eps, values clamped on both sides (gradient 0 there), away from the bounds
   {op = 'logit', inputs = function() return away({2, 3}, 0.05, 0.95) end, fn = function(a) return a:logit() end,
    ref = function(a) return unary_ref(a, function(x) return math.log(x / (1 - x)) end) end},
   {op = 'logit', inputs = function() return away({3, 4}, -0.5, 1.5, {0.2, 0.8}, 0.05) end,
    fn = function(a) return a:logit(0.2) end,
    ref = function(a)
       return unary_ref(a, function(x) local z = math.min(math.max(x, 0.2), 0.8); return math.log(z / (1 - z)) end)
    end},
   {op = 'mish', inputs = function() return u{2, 3} end, fn = function(a) return a:mish() end},
   {op = 'hardsigmoid', inputs = function() return away({2, 3}, -4, 4, {-3, 3}, 0.1) end,
    fn = function(a) return a:hardsigmoid() end},
   {op = 'hardswish', inputs = function() return away({2, 3}, -4, 4, {-3, 3}, 0.1) end,
    fn = function(a) return a:hardswish() end},
   {op = 'softsign', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:softsign() end},
   {op = 'where', inputs = function() return u{2, 3}, u{3} end,
    fn = function(a, b) return fnn.where(fnn.tensor{{1, 0, 1}, {0, 0, 1}}, a, b) end},
   -- the comparisons (no gradient): 1 where the relation holds, else 0; b broadcast along rows, with ties
   {op = 'eq', inputs = ties, fn = function(a, b) return a:eq(b) end,
    ref = function(a, b) return relation(a, b, function(x, y) return x == y end) end},
   {op = 'ne', inputs = ties, fn = function(a, b) return a:ne(b) end,
    ref = function(a, b) return relation(a, b, function(x, y) return x ~= y end) end},
   {op = 'lt', inputs = ties, fn = function(a, b) return a:lt(b) end,
    ref = function(a, b) return relation(a, b, function(x, y) return x < y end) end},
   {op = 'le', inputs = ties, fn = function(a, b) return a:le(b) end,
    ref = function(a, b) return relation(a, b, function(x, y) return x <= y end) end},
   {op = 'gt', inputs = ties, fn = function(a, b) return a:gt(b) end,
    ref = function(a, b) return relation(a, b, function(x, y) return x > y end) end},
   {op = 'ge', inputs = ties, fn = function(a, b) return a:ge(b) end,
    ref = function(a, b) return relation(a, b, function(x, y) return x >= y end) end},
}
