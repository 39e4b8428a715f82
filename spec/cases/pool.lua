-- Gradcheck cases for core/ops/pool.c: max pooling on inputs with no near-ties (distinct values
-- 0.05 apart, so a perturbation of eps cannot move a window's maximum), plain and on overlapping
-- padded ceil_mode windows; avg pooling with and without counting the padding; adaptive pooling
-- with overlapping windows; nearest upsampling by a factor and to a size that skips inputs;
-- bilinear up and down, both align_corners settings; unbatched and non-contiguous inputs.
-- Each case is also the op's CUDA parity case (cuda_parity_spec): the default tolerance holds, the
-- kernels giving the CPU's bits but for avg's pairwise 2x2 sums; cuda_parity_pool_spec sweeps the
-- sizes across the launch edges, ties, nan and more non-contiguous inputs.
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end
-- n distinct values 0.05 apart in random order, shaped
local function distinct(shape)
   local n = 1
   for _, s in ipairs(shape) do n = n * s end
   return (fnn.randperm(n) * 0.05 - 0.05 * n / 2):reshape(shape)
end

return {
   -- max_pool2d on the 2x2 fast path and on overlapping padded ceil_mode windows
   {op = 'max_pool2d', inputs = function() return distinct{2, 2, 4, 6} end,
    fn = function(x) return fnn.max_pool2d(x, 2) end},
   {op = 'max_pool2d', inputs = function() return distinct{1, 2, 5, 6} end,
    fn = function(x) return fnn.max_pool2d(x, 3, {stride = 2, padding = 1, ceil_mode = true}) end},
   {op = 'avg_pool2d', inputs = function() return u(2, 2, 4, 6) end,
    fn = function(x) return fnn.avg_pool2d(x, 2) end},
   {op = 'avg_pool2d', inputs = function() return u(1, 2, 5, 6) end,
    fn = function(x) return fnn.avg_pool2d(x, 3, {stride = 2, padding = 1, ceil_mode = true, count_include_pad = false}) end},
   -- a non-contiguous input, rectangular windows
   {op = 'avg_pool2d', inputs = function() return u(1, 2, 6, 5) end,
    fn = function(x) return fnn.avg_pool2d(x:transpose(3, 4), {3, 2}, {stride = {2, 1}, padding = 1}) end},
   {op = 'max_pool1d', inputs = function() return distinct{2, 3, 8} end,
    fn = function(x) return fnn.max_pool1d(x, 2) end},
   {op = 'max_pool1d', inputs = function() return distinct{3, 9} end,   -- unbatched, overlapping windows
    fn = function(x) return fnn.max_pool1d(x, 3, {stride = 2, padding = 1, ceil_mode = true}) end},
   {op = 'max_pool3d', inputs = function() return distinct{1, 2, 4, 4, 6} end,
    fn = function(x) return fnn.max_pool3d(x, 2) end},
   {op = 'max_pool3d', inputs = function() return distinct{2, 5, 4, 5} end,
    fn = function(x) return fnn.max_pool3d(x, {3, 2, 3}, {stride = {2, 1, 2}, padding = {1, 0, 1}, ceil_mode = true}) end},
   {op = 'avg_pool1d', inputs = function() return u(2, 2, 7) end,
    fn = function(x) return fnn.avg_pool1d(x, 3, {stride = 2, padding = 1}) end},
   {op = 'avg_pool1d', inputs = function() return u(2, 8, 3) end,
    fn = function(x) return fnn.avg_pool1d(x:transpose(2, 3), 3, {stride = 2, padding = 1, ceil_mode = true,
                                                                   count_include_pad = false}) end},
   {op = 'avg_pool3d', inputs = function() return u(1, 2, 4, 5, 4) end,
    fn = function(x) return fnn.avg_pool3d(x, 2, {stride = 1}) end},
   {op = 'avg_pool3d', inputs = function() return u(2, 5, 4, 5) end,
    fn = function(x) return fnn.avg_pool3d(x, 3, {stride = 2, padding = 1, ceil_mode = true, count_include_pad = false}) end},
   {op = 'adaptive_avg_pool2d', inputs = function() return u(2, 2, 5, 7) end,
    fn = function(x) return fnn.adaptive_avg_pool2d(x, {3, 4}) end},
   {op = 'adaptive_avg_pool2d', inputs = function() return u(2, 3, 4) end,
    fn = function(x) return fnn.adaptive_avg_pool2d(x:transpose(2, 3), {6, 3}) end},
   {op = 'upsample_nearest', inputs = function() return u(2, 2, 3, 4) end,
    fn = function(x) return fnn.upsample(x, {scale_factor = {2, 3}}) end},
   {op = 'upsample_nearest', inputs = function() return u(1, 2, 7) end,
    fn = function(x) return fnn.upsample(x, {size = 4}) end},
   {op = 'upsample_nearest', inputs = function() return u(2, 2, 3, 2) end,
    fn = function(x) return fnn.upsample(x, {size = {3, 5, 3}}) end},
   {op = 'upsample_bilinear2d', inputs = function() return u(2, 2, 3, 4) end,
    fn = function(x) return fnn.upsample(x, {scale_factor = 2, mode = 'bilinear'}) end},
   {op = 'upsample_bilinear2d', inputs = function() return u(2, 5, 7) end,
    fn = function(x) return fnn.upsample(x, {size = {3, 9}, mode = 'bilinear', align_corners = true}) end},
   {op = 'upsample_bilinear2d', inputs = function() return u(1, 2, 7, 5) end,
    fn = function(x) return fnn.upsample(x:transpose(3, 4), {size = {2, 4}, mode = 'bilinear'}) end},
}
