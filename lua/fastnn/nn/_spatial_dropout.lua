-- Shared maker of nn.SpatialDropout1d/2d/3d(p = 0.5): Dropout whose draws are shared over the
-- k spatial dims, so whole channels of [N, C, <k spatial dims>] are zeroed (and the kept ones
-- scaled by 1/(1-p)) in training mode; the identity in evaluation mode.
local Dropout = require 'fastnn.nn.Dropout'
local fnn_tensor = require 'fastnn.tensor'
local ffi = require 'ffi'

local LAYOUT = {'[N, C, L]', '[N, C, H, W]', '[N, C, D, H, W]'}

return function(k)
   local cls = Dropout:extend('SpatialDropout' .. k .. 'd')
   local OPTS = Dropout._declare('nn.SpatialDropout' .. k .. 'd', {Dropout._P, Dropout._RATE})
   local buf = ffi.new('int64_t[8]')
   function cls:__init(p)
      if type(p) == 'table' then   -- {p = ...} or {rate = ...}; 1 check, 2 here, 3 the class call, 4 the user
         local o = OPTS:check(p, 3)
         p = o.p or o.rate
      end
      return Dropout.__init(self, p)   -- a tail call: errors still point at the user's line
   end
   function cls.mask_shape(_, x)
      if x.ndim ~= k + 2 then
         return nil, ('input %s is not %s (%d dims)'):format(fnn_tensor.shape_str(x), LAYOUT[k], k + 2)
      end
      buf[0], buf[1] = x.shape_[0], x.shape_[1]
      for d = 2, k + 1 do buf[d] = 1 end
      return k + 2, buf
   end
   return cls
end
