-- Shared maker for the parameter-free activation layers (nn.ReLU, nn.Tanh, ...):
-- each layer file is one line calling this. x any shape -> same shape.
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor

return function(name, cfn_name)
   local cls = nn.Module:extend(name)
   local cfn = fnn_tensor.C[cfn_name]
   function cls.forward(_, x)
      if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(name, type(x)), 2) end
      local out = new()
      if cfn(out, x) ~= 0 then fail() end
      return done(out)
   end
   return cls
end
