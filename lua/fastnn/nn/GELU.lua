-- nn.GELU({approximate = 'none'|'tanh'}): exact (erf) GELU by default, as PyTorch.
-- x any shape -> same shape.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local C = fnn_tensor.C

local GELU = nn.Module:extend('GELU')
local OPTS = require('fastnn.options').declare('nn.GELU', {
   {'approximate', 'string', 'none', "'none' (exact, erf) or 'tanh'", values = {'none', 'tanh'}},
})

function GELU:__init(opts)
   local approximate = OPTS:check(opts, 3).approximate
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

return GELU
