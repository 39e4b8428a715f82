-- optim.RMSprop(params, lr, {alpha, eps, weight_decay, decoupled_weight_decay, momentum, centered})
-- ARGS (PyTorch's names and defaults):
--   lr = 1e-2, alpha = 0.99, eps = 1e-8 (outside the sqrt), weight_decay = 0 (coupled), momentum = 0,
--   centered = false
-- UPDATE (one fused C call per parameter, core/optim.c):
--   g = grad + weight_decay * p
--   sq = alpha sq + (1 - alpha) g^2
--   centered: ga = alpha ga + (1 - alpha) g; avg = sqrt(sq - ga^2) + eps      else avg = sqrt(sq) + eps
--   momentum > 0: buf = momentum buf + g / avg; p = p - lr buf              else p = p - lr g / avg
-- STATE per parameter: step, square_avg, grad_avg (centered), momentum_buffer (momentum > 0)
local Optimizer = require 'fastnn.optim.Optimizer'
local fnn_tensor = require 'fastnn.tensor'
local fail, C = fnn_tensor.fail, fnn_tensor.C

local RMSprop = Optimizer:extend('RMSprop', {lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0,
                                             centered = false, decoupled_weight_decay = false},
                                 {'square_avg', 'grad_avg', 'momentum_buffer'})

function RMSprop.check_options(cls, o)
   Optimizer.check_options(cls, o)
   Optimizer.check_range(cls, 'alpha', o.alpha, 0, 1, false)
   Optimizer.check_range(cls, 'eps', o.eps, 0, math.huge, true)
   Optimizer.check_range(cls, 'momentum', o.momentum, 0, math.huge, true)
end

-- what a stepped parameter's loaded state must hold (Optimizer:load_state)
function RMSprop.required_state(g)
   local need = {'square_avg'}
   if g.centered then need[#need + 1] = 'grad_avg' end
   if g.momentum > 0 then need[#need + 1] = 'momentum_buffer' end
   return need
end

function RMSprop:update(p, g, st)
   -- each buffer on its own: options turned on after a load (centered, momentum) find none yet
   -- (load_state refuses a state missing one its options need)
   if st.square_avg == nil then st.square_avg = Optimizer.zeros_like_param(p) end
   if g.centered and st.grad_avg == nil then st.grad_avg = Optimizer.zeros_like_param(p) end
   if g.momentum > 0 and st.momentum_buffer == nil then st.momentum_buffer = Optimizer.zeros_like_param(p) end
   if C.fnn_optim_rmsprop(p.node, st.square_avg, g.centered and st.grad_avg or nil,
                          g.momentum > 0 and st.momentum_buffer or nil, g.lr, g.alpha, g.eps,
                          Optimizer.coupled_decay(p, g), g.momentum) ~= 0 then
      fail()
   end
end

return RMSprop
