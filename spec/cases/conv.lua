-- Gradcheck cases for core/ops/conv.c: conv2d with padding, stride, dilation,
-- groups, no bias, 1x1 on a transposed (non-contiguous) input; max_pool2d on
-- inputs with no near-ties (distinct values 0.05 apart, so a perturbation of
-- eps cannot move a window's maximum), on the 2x2 fast path and on overlapping
-- padded ceil_mode windows; avg_pool2d with and without counting the padding.
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end
-- n distinct values 0.05 apart in random order, shaped
local function distinct(shape)
   local n = 1
   for _, s in ipairs(shape) do n = n * s end
   return (fnn.randperm(n) * 0.05 - 0.05 * n / 2):reshape(shape)
end

return {
   {op = 'conv2d', inputs = function() return u(2, 2, 4, 4), u(3, 2, 3, 3), u(3) end,
    fn = function(x, w, b) return fnn.conv2d(x, w, b, {padding = 1}) end},
   {op = 'conv2d', inputs = function() return u(1, 4, 6, 5), u(4, 2, 2, 2) end,
    fn = function(x, w) return fnn.conv2d(x, w, nil, {stride = 2, padding = 1, dilation = 2, groups = 2}) end},
   {op = 'conv2d', inputs = function() return u(2, 3, 4, 3), u(2, 3, 1, 1), u(2) end,
    fn = function(x, w, b) return fnn.conv2d(x:transpose(3, 4), w, b) end},
   {op = 'conv2d', inputs = function() return u(3, 5, 4), u(2, 3, 2, 3) end,   -- unbatched, rectangular kernel
    fn = function(x, w) return fnn.conv2d(x, w, nil, {stride = {1, 2}, padding = {1, 0}}) end},
   {op = 'max_pool2d', inputs = function() return distinct{2, 2, 4, 6} end,
    fn = function(x) return fnn.max_pool2d(x, 2) end},
   {op = 'max_pool2d', inputs = function() return distinct{1, 2, 5, 6} end,
    fn = function(x) return fnn.max_pool2d(x, 3, {stride = 2, padding = 1, ceil_mode = true}) end},
   {op = 'avg_pool2d', inputs = function() return u(2, 2, 4, 6) end,
    fn = function(x) return fnn.avg_pool2d(x, 2) end},
   {op = 'avg_pool2d', inputs = function() return u(1, 2, 5, 6) end,
    fn = function(x) return fnn.avg_pool2d(x, 3, {stride = 2, padding = 1, ceil_mode = true, count_include_pad = false}) end},
   {op = 'avg_pool2d', inputs = function() return u(1, 2, 6, 5) end,
    fn = function(x) return fnn.avg_pool2d(x:transpose(3, 4), {3, 2}, {stride = {2, 1}, padding = 1}) end},
}
