-- nn.Reverse(dim = 2): flips its input along dim (time, for [N, T, F] sequences); 1-based,
-- negative from the end. Differentiable (the gradient is flipped back). x any shape with that
-- dim -> same shape.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local istype, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str

local Reverse = nn.Module:extend('Reverse')

function Reverse:__init(dim)
   if dim == nil then dim = 2 end
   if type(dim) ~= 'number' or dim ~= math.floor(dim) or dim == 0 then
      error(('nn.Reverse: dim is %s, expected a non-zero integer (1-based, negative from the end)'):format(
         show_value(dim)), 3)
   end
   self.dim = dim
   rawset(self, '_index', {})   -- positions n .. 1 by length, made once
end

-- x flipped along its dim d (1-based, checked); level counts from the caller of this
function Reverse.flip(x, d, cache)
   local n = tonumber(x.shape_[d - 1])
   local idx = cache and cache[n]
   if not idx then
      local list = {}
      for i = 1, n do list[i] = n + 1 - i end
      idx = fnn_tensor.tensor(list, {n}, {dtype = 'int64'})
      if cache then cache[n] = idx end
   end
   return x:index_select(d, idx)
end

function Reverse:forward(x)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(self:short_str(), type(x)), 2) end
   local nd, d = x.ndim, self.dim
   if d < 0 then d = d + nd + 1 end
   if d < 1 or d > nd then
      error(('%s: input %s has no dim %d'):format(self:short_str(), shape_str(x), self.dim), 2)
   end
   return Reverse.flip(x, d, rawget(self, '_index'))
end

function Reverse:__tostring() return ('nn.Reverse(dim=%d)'):format(self.dim) end

return Reverse
