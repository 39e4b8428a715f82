-- nn.Linear(in, out, {bias = true, activation = nil}): y = x w^T + b over the last dim;
-- activation 'relu' or 'gelu' (exact) gives act(x w^T + b) as one node (fnn.linear's option).
-- weight Param [out, in], bias Param [out]; both drawn from U(-1/sqrt(in), 1/sqrt(in))
-- (PyTorch's default: kaiming_uniform with a = sqrt(5), and the same bound for the bias).
-- x [..., in] -> [..., out]
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local C, new, done, fail, istype = fnn_tensor.C, fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local fnn_linear = C.fnn_linear_to
local BF16 = 3
local Param = nn.Param
local describe = require('fastnn.options').describe

local Linear = nn.Module:extend('Linear')
local OPTS = require('fastnn.options').declare('nn.Linear', {
   {'bias', 'boolean', true, 'learn an additive bias [out]'},
   {'activation', 'string', nil, "applied in the same node: 'relu' or 'gelu' (exact, through erf); nil: none",
    values = {'relu', 'gelu'}},
})

local function uniform(shape, bound) return fnn_tensor.uniform(shape, -bound, bound) end

function Linear:__init(inputs, outputs, opts)
   for i, v in ipairs{inputs, outputs} do
      if type(v) ~= 'number' or v < 0 or v ~= math.floor(v) then
         error(('nn.Linear: size %d is %s, expected a non-negative integer (Linear(in, out, {bias}))'):format(
            i, describe(v)), 3)
      end
   end
   if type(opts) == 'boolean' then opts = {bias = opts} end   -- Linear(3, 4, false)
   local o = OPTS:check(opts, 3)
   local bias = o.bias
   self.inputs, self.outputs, self.activation = inputs, outputs, o.activation
   local bound = inputs > 0 and 1 / math.sqrt(inputs) or 0
   self.weight = Param(uniform({outputs, inputs}, bound))
   if bias then self.bias = Param(uniform({outputs}, bound)) end
end

function Linear:forward(x)
   if not istype(x) then
      error(('Linear(%d -> %d): input is a %s, expected a tensor'):format(self.inputs, self.outputs, type(x)), 2)
   end
   local nd = x.ndim
   if nd < 1 or x.shape_[nd - 1] ~= self.inputs then
      error(('Linear(%d -> %d): input %s has %d features in its last dim'):format(
            self.inputs, self.outputs, fnn_tensor.shape_str(x), nd < 1 and 0 or tonumber(x.shape_[nd - 1])), 2)
   end
   local b = self.bias
   local out = new()
   -- a bfloat16 x gives a bfloat16 output whatever the (float32) parameters: a layer's output follows
   -- its input (fastnn.precision's rule for layers); else linear's own rule (autocast, promotion)
   if fnn_linear(out, x, self.weight:tensor(), b and b:tensor() or nil, self.activation,
                 x.dtype_ == BF16 and BF16 or -1) ~= 0 then fail() end
   return done(out)
end

function Linear:__tostring()
   return ('nn.Linear(%d -> %d%s%s)'):format(self.inputs, self.outputs, self.bias and '' or ', no bias',
                                             self.activation and ', ' .. self.activation or '')
end

return Linear
