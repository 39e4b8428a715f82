-- fastnn.ops.loss: bindings for core/ops/loss.c (fused losses, mean reduction -> 0-dim tensor).
--   fnn.cross_entropy(logits, targets)  logits [N, C], targets [N] 1-based class ids (a tensor or a Lua table)
--   fnn.mse_loss(pred, target)          same shapes; mean of the squared difference
-- Also methods: logits:cross_entropy(targets), pred:mse_loss(target).
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, is_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local M = {}

-- raised at the user's line: 1 here, 2 the binding, 3 its caller
local function check_tensor(op, t, what)
   if not is_tensor(t) then error(('%s: %s is a %s, expected a tensor'):format(op, what, type(t)), 3) end
end

-- class ids from a tensor or a Lua array of numbers (filled straight into a fresh [n] tensor)
local shape_buf = fnn_tensor.shape_buf
local function ids_arg(op, ids)
   if is_tensor(ids) then return ids end
   if type(ids) ~= 'table' then
      error(('%s: targets is a %s, expected a tensor or a table of 1-based class ids'):format(op, type(ids)), 3)
   end
   local n = #ids
   shape_buf[0] = n
   local t = new()
   if C.fnn_empty(t, 1, shape_buf) ~= 0 then fail() end
   t = done(t)
   local p = C.fnn_tensor_mutable_data(t)
   for i = 1, n do
      local v = ids[i]
      if type(v) ~= 'number' then
         error(('%s: targets[%d] is a %s, expected a class id'):format(op, i, type(v)), 3)
      end
      p[i - 1] = v
   end
   return t
end

local fnn_cross_entropy, fnn_mse_loss = C.fnn_cross_entropy, C.fnn_mse_loss

function M.cross_entropy(logits, targets)
   check_tensor('cross_entropy', logits, 'logits')
   local t = ids_arg('cross_entropy', targets)
   local out = new()
   if fnn_cross_entropy(out, logits, t) ~= 0 then fail() end
   return done(out)
end

function M.mse_loss(pred, target)
   check_tensor('mse_loss', pred, 'pred')
   check_tensor('mse_loss', target, 'target')
   local out = new()
   if fnn_mse_loss(out, pred, target) ~= 0 then fail() end
   return done(out)
end

Tensor.cross_entropy, Tensor.mse_loss = M.cross_entropy, M.mse_loss
return M
