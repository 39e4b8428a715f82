-- optim.Adadelta(params, lr, {rho, eps, weight_decay, decoupled_weight_decay})
-- ARGS (PyTorch's names and defaults): lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0 (coupled)
-- UPDATE (one fused C call per parameter, core/optim.c):
--   g = grad + weight_decay * p;  sq = rho sq + (1 - rho) g^2
--   delta = sqrt(acc + eps) / sqrt(sq + eps) * g;  acc = rho acc + (1 - rho) delta^2;  p = p - lr delta
-- STATE per parameter: step, square_avg, acc_delta
local Optimizer = require 'fastnn.optim.Optimizer'
local fnn_tensor = require 'fastnn.tensor'
local fail, C = fnn_tensor.fail, fnn_tensor.C

local Adadelta = Optimizer:extend('Adadelta', {lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0,
                                               decoupled_weight_decay = false}, {'square_avg', 'acc_delta'})

function Adadelta.check_options(cls, o)
   Optimizer.check_options(cls, o)
   Optimizer.check_range(cls, 'rho', o.rho, 0, 1, false)
   Optimizer.check_range(cls, 'eps', o.eps, 0, math.huge, true)
end

-- what a stepped parameter's loaded state must hold (Optimizer:load_state)
function Adadelta.required_state() return {'square_avg', 'acc_delta'} end

function Adadelta:update(p, g, st)
   Optimizer.zero_state(p, st, self.state_tensors)   -- square_avg, acc_delta
   if C.fnn_optim_adadelta(p.node, st.square_avg, st.acc_delta, g.lr, g.rho, g.eps, Optimizer.coupled_decay(p, g)) ~= 0 then
      fail()
   end
end

return Adadelta
