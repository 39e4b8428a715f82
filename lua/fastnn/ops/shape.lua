-- fastnn.ops.shape: bindings for core/ops/shape.c (contiguous, cat, stack, repeat/tile, pad, tril/triu;
-- the views are fastnn.ops.view's). Dims and positions are 1-based (negative counts from the end) and
-- converted once here; sizes come as a table or varargs.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, cdim, parse_shape_at = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.cdim,
   fnn_tensor.parse_shape_at
local is_tensor = fnn_tensor.is_tensor
-- an argument past an op's last is refused at the caller's line (fastnn.tensor's too_many)
local too_many = fnn_tensor.too_many
local M = {}

local pads_buf = ffi.new('int64_t[16]')

local int_arg, check_tensor = fnn_tensor.int_arg, fnn_tensor.check_tensor

-- contiguous(): the same values in row-major order (x itself when already so)
function Tensor.contiguous(x, extra)
   if extra ~= nil then too_many('contiguous', 2, extra, 'x') end
   check_tensor('contiguous', x)
   local out = new()
   if C.fnn_contiguous(out, x) ~= 0 then fail() end
   return done(out)
end

-- a Lua array of tensors as a C array (the list keeps them alive during the call)
local function tensor_array(op, list)
   if type(list) ~= 'table' or #list == 0 then
      error(('%s: expected a non-empty list of tensors, got %s'):format(op, type(list) == 'table' and 'an empty table'
         or ('a ' .. type(list))), 3)
   end
   local arr = ffi.new('const fnn_tensor *[?]', #list)
   for i = 1, #list do
      if not is_tensor(list[i]) then
         error(('%s: element %d of the list is a %s, expected a tensor'):format(op, i, type(list[i])), 3)
      end
      arr[i - 1] = list[i]
   end
   return arr, #list
end

-- fnn.cat(list, dim = 1): tensors equal outside dim, joined along it
function M.cat(list, dim, extra)
   if extra ~= nil then too_many('cat', 3, extra, '{tensors}[, dim]') end
   local arr, n = tensor_array('cat', list)
   local d = cdim('cat', list[1], dim or 1)
   local out = new()
   if C.fnn_cat(out, n, arr, d) ~= 0 then fail() end
   return done(out)
end

-- fnn.stack(list, dim = 1): tensors of one shape, joined along a new dim
function M.stack(list, dim, extra)
   if extra ~= nil then too_many('stack', 3, extra, '{tensors}[, dim]') end
   local arr, n = tensor_array('stack', list)
   local d = cdim('stack', list[1], dim or 1, 1)
   local out = new()
   if C.fnn_stack(out, n, arr, d) ~= 0 then fail() end
   return done(out)
end

-- x['repeat'](x, sizes) (Torch semantics: one count per dim, extra counts add leading dims)
Tensor['repeat'] = function(x, ...)
   local n, counts = parse_shape_at('repeat', false, 2, ...)   -- after a counts table nothing more
   local out = new()
   if C.fnn_repeat(out, x, n, counts) ~= 0 then fail() end
   return done(out)
end

-- tile(sizes): repeat, where fewer counts than dims repeat only the last dims (NumPy's tile)
function Tensor.tile(x, ...)
   check_tensor('tile', x)
   local n, counts = parse_shape_at('tile', false, 2, ...)
   local lead = x.ndim - n
   if lead > 0 then
      for i = n - 1, 0, -1 do counts[i + lead] = counts[i] end
      for i = 0, lead - 1 do counts[i] = 1 end
      n = x.ndim
   end
   local out = new()
   if C.fnn_repeat(out, x, n, counts) ~= 0 then fail() end
   return done(out)
end

-- pad({left, right, top, bottom, ...}, value = 0): pairs for the last dim first (F.pad); negative crops.
-- pad(pads, {mode = 'reflect'|'replicate'|'circular'|'constant', value = 0}): F.pad's modes; the
-- non-constant ones read the new places from x (core/ops/shape.c's fnn_pad_mode)
local PAD_OPTS = require('fastnn.options').declare('Tensor.pad', {
   {'mode', 'string', 'constant', "how the new places are filled: 'constant' (value), 'reflect' (mirrored about the "
    .. "edge element; width < the dim's size), 'replicate' (the edge element), 'circular' (wrapped; width <= the "
    .. "dim's size); the last three take widths >= 0 and no value",
    values = {'constant', 'reflect', 'replicate', 'circular'}},
   {'value', 'number', nil, "the fill of mode 'constant' (default 0)"},
})
local PAD_KIND = {constant = 0, reflect = 1, replicate = 2, circular = 3}
function Tensor.pad(x, pads, value, extra)
   if extra ~= nil then too_many('pad', 4, extra, 'x, pads[, value or {mode = ..., value = ...}]') end
   check_tensor('pad', x)
   if type(pads) ~= 'table' or #pads % 2 ~= 0 or #pads > 16 then
      error(('pad: expected a table of (before, after) pairs, got %s'):format(
         type(pads) == 'table' and (#pads .. ' widths') or ('a ' .. type(pads))), 2)
   end
   for i = 1, #pads do pads_buf[i - 1] = int_arg('pad', 'width ' .. i, pads[i]) end
   local mode = 'constant'
   if type(value) == 'table' then
      local o = PAD_OPTS:check(value, 2)
      mode, value = o.mode, o.value
      if mode ~= 'constant' and value ~= nil then
         error(("pad: mode '%s' takes no value (got %s): only 'constant' fills with one"):format(mode, show_value(value)), 2)
      end
   elseif value ~= nil and type(value) ~= 'number' then
      error(('pad: value is a %s, expected a number or an options table {mode = ..., value = ...}'):format(type(value)), 2)
   end
   local out = new()
   local rc
   if mode == 'constant' then rc = C.fnn_pad(out, x, #pads / 2, pads_buf, value or 0)
   else rc = C.fnn_pad_mode(out, x, #pads / 2, pads_buf, PAD_KIND[mode]) end
   if rc ~= 0 then fail() end
   return done(out)
end

-- tril(k = 0) / triu(k = 0): keep on and below / above diagonal k of the last two dims
for _, name in ipairs{'tril', 'triu'} do
   local cfn = C['fnn_' .. name]
   Tensor[name] = function(x, k, extra)
      if extra ~= nil then too_many(name, 3, extra, 'x[, diagonal]') end
      if k ~= nil then int_arg(name, 'diagonal', k) end
      local out = new()
      if cfn(out, x, k or 0) ~= 0 then fail() end
      return done(out)
   end
end

return M
