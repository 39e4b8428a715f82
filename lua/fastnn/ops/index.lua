-- fastnn.ops.index: bindings for core/ops/index.c. Ids are 1-based, as users
-- see them, and reach C as they are (the kernels convert and bounds-check
-- them): int64 tensors, float tensors holding whole numbers, or Lua tables,
-- which become int64 tensors here (exact at any size).
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, cdim, is_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.cdim,
   fnn_tensor.is_tensor
local M = {}

-- a tensor of ids, from a tensor or a Lua table (errors at the user's line: 3)
local function ids_arg(op, what, ids)
   if is_tensor(ids) then return ids end
   if type(ids) == 'table' then
      -- int64 when every id is a whole number; else float, so the kernel names the bad id
      local ok, t = pcall(fnn_tensor.tensor, ids, {dtype = 'int64'})
      if not ok then ok, t = pcall(fnn_tensor.tensor, ids) end
      if not ok then error(('%s: %s: %s'):format(op, what, (tostring(t):gsub('^[^:\n]+:%d+: ', ''))), 3) end
      return t
   end
   error(('%s: %s is a %s, expected a tensor or a table of 1-based ids'):format(op, what, type(ids)), 3)
end

local check_tensor = fnn_tensor.check_tensor
-- an argument past an op's last is refused at the caller's line (fastnn.tensor's too_many)
local too_many = fnn_tensor.too_many

-- x:op(dim, ids) through fnn_<op>(out, x, dim, ids), the ids named `what` in messages
local function by_ids(op, what)
   local cfn = C['fnn_' .. op]
   local takes = 'x, dim, ' .. what
   return function(x, dim, ids, extra)
      if extra ~= nil then too_many(op, 4, extra, takes) end
      check_tensor(op, x, 'input')
      local d = cdim(op, x, dim)
      local index = ids_arg(op, what, ids)
      local out = new()
      if cfn(out, x, d, index) ~= 0 then fail() end
      return done(out)
   end
end

-- index_select(dim, ids): the positions ids (1-D, 1-based) of dim, in that order
Tensor.index_select = by_ids('index_select', 'ids')

-- gather(dim, index): out[p] = x[p with dim replaced by index[p]]; index has x's ndim
Tensor.gather = by_ids('gather', 'index')

-- scatter_add(dim, index, src): a copy of x with src[p] added at p with dim replaced by index[p]
function Tensor.scatter_add(x, dim, index, src, extra)
   if extra ~= nil then too_many('scatter_add', 5, extra, 'x, dim, index, src') end
   check_tensor('scatter_add', x, 'input')
   local d = cdim('scatter_add', x, dim)
   local idx = ids_arg('scatter_add', 'index', index)
   check_tensor('scatter_add', src, 'src')
   local out = new()
   if C.fnn_scatter_add(out, x, d, idx, src) ~= 0 then fail() end
   return done(out)
end

-- masked_fill(mask, value): value where mask ~= 0 (mask broadcasts to x's shape)
function Tensor.masked_fill(x, mask, value, extra)
   if extra ~= nil then too_many('masked_fill', 4, extra, 'x, mask, value') end
   check_tensor('masked_fill', x, 'input')
   check_tensor('masked_fill', mask, 'mask')
   if type(value) ~= 'number' then
      error(('masked_fill: value is a %s, expected a number'):format(type(value)), 2)
   end
   local out = new()
   if C.fnn_masked_fill(out, x, mask, value) ~= 0 then fail() end
   return done(out)
end

return M
