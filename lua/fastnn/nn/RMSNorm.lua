-- nn.RMSNorm(normalized_shape, {eps = nil, elementwise_affine = true}): divides the trailing dims
-- of its input (a width, or a table of sizes) by their root mean square, y = x / sqrt(mean(x^2) +
-- eps) * weight (PyTorch's RMSNorm: no centring, no bias). eps nil: float32's machine epsilon.
-- weight Param ones(shape), absent when elementwise_affine is false. One fused C node: fnn.rms_norm.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local norm = require 'fastnn.nn.norm'
local C = fnn_tensor.C
local new, done, fail, istype, shape_str = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail,
   fnn_tensor.is_tensor, fnn_tensor.shape_str
local fnn_rms_norm = C.fnn_rms_norm
local Param = nn.Param

local FLOAT_EPS = 1.1920928955078125e-07   -- torch.finfo(torch.float32).eps

local RMSNorm = nn.Module:extend('RMSNorm')
local OPTS = require('fastnn.options').declare('nn.RMSNorm', {
   {'eps', 'number', nil, 'added to the mean square for numerical stability', min = 0,
    default_doc = "nil: the float32 machine epsilon, as PyTorch's None"},
   {'elementwise_affine', 'boolean', true, 'learn a weight of the normalised shape'},
})

function RMSNorm:__init(shape, opts)
   if type(shape) == 'number' then shape = {shape} end
   if type(shape) ~= 'table' or #shape == 0 then
      error(('nn.RMSNorm: normalized_shape is %s, expected a width or a table of sizes'):format(show_value(shape)), 3)
   end
   local count = 1
   for i, v in ipairs(shape) do
      norm.check_size('RMSNorm', 'size ' .. i, v)
      count = count * v
   end
   opts = OPTS:check(opts, 3)
   local eps = opts.eps
   if eps ~= nil and (type(eps) ~= 'number' or eps < 0) then
      error(('nn.RMSNorm: eps is %s, expected a non-negative number or nil'):format(show_value(eps)), 3)
   end
   self.shape, self.count, self.eps = {unpack(shape)}, count, eps
   local affine = opts.elementwise_affine
   if affine == nil or affine then self.weight = Param(norm.filled(shape, 1)) end
end

local function shape_text(s) return '[' .. table.concat(s, ',') .. ']' end

function RMSNorm:forward(x)
   local label = 'RMSNorm(' .. shape_text(self.shape) .. ')'
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(label, type(x)), 2) end
   -- the input's trailing dims must be the module's shape (PyTorch's rule), not just its count
   local nd, k = x.ndim, #self.shape
   local ok = nd >= k
   for i = 1, k do
      if not ok then break end
      ok = tonumber(x.shape_[nd - k + i - 1]) == self.shape[i]
   end
   if not ok then
      error(('%s: input %s does not end in %s'):format(label, shape_str(x), shape_text(self.shape)), 2)
   end
   local w = self.weight
   local out = new()
   if fnn_rms_norm(out, x, w and w:tensor() or nil, self.count, self.eps or FLOAT_EPS) ~= 0 then fail() end
   return done(out)
end

function RMSNorm:__tostring()
   return ('nn.RMSNorm(%s, eps=%s%s)'):format(shape_text(self.shape), self.eps and ('%g'):format(self.eps) or 'nil',
                                              self.weight and '' or ', no affine')
end

return RMSNorm
