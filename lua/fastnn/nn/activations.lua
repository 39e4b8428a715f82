-- The activation layers (x any shape -> same shape, no parameters) and nn.activation_fn:
--   Unary: one C op per call, its subclasses ReLU, Sigmoid, Tanh, SiLU, Swish, Mish, Softsign,
--   HardSigmoid and SELU naming theirs; Softmax and LogSoftmax (over one dim); Identity;
--   M.activation_fn(name) -> function(x), M.names: the activation names layers accept;
--   the activations with an option: ELU, GELU, LeakyReLU, Softplus; nn.Activation(name), the
--   Keras layer of any activation_fn name.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local Tensor = fnn_tensor.Tensor
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor

local M = {}

-- ---------------------------------------------------------------------------
-- Unary: a layer running the C unary op _cfn (fnn_relu, ...) of its class; _title names it in messages

local Unary = nn.Module:extend('Unary')

function Unary:forward(x)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(self._title, type(x)), 2) end
   local out = new()
   if self._cfn(out, x) ~= 0 then fail() end
   return done(out)
end

local function unary(name, cfn_name)
   local cls = Unary:extend(name)
   cls._title = name   -- a user's subclass keeps it in messages
   cls._cfn = fnn_tensor.C[cfn_name]
   M[name] = cls
   return cls
end

-- nn.ReLU(): elementwise relu as a layer; x any shape -> same shape.
local ReLU = unary('ReLU', 'fnn_relu')

-- nn.Sigmoid(): elementwise sigmoid as a layer; x any shape -> same shape.
local Sigmoid = unary('Sigmoid', 'fnn_sigmoid')

-- nn.Tanh(): elementwise tanh as a layer; x any shape -> same shape.
local Tanh = unary('Tanh', 'fnn_tanh')

-- nn.SiLU(): elementwise silu as a layer; x any shape -> same shape.
local SiLU = unary('SiLU', 'fnn_silu')

-- nn.Swish(): x * sigmoid(x), the same function as nn.SiLU (Keras' name); x any shape -> same shape.
local Swish = unary('Swish', 'fnn_silu')

-- nn.Mish(): x * tanh(softplus(x)); x any shape -> same shape.
local Mish = unary('Mish', 'fnn_mish')

-- nn.Softsign(): x / (1 + |x|); x any shape -> same shape.
local Softsign = unary('Softsign', 'fnn_softsign')

-- nn.HardSigmoid(): relu6(x + 3) / 6, PyTorch's Hardsigmoid (0 below -3, 1 above 3);
-- x any shape -> same shape.
local HardSigmoid = unary('HardSigmoid', 'fnn_hardsigmoid')

-- nn.SELU(): scale * elu(x, alpha) with PyTorch's fixed scale 1.0507... and alpha 1.6732...
-- (self-normalizing; pair it with AlphaDropout); x any shape -> same shape.
local SELU = unary('SELU', 'fnn_selu')

-- ---------------------------------------------------------------------------
-- Softmax and LogSoftmax: Tensor[_method](x, dim) of their class

local SoftmaxBase = nn.Module:extend('SoftmaxBase')

function SoftmaxBase:__init(opts)
   local name = self._title
   local dim = opts
   if type(opts) == 'table' then dim = self._OPTS:check(opts, 3).dim end
   if dim == nil then dim = -1 end
   if type(dim) ~= 'number' or dim ~= math.floor(dim) or dim == 0 then
      error(('nn.%s: dim is %s, expected a non-zero integer (1-based, negative from the end)'):format(
         name, show_value(dim)), 3)
   end
   self.dim = dim
end

function SoftmaxBase:forward(x)
   local name = self._title
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(name, type(x)), 2) end
   local d = self.dim
   if x.ndim > 0 and (d > x.ndim or d < -x.ndim) then
      error(('%s(dim=%d): input %s has no dim %d (dims are 1..%d or -%d..-1)'):format(
         name, d, fnn_tensor.shape_str(x), d, x.ndim, x.ndim), 2)
   end
   return (self._op(x, d))
end

function SoftmaxBase:__tostring() return ('nn.%s(dim=%d)'):format(self._title, self.dim) end

local function softmax_class(name, method)
   local cls = SoftmaxBase:extend(name)
   cls._title = name
   cls._op = Tensor[method]
   cls._OPTS = require('fastnn.options').declare('nn.' .. name, {
      {'dim', 'integer', -1, 'the dim it runs over (1-based; negative from the end)'},
   })
   M[name] = cls
   return cls
end

-- nn.Softmax(dim = -1) or nn.Softmax{dim = -1}: exp(x) / sum(exp(x)) along dim (1-based, negatives
-- from the end). x any shape -> same shape.
local Softmax = softmax_class('Softmax', 'softmax')

-- nn.LogSoftmax(dim = -1) or nn.LogSoftmax{dim = -1}: x - logsumexp(x) along dim (1-based,
-- negatives from the end). x any shape -> same shape.
local LogSoftmax = softmax_class('LogSoftmax', 'log_softmax')

-- ---------------------------------------------------------------------------
-- nn.Identity(): returns its input (a placeholder, e.g. a removed head).
local Identity = nn.Module:extend('Identity')
function Identity.forward(_, x) return x end
M.Identity = Identity

-- ---------------------------------------------------------------------------
-- nn.activation_fn(name[, level[, who]]) -> function(x): the activation named `name` ('relu', 'gelu',
-- 'softmax', 'linear', ...; nil is the identity), for layers that fold an activation into
-- themselves (nn.Dense(16, 'relu')). An unknown name raises an error listing the known ones, at
-- the caller's line (level as error()'s, counted from the caller: Dense:__init passes 3, 'nn.Dense').
-- activation names (Keras' spelling, plus PyTorch's where they differ) -> function(x)
local function method(m) return function(x) return Tensor[m](x) end end
local FNS = {
   linear = function(x) return x end,
   gelu_tanh = function(x) return x:gelu{approximate = 'tanh'} end,
   swish = method('silu'), hard_sigmoid = method('hardsigmoid'), hard_swish = method('hardswish'),
   softmax = function(x) return x:softmax(-1) end,
   log_softmax = function(x) return x:log_softmax(-1) end,
}
-- the names that are the tensor method's own
for _, m in ipairs{'relu', 'leaky_relu', 'elu', 'selu', 'celu', 'gelu', 'silu', 'mish', 'sigmoid', 'hardsigmoid',
                   'hardswish', 'tanh', 'softplus', 'softsign'} do
   FNS[m] = method(m)
end
local names = {}
for k in pairs(FNS) do names[#names + 1] = k end
table.sort(names)
M.names = names

-- fn(name[, level[, who]]): the activation called `name` as function(x). nil gives the identity
-- (Keras' activation = None), a function is returned as it is. An unknown name is an error naming
-- `who` (default 'activation') and listing the known names, raised as the caller's own
-- error(msg, level) would (1, the default: the caller's line; a constructor passes 3 to point at
-- its user's line)
function M.activation_fn(name, level, who)
   level, who = (level or 1) + 1, who or 'activation'
   if name == nil then return FNS.linear end
   if type(name) == 'function' then return name end
   if type(name) ~= 'string' then
      error(("%s: activation is a %s, expected a name such as 'relu'"):format(who, type(name)), level)
   end
   local f = FNS[name] or FNS[name:lower()]
   if not f then
      error(("%s: unknown activation '%s' (known: %s)"):format(who, name, table.concat(names, ', ')), level)
   end
   return f
end

local activation_fn = M.activation_fn   -- nn.Activation's

-- ---------------------------------------------------------------------------
-- The activations with one finite number, given bare or as {key = n}: ELU's alpha and LeakyReLU's
-- negative_slope. Each class names its number (key, default, options, C function) in `one`.
local OneNumber = nn.Module:extend('OneNumberActivation')

function OneNumber:__init(opts)
   local one = self.one
   local v = opts
   if type(opts) == 'table' then v = one.opts:check(opts, 3)[one.key] end   -- 3: the user's line
   if v == nil then v = one.default end
   if type(v) ~= 'number' or v ~= v or v == math.huge or v == -math.huge then
      error(('nn.%s: %s is %s (a %s), expected a finite number'):format(one.name, one.key, show_value(v), type(v)), 3)
   end
   self[one.key] = v
end

function OneNumber:forward(x)
   local one = self.one
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(one.name, type(x)), 2) end
   local out = new()
   if one.cfn(out, x, self[one.key]) ~= 0 then fail() end
   return done(out)
end

-- nn.ELU(alpha = 1) or nn.ELU{alpha = 1}: x > 0 ? x : alpha (e^x - 1). x any shape -> same shape.
local ELU = OneNumber:extend('ELU')
ELU.one = {name = 'ELU', key = 'alpha', default = 1, cfn = fnn_tensor.C.fnn_elu,
           opts = require('fastnn.options').declare('nn.ELU', {
              {'alpha', 'number', 1, 'the value the negative side saturates to, times -1'},
           })}
function ELU:__tostring() return ('nn.ELU(alpha=%g)'):format(self.alpha) end
M.ELU = ELU

-- nn.LeakyReLU(negative_slope = 0.01) or nn.LeakyReLU{negative_slope = 0.01}: x > 0 ? x : slope x.
-- x any shape -> same shape.
local LeakyReLU = OneNumber:extend('LeakyReLU')
LeakyReLU.one = {name = 'LeakyReLU', key = 'negative_slope', default = 0.01, cfn = fnn_tensor.C.fnn_leaky_relu,
                 opts = require('fastnn.options').declare('nn.LeakyReLU', {
                    {'negative_slope', 'number', 0.01, 'the slope for x < 0'},
                 })}
function LeakyReLU:__tostring() return ('nn.LeakyReLU(%g)'):format(self.negative_slope) end
M.LeakyReLU = LeakyReLU

-- ---------------------------------------------------------------------------
-- nn.GELU({approximate = 'none'|'tanh'}): exact (erf) GELU by default, as PyTorch.
-- x any shape -> same shape.
local C = fnn_tensor.C

local GELU = nn.Module:extend('GELU')
local GELU_OPTS = require('fastnn.options').declare('nn.GELU', {
   {'approximate', 'string', 'none', "'none' (exact, erf) or 'tanh'", values = {'none', 'tanh'}},
})

function GELU:__init(opts)
   local approximate = GELU_OPTS:check(opts, 3).approximate
   if approximate ~= 'none' and approximate ~= 'tanh' then
      error(("nn.GELU: approximate is '%s', expected 'none' or 'tanh'"):format(show_value(approximate)), 3)
   end
   self.approximate = approximate
   self.cfn = approximate == 'tanh' and C.fnn_gelu_tanh or C.fnn_gelu
end

function GELU:forward(x)
   if not istype(x) then error(('GELU: input is a %s, expected a tensor'):format(type(x)), 2) end
   local out = new()
   if self.cfn(out, x) ~= 0 then fail() end
   return done(out)
end

function GELU:__tostring()
   return self.approximate == 'tanh' and "nn.GELU(approximate='tanh')" or 'nn.GELU'
end
M.GELU = GELU

-- ---------------------------------------------------------------------------
-- nn.Softplus({beta = 1, threshold = 20}): log(1 + exp(beta x)) / beta. The C kernel
-- is computed stably (x + log1p(exp(-x)) for large x), which in float32 equals
-- PyTorch's linear tail above `threshold`; the option is kept for compatibility.
-- x any shape -> same shape.
local fnn_softplus = fnn_tensor.C.fnn_softplus

local Softplus = nn.Module:extend('Softplus')
local SOFTPLUS_OPTS = require('fastnn.options').declare('nn.Softplus', {
   {'beta', 'number', 1, 'log(1 + exp(beta x)) / beta; not 0'},
   {'threshold', 'number', 20, "PyTorch's linear tail above beta x > threshold (the stable kernel gives it anyway)"},
})

function Softplus:__init(opts)
   if type(opts) == 'number' then opts = {beta = opts} end
   opts = SOFTPLUS_OPTS:check(opts, 3)
   self.beta = opts.beta
   self.threshold = opts.threshold
   if type(self.beta) ~= 'number' or self.beta == 0 then
      error('nn.Softplus: beta must be a non-zero number', 3)
   end
end

function Softplus:forward(x)
   if not istype(x) then error(('Softplus: input is a %s, expected a tensor'):format(type(x)), 2) end
   local beta = self.beta
   local bx = beta == 1 and x or x * beta
   local out = new()
   if fnn_softplus(out, bx) ~= 0 then fail() end
   out = done(out)
   if beta ~= 1 then out = out / beta end
   return out
end

function Softplus:__tostring()
   return ('nn.Softplus(beta=%g, threshold=%g)'):format(self.beta, self.threshold)
end
M.Softplus = Softplus

-- ---------------------------------------------------------------------------
-- nn.Activation(name): the activation called `name` as a layer (Keras): 'relu', 'leaky_relu',
-- 'elu', 'selu', 'gelu', 'silu'/'swish', 'mish', 'sigmoid', 'hard_sigmoid', 'tanh', 'softplus',
-- 'softsign', 'softmax', 'log_softmax' (both over the last dim), 'linear' (identity), ...
-- (nn.activation_fn lists them all). x any shape -> same shape.

local Activation = nn.Module:extend('Activation')
local ACTIVATION_OPTS = require('fastnn.options').declare('nn.Activation', {
   {'axis', 'integer', nil, 'the dim of softmax and log_softmax (Keras; 1-based, negative from the end)', default_doc = '-1'},
   {'dim', 'integer', nil, "PyTorch's name of axis", default_doc = '-1'},
})

function Activation:__init(name, opts)
   if type(name) ~= 'string' then
      error(("nn.Activation: name is a %s, expected a string such as 'relu'"):format(type(name)), 3)
   end
   self.fn = activation_fn(name, 3, 'nn.Activation')
   self.name = name
   -- {axis = d} (Keras): the dim of softmax / log_softmax (1-based, negative from the end)
   opts = ACTIVATION_OPTS:check(opts, 3)
   local axis = opts.axis or opts.dim
   if axis ~= nil then
      local m = name:lower()
      if m ~= 'softmax' and m ~= 'log_softmax' then
         error(("nn.Activation: '%s' takes no axis (only softmax and log_softmax do)"):format(name), 3)
      end
      if type(axis) ~= 'number' or axis ~= math.floor(axis) or axis == 0 then
         error(('nn.Activation: axis is %s, expected a non-zero integer'):format(show_value(axis)), 3)
      end
      self.axis = axis
      self.fn = function(x) return x[m](x, axis) end
   end
end

function Activation:forward(x)
   if not istype(x) then
      error(("Activation('%s'): input is a %s, expected a tensor"):format(self.name, type(x)), 2)
   end
   return (self.fn(x))
end

function Activation:__tostring() return ("nn.Activation('%s')"):format(self.name) end
M.Activation = Activation

return M
