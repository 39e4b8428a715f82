-- Gradcheck cases for core/ops/attention.c: no mask, causal (square and with a cached prefix,
-- Tq < Tk), a key padding mask alone and with causal, a value width other than the key width,
-- inputs read through strides (the [B,T,H,D] -> [B,H,T,D] transpose of a projection), and sizes
-- with more than two queries (the blocked kernel; one or two run as plain loops).
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end
local function small(...) return fnn.rand(...) - 0.5 end

-- padding masks: constants of the function, not inputs (moved to the inputs' device, for the CUDA
-- parity run of these cases)
local pad24 = fnn.tensor{{0, 0, 1, 0}, {0, 1, 1, 0}}
local pad15 = fnn.tensor{{0, 1, 0, 0, 1}}:long()

return {
   {op = 'attention', inputs = function() return u(1, 2, 3, 4), u(1, 2, 5, 4), u(1, 2, 5, 3) end,
    fn = function(q, k, v) return fnn.attention(q, k, v) end},
   {op = 'attention', inputs = function() return u(2, 1, 4, 3), u(2, 1, 4, 3), u(2, 1, 4, 3) end,
    fn = function(q, k, v) return fnn.attention(q, k, v, {causal = true}) end},
   {op = 'attention', inputs = function() return u(1, 2, 2, 3), u(1, 2, 5, 3), u(1, 2, 5, 3) end,
    fn = function(q, k, v) return fnn.attention(q, k, v, {causal = true}) end},
   {op = 'attention', inputs = function() return u(2, 2, 3, 4), u(2, 2, 4, 4), u(2, 2, 4, 2) end,
    fn = function(q, k, v) return fnn.attention(q, k, v, {key_padding_mask = pad24:to(q:device())}) end},
   {op = 'attention', inputs = function() return u(1, 2, 5, 3), u(1, 2, 5, 3), u(1, 2, 5, 3) end,
    fn = function(q, k, v)
       return fnn.attention(q, k, v, {causal = true, key_padding_mask = pad15:to(q:device()), scale = 0.3})
    end},
   -- strided inputs: [B,T,H,D] transposed to [B,H,T,D]
   {op = 'attention', inputs = function() return u(1, 3, 2, 4), u(1, 4, 2, 4), u(1, 4, 2, 4) end,
    fn = function(q, k, v)
       return fnn.attention(q:transpose(2, 3), k:transpose(2, 3), v:transpose(2, 3), {causal = true})
    end},
   -- two keys: the backward's plain loops under the forward's blocked kernel
   {op = 'attention', inputs = function() return u(1, 2, 3, 2), u(1, 2, 2, 2), u(1, 2, 2, 3) end,
    fn = function(q, k, v) return fnn.attention(q, k, v) end},
   -- the register-blocked kernel's full 4 x 16 blocks
   {op = 'attention', inputs = function() return small(1, 1, 16, 16), small(1, 1, 16, 16), small(1, 1, 16, 16) end,
    fn = function(q, k, v) return fnn.attention(q, k, v, {causal = true}) end},
}
