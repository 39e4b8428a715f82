-- nn.Softplus({beta = 1, threshold = 20}): log(1 + exp(beta x)) / beta. The C kernel
-- is computed stably (x + log1p(exp(-x)) for large x), which in float32 equals
-- PyTorch's linear tail above `threshold`; the option is kept for compatibility.
-- x any shape -> same shape.
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local fnn_softplus = fnn_tensor.C.fnn_softplus

local Softplus = nn.Module:extend('Softplus')
local OPTS = require('fastnn.options').declare('nn.Softplus', {
   {'beta', 'number', 1, 'log(1 + exp(beta x)) / beta; not 0'},
   {'threshold', 'number', 20, "PyTorch's linear tail above beta x > threshold (the stable kernel gives it anyway)"},
})

function Softplus:__init(opts)
   if type(opts) == 'number' then opts = {beta = opts} end
   opts = OPTS:check(opts, 3)
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

return Softplus
