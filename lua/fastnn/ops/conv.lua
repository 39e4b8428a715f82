-- fastnn.ops.conv: bindings for core/ops/conv.c. Images are [N,C,H,W] (or [C,H,W]).
--   fnn.conv2d(x, w, b, {stride = 1, padding = 0, dilation = 1, groups = 1})
--        w [out, in/groups, kh, kw], b [out] or nil -> [N,out,Ho,Wo]; stride, padding and
--        dilation are numbers or {h, w}; padding may also be 'valid' (0) or 'same' (stride 1;
--        an odd total pad puts the extra row/column at the bottom/right, as PyTorch)
--   fnn.max_pool2d(x, kernel, {stride = kernel, padding = 0, ceil_mode = false})
--   fnn.avg_pool2d(x, kernel, {stride = kernel, padding = 0, ceil_mode = false, count_include_pad = true})
-- Each is also a tensor method: x:conv2d(w, b, opts), x:max_pool2d(2).
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, is_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local floor = math.floor
local M = {}

-- errors from these helpers land on the user's line: 1 the helper, 2 the binding, 3 its caller
local function check_tensor(op, t, what)
   if not is_tensor(t) then error(('%s: %s is a %s, expected a tensor'):format(op, what, type(t)), 3) end
end

local function is_int(v) return type(v) == 'number' and v == floor(v) end

-- a number or {h, w} -> h, w (default when nil); level 3 is the binding's caller, 4 when called
-- through pool_args
local function pair(op, what, v, default, level)
   if v == nil then v = default end
   if is_int(v) then return v, v end
   if type(v) == 'table' and #v == 2 and is_int(v[1]) and is_int(v[2]) then return v[1], v[2] end
   error(('%s: %s is %s, expected an integer or a table {h, w}'):format(op, what,
         type(v) == 'table' and ('a table of ' .. #v .. ' values') or tostring(v)), level or 3)
end

M._pair = pair   -- for the nn layers (not merged into fnn: leading underscore)

local function options(op, opts)
   if opts == nil then return {} end
   if type(opts) ~= 'table' then
      error(('%s: options must be a table like {stride = 2}, got a %s'):format(op, type(opts)), 3)
   end
   return opts
end

local fnn_conv2d = C.fnn_conv2d
function M.conv2d(x, w, b, opts)
   check_tensor('conv2d', x, 'input')
   check_tensor('conv2d', w, 'weight')
   if b ~= nil then check_tensor('conv2d', b, 'bias') end
   opts = options('conv2d', opts)
   local sh, sw = pair('conv2d', 'stride', opts.stride, 1)
   local dh, dw = pair('conv2d', 'dilation', opts.dilation, 1)
   local groups = opts.groups or 1
   if not is_int(groups) then error(('conv2d: groups is %s, expected an integer'):format(tostring(groups)), 2) end
   local ph, pw
   local padding = opts.padding
   if padding == 'valid' then
      ph, pw = 0, 0
   elseif padding == 'same' then
      if sh ~= 1 or sw ~= 1 then
         error(("conv2d: padding 'same' needs stride 1, got %dx%d"):format(sh, sw), 2)
      end
      if w.ndim ~= 4 then
         error(('conv2d: weight %s must be 4-D [out, in/groups, kh, kw]'):format(fnn_tensor.shape_str(w)), 2)
      end
      -- total pad d (k - 1) per dim: half on each side, the odd one at the bottom/right
      local th, tw = dh * (tonumber(w.shape_[2]) - 1), dw * (tonumber(w.shape_[3]) - 1)
      ph, pw = floor(th / 2), floor(tw / 2)
      if th % 2 == 1 or tw % 2 == 1 then x = x:pad{0, tw % 2, 0, th % 2} end
   else
      ph, pw = pair('conv2d', 'padding', padding, 0)
   end
   local out = new()
   if fnn_conv2d(out, x, w, b, sh, sw, ph, pw, dh, dw, groups) ~= 0 then fail() end
   return done(out)
end
Tensor.conv2d = M.conv2d

-- the shared options of the pools -> kh, kw, sh, sw, ph, pw, ceil_mode
local function pool_args(op, x, kernel, opts)
   if not is_tensor(x) then error(('%s: input is a %s, expected a tensor'):format(op, type(x)), 3) end
   if kernel == nil then error(('%s: kernel size missing (a number or {h, w})'):format(op), 3) end
   opts = options(op, opts)
   local kh, kw = pair(op, 'kernel', kernel, nil, 4)
   local sh, sw = pair(op, 'stride', opts.stride, {kh, kw}, 4)
   local ph, pw = pair(op, 'padding', opts.padding, 0, 4)
   return kh, kw, sh, sw, ph, pw, opts.ceil_mode and 1 or 0, opts
end

local fnn_max_pool2d = C.fnn_max_pool2d
function M.max_pool2d(x, kernel, opts)
   local kh, kw, sh, sw, ph, pw, ceil = pool_args('max_pool2d', x, kernel, opts)
   local out = new()
   if fnn_max_pool2d(out, x, kh, kw, sh, sw, ph, pw, ceil) ~= 0 then fail() end
   return done(out)
end
Tensor.max_pool2d = M.max_pool2d

local fnn_avg_pool2d = C.fnn_avg_pool2d
function M.avg_pool2d(x, kernel, opts)
   local kh, kw, sh, sw, ph, pw, ceil, o = pool_args('avg_pool2d', x, kernel, opts)
   local include = o.count_include_pad == nil or o.count_include_pad
   local out = new()
   if fnn_avg_pool2d(out, x, kh, kw, sh, sw, ph, pw, ceil, include and 1 or 0) ~= 0 then fail() end
   return done(out)
end
Tensor.avg_pool2d = M.avg_pool2d

return M
