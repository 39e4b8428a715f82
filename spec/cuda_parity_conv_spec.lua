-- CUDA parity of the convolutions of core/ops/conv.c (the rows of cuda/conv.cu), beyond the cases of
-- spec/cases/conv.lua (cuda_parity_spec runs those):
-- conv1d/2d/3d and conv_transpose1d/2d/3d, forward and the gradient of every input (x, w, b),
-- with stride, padding (per side), dilation, groups, depthwise (groups = C: direct kernels for the
-- forward and the input gradient, im2col + gemm for the weight gradient), output_padding, 1x1 convolutions (x read as its own col),
-- batch 1 and 3 and unbatched inputs, non-contiguous (permuted, transposed) inputs, output lengths
-- on both sides of launch edges, and the refusal of mixed devices.
--
-- Tolerances, |gpu - cpu| <= atol + rtol |cpu|, inputs in [-1, 1]: the device sums the same
-- products in another order (cuBLAS's gemm blocking against OpenBLAS's, col2im's gather against
-- the CPU's scatter in the same tap order, db through the device reduce in double), so
--   forward: rtol 1e-5, atol 1e-5 sqrt(K), K = C/groups * kernel volume (the gemm's inner size),
--     as matmul in spec/cuda_parity_spec.lua;
--   gradients: 4x the forward's scaled by sqrt(K'/K), K' the largest inner size of the backward
--     gemms: Og * kernel volume for dx, images * output positions for dw and db (dw sums every
--     image in one gemm on the device, image by image on the CPU).
-- No atomics anywhere, so a GPU run gives the same bits every time. Fast math does not enter
-- (only multiplies and adds).
--
-- Without a usable GPU every case prints "<case>: skipped: no CUDA device" and checks the reason
-- (cuda_support's skip). spec/gpu/emulate.sh runs this against cuda/conv.cu's kernels emulated on
-- the host (spec/gpu/emulated_conv.cpp): the core's device dispatch and the kernels' index logic,
-- not a GPU.
local fnn = require 'fastnn'
local S = require 'cuda_support'
local uniform, case, parity_grad, skip, gpu = S.uniform, S.case, S.parity_grad, S.skip, S.gpu

local function prod(t, i, j)
   local p = 1
   for k = i or 1, j or #t do p = p * t[k] end
   return p
end

-- the tolerances above for x [N, C, *sp] (or unbatched), w, groups and the output's shape
local function tol(xs, ws, transposed, groups, ys)
   local nd = #ws - 2
   local taps = prod(ws, 3)
   local batched = #xs == nd + 2
   local N = batched and xs[1] or 1
   local Cin = xs[batched and 2 or 1]
   local Cout = ys[batched and 2 or 1]
   -- the forward convolution this is (a transposed one is the adjoint of the conv from y to x)
   local C, O, L = Cin, Cout, prod(ys, #ys - nd + 1)
   if transposed then C, O, L = Cout, Cin, prod(xs, #xs - nd + 1) end
   local K = C / groups * taps
   local Kb = math.max(O / groups * taps, N * L, N * prod(transposed and ys or xs, #xs - nd + 1))
   local atol = 1e-5 * math.sqrt(K)
   return atol, 1e-5, 4 * math.sqrt(math.max(1, Kb / K))
end

-- parity of op (conv2d, conv_transpose1d, ...) on x, w and b (nil: none), every gradient
local function check(label, op, xs, ws, bias, opts, view)
   opts = opts or {}
   local transposed = op:find('transpose') ~= nil
   local groups = opts.groups or 1
   local cout = transposed and ws[2] * groups or ws[1]
   local inputs = {uniform(xs, -1, 1), uniform(ws, -1, 1)}
   if bias then inputs[3] = uniform({cout}, -1, 1) end
   local ys = fnn[op](view and view(inputs[1]) or inputs[1], inputs[2], inputs[3], opts):shape()
   local atol, rtol, gtol = tol(view and view(inputs[1]):shape() or xs, ws, transposed, groups, ys)
   parity_grad(label, inputs, function(x, w, b)
      if view then x = view(x) end
      return fnn[op](x, w, b, opts)
   end, atol, rtol, gtol)
end

describe('cuda parity: conv2d, forward and backward', function()
   case('conv2d [2,3,7,6] * [4,3,3,3] with and without bias', function()
      check('conv2d bias', 'conv2d', {2, 3, 7, 6}, {4, 3, 3, 3}, true)
      check('conv2d', 'conv2d', {2, 3, 7, 6}, {4, 3, 3, 3}, false)
   end)
   case('conv2d stride 2, padding 1, batch 3; stride {2,1} with padding {(0,1),2}', function()
      check('conv2d s2 p1', 'conv2d', {3, 4, 9, 8}, {5, 4, 3, 3}, true, {stride = 2, padding = 1})
      check('conv2d s21 p', 'conv2d', {3, 2, 6, 7}, {3, 2, 2, 3}, true, {stride = {2, 1}, padding = {{0, 1}, 2}})
   end)
   case('conv2d dilation 2 (padding 2) and dilation {1,3}', function()
      check('conv2d d2', 'conv2d', {2, 3, 9, 9}, {4, 3, 3, 3}, true, {dilation = 2, padding = 2})
      check('conv2d d13', 'conv2d', {1, 2, 6, 10}, {3, 2, 2, 3}, false, {dilation = {1, 3}, stride = {1, 2}})
   end)
   case('conv2d groups 2 (batch 3: gemms over the images) and groups 3 (batch 1: over the groups)', function()
      check('conv2d g2', 'conv2d', {3, 4, 6, 6}, {6, 2, 3, 3}, true, {groups = 2, padding = 1})
      check('conv2d g3', 'conv2d', {1, 6, 5, 7}, {9, 2, 3, 2}, true, {groups = 3, stride = 2})
   end)
   case('depthwise conv2d: groups = C = 3, multiplier 1 and 2, padding 1', function()
      check('depthwise m1', 'conv2d', {2, 3, 8, 7}, {3, 1, 3, 3}, true, {groups = 3, padding = 1})
      check('depthwise m2', 'conv2d', {3, 3, 6, 5}, {6, 1, 3, 3}, true, {groups = 3, padding = 1, stride = 2})
   end)
   case('1x1 conv2d (x read as its own col): batch 1 and 3, groups 2', function()
      check('1x1 n1', 'conv2d', {1, 4, 5, 6}, {3, 4, 1, 1}, true)
      check('1x1 n3 g2', 'conv2d', {3, 4, 5, 6}, {6, 2, 1, 1}, true, {groups = 2})
      check('1x1 stride 2', 'conv2d', {2, 3, 5, 6}, {2, 3, 1, 1}, false, {stride = 2})
   end)
   case('conv2d to a 1x1 output (kernel = input) and an unbatched [C,H,W] input', function()
      check('conv2d 1x1 out', 'conv2d', {3, 2, 4, 5}, {3, 2, 4, 5}, true)
      check('conv2d unbatched', 'conv2d', {3, 6, 5}, {2, 3, 3, 3}, true, {padding = 1})
   end)
   case("conv2d padding 'same' with an even kernel (the odd pad at the end), conv1d 'causal'", function()
      check('conv2d same', 'conv2d', {2, 3, 6, 5}, {2, 3, 2, 4}, true, {padding = 'same'})
      check('conv1d causal', 'conv1d', {2, 3, 10}, {4, 3, 3}, true, {padding = 'causal', dilation = 2})
   end)
   case('conv2d of non-contiguous inputs: a permuted [2,5,6,3] and a transposed [2,3,5,7]', function()
      check('conv2d permuted', 'conv2d', {2, 5, 6, 3}, {4, 3, 3, 2}, true, {padding = 1},
            function(x) return x:permute(1, 4, 2, 3) end)
      check('conv2d transposed', 'conv2d', {2, 3, 5, 7}, {2, 3, 2, 2}, true, {stride = 2},
            function(x) return x:transpose(3, 4) end)
   end)
end)

describe('cuda parity: conv1d and conv3d, forward and backward', function()
   for _, n in ipairs(S.SIZES) do
      case(('conv1d [3,2,%d] * [4,2,3], padding 1: %d output positions'):format(n, n), function()
         check('conv1d', 'conv1d', {3, 2, n}, {4, 2, 3}, true, {padding = 1})
      end)
   end
   case('conv1d batch 1 of length 1025, stride 2 and dilation 3, groups 2', function()
      check('conv1d s2 d3 g2', 'conv1d', {1, 4, 1025}, {2, 2, 3}, true, {stride = 2, dilation = 3, groups = 2})
   end)
   case('conv3d [2,2,4,5,4] * [3,2,2,3,2], stride {1,2,1}, padding {1,0,1}; conv3d dilation 2', function()
      check('conv3d', 'conv3d', {2, 2, 4, 5, 4}, {3, 2, 2, 3, 2}, true, {stride = {1, 2, 1}, padding = {1, 0, 1}})
      check('conv3d d2', 'conv3d', {1, 2, 5, 5, 5}, {2, 2, 2, 2, 2}, false, {dilation = 2})
   end)
   case('depthwise conv3d (groups = C = 2) and conv3d of a permuted input', function()
      check('conv3d depthwise', 'conv3d', {2, 2, 3, 4, 4}, {4, 1, 2, 2, 3}, true, {groups = 2, padding = 1})
      check('conv3d permuted', 'conv3d', {2, 4, 3, 5, 2}, {3, 2, 2, 2, 2}, true, {},
            function(x) return x:permute(1, 5, 2, 3, 4) end)
   end)
end)

describe('cuda parity: conv_transpose1d/2d/3d, forward and backward', function()
   case('conv_transpose1d stride 2, padding 1, output_padding 1, with bias; batch 1, stride 3', function()
      check('conv_transpose1d', 'conv_transpose1d', {2, 3, 9}, {3, 4, 3}, true,
            {stride = 2, padding = 1, output_padding = 1})
      check('conv_transpose1d n1', 'conv_transpose1d', {1, 2, 129}, {2, 3, 4}, false, {stride = 3})
   end)
   case('conv_transpose2d stride 2, output_padding 1, groups 2; dilation 2; batch 3', function()
      check('conv_transpose2d g2', 'conv_transpose2d', {2, 4, 5, 4}, {4, 2, 3, 3}, true,
            {stride = 2, padding = 1, output_padding = 1, groups = 2})
      check('conv_transpose2d d2', 'conv_transpose2d', {3, 2, 4, 5}, {2, 3, 2, 3}, true,
            {dilation = 2, stride = {1, 2}, output_padding = {1, 0}})
   end)
   case('conv_transpose3d stride 2, output_padding 1, padding 1; unbatched, groups 2', function()
      check('conv_transpose3d', 'conv_transpose3d', {2, 2, 3, 3, 2}, {2, 3, 2, 3, 2}, true,
            {stride = 2, padding = {1, 0, 1}, output_padding = 1})
      check('conv_transpose3d unbatched', 'conv_transpose3d', {4, 2, 3, 2}, {4, 1, 2, 2, 3}, true,
            {groups = 2, stride = {1, 2, 1}})
   end)
   case('conv_transpose2d 1x1 (the gemm writes the output itself), depthwise, and of a transposed input', function()
      check('conv_transpose2d 1x1', 'conv_transpose2d', {3, 4, 3, 5}, {4, 2, 1, 1}, true)
      check('conv_transpose2d depthwise', 'conv_transpose2d', {2, 3, 4, 4}, {3, 1, 3, 3}, true,
            {groups = 3, stride = 2})
      check('conv_transpose2d^T', 'conv_transpose2d', {2, 3, 6, 4}, {3, 2, 2, 2}, true, {stride = 2},
            function(x) return x:transpose(3, 4) end)
   end)
end)

describe('cuda parity: convolutions refuse mixed devices', function()
   case('conv2d and conv_transpose1d with x on the GPU and w or b on the CPU', function()
      local x, w, b = uniform({2, 3, 5, 5}, -1, 1), uniform({4, 3, 3, 3}, -1, 1), uniform({4}, -1, 1)
      if not gpu then return skip('mixed devices', {x, w, b}) end
      local xg, wg = x:to(gpu), w:to(gpu)
      assert.error_matches(function() return fnn.conv2d(xg, w, nil) end,
                           'conv2d: tensors on different devices %(%[2,3,5,5%] cuda:0 and %[4,3,3,3%] cpu%)')
      assert.error_matches(function() return fnn.conv2d(xg, wg, b) end,
                           'conv2d: tensors on different devices %(%[2,3,5,5%] cuda:0 and %[4%] cpu%)')
      local x1, w1 = uniform({2, 3, 7}, -1, 1), uniform({3, 2, 3}, -1, 1)
      assert.error_matches(function() return fnn.conv_transpose1d(x1, w1:to(gpu), nil) end,
                           'conv_transpose1d: tensors on different devices %(%[2,3,7%] cpu and %[3,2,3%] cuda:0%)')
   end)
end)
