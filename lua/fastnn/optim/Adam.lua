-- optim.Adam(params, lr, {betas, eps, weight_decay, decoupled_weight_decay, amsgrad})
-- ARGS (PyTorch's names and defaults):
--   lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0 (coupled L2, added to the gradient;
--   decoupled_weight_decay = true makes it AdamW's p *= 1 - lr wd), amsgrad = false
-- UPDATE (one fused C call per parameter group, core/optim.c: one parallel loop over every parameter's
-- elements, PyTorch's multi-tensor apply), t = this parameter's step count:
--   g = grad + weight_decay * p
--   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  amsgrad: vmax = max(vmax, v), used for v below
--   p = p - lr * (m / (1 - b1^t)) / (sqrt(v) / sqrt(1 - b2^t) + eps)
-- STATE per parameter: step, exp_avg (m), exp_avg_sq (v), max_exp_avg_sq (amsgrad)
local Optimizer = require 'fastnn.optim.Optimizer'
local fnn_tensor = require 'fastnn.tensor'
local fail = fnn_tensor.fail
local ffi = require 'ffi'
local fnn_optim_adam, fnn_optim_adam_many = fnn_tensor.C.fnn_optim_adam, fnn_tensor.C.fnn_optim_adam_many

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

-- the moments p's update needs, made where missing: each buffer on its own, since amsgrad turned on
-- after a load finds no max_exp_avg_sq (load_state refuses a state missing one its options need)
local function moments(p, g, st)
   if st.exp_avg == nil then st.exp_avg = Optimizer.zeros_like_param(p) end
   if st.exp_avg_sq == nil then st.exp_avg_sq = Optimizer.zeros_like_param(p) end
   if g.amsgrad and st.max_exp_avg_sq == nil then st.max_exp_avg_sq = Optimizer.zeros_like_param(p) end
end

function Adam:update(p, g, st)
   moments(p, g, st)
   local m = st.exp_avg
   local betas = g.betas
   if fnn_optim_adam(p.node, m, st.exp_avg_sq, g.amsgrad and st.max_exp_avg_sq or nil, g.lr, betas[1], betas[2],
                     g.eps, g.weight_decay, g.decoupled_weight_decay and 1 or 0, st.step) ~= 0 then
      fail()
   end
end

-- every parameter of a group (ps, their states sts) in one call
function Adam:update_many(ps, g, sts)
   local n = #ps
   local nodes, m, v = ffi.new('fnn_node *[?]', n), ffi.new('fnn_tensor *[?]', n), ffi.new('fnn_tensor *[?]', n)
   local vmax, steps = g.amsgrad and ffi.new('fnn_tensor *[?]', n) or nil, ffi.new('int64_t[?]', n)
   for i = 1, n do
      local p, st = ps[i], sts[i]
      moments(p, g, st)
      nodes[i - 1], m[i - 1], v[i - 1], steps[i - 1] = p.node, st.exp_avg, st.exp_avg_sq, st.step
      if vmax then vmax[i - 1] = st.max_exp_avg_sq end
   end
   local betas = g.betas
   if fnn_optim_adam_many(n, nodes, m, v, vmax, g.lr, betas[1], betas[2], g.eps, g.weight_decay,
                          g.decoupled_weight_decay and 1 or 0, steps) ~= 0 then
      fail()
   end
end

return Adam
