-- nn.Activation(name): the activation called `name` as a layer (Keras): 'relu', 'leaky_relu',
-- 'elu', 'selu', 'gelu', 'silu'/'swish', 'mish', 'sigmoid', 'hard_sigmoid', 'tanh', 'softplus',
-- 'softsign', 'softmax', 'log_softmax' (both over the last dim), 'linear' (identity), ...
-- (nn.activation_fn lists them all). x any shape -> same shape.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local activation_fn = require('fastnn.nn.activations').activation_fn
local istype = fnn_tensor.is_tensor

local Activation = nn.Module:extend('Activation')
local OPTS = require('fastnn.options').declare('nn.Activation', {
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
   opts = OPTS:check(opts, 3)
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

return Activation
