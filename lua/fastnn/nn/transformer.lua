-- The transformer stacks: nn.TransformerStack, nn.TransformerEncoder (the same stack with no
-- causal mask by default) and nn.TransformerDecoder, each a row of the layers in
-- TransformerEncoderLayer.lua / TransformerDecoderLayer.lua.

-- nn.TransformerStack(width, heads, mlp_width, layers, {dropout = 0.1, norm_first = false,
--     activation = 'relu', causal = false, norm = norm_first}): `layers` nn.TransformerEncoderLayer
-- in a row (children layers.1 .. layers.n), then a final LayerNorm `norm` when asked (by default
-- with pre-norm layers, whose output is not normalized otherwise).
--   forward(x, {causal, key_padding_mask}) x [N, T, width] -> [N, T, width]; causal defaults to
--   the stack's own setting.
-- nn.TransformerStack.causal(width, heads, mlp_width, layers, dropout = 0): a GPT-style decoder-only
-- stack (pre-norm, GELU, causal self-attention, final LayerNorm) that also decodes step by step:
--   local cache = stack:new_cache()            -- nn.StackCache ({capacity = n} preallocates n positions)
--   local y = stack:forward_cached(x, cache)    -- x [N, t, width]: the next t positions
--   cache:len()                                 -- positions cached so far
-- forward_cached gives what forward gives for the same positions of the whole sequence.
-- nn.TransformerEncoder is this class with causal = false.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped
local nn = require 'fastnn.nn'
local istype, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str

local M = {}

-- the stack's rows: `layers` of Layer in self.layers (children layers.1 .. layers.n), then the final
-- LayerNorm when opts.norm says so (by default with pre-norm layers, whose output is not normalized)
local function fill(self, Layer, width, heads, mlp_width, layers, o, opts)
   self.width, self.heads, self.mlp_width, self.num_layers = width, heads, mlp_width, layers
   self.layers = nn.ModuleList()
   for _ = 1, layers do
      self.layers:add(Layer(width, heads, mlp_width, {dropout = o.dropout, norm_first = o.norm_first,
         activation = o.activation, layer_norm_eps = o.eps, bias = o.bias}))
   end
   local norm = opts.norm
   if norm == nil then norm = o.norm_first end
   if norm then self.norm = nn.LayerNorm(width, {eps = o.eps}) end
end

local Stack = nn.Module:extend('TransformerStack')
M.TransformerStack = Stack
Stack._EXTRA = {
   {'causal', 'boolean', false, 'causal self-attention by default (forward can say otherwise)'},
   {'norm', 'boolean', nil, 'a final LayerNorm', default_doc = 'norm_first'},
}
nn.TransformerEncoderLayer._declare('nn.TransformerStack', Stack._EXTRA)

function Stack:__init(width, heads, mlp_width, layers, opts)
   if type(layers) ~= 'number' or layers < 1 or layers ~= math.floor(layers) then
      error(('%s: layers is %s, expected a positive integer (%s(width, heads, mlp_width, layers, opts))'):format(
            self:_full_name(), show_value(layers), self:_full_name()), 3)
   end
   local o = nn.TransformerEncoderLayer._options(self:_full_name(), width, heads, mlp_width, opts, Stack._EXTRA)
   opts = opts or {}
   self.causal = opts.causal and true or false
   fill(self, nn.TransformerEncoderLayer, width, heads, mlp_width, layers, o, opts)
end

function Stack.causal(width, heads, mlp_width, layers, dropout, extra)
   if extra ~= nil then too_many('nn.TransformerStack.causal', 6, extra, 'width, heads, mlp_width, layers, dropout') end
   return Stack(width, heads, mlp_width, layers, {dropout = dropout or 0, norm_first = true, activation = 'gelu',
                                                  causal = true})
end

-- x must be [N, T, width] (errors at the caller of forward)
local function check(self, x)
   if not istype(x) then
      error(('%s: input is a %s, expected a tensor'):format(self:short_str(), type(x)), 3)
   end
   if x.ndim ~= 3 or tonumber(x.shape_[2]) ~= self.width then
      error(('%s: input %s does not match [N, T, %d]'):format(self:short_str(), shape_str(x), self.width), 3)
   end
end

function Stack:forward(x, opts)
   check(self, x)
   if opts ~= nil and type(opts) ~= 'table' then
      error(('%s: options must be a table like {causal = true}, got a %s'):format(self:short_str(), type(opts)), 2)
   end
   local causal = self.causal
   if opts ~= nil and opts.causal ~= nil then causal = opts.causal and true or false end
   local lo = {causal = causal, key_padding_mask = opts and opts.key_padding_mask}
   for i = 1, self.num_layers do x = self.layers[i]:forward(x, lo) end
   if self.norm then x = self.norm:forward(x) end
   return x
end

function Stack:new_cache(opts, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':new_cache', 2, extra, 'opts') end
   if not self.causal then
      error(('%s: new_cache needs a causal stack (TransformerStack.causal)'):format(self:short_str()), 2)
   end
   return nn.StackCache(self.num_layers, self.heads, self.width / self.heads, opts)
end

function Stack:forward_cached(x, cache, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':forward_cached', 3, extra, 'x, cache') end
   check(self, x)
   if getmetatable(cache) ~= nn.StackCache then
      error(('%s: forward_cached needs a cache from new_cache(), got a %s'):format(self:short_str(), type(cache)), 2)
   end
   if cache.layers ~= self.num_layers or cache.heads ~= self.heads or cache.head_dim ~= self.width / self.heads then
      error(('%s: the cache was made for %d layers of %d heads of %d'):format(self:short_str(), cache.layers,
            cache.heads, cache.head_dim), 2)
   end
   local t = tonumber(x.shape_[1])
   cache:_reserve(tonumber(x.shape_[0]), t, x:device())
   local pos = cache.n + 1
   for i = 1, self.num_layers do x = self.layers[i]:forward_cached(x, cache.kv[i], pos) end
   cache.n = cache.n + t
   if self.norm then x = self.norm:forward(x) end
   return x
end

function Stack:short_str()
   return ('%s(width=%d, heads=%d, mlp_width=%d, layers=%d%s)'):format(self:_full_name(), self.width, self.heads,
      self.mlp_width, self.num_layers, self.causal and ', causal' or '')
end

-- ---------------------------------------------------------------------------
-- nn.TransformerEncoder(width, heads, mlp_width, layers, {dropout = 0.1, norm_first = false,
--     activation = 'relu', causal = false, norm = norm_first}): `layers` nn.TransformerEncoderLayer
-- in a row (layers.1 .. layers.n) and an optional final LayerNorm `norm`; forward(x, {causal,
-- key_padding_mask}) with x [N, T, width]. nn.TransformerStack with its default of no causal mask.
local Encoder = Stack:extend('TransformerEncoder')
nn.TransformerEncoderLayer._declare('nn.TransformerEncoder', Stack._EXTRA)
M.TransformerEncoder = Encoder

-- ---------------------------------------------------------------------------
-- nn.TransformerDecoder(width, heads, mlp_width, layers, {dropout = 0.1, norm_first = false,
--     activation = 'relu', norm = norm_first}): `layers` nn.TransformerDecoderLayer in a row
-- (children layers.1 .. layers.n), each attending causally to the target and across to the
-- encoder's output, then an optional final LayerNorm `norm` (by default with pre-norm layers).
--   forward(x, memory, {causal = true, key_padding_mask, memory_key_padding_mask})
--   x [N, T, width], memory [N, S, width] -> [N, T, width]

local Decoder = nn.Module:extend('TransformerDecoder')
M.TransformerDecoder = Decoder
local EXTRA = {{'norm', 'boolean', nil, 'a final LayerNorm', default_doc = 'norm_first'}}
nn.TransformerEncoderLayer._declare('nn.TransformerDecoder', EXTRA)

function Decoder:__init(width, heads, mlp_width, layers, opts)
   if type(layers) ~= 'number' or layers < 1 or layers ~= math.floor(layers) then
      error(('nn.TransformerDecoder: layers is %s, expected a positive integer'):format(show_value(layers)), 3)
   end
   local o = nn.TransformerEncoderLayer._options('nn.TransformerDecoder', width, heads, mlp_width, opts, EXTRA)
   fill(self, nn.TransformerDecoderLayer, width, heads, mlp_width, layers, o, opts or {})
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

return M
