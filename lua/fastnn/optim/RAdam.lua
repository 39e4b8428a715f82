-- optim.RAdam(params, lr, {betas, eps, weight_decay, decoupled_weight_decay})
-- ARGS (PyTorch's names and defaults): lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0
-- UPDATE (one fused C call per parameter, core/optim.c), t = this parameter's step count:
--   g = grad + weight_decay * p;  m, v as Adam;  rho_inf = 2 / (1 - b2) - 1
--   rho_t = rho_inf - 2 t b2^t / (1 - b2^t)
--   rho_t > 5: p = p - lr m / (1 - b1^t) * r * sqrt(1 - b2^t) / (sqrt(v) + eps),
--              r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
--   else:      p = p - lr m / (1 - b1^t)
-- STATE per parameter: step, exp_avg, exp_avg_sq
local Optimizer = require 'fastnn.optim.Optimizer'
local fnn_tensor = require 'fastnn.tensor'
local fail, C = fnn_tensor.fail, fnn_tensor.C

local RAdam = Optimizer:extend('RAdam', {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
                                         decoupled_weight_decay = false}, {'exp_avg', 'exp_avg_sq'})

function RAdam.check_options(cls, o)
   Optimizer.check_options(cls, o)
   Optimizer.check_betas(cls, o.betas)
   Optimizer.check_range(cls, 'eps', o.eps, 0, math.huge, true)
end

-- what a stepped parameter's loaded state must hold (Optimizer:load_state)
function RAdam.required_state() return {'exp_avg', 'exp_avg_sq'} end

function RAdam:update(p, g, st)
   Optimizer.zero_state(p, st, self.state_tensors)   -- exp_avg, exp_avg_sq
   if C.fnn_optim_radam(p.node, st.exp_avg, st.exp_avg_sq, g.lr, g.betas[1], g.betas[2], g.eps,
                        Optimizer.coupled_decay(p, g), st.step) ~= 0 then
      fail()
   end
end

return RAdam
