-- fastnn.ops.norm: bindings for core/ops/norm.c.
--   fnn.layer_norm(x, w, b, {eps = 1e-5})  normalizes each row of the trailing elements of x
--       (biased variance, eps inside the sqrt, as PyTorch) then y = xhat * w + b. The
--       normalized size is w's element count when w is given, else b's, else x's last dim;
--       w and b may be nil. Returns x's shape. Also x:layer_norm(w, b, opts).
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, is_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local M = {}

-- raised at the user's line: 1 here, 2 the binding, 3 its caller
local function check_tensor(op, t, what)
   if not is_tensor(t) then error(('%s: %s is a %s, expected a tensor'):format(op, what, type(t)), 3) end
end

local fnn_layer_norm = C.fnn_layer_norm
function M.layer_norm(x, w, b, opts)
   check_tensor('layer_norm', x, 'input')
   if w ~= nil then check_tensor('layer_norm', w, 'weight') end
   if b ~= nil then check_tensor('layer_norm', b, 'bias') end
   local eps = 1e-5
   if type(opts) == 'table' then
      if opts.eps ~= nil then eps = opts.eps end
   elseif type(opts) == 'number' then
      eps = opts
   elseif opts ~= nil then
      error(('layer_norm: options must be a table like {eps = 1e-5}, got a %s'):format(type(opts)), 2)
   end
   if type(eps) ~= 'number' then
      error(('layer_norm: eps is a %s, expected a number'):format(type(eps)), 2)
   end
   local n
   if w ~= nil then n = w:numel()
   elseif b ~= nil then n = b:numel()
   elseif x.ndim > 0 then n = tonumber(x.shape_[x.ndim - 1])
   else n = 1 end
   local out = new()
   if fnn_layer_norm(out, x, w, b, n, eps) ~= 0 then fail() end
   return done(out)
end
Tensor.layer_norm = M.layer_norm

return M
