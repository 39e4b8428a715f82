-- nn.AlphaDropout(p = 0.5, {noise_shape}): dropout for self-normalizing (SELU) networks. In
-- training mode each element is dropped with probability p to SELU's negative saturation
-- alpha' = -scale * alpha = -1.7581 instead of 0, then y = a * x' + b with
-- a = ((1 - p) (1 + p alpha'^2))^(-1/2) and b = -a alpha' p, so an input of mean 0 and variance 1
-- keeps them (PyTorch's and Keras' formula). Identity in evaluation mode.
-- x any shape -> same shape; the gradient is a * mask. noise_shape as nn.Dropout's.
local Dropout = require 'fastnn.nn.Dropout'
local noise = require 'fastnn.nn._noise'

local AlphaDropout = Dropout:extend('AlphaDropout')
Dropout._declare('nn.AlphaDropout')
local ALPHA_P = -1.7580993408473766   -- -scale * alpha of SELU

function AlphaDropout:forward(x)
   self:check_input(x)
   local p = self.p
   if not self.training or p == 0 then return x end
   local nd, shape = self:mask_shape(x)
   if not nd then error(('%s: %s'):format(self:short_str(), shape), 2) end
   local a = ((1 - p) * (1 + p * ALPHA_P * ALPHA_P)) ^ -0.5
   local b = -a * ALPHA_P * p
   local keep = noise.bernoulli(nd, shape, 1 - p, x)
   -- a (x keep + alpha' (1 - keep)) + b = x (a keep) + (a alpha' + b - a alpha' keep): one mul, one add
   return x * (keep * a) + (keep * (-a * ALPHA_P) + (a * ALPHA_P + b))
end

return AlphaDropout
