-- nn.MaxPool2d(kernel, {stride = kernel, padding = 0, ceil_mode = false}): the maximum of each
-- window over [N, C, H, W] (or [C, H, W]) -> [N, C, Ho, Wo]; padding counts as -inf and may be at
-- most half the kernel. kernel, stride and padding are numbers or {h, w}.
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local pair = require('fastnn.ops.conv')._pair
local fnn_max_pool2d = fnn_tensor.C.fnn_max_pool2d

local MaxPool2d = nn.Module:extend('MaxPool2d')

function MaxPool2d:__init(kernel, opts)
   if opts ~= nil and type(opts) ~= 'table' then
      error(('nn.MaxPool2d: options must be a table like {stride = 2}, got a %s'):format(type(opts)), 3)
   end
   opts = opts or {}
   -- pair's errors: 1 pair, 2 __init, 3 __call, 4 the user's line
   self.kh, self.kw = pair('nn.MaxPool2d', 'kernel', kernel, nil, 4)
   self.sh, self.sw = pair('nn.MaxPool2d', 'stride', opts.stride, {self.kh, self.kw}, 4)
   self.ph, self.pw = pair('nn.MaxPool2d', 'padding', opts.padding, 0, 4)
   self.ceil_mode = opts.ceil_mode and true or false
end

function MaxPool2d:forward(x)
   if not istype(x) then error(('MaxPool2d: input is a %s, expected a tensor'):format(type(x)), 2) end
   local out = new()
   if fnn_max_pool2d(out, x, self.kh, self.kw, self.sh, self.sw, self.ph, self.pw, self.ceil_mode and 1 or 0) ~= 0 then
      fail()
   end
   return done(out)
end

function MaxPool2d:__tostring()
   local s = ('nn.MaxPool2d(%dx%d'):format(self.kh, self.kw)
   if self.sh ~= self.kh or self.sw ~= self.kw then s = s .. (', stride %dx%d'):format(self.sh, self.sw) end
   if self.ph ~= 0 or self.pw ~= 0 then s = s .. (', padding %dx%d'):format(self.ph, self.pw) end
   if self.ceil_mode then s = s .. ', ceil_mode' end
   return s .. ')'
end

return MaxPool2d
