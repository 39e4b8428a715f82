-- optim.Adam(params, lr, {betas, eps, weight_decay, amsgrad})
-- ARGS (PyTorch's names and defaults):
--   lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0 (coupled L2, added to the gradient),
--   amsgrad = false (true is refused: the fused kernel has no max-of-v state yet)
-- UPDATE (one fused C call per parameter, core/optim.c), t = this parameter's step count:
--   g = grad + weight_decay * p
--   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
--   p = p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
-- STATE per parameter: step, exp_avg (m), exp_avg_sq (v)
local Optimizer = require 'fastnn.optim.Optimizer'
local fnn_tensor = require 'fastnn.tensor'
local fail = fnn_tensor.fail
local fnn_optim_adam = fnn_tensor.C.fnn_optim_adam

local Adam = Optimizer:extend('Adam', {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
                                       amsgrad = false}, {'exp_avg', 'exp_avg_sq'})
Adam.decoupled = 0

function Adam.check_options(cls, o)
   Optimizer.check_options(cls, o)
   local b = o.betas
   if type(b) ~= 'table' or type(b[1]) ~= 'number' or type(b[2]) ~= 'number'
      or b[1] < 0 or b[1] >= 1 or b[2] < 0 or b[2] >= 1 then
      error(('optim.%s: betas must be {b1, b2} with each in [0, 1)'):format(cls._name), 0)
   end
   if type(o.eps) ~= 'number' or o.eps < 0 then
      error(('optim.%s: invalid eps %s'):format(cls._name, tostring(o.eps)), 0)
   end
   if o.amsgrad then
      error(('optim.%s: amsgrad is not supported yet'):format(cls._name), 0)
   end
end

function Adam:update(p, g, st)
   local m = st.exp_avg
   if m == nil then
      m = Optimizer.zeros_like_param(p)
      st.exp_avg = m
      st.exp_avg_sq = Optimizer.zeros_like_param(p)
   end
   local betas = g.betas
   if fnn_optim_adam(p.node, m, st.exp_avg_sq, g.lr, betas[1], betas[2], g.eps, g.weight_decay,
                     self.decoupled, st.step) ~= 0 then
      fail()
   end
end

return Adam
