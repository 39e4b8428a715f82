-- nn.Reshape(shape) with shape a table or varargs (nn.Reshape{4, -1}, nn.Reshape(4, -1)): reshapes
-- each sample, keeping the batch dim (Keras): x [N, ...] -> [N, shape...], one -1 inferred.
-- A view when x's layout allows (reshape), else a copy.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local istype, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str

local Reshape = nn.Module:extend('Reshape')

function Reshape:__init(first, ...)
   local shape = type(first) == 'table' and first or {first, ...}
   local n = type(first) == 'table' and #first or select('#', first, ...)
   if n == 0 or n > 7 then
      error(('nn.Reshape: expected 1 to 7 sizes (the batch dim is kept), got %d'):format(n), 3)
   end
   local known, infer = 1, nil
   for i = 1, n do
      local v = shape[i]
      if type(v) ~= 'number' or v ~= math.floor(v) or (v < 1 and v ~= -1) then
         error(('nn.Reshape: size %d is %s, expected a positive integer or -1'):format(i, show_value(v)), 3)
      end
      if v == -1 then
         if infer then error('nn.Reshape: only one size may be -1', 3) end
         infer = i
      else
         known = known * v
      end
   end
   self.shape, self.known, self.infer = {unpack(shape, 1, n)}, known, infer
end

function Reshape:forward(x)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(self:short_str(), type(x)), 2) end
   if x.ndim < 1 then error(('%s: input %s has no batch dim'):format(self:short_str(), shape_str(x)), 2) end
   local per = 1
   for d = 1, x.ndim - 1 do per = per * tonumber(x.shape_[d]) end
   local known = self.known
   if (self.infer and per % known ~= 0) or (not self.infer and per ~= known) then
      error(('%s: input %s has %d values per sample, which do not fit [%s]'):format(
         self:short_str(), shape_str(x), per, table.concat(self.shape, ',')), 2)
   end
   local target = {tonumber(x.shape_[0])}
   for i, v in ipairs(self.shape) do target[i + 1] = v == -1 and per / known or v end
   return x:reshape(target)
end

function Reshape:__tostring() return ('nn.Reshape(%s)'):format(table.concat(self.shape, ', ')) end

return Reshape
