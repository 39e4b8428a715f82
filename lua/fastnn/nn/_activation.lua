-- Shared by the activation layers and the Keras-style layers that take an activation name.
--   require('fastnn.nn._activation')('ReLU', 'fnn_relu')   -- a parameter-free layer class
--   require('fastnn.nn._activation').fn('relu')          -- function(x) -> activation(x)
--   .names                                                -- the known names, sorted
-- Layers made here: x any shape -> same shape, one C call.
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local Tensor = fnn_tensor.Tensor
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor

local M = {}

-- a layer class `name` running the C unary op cfn_name
local function layer(name, cfn_name)
   local cls = nn.Module:extend(name)
   local cfn = fnn_tensor.C[cfn_name]
   function cls.forward(_, x)
      if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(name, type(x)), 2) end
      local out = new()
      if cfn(out, x) ~= 0 then fail() end
      return done(out)
   end
   return cls
end
M.layer = layer

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
function M.fn(name, level, who)
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

return setmetatable(M, {__call = function(_, name, cfn_name) return layer(name, cfn_name) end})
