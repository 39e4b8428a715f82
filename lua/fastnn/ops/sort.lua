-- fastnn.ops.sort: bindings for core/ops/sort.c.
--   x:sort([dim][, {descending = true}]) -> values, indices   dim defaults to the last; also x:sort{descending = true}
--   x:topk(k[, dim][, {largest = false}]) -> values, indices  the k largest (smallest) along dim, best first
-- indices are int64, 1-based along dim. Sorting is stable (equal values keep
-- their order, in both directions) and nan sorts as the largest value. values
-- carry the gradient back to the positions they came from. Dims are 1-based
-- (negative counts from the end) and converted here; each function is also
-- fnn.<name>(x, ...).
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, cdim, is_tensor, shape_str = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail,
   fnn_tensor.cdim, fnn_tensor.is_tensor, fnn_tensor.shape_str
local floor = math.floor
local M = {}

local check_tensor = fnn_tensor.check_tensor
-- an argument past an op's last is refused at the caller's line (fastnn.tensor's too_many)
local too_many = fnn_tensor.too_many

local declare = require('fastnn.options').declare
local SORT_OPTS = declare('Tensor.sort', {
   {'descending', 'boolean', false, 'largest first (stable either way)'},
})
local TOPK_OPTS = declare('Tensor.topk', {
   {'largest', 'boolean', true, 'the k largest (false: the k smallest), best first'},
})

-- the C dim of a call without a dim (the last) or on a 0-dim x, which is one line of one value and
-- takes dim 1 or -1 (cdim would say 'dims are 1..0'). Errors at the user's line (3: the method's caller)
local function last_dim(op, dim)
   if dim ~= nil and dim ~= 1 and dim ~= -1 then
      error(('%s: dim %s out of range for [] (a 0-dim tensor takes dim 1 or -1)'):format(op, tostring(dim)), 3)
   end
   return -1
end

local SORT_TAKES, TOPK_TAKES = 'x[, dim][, {descending = ...}]', 'x, k[, dim][, {largest = ...}]'
function Tensor.sort(x, dim, opts, extra)
   check_tensor('sort', x)
   if type(dim) == 'table' then   -- the options in dim's place end the call
      if opts ~= nil then too_many('sort', 3, opts, SORT_TAKES) end
      dim, opts = nil, dim
   end
   if extra ~= nil then too_many('sort', 4, extra, SORT_TAKES) end
   local o = SORT_OPTS:check(opts, 2)
   local d = (dim == nil or x.ndim == 0) and last_dim('sort', dim) or cdim('sort', x, dim)
   local values, indices = new(), new()
   if C.fnn_sort(values, indices, x, d, o.descending and 1 or 0) ~= 0 then fail() end
   return done(values), done(indices)
end

function Tensor.topk(x, k, dim, opts, extra)
   check_tensor('topk', x)
   if type(dim) == 'table' then
      if opts ~= nil then too_many('topk', 4, opts, TOPK_TAKES) end
      dim, opts = nil, dim
   end
   if extra ~= nil then too_many('topk', 5, extra, TOPK_TAKES) end
   local o = TOPK_OPTS:check(opts, 2)
   local d = (dim == nil or x.ndim == 0) and last_dim('topk', dim) or cdim('topk', x, dim)
   -- C range-checks k itself; here only what cannot cross the FFI as an int64 unchanged
   if type(k) ~= 'number' or k ~= floor(k) or math.abs(k) > 2 ^ 53 then
      local at = d < 0 and x.ndim + d or d                      -- 0-based; -1 for a 0-dim x
      local size = at < 0 and 1 or tonumber(x.shape_[at])
      error(('topk: k is %s, expected a whole number from 0 to %d (the size of dim %d of %s)'):format(
         show_value(k), size, at + 1 > 0 and at + 1 or 1, shape_str(x)), 2)
   end
   local values, indices = new(), new()
   if C.fnn_topk(values, indices, x, k, d, o.largest and 1 or 0) ~= 0 then fail() end
   return done(values), done(indices)
end

M.sort, M.topk = Tensor.sort, Tensor.topk

return M
