-- fastnn.nn: modules, layers and losses.
--   local nn = require 'fastnn.nn'
--   local model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
--   local loss = nn.cross_entropy(model(x), targets)
-- Classes live one per file in lua/fastnn/nn/<Name>.lua and load on first use
-- (`nn.Linear` requires fastnn.nn.Linear), so there is no list to keep.
local fnn_tensor = require 'fastnn.tensor'
local autograd = require 'fastnn.autograd'
local C = fnn_tensor.C
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor

local nn = {}
nn.Param = autograd.Param

-- ---------------------------------------------------------------------------
-- loss functions: nn.<loss>(pred, target, {reduction = 'mean'|'sum'|'none'})

local function reduction_of(op, opts)
   local r = type(opts) == 'table' and opts.reduction or (type(opts) == 'string' and opts) or 'mean'
   if r ~= 'mean' and r ~= 'sum' and r ~= 'none' then
      error(("%s: reduction '%s' is not one of 'mean', 'sum', 'none'"):format(op, tostring(r)), 3)
   end
   return r
end

local function check_tensor(op, x, what)
   if not istype(x) then
      error(('%s: %s is a %s, expected a tensor'):format(op, what, type(x)), 3)
   end
end

-- mse(pred, target): mean of (pred - target)^2 over every element (PyTorch's MSELoss)
function nn.mse(pred, target, opts)
   local r = reduction_of('mse', opts)
   check_tensor('mse', pred, 'prediction')
   check_tensor('mse', target, 'target')
   if r == 'none' then
      local d = pred - target
      return d * d
   end
   local out = new()
   if C.fnn_mse_loss(out, pred, target) ~= 0 then fail() end
   out = done(out)
   if r == 'sum' then return out * pred:numel() end
   return out
end

-- cross_entropy(logits [N, C], targets): targets are 1-based class ids, a tensor
-- [N] or a Lua array. 'mean' averages over the N rows (PyTorch's convention).
function nn.cross_entropy(logits, targets, opts)
   local r = reduction_of('cross_entropy', opts)
   check_tensor('cross_entropy', logits, 'logits')
   if type(targets) == 'table' then targets = fnn_tensor.tensor(targets) end
   check_tensor('cross_entropy', targets, 'targets')
   if r == 'none' then
      -- per row: logsumexp(logits) - logits[target]; the checks of the fused op run first
      local check = new()
      if C.fnn_cross_entropy(check, logits, targets) ~= 0 then fail() end
      local n = logits:size(1)
      return logits:logsumexp(2) - logits:gather(2, targets:reshape(n, 1)):reshape(n)
   end
   local out = new()
   if C.fnn_cross_entropy(out, logits, targets) ~= 0 then fail() end
   out = done(out)
   if r == 'sum' then return out * logits:size(1) end
   return out
end

-- nn.scoped('inner', m:named_parameters()) -> the same pairs named 'inner.<name>'
function nn.scoped(prefix, named)
   if type(prefix) ~= 'string' then error('scoped: prefix must be a string', 2) end
   if type(named) ~= 'table' then error('scoped: expected an array of {name, param} pairs', 2) end
   local out = {}
   for i, pair in ipairs(named) do
      out[i] = {prefix .. '.' .. pair[1], pair[2]}
   end
   return out
end

-- classes by name, loaded on first use
setmetatable(nn, {__index = function(t, name)
   if type(name) ~= 'string' or not name:match('^%a[%w_]*$') then return nil end
   local modname = 'fastnn.nn.' .. name
   if not package.loaded[modname] and not package.searchpath(modname, package.path) then return nil end
   local cls = require(modname)
   rawset(t, name, cls)
   return cls
end})

package.loaded['fastnn.nn'] = nn
return nn
