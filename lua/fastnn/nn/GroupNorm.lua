-- nn.GroupNorm(num_groups, num_channels, {eps = 1e-5, affine = true}): splits the channels of
-- [N, C, *] into num_groups groups and normalizes each (sample, group) over its channels and
-- spatial dims (biased variance, eps inside the sqrt), then y = xhat * weight + bias per channel.
-- weight Param ones [C], bias Param zeros [C] (absent when affine is false); the same in
-- training and eval. One fused C node: fnn.group_norm.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local norm = require 'fastnn.nn.norm'
local C = fnn_tensor.C
local new, done, fail, istype, shape_str = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail,
   fnn_tensor.is_tensor, fnn_tensor.shape_str
local fnn_group_norm = C.fnn_group_norm
local Param = nn.Param

local GroupNorm = nn.Module:extend('GroupNorm')
local OPTS = require('fastnn.options').declare('nn.GroupNorm', {
   {'eps', 'number', 1e-5, 'added to the variance for numerical stability', min = 0},
   {'affine', 'boolean', true, 'learn a per-channel weight and bias'},
})

function GroupNorm:__init(num_groups, num_channels, opts)
   norm.check_size('GroupNorm', 'num_groups', num_groups)
   norm.check_size('GroupNorm', 'num_channels', num_channels)
   if num_channels % num_groups ~= 0 then
      error(('nn.GroupNorm: num_channels %d is not divisible by num_groups %d'):format(num_channels, num_groups), 3)
   end
   opts = OPTS:check(opts, 3)
   local eps = opts.eps
   if eps == nil then eps = 1e-5 end
   if type(eps) ~= 'number' or eps < 0 then
      error(('nn.GroupNorm: eps is %s, expected a non-negative number'):format(show_value(eps)), 3)
   end
   self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
   self.affine = opts.affine == nil or opts.affine and true or false
   if self.affine then
      self.weight = Param(norm.filled({num_channels}, 1))
      self.bias = Param(norm.filled({num_channels}, 0))
   end
end

function GroupNorm:_label() return ('GroupNorm(%d, %d)'):format(self.num_groups, self.num_channels) end

function GroupNorm:forward(x)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(self:_label(), type(x)), 2) end
   if x.ndim < 2 then
      error(('%s: input %s must be [N, C, *] (2 or more dims)'):format(self:_label(), shape_str(x)), 2)
   end
   local c = tonumber(x.shape_[1])
   if c ~= self.num_channels then
      error(('%s: input %s has %d channels in dim 2, expected %d'):format(
         self:_label(), shape_str(x), c, self.num_channels), 2)
   end
   local w, b = self.weight, self.bias
   local out = new()
   if fnn_group_norm(out, x, self.num_groups, w and w:tensor() or nil, b and b:tensor() or nil, self.eps) ~= 0 then
      fail()
   end
   return done(out)
end

function GroupNorm:__tostring()
   return ('nn.GroupNorm(%d, %d, eps=%g, affine=%s)'):format(self.num_groups, self.num_channels, self.eps,
                                                            tostring(self.affine))
end

return GroupNorm
