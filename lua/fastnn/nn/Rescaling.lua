-- nn.Rescaling(scale, offset = 0) or nn.Rescaling{scale = s, offset = o}: y = x * scale + offset
-- (Keras; e.g. Rescaling(1/255) for pixels). scale and offset are numbers, or tensors that
-- broadcast against x (per-channel [C, 1, 1]). x any shape -> same shape.
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local istype, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str

local Rescaling = nn.Module:extend('Rescaling')

local function check(what, v)
   if not (type(v) == 'number' or istype(v)) then
      error(('nn.Rescaling: %s is a %s, expected a number or a tensor'):format(what, type(v)), 4)
   end
end

function Rescaling:__init(scale, offset)
   if type(scale) == 'table' and not istype(scale) then scale, offset = scale.scale, scale.offset end
   if offset == nil then offset = 0 end
   check('scale', scale)
   check('offset', offset)
   self.scale, self.offset = scale, offset
end

function Rescaling:forward(x)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(self:short_str(), type(x)), 2) end
   local scale, offset = self.scale, self.offset   -- numbers compared as numbers (a tensor's == is elementwise)
   local y = (type(scale) == 'number' and scale == 1) and x or x * scale
   if not (type(offset) == 'number' and offset == 0) then y = y + offset end
   return y
end

function Rescaling:__tostring()
   local function s(v) return type(v) == 'number' and ('%g'):format(v) or shape_str(v) end
   return ('nn.Rescaling(scale=%s, offset=%s)'):format(s(self.scale), s(self.offset))
end

return Rescaling
