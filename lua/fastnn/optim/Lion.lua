-- optim.Lion(params, lr, {betas, weight_decay}) (Chen et al. 2023, "Symbolic Discovery of
-- Optimization Algorithms"); defaults as the paper's reference: lr = 1e-4, betas = {0.9, 0.99},
-- weight_decay = 0 (always decoupled, as Lion defines it)
-- UPDATE (one fused C call per parameter, core/optim.c):
--   p = p * (1 - lr wd);  p = p - lr sign(b1 m + (1 - b1) g);  m = b2 m + (1 - b2) g
-- STATE per parameter: step, exp_avg (m)
local Optimizer = require 'fastnn.optim.Optimizer'
local fnn_tensor = require 'fastnn.tensor'
local fail, C = fnn_tensor.fail, fnn_tensor.C

local Lion = Optimizer:extend('Lion', {lr = 1e-4, betas = {0.9, 0.99}, weight_decay = 0}, {'exp_avg'})

function Lion.check_options(cls, o)
   Optimizer.check_options(cls, o)
   Optimizer.check_betas(cls, o.betas)
end

-- what a stepped parameter's loaded state must hold (Optimizer:load_state)
function Lion.required_state() return {'exp_avg'} end

function Lion:update(p, g, st)
   Optimizer.zero_state(p, st, self.state_tensors)   -- exp_avg
   if C.fnn_optim_lion(p.node, st.exp_avg, g.lr, g.betas[1], g.betas[2], g.weight_decay) ~= 0 then fail() end
end

return Lion
