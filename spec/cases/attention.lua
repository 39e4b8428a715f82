-- Cases for core/ops/attention.c (format: spec/cases/elementwise.lua), each with a naive reference
-- (softmax(scale q k^T + masks) v, one query at a time over plain numbers): no mask, causal (square and with a cached prefix,
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

-- softmax(scale q k^T) v over q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv] by loops: query i sees key
-- j when (not causal or j <= i + Tk - Tq) and the key is not padding; a query that sees none gets 0
local N_ = require 'naive_nd'
local function attention_ref(q, k, v, opts)
   opts = opts or {}
   local gq, qs = N_.reader(q)
   local gk, ks = N_.reader(k)
   local gv, vs = N_.reader(v)
   local pad = opts.key_padding_mask and N_.reader(opts.key_padding_mask:float())
   local Tq, Tk, D, Dv = qs[3], ks[3], qs[4], vs[4]
   local scale = opts.scale or 1 / math.sqrt(D)
   return N_.build({qs[1], qs[2], Tq, Dv}, function(idx)
      local b, h, i, e = idx[1], idx[2], idx[3], idx[4]
      local s, m = {}, -math.huge
      for j = 1, Tk do
         if (not opts.causal or j <= i + Tk - Tq) and not (pad and pad{b, j} ~= 0) then
            local dot = 0
            for d = 1, D do dot = dot + gq{b, h, i, d} * gk{b, h, j, d} end
            s[j] = dot * scale
            m = math.max(m, s[j])
         end
      end
      local num, den = 0, 0
      for j = 1, Tk do
         if s[j] then
            local p = math.exp(s[j] - m)
            den = den + p
            num = num + p * gv{b, h, j, e}
         end
      end
      return den > 0 and num / den or 0
   end)
end
-- the [B,T,H,D] -> [B,H,T,D] view of the strided case
local function heads(t) return t:transpose(2, 3) end

return {
   {op = 'attention', inputs = function() return u(1, 2, 3, 4), u(1, 2, 5, 4), u(1, 2, 5, 3) end,
    fn = function(q, k, v) return fnn.attention(q, k, v) end,
    ref = function(q, k, v) return attention_ref(q, k, v) end},
   {op = 'attention', inputs = function() return u(2, 1, 4, 3), u(2, 1, 4, 3), u(2, 1, 4, 3) end,
    fn = function(q, k, v) return fnn.attention(q, k, v, {causal = true}) end,
    ref = function(q, k, v) return attention_ref(q, k, v, {causal = true}) end},
   {op = 'attention', inputs = function() return u(1, 2, 2, 3), u(1, 2, 5, 3), u(1, 2, 5, 3) end,
    fn = function(q, k, v) return fnn.attention(q, k, v, {causal = true}) end,
    ref = function(q, k, v) return attention_ref(q, k, v, {causal = true}) end},
   {op = 'attention', inputs = function() return u(2, 2, 3, 4), u(2, 2, 4, 4), u(2, 2, 4, 2) end,
    fn = function(q, k, v) return fnn.attention(q, k, v, {key_padding_mask = pad24:to(q:device())}) end,
    ref = function(q, k, v) return attention_ref(q, k, v, {key_padding_mask = pad24}) end},
   {op = 'attention', inputs = function() return u(1, 2, 5, 3), u(1, 2, 5, 3), u(1, 2, 5, 3) end,
    fn = function(q, k, v)
       return fnn.attention(q, k, v, {causal = true, key_padding_mask = pad15:to(q:device()), scale = 0.3})
    end,
    ref = function(q, k, v) return attention_ref(q, k, v, {causal = true, key_padding_mask = pad15, scale = 0.3}) end},
   -- strided inputs: [B,T,H,D] transposed to [B,H,T,D]
   {op = 'attention', inputs = function() return u(1, 3, 2, 4), u(1, 4, 2, 4), u(1, 4, 2, 4) end,
    fn = function(q, k, v)
       return fnn.attention(q:transpose(2, 3), k:transpose(2, 3), v:transpose(2, 3), {causal = true})
    end,
    ref = function(q, k, v) return attention_ref(heads(q), heads(k), heads(v), {causal = true}) end},
   -- two keys: the backward's plain loops under the forward's blocked kernel
   {op = 'attention', inputs = function() return u(1, 2, 3, 2), u(1, 2, 2, 2), u(1, 2, 2, 3) end,
    fn = function(q, k, v) return fnn.attention(q, k, v) end,
    ref = function(q, k, v) return attention_ref(q, k, v) end},
   -- the register-blocked kernel's full 4 x 16 blocks
   {op = 'attention', inputs = function() return small(1, 1, 16, 16), small(1, 1, 16, 16), small(1, 1, 16, 16) end,
    fn = function(q, k, v) return fnn.attention(q, k, v, {causal = true}) end,
    ref = function(q, k, v) return attention_ref(q, k, v, {causal = true}) end},
}
