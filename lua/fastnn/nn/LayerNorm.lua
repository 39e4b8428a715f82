-- nn.LayerNorm(width_or_shape, {eps = 1e-5, elementwise_affine = true}): normalizes the
-- trailing dims of its input (the given width, or the shape's trailing dims) to mean 0 and
-- variance 1 (biased, eps inside the sqrt, as PyTorch), then y = xhat * weight + bias.
-- weight Param ones(shape), bias Param zeros(shape), both absent when elementwise_affine is false.
-- x [..., *shape] -> x's shape (one fused node: fnn.layer_norm)
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local C = fnn_tensor.C
local new, done, fail, istype, parse_shape = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail,
   fnn_tensor.is_tensor, fnn_tensor.parse_shape
local fnn_layer_norm = C.fnn_layer_norm
local Param = nn.Param

local LayerNorm = nn.Module:extend('LayerNorm')
local options = require 'fastnn.options'
local OPTS = options.declare('nn.LayerNorm', {
   {'eps', 'number', 1e-5, 'added to the variance for numerical stability', min = 0},
   {'elementwise_affine', 'boolean', true, 'learn a weight and bias of the normalised shape'},
})

local function filled(shape, value)
   local n, buf = parse_shape('LayerNorm', false, shape)
   local out = new()
   if (value == 1 and C.fnn_ones(out, n, buf) or C.fnn_zeros(out, n, buf)) ~= 0 then fail() end
   return done(out)
end

function LayerNorm:__init(shape, opts)
   if type(shape) == 'number' then shape = {shape} end
   if type(shape) ~= 'table' or #shape == 0 then
      error(('nn.LayerNorm: shape is %s, expected a width or a table of sizes (LayerNorm(width, {eps}))'):format(
         options.describe(shape)), 3)
   end
   local count = 1
   for i, v in ipairs(shape) do
      if type(v) ~= 'number' or v < 1 or v ~= math.floor(v) then
         error(('nn.LayerNorm: size %d is %s, expected a positive integer'):format(i, options.describe(v)), 3)
      end
      count = count * v
   end
   opts = OPTS:check(opts, 3)
   local eps, affine = opts.eps, opts.elementwise_affine
   self.shape, self.count, self.eps = {unpack(shape)}, count, eps
   if affine then
      self.weight = Param(filled(shape, 1))
      self.bias = Param(filled(shape, 0))
   end
end

local function shape_text(s) return '[' .. table.concat(s, ',') .. ']' end

function LayerNorm:forward(x)
   if not istype(x) then
      error(('LayerNorm(%s): input is a %s, expected a tensor'):format(shape_text(self.shape), type(x)), 2)
   end
   -- the input's trailing dims must be the module's shape (PyTorch's rule), not just its count
   local nd, k = x.ndim, #self.shape
   local ok = nd >= k
   for i = 1, k do
      if not ok then break end
      ok = tonumber(x.shape_[nd - k + i - 1]) == self.shape[i]
   end
   if not ok then
      error(('LayerNorm(%s): input %s does not end in %s'):format(
            shape_text(self.shape), fnn_tensor.shape_str(x), shape_text(self.shape)), 2)
   end
   local w, b = self.weight, self.bias
   local out = new()
   if fnn_layer_norm(out, x, w and w:tensor() or nil, b and b:tensor() or nil, self.count, self.eps) ~= 0 then
      fail()
   end
   return done(out)
end

function LayerNorm:__tostring()
   return ('nn.LayerNorm(%s, eps=%g%s)'):format(shape_text(self.shape), self.eps,
                                                self.weight and '' or ', no affine')
end

return LayerNorm
