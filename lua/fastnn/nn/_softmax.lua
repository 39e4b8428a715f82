-- Shared maker of nn.Softmax and nn.LogSoftmax: a layer class `name` running Tensor[method](x, dim).
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local Tensor, istype = fnn_tensor.Tensor, fnn_tensor.is_tensor

return function(name, method)
   local cls = nn.Module:extend(name)
   local OPTS = require('fastnn.options').declare('nn.' .. name, {
      {'dim', 'integer', -1, 'the dim it runs over (1-based; negative from the end)'},
   })
   function cls:__init(opts)
      local dim = opts
      if type(opts) == 'table' then dim = OPTS:check(opts, 3).dim end
      if dim == nil then dim = -1 end
      if type(dim) ~= 'number' or dim ~= math.floor(dim) or dim == 0 then
         error(('nn.%s: dim is %s, expected a non-zero integer (1-based, negative from the end)'):format(
            name, show_value(dim)), 3)
      end
      self.dim = dim
   end
   local op = Tensor[method]
   function cls:forward(x)
      if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(name, type(x)), 2) end
      local d = self.dim
      if x.ndim > 0 and (d > x.ndim or d < -x.ndim) then
         error(('%s(dim=%d): input %s has no dim %d (dims are 1..%d or -%d..-1)'):format(
            name, d, fnn_tensor.shape_str(x), d, x.ndim, x.ndim), 2)
      end
      return (op(x, d))
   end
   function cls:__tostring() return ('nn.%s(dim=%d)'):format(name, self.dim) end
   return cls
end
