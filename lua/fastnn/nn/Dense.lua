-- nn.Dense(units, activation, {use_bias = true}) or nn.Dense{units = 16, activation = 'relu'}
-- (Keras): a fully connected layer that declares only its output width and reads its input width
-- at build (Sequential:build, GraphBuilder:add, or its first input). Built, it is an nn.Linear(in,
-- units) (weight [units, in], bias [units], PyTorch's init) followed by the activation (any name of
-- nn.activation_fn, nil or 'linear' for none). x [..., in] -> [..., units]: the last dim is
-- contracted, so one kernel also maps every step of a sequence.
local nn = require 'fastnn.nn'
local K = require 'fastnn.nn._keras'

local OPTS = require('fastnn.options').declare('nn.Dense', {
   {'units', 'integer', nil, 'the output width (in the one-table form)', min = 1},
   {'activation', 'string|function', nil, "a name of nn.activation_fn ('relu', ...), a function, or nil/'linear' for none"},
   {'use_bias', 'boolean', true, 'learn an additive bias [units]'},
   {'bias', 'boolean', true, "PyTorch's name of use_bias"},
})

return K.class('Dense', {
   parse = function(self, units, act, opts)
      if type(units) == 'table' then units, act, opts = units.units, units.activation, units end
      if type(act) == 'table' then act, opts = act.activation, act end
      opts = OPTS:check(opts, 4)
      if act == nil then act = opts.activation end
      self.units = K.check_count('Dense', 'units', units, 4)
      self.use_bias = opts.use_bias and opts.bias
      K.set_activation(self, 'Dense', act, 4)
   end,
   make = function(self, s)
      if #s < 2 then
         error(('nn.Dense: build: input shape [%s] has no feature dim (expected [N, features])'):format(
            table.concat(s, ',')), 0)
      end
      return nn.Linear(s[#s], self.units, {bias = self.use_bias})
   end,
   describe = function(self)
      local inner = rawget(self, 'inner')
      return (inner and (inner.inputs .. ' -> ') or '') .. self.units .. (self.use_bias and '' or ', no bias')
   end,
})
