-- nn.TransformerDecoderLayer(width, heads, mlp_width, {dropout = 0.1, norm_first = false,
--     activation = 'relu', layer_norm_eps = 1e-5, bias = true}): PyTorch's decoder layer, batch first:
-- causal self-attention, cross-attention over the encoder's output (memory), then the MLP.
--   post-norm: x = norm1(x + sa(x)); x = norm2(x + ca(x, memory)); x = norm3(x + ff(x))
--   pre-norm:  x = x + sa(norm1(x)); x = x + ca(norm2(x), memory); x = x + ff(norm3(x))
--   (each block followed by its dropout1/2/3; ff(x) = linear2(dropout(act(linear1(x)))))
--   forward(x, memory, {causal = true, key_padding_mask, memory_key_padding_mask}):
--   x [N, T, width], memory [N, S, width] -> [N, T, width]. The self-attention is causal unless
--   causal = false; key_padding_mask [N, T] (alias tgt_key_padding_mask) hides target positions,
--   memory_key_padding_mask [N, S] memory positions (1 = padding).
-- Children named as PyTorch's: self_attn, multihead_attn, linear1, dropout, linear2, norm1..3, dropout1..3.
local nn = require 'fastnn.nn'
local Enc = nn.TransformerEncoderLayer
Enc._declare('nn.TransformerDecoderLayer')

local Layer = nn.Module:extend('TransformerDecoderLayer')

function Layer:__init(width, heads, mlp_width, opts, more)
   opts = Enc._positional('nn.TransformerDecoderLayer', opts, more)
   Enc._build(self, width, heads, mlp_width, Enc._options('nn.TransformerDecoderLayer', width, heads, mlp_width, opts),
              true)
end

Layer._check = Enc._check
Layer._ff = Enc._ff

function Layer:forward(x, memory, opts)
   self:_check(x, 'input')
   self:_check(memory, 'memory')
   if opts ~= nil and type(opts) ~= 'table' then
      error(('%s: options must be a table like {causal = true}, got a %s'):format(self:short_str(), type(opts)), 2)
   end
   opts = opts or {}
   local sa = {causal = opts.causal ~= false, key_padding_mask = opts.key_padding_mask or opts.tgt_key_padding_mask}
   local ca = {key_padding_mask = opts.memory_key_padding_mask}
   if self.norm_first then
      x = x + self.dropout1:forward(self.self_attn:forward(self.norm1:forward(x), sa))
      local h = self.norm2:forward(x)
      x = x + self.dropout2:forward(self.multihead_attn:forward(h, memory, memory, ca))
      return x + self.dropout3:forward(self:_ff(self.norm3:forward(x)))
   end
   x = self.norm1:forward(x + self.dropout1:forward(self.self_attn:forward(x, sa)))
   x = self.norm2:forward(x + self.dropout2:forward(self.multihead_attn:forward(x, memory, memory, ca)))
   return self.norm3:forward(x + self.dropout3:forward(self:_ff(x)))
end

Layer.short_str = Enc.short_str

return Layer
