-- fastnn.ops.embedding: bindings for core/ops/embedding.c.
--   fnn.embedding(ids, weight, {padding_idx}) -> [*ids, W]
--     weight [V, W]; ids 1-based, an int64 tensor, a float tensor of whole numbers, or a Lua
--     array (nested for more dims); result row k is weight row ids[k]. padding_idx (1-based,
--     negative from the end, nil for none): that row gets no gradient (PyTorch). An id outside
--     1..V is an error naming it, its position and V. Differentiable in weight.
local fnn_tensor = require 'fastnn.tensor'
local C = fnn_tensor.C
local new, done, fail, is_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local M = {}

local fnn_embedding = C.fnn_embedding

-- ids as a tensor; a Lua array becomes int64. Raises at `level` (counted from the caller of this)
local function ids_tensor(op, ids, level)
   if is_tensor(ids) then return ids end
   if type(ids) ~= 'table' then
      error(('%s: ids are a %s, expected an int64 tensor or a Lua array of ids'):format(op, type(ids)), level + 1)
   end
   local ok, t = pcall(fnn_tensor.tensor, ids, {dtype = 'int64'})
   if not ok then
      error(('%s: ids: %s'):format(op, tostring(t):gsub('^[^:\n]+:%d+: ', '')), level + 1)
   end
   return t
end
M._ids_tensor = ids_tensor

-- padding_idx (1-based, negative from the end, nil) -> the C code (1-based, 0 for none)
local function padding_code(op, padding_idx, V, level)
   if padding_idx == nil then return 0 end
   if type(padding_idx) ~= 'number' or padding_idx ~= math.floor(padding_idx) or padding_idx == 0
      or padding_idx > V or padding_idx < -V then
      error(('%s: padding_idx %s outside the vocabulary (1..%d or -%d..-1)'):format(
         op, tostring(padding_idx), V, V), level + 1)
   end
   return padding_idx < 0 and V + 1 + padding_idx or padding_idx
end
M._padding_code = padding_code

local EMBEDDING_OPTS = require('fastnn.options').declare('fnn.embedding', {
   {'padding_idx', 'integer', nil, 'the 1-based row (negative: from the end) whose gradient stays zero'},
})
function M.embedding(ids, weight, opts, extra)
   if extra ~= nil then fnn_tensor.too_many('embedding', 4, extra, 'ids, weight[, {padding_idx = ...}]') end
   if not is_tensor(weight) then
      error(('embedding: weight is a %s, expected a tensor'):format(type(weight)), 2)
   end
   if opts ~= nil and type(opts) ~= 'table' then
      error(('embedding: options must be a table like {padding_idx = 1}, got a %s'):format(type(opts)), 2)
   end
   if opts ~= nil then EMBEDDING_OPTS:check(opts, 2) end
   local t = ids_tensor('embedding', ids, 2)
   local V = weight.ndim == 2 and tonumber(weight.shape_[0]) or 0
   local pad = padding_code('embedding', opts and opts.padding_idx, V, 2)
   local out = new()
   if fnn_embedding(out, weight, t, pad) ~= 0 then fail() end
   return done(out)
end

return M
