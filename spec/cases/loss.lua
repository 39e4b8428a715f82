-- Gradcheck cases for core/ops/loss.c. Class ids, weights and pos_weight are fixed inside fn
-- (not differentiable: a nudged id is not an id). Probabilities stay inside (0.1, 0.9), away
-- from the clamps.
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end
local function prob(...) return fnn.rand(...) * 0.8 + 0.1 end

return {
   {op = 'cross_entropy', inputs = function() return u(4, 5) end,
    fn = function(logits) return fnn.cross_entropy(logits, {2, 5, 1, 2}) end},
   {op = 'cross_entropy', inputs = function() return u(5, 3) end,   -- transposed logits
    fn = function(x) return fnn.cross_entropy(x:t(), fnn.tensor{3, 1, 2}) end},
   {op = 'cross_entropy', inputs = function() return u(4, 5) end,   -- weights, smoothing, an ignored row
    fn = function(x)
       return fnn.cross_entropy(x, fnn.long{2, -100, 1, 5}, {weight = {0.5, 2, 1, 1.5, 3}, label_smoothing = 0.2})
    end},
   {op = 'cross_entropy', inputs = function() return u(2, 3, 2, 2) end,   -- [N, C, d1, d2], per site
    fn = function(x)
       return fnn.cross_entropy(x, fnn.long{{{1, 3}, {2, 2}}, {{3, 1}, {1, 0}}},
                                {ignore_index = 0, reduction = 'none', label_smoothing = 0.1})
    end},
   {op = 'cross_entropy', inputs = function() return u(3, 4) end,   -- sum, smoothing with weights
    fn = function(x) return fnn.cross_entropy(x, {4, 1, 3}, {reduction = 'sum', weight = {1, 2, 3, 4},
                                                             label_smoothing = 0.3}) end},
   {op = 'cross_entropy', inputs = function() return u(3, 20) end,   -- long rows: the vectorized kernel
    fn = function(x) return fnn.cross_entropy(x, {20, 1, 7}, {label_smoothing = 0.1, reduction = 'none'}) end},
   {op = 'cross_entropy', inputs = function() return u(6) end,   -- unbatched [C]
    fn = function(x) return fnn.cross_entropy(x, 4) end},
   {op = 'nll_loss', inputs = function() return u(4, 3) end,
    fn = function(x) return fnn.nll_loss(x, {3, 1, 2, 2}, {weight = {1, 0.5, 2}}) end},
   {op = 'nll_loss', inputs = function() return u(2, 3, 4) end,   -- [N, C, d], per site, one ignored
    fn = function(x) return fnn.nll_loss(x, fnn.long{{1, 2, 3, 7}, {3, 3, 1, 2}}, {ignore_index = 7,
                                                                                  reduction = 'none'}) end},
   {op = 'binary_cross_entropy', inputs = function() return prob(3, 4), prob(3, 4) end,
    fn = function(p, t) return fnn.binary_cross_entropy(p, t) end},
   {op = 'binary_cross_entropy', inputs = function() return prob(4, 3), prob(3, 4) end,   -- weight [4] broadcast
    fn = function(p, t) return fnn.binary_cross_entropy(p:t(), t, {weight = {1, 2, 0.5, 3}, reduction = 'none'}) end},
   {op = 'bce_with_logits', inputs = function() return u(3, 4), prob(3, 4) end,
    fn = function(x, t) return fnn.bce_with_logits(x, t) end},
   {op = 'bce_with_logits', inputs = function() return u(4, 3), prob(3, 4) end,
    fn = function(x, t)
       return fnn.bce_with_logits(x:t(), t, {weight = fnn.tensor{{2}, {1}, {0.5}}, pos_weight = {3, 1, 0.5, 2},
                                             reduction = 'sum'})
    end},
   {op = 'bce_with_logits', inputs = function() return u(2, 3), prob(2, 3) end,
    fn = function(x, t) return fnn.bce_with_logits(x, t, {pos_weight = 2.5, reduction = 'none'}) end},
   {op = 'mse_loss', inputs = function() return u(3, 4), u(3, 4) end,
    fn = function(p, t) return fnn.mse_loss(p, t) end},
   {op = 'mse_loss', inputs = function() return u(4, 3), u(3, 4) end,
    fn = function(p, t) return fnn.mse_loss(p:t(), t) end},
}
