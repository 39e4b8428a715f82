-- Gradcheck cases for core/ops/norm.c: with weight and bias, over two trailing dims,
-- without affine tensors, and on a transposed (non-contiguous) input.
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end

return {
   {op = 'layer_norm', inputs = function() return u(3, 5), u(5), u(5) end,
    fn = function(x, w, b) return fnn.layer_norm(x, w, b) end},
   {op = 'layer_norm', inputs = function() return u(2, 2, 3), u(2, 3), u(2, 3) end,
    fn = function(x, w, b) return fnn.layer_norm(x, w, b) end},
   {op = 'layer_norm', inputs = function() return u(4, 3) end,
    fn = function(x) return fnn.layer_norm(x:t(), nil, nil, {eps = 1e-3}) end},
   {op = 'layer_norm', inputs = function() return u(3, 4), u(4) end,
    fn = function(x, b) return fnn.layer_norm(x, nil, b) end},
}
