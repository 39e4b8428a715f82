-- optim.AdamW(params, lr, {betas, eps, weight_decay, amsgrad}): Adam with
-- decoupled weight decay (Loshchilov & Hutter), PyTorch's defaults:
--   lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 1e-2 (decoupled_weight_decay = true)
-- UPDATE: p = p - lr * weight_decay * p, then the Adam step without decay in the gradient.
-- STATE per parameter: step, exp_avg, exp_avg_sq
local Adam = require 'fastnn.optim.Adam'

local AdamW = Adam:extend('AdamW', {weight_decay = 1e-2, decoupled_weight_decay = true})

return AdamW
