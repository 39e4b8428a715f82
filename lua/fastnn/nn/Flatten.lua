-- nn.Flatten({start_dim = 2, end_dim = -1}): merges dims start_dim..end_dim
-- (1-based, negatives from the end); by default keeps the batch dim:
-- x [N, d2, ..., dk] -> [N, d2*...*dk]. A view when x's layout allows (reshape).
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local fnn_reshape = fnn_tensor.C.fnn_reshape
local ffi = require 'ffi'

local Flatten = nn.Module:extend('Flatten')
local OPTS = require('fastnn.options').declare('nn.Flatten', {
   {'start_dim', 'integer', 2, 'the first dim flattened (1-based; negative from the end): 2 keeps the batch dim'},
   {'end_dim', 'integer', -1, 'the last dim flattened'},
})
local shape = ffi.new('int64_t[8]')

function Flatten:__init(opts)
   opts = OPTS:check(opts, 3)
   self.start_dim = opts.start_dim
   self.end_dim = opts.end_dim
end

function Flatten:forward(x)
   if not istype(x) then error(('Flatten: input is a %s, expected a tensor'):format(type(x)), 2) end
   local nd = x.ndim
   local s = self.start_dim < 0 and self.start_dim + nd + 1 or self.start_dim
   local e = self.end_dim < 0 and self.end_dim + nd + 1 or self.end_dim
   if s < 1 or e > nd or s > e then
      error(('Flatten: dims %d..%d out of range for input %s'):format(
         self.start_dim, self.end_dim, fnn_tensor.shape_str(x)), 2)
   end
   local k = 0
   for d = 1, s - 1 do shape[k] = x.shape_[d - 1]; k = k + 1 end
   local merged = 1
   for d = s, e do merged = merged * x.shape_[d - 1] end
   shape[k] = merged; k = k + 1
   for d = e + 1, nd do shape[k] = x.shape_[d - 1]; k = k + 1 end
   local out = new()
   if fnn_reshape(out, x, k, shape) ~= 0 then fail() end
   return done(out)
end

function Flatten:__tostring()
   if self.start_dim == 2 and self.end_dim == -1 then return 'nn.Flatten' end
   return ('nn.Flatten(%d, %d)'):format(self.start_dim, self.end_dim)
end

return Flatten
