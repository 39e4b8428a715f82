-- fastnn.ops.view: bindings for core/ops/view.c, the views (reshape, view, expand, permute, transpose,
-- narrow, select, squeeze, unsqueeze, flatten: new headers over x's storage, no kernel), plus t() and
-- split/chunk (Lua compositions of narrow). Dims and positions are 1-based (negative counts from the
-- end) and converted once here; sizes come as a table or varargs.
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, cdim, parse_shape_at = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.cdim,
   fnn_tensor.parse_shape_at
local shape_str, int_arg, check_tensor = fnn_tensor.shape_str, fnn_tensor.int_arg, fnn_tensor.check_tensor
-- an argument past an op's last is refused at the caller's line (fastnn.tensor's too_many, rest)
local too_many, rest = fnn_tensor.too_many, fnn_tensor.rest
local M = {}

local dims_buf = ffi.new('int[8]')

-- x:name(sizes) / x:name{sizes} through fnn_<name>(out, x, n, shape)
local function to_shape(name)
   local cfn = C['fnn_' .. name]
   return function(x, ...)
      check_tensor(name, x)
      local n, shape = parse_shape_at(name, true, 2, ...)   -- after a sizes table nothing more
      local out = new()
      if cfn(out, x, n, shape) ~= 0 then fail() end
      return done(out)
   end
end

-- reshape{3, -1} / reshape(3, -1): one -1 inferred; a view when the layout allows, else a copy
Tensor.reshape = to_shape('reshape')

-- view: as reshape, but refuses when a copy would be needed
Tensor.view = to_shape('view')

-- expand: size-1 dims (and new leading dims) repeat without copying; -1 keeps a size
Tensor.expand = to_shape('expand')

-- permute{2, 1, 3} / permute(2, 1, 3): output dim i is input dim dims[i]
function Tensor.permute(x, first, ...)
   check_tensor('permute', x)
   if type(first) == 'table' then rest('permute', 3, 'x, dims as numbers or one table', ...) end
   local list = type(first) == 'table' and first or {first, ...}
   local n = type(first) == 'table' and #first or select('#', first, ...)
   if n > 8 then error(('permute: %d dims, at most 8 supported'):format(n), 2) end
   for i = 1, n do dims_buf[i - 1] = cdim('permute', x, list[i]) end
   local out = new()
   if C.fnn_permute(out, x, n, dims_buf) ~= 0 then fail() end
   return done(out)
end

-- transpose(d1, d2): swaps two dims (a view)
function Tensor.transpose(x, d1, d2, extra)
   if extra ~= nil then too_many('transpose', 4, extra, 'x, dim1, dim2') end
   check_tensor('transpose', x)
   local a, b = cdim('transpose', x, d1), cdim('transpose', x, d2)
   local out = new()
   if C.fnn_transpose(out, x, a, b) ~= 0 then fail() end
   return done(out)
end

-- t(): the 2-D transpose; a 0-D or 1-D tensor comes back unchanged
function Tensor.t(x, extra)
   if extra ~= nil then too_many('t', 2, extra, 'x') end
   check_tensor('t', x)
   if x.ndim < 2 then return x end
   if x.ndim > 2 then
      error(('t: expects a 1-D or 2-D tensor, got %s; use transpose(d1, d2)'):format(shape_str(x)), 2)
   end
   local out = new()
   if C.fnn_transpose(out, x, 0, 1) ~= 0 then fail() end
   return done(out)
end

-- narrow(dim, start, length): positions start .. start+length-1 of dim (start 1-based; negative from the end)
function Tensor.narrow(x, dim, start, length, extra)
   if extra ~= nil then too_many('narrow', 5, extra, 'x, dim, start, length') end
   check_tensor('narrow', x)
   local d = cdim('narrow', x, dim)
   int_arg('narrow', 'start', start)
   int_arg('narrow', 'length', length)
   local s = start > 0 and start - 1 or (start < 0 and start + tonumber(x.shape_[d]) or -1)
   local out = new()
   if C.fnn_narrow(out, x, d, s, length) ~= 0 then fail() end
   return done(out)
end

-- select(dim, index): position index of dim (1-based; negative from the end); the dim is dropped
function Tensor.select(x, dim, index, extra)
   if extra ~= nil then too_many('select', 4, extra, 'x, dim, index') end
   check_tensor('select', x)
   local d = cdim('select', x, dim)
   int_arg('select', 'index', index)
   if index == 0 then
      error(('select: index 0 out of range for dim %d of %s (positions 1..%d)'):format(
         d + 1, shape_str(x), tonumber(x.shape_[d])), 2)
   end
   local out = new()
   if C.fnn_select(out, x, d, index > 0 and index - 1 or index) ~= 0 then fail() end
   return done(out)
end

-- squeeze(): drops every size-1 dim; squeeze(dim): only that one (a dim of another size stays)
function Tensor.squeeze(x, dim, extra)
   if extra ~= nil then too_many('squeeze', 3, extra, 'x[, dim]') end
   check_tensor('squeeze', x)
   local d = dim == nil and -1 or cdim('squeeze', x, dim)
   local out = new()
   if C.fnn_squeeze(out, x, d) ~= 0 then fail() end
   return done(out)
end

-- unsqueeze(dim): a new size-1 dim at dim (1..ndim+1, or negative)
function Tensor.unsqueeze(x, dim, extra)
   if extra ~= nil then too_many('unsqueeze', 3, extra, 'x, dim') end
   check_tensor('unsqueeze', x)
   local d = cdim('unsqueeze', x, dim, 1)
   local out = new()
   if C.fnn_unsqueeze(out, x, d) ~= 0 then fail() end
   return done(out)
end

-- flatten([start = 1[, end = -1]]): dims start..end become one
function Tensor.flatten(x, s, e, extra)
   if extra ~= nil then too_many('flatten', 4, extra, 'x[, start_dim[, end_dim]]') end
   check_tensor('flatten', x)
   local a, b = 0, 0
   if x.ndim > 0 then a, b = cdim('flatten', x, s or 1), cdim('flatten', x, e or -1) end
   local out = new()
   if C.fnn_flatten(out, x, a, b) ~= 0 then fail() end
   return done(out)
end

-- split(size, dim = 1): a Lua array of views of `size` along dim (the last may be shorter);
-- split({s1, s2, ...}, dim): views of exactly those sizes
function Tensor.split(x, size, dim, extra)
   if extra ~= nil then too_many('split', 4, extra, 'x, size[, dim]') end
   check_tensor('split', x)
   local d = cdim('split', x, dim or 1)
   local total = tonumber(x.shape_[d])
   local sizes = {}
   if type(size) == 'table' then
      local sum = 0
      for i = 1, #size do sizes[i] = int_arg('split', 'size ' .. i, size[i]); sum = sum + size[i] end
      if sum ~= total then
         error(('split: sizes %s add up to %d, but dim %d of %s has %d'):format(
            fnn_tensor.dims_str(size), sum, d + 1, shape_str(x), total), 2)
      end
   else
      int_arg('split', 'size', size)
      if size < 1 then error(('split: size must be >= 1, got %d'):format(size), 2) end
      local at = 0
      repeat
         sizes[#sizes + 1] = math.min(size, total - at)
         at = at + size
      until at >= total
   end
   local parts, at = {}, 0
   for i = 1, #sizes do
      local out = new()
      if C.fnn_narrow(out, x, d, at, sizes[i]) ~= 0 then fail() end
      parts[i] = done(out)
      at = at + sizes[i]
   end
   return parts
end

-- chunk(n, dim = 1): at most n views of ceil(size / n) along dim (PyTorch's rule)
function Tensor.chunk(x, n, dim, extra)
   if extra ~= nil then too_many('chunk', 4, extra, 'x, count[, dim]') end
   check_tensor('chunk', x)
   int_arg('chunk', 'count', n)
   if n < 1 then error(('chunk: count must be >= 1, got %d'):format(n), 2) end
   local d = cdim('chunk', x, dim or 1)
   local total = tonumber(x.shape_[d])
   local size = math.max(1, math.ceil(total / n))
   local parts, at = {}, 0
   repeat
      local len = math.min(size, total - at)
      local out = new()
      if C.fnn_narrow(out, x, d, at, len) ~= 0 then fail() end
      parts[#parts + 1] = done(out)
      at = at + size
   until at >= total
   return parts
end

return M
