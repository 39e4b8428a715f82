-- Gradcheck and CUDA parity cases (cuda_parity_spec's cases describe: the rows of
-- core/ops/conv.c and cuda/conv.cu) for the conv family: conv2d with padding, stride, dilation,
-- groups, no bias, 1x1 on a transposed (non-contiguous) input; conv1d and conv3d
-- likewise, with per-side, 'same' (stride 2) and 'causal' padding; depthwise
-- convolutions (the direct kernels), with a depth multiplier; conv_transpose1d/2d/3d
-- with stride, padding, output_padding, dilation, groups (depthwise too). The 2-d
-- pools are pool.c's, with their cases in pool.lua.
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end

return {
   {op = 'conv2d', inputs = function() return u(2, 2, 4, 4), u(3, 2, 3, 3), u(3) end,
    fn = function(x, w, b) return fnn.conv2d(x, w, b, {padding = 1}) end},
   {op = 'conv2d', inputs = function() return u(1, 4, 6, 5), u(4, 2, 2, 2) end,
    fn = function(x, w) return fnn.conv2d(x, w, nil, {stride = 2, padding = 1, dilation = 2, groups = 2}) end},
   {op = 'conv2d', inputs = function() return u(2, 3, 4, 3), u(2, 3, 1, 1), u(2) end,
    fn = function(x, w, b) return fnn.conv2d(x:transpose(3, 4), w, b) end},
   {op = 'conv2d', inputs = function() return u(3, 5, 4), u(2, 3, 2, 3) end,   -- unbatched, rectangular kernel
    fn = function(x, w) return fnn.conv2d(x, w, nil, {stride = {1, 2}, padding = {1, 0}}) end},
   {op = 'conv2d', inputs = function() return u(2, 3, 5, 4), u(6, 1, 3, 2), u(6) end,   -- depthwise, multiplier 2
    fn = function(x, w, b) return fnn.conv2d(x, w, b, {stride = {2, 1}, padding = {1, {0, 1}}, groups = 3}) end},
   {op = 'conv2d', inputs = function() return u(1, 2, 5, 5), u(3, 2, 2, 3) end,   -- 'same' with stride 2
    fn = function(x, w) return fnn.conv2d(x, w, nil, {padding = 'same', stride = 2}) end},
   {op = 'conv1d', inputs = function() return u(2, 4, 7), u(6, 2, 3), u(6) end,
    fn = function(x, w, b) return fnn.conv1d(x, w, b, {stride = 2, padding = {{2, 1}}, dilation = 2, groups = 2}) end},
   {op = 'conv1d', inputs = function() return u(3, 6), u(2, 3, 3) end,   -- unbatched, causal
    fn = function(x, w) return fnn.conv1d(x, w, nil, {padding = 'causal'}) end},
   {op = 'conv1d', inputs = function() return u(2, 3, 6), u(3, 1, 4), u(3) end,   -- depthwise, on a strided input
    fn = function(x, w, b) return fnn.conv1d(x:narrow(3, 2, 5), w, b, {padding = 'same', groups = 3}) end},
   {op = 'conv3d', inputs = function() return u(2, 2, 3, 4, 3), u(3, 2, 2, 3, 2), u(3) end,
    fn = function(x, w, b) return fnn.conv3d(x, w, b, {stride = {1, 2, 1}, padding = {1, 1, {0, 1}}}) end},
   {op = 'conv3d', inputs = function() return u(1, 4, 3, 4, 4), u(4, 2, 2, 2, 2) end,
    fn = function(x, w) return fnn.conv3d(x, w, nil, {dilation = {1, 2, 1}, padding = 1, groups = 2}) end},
   {op = 'conv3d', inputs = function() return u(1, 2, 3, 3, 4), u(4, 1, 3, 2, 2), u(4) end,   -- depthwise
    fn = function(x, w, b) return fnn.conv3d(x, w, b, {padding = {1, 0, 1}, stride = {2, 1, 2}, groups = 2}) end},
   {op = 'conv_transpose1d', inputs = function() return u(2, 4, 5), u(4, 3, 3), u(6) end,
    fn = function(x, w, b)
       return fnn.conv_transpose1d(x, w, b, {stride = 2, padding = 1, output_padding = 1, groups = 2})
    end},
   {op = 'conv_transpose1d', inputs = function() return u(3, 4), u(3, 2, 2) end,   -- unbatched, dilation, 'same'
    fn = function(x, w) return fnn.conv_transpose1d(x, w, nil, {dilation = 2, padding = 'same', stride = 3}) end},
   {op = 'conv_transpose2d', inputs = function() return u(2, 3, 3, 4), u(3, 2, 3, 3), u(2) end,
    fn = function(x, w, b) return fnn.conv_transpose2d(x, w, b, {stride = {2, 1}, padding = {1, 0}, output_padding = {1, 0}}) end},
   {op = 'conv_transpose2d', inputs = function() return u(1, 2, 3, 3), u(2, 2, 1, 1), u(2) end,   -- 1x1 (the gemm alone)
    fn = function(x, w, b) return fnn.conv_transpose2d(x:transpose(3, 4), w, b) end},
   {op = 'conv_transpose2d', inputs = function() return u(2, 3, 3, 3), u(3, 1, 2, 2), u(3) end,   -- depthwise
    fn = function(x, w, b) return fnn.conv_transpose2d(x, w, b, {stride = 2, dilation = {1, 2}, groups = 3}) end},
   {op = 'conv_transpose3d', inputs = function() return u(1, 2, 2, 3, 2), u(2, 3, 2, 2, 3), u(3) end,
    fn = function(x, w, b)
       return fnn.conv_transpose3d(x, w, b, {stride = {2, 1, 2}, padding = {0, 1, 1}, output_padding = {1, 0, 0}})
    end},
}
