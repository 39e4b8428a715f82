-- nn.GaussianNoise(stddev): in training mode adds noise drawn from N(0, stddev^2) to each element
-- (Keras; a regularizer and a data augmentation); the identity in evaluation mode.
-- x any shape -> same shape; the gradient passes unchanged.
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local noise = require 'fastnn.nn._noise'
local istype = fnn_tensor.is_tensor

local GaussianNoise = nn.Module:extend('GaussianNoise')

function GaussianNoise:__init(stddev)
   if type(stddev) == 'table' then stddev = stddev.stddev end
   self.stddev = noise.check_nonneg('nn.GaussianNoise', 'stddev', stddev)
end

function GaussianNoise:forward(x)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(self:short_str(), type(x)), 2) end
   if not self.training or self.stddev == 0 then return x end
   return x + noise.normal(x.ndim, x.shape_, 0, self.stddev, x)
end

function GaussianNoise:__tostring() return ('nn.GaussianNoise(stddev=%g)'):format(self.stddev) end

return GaussianNoise
