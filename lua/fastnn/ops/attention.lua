-- fastnn.ops.attention: bindings for core/ops/attention.c.
--   fnn.attention(q, k, v, {causal = false, key_padding_mask = nil, scale = 1/sqrt(D)})
--       fused scaled-dot-product attention: q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv] -> [B,H,Tq,Dv],
--       softmax(scale q k^T) v per batch and head. causal: query i sees key j when
--       j <= i + Tk - Tq (so a step of new queries after a cached prefix sees the whole prefix);
--       key_padding_mask [B,Tk] (a tensor, float32 or int64) is nonzero (1) where a key is padding.
--       A query that sees no key gets zeros. One graph node; no mask tensor is made.
--       Also fnn.scaled_dot_product_attention and q:attention(k, v, opts).
--   fnn.attention_cache_append(k_cache, v_cache, k, v, pos)
--       writes k [B,H,t,D] and v [B,H,t,Dv] in place into positions pos .. pos+t-1 (1-based) of dim 3
--       of buffers [B,H,cap,D] / [B,H,cap,Dv] that the caller made for this (fnn.zeros) and shares
--       with nobody. What nn.StackCache uses; returns nothing.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, is_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local M = {}

-- raised at the user's line: 1 here, 2 the binding, 3 its caller
local check_tensor = fnn_tensor.check_tensor
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped

local fnn_attention = C.fnn_attention
local sqrt = math.sqrt

local ATTENTION_OPTS = require('fastnn.options').declare('fnn.attention', {
   {'causal', 'boolean', false, 'position i attends to positions <= i only'},
   {'key_padding_mask', 'tensor', nil, '[N, Tk]: nonzero marks a key position that is ignored'},
   {'scale', 'number', nil, 'the factor of the scores', default_doc = '1/sqrt(head dim)'},
})
function M.attention(q, k, v, opts, extra)
   if extra ~= nil then too_many('attention', 5, extra, 'q, k, v, opts') end
   check_tensor('attention', q, 'q')
   check_tensor('attention', k, 'k')
   check_tensor('attention', v, 'v')
   local causal, mask, scale = 0, nil, nil
   if opts ~= nil then
      if type(opts) ~= 'table' then
         error(('attention: options must be a table like {causal = true}, got a %s'):format(type(opts)), 2)
      end
      ATTENTION_OPTS:check(opts, 2)
      if opts.causal then causal = 1 end
      mask, scale = opts.key_padding_mask, opts.scale
      if mask ~= nil then check_tensor('attention', mask, 'key_padding_mask') end
      if scale ~= nil and type(scale) ~= 'number' then
         error(('attention: scale is a %s, expected a number'):format(type(scale)), 2)
      end
   end
   if scale == nil then
      local d = q.ndim == 4 and tonumber(q.shape_[3]) or 1
      scale = d > 0 and 1 / sqrt(d) or 1
   end
   local out = new()
   if fnn_attention(out, q, k, v, mask, causal, scale) ~= 0 then fail() end
   return done(out)
end
M.scaled_dot_product_attention = M.attention
Tensor.attention = M.attention

local fnn_append = C.fnn_attention_cache_append
function M.attention_cache_append(k_cache, v_cache, k, v, pos, extra)
   if extra ~= nil then too_many('attention_cache_append', 6, extra, 'k_cache, v_cache, k, v, pos') end
   check_tensor('attention_cache_append', k_cache, 'k_cache')
   check_tensor('attention_cache_append', v_cache, 'v_cache')
   check_tensor('attention_cache_append', k, 'k')
   check_tensor('attention_cache_append', v, 'v')
   if type(pos) ~= 'number' or pos ~= math.floor(pos) then
      error(('attention_cache_append: position is %s, expected an integer'):format(show_value(pos)), 2)
   end
   if fnn_append(k_cache, v_cache, k, v, pos - 1) ~= 0 then fail() end
end

return M
