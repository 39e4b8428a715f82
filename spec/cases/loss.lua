-- Cases for core/ops/loss.c, run by gradcheck_spec and by cuda_parity_spec on both sides. Class ids,
-- weights and pos_weight are fixed inside fn (not differentiable: a nudged id is not an id) and
-- follow the input onto its device (int64 ids: a GPU takes no float ids). Probabilities stay
-- inside (0.1, 0.9), away from the clamps. Float ids, bad ids and the larger size sweeps are in
-- loss_spec and cuda_parity_spec.
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end
local function prob(...) return fnn.rand(...) * 0.8 + 0.1 end
-- t on x's device
local function on(x, t) return t:to(x:device()) end
local function ids(x, v) return on(x, fnn.long(v)) end
local function vec(x, v) return on(x, fnn.tensor(v)) end

return {
   {op = 'cross_entropy', inputs = function() return u(4, 5) end,
    fn = function(logits) return fnn.cross_entropy(logits, ids(logits, {2, 5, 1, 2})) end},
   {op = 'cross_entropy', inputs = function() return u(5, 3) end,   -- transposed logits, read in place
    fn = function(x) return fnn.cross_entropy(x:t(), ids(x, {3, 1, 2})) end},
   {op = 'cross_entropy', inputs = function() return u(4, 5) end,   -- weights, smoothing, an ignored row
    fn = function(x)
       return fnn.cross_entropy(x, ids(x, {2, -100, 1, 5}), {weight = vec(x, {0.5, 2, 1, 1.5, 3}),
                                                             label_smoothing = 0.2})
    end},
   {op = 'cross_entropy', inputs = function() return u(2, 3, 2, 2) end,   -- [N, C, d1, d2], per site
    fn = function(x)
       return fnn.cross_entropy(x, ids(x, {{{1, 3}, {2, 2}}, {{3, 1}, {1, 0}}}),
                                {ignore_index = 0, reduction = 'none', label_smoothing = 0.1})
    end},
   {op = 'cross_entropy', inputs = function() return u(2, 4, 3):transpose(2, 3) end,   -- [2,3,4] copied first
    fn = function(x) return fnn.cross_entropy(x, ids(x, {{1, 2, 3, 1}, {3, 3, 2, 1}}), {reduction = 'sum'}) end},
   {op = 'cross_entropy', inputs = function() return u(3, 4) end,   -- sum, smoothing with weights
    fn = function(x) return fnn.cross_entropy(x, ids(x, {4, 1, 3}), {reduction = 'sum', weight = vec(x, {1, 2, 3, 4}),
                                                                     label_smoothing = 0.3}) end},
   {op = 'cross_entropy', inputs = function() return u(3, 20) end,   -- long rows: the vectorized kernel
    fn = function(x) return fnn.cross_entropy(x, ids(x, {20, 1, 7}), {label_smoothing = 0.1, reduction = 'none'}) end},
   {op = 'cross_entropy', inputs = function() return u(6) end,   -- unbatched [C]
    fn = function(x) return fnn.cross_entropy(x, on(x, fnn.long{4}:reshape{})) end},
   {op = 'cross_entropy', inputs = function() return u(300, 3) end,   -- sites past one block of threads
    fn = function(x)
       local v = {}
       for i = 1, 300 do v[i] = i % 7 == 0 and 2 or i % 3 + 1 end
       return fnn.cross_entropy(x, ids(x, v), {ignore_index = 2})
    end},
   {op = 'nll_loss', inputs = function() return u(4, 3) end,
    fn = function(x) return fnn.nll_loss(x, ids(x, {3, 1, 2, 2}), {weight = vec(x, {1, 0.5, 2})}) end},
   {op = 'nll_loss', inputs = function() return u(2, 3, 4) end,   -- [N, C, d], per site, one ignored
    fn = function(x) return fnn.nll_loss(x, ids(x, {{1, 2, 3, 7}, {3, 3, 1, 2}}), {ignore_index = 7,
                                                                                 reduction = 'none'}) end},
   {op = 'nll_loss', inputs = function() return u(3, 5) end,   -- transposed input, sum
    fn = function(x) return fnn.nll_loss(x:t(), ids(x, {1, 3, 2, 3, 1}), {reduction = 'sum'}) end},
   {op = 'binary_cross_entropy', inputs = function() return prob(3, 4), prob(3, 4) end,
    fn = function(p, t) return fnn.binary_cross_entropy(p, t) end},
   {op = 'binary_cross_entropy', inputs = function() return prob(4, 3), prob(3, 4) end,   -- weight [4] broadcast
    fn = function(p, t)
       return fnn.binary_cross_entropy(p:t(), t, {weight = vec(p, {1, 2, 0.5, 3}), reduction = 'none'})
    end},
   {op = 'binary_cross_entropy', inputs = function() return prob(300), prob(300) end,   -- past one block, sum
    fn = function(p, t) return fnn.binary_cross_entropy(p, t, {reduction = 'sum'}) end},
   {op = 'bce_with_logits', inputs = function() return u(3, 4), prob(3, 4) end,
    fn = function(x, t) return fnn.bce_with_logits(x, t) end},
   {op = 'bce_with_logits', inputs = function() return u(4, 3), prob(3, 4) end,
    fn = function(x, t)
       return fnn.bce_with_logits(x:t(), t, {weight = vec(x, {{2}, {1}, {0.5}}), pos_weight = vec(x, {3, 1, 0.5, 2}),
                                             reduction = 'sum'})
    end},
   {op = 'bce_with_logits', inputs = function() return u(2, 3), prob(2, 3) end,
    fn = function(x, t) return fnn.bce_with_logits(x, t, {pos_weight = on(x, fnn.tensor(2.5)), reduction = 'none'}) end},
   {op = 'mse_loss', inputs = function() return u(3, 4), u(3, 4) end,
    fn = function(p, t) return fnn.mse_loss(p, t) end},
   {op = 'mse_loss', inputs = function() return u(4, 3), u(3, 4) end,
    fn = function(p, t) return fnn.mse_loss(p:t(), t) end},
   {op = 'mse_loss', inputs = function() return u(300), u(300) end,   -- past one block
    fn = function(p, t) return fnn.mse_loss(p, t) end},
}
