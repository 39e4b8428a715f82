-- nn.UnitNormalization({axis = -1}): Keras' layer, scales its input to unit L2 norm along axis
-- (a dim, 1-based or negative, or a table of dims): y = x / sqrt(max(sum(x^2), 1e-12)), the
-- floor as tf.math.l2_normalize, so an all-zero slice stays zero. No weights. A composition of
-- C ops (square, sum, clamp, rsqrt, mul): two passes over x, each vectorized in C.
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local istype, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str
local floor = math.floor

local UnitNormalization = nn.Module:extend('UnitNormalization')
local OPTS = require('fastnn.options').declare('nn.UnitNormalization', {
   {'axis', 'integer|table', -1, 'the dim or dims normalised (1-based; negative from the end)'},
})

local EPS = 1e-12

function UnitNormalization:__init(opts)
   local axis = OPTS:check(opts, 3).axis
   local axes = type(axis) == 'table' and {unpack(axis)} or {axis}
   if #axes == 0 then error('nn.UnitNormalization: axis is an empty table, expected a dim or dims', 3) end
   for _, a in ipairs(axes) do
      if type(a) ~= 'number' or a ~= floor(a) or a == 0 then
         error(('nn.UnitNormalization: axis %s is not a dim (1-based, or negative from the end)'):format(
            tostring(a)), 3)
      end
   end
   self.axes = axes
end

function UnitNormalization:forward(x)
   if not istype(x) then
      error(('UnitNormalization: input is a %s, expected a tensor'):format(type(x)), 2)
   end
   local nd = x.ndim
   local ss = x * x
   for _, a in ipairs(self.axes) do
      if a > nd or a < -nd then
         error(('UnitNormalization: axis %d out of range for input %s (dims are 1..%d or -%d..-1)'):format(
            a, shape_str(x), nd, nd), 2)
      end
      ss = ss:sum(a, true)
   end
   return x * ss:clamp(EPS):rsqrt()
end

function UnitNormalization:__tostring()
   local axes = #self.axes == 1 and tostring(self.axes[1]) or ('{' .. table.concat(self.axes, ', ') .. '}')
   return ('nn.UnitNormalization(axis=%s)'):format(axes)
end

return UnitNormalization
