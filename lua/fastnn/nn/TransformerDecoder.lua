-- nn.TransformerDecoder(width, heads, mlp_width, layers, {dropout = 0.1, norm_first = false,
--     activation = 'relu', norm = norm_first}): `layers` nn.TransformerDecoderLayer in a row
-- (children layers.1 .. layers.n), each attending causally to the target and across to the
-- encoder's output, then an optional final LayerNorm `norm` (by default with pre-norm layers).
--   forward(x, memory, {causal = true, key_padding_mask, memory_key_padding_mask})
--   x [N, T, width], memory [N, S, width] -> [N, T, width]
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'

local Decoder = nn.Module:extend('TransformerDecoder')
local EXTRA = {{'norm', 'boolean', nil, 'a final LayerNorm', default_doc = 'norm_first'}}
nn.TransformerEncoderLayer._declare('nn.TransformerDecoder', EXTRA)

function Decoder:__init(width, heads, mlp_width, layers, opts)
   if type(layers) ~= 'number' or layers < 1 or layers ~= math.floor(layers) then
      error(('nn.TransformerDecoder: layers is %s, expected a positive integer'):format(show_value(layers)), 3)
   end
   local o = nn.TransformerEncoderLayer._options('nn.TransformerDecoder', width, heads, mlp_width, opts, EXTRA)
   opts = opts or {}
   self.width, self.heads, self.mlp_width, self.num_layers = width, heads, mlp_width, layers
   self.layers = nn.ModuleList()
   for _ = 1, layers do
      self.layers:add(nn.TransformerDecoderLayer(width, heads, mlp_width, {dropout = o.dropout,
         norm_first = o.norm_first, activation = o.activation, layer_norm_eps = o.eps, bias = o.bias}))
   end
   local norm = opts.norm
   if norm == nil then norm = o.norm_first end
   if norm then self.norm = nn.LayerNorm(width, {eps = o.eps}) end
end

function Decoder:forward(x, memory, opts)
   for _, pair in ipairs{{'input', x}, {'memory', memory}} do
      local t = pair[2]
      if not fnn_tensor.is_tensor(t) or t.ndim ~= 3 or tonumber(t.shape_[2]) ~= self.width then
         error(('%s: %s %s does not match [N, T, %d]'):format(self:short_str(), pair[1],
               fnn_tensor.is_tensor(t) and fnn_tensor.shape_str(t) or type(t), self.width), 2)
      end
   end
   for i = 1, self.num_layers do x = self.layers[i]:forward(x, memory, opts) end
   if self.norm then x = self.norm:forward(x) end
   return x
end

function Decoder:short_str()
   return ('nn.TransformerDecoder(width=%d, heads=%d, mlp_width=%d, layers=%d)'):format(self.width, self.heads,
      self.mlp_width, self.num_layers)
end

return Decoder
