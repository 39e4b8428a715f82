-- fastnn.optim: optimizers and gradient utilities.
--   local opt = optim.Adam(model:parameters(), 1e-3)
--   loss:backward(); optim.clip_grad_norm(model:parameters(), 1.0); opt:step(); opt:zero_grad()
-- Optimizer classes live one per file in lua/fastnn/optim/<Name>.lua and load on
-- first use. Every update runs in C, fused per parameter (core/optim.c).
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local C = fnn_tensor.C
local Param = require('fastnn.autograd').Param

local optim = {}

-- a list of Params from: a module, one Param, a list of Params, or named {name, p} pairs
local function param_list(what, params)
   if Param.is_param(params) then return {params} end
   if type(params) ~= 'table' then
      error(('%s: expected a list of nn.Param or a module, got a %s'):format(what, type(params)), 3)
   end
   if type(params.parameters) == 'function' then return params:parameters() end
   local out = {}
   for i, p in ipairs(params) do
      if type(p) == 'table' and not Param.is_param(p) and Param.is_param(p[2]) then p = p[2] end
      if not Param.is_param(p) then
         error(('%s: element %d of the parameter list is a %s, expected an nn.Param'):format(what, i, type(p)), 3)
      end
      out[i] = p
   end
   return out
end
optim._param_list = param_list

-- an own copy of a tensor's values, for the wrappers' slow and shadow weights (the optimizer
-- kernels update parameter values in place)
function optim._copy_of(t)
   local out = fnn_tensor.new()
   if C.fnn_mul_scalar(out, t:detach(), 1) ~= 0 then fnn_tensor.fail() end
   return fnn_tensor.done(out)
end

-- a clipping bound, a number >= 0, checked at the user's line (1 here, 2 the clip function, 3 the user)
local function bound(op, what, v)
   if type(v) ~= 'number' or v < 0 then
      error(('%s: %s is %s, expected a non-negative number'):format(op, what, show_value(v)), 3)
   end
end

-- clip_grad_norm(params, max_norm): scales every gradient by max_norm / norm
-- when the global L2 norm over all of them exceeds max_norm (PyTorch's
-- clip_grad_norm_, with its 1e-6 guard). Returns the norm before clipping.
function optim.clip_grad_norm(params, max_norm, extra)
   if extra ~= nil then too_many('optim.clip_grad_norm', 3, extra, 'params, max_norm') end
   local list = param_list('clip_grad_norm', params)
   bound('clip_grad_norm', 'max_norm', max_norm)
   local sq = 0
   for i = 1, #list do sq = sq + C.fnn_grad_sq_norm(list[i].node) end
   local norm = math.sqrt(sq)
   local coef = max_norm / (norm + 1e-6)
   if coef < 1 then
      for i = 1, #list do
         if C.fnn_grad_scale(list[i].node, coef) ~= 0 then fnn_tensor.fail() end
      end
   end
   return norm
end

-- clip_grad_value(params, v): clamps every gradient element into [-v, v]
function optim.clip_grad_value(params, value, extra)
   if extra ~= nil then too_many('optim.clip_grad_value', 3, extra, 'params, value') end
   local list = param_list('clip_grad_value', params)
   bound('clip_grad_value', 'value', value)
   for i = 1, #list do
      local g = list[i]:grad()
      if g then list[i]:set_grad(g:clamp(-value, value)) end
   end
end

function optim.gradients_are_finite(params, extra)
   if extra ~= nil then too_many('optim.gradients_are_finite', 2, extra, 'params') end
   return require('fastnn.autograd').gradients_are_finite(param_list('gradients_are_finite', params))
end

-- classes by name, loaded on first use
require('fastnn.lazy')(optim, 'fastnn.optim')

package.loaded['fastnn.optim'] = optim
return optim
