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
--   gradcheck = false   a values-only case (no finite differences; its CUDA parity compares values
--            only): ties, nan/inf, int64, or too large for finite differences;
--   requires = 'cuda'   runs only where a GPU is (elsewhere the specs check the reason cuda:0 gives).
-- The table's inputs live in [-2, 2] away from kinks (abs, relu, clamp bounds, ties).
-- After the table, the sweeps (this family's whole CUDA parity): add/sub/mul/div in five layouts,
-- each unary op and op with a number on a transposed [n,3]^T and a contiguous [1025], pow, maximum,
-- minimum and the comparisons broadcast with ties, where, and int64 operands; their parity
-- tolerances (EXACT, FAST, TRIG, POW below) are those of the CUDA build's fast math.
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
-- the sizes of the sweeps: both sides of the GPU's launch edges
local SIZES = {1, 127, 128, 129, 1023, 1024, 1025}
-- the CUDA parity tolerances {atol, rtol[, gtol]} (the CUDA build uses --use_fast_math):
local EXACT = {0, 1e-6}      -- one IEEE operation or none per element
local FAST = {1e-6, 2e-5}    -- __expf/__logf and what is built on them: a few ulp
local TRIG = {2e-6, 2e-5}    -- __sinf/__cosf: absolute error ~4e-7 on [-pi, pi]
local POW = {1e-6, 1e-4}     -- powf = exp2(y log2 x) in fast math

-- f over the values of the tensors broadcast together (numpy rules), by a loop over the result's
-- indices; the tensors are contiguous
local function bcast(ts, f)
   local nd, shapes, vals = 0, {}, {}
   for k, t in ipairs(ts) do shapes[k], vals[k] = t:shape(), t:to_flat(); nd = math.max(nd, #shapes[k]) end
   local shape = {}
   for d = 1, nd do
      shape[d] = 1
      for k = 1, #ts do
         local s = shapes[k][d - nd + #shapes[k]] or 1
         if s ~= 1 then shape[d] = s end
      end
   end
   -- each tensor's stride along each result dim (0 where it broadcasts)
   local strides = {}
   for k = 1, #ts do
      strides[k] = {}
      local st = 1
      for d = nd, 1, -1 do
         local s = shapes[k][d - nd + #shapes[k]] or 1
         strides[k][d] = s == 1 and 0 or st
         st = st * s
      end
   end
   local out, args = {}, {}
   require('naive_nd').each(shape, function(idx)
      for k = 1, #ts do
         local off = 0
         for d = 1, nd do off = off + (idx[d] - 1) * strides[k][d] end
         args[k] = vals[k][off + 1]
      end
      out[#out + 1] = f(unpack(args, 1, #ts))
   end)
   return fnn.tensor(out, shape)
end
-- the transpose of a [r, c], by a loop
local tr = require('naive_nd').transposed
local function erf(x)   -- power series: |x| <= 2.2 here, where 40 terms are exact to float32
   local term, sum = x, x
   for n = 1, 40 do term = -term * x * x / n; sum = sum + term / (2 * n + 1) end
   return 2 / math.sqrt(math.pi) * sum
end
local function sigmoid(x) return 1 / (1 + math.exp(-x)) end
local function softplus(x) return x > 20 and x or math.log(1 + math.exp(x)) end
local function relu6(x) return math.min(math.max(x, 0), 6) end
local SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
-- the elementwise functions by their definitions (PyTorch's), on one number
local F = {
   add = function(x, y) return x + y end, sub = function(x, y) return x - y end,
   mul = function(x, y) return x * y end, div = function(x, y) return x / y end,
   pow = function(x, y) return x ^ y end, maximum = math.max, minimum = math.min,
   add_scalar = function(x) return x + 3 end, mul_scalar = function(x) return 2.5 * x end,
   rsub_scalar = function(x) return 1 - x end, rdiv_scalar = function(x) return 2 / x end,
   pow_scalar = function(x) return x ^ 3 end, rpow_scalar = function(x) return 2 ^ x end,
   neg = function(x) return -x end, abs = math.abs, exp = math.exp, log = math.log, sqrt = math.sqrt,
   rsqrt = function(x) return 1 / math.sqrt(x) end, sin = math.sin, cos = math.cos, tanh = math.tanh,
   sigmoid = sigmoid, relu = function(x) return math.max(x, 0) end,
   gelu = function(x) return 0.5 * x * (1 + erf(x / math.sqrt(2))) end,
   gelu_tanh = function(x) return 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ^ 3))) end,
   silu = function(x) return x * sigmoid(x) end, softplus = softplus,
   clamp = function(x) return math.min(math.max(x, -1), 1) end,
   leaky_relu = function(x) return x > 0 and x or 0.2 * x end,
   elu = function(x) return x > 0 and x or 1.5 * (math.exp(x) - 1) end,
   selu = function(x) return SELU_SCALE * (x > 0 and x or SELU_ALPHA * (math.exp(x) - 1)) end,
   celu = function(x) return math.max(0, x) + math.min(0, 0.7 * (math.exp(x / 0.7) - 1)) end,
   mish = function(x) return x * math.tanh(softplus(x)) end,
   hardsigmoid = function(x) return relu6(x + 3) / 6 end,
   hardswish = function(x) return x * relu6(x + 3) / 6 end,
   softsign = function(x) return x / (1 + math.abs(x)) end,
   erf = erf,
}
-- a case's ref: F[op] over its (broadcast) inputs
local function ref_of(op) return function(...) return bcast({...}, F[op]) end end
-- the same, through the transpose of the first input (cases whose fn reads a:t())
local function ref_t(op) return function(a, ...) return bcast({tr(a), ...}, F[op]) end end

-- f over every value of a, by a loop
local function unary_ref(a, f)
   local v, out = a:to_flat(), {}
   for k = 1, #v do out[k] = f(v[k]) end
   return fnn.tensor(out, a:shape())
end
local function kinkless(shape) return away(shape, -2, 2, {0}, 0.1) end

local cases = {
   {op = 'add', inputs = function() return u{2, 3}, u{3} end, fn = function(a, b) return a + b end, ref = ref_of('add')},
   {op = 'sub', inputs = function() return u{2, 1}, u{1, 3} end, fn = function(a, b) return a - b end, ref = ref_of('sub')},
   {op = 'mul', inputs = function() return u{3, 2}, u{3, 2} end, fn = function(a, b) return a:t() * b:t() end,
    ref = function(a, b) return bcast({tr(a), tr(b)}, F.mul) end},
   {op = 'div', inputs = function() return u{2, 3}, pos{3} end, fn = function(a, b) return a / b end, ref = ref_of('div')},
   {op = 'pow', inputs = function() return pos{2, 3}, u{2, 3} end, fn = function(a, b) return a ^ b end, ref = ref_of('pow')},
   {op = 'maximum', inputs = function() return u{2, 3}, u{2, 3} end, fn = function(a, b) return a:maximum(b) end,
    ref = ref_of('maximum')},
   {op = 'minimum', inputs = function() return u{2, 3}, u{3} end, fn = function(a, b) return a:minimum(b) end,
    ref = ref_of('minimum')},
   {op = 'add_scalar', inputs = function() return u{4} end, fn = function(a) return a + 3 end, ref = ref_of('add_scalar')},
   {op = 'mul_scalar', inputs = function() return u{4} end, fn = function(a) return 2.5 * a end, ref = ref_of('mul_scalar')},
   {op = 'rsub_scalar', inputs = function() return u{4} end, fn = function(a) return 1 - a end, ref = ref_of('rsub_scalar')},
   {op = 'rdiv_scalar', inputs = function() return pos{4} end, fn = function(a) return 2 / a end, ref = ref_of('rdiv_scalar')},
   {op = 'pow_scalar', inputs = function() return pos{4} end, fn = function(a) return a ^ 3 end, ref = ref_of('pow_scalar')},
   {op = 'rpow_scalar', inputs = function() return u{4} end, fn = function(a) return 2 ^ a end, ref = ref_of('rpow_scalar')},
   {op = 'neg', inputs = function() return u{2, 2} end, fn = function(a) return -a end, ref = ref_of('neg')},
   {op = 'abs', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:abs() end, ref = ref_of('abs')},
   {op = 'exp', inputs = function() return u{2, 3} end, fn = function(a) return a:exp() end, ref = ref_of('exp')},
   {op = 'log', inputs = function() return pos{2, 3} end, fn = function(a) return a:log() end, ref = ref_of('log')},
   {op = 'sqrt', inputs = function() return pos{2, 3} end, fn = function(a) return a:sqrt() end, ref = ref_of('sqrt')},
   {op = 'rsqrt', inputs = function() return pos{2, 3} end, fn = function(a) return a:rsqrt() end, ref = ref_of('rsqrt')},
   {op = 'sin', inputs = function() return u{2, 3} end, fn = function(a) return a:sin() end, ref = ref_of('sin')},
   {op = 'cos', inputs = function() return u{2, 3} end, fn = function(a) return a:cos() end, ref = ref_of('cos')},
   {op = 'tanh', inputs = function() return u{2, 3} end, fn = function(a) return a:tanh() end, ref = ref_of('tanh')},
   {op = 'sigmoid', inputs = function() return u{2, 3} end, fn = function(a) return a:sigmoid() end, ref = ref_of('sigmoid')},
   {op = 'relu', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:relu() end, ref = ref_of('relu')},
   {op = 'gelu', inputs = function() return u{2, 3} end, fn = function(a) return a:gelu() end, ref = ref_of('gelu')},
   {op = 'gelu_tanh', inputs = function() return u{2, 3} end, fn = function(a) return a:gelu{approximate = 'tanh'} end,
    ref = ref_of('gelu_tanh')},
   {op = 'silu', inputs = function() return u{2, 3} end, fn = function(a) return a:silu() end, ref = ref_of('silu')},
   {op = 'softplus', inputs = function() return u{2, 3} end, fn = function(a) return a:softplus() end,
    ref = ref_of('softplus')},
   {op = 'clamp', inputs = function() return away({2, 3}, -2, 2, {-1, 1}, 0.1) end,
    fn = function(a) return a:clamp(-1, 1) end, ref = ref_of('clamp')},
   {op = 'leaky_relu', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:leaky_relu(0.2) end,
    ref = ref_of('leaky_relu')},
   {op = 'elu', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:elu(1.5) end, ref = ref_of('elu')},
   {op = 'selu', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:selu() end, ref = ref_of('selu')},
   {op = 'celu', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:celu(0.7) end, ref = ref_of('celu')},
   -- erf against a power series (|x| <= 2: 40 terms are exact to float32)
   {op = 'erf', inputs = function() return u{2, 3} end, fn = function(a) return a:erf() end, ref = ref_of('erf')},
   -- logit: inside (0, 1); with eps, values clamped on both sides (gradient 0 there), away from the bounds
   {op = 'logit', inputs = function() return away({2, 3}, 0.05, 0.95) end, fn = function(a) return a:logit() end,
    ref = function(a) return unary_ref(a, function(x) return math.log(x / (1 - x)) end) end},
   {op = 'logit', inputs = function() return away({3, 4}, -0.5, 1.5, {0.2, 0.8}, 0.05) end,
    fn = function(a) return a:logit(0.2) end,
    ref = function(a)
       return unary_ref(a, function(x) local z = math.min(math.max(x, 0.2), 0.8); return math.log(z / (1 - z)) end)
    end},
   {op = 'mish', inputs = function() return u{2, 3} end, fn = function(a) return a:mish() end, ref = ref_of('mish')},
   {op = 'hardsigmoid', inputs = function() return away({2, 3}, -4, 4, {-3, 3}, 0.1) end,
    fn = function(a) return a:hardsigmoid() end, ref = ref_of('hardsigmoid')},
   {op = 'hardswish', inputs = function() return away({2, 3}, -4, 4, {-3, 3}, 0.1) end,
    fn = function(a) return a:hardswish() end, ref = ref_of('hardswish')},
   {op = 'softsign', inputs = function() return kinkless{2, 3} end, fn = function(a) return a:softsign() end,
    ref = ref_of('softsign')},
   -- where: the condition is an input (so it travels to the GPU with the others), kept away from 0
   -- so finite differences do not flip it; c > 0 picks a, else b
   {op = 'where', inputs = function() return kinkless{2, 3}, u{2, 3}, u{3} end,
    fn = function(c, a, b) return fnn.where(c:gt(0), a, b) end,
    ref = function(c, a, b) return bcast({c, a, b}, function(z, x, y) return z > 0 and x or y end) end},
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

-- ---- the sweeps: each op over SIZES (n nil: gradcheck's small size) ----
local function add(c) cases[#cases + 1] = c end
local function range(lo, hi, avoid) return function(shape) return away(shape, lo, hi, avoid, 0.1) end end

-- add, sub, mul, div in five layouts; the right operand in [0.5, 2] so div is well conditioned
for _, op in ipairs{'add', 'sub', 'mul', 'div'} do
   local f = F[op]
   local function fn(a, b) return f(a, b) end   -- the operator on tensors
   add{op = op, sizes = SIZES, gradcheck = false, parity = EXACT,   -- same shape, contiguous
       inputs = function(n) return u{n}, pos{n} end, fn = fn, ref = ref_of(op)}
   add{op = op, sizes = SIZES, parity = {0, 1e-6, 10},   -- [3,n] with [n] (row broadcast), with gradients
       inputs = function(n) return u{3, n or 2}, pos{n or 2} end, fn = fn, ref = ref_of(op)}
   add{op = op, sizes = SIZES, gradcheck = false, parity = EXACT,   -- [n,1] with [1,5]: both broadcast
       inputs = function(n) return u{n, 1}, pos{1, 5} end, fn = fn, ref = ref_of(op)}
   add{op = op, sizes = SIZES, gradcheck = false, parity = EXACT,   -- [2,n,7] with a 0-d tensor
       inputs = function(n) return u{2, n, 7}, pos{} end, fn = fn, ref = ref_of(op)}
   add{op = op, sizes = SIZES, gradcheck = false, parity = EXACT,   -- transposed [n,3]^T with [3,n]
       inputs = function(n) return u{n, 3}, pos{3, n} end, fn = function(a, b) return f(a:t(), b) end, ref = ref_t(op)}
end

-- the unary ops and the ops with a number: {op, fn, inputs in [lo, hi] away from the kinks, tolerance};
-- each on a transposed [n,3]^T (the strided kernel) and on a contiguous [1025] (the flat one)
local UNARY = {
   {'neg', function(a) return -a end, range(-3, 3), EXACT},
   {'abs', function(a) return a:abs() end, range(-3, 3, {0}), EXACT},
   {'exp', function(a) return a:exp() end, range(-3, 3), FAST},
   {'log', function(a) return a:log() end, range(0.1, 3), FAST},
   {'sqrt', function(a) return a:sqrt() end, range(0.1, 3), FAST},
   {'rsqrt', function(a) return a:rsqrt() end, range(0.1, 3), FAST},
   {'sin', function(a) return a:sin() end, range(-3, 3), TRIG},
   {'cos', function(a) return a:cos() end, range(-3, 3), TRIG},
   {'tanh', function(a) return a:tanh() end, range(-3, 3), FAST},
   {'sigmoid', function(a) return a:sigmoid() end, range(-3, 3), FAST},
   {'relu', function(a) return a:relu() end, range(-3, 3, {0}), EXACT},
   {'gelu', function(a) return a:gelu() end, range(-3, 3), FAST},
   {'gelu_tanh', function(a) return a:gelu{approximate = 'tanh'} end, range(-3, 3), FAST},
   {'silu', function(a) return a:silu() end, range(-3, 3), FAST},
   {'softplus', function(a) return a:softplus() end, range(-3, 3), FAST},
   {'clamp', function(a) return a:clamp(-1, 1) end, range(-3, 3, {-1, 1}), EXACT},
   {'leaky_relu', function(a) return a:leaky_relu(0.2) end, range(-3, 3, {0}), EXACT},
   {'elu', function(a) return a:elu(1.5) end, range(-3, 3, {0}), FAST},
   {'selu', function(a) return a:selu() end, range(-3, 3, {0}), FAST},
   {'celu', function(a) return a:celu(0.7) end, range(-3, 3, {0}), FAST},
   {'mish', function(a) return a:mish() end, range(-3, 3), FAST},
   {'hardsigmoid', function(a) return a:hardsigmoid() end, range(-4, 4, {-3, 3}), FAST},
   {'hardswish', function(a) return a:hardswish() end, range(-4, 4, {-3, 3}), FAST},
   {'softsign', function(a) return a:softsign() end, range(-3, 3, {0}), FAST},
   {'add_scalar', function(a) return a + 3 end, range(-3, 3), EXACT},
   {'mul_scalar', function(a) return 2.5 * a end, range(-3, 3), EXACT},
   {'rsub_scalar', function(a) return 1 - a end, range(-3, 3), EXACT},
   {'rdiv_scalar', function(a) return 2 / a end, range(0.5, 3), FAST},
   {'pow_scalar', function(a) return a ^ 3 end, range(0.5, 3), POW},
   {'rpow_scalar', function(a) return 2 ^ a end, range(-3, 3), POW},
}
for _, un in ipairs(UNARY) do
   local op, f, draw, tol = un[1], un[2], un[3], un[4]
   add{op = op, sizes = SIZES, parity = tol, inputs = function(n) return draw{n or 2, 3} end,
       fn = function(a) return f(a:t()) end, ref = ref_t(op)}
   add{op = op, sizes = {1025}, parity = tol, inputs = function(n) return draw{n or 4} end, fn = f, ref = ref_of(op)}
end

-- pow, maximum, minimum and the comparisons on [n,3]^T with [n] (broadcast, non-contiguous), in
-- [0.5, 2]; every other value of both on a multiple of 1/2, so the comparisons (and maximum's and
-- minimum's even split) meet ties
local function halves(shape)
   local v = away(shape, 0.5, 2):to_flat()
   for i = 1, #v, 2 do v[i] = math.floor(v[i] * 2) / 2 end
   return fnn.tensor(v, shape)
end
local REL = {
   eq = function(x, y) return x == y and 1 or 0 end, ne = function(x, y) return x ~= y and 1 or 0 end,
   lt = function(x, y) return x < y and 1 or 0 end, le = function(x, y) return x <= y and 1 or 0 end,
   gt = function(x, y) return x > y and 1 or 0 end, ge = function(x, y) return x >= y and 1 or 0 end,
}
for _, op in ipairs{'pow', 'maximum', 'minimum', 'eq', 'ne', 'lt', 'le', 'gt', 'ge'} do
   local method = op == 'pow' and function(a, b) return a ^ b end or function(a, b) return a[op](a, b) end
   local cmp = REL[op] ~= nil
   add{op = op, sizes = SIZES, parity = op == 'pow' and {1e-6, 1e-4, 10} or {0, 1e-6, 10},
       -- ties have no derivative: the gradient sweeps draw without them (gradcheck's size only)
       inputs = function(n) if n or cmp then return halves{n or 2, 3}, halves{n or 2} end return (op == 'pow' and pos or u){2, 3}, u{2} end,
       fn = function(a, b) return method(a:t(), b) end,
       ref = function(a, b) return bcast({tr(a), b}, REL[op] or F[op]) end}
end

-- where: a [3,n] condition with [n] and [3,1]
add{op = 'where', sizes = SIZES, parity = EXACT,
    inputs = function(n) return kinkless{3, n or 2}, u{n or 2}, u{3, 1} end,
    fn = function(c, a, b) return fnn.where(c:gt(0), a, b) end,
    ref = function(c, a, b) return bcast({c, a, b}, function(z, x, y) return z > 0 and x or y end) end}

-- int64 operands (the int64 kernels; no gradient, exact): ids in [-499, 500] of [n,3] with a [1,3] of
-- ids 1..7, and a float [n,3] in [-500, 500) for the mixed comparison
local function ids(shape, size)
   local m, v = 1, {}
   for _, d in ipairs(shape) do m = m * d end
   for i = 1, m do v[i] = (i * 53 + 5) % size + 1 end
   return fnn.tensor(v, shape):long()
end
local N = {1, 129, 1025}
local function int_pair(n) return ids({n, 3}, 1000) - 500, ids({1, 3}, 7) end
local function int64_case(op, fn, ref, inputs)
   add{op = op, sizes = N, gradcheck = false, parity = {0, 0}, inputs = inputs or int_pair, fn = fn, ref = ref}
end
int64_case('add', function(x, y) return x + y end, ref_of('add'))
int64_case('sub', function(x, y) return x:t() - y:t() end, function(a, b) return bcast({tr(a), tr(b)}, F.sub) end)
int64_case('mul', function(x, y) return x * y end, ref_of('mul'))
int64_case('add_scalar', function(x) return (x + 3) * 2 - 1 end,
           function(a) return unary_ref(a, function(v) return (v + 3) * 2 - 1 end) end,
           function(n) return (int_pair(n)) end)
int64_case('eq', function(x, y) return x:eq(y) end, function(a, b) return bcast({a, b}, REL.eq) end)
int64_case('lt', function(x, y) return x:lt(y) + x:ge(y) * 2 + x:ne(y) * 4 end,
           function(a, b) return bcast({a, b}, function(x, y) return REL.lt(x, y) + REL.ge(x, y) * 2 + REL.ne(x, y) * 4 end) end)
int64_case('gt', function(x, y) return x:gt(y) + x:le(y) * 2 end,
           function(a, b) return bcast({a, b}, function(x, y) return REL.gt(x, y) + REL.le(x, y) * 2 end) end,
           function(n) return (int_pair(n)), fnn.rand(n, 3) * 1000 - 500 end)
int64_case('gt', function(x) return x:gt(0) + x:eq(-3) end,
           function(a) return unary_ref(a, function(v) return REL.gt(v, 0) + REL.eq(v, -3) end) end,
           function(n) return (int_pair(n)) end)

return cases
