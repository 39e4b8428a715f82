-- Cases for core/ops/norm.c (the rows of cuda/norm.cu and cuda/batch_norm.cu), each the whole test
-- of its op: the values against naive loops (spec/naive_nn.lua: biased variance, eps inside the
-- sqrt, as PyTorch), the gradient (gradcheck_spec) and the CUDA parity, forward and gradient
-- (cuda_parity_spec). layer_norm: with weight and bias, over two trailing dims, without affine
-- tensors, with weight or bias only, on a transposed (non-contiguous) input, rows of a mean far from
-- 0. batch_norm in training mode (batch statistics; the batch mean and unbiased variance it also
-- returns are values cases) and eval mode (fixed running stats, captured, not differentiated:
-- PyTorch gives them no gradient) on both layouts the kernel has: narrow ([N, C] and [N, C, L] with
-- L < 32, by blocks of rows) and wide (planes of 32 or more, by channel); with and without affine,
-- non-contiguous; with {activation = 'relu'} (ref: the naive batch norm, then max(y, 0)) on both
-- layouts, 1-d, 2-d and 3-d, training and eval, affine and not, across the CUDA modes (the
-- relu'd output is its own mask in the backward: the gradcheck and the parity's gradients cover it;
-- spec/norm_fused_spec.lua holds it to the unfused pair bit for bit). layer_norm through
-- fnn.add_layer_norm (its y, and y + s / 2; ref: a naive add, then the naive layer_norm), weight
-- and bias or weight only, rows of 1 to 1025 (the CUDA row's residual). group_norm with several
-- groups, one group per channel (instance norm), no affine, non-contiguous. rms_norm with and
-- without weight.
-- The sizes sweeps cross cuda/norm.cu's and batch_norm.cu's modes: rows of 1 to 1025 (a block of up
-- to 256 threads per row), batch_norm channels C across 128 and 256 (a thread per channel), N L
-- across its block mode's edges (128 elements a channel: a block each, 32 to 256 threads); the
-- weight gradient of [99, 512] in chunks of 4 rows, the last one short.
-- Parity tolerance NORM, |gpu - cpu| <= atol + rtol |cpu|: rtol 1e-5, atol 1e-5 (xhat near 0 has
-- absolute error), the gradients 10x: both sides sum in double in different orders (the CPU's
-- shifted one-pass sums, the GPU's block reductions), rsqrt under fast math.
local fnn = require 'fastnn'
local N = require 'naive_nn'
local SIZES = {1, 127, 128, 129, 1023, 1024, 1025}
local NORM = {1e-5, 1e-5, 10}

local function u(...) return fnn.rand(...) * 4 - 2 end
local function uniform(shape, lo, hi) return fnn.rand(shape) * (hi - lo) + lo end
local function bn_train(x, w, b) return (fnn.batch_norm(x, nil, nil, w, b, {training = true})) end

-- eval-mode running stats: constants of the function, not inputs (PyTorch gives them no gradient),
-- taken to x's device (the CUDA parity runs these cases there too)
local rm3, rv3 = fnn.tensor{0.3, -0.5, 1.2}, fnn.tensor{0.8, 1.5, 0.4}
local rm2, rv2 = fnn.tensor{-0.2, 0.7}, fnn.tensor{2.0, 0.6}
local function bn_eval(x, rm, rv, w, b, opts)
   return fnn.batch_norm(x, rm:to(x:device()), rv:to(x:device()), w, b, opts)
end
-- fixed running stats for C channels: means in [-0.5, 0.5], variances in [0.5, 2]
local function running(C)
   local m, v = {}, {}
   for c = 1, C do m[c], v[c] = ((c * 37) % 11) / 10 - 0.5, 0.5 + ((c * 53) % 13) / 8 end
   return fnn.tensor(m, {C}), fnn.tensor(v, {C})
end

-- the naive relu of a tensor (the refs of batch_norm's activation = 'relu')
local function relu_ref(t)
   local v = t:to_flat()
   for i = 1, #v do v[i] = v[i] > 0 and v[i] or 0 end
   return fnn.tensor(v, t:shape())
end

-- a batch_norm case on x of shape(n) (n nil: gradcheck's small one); what: 'train' (y), 'mean',
-- 'var' (the batch statistics, values cases), 'eval' (y from running(C)); affine: w and b inputs;
-- extra.view: a non-contiguous input (ref reads it contiguous); extra.act: the activation option
-- (ref: y relu'd, the batch statistics as without)
local function bn(shape, what, affine, extra)
   extra = extra or {}
   local view = extra.view or function(x) return x end
   local act = extra.act
   local post = act == 'relu' and (what == 'train' or what == 'eval') and relu_ref or function(y) return y end
   local train = what ~= 'eval'
   local k = ({train = 1, mean = 2, var = 3, eval = 1})[what]
   -- y cases are gradchecked (gradcheck nil), the batch statistics are values only (`k == 1 and nil or
   -- false` was always false: no bn() case had a gradcheck or a gradient parity)
   local gradcheck
   if k ~= 1 then gradcheck = false end
   return {op = 'batch_norm', sizes = extra.sizes, parity = NORM, gradcheck = gradcheck,
      inputs = function(n)
         local s = shape(n)
         local x = train and uniform(s, -2, 2) * 1.5 + 0.5 or uniform(s, -2, 2)
         if not affine then return x end
         local C = view(x):shape()[2]
         if affine == 'w' then return x, uniform({C}, 0.5, 1.5) end
         return x, uniform({C}, 0.5, 1.5), uniform({C}, -1, 1)
      end,
      fn = function(x, w, b)
         x = view(x)
         if train then return (select(k, fnn.batch_norm(x, nil, nil, w, b, {training = true, activation = act}))) end
         local rm, rv = running(x:shape()[2])
         return fnn.batch_norm(x, rm:to(x:device()), rv:to(x:device()), w, b, {training = false, activation = act})
      end,
      ref = function(x, w, b)
         x = view(x):contiguous()
         if train then return post(N.batch_norm(x, nil, nil, w, b, nil, what)) end
         local rm, rv = running(x:shape()[2])
         return post(N.batch_norm(x, rm, rv, w, b))
      end}
end
local function fixed(shape) return function() return shape end end



-- the naive x + r (add_layer_norm's refs)
local function add_ref(x, r)
   local a, b = x:to_flat(), r:to_flat()
   for i = 1, #a do a[i] = a[i] + b[i] end
   return fnn.tensor(a, x:shape())
end
-- fnn.add_layer_norm's y, and y + s / 2 (both outputs in one gradient)
local function add_ln(x, r, w, b) return select(2, fnn.add_layer_norm(x, r, w, b)) end
local function add_ln_both(x, r, w, b)
   local s, y = fnn.add_layer_norm(x, r, w, b, {eps = 1e-3})
   return y + s * 0.5
end

local cases = {
   {op = 'layer_norm', inputs = function() return u(3, 5), u(5), u(5) end,
    fn = function(x, w, b) return fnn.layer_norm(x, w, b) end, ref = N.layer_norm},
   {op = 'layer_norm', inputs = function() return u(2, 2, 3), u(2, 3), u(2, 3) end,
    fn = function(x, w, b) return fnn.layer_norm(x, w, b) end, ref = N.layer_norm},
   {op = 'layer_norm', inputs = function() return u(4, 3) end,
    fn = function(x) return fnn.layer_norm(x:t(), nil, nil, {eps = 1e-3}) end,
    ref = function(x) return N.layer_norm(x:t():contiguous(), nil, nil, 1e-3) end},
   {op = 'layer_norm', inputs = function() return u(3, 4), u(4) end,
    fn = function(x, b) return fnn.layer_norm(x, nil, b) end,
    ref = function(x, b) return N.layer_norm(x, nil, b) end},
   {op = 'layer_norm', inputs = function() return u(2, 300), u(300), u(300) end,
    fn = function(x, w, b) return fnn.layer_norm(x, w, b) end, ref = N.layer_norm},

   -- training, narrow: [N, C], then [N, C, L]
   {op = 'batch_norm', inputs = function() return u(6, 3), u(3), u(3) end, fn = bn_train,
    ref = function(x, w, b) return N.batch_norm(x, nil, nil, w, b) end},
   {op = 'batch_norm', inputs = function() return u(3, 2, 4), u(2), u(2) end, fn = bn_train,
    ref = function(x, w, b) return N.batch_norm(x, nil, nil, w, b) end},
   -- training, wide: planes of 36; without affine; non-contiguous input
   {op = 'batch_norm', inputs = function() return u(2, 2, 6, 6), u(2), u(2) end, fn = bn_train,
    ref = function(x, w, b) return N.batch_norm(x, nil, nil, w, b) end},
   {op = 'batch_norm', inputs = function() return u(2, 3, 1, 40) end, fn = function(x) return bn_train(x) end,
    ref = function(x) return N.batch_norm(x) end},
   {op = 'batch_norm', inputs = function() return u(2, 3, 5), u(3) end,
    fn = function(x, w) return bn_train(x:transpose(1, 3), w) end,   -- [5, 3, 2]
    ref = function(x, w) return N.batch_norm(x:transpose(1, 3):contiguous(), nil, nil, w) end},
   -- channels of 140 elements: a block each on the GPU
   {op = 'batch_norm', inputs = function() return u(2, 3, 70), u(3), u(3) end, fn = bn_train,
    ref = function(x, w, b) return N.batch_norm(x, nil, nil, w, b) end},
   -- eval: running stats fixed
   {op = 'batch_norm', inputs = function() return u(4, 3), u(3), u(3) end,
    fn = function(x, w, b) return bn_eval(x, rm3, rv3, w, b) end,
    ref = function(x, w, b) return N.batch_norm(x, rm3, rv3, w, b) end},
   {op = 'batch_norm', inputs = function() return u(2, 2, 6, 6), u(2), u(2) end,
    fn = function(x, w, b) return bn_eval(x, rm2, rv2, w, b, {eps = 1e-3}) end,
    ref = function(x, w, b) return N.batch_norm(x, rm2, rv2, w, b, 1e-3) end},
   {op = 'batch_norm', inputs = function() return u(2, 3, 4) end,
    fn = function(x) return bn_eval(x, rm3, rv3) end,
    ref = function(x) return N.batch_norm(x, rm3, rv3) end},

   {op = 'group_norm', inputs = function() return u(2, 4, 3), u(4), u(4) end,
    fn = function(x, w, b) return fnn.group_norm(x, 2, w, b) end,
    ref = function(x, w, b) return N.group_norm(x, 2, w, b) end},
   {op = 'group_norm', inputs = function() return u(2, 6, 2, 3), u(6), u(6) end,
    fn = function(x, w, b) return fnn.group_norm(x, 3, w, b) end,
    ref = function(x, w, b) return N.group_norm(x, 3, w, b) end},
   {op = 'group_norm', inputs = function() return u(2, 3, 5) end,
    fn = function(x) return fnn.instance_norm(x) end,
    ref = function(x) return N.group_norm(x, 3) end},
   {op = 'group_norm', inputs = function() return u(2, 4, 80), u(4), u(4) end,   -- rows of 160
    fn = function(x, w, b) return fnn.group_norm(x, 2, w, b) end,
    ref = function(x, w, b) return N.group_norm(x, 2, w, b) end},
   {op = 'group_norm', inputs = function() return u(2, 5, 4), u(4) end,
    fn = function(x, b) return fnn.group_norm(x:transpose(2, 3), 2, nil, b, {eps = 1e-3}) end,   -- [2, 4, 5]
    ref = function(x, b) return N.group_norm(x:transpose(2, 3):contiguous(), 2, nil, b, 1e-3) end},

   {op = 'rms_norm', inputs = function() return u(3, 5), u(5) end,
    fn = function(x, w) return fnn.rms_norm(x, w) end, ref = N.rms_norm},
   {op = 'rms_norm', inputs = function() return u(2, 2, 3), u(2, 3) end,
    fn = function(x, w) return fnn.rms_norm(x, w) end, ref = N.rms_norm},
   {op = 'rms_norm', inputs = function() return u(2, 300), u(300) end,
    fn = function(x, w) return fnn.rms_norm(x, w) end, ref = N.rms_norm},
   {op = 'rms_norm', inputs = function() return u(4, 3) end,
    fn = function(x) return fnn.rms_norm(x:t(), nil, {eps = 1e-3}) end,
    ref = function(x) return N.rms_norm(x:t():contiguous(), nil, 1e-3) end},

   -- rows of 1 to 1025 (gradcheck: rows of 5)
   {op = 'layer_norm', sizes = SIZES, parity = NORM,
    inputs = function(n) n = n or 5; return u(3, n), uniform({n}, 0.5, 1.5), uniform({n}, -1, 1) end,
    fn = function(x, w, b) return fnn.layer_norm(x, w, b) end, ref = N.layer_norm},
   {op = 'rms_norm', sizes = SIZES, parity = NORM,
    inputs = function(n) n = n or 5; return u(3, n), uniform({n}, 0.5, 1.5) end,
    fn = function(x, w) return fnn.rms_norm(x, w) end, ref = N.rms_norm},
   -- 33 rows of 130 from a transposed [130, 33], no affine; rows of a mean far from 0, weight only
   {op = 'layer_norm', sizes = {130}, parity = NORM,
    inputs = function(n) return u(n or 7, 33) end,
    fn = function(x) return fnn.layer_norm(x:t()) end,
    ref = function(x) return N.layer_norm(x:t():contiguous()) end},
   {op = 'layer_norm', parity = NORM, inputs = function() return uniform({5, 2, 64}, 1, 3), uniform({64}, 0.5, 1.5) end,
    fn = function(x, w) return fnn.layer_norm(x, w, nil, {eps = 1e-3}) end,
    ref = function(x, w) return N.layer_norm(x, w, nil, 1e-3) end},
   -- [99, 512]: the weight gradient in chunks of 4 rows, the last one short (gradcheck: [5, 64], as
   -- float32 sums over rows of 512 put ~1e-6 of noise in the statistics, too much for finite differences)
   {op = 'layer_norm', sizes = {99}, parity = NORM,
    inputs = function(n)
       local d = n and 512 or 64
       return u(n or 5, d), uniform({d}, 0.5, 1.5), uniform({d}, -1, 1)
    end,
    fn = function(x, w, b) return fnn.layer_norm(x, w, b) end, ref = N.layer_norm},
   {op = 'rms_norm', sizes = {99}, parity = NORM,
    inputs = function(n) local d = n and 512 or 64; return u(n or 5, d), uniform({d}, 0.5, 1.5) end,
    fn = function(x, w) return fnn.rms_norm(x, w) end, ref = N.rms_norm},
   -- add_layer_norm: y, with weight and bias across the CUDA row's sizes; over two trailing dims (a
   -- constant weight of ones); y + s / 2 with weight only, eps 1e-3
   {op = 'layer_norm', sizes = SIZES, parity = NORM,
    inputs = function(n) n = n or 5; return u(3, n), u(3, n), uniform({n}, 0.5, 1.5), uniform({n}, -1, 1) end,
    fn = add_ln, ref = function(x, r, w, b) return N.layer_norm(add_ref(x, r), w, b) end},
   {op = 'layer_norm', parity = NORM, inputs = function() return u(2, 3, 4), u(2, 3, 4) end,
    fn = function(x, r) return add_ln(x, r, fnn.ones(3, 4):to(x:device())) end,
    ref = function(x, r) return N.layer_norm(add_ref(x, r), fnn.ones(3, 4)) end},
   {op = 'layer_norm', parity = NORM, inputs = function() return u(4, 6), u(4, 6), uniform({6}, 0.5, 1.5) end,
    fn = add_ln_both,
    ref = function(x, r, w)
       local s = add_ref(x, r)
       local y, sv = N.layer_norm(s, w, nil, 1e-3):to_flat(), s:to_flat()
       for i = 1, #y do y[i] = y[i] + sv[i] * 0.5 end
       return fnn.tensor(y, s:shape())
    end},
   -- over two trailing dims (normalized 15); rms_norm of 1025 rows without weight
   {op = 'layer_norm', parity = NORM,
    inputs = function() return u(4, 3, 5), uniform({3, 5}, 0.5, 1.5), uniform({3, 5}, -1, 1) end,
    fn = function(x, w, b) return fnn.layer_norm(x, w, b) end, ref = N.layer_norm},
   {op = 'rms_norm', sizes = {1025}, parity = NORM, inputs = function(n) return u(n or 9, 7) end,
    fn = function(x) return fnn.rms_norm(x) end, ref = function(x) return N.rms_norm(x) end},
   -- instance_norm with affine; group_norm of a transposed [6, 4, 5] ([5, 4, 6])
   {op = 'group_norm', parity = NORM,
    inputs = function() return u(2, 3, 4, 4), uniform({3}, 0.5, 1.5), uniform({3}, -1, 1) end,
    fn = function(x, w, b) return fnn.instance_norm(x, w, b) end,
    ref = function(x, w, b) return N.group_norm(x, 3, w, b) end},
   {op = 'group_norm', parity = NORM, inputs = function() return u(6, 4, 5) end,
    fn = function(x) return fnn.group_norm(x:transpose(1, 3), 2) end,
    ref = function(x) return N.group_norm(x:transpose(1, 3):contiguous(), 2) end},

   -- batch_norm: C channels of 4 across a thread per channel's edges (gradcheck: 3 channels), training
   -- (y, the batch mean and variance) and eval, affine and not
   bn(function(n) return {4, n or 3} end, 'train', true, {sizes = {1, 127, 128, 129, 255, 256, 257, 1025}}),
   bn(function(n) return {4, n or 3} end, 'train', false, {sizes = {1, 127, 128, 129, 255, 256, 257, 1025}}),
   bn(function(n) return {4, n or 3} end, 'mean', false, {sizes = {1, 127, 128, 129, 255, 256, 257, 1025}}),
   bn(function(n) return {4, n or 3} end, 'var', false, {sizes = {1, 127, 128, 129, 255, 256, 257, 1025}}),
   bn(function(n) return {4, n or 3} end, 'eval', true, {sizes = {1, 127, 128, 129, 255, 256, 257, 1025}}),
   bn(function(n) return {4, n or 3} end, 'eval', false, {sizes = {1, 127, 128, 129, 255, 256, 257, 1025}}),
   -- [2, 3, L]: N L of 30, 32, 34 (a thread per channel), 128, 130 (a block of 128, 160 threads), 256,
   -- 258, 1400 (256); gradcheck: L = 5
   bn(function(n) return {2, 3, n or 5} end, 'train', true, {sizes = {15, 16, 17, 64, 65, 128, 129, 700}}),
   bn(function(n) return {2, 3, n or 5} end, 'eval', true, {sizes = {15, 16, 17, 64, 65, 128, 129, 700}}),
   bn(function(n) return {2, 3, n or 5} end, 'train', false, {sizes = {15, 16, 17, 64, 65, 128, 129, 700}}),
   bn(function(n) return {2, 3, n or 5} end, 'mean', false, {sizes = {15, 16, 17, 64, 65, 128, 129, 700}}),
   bn(function(n) return {2, 3, n or 5} end, 'var', false, {sizes = {15, 16, 17, 64, 65, 128, 129, 700}}),
   -- 2-d and 3-d planes; eval without affine; a permuted [4, 5, 6, 3] ([4, 3, 5, 6]), weight only
   bn(fixed{4, 3, 5, 6}, 'train', true),
   bn(fixed{4, 3, 5, 6}, 'eval', true),
   bn(fixed{4, 3, 5, 6}, 'eval', false),
   bn(fixed{2, 5, 3, 4, 3}, 'train', false),
   bn(fixed{4, 3, 5, 6}, 'mean', false),
   bn(fixed{4, 3, 5, 6}, 'var', false),
   bn(fixed{2, 5, 3, 4, 3}, 'mean', false),
   bn(fixed{2, 5, 3, 4, 3}, 'var', false),
   bn(fixed{4, 5, 6, 3}, 'train', 'w', {view = function(x) return x:permute(1, 4, 2, 3) end}),
   bn(fixed{4, 5, 6, 3}, 'eval', false, {view = function(x) return x:permute(1, 4, 2, 3) end}),

   -- {activation = 'relu'}: C across a thread per channel's edges ([4, C]); [2, 3, L] across the
   -- narrow / wide layouts and the GPU's block modes; 2-d and 3-d planes; eval; no affine; the batch
   -- statistics (unchanged by the activation); a permuted input
   bn(function(n) return {4, n or 3} end, 'train', true, {act = 'relu', sizes = {1, 127, 128, 129, 257}}),
   bn(function(n) return {4, n or 3} end, 'eval', true, {act = 'relu', sizes = {1, 127, 128, 129, 257}}),
   bn(function(n) return {2, 3, n or 5} end, 'train', true, {act = 'relu', sizes = {15, 16, 17, 64, 65, 129, 700}}),
   bn(function(n) return {2, 3, n or 5} end, 'train', false, {act = 'relu', sizes = {15, 16, 17, 64, 65, 129, 700}}),
   bn(function(n) return {2, 3, n or 5} end, 'eval', true, {act = 'relu', sizes = {15, 16, 17, 64, 65, 129, 700}}),
   bn(fixed{3, 3, 5, 7}, 'train', true, {act = 'relu'}),
   bn(fixed{3, 3, 5, 7}, 'eval', false, {act = 'relu'}),
   bn(fixed{2, 5, 3, 4, 3}, 'train', true, {act = 'relu'}),
   bn(fixed{4, 3, 5, 6}, 'mean', false, {act = 'relu'}),
   bn(fixed{4, 3, 5, 6}, 'var', true, {act = 'relu'}),
   bn(fixed{4, 5, 6, 3}, 'train', 'w', {act = 'relu', view = function(x) return x:permute(1, 4, 2, 3) end}),
}

-- group_norm with weight and bias, and without: several groups, 2-d input, long rows (1025 and 129:
-- gradcheck rows of 9 and 5), 4 groups of 1 channel, one group
for _, c in ipairs{{{2, 6, 5}, 3}, {{4, 6}, 2}, {{1, 4, 1025}, 2}, {{3, 4, 2, 3}, 4}, {{2, 8, 129}, 1}} do
   local full, groups = c[1], c[2]
   local long = #full == 3 and full[3] > 100
   local function shape(n)
      if not long then return full end
      return {full[1], full[2], n or (full[3] == 1025 and 9 or 5)}
   end
   local C, sizes = full[2], long and {full[3]} or nil
   cases[#cases + 1] = {op = 'group_norm', sizes = sizes, parity = NORM,
      inputs = function(n) return u(shape(n)), uniform({C}, 0.5, 1.5), uniform({C}, -1, 1) end,
      fn = function(x, w, b) return fnn.group_norm(x, groups, w, b) end,
      ref = function(x, w, b) return N.group_norm(x, groups, w, b) end}
   cases[#cases + 1] = {op = 'group_norm', sizes = sizes, parity = NORM,
      inputs = function(n) return u(shape(n)) end,
      fn = function(x) return fnn.group_norm(x, groups) end,
      ref = function(x) return N.group_norm(x, groups) end}
end

return cases
