-- fastnn.ops.pool: bindings for core/ops/pool.c. Inputs are channels first, batched or not.
--   fnn.max_pool1d(x, kernel, {stride = kernel, padding = 0, ceil_mode = false})   x [N,C,L] or [C,L]
--   fnn.max_pool2d(x, kernel, opts)   x [N,C,H,W] or [C,H,W]; kernel, stride, padding: numbers or {h, w}
--   fnn.max_pool3d(x, kernel, opts)   x [N,C,D,H,W] or [C,D,H,W]; kernel, stride, padding: numbers or {d, h, w}
--   fnn.avg_pool1d/2d/3d(x, kernel, {..., count_include_pad = true})
--   fnn.adaptive_avg_pool2d(x, size)   x [N,C,H,W] or [C,H,W]; size a number or {h, w}
--   fnn.upsample(x, {scale_factor = s | size = n, mode = 'nearest' | 'bilinear', align_corners = false})
--        s: a positive integer, or one per spatial dim; n: the output size, or one per spatial
--        dim. The spatial dims are x's dims after [N, C], or as many as the table given lists
--        (so an unbatched [C, H, W] works with {scale_factor = {2, 2}}); 'bilinear' needs 2.
-- Each is also a tensor method: x:max_pool2d(2), x:upsample{scale_factor = 2}.
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, is_tensor, shape_str = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail,
   fnn_tensor.is_tensor, fnn_tensor.shape_str
local floor = math.floor
local M = {}

local function is_int(v) return type(v) == 'number' and v == floor(v) end

local FORMS = {'an integer', 'an integer or a table {h, w}', 'an integer or a table {d, h, w}'}
local LAYOUTS = {'[N, C, L] or [C, L]', '[N, C, H, W] or [C, H, W]', '[N, C, D, H, W] or [C, D, H, W]'}
M._layouts = LAYOUTS

-- a number or a table of n integers -> a fresh table of n integers (default when nil). Errors
-- name op and what; `level` is where they land (3: the caller of the function calling tuple)
local function tuple(op, what, v, n, default, level)
   if v == nil then v = default end
   if is_int(v) then
      local t = {}
      for i = 1, n do t[i] = v end
      return t
   end
   if type(v) == 'table' and #v == n then
      local t = {}
      for i = 1, n do
         if not is_int(v[i]) then t = nil; break end
         t[i] = v[i]
      end
      if t then return t end
   end
   local got = tostring(v)
   if type(v) == 'table' then
      local parts = {}
      for i = 1, #v do parts[i] = tostring(v[i]) end
      got = #v == n and ('{' .. table.concat(parts, ', ') .. '}') or ('a table of ' .. #v .. ' values')
   end
   error(('%s: %s is %s, expected %s'):format(op, what, got, FORMS[n]), level or 3)
end
M._tuple = tuple   -- for the nn layers (not merged into fnn: leading underscore)

-- {2, 3} -> "2x3"
function M._dims_str(t) return table.concat(t, 'x') end

-- errors from these land on the user's line: 1 the helper, 2 the binding, 3 its caller
local check_tensor = fnn_tensor.check_tensor
-- an argument past an op's last is refused at the caller's line (fastnn.tensor's too_many)
local too_many = fnn_tensor.too_many

local function options(op, opts, example)
   if opts == nil then return {} end
   if type(opts) ~= 'table' then
      error(('%s: options must be a table like %s, got a %s'):format(op, example, type(opts)), 3)
   end
   return opts
end

-- ---------------------------------------------------------------------------
-- max and avg pooling over 1, 2 and 3 spatial dims

-- the C arguments after (out, x): kernel..., stride..., padding..., ceil_mode (tuple's errors:
-- 1 tuple, 2 here, 3 the binding, 4 its caller)
local function pool_args(op, x, kernel, opts, dims)
   check_tensor(op, x, 'input', 3)
   if kernel == nil then error(('%s: kernel size missing (%s)'):format(op, FORMS[dims]), 3) end
   if opts ~= nil and type(opts) ~= 'table' then
      error(('%s: options must be a table like {stride = 2}, got a %s'):format(op, type(opts)), 3)
   end
   opts = opts or {}
   local k = tuple(op, 'kernel', kernel, dims, nil, 4)
   local s = tuple(op, 'stride', opts.stride, dims, k, 4)
   local p = tuple(op, 'padding', opts.padding, dims, 0, 4)
   local args = {}
   for _, t in ipairs{k, s, p} do
      for i = 1, dims do args[#args + 1] = t[i] end
   end
   args[#args + 1] = opts.ceil_mode and 1 or 0
   return args, opts
end
M._pool_args = pool_args

local unpack = unpack
local declare = require('fastnn.options').declare
for _, spec in ipairs{{'max', 1}, {'max', 2}, {'max', 3}, {'avg', 1}, {'avg', 2}, {'avg', 3}} do
   local kind, dims = spec[1], spec[2]
   local name = ('%s_pool%dd'):format(kind, dims)
   local cfn = C['fnn_' .. name]
   local entries = {
      {'stride', 'any', nil, 'the step: an integer or one per spatial dim (checked by the op)',
       default_doc = 'the kernel'},
      {'padding', 'any', 0, 'implicit padding on both sides: an integer or one per spatial dim (checked by the op)'},
      {'ceil_mode', 'boolean', false, 'round the output size up (a last partial window)'},
   }
   if kind == 'avg' then
      entries[#entries + 1] = {'count_include_pad', 'boolean', true, 'count the padding in each average'}
   end
   local OPTS = declare('fnn.' .. name, entries)
   M[name] = function(x, kernel, opts, extra)
      if extra ~= nil then too_many(name, 4, extra, 'x, kernel[, opts]') end
      if opts ~= nil and type(opts) == 'table' then OPTS:check(opts, 2) end   -- a non-table: pool_args says so
      local args, o = pool_args(name, x, kernel, opts, dims)
      if kind == 'avg' then args[#args + 1] = (o.count_include_pad == nil or o.count_include_pad) and 1 or 0 end
      local out = new()
      if cfn(out, x, unpack(args)) ~= 0 then fail() end
      return done(out)
   end
   Tensor[name] = M[name]
end

-- ---------------------------------------------------------------------------
-- adaptive average pooling

local fnn_adaptive_avg_pool2d = C.fnn_adaptive_avg_pool2d
function M.adaptive_avg_pool2d(x, size, extra)
   if extra ~= nil then too_many('adaptive_avg_pool2d', 3, extra, 'x, size') end
   check_tensor('adaptive_avg_pool2d', x, 'input')
   if size == nil then error('adaptive_avg_pool2d: output size missing (an integer or a table {h, w})', 2) end
   local hw = tuple('adaptive_avg_pool2d', 'output size', size, 2, nil, 3)
   local out = new()
   if fnn_adaptive_avg_pool2d(out, x, hw[1], hw[2]) ~= 0 then fail() end
   return done(out)
end
Tensor.adaptive_avg_pool2d = M.adaptive_avg_pool2d

-- ---------------------------------------------------------------------------
-- upsampling

local size_buf = ffi.new('int64_t[3]')
local fnn_upsample_nearest, fnn_upsample_bilinear2d = C.fnn_upsample_nearest, C.fnn_upsample_bilinear2d

-- the resize itself: the last `dims` dims of x to `size` (a table of dims sizes), by mode
-- ('nearest' or 'bilinear', the latter with dims == 2); C's errors land on the line that called
-- resize's caller (1 resize, 2 the binding or layer, 3 its caller)
local function resize(x, dims, size, mode, align_corners)
   local out = new()
   local rc
   if mode == 'bilinear' then
      rc = fnn_upsample_bilinear2d(out, x, size[1], size[2], align_corners and 1 or 0)
   else
      for i = 1, dims do size_buf[i - 1] = size[i] end
      rc = fnn_upsample_nearest(out, x, dims, size_buf)
   end
   if rc ~= 0 then error(fnn_tensor.last_error(), 3) end
   return done(out)
end
M._resize = resize

-- x's sizes times integer factors (a table of dims) -> the output size; errors at `level`
local function scaled_size(op, x, dims, factors, level)
   local size = {}
   for i = 1, dims do
      if not is_int(factors[i]) or factors[i] < 1 then
         error(('%s: scale factor %s must be a positive integer (give size for other ratios)'):format(
               op, tostring(factors[i])), level + 1)
      end
      size[i] = tonumber(x.shape_[x.ndim - dims + i - 1]) * factors[i]
   end
   return size
end
M._scaled_size = scaled_size

local UPSAMPLE_OPTS = declare('fnn.upsample', {
   {'size', 'any', nil, 'the output size: an integer or one per spatial dim (or give scale_factor)'},
   {'scale_factor', 'any', nil, 'a whole factor, or one per spatial dim (or give size)'},
   {'mode', 'string', 'nearest', "how new pixels are made: 'nearest' or 'bilinear' (2 spatial dims)"},
   {'align_corners', 'boolean', nil, "bilinear only: the corner pixels' centres map onto each other"},
})
function M.upsample(x, opts, extra)
   local op = 'upsample'
   if extra ~= nil then too_many(op, 3, extra, 'x, {size = ... or scale_factor = ...}') end
   check_tensor(op, x, 'input')
   if type(opts) ~= 'table' then
      error(('%s: options must be a table like {scale_factor = 2} or {size = {h, w}}, got a %s'):format(
            op, type(opts)), 2)
   end
   UPSAMPLE_OPTS:check(opts, 2)
   local mode = opts.mode or 'nearest'
   if mode ~= 'nearest' and mode ~= 'bilinear' then
      error(("%s: mode '%s' is not one of 'nearest', 'bilinear'"):format(op, tostring(mode)), 2)
   end
   if opts.align_corners ~= nil and mode ~= 'bilinear' then
      error(("%s: align_corners applies to mode 'bilinear' only"):format(op), 2)
   end
   local spec = opts.size or opts.scale_factor
   if (opts.size == nil) == (opts.scale_factor == nil) then
      error(('%s: give exactly one of size and scale_factor'):format(op), 2)
   end
   local dims = type(spec) == 'table' and #spec or x.ndim - 2
   if mode == 'bilinear' and dims ~= 2 then
      error(("%s: mode 'bilinear' needs 2 spatial dims, got input %s with %d (%s)"):format(
            op, shape_str(x), dims, LAYOUTS[2]), 2)
   end
   if dims < 1 or dims > 3 then
      error(('%s: input %s has %d dims, expected [N, C, ...] with 1 to 3 spatial dims (or size/scale_factor '
             .. 'as a table, one entry per spatial dim)'):format(op, shape_str(x), x.ndim), 2)
   end
   if x.ndim ~= dims + 1 and x.ndim ~= dims + 2 then
      error(('%s: input %s must be %s for %d spatial dims'):format(op, shape_str(x), LAYOUTS[dims], dims), 2)
   end
   local size
   if opts.size ~= nil then
      size = tuple(op, 'size', spec, dims, nil, 3)
   else   -- numbers, checked to be whole by scaled_size
      local t = spec
      if type(spec) == 'number' then t = {} for i = 1, dims do t[i] = spec end end
      size = scaled_size(op, x, dims, t, 2)
   end
   local y = resize(x, dims, size, mode, opts.align_corners)   -- not a tail call: keeps the level
   return y
end
Tensor.upsample = M.upsample

return M
