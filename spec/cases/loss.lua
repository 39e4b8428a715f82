-- Gradcheck cases for core/ops/loss.c. Class ids are fixed inside fn (they
-- are not differentiable: a nudged id is not an id).
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end

return {
   {op = 'cross_entropy', inputs = function() return u(4, 5) end,
    fn = function(logits) return fnn.cross_entropy(logits, {2, 5, 1, 2}) end},
   {op = 'cross_entropy', inputs = function() return u(5, 3) end,   -- transposed logits
    fn = function(x) return fnn.cross_entropy(x:t(), fnn.tensor{3, 1, 2}) end},
   {op = 'mse_loss', inputs = function() return u(3, 4), u(3, 4) end,
    fn = function(p, t) return fnn.mse_loss(p, t) end},
   {op = 'mse_loss', inputs = function() return u(4, 3), u(3, 4) end,
    fn = function(p, t) return fnn.mse_loss(p:t(), t) end},
}
