-- nn.MultiheadAttention(E, heads, {dropout = 0, bias = true}): multi-head scaled-dot-product
-- attention, batch first (PyTorch's nn.MultiheadAttention with batch_first = true).
--   forward(q, k, v, {causal, key_padding_mask}) -> [N, Tq, E]     q [N, Tq, E], k and v [N, Tk, E]
--   forward(x, opts)                               self-attention: forward(x, x, x, opts)
-- causal: query i sees key j when j <= i + Tk - Tq; key_padding_mask [N, Tk] is 1 (nonzero) where a
-- key is padding. A query that sees no key gets zeros. Only the output is returned (no weights).
-- Parameters in PyTorch's layout and init: in_proj_weight [3E, E] (rows q; k; v, xavier uniform),
-- in_proj_bias [3E] (zeros), out_proj.weight [E, E] (nn.Linear's init), out_proj.bias [E] (zeros).
-- Scores are scaled by 1/sqrt(E/heads). The attention itself is the fused fnn.attention (one node,
-- no mask tensor); with dropout > 0 in training mode the weights are composed from matmul, softmax
-- and dropout instead, since the fused op has no dropout.
--   forward_cached(x, kv, pos): self-attention of x [N, t, E] at positions pos .. pos+t-1 over the
--   keys and values cached in kv ({k = [N,H,cap,D], v = ...}, nn.StackCache's per-layer buffers)
--   at 1 .. pos-1 and x's own (causal); x's keys and values are appended to kv first.
local fnn_tensor = require 'fastnn.tensor'
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped
local nn = require 'fastnn.nn'
local init = require 'fastnn.initializers'
local C = fnn_tensor.C
local new, done, fail, istype, shape_str = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail,
   fnn_tensor.is_tensor, fnn_tensor.shape_str
local fnn_linear, fnn_attention, fnn_append = C.fnn_linear, C.fnn_attention, C.fnn_attention_cache_append
local Param = nn.Param
local sqrt, huge = math.sqrt, math.huge

local MHA = nn.Module:extend('MultiheadAttention')
local options = require 'fastnn.options'
local OPTS = options.declare('nn.MultiheadAttention', {
   {'dropout', 'number', 0, 'dropout on the attention weights (training only)', min = 0, max = 1, max_open = true},
   {'bias', 'boolean', true, 'in_proj_bias and out_proj.bias'},
})
local FORWARD_OPTS = options.declare('nn.MultiheadAttention:forward', {
   {'causal', 'boolean', false, 'each position attends to itself and earlier ones only'},
   {'key_padding_mask', 'tensor|table', nil, '[N, S]: 1 (or true) where a key position is padding'},
})

local function positive_int(v) return type(v) == 'number' and v >= 1 and v == math.floor(v) end

function MHA:__init(E, heads, opts)
   if not positive_int(E) then
      error(('nn.MultiheadAttention: embed_dim is %s, expected a positive integer'):format(options.describe(E)), 3)
   end
   if not positive_int(heads) then
      error(('nn.MultiheadAttention: num_heads is %s, expected a positive integer'):format(options.describe(heads)), 3)
   end
   if E % heads ~= 0 then
      error(('nn.MultiheadAttention: embed_dim %d is not divisible by num_heads %d'):format(E, heads), 3)
   end
   opts = OPTS:check(opts, 3)
   local p, bias = opts.dropout, opts.bias
   self.embed_dim, self.num_heads, self.head_dim, self.dropout_p = E, heads, E / heads, p
   self.scale = 1 / sqrt(E / heads)
   self.in_proj_weight = Param(init.xavier_uniform({3 * E, E}))
   if bias then self.in_proj_bias = Param(fnn_tensor.zeros(3 * E)) end
   self.out_proj = nn.Linear(E, E, {bias = bias})
   if bias then self.out_proj.bias:set(fnn_tensor.zeros(E)) end
   if p > 0 then rawset(self, '_drop', nn.Dropout(p)) end   -- not a child: it follows self.training
end

local function linear(x, w, b)
   local out = new()
   if fnn_linear(out, x, w, b) ~= 0 then fail() end
   return done(out)
end

-- [N, T, E] -> [N, H, T, D] (a view)
local function split_heads(t, N, T, H, D) return t:reshape(N, T, H, D):transpose(2, 3) end

-- errors at the caller of forward: 1 here, 2 forward, 3 its caller
local function check_input(self, what, t, N)
   if not istype(t) then
      error(('%s: %s is a %s, expected a tensor'):format(self:short_str(), what, type(t)), 3)
   end
   if t.ndim ~= 3 or tonumber(t.shape_[2]) ~= self.embed_dim or (N and tonumber(t.shape_[0]) ~= N) then
      error(('%s: %s %s does not match [N, T, %d]%s'):format(self:short_str(), what, shape_str(t), self.embed_dim,
            N and (' with N = ' .. N) or ''), 3)
   end
end

local function check_mask(self, mask, N, Tk)
   if mask == nil then return end
   if not istype(mask) then
      error(('%s: key_padding_mask is a %s, expected a tensor'):format(self:short_str(), type(mask)), 3)
   end
   if mask.ndim ~= 2 or tonumber(mask.shape_[0]) ~= N or tonumber(mask.shape_[1]) ~= Tk then
      error(('%s: key_padding_mask %s does not match the keys (expected [%d,%d])'):format(
            self:short_str(), shape_str(mask), N, Tk), 3)
   end
end

-- the projections of q, k, v as [N, H, T, D] views (one GEMM when they are one tensor)
function MHA:_project(q, k, v, N, Tq, Tk)
   local E, H, D = self.embed_dim, self.num_heads, self.head_dim
   local W = self.in_proj_weight:tensor()
   local b = self.in_proj_bias and self.in_proj_bias:tensor() or nil
   local qp, kp, vp
   if rawequal(q, k) and rawequal(k, v) then
      local qkv = linear(q, W, b)
      qp, kp, vp = qkv:narrow(3, 1, E), qkv:narrow(3, E + 1, E), qkv:narrow(3, 2 * E + 1, E)
   else
      qp = linear(q, W:narrow(1, 1, E), b and b:narrow(1, 1, E))
      if rawequal(k, v) then
         local kv = linear(k, W:narrow(1, E + 1, 2 * E), b and b:narrow(1, E + 1, 2 * E))
         kp, vp = kv:narrow(3, 1, E), kv:narrow(3, E + 1, E)
      else
         kp = linear(k, W:narrow(1, E + 1, E), b and b:narrow(1, E + 1, E))
         vp = linear(v, W:narrow(1, 2 * E + 1, E), b and b:narrow(1, 2 * E + 1, E))
      end
   end
   return split_heads(qp, N, Tq, H, D), split_heads(kp, N, Tk, H, D), split_heads(vp, N, Tk, H, D)
end

-- softmax(scale q k^T + masks) v composed from ops, with dropout on the weights (training only)
function MHA:_composed(qh, kh, vh, causal, mask, N, Tq, Tk)
   local s = qh:matmul(kh:transpose(3, 4)) * self.scale             -- [N, H, Tq, Tk]
   if causal then s = s:masked_fill(fnn_tensor.ones(Tq, Tk):triu(Tk - Tq + 1), -huge) end
   if mask ~= nil then s = s:masked_fill(mask:float():ne(0):float():reshape(N, 1, 1, Tk), -huge) end
   local w = s:softmax(-1)
   if causal and Tq > Tk or mask ~= nil then w = w:masked_fill(w:ne(w), 0) end   -- rows that see no key: zeros, as fused
   local drop = rawget(self, '_drop')
   rawset(drop, 'training', true)
   return drop:forward(w):matmul(vh)
end

-- heads [N, H, Tq, Dv] -> out_proj of [N, Tq, E]
function MHA:_merge(o, N, Tq)
   return self.out_proj:forward(o:transpose(2, 3):reshape(N, Tq, self.embed_dim))
end

function MHA:forward(q, k, v, opts)
   if not istype(k) then   -- forward(x, opts): self-attention
      if k ~= nil and type(k) ~= 'table' then
         error(('%s: expected forward(q, k, v, opts) or forward(x, opts), got a %s as argument 2'):format(
               self:short_str(), type(k)), 2)
      end
      opts, k, v = k, q, q
   end
   check_input(self, 'query', q)
   local N = tonumber(q.shape_[0])
   check_input(self, 'key', k, N)
   check_input(self, 'value', v, N)
   local Tq, Tk = tonumber(q.shape_[1]), tonumber(k.shape_[1])
   if tonumber(v.shape_[1]) ~= Tk then
      error(('%s: key %s and value %s have different lengths'):format(self:short_str(), shape_str(k), shape_str(v)), 2)
   end
   if opts ~= nil then opts = FORWARD_OPTS:check(opts, 2) end   -- none given: nothing to allocate
   local causal = opts ~= nil and opts.causal and true or false
   local mask = opts ~= nil and opts.key_padding_mask or nil
   check_mask(self, mask, N, Tk)
   local qh, kh, vh = self:_project(q, k, v, N, Tq, Tk)
   local o
   if self.training and self.dropout_p > 0 then
      o = self:_composed(qh, kh, vh, causal, mask, N, Tq, Tk)
   else
      o = new()
      if fnn_attention(o, qh, kh, vh, mask, causal and 1 or 0, self.scale) ~= 0 then fail() end
      o = done(o)
   end
   return self:_merge(o, N, Tq)
end

-- called per token: the check is one nil test
function MHA:forward_cached(x, kv, pos, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':forward_cached', 4, extra, 'x, kv, pos') end
   check_input(self, 'input', x)
   local N, t = tonumber(x.shape_[0]), tonumber(x.shape_[1])
   local qh, kh, vh = self:_project(x, x, x, N, t, t)
   if fnn_append(kv.k, kv.v, kh, vh, pos - 1) ~= 0 then fail() end
   local len = pos - 1 + t
   local o = new()
   if fnn_attention(o, qh, kv.k:narrow(3, 1, len), kv.v:narrow(3, 1, len), nil, 1, self.scale) ~= 0 then fail() end
   return self:_merge(done(o), N, t)
end

function MHA:short_str()
   local extra = ''
   if self.dropout_p > 0 then extra = (', dropout=%g'):format(self.dropout_p) end
   if not self.in_proj_bias then extra = extra .. ', no bias' end
   return ('nn.MultiheadAttention(E=%d, heads=%d%s)'):format(self.embed_dim, self.num_heads, extra)
end

return MHA
