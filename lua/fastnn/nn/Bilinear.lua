-- nn.Bilinear(in1, in2, out, {bias = true}): y[n, o] = sum_ij x1[n, i] W[o, i, j] x2[n, j] + b[o].
-- weight Param [out, in1, in2], bias Param [out], both drawn from U(-1/sqrt(in1), 1/sqrt(in1))
-- (PyTorch's default). x1 [..., in1], x2 [..., in2] with the same leading dims -> [..., out].
-- Computed as x2 times W seen as [out*in1, in2] (one sgemm), then times x1 and summed over in1:
-- three C ops, so gradients reach x1, x2, W and b.
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local C, istype, shape_str = fnn_tensor.C, fnn_tensor.is_tensor, fnn_tensor.shape_str
local Param = nn.Param

local Bilinear = nn.Module:extend('Bilinear')

local function uniform(shape, bound) return fnn_tensor.uniform(shape, -bound, bound) end

local OPTS = require('fastnn.options').declare('nn.Bilinear', {
   {'bias', 'boolean', true, 'learn an additive bias [out]'},
})

function Bilinear:__init(in1, in2, out, opts)
   for i, v in ipairs{in1, in2, out} do
      if type(v) ~= 'number' or v < 1 or v ~= math.floor(v) then
         error(('nn.Bilinear: size %d is %s, expected a positive integer (Bilinear(in1, in2, out, {bias}))'):format(
            i, require('fastnn.options').describe(v)), 3)
      end
   end
   if type(opts) == 'boolean' then opts = {bias = opts} end   -- Bilinear(2, 3, 4, false)
   local bias = OPTS:check(opts, 3).bias
   self.in1, self.in2, self.out = in1, in2, out
   local bound = 1 / math.sqrt(in1)
   self.weight = Param(uniform({out, in1, in2}, bound))
   if bias then self.bias = Param(uniform({out}, bound)) end
end

function Bilinear:forward(x1, x2)
   local name = ('Bilinear(%d, %d -> %d)'):format(self.in1, self.in2, self.out)
   for i = 1, 2 do
      local x = i == 1 and x1 or x2
      if not istype(x) then error(('%s: input %d is a %s, expected a tensor'):format(name, i, type(x)), 2) end
      local want = i == 1 and self.in1 or self.in2
      if x.ndim < 1 or tonumber(x.shape_[x.ndim - 1]) ~= want then
         error(('%s: input %d %s has %d features in its last dim, expected %d'):format(
            name, i, shape_str(x), x.ndim < 1 and 0 or tonumber(x.shape_[x.ndim - 1]), want), 2)
      end
   end
   local same = x1.ndim == x2.ndim
   local lead, m = {}, 1
   for d = 0, x1.ndim - 2 do
      same = same and x1.shape_[d] == x2.shape_[d]
      lead[#lead + 1] = tonumber(x1.shape_[d])
      m = m * lead[#lead]
   end
   if not same then
      error(('%s: inputs %s and %s do not agree in their leading dims'):format(name, shape_str(x1), shape_str(x2)), 2)
   end
   local in1, in2, out = self.in1, self.in2, self.out
   local w = self.weight:tensor():reshape(out * in1, in2)
   local t = x2:reshape(m, in2):linear(w):reshape(m, out, in1)   -- t[n, o, i] = sum_j W[o, i, j] x2[n, j]
   local y = (t * x1:reshape(m, 1, in1)):sum(3)                    -- [m, out]
   if self.bias then y = y + self.bias:tensor() end
   lead[#lead + 1] = out
   return y:reshape(lead)
end

function Bilinear:__tostring()
   return ('nn.Bilinear(%d, %d -> %d%s)'):format(self.in1, self.in2, self.out, self.bias and '' or ', no bias')
end

return Bilinear
