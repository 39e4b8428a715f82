-- nn.LeakyReLU(negative_slope = 0.01) or nn.LeakyReLU{negative_slope = 0.01}: x > 0 ? x : slope x.
-- x any shape -> same shape.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local fnn_leaky_relu = fnn_tensor.C.fnn_leaky_relu

local LeakyReLU = nn.Module:extend('LeakyReLU')
local OPTS = require('fastnn.options').declare('nn.LeakyReLU', {
   {'negative_slope', 'number', 0.01, 'the slope for x < 0'},
})

function LeakyReLU:__init(opts)
   local slope = opts
   if type(opts) == 'table' then slope = OPTS:check(opts, 3).negative_slope end
   if slope == nil then slope = 0.01 end
   if type(slope) ~= 'number' or slope ~= slope or slope == math.huge or slope == -math.huge then
      error(('nn.LeakyReLU: negative_slope is %s (a %s), expected a finite number'):format(
         show_value(slope), type(slope)), 3)
   end
   self.negative_slope = slope
end

function LeakyReLU:forward(x)
   if not istype(x) then error(('LeakyReLU: input is a %s, expected a tensor'):format(type(x)), 2) end
   local out = new()
   if fnn_leaky_relu(out, x, self.negative_slope) ~= 0 then fail() end
   return done(out)
end

function LeakyReLU:__tostring() return ('nn.LeakyReLU(%g)'):format(self.negative_slope) end

return LeakyReLU
