-- optim.Adam(params, lr, {betas, eps, weight_decay, decoupled_weight_decay, amsgrad})
-- ARGS (PyTorch's names and defaults):
--   lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0 (coupled L2, added to the gradient;
--   decoupled_weight_decay = true makes it AdamW's p *= 1 - lr wd), amsgrad = false
-- UPDATE (one fused C call per parameter, core/optim.c), t = this parameter's step count:
--   g = grad + weight_decay * p
--   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  amsgrad: vmax = max(vmax, v), used for v below
--   p = p - lr * (m / (1 - b1^t)) / (sqrt(v) / sqrt(1 - b2^t) + eps)
-- STATE per parameter: step, exp_avg (m), exp_avg_sq (v), max_exp_avg_sq (amsgrad)
local Optimizer = require 'fastnn.optim.Optimizer'
local fnn_tensor = require 'fastnn.tensor'
local fail = fnn_tensor.fail
local fnn_optim_adam = fnn_tensor.C.fnn_optim_adam

local Adam = Optimizer:extend('Adam', {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
                                       decoupled_weight_decay = false, amsgrad = false},
                              {'exp_avg', 'exp_avg_sq', 'max_exp_avg_sq'})

function Adam.check_options(cls, o)
   Optimizer.check_options(cls, o)
   Optimizer.check_betas(cls, o.betas)
   Optimizer.check_range(cls, 'eps', o.eps, 0, math.huge, true)
end

-- what a stepped parameter's loaded state must hold (Optimizer:load_state)
function Adam.required_state(g)
   if g.amsgrad then return {'exp_avg', 'exp_avg_sq', 'max_exp_avg_sq'} end
   return {'exp_avg', 'exp_avg_sq'}
end

function Adam:update(p, g, st)
   -- each buffer on its own: amsgrad turned on after a load finds no max_exp_avg_sq (load_state
   -- refuses a state missing one its options need)
   if st.exp_avg == nil then st.exp_avg = Optimizer.zeros_like_param(p) end
   if st.exp_avg_sq == nil then st.exp_avg_sq = Optimizer.zeros_like_param(p) end
   local m = st.exp_avg
   if g.amsgrad and st.max_exp_avg_sq == nil then st.max_exp_avg_sq = Optimizer.zeros_like_param(p) end
   local betas = g.betas
   if fnn_optim_adam(p.node, m, st.exp_avg_sq, g.amsgrad and st.max_exp_avg_sq or nil, g.lr, betas[1], betas[2],
                     g.eps, g.weight_decay, g.decoupled_weight_decay and 1 or 0, st.step) ~= 0 then
      fail()
   end
end

return Adam
