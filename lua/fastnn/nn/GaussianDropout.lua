-- nn.GaussianDropout(rate): in training mode multiplies each element by noise drawn from
-- N(1, rate / (1 - rate)) (Keras: the variance of inverted dropout at that rate, without zeros);
-- the identity in evaluation mode. rate in [0, 1).
-- x any shape -> same shape; the gradient is the noise.
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local noise = require 'fastnn.nn._noise'
local istype = fnn_tensor.is_tensor

local GaussianDropout = nn.Module:extend('GaussianDropout')

function GaussianDropout:__init(rate)
   if type(rate) == 'table' then rate = rate.rate or rate.p end
   self.rate = noise.check_rate('nn.GaussianDropout', 'rate', rate)
end

function GaussianDropout:forward(x)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(self:short_str(), type(x)), 2) end
   local rate = self.rate
   if not self.training or rate == 0 then return x end
   return x * noise.normal(x.ndim, x.shape_, 1, math.sqrt(rate / (1 - rate)), x)
end

function GaussianDropout:__tostring() return ('nn.GaussianDropout(rate=%g)'):format(self.rate) end

return GaussianDropout
