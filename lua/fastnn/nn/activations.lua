-- The activation layers without parameters (x any shape -> same shape) and nn.activation_fn:
--   Unary: one C op per call, its subclasses ReLU, Sigmoid, Tanh, SiLU, Swish, Mish, Softsign,
--   HardSigmoid and SELU naming theirs; Softmax and LogSoftmax (over one dim); Identity.
--   M.activation_fn(name) -> function(x), M.names: the activation names layers accept
-- The activations with an option (ELU, GELU, LeakyReLU, Softplus) and nn.Activation have files of
-- their own.
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
   relu = method('relu'),
   leaky_relu = method('leaky_relu'),
   elu = method('elu'),
   selu = method('selu'),
   celu = method('celu'),
   gelu = method('gelu'),
   gelu_tanh = function(x) return x:gelu{approximate = 'tanh'} end,
   silu = method('silu'),
   swish = method('silu'),
   mish = method('mish'),
   sigmoid = method('sigmoid'),
   hard_sigmoid = method('hardsigmoid'),
   hardsigmoid = method('hardsigmoid'),
   hard_swish = method('hardswish'),
   hardswish = method('hardswish'),
   tanh = method('tanh'),
   softplus = method('softplus'),
   softsign = method('softsign'),
   softmax = function(x) return x:softmax(-1) end,
   log_softmax = function(x) return x:log_softmax(-1) end,
}
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


return M
