-- fastnn.ops.reduction: bindings for core/ops/reduction.c.
--   x:sum(dim, keepdim)   mean prod logsumexp likewise; no dim: over everything -> 0-dim tensor
--   x:var(dim, keepdim, {unbiased = false}) / x:var{unbiased = false}; std likewise (unbiased by default)
--   x:norm(p, dim, keepdim)   p = 2 by default; 1, math.huge (or 'inf'), -math.huge, 0, any p
--   x:max(dim, keepdim) -> values, indices (1-based); x:max() -> one value; x:max(y) = maximum(x, y)
--   x:argmax(dim, keepdim) -> 1-based indices; with no dim the flat 1-based index (0-dim)
--   x:softmax(dim), x:log_softmax(dim)   dim defaults to the last
--   x:cumsum(dim)   running sums along dim (required, as torch.cumsum), same shape
--   x:logcumsumexp(dim)   running log(sum(exp)) along dim (as torch.logcumsumexp), same shape
-- Dims are 1-based (negative counts from the end) and converted here; each
-- function is also fnn.<name>(x, ...).
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, cdim, is_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.cdim,
   fnn_tensor.is_tensor
local M = {}

local options = require 'fastnn.options'
local check_tensor = fnn_tensor.check_tensor

-- keepdim as given: nil, a boolean, 0 or 1, or PyTorch's keyword as a table {keepdim = true} (checked,
-- so a misspelt key is refused); 1 or 0 for the C call. Anything else is refused at the caller's line
-- (a table once counted as true, whatever it held)
local KEEPDIM = {}
for _, name in ipairs{'sum', 'mean', 'prod', 'logsumexp', 'argmax', 'argmin', 'norm', 'max', 'min'} do
   KEEPDIM[name] = options.declare('Tensor.' .. name, {{'keepdim', 'boolean', false, 'keep the reduced dim, of size 1'}})
end
local function keepdim_of(name, v)
   if v == nil or v == false or v == 0 then return 0 end
   if v == true or v == 1 then return 1 end
   if type(v) == 'table' then return KEEPDIM[name]:check(v, 3).keepdim and 1 or 0 end
   error(('%s: keepdim is %s, expected true, false or {keepdim = ...}'):format(name, options.describe(v)), 3)
end
-- an argument past the last one an op takes is refused, not ignored, at the caller's line
-- (fastnn.tensor's too_many, and rest for the varargs these bindings take)
local too_many, rest = fnn_tensor.too_many, fnn_tensor.rest

-- sum, mean, prod, logsumexp, and argmax, argmin (1-based indices as floats, no gradient):
-- (dim, keepdim); no dim reduces everything (C dim -1)
for _, name in ipairs{'sum', 'mean', 'prod', 'logsumexp', 'argmax', 'argmin'} do
   local cfn = C['fnn_' .. name]
   Tensor[name] = function(x, dim, keepdim, ...)
      check_tensor(name, x)
      if select('#', ...) > 0 then rest(name, 4, 'x[, dim[, keepdim]]', ...) end
      local k = keepdim_of(name, keepdim)
      local d = dim == nil and -1 or cdim(name, x, dim)
      local out = new()
      if cfn(out, x, d, k) ~= 0 then fail() end
      return done(out)
   end
end

-- var, std: (dim, keepdim, opts), (dim, opts) or (opts); opts.unbiased defaults to true
for _, name in ipairs{'var', 'std'} do
   local cfn = C['fnn_' .. name]
   local OPTS = options.declare('Tensor.' .. name, {
      {'unbiased', 'boolean', true, "divide by n - 1 (Bessel's correction) instead of n"},
      {'keepdim', 'boolean', nil, 'keep the reduced dim, of size 1 (as the positional keepdim)'},
   })
   local takes = 'x[, dim[, keepdim]][, {unbiased = ..., keepdim = ...}]'
   Tensor[name] = function(x, dim, keepdim, opts, ...)
      check_tensor(name, x)
      if select('#', ...) > 0 then rest(name, 5, takes, ...) end
      -- the options table ends the call wherever it stands
      if type(dim) == 'table' then
         if keepdim ~= nil then too_many(name, 3, keepdim, takes) end
         if opts ~= nil then too_many(name, 4, opts, takes) end
         dim, opts = nil, dim
      elseif type(keepdim) == 'table' then
         if opts ~= nil then too_many(name, 4, opts, takes) end
         keepdim, opts = nil, keepdim
      end
      local o = OPTS:check(opts, 2)
      if o.keepdim ~= nil then keepdim = o.keepdim end
      local k = keepdim_of(name, keepdim)
      local d = dim == nil and -1 or cdim(name, x, dim)
      local out = new()
      if cfn(out, x, d, k, o.unbiased and 1 or 0) ~= 0 then fail() end
      return done(out)
   end
end

-- norm(p, dim, keepdim): p a number, 'inf', '-inf' or 'fro' (= 2)
local named_p = {inf = math.huge, ['-inf'] = -math.huge, fro = 2}
function Tensor.norm(x, p, dim, keepdim, ...)
   check_tensor('norm', x)
   if select('#', ...) > 0 then rest('norm', 5, 'x[, p[, dim[, keepdim]]]', ...) end
   if p == nil then p = 2 end
   if type(p) == 'string' then p = named_p[p] or p end
   if type(p) ~= 'number' then
      error(('norm: p is %s, expected a number, \'inf\', \'-inf\' or \'fro\''):format(show_value(p)), 2)
   end
   local k = keepdim_of('norm', keepdim)
   local d = dim == nil and -1 or cdim('norm', x, dim)
   local out = new()
   if C.fnn_norm(out, x, p, d, k) ~= 0 then fail() end
   return done(out)
end

-- max, min: with a dim -> values, indices; without -> one value; with a tensor -> elementwise
for _, name in ipairs{'max', 'min'} do
   local cfn, elementwise = C['fnn_' .. name], name == 'max' and 'maximum' or 'minimum'
   Tensor[name] = function(x, dim, keepdim, ...)
      check_tensor(name, x)
      if select('#', ...) > 0 then rest(name, 4, 'x[, dim[, keepdim]] or x, other', ...) end
      if is_tensor(dim) then   -- the elementwise form: nothing after the other tensor
         if keepdim ~= nil then too_many(name, 3, keepdim, 'x, other') end
         local out = new()
         if C['fnn_' .. elementwise](out, x, dim) ~= 0 then fail() end
         return done(out)
      end
      local k = keepdim_of(name, keepdim)
      local values = new()
      if dim == nil then
         if cfn(values, nil, x, -1, k) ~= 0 then fail() end   -- keepdim: every dim kept, of size 1, as sum's
         return done(values)
      end
      local d = cdim(name, x, dim)
      local indices = new()
      if cfn(values, indices, x, d, k) ~= 0 then fail() end
      return done(values), done(indices)
   end
end

-- the ops along one dim that keep x's shape: softmax, log_softmax (the last dim by default);
-- cumsum(dim): y[.., r, ..] = x[.., 1, ..] + ... + x[.., r, ..], and
-- logcumsumexp(dim): y[.., r, ..] = log(exp(x[.., 1, ..]) + ... + exp(x[.., r, ..])), without overflow
-- (dim required, as torch's). A scalar runs along its one "dim" 1 or -1.
for name, dim_required in pairs{softmax = false, log_softmax = false, cumsum = true, logcumsumexp = true} do
   local cfn = C['fnn_' .. name]
   local takes = dim_required and 'x, dim' or 'x[, dim]'
   Tensor[name] = function(x, dim, ...)
      check_tensor(name, x)
      if select('#', ...) > 0 then rest(name, 3, takes, ...) end
      if dim == nil and dim_required then error(name .. ': dim is required (which dim to run the sums along)', 2) end
      local d
      if dim == nil or (x.ndim == 0 and (dim == 1 or dim == -1)) then d = -1
      else d = cdim(name, x, dim) end
      local out = new()
      if cfn(out, x, d) ~= 0 then fail() end
      return done(out)
   end
end

for _, name in ipairs{'sum', 'mean', 'prod', 'var', 'std', 'norm', 'logsumexp', 'max', 'min', 'argmax', 'argmin',
                      'softmax', 'log_softmax', 'cumsum', 'logcumsumexp'} do
   M[name] = Tensor[name]
end

return M
