-- Gradcheck cases for core/ops/norm.c. layer_norm: with weight and bias, over two trailing dims,
-- without affine tensors, on a transposed (non-contiguous) input. batch_norm in training mode
-- (batch statistics) and eval mode (fixed running stats, captured, not differentiated) on both
-- layouts the kernel has: narrow ([N, C] and [N, C, L] with L < 32, by blocks of rows) and wide
-- (planes of 32 or more, by channel). group_norm with several groups, one group per channel
-- (instance norm), no affine, non-contiguous. rms_norm with and without weight. The CUDA parity
-- runs every case too; the larger ones cross cuda/norm.cu's and batch_norm.cu's modes: rows longer
-- than a block of 256 threads, and channels of 128 or more elements (a block each, not a thread).
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end
local function bn_train(x, w, b) return (fnn.batch_norm(x, nil, nil, w, b, {training = true})) end

-- eval-mode running stats: constants of the function, not inputs (PyTorch gives them no gradient),
-- taken to x's device (the CUDA parity runs these cases there too)
local rm3, rv3 = fnn.tensor{0.3, -0.5, 1.2}, fnn.tensor{0.8, 1.5, 0.4}
local rm2, rv2 = fnn.tensor{-0.2, 0.7}, fnn.tensor{2.0, 0.6}
local function bn_eval(x, rm, rv, w, b, opts)
   return fnn.batch_norm(x, rm:to(x:device()), rv:to(x:device()), w, b, opts)
end

return {
   {op = 'layer_norm', inputs = function() return u(3, 5), u(5), u(5) end,
    fn = function(x, w, b) return fnn.layer_norm(x, w, b) end},
   {op = 'layer_norm', inputs = function() return u(2, 2, 3), u(2, 3), u(2, 3) end,
    fn = function(x, w, b) return fnn.layer_norm(x, w, b) end},
   {op = 'layer_norm', inputs = function() return u(4, 3) end,
    fn = function(x) return fnn.layer_norm(x:t(), nil, nil, {eps = 1e-3}) end},
   {op = 'layer_norm', inputs = function() return u(3, 4), u(4) end,
    fn = function(x, b) return fnn.layer_norm(x, nil, b) end},
   {op = 'layer_norm', inputs = function() return u(2, 300), u(300), u(300) end,
    fn = function(x, w, b) return fnn.layer_norm(x, w, b) end},

   -- training, narrow: [N, C], then [N, C, L]
   {op = 'batch_norm', inputs = function() return u(6, 3), u(3), u(3) end, fn = bn_train},
   {op = 'batch_norm', inputs = function() return u(3, 2, 4), u(2), u(2) end, fn = bn_train},
   -- training, wide: planes of 36; without affine; non-contiguous input
   {op = 'batch_norm', inputs = function() return u(2, 2, 6, 6), u(2), u(2) end, fn = bn_train},
   {op = 'batch_norm', inputs = function() return u(2, 3, 1, 40) end, fn = function(x) return bn_train(x) end},
   {op = 'batch_norm', inputs = function() return u(2, 3, 5), u(3) end,
    fn = function(x, w) return bn_train(x:transpose(1, 3), w) end},   -- [5, 3, 2]
   -- channels of 140 elements: a block each on the GPU
   {op = 'batch_norm', inputs = function() return u(2, 3, 70), u(3), u(3) end, fn = bn_train},
   -- eval: running stats fixed
   {op = 'batch_norm', inputs = function() return u(4, 3), u(3), u(3) end,
    fn = function(x, w, b) return bn_eval(x, rm3, rv3, w, b) end},
   {op = 'batch_norm', inputs = function() return u(2, 2, 6, 6), u(2), u(2) end,
    fn = function(x, w, b) return bn_eval(x, rm2, rv2, w, b, {eps = 1e-3}) end},
   {op = 'batch_norm', inputs = function() return u(2, 3, 4) end,
    fn = function(x) return bn_eval(x, rm3, rv3) end},

   {op = 'group_norm', inputs = function() return u(2, 4, 3), u(4), u(4) end,
    fn = function(x, w, b) return fnn.group_norm(x, 2, w, b) end},
   {op = 'group_norm', inputs = function() return u(2, 6, 2, 3), u(6), u(6) end,
    fn = function(x, w, b) return fnn.group_norm(x, 3, w, b) end},
   {op = 'group_norm', inputs = function() return u(2, 3, 5) end,
    fn = function(x) return fnn.instance_norm(x) end},
   {op = 'group_norm', inputs = function() return u(2, 4, 80), u(4), u(4) end,   -- rows of 160
    fn = function(x, w, b) return fnn.group_norm(x, 2, w, b) end},
   {op = 'group_norm', inputs = function() return u(2, 5, 4), u(4) end,
    fn = function(x, b) return fnn.group_norm(x:transpose(2, 3), 2, nil, b, {eps = 1e-3}) end},   -- [2, 4, 5]

   {op = 'rms_norm', inputs = function() return u(3, 5), u(5) end,
    fn = function(x, w) return fnn.rms_norm(x, w) end},
   {op = 'rms_norm', inputs = function() return u(2, 2, 3), u(2, 3) end,
    fn = function(x, w) return fnn.rms_norm(x, w) end},
   {op = 'rms_norm', inputs = function() return u(2, 300), u(300) end,
    fn = function(x, w) return fnn.rms_norm(x, w) end},
   {op = 'rms_norm', inputs = function() return u(4, 3) end,
    fn = function(x) return fnn.rms_norm(x:t(), nil, {eps = 1e-3}) end},
}
