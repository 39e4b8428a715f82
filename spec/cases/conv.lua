-- Cases for core/ops/conv.c (the rows of cuda/conv.cu): the whole test of each convolution, its
-- values against the naive loops of spec/conv_reference.lua (via naive_nn.conv, which resolves the
-- options from the binding's documented rules), its gradient (gradcheck_spec) and its CUDA parity,
-- forward and every input's gradient (cuda_parity_spec). conv1d/2d/3d and conv_transpose1d/2d/3d
-- with stride, padding (per side, 'valid', 'same' with and without a stride, 'causal'), dilation, groups,
-- depthwise (groups = C, with a depth multiplier: the direct kernels for the forward and the input
-- gradient, im2col + gemm for the weight gradient), output_padding, 1x1 convolutions (x read as its
-- own col), a kernel the size of the input, batch 1 and 3 and unbatched inputs, non-contiguous
-- (transposed, permuted, narrowed) inputs, and output lengths on both sides of launch edges (sizes).
-- The pools are pool.c's, with their cases in pool.lua.
--
-- Parity tolerance of the cases built by conv() below (inputs in [-1, 1]), |gpu - cpu| <= atol +
-- rtol |cpu|: the device sums the same products in another order (cuBLAS's gemm blocking against
-- OpenBLAS's, col2im's gather against the CPU's scatter in the same tap order, db through the device
-- reduce in double), so
--   forward: rtol 1e-5, atol 1e-5 sqrt(K), K = C/groups * kernel volume (the gemm's inner size);
--   gradients: 4x the forward's scaled by sqrt(K'/K), K' the largest inner size of the backward
--     gemms: Og * kernel volume for dx, images * output positions for dw and db.
-- No atomics anywhere, so a GPU run gives the same bits every time; fast math does not enter.
local fnn = require 'fastnn'
local N = require 'naive_nn'
local SIZES = {1, 127, 128, 129, 1023, 1024, 1025}

local function u(...) return fnn.rand(...) * 4 - 2 end
local function u1(shape) return fnn.rand(shape) * 2 - 1 end

local function prod(t, i, j)
   local p = 1
   for k = i or 1, j or #t do p = p * t[k] end
   return p
end

-- the parity tolerance above for x [N, C, *sp] (or unbatched), w, groups and the output's shape
local function tol(xs, ws, transposed, groups, ys)
   local nd = #ws - 2
   local taps = prod(ws, 3)
   local is_batched = #xs == nd + 2
   local n = is_batched and xs[1] or 1
   local Cout = ys[is_batched and 2 or 1]
   -- the forward convolution this is (a transposed one is the adjoint of the conv from y to x)
   local C, O, L = xs[is_batched and 2 or 1], Cout, prod(ys, #ys - nd + 1)
   if transposed then C, O, L = Cout, C, prod(xs, #xs - nd + 1) end
   local K = C / groups * taps
   local Kb = math.max(O / groups * taps, n * L, n * prod(transposed and ys or xs, #xs - nd + 1))
   return {1e-5 * math.sqrt(K), 1e-5, 4 * math.sqrt(math.max(1, Kb / K))}
end

-- a case of op on x [xs], w [ws] and a bias (when bias), options opts. xs may be a function of n
-- (one of extra.sizes, or nil: gradcheck's small input) giving x's shape. extra fields:
--   sizes the case's sizes;
--   view  a function of x applied before the op (a non-contiguous input), and so in ref;
--   wide  inputs in [-2, 2] and the default parity tolerance (else [-1, 1] and tol above)
local function conv(op, xs, ws, bias, opts, extra)
   extra = extra or {}
   local transposed = op:find('transpose') ~= nil
   local groups = opts and opts.groups or 1
   local cout = transposed and ws[2] * groups or ws[1]
   local view = extra.view or function(x) return x end
   local shape_of = type(xs) == 'function' and xs or function() return xs end
   local rnd = extra.wide and u or u1
   local c = {op = op, sizes = extra.sizes,
      inputs = function(n)
         local x, w = rnd(shape_of(n)), rnd(ws)
         if bias then return x, w, rnd{cout} end
         return x, w
      end,
      fn = function(x, w, b) return fnn[op](view(x), w, b, opts) end,
      ref = function(x, w, b) return N.conv(transposed, view(x):contiguous(), w, b, opts) end}
   if not extra.wide then
      c.parity = function(n)   -- the output's shape (from the op) only sizes the tolerance
         local vx = view(fnn.zeros(shape_of(n)))
         local ys = fnn[op](vx, fnn.zeros(ws), nil, opts):shape()
         return tol(vx:shape(), ws, transposed, groups, ys)
      end
   end
   return c
end
local W = {wide = true}
-- a case whose output passes a relu: values (and parity) only (see the relu cases below)
local function relu_case(c) c.gradcheck = false; return c end

local function transpose34(x) return x:transpose(3, 4) end

-- bfloat16 operands (core/ops/conv.c widens them on the CPU and rounds a bfloat16 output): x, w, b
-- multiples of 1/8 in [-1/2, 1/2] with at most 4 products a sum, exact in bf16 with the steps of 1/4
-- (eps), so the difference quotients are exact and the reference is the naive loop
local eighths = require('support').eighths
local function bf16_case(op, xs, ws, bs, opts, every)
   local transposed = op:find('transpose') ~= nil
   return {op = op, eps = 0.25,
      inputs = function() return eighths(xs), eighths(ws), eighths{bs} end,
      fn = every and function(x, w, b) return fnn[op](x:bf16(), w:bf16(), b:bf16(), opts):float() end   -- bf16 out
         or function(x, w, b) return fnn[op](x:bf16(), w, b, opts) end,                               -- float32 out
      ref = function(x, w, b) return N.conv(transposed, x, w, b, opts) end}
end

return {
   -- small cases in [-2, 2] (the default parity tolerance)
   conv('conv2d', {2, 2, 4, 4}, {3, 2, 3, 3}, true, {padding = 1}, W),
   conv('conv2d', {1, 4, 6, 5}, {4, 2, 2, 2}, false, {stride = 2, padding = 1, dilation = 2, groups = 2}, W),
   conv('conv2d', {2, 3, 4, 3}, {2, 3, 1, 1}, true, nil, {wide = true, view = transpose34}),
   conv('conv2d', {3, 5, 4}, {2, 3, 2, 3}, false, {stride = {1, 2}, padding = {1, 0}}, W),   -- unbatched, rectangular
   conv('conv2d', {2, 3, 5, 4}, {6, 1, 3, 2}, true, {stride = {2, 1}, padding = {1, {0, 1}}, groups = 3}, W),   -- depthwise x2
   conv('conv2d', {1, 2, 5, 5}, {3, 2, 2, 3}, false, {padding = 'same', stride = 2}, W),   -- 'same' with stride 2
   conv('conv2d', {1, 2, 5, 4}, {2, 2, 2, 2}, true, {padding = 'valid', dilation = {2, 1}}, W),
   conv('conv1d', {2, 4, 7}, {6, 2, 3}, true, {stride = 2, padding = {{2, 1}}, dilation = 2, groups = 2}, W),
   conv('conv1d', {3, 6}, {2, 3, 3}, false, {padding = 'causal'}, W),   -- unbatched, causal
   conv('conv1d', {2, 3, 6}, {3, 1, 4}, true, {padding = 'same', groups = 3},   -- depthwise, on a strided input
        {wide = true, view = function(x) return x:narrow(3, 2, 5) end}),
   conv('conv3d', {2, 2, 3, 4, 3}, {3, 2, 2, 3, 2}, true, {stride = {1, 2, 1}, padding = {1, 1, {0, 1}}}, W),
   conv('conv3d', {1, 4, 3, 4, 4}, {4, 2, 2, 2, 2}, false, {dilation = {1, 2, 1}, padding = 1, groups = 2}, W),
   conv('conv3d', {1, 2, 3, 3, 4}, {4, 1, 3, 2, 2}, true, {padding = {1, 0, 1}, stride = {2, 1, 2}, groups = 2}, W),
   conv('conv_transpose1d', {2, 4, 5}, {4, 3, 3}, true, {stride = 2, padding = 1, output_padding = 1, groups = 2}, W),
   conv('conv_transpose1d', {3, 4}, {3, 2, 2}, false, {dilation = 2, padding = 'same', stride = 3}, W),   -- unbatched
   conv('conv_transpose2d', {2, 3, 3, 4}, {3, 2, 3, 3}, true, {stride = {2, 1}, padding = {1, 0}, output_padding = {1, 0}}, W),
   -- 1x1 (the gemm alone), of a transposed input
   conv('conv_transpose2d', {1, 2, 3, 3}, {2, 2, 1, 1}, true, nil, {wide = true, view = transpose34}),
   -- depthwise
   conv('conv_transpose2d', {2, 3, 3, 3}, {3, 1, 2, 2}, true, {stride = 2, dilation = {1, 2}, groups = 3}, W),
   conv('conv_transpose3d', {1, 2, 2, 3, 2}, {2, 3, 2, 2, 3}, true,
        {stride = {2, 1, 2}, padding = {0, 1, 1}, output_padding = {1, 0, 0}}, W),

   -- conv2d in [-1, 1] with the tolerance above: plain, stride, per-side padding, dilation, groups
   -- (batch 3: gemms over the images; batch 1: over the groups), depthwise x1 and x2
   conv('conv2d', {2, 3, 7, 6}, {4, 3, 3, 3}, true),
   conv('conv2d', {2, 3, 7, 6}, {4, 3, 3, 3}, false),
   conv('conv2d', {3, 4, 9, 8}, {5, 4, 3, 3}, true, {stride = 2, padding = 1}),
   conv('conv2d', {3, 2, 6, 7}, {3, 2, 2, 3}, true, {stride = {2, 1}, padding = {{0, 1}, 2}}),
   conv('conv2d', {2, 3, 9, 9}, {4, 3, 3, 3}, true, {dilation = 2, padding = 2}),
   conv('conv2d', {1, 2, 6, 10}, {3, 2, 2, 3}, false, {dilation = {1, 3}, stride = {1, 2}}),
   conv('conv2d', {3, 4, 6, 6}, {6, 2, 3, 3}, true, {groups = 2, padding = 1}),
   conv('conv2d', {1, 6, 5, 7}, {9, 2, 3, 2}, true, {groups = 3, stride = 2}),
   conv('conv2d', {2, 3, 8, 7}, {3, 1, 3, 3}, true, {groups = 3, padding = 1}),
   conv('conv2d', {3, 3, 6, 5}, {6, 1, 3, 3}, true, {groups = 3, padding = 1, stride = 2}),
   -- 1x1 (x read as its own col): batch 1 and 3, groups 2, stride 2
   conv('conv2d', {1, 4, 5, 6}, {3, 4, 1, 1}, true),
   conv('conv2d', {3, 4, 5, 6}, {6, 2, 1, 1}, true, {groups = 2}),
   conv('conv2d', {2, 3, 5, 6}, {2, 3, 1, 1}, false, {stride = 2}),
   -- a 1x1 output (kernel = input), unbatched, 'same' with an even kernel (the odd pad at the end)
   conv('conv2d', {3, 2, 4, 5}, {3, 2, 4, 5}, true),
   conv('conv2d', {3, 6, 5}, {2, 3, 3, 3}, true, {padding = 1}),
   conv('conv2d', {2, 3, 6, 5}, {2, 3, 2, 4}, true, {padding = 'same'}),
   -- non-contiguous: a permuted [2,5,6,3] and a transposed [2,3,5,7]
   conv('conv2d', {2, 5, 6, 3}, {4, 3, 3, 2}, true, {padding = 1}, {view = function(x) return x:permute(1, 4, 2, 3) end}),
   conv('conv2d', {2, 3, 5, 7}, {2, 3, 2, 2}, true, {stride = 2}, {view = transpose34}),

   -- conv1d: causal with dilation; output lengths across the launch edges; a long strided,
   -- dilated, grouped line of batch 1
   conv('conv1d', {2, 3, 10}, {4, 3, 3}, true, {padding = 'causal', dilation = 2}),
   conv('conv1d', function(n) return {3, 2, n or 6} end, {4, 2, 3}, true, {padding = 1}, {sizes = SIZES}),
   conv('conv1d', function(n) return {1, 4, n or 17} end, {2, 2, 3}, true, {stride = 2, dilation = 3, groups = 2},
        {sizes = {1025}}),
   -- conv3d: stride and padding, dilation, depthwise, a permuted input
   conv('conv3d', {2, 2, 4, 5, 4}, {3, 2, 2, 3, 2}, true, {stride = {1, 2, 1}, padding = {1, 0, 1}}),
   conv('conv3d', {1, 2, 5, 5, 5}, {2, 2, 2, 2, 2}, false, {dilation = 2}),
   conv('conv3d', {2, 2, 3, 4, 4}, {4, 1, 2, 2, 3}, true, {groups = 2, padding = 1}),
   conv('conv3d', {2, 4, 3, 5, 2}, {3, 2, 2, 2, 2}, true, nil, {view = function(x) return x:permute(1, 5, 2, 3, 4) end}),

   -- transposed: output_padding, a long line of batch 1 with stride 3, groups, dilation, unbatched,
   -- 1x1 (the gemm writes the output itself), depthwise, a transposed input
   conv('conv_transpose1d', {2, 3, 9}, {3, 4, 3}, true, {stride = 2, padding = 1, output_padding = 1}),
   conv('conv_transpose1d', function(n) return {1, 2, n or 9} end, {2, 3, 4}, false, {stride = 3}, {sizes = {129}}),
   conv('conv_transpose2d', {2, 4, 5, 4}, {4, 2, 3, 3}, true, {stride = 2, padding = 1, output_padding = 1, groups = 2}),
   conv('conv_transpose2d', {3, 2, 4, 5}, {2, 3, 2, 3}, true, {dilation = 2, stride = {1, 2}, output_padding = {1, 0}}),
   conv('conv_transpose3d', {2, 2, 3, 3, 2}, {2, 3, 2, 3, 2}, true, {stride = 2, padding = {1, 0, 1}, output_padding = 1}),
   conv('conv_transpose3d', {4, 2, 3, 2}, {4, 1, 2, 2, 3}, true, {groups = 2, stride = {1, 2, 1}}),
   conv('conv_transpose2d', {3, 4, 3, 5}, {4, 2, 1, 1}, true),
   conv('conv_transpose2d', {2, 3, 4, 4}, {3, 1, 3, 3}, true, {groups = 3, stride = 2}),
   conv('conv_transpose2d', {2, 3, 6, 4}, {3, 2, 2, 2}, true, {stride = 2}, {view = transpose34}),

   -- activation 'relu' in the node: oneDNN's post-op (batch 2, 3: one primitive and image slots), im2col +
   -- gemm (a 1-channel input's weight gradient), depthwise (the direct kernels) and conv1d / conv3d.
   -- Values and parity only: random sums meet relu's kink, which finite differences straddle; their
   -- gradcheck is conv_activation_spec's, on inputs kept off it
   relu_case(conv('conv2d', {2, 3, 7, 6}, {4, 3, 3, 3}, true, {padding = 1, activation = 'relu'})),
   relu_case(conv('conv2d', {3, 1, 6, 5}, {4, 1, 3, 3}, false, {stride = 2, activation = 'relu'})),
   relu_case(conv('conv2d', {2, 3, 5, 6}, {6, 1, 3, 3}, true, {groups = 3, padding = 1, activation = 'relu'})),
   relu_case(conv('conv1d', {2, 3, 9}, {4, 3, 3}, true, {padding = 'causal', activation = 'relu'})),
   relu_case(conv('conv3d', {1, 2, 3, 4, 4}, {3, 2, 2, 2, 2}, true, {padding = 1, activation = 'relu'}, W)),
   -- bfloat16 operands: every input bf16 (a bf16 output), a bf16 x alone (float32); depthwise
   bf16_case('conv2d', {2, 2, 4, 3}, {3, 2, 1, 2}, 3, {padding = 1}, true),
   relu_case(bf16_case('conv2d', {2, 2, 4, 3}, {3, 2, 1, 2}, 3, {padding = 1, activation = 'relu'}, true)),
   bf16_case('conv1d', {2, 3, 7}, {4, 3, 1}, 4, {stride = 2}, false),
   bf16_case('conv3d', {1, 2, 3, 3, 2}, {4, 1, 2, 2, 1}, 4, {groups = 2}, true),
   bf16_case('conv_transpose1d', {2, 3, 5}, {3, 2, 2}, 2, {stride = 2}, true),
   bf16_case('conv_transpose2d', {2, 3, 3, 3}, {3, 1, 2, 2}, 3, {stride = 2, groups = 3}, false),
   bf16_case('conv_transpose3d', {1, 2, 2, 2, 2}, {2, 2, 1, 2, 1}, 2, {stride = {2, 1, 1}}, true),
}
