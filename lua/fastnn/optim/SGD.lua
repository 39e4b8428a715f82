-- optim.SGD(params, lr, {momentum, dampening, weight_decay, nesterov, decoupled_weight_decay})
-- ARGS (PyTorch's names and defaults):
--   lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0 (coupled L2; decoupled_weight_decay = true:
--   p *= 1 - lr wd first), nesterov = false
-- UPDATE (one fused C call per parameter, core/optim.c):
--   g = grad + weight_decay * p
--   buf = g on the first step, else momentum * buf + (1 - dampening) * g
--   d = nesterov and g + momentum * buf or buf       (d = g when momentum = 0)
--   p = p - lr * d
-- STATE per parameter: step, momentum_buffer (only when momentum ~= 0)
local Optimizer = require 'fastnn.optim.Optimizer'
local C = require('fastnn.tensor').C
local fail = require('fastnn.tensor').fail
local fnn_optim_sgd = C.fnn_optim_sgd

local SGD = Optimizer:extend('SGD', {lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false,
                                     decoupled_weight_decay = false}, {'momentum_buffer'})

function SGD.check_options(cls, o)
   Optimizer.check_options(cls, o)
   if type(o.momentum) ~= 'number' or o.momentum < 0 then
      error(('optim.SGD: invalid momentum %s'):format(tostring(o.momentum)), 0)
   end
   if type(o.dampening) ~= 'number' then
      error(('optim.SGD: invalid dampening %s'):format(tostring(o.dampening)), 0)
   end
   if o.nesterov and (o.momentum <= 0 or o.dampening ~= 0) then
      error('optim.SGD: nesterov momentum requires a momentum and zero dampening', 0)
   end
end

function SGD:update(p, g, st)
   local momentum = g.momentum
   local buf, first = nil, 0
   if momentum ~= 0 then
      buf = st.momentum_buffer
      if buf == nil then
         buf = Optimizer.zeros_like_param(p)
         st.momentum_buffer = buf
         first = 1
      end
   end
   if fnn_optim_sgd(p.node, buf, g.lr, momentum, g.dampening, Optimizer.coupled_decay(p, g),
                    g.nesterov and 1 or 0, first) ~= 0 then
      fail()
   end
end

return SGD
