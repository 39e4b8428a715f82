-- nn.AdaptiveAvgPool2d(output_size): the mean over PyTorch's adaptive windows, [N, C, H, W] (or
-- [C, H, W]) -> [N, C, oh, ow]; output_size is a number or {oh, ow}. Output row i averages input
-- rows floor(i H / oh) .. ceil((i + 1) H / oh) - 1 (windows overlap when oh does not divide H).
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local tuple = require('fastnn.ops.pool')._tuple
local fnn_adaptive_avg_pool2d = fnn_tensor.C.fnn_adaptive_avg_pool2d

local AdaptiveAvgPool2d = nn.Module:extend('AdaptiveAvgPool2d')

function AdaptiveAvgPool2d:__init(output_size)
   if output_size == nil then error('nn.AdaptiveAvgPool2d: output size missing (a number or {h, w})', 3) end
   -- tuple's errors: 1 tuple, 2 __init, 3 __call, 4 the user's line
   self.output_size = tuple('nn.AdaptiveAvgPool2d', 'output size', output_size, 2, nil, 4)
   if self.output_size[1] < 1 or self.output_size[2] < 1 then
      error(('nn.AdaptiveAvgPool2d: output size %dx%d must be positive'):format(
            self.output_size[1], self.output_size[2]), 3)
   end
end

-- the C op checks the rank and sizes and names itself (adaptive_avg_pool2d: ...)
function AdaptiveAvgPool2d:forward(x)
   if not istype(x) then error(('AdaptiveAvgPool2d: input is a %s, expected a tensor'):format(type(x)), 2) end
   local out = new()
   if fnn_adaptive_avg_pool2d(out, x, self.output_size[1], self.output_size[2]) ~= 0 then fail() end
   return done(out)
end

function AdaptiveAvgPool2d:__tostring()
   return ('nn.AdaptiveAvgPool2d(%dx%d)'):format(self.output_size[1], self.output_size[2])
end

return AdaptiveAvgPool2d
