-- optim.Adagrad(params, lr, {lr_decay, weight_decay, decoupled_weight_decay, initial_accumulator_value, eps})
-- ARGS (PyTorch's names and defaults):
--   lr = 1e-2, lr_decay = 0, weight_decay = 0 (coupled), initial_accumulator_value = 0, eps = 1e-10
-- UPDATE (one fused C call per parameter, core/optim.c), t = this parameter's step count:
--   g = grad + weight_decay * p;  clr = lr / (1 + (t - 1) lr_decay)
--   sum = sum + g^2;  p = p - clr g / (sqrt(sum) + eps)
-- STATE per parameter: step, sum (starts at initial_accumulator_value)
local Optimizer = require 'fastnn.optim.Optimizer'
local fnn_tensor = require 'fastnn.tensor'
local fail, C = fnn_tensor.fail, fnn_tensor.C

local Adagrad = Optimizer:extend('Adagrad', {lr = 1e-2, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0,
                                             eps = 1e-10, decoupled_weight_decay = false}, {'sum'})

function Adagrad.check_options(cls, o)
   Optimizer.check_options(cls, o)
   Optimizer.check_range(cls, 'lr_decay', o.lr_decay, 0, math.huge, true)
   Optimizer.check_range(cls, 'initial_accumulator_value', o.initial_accumulator_value, 0, math.huge, true)
   Optimizer.check_range(cls, 'eps', o.eps, 0, math.huge, true)
end

-- what a stepped parameter's loaded state must hold (Optimizer:load_state)
function Adagrad.required_state() return {'sum'} end

function Adagrad:update(p, g, st)
   if st.sum == nil then st.sum = Optimizer.full_like_param(p, g.initial_accumulator_value) end
   if C.fnn_optim_adagrad(p.node, st.sum, g.lr, g.lr_decay, Optimizer.coupled_decay(p, g), g.eps, st.step) ~= 0 then
      fail()
   end
end

return Adagrad
