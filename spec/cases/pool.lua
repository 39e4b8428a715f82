-- Cases for core/ops/pool.c (the rows of cuda/pool.cu), each the whole test of its op: the values
-- against naive window loops (spec/naive_nn.lua, PyTorch's definitions: output lengths with
-- ceil_mode, count_include_pad, adaptive windows [floor(i L / n), ceil((i + 1) L / n)), nearest's
-- floor(i in / out), bilinear's source coordinates both align_corners ways), the gradient
-- (gradcheck_spec) and the CUDA parity, forward and gradient (cuda_parity_spec).
-- Max pooling runs on inputs with no near-ties (distinct values 0.05 apart, so a perturbation of
-- eps cannot move a window's maximum), plain and on overlapping padded ceil_mode windows, over a
-- grid of kernel, stride, padding and ceil_mode; ties (constant inputs, repeats) are values cases of
-- the gradient itself (fn returns it: each window's gradient goes to its first maximum), and nan and
-- -inf propagate (a values case). Avg pooling with and without counting the padding; adaptive
-- pooling with overlapping and non-dividing windows; nearest upsampling by a factor and to a size
-- that skips inputs (1 to 3 spatial dims); bilinear up and down, both align_corners settings;
-- unbatched and non-contiguous (transposed, permuted, narrowed) inputs; output lengths of 1, 127,
-- 128, 129, 1023, 1024, 1025 along the last dim (sizes: a thread per output element forward, per
-- input element backward).
-- Parity tolerances, |gpu - cpu| <= atol + rtol |cpu|: max pooling, adaptive_avg_pool2d, upsampling
-- EXACT (atol 0, rtol 1e-6): the kernels make the CPU's float operations in the CPU's order, with
-- __fdiv_rn / __fmul_rn / __fadd_rn where fast math would change a division or contract an FMA;
-- avg pooling FAST (atol 1e-6, rtol 2e-5): the CPU's 2x2 stride-2 path sums a window pairwise, the
-- kernel in row-major order. No kernel here uses atomics: the GPU's results are deterministic.
local fnn = require 'fastnn'
local N = require 'naive_nn'
local SIZES = {1, 127, 128, 129, 1023, 1024, 1025}
local EXACT, FAST = {0, 1e-6}, {1e-6, 2e-5}

local function u(...) return fnn.rand(...) * 4 - 2 end
-- n distinct values 0.05 apart in random order, shaped
local function distinct(shape)
   local n = 1
   for _, s in ipairs(shape) do n = n * s end
   return (fnn.randperm(n) * 0.05 - 0.05 * n / 2):reshape(shape)
end
local function same(x) return x end

-- a case of max_pool<nd>d or avg_pool<nd>d; input(n) gives x; extra: view (a non-contiguous input,
-- applied in ref too), sizes
local function pool(kind, nd, input, kernel, opts, extra)
   extra = extra or {}
   local op, view = ('%s_pool%dd'):format(kind, nd), extra.view or same
   return {op = op, sizes = extra.sizes, parity = kind == 'max' and EXACT or FAST,
           inputs = function(n) return input(n) end,
           fn = function(x) return fnn[op](view(x), kernel, opts) end,
           ref = function(x) return N[kind .. '_pool'](view(x):contiguous(), nd, kernel, opts) end}
end
-- x's values rounded to bfloat16, as float32
local function rounded(x) return x:bf16():float() end
-- a case of a pool on x:bf16() (fn asserts the bf16 result); ref: the naive pool of the rounded values,
-- rounded. max is exact; avg may round a sum in another order across a bf16 boundary (one bf16 ulp)
local function bf16_pool(kind, nd, input, kernel, o, extra)
   extra = extra or {}
   local op, view = ('%s_pool%dd'):format(kind, nd), extra.view or same
   return {op = op, gradcheck = false, parity = kind == 'max' and EXACT or {0, 2 ^ -7},
           value_tol = kind == 'avg' and 2 ^ -7 or nil,
           inputs = function() return input() end,
           fn = function(x)
              local y = fnn[op](view(x:bf16()), kernel, o)
              assert(y:dtype() == 'bfloat16', op .. ' of a bf16 input gave ' .. y:dtype())
              return y
           end,
           ref = function(x) return rounded(N[kind .. '_pool'](view(rounded(x)):contiguous(), nd, kernel, o)) end}
end
-- a values case of a pool's gradient through bfloat16: fn returns d/dx of sum(gy * pool(x:bf16())),
-- gy = 1, 2, ... (float32 all the way: the gradient of a bf16 tensor is float32); ref: the naive
-- adjoint at the rounded values (max: the same argmax; avg: the input's values do not enter)
local function bf16_grad(kind, nd, input, kernel, o)
   local op = ('%s_pool%dd'):format(kind, nd)
   return {op = op, gradcheck = false, parity = EXACT,
           inputs = function() return input() end,
           fn = function(t)
              local p = fnn.Param(t)
              local y = fnn[op](p:tensor():bf16(), kernel, o)
              assert(y:dtype() == 'bfloat16', op .. ' of a bf16 input gave ' .. y:dtype())
              local gy = {}
              for i = 1, y:numel() do gy[i] = i end
              y:float():mul(fnn.tensor(gy, y:shape()):to(y:device())):sum():backward()
              local g = p:grad()
              assert(g:dtype() == 'float32', op .. ': a bf16 input\'s gradient is ' .. g:dtype())
              return g
           end,
           ref = function(t)
              local x = rounded(t)
              if kind == 'max' then return N.max_pool_grad(x, nd, kernel, o) end
              -- avg: the adjoint of the naive pool, column by column of the identity
              return N.avg_pool_grad(x, nd, kernel, o)
           end}
end
-- a values case of max pooling's gradient: fn returns d/dx of sum(gy * max_pool(x)), gy = 1, 2, ...
-- (row-major over the output), the routing at ties that finite differences cannot see
local function max_grad(nd, x, kernel, opts)
   local op = ('max_pool%dd'):format(nd)
   return {op = op, gradcheck = false, parity = EXACT,
           inputs = function() return x end,
           fn = function(t)
              local p = fnn.Param(t)
              local y = fnn[op](p:tensor(), kernel, opts)
              local gy = {}
              for i = 1, y:numel() do gy[i] = i end
              y:backward(fnn.tensor(gy, y:shape()):to(y:device()))
              return p:grad()
           end,
           ref = function(t) return N.max_pool_grad(t, nd, kernel, opts) end}
end
-- a case of fnn.upsample; the output size from the options by the documented rule (the spatial
-- dims are the last #size or #scale_factor, else all after [N, C])
local function up(input, opts, extra)
   extra = extra or {}
   local view = extra.view or same
   local bilinear = opts.mode == 'bilinear'
   return {op = bilinear and 'upsample_bilinear2d' or 'upsample_nearest', parity = EXACT, sizes = extra.sizes,
           inputs = function(n) return input(n) end,
           fn = function(x) return fnn.upsample(view(x), opts) end,
           ref = function(x)
              x = view(x):contiguous()
              local xs, spec = x:shape(), opts.size or opts.scale_factor
              local k = type(spec) == 'table' and #spec or #xs - 2
              local size = {}
              for i = 1, k do
                 local v = type(spec) == 'table' and spec[i] or spec
                 size[i] = opts.size and v or xs[#xs - k + i] * v
              end
              if bilinear then return N.upsample_bilinear(x, size, opts.align_corners) end
              return N.upsample_nearest(x, size)
           end}
end
local function opts(s, p, ceil, cip) return {stride = s, padding = p, ceil_mode = ceil, count_include_pad = cip} end
local function D(shape) return function() return distinct(shape) end end
local function U(shape) return function() return u(shape) end end
local function T(a, b) return function(x) return x:transpose(a, b) end end

local cases = {
   -- max_pool2d on the 2x2 fast path and on overlapping padded ceil_mode windows
   pool('max', 2, D{2, 2, 4, 6}, 2),
   pool('max', 2, D{1, 2, 5, 6}, 3, {stride = 2, padding = 1, ceil_mode = true}),
   pool('avg', 2, U{2, 2, 4, 6}, 2),
   pool('avg', 2, U{1, 2, 5, 6}, 3, {stride = 2, padding = 1, ceil_mode = true, count_include_pad = false}),
   -- a non-contiguous input, rectangular windows
   pool('avg', 2, U{1, 2, 6, 5}, {3, 2}, {stride = {2, 1}, padding = 1}, {view = T(3, 4)}),
   pool('max', 1, D{2, 3, 8}, 2),
   pool('max', 1, D{3, 9}, 3, {stride = 2, padding = 1, ceil_mode = true}),   -- unbatched, overlapping
   pool('max', 3, D{1, 2, 4, 4, 6}, 2),
   pool('max', 3, D{2, 5, 4, 5}, {3, 2, 3}, {stride = {2, 1, 2}, padding = {1, 0, 1}, ceil_mode = true}),
   pool('avg', 1, U{2, 2, 7}, 3, {stride = 2, padding = 1}),
   pool('avg', 1, U{2, 8, 3}, 3, opts(2, 1, true, false), {view = T(2, 3)}),
   pool('avg', 3, U{1, 2, 4, 5, 4}, 2, {stride = 1}),
   pool('avg', 3, U{2, 5, 4, 5}, 3, opts(2, 1, true, false)),
   {op = 'adaptive_avg_pool2d', inputs = U{2, 2, 5, 7}, parity = EXACT,
    fn = function(x) return fnn.adaptive_avg_pool2d(x, {3, 4}) end,
    ref = function(x) return N.adaptive_avg_pool2d(x, {3, 4}) end},
   {op = 'adaptive_avg_pool2d', inputs = U{2, 3, 4}, parity = EXACT,
    fn = function(x) return fnn.adaptive_avg_pool2d(x:transpose(2, 3), {6, 3}) end,
    ref = function(x) return N.adaptive_avg_pool2d(x:transpose(2, 3):contiguous(), {6, 3}) end},
   up(U{2, 2, 3, 4}, {scale_factor = {2, 3}}),
   up(U{1, 2, 7}, {size = 4}),
   up(U{2, 2, 3, 2}, {size = {3, 5, 3}}),
   up(U{2, 2, 3, 4}, {scale_factor = 2, mode = 'bilinear'}),
   up(U{2, 5, 7}, {size = {3, 9}, mode = 'bilinear', align_corners = true}),
   up(U{1, 2, 7, 5}, {size = {2, 4}, mode = 'bilinear'}, {view = T(3, 4)}),

   -- the sweeps: output lengths across the launch edges, kernel 2 (gradcheck: n nil, a small line)
   pool('max', 1, function(n) return n and u{2, 3, 2 * n} or distinct{2, 3, 8} end, 2, nil, {sizes = SIZES}),
   pool('max', 2, function(n) return n and u{1, 2, 2, 2 * n} or distinct{1, 2, 2, 8} end, {1, 2}, nil, {sizes = SIZES}),
   pool('avg', 1, function(n) return u{2, 3, 2 * (n or 4)} end, 2, nil, {sizes = SIZES}),
   pool('avg', 2, function(n) return u{1, 2, 2, 2 * (n or 4)} end, 2, nil, {sizes = SIZES}),

   -- max pooling: the 2x2 stride-2 CPU fast path at odd sizes and unbatched; 3-d anisotropic
   pool('max', 2, D{3, 2, 9, 7}, 2),
   pool('max', 2, D{3, 8, 6}, 2),
   pool('max', 3, D{1, 2, 6, 5, 7}, {2, 3, 2}, {stride = {2, 1, 2}, padding = {1, 1, 0}}),
   -- non-contiguous inputs (transposed, permuted, narrowed)
   pool('max', 1, D{2, 11, 3}, 3, opts(2, 1, true), {view = T(2, 3)}),
   pool('max', 2, D{2, 3, 10, 9}, 3, opts(2, 1), {view = T(3, 4)}),
   pool('max', 3, D{1, 2, 5, 4, 6}, {2, 3, 2}, opts({2, 1, 2}, {1, 1, 0}),
        {view = function(x) return x:permute(1, 2, 5, 3, 4) end}),
   pool('max', 2, D{2, 3, 9, 12}, 2, nil, {view = function(x) return x:narrow(4, 2, 9) end}),
   -- ties: the first maximum of each window takes its gradient (overlapping windows)
   max_grad(1, fnn.ones(2, 3, 10), 3, opts(1, 1)),
   max_grad(2, fnn.ones(1, 2, 6, 7) * 3, 3, opts(2, 1, true)),
   max_grad(3, fnn.zeros(1, 1, 4, 5, 4), 2, opts(1, 1)),
   max_grad(2, (function()   -- ties among distinct values: every window holds repeats of 0, 1, 2
      local v = {}
      for i = 1, 2 * 2 * 8 * 8 do v[i] = (i * 7919) % 3 end
      return fnn.tensor(v, {2, 2, 8, 8})
   end)(), 3, opts(1, 1)),
   -- nan and -inf propagate as PyTorch's (a window with a nan gives nan)
   {op = 'max_pool2d', gradcheck = false, parity = EXACT,
    inputs = function()
       local v = u(1, 1, 6, 6):to_flat()
       v[8], v[15], v[16] = 0 / 0, -math.huge, 0 / 0
       return fnn.tensor(v, {1, 1, 6, 6})
    end,
    fn = function(x) return fnn.max_pool2d(x, 3, opts(1, 1)) end,
    ref = function(x) return N.max_pool(x, 2, 3, opts(1, 1)) end},

   -- avg pooling: non-contiguous, unbatched, anisotropic windows
   pool('avg', 1, U{2, 11, 3}, 3, opts(2, 1, true, false), {view = T(2, 3)}),
   pool('avg', 2, U{3, 10, 9}, {3, 2}, opts({2, 1}, {1, 0}), {view = T(2, 3)}),
   pool('avg', 3, U{1, 2, 5, 4, 6}, {2, 3, 2}, opts({2, 1, 2}, {1, 1, 0}, true),
        {view = function(x) return x:permute(1, 2, 5, 3, 4) end}),

   -- bfloat16 inputs (the CPU's forward_bf16 rows; on a GPU the wrapper widens): a bf16 result whose
   -- values are the naive pool of the same (bf16) values, rounded to bf16
   bf16_pool('max', 2, D{3, 2, 9, 7}, 2),                                        -- the 2x2 fast path, odd sizes
   bf16_pool('max', 2, D{2, 3, 10, 9}, 3, opts(2, 1, true), {view = T(3, 4)}),   -- overlapping, non-contiguous
   bf16_pool('max', 1, D{3, 9}, 3, {stride = 2, padding = 1, ceil_mode = true}),  -- unbatched
   bf16_pool('max', 3, D{1, 2, 5, 4, 6}, {2, 3, 2}, opts({2, 1, 2}, {1, 1, 0})),
   bf16_pool('avg', 2, U{2, 2, 4, 6}, 2),
   bf16_pool('avg', 2, U{1, 2, 5, 6}, 3, opts(2, 1, true, false)),
   bf16_pool('avg', 1, U{2, 8, 3}, 3, opts(2, 1, true, false), {view = T(2, 3)}),
   bf16_pool('avg', 3, U{2, 5, 4, 5}, 3, opts(2, 1, true, true)),
   -- their gradients: float32 (a bf16 tensor's gradient), the naive adjoint at the bf16 values
   bf16_grad('max', 2, D{2, 3, 9, 7}, 2),
   bf16_grad('max', 2, D{1, 2, 6, 7}, 3, opts(2, 1, true)),
   bf16_grad('avg', 2, U{2, 2, 5, 6}, 3, opts(2, 1, true, false)),
   bf16_grad('avg', 1, U{2, 3, 9}, 2),
}

-- kernel, stride, padding and ceil_mode of max pooling in 1-3 dims
for _, c in ipairs{{3, 2, 1, false}, {3, 2, 1, true}, {4, 3, 2, true}, {3, 1, 1, false}, {2, 2, 0, true}} do
   local o = opts(c[2], c[3], c[4])
   cases[#cases + 1] = pool('max', 1, D{2, 3, 11}, c[1], o)
   cases[#cases + 1] = pool('max', 2, D{2, 3, 9, 10}, c[1], o)
   cases[#cases + 1] = pool('max', 3, D{2, 2, 7, 6, 8}, c[1], o)
end
-- and of avg pooling, with count_include_pad both ways
for _, c in ipairs{{3, 2, 1, false, true}, {3, 2, 1, false, false}, {3, 2, 1, true, true}, {3, 2, 1, true, false},
                   {4, 3, 2, true, false}, {2, 1, 1, false, true}} do
   local o = opts(c[2], c[3], c[4], c[5])
   cases[#cases + 1] = pool('avg', 1, U{2, 3, 11}, c[1], o)
   cases[#cases + 1] = pool('avg', 2, U{2, 3, 9, 10}, c[1], o)
   cases[#cases + 1] = pool('avg', 3, U{2, 2, 7, 6, 8}, c[1], o)
end

-- adaptive_avg_pool2d: windows that overlap, divide, grow (output larger than the input), 1x1, unbatched
for _, c in ipairs{{{2, 3, 7, 9}, {3, 4}}, {{2, 3, 7, 9}, {5, 2}}, {{2, 3, 7, 9}, {7, 9}}, {{1, 2, 5, 6}, {9, 11}},
                   {{2, 4, 10, 10}, {1, 1}}, {{3, 6, 5}, {4, 3}}} do
   local size = c[2]
   cases[#cases + 1] = {op = 'adaptive_avg_pool2d', inputs = U(c[1]), parity = EXACT,
                        fn = function(x) return fnn.adaptive_avg_pool2d(x, size) end,
                        ref = function(x) return N.adaptive_avg_pool2d(x, size) end}
end
cases[#cases + 1] = {op = 'adaptive_avg_pool2d', inputs = U{2, 3, 9, 7}, parity = EXACT,
                     fn = function(x) return fnn.adaptive_avg_pool2d(x:transpose(3, 4), {4, 5}) end,
                     ref = function(x) return N.adaptive_avg_pool2d(x:transpose(3, 4):contiguous(), {4, 5}) end}
-- 1100 columns to n across the launch edges (non-dividing windows); gradcheck (size nil) pools 11 to 4
for _, n in ipairs{127, 128, 129, 1023, 1024, 1025} do
   local function size(x) return {2, x:shape()[4] == 1100 and n or 4} end
   cases[#cases + 1] = {op = 'adaptive_avg_pool2d', sizes = {n}, parity = EXACT,
                        inputs = function(m) return u{1, 2, 3, m and 1100 or 11} end,
                        fn = function(x) return fnn.adaptive_avg_pool2d(x, size(x)) end,
                        ref = function(x) return N.adaptive_avg_pool2d(x, size(x)) end}
end

-- upsampling to n columns across the launch edges (small inputs: gradcheck runs them as they are)
for _, n in ipairs(SIZES) do
   cases[#cases + 1] = up(U{2, 2, 5}, {size = n})
   cases[#cases + 1] = up(U{1, 2, 3, 7}, {size = {2, n}, mode = 'bilinear'})
   cases[#cases + 1] = up(U{1, 2, 3, 7}, {size = {4, n}, mode = 'bilinear', align_corners = true})
end
-- nearest to sizes up and down in 1-3 dims; by factors, of a transposed input
for _, c in ipairs{{{2, 3, 4}, {7}}, {{2, 3, 9}, {4}}, {{1, 2, 3, 4}, {6, 8}}, {{1, 2, 5, 7}, {2, 3}},
                   {{2, 3, 4}, {5, 3}}, {{1, 2, 2, 3, 2}, {3, 5, 4}}, {{1, 1, 4, 5, 6}, {2, 3, 3}}} do
   cases[#cases + 1] = up(U(c[1]), {size = c[2]})
end
cases[#cases + 1] = up(U{2, 3, 4, 5}, {scale_factor = {2, 3}})
cases[#cases + 1] = up(U{2, 3, 5, 4}, {scale_factor = 2}, {view = T(3, 4)})
-- bilinear up, down, identity, to 1x1, from a single row, both align_corners settings; transposed
for _, align in ipairs{false, true} do
   for _, c in ipairs{{{1, 2, 3, 4}, {7, 9}}, {{1, 2, 5, 7}, {2, 3}}, {{2, 3, 4, 4}, {4, 4}}, {{1, 1, 4, 6}, {1, 1}},
                      {{1, 1, 1, 5}, {3, 8}}, {{2, 1, 6, 3}, {4, 9}}} do
      cases[#cases + 1] = up(U(c[1]), {size = c[2], mode = 'bilinear', align_corners = align})
   end
   cases[#cases + 1] = up(U{2, 3, 6, 5}, {scale_factor = 2, mode = 'bilinear', align_corners = align}, {view = T(3, 4)})
end

return cases
