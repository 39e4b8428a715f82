-- nn.TransformerEncoderLayer(width, heads, mlp_width, {dropout = 0.1, norm_first = false,
--     activation = 'relu', layer_norm_eps = 1e-5, bias = true}): PyTorch's encoder layer, batch first.
--   PyTorch's positional dropout works too: nn.TransformerEncoderLayer(16, 4, 32, 0.0[, opts]).
--   post-norm (default): x = norm1(x + dropout1(self_attn(x))); x = norm2(x + dropout2(ff(x)))
--   pre-norm (norm_first = true): x = x + dropout1(self_attn(norm1(x))); x = x + dropout2(ff(norm2(x)))
--   ff(x) = linear2(dropout(act(linear1(x)))), act 'relu' or 'gelu' (exact) or a function.
--   forward(x, {causal, key_padding_mask}) with x [N, T, width] -> [N, T, width]; the options go to
--   the self-attention (key_padding_mask [N, T], 1 where a position is padding).
--   forward_cached(x, kv, pos): the same layer as a causal decoder step over cached keys and values
--   (nn.MultiheadAttention:forward_cached); what nn.TransformerStack:forward_cached calls.
-- Children named as PyTorch's: self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2.
local fnn_tensor = require 'fastnn.tensor'
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped
local nn = require 'fastnn.nn'
local istype, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str

local Layer = nn.Module:extend('TransformerEncoderLayer')

local ACTIVATIONS = {
   relu = function(x) return x:relu() end,
   gelu = function(x) return x:gelu() end,
}

local options = require 'fastnn.options'
local DECLS = {}   -- who -> its declaration: the layers, stacks and decoders share these entries
local function declaration(who, extra)
   if DECLS[who] then return DECLS[who] end
   local e = {
      {'dropout', 'number', 0.1, 'dropout on the attention weights, the feed-forward and both residual branches',
       min = 0, max = 1, max_open = true},
      {'activation', 'string|function', 'relu', "the feed-forward activation: 'relu', 'gelu' (exact) or a function",
       values = {'relu', 'gelu'}},
      {'norm_first', 'boolean', false, 'pre-norm (LayerNorm before each block) instead of post-norm'},
      {'layer_norm_eps', 'number', 1e-5, 'eps of the LayerNorms', min = 0},
      {'bias', 'boolean', true, 'biases in the linear layers and the attention projections'},
   }
   for _, x in ipairs(extra or {}) do e[#e + 1] = x end
   DECLS[who] = options.declare(who, e)
   return DECLS[who]
end

-- Layer._declare(who [, extra]): a class's declaration, made when its file loads (docs/options.md)
Layer._declare = declaration
declaration('nn.TransformerEncoderLayer')

-- the shared checks of the encoder and decoder layers (errors at the user's line: level 4 is the
-- caller of Class(...), through here, __init and the class call); extra: the caller's own entries
function Layer._options(who, width, heads, mlp_width, opts, extra)
   for i, v in ipairs{width, heads, mlp_width} do
      if type(v) ~= 'number' or v < 1 or v ~= math.floor(v) then
         error(('%s: size %d is %s, expected a positive integer (%s(width, heads, mlp_width, opts))'):format(
               who, i, options.describe(v), who), 4)
      end
   end
   if width % heads ~= 0 then
      error(('%s: width %d is not divisible by heads %d'):format(who, width, heads), 4)
   end
   opts = declaration(who, extra):check(opts, 4)
   local act = opts.activation
   local act_fn = type(act) == 'function' and act or ACTIVATIONS[act]
   return {dropout = opts.dropout, activation = act, act_fn = act_fn, norm_first = opts.norm_first,
           eps = opts.layer_norm_eps, bias = opts.bias}
end

-- PyTorch's positional form (d_model, nhead, dim_feedforward, dropout [, opts]) -> the options table
function Layer._positional(who, dropout, opts)
   if type(dropout) == 'number' then
      if opts ~= nil and type(opts) ~= 'table' then
         error(('%s: options must be a table like {norm_first = true}, got %s'):format(who, options.describe(opts)), 4)
      end
      if opts ~= nil and opts.dropout ~= nil then
         error(('%s: dropout given twice (positionally and in the options)'):format(who), 4)
      end
      local o = {dropout = dropout}
      for k, v in pairs(opts or {}) do o[k] = v end
      return o
   end
   if opts ~= nil then
      error(('%s: a 5th argument %s after %s; expected (width, heads, mlp_width[, dropout][, opts])')
            :format(who, options.describe(opts), options.describe(dropout)), 4)
   end
   return dropout
end

-- the settings and the children, named and ordered as PyTorch's; a decoder layer (cross) also has
-- the cross-attention multihead_attn, norm3 and dropout3
function Layer._build(self, width, heads, mlp_width, o, cross)
   self.width, self.heads, self.mlp_width = width, heads, mlp_width
   self.dropout_p, self.activation, self.norm_first = o.dropout, o.activation, o.norm_first
   rawset(self, '_act', o.act_fn)
   self.self_attn = nn.MultiheadAttention(width, heads, {dropout = o.dropout, bias = o.bias})
   if cross then self.multihead_attn = nn.MultiheadAttention(width, heads, {dropout = o.dropout, bias = o.bias}) end
   self.linear1 = nn.Linear(width, mlp_width, {bias = o.bias})
   self.dropout = nn.Dropout(o.dropout)
   self.linear2 = nn.Linear(mlp_width, width, {bias = o.bias})
   self.norm1 = nn.LayerNorm(width, {eps = o.eps})
   self.norm2 = nn.LayerNorm(width, {eps = o.eps})
   if cross then self.norm3 = nn.LayerNorm(width, {eps = o.eps}) end
   self.dropout1 = nn.Dropout(o.dropout)
   self.dropout2 = nn.Dropout(o.dropout)
   if cross then self.dropout3 = nn.Dropout(o.dropout) end
end

function Layer:__init(width, heads, mlp_width, opts, more)
   opts = Layer._positional('nn.TransformerEncoderLayer', opts, more)
   local o = Layer._options('nn.TransformerEncoderLayer', width, heads, mlp_width, opts)
   Layer._build(self, width, heads, mlp_width, o)
end

-- x must be [N, T, width] (errors at the caller of forward: 1 here, 2 forward, 3 its caller)
function Layer:_check(x, what)
   if not istype(x) then
      error(('%s: %s is a %s, expected a tensor'):format(self:short_str(), what, type(x)), 3)
   end
   if x.ndim ~= 3 or tonumber(x.shape_[2]) ~= self.width then
      error(('%s: %s %s does not match [N, T, %d]'):format(self:short_str(), what, shape_str(x), self.width), 3)
   end
end

function Layer:_ff(x)
   return self.linear2:forward(self.dropout:forward(rawget(self, '_act')(self.linear1:forward(x))))
end

function Layer:forward(x, opts)
   self:_check(x, 'input')
   if self.norm_first then
      x = x + self.dropout1:forward(self.self_attn:forward(self.norm1:forward(x), opts))
      return x + self.dropout2:forward(self:_ff(self.norm2:forward(x)))
   end
   x = self.norm1:forward(x + self.dropout1:forward(self.self_attn:forward(x, opts)))
   return self.norm2:forward(x + self.dropout2:forward(self:_ff(x)))
end

function Layer:forward_cached(x, kv, pos, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':forward_cached', 4, extra, 'x, kv, pos') end
   if self.norm_first then
      x = x + self.dropout1:forward(self.self_attn:forward_cached(self.norm1:forward(x), kv, pos))
      return x + self.dropout2:forward(self:_ff(self.norm2:forward(x)))
   end
   x = self.norm1:forward(x + self.dropout1:forward(self.self_attn:forward_cached(x, kv, pos)))
   return self.norm2:forward(x + self.dropout2:forward(self:_ff(x)))
end

function Layer:short_str()
   return ('%s(width=%d, heads=%d, mlp_width=%d, dropout=%g, %s, %s)'):format(self:_full_name(), self.width,
      self.heads, self.mlp_width, self.dropout_p, type(self.activation) == 'string' and self.activation or 'custom',
      self.norm_first and 'pre-norm' or 'post-norm')
end

return Layer
