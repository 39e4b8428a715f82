-- fastnn.ops.conv: bindings for core/ops/conv.c. Channels first: [N,C,L], [N,C,H,W], [N,C,D,H,W]
-- (or unbatched, without N).
--   fnn.conv1d/conv2d/conv3d(x, w, b, {stride = 1, padding = 0, dilation = 1, groups = 1, activation = nil})
--        w [out, in/groups, k...], b [out] or nil. stride and dilation are numbers or one per dim;
--        padding is a number, one per dim (each a number or {before, after}), 'valid' (0),
--        'same' (stride 1: PyTorch's, total pad d(k-1) with the odd one at the end; stride > 1:
--        TensorFlow's, output ceil(in / stride), the extra pad at the end) or, for conv1d,
--        'causal' (d(k-1) before, none after: output length = input length); activation 'relu'
--        gives relu(conv + b) from one node (the CPU's oneDNN kernels apply it inside: no pass between)
--   fnn.conv_transpose1d/2d/3d(x, w, b, {stride, padding, output_padding = 0, dilation, groups})
--        w [in, out/groups, k...], b [out]; out = (in-1) s - 2p + d(k-1) + output_padding + 1
--        (PyTorch's); output_padding must be smaller than the stride or the dilation; padding
--        'same' gives in * stride (Keras)
-- Each is also a tensor method: x:conv1d(w, b, opts). (The pools are in fastnn.ops.pool.)
-- x, w and b may be bfloat16 on the CPU: core/ops/conv.c widens them, and the output is bfloat16 inside
-- fnn.autocast or when every float input is bfloat16 (fastnn.precision's rule, made in C: no cast nodes)
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, is_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local floor = math.floor
local M = {}

-- errors from these helpers land on the user's line: 1 the helper, 2 the binding, 3 its caller
local check_tensor = fnn_tensor.check_tensor
-- an argument past an op's last is refused at the caller's line (fastnn.tensor's too_many)
local too_many = fnn_tensor.too_many

local function is_int(v) return type(v) == 'number' and v == floor(v) end

-- ---------------------------------------------------------------------------
-- convolutions: options parsed into a spec once (the layers keep theirs), then run per call

local ffi = require 'ffi'
local ffi_string = ffi.string
local fnn_conv, fnn_conv_act, fnn_conv_transpose = C.fnn_conv_to, C.fnn_conv_act_to, C.fnn_conv_transpose_to
local max, ceil = math.max, math.ceil
local stride_buf, pad_buf, opad_buf, dil_buf = ffi.new('int[3]'), ffi.new('int[6]'), ffi.new('int[3]'),
   ffi.new('int[3]')
local TUPLE = {'{l}', '{h, w}', '{d, h, w}'}
local pads64_buf = ffi.new('int64_t[6]')              -- a padding_mode's widths, F.pad order
local PAD_KIND = {reflect = 1, replicate = 2, circular = 3}   -- core's fnn_pad_kind

-- an integer (every dim) or a table of nd integers -> a Lua array of nd integers. In these helpers
-- `level` is the user's level as seen from the helper's caller (what it would pass to error)
local function tuple(op, what, v, default, nd, level)
   if v == nil then v = default end
   local t = {}
   if is_int(v) then
      for i = 1, nd do t[i] = v end
      return t
   end
   if type(v) == 'table' and #v == nd then
      local ok = true
      for i = 1, nd do
         t[i] = v[i]
         ok = ok and is_int(v[i])
      end
      if ok then return t end
   end
   error(('%s: %s is %s, expected an integer or a table %s'):format(op, what,
         type(v) == 'table' and ('a table of ' .. #v .. ' values') or show_value(v), TUPLE[nd]), level + 1)
end
M._tuple = tuple

-- padding -> {lo = {...}, hi = {...}} (before and after each dim), or 'same' / 'causal', which
-- depend on the kernel (and 'same' with a stride on the input) and are resolved per call
local function padding_of(op, nd, transposed, v, level)
   if v == nil or v == 'valid' then v = 0 end
   if v == 'same' then return 'same' end
   if v == 'causal' then
      if nd ~= 1 or transposed then
         error(("%s: padding 'causal' is only for 1-d convolutions"):format(op), level + 1)
      end
      return 'causal'
   end
   local lo, hi = {}, {}
   if is_int(v) then
      for i = 1, nd do lo[i], hi[i] = v, v end
      return {lo = lo, hi = hi}
   end
   if type(v) == 'table' and #v == nd then
      local ok = true
      for i = 1, nd do
         local p = v[i]
         if is_int(p) then lo[i], hi[i] = p, p
         elseif type(p) == 'table' and #p == 2 and is_int(p[1]) and is_int(p[2]) then lo[i], hi[i] = p[1], p[2]
         else ok = false end
      end
      if ok then return {lo = lo, hi = hi} end
   end
   local got = type(v) == 'string' and ("'" .. v .. "'")
      or type(v) == 'table' and ('a table of ' .. #v .. ' values') or tostring(v)
   error(("%s: padding is %s, expected an integer, a table %s (an entry may be {before, after}), 'valid', 'same'%s")
         :format(op, got, TUPLE[nd], (nd == 1 and not transposed) and " or 'causal'" or ''), level + 1)
end

-- the options of a convolution -> its spec {op, nd, transposed, stride, dil, pad, opad, groups, act}
local function parse(op, nd, transposed, opts, level)
   if opts == nil then opts = {} end
   if type(opts) ~= 'table' then
      error(('%s: options must be a table like {stride = 2}, got a %s'):format(op, type(opts)), level + 1)
   end
   local groups = opts.groups or 1
   if not is_int(groups) then
      error(('%s: groups is %s, expected an integer'):format(op, show_value(groups)), level + 1)
   end
   local s = {op = op, nd = nd, transposed = transposed, groups = groups,
              stride = tuple(op, 'stride', opts.stride, 1, nd, level + 1),
              dil = tuple(op, 'dilation', opts.dilation, 1, nd, level + 1),
              pad = padding_of(op, nd, transposed, opts.padding, level + 1),
              opad = transposed and tuple(op, 'output_padding', opts.output_padding, 0, nd, level + 1) or {0, 0, 0}}
   local act = rawget(opts, 'activation')   -- raw: a layer that does not declare it (transposed, depthwise) has none
   if act ~= nil and act ~= 'none' then
      if transposed or act ~= 'relu' then
         error(("%s: activation %s is not 'relu' or 'none'%s"):format(op, show_value(act),
               transposed and ' (a transposed convolution takes none)' or ''), level + 1)
      end
      s.act = act
   end
   if transposed and s.pad == 'same' then
      for i = 1, nd do
         if s.opad[i] ~= 0 then
            error(("%s: output_padding cannot be combined with padding 'same' (the output is input * stride)")
                  :format(op), level + 1)
         end
      end
   end
   return s
end
M._parse = parse

-- y = the convolution of spec s on x, w, b. label (a layer's, or nil) replaces the op's name in a
-- message. dtype: the output's dtype code (0 float32, 3 bfloat16: the layers'), or nil for the C
-- op's rule (bfloat16 under autocast or from every float input bfloat16, as fastnn.precision's)
local function run(s, x, w, b, label, level, dtype)
   local nd, pad = s.nd, s.pad
   for i = 1, nd do
      stride_buf[i - 1], dil_buf[i - 1], opad_buf[i - 1] = s.stride[i], s.dil[i], s.opad[i]
   end
   if type(pad) == 'table' then
      for i = 1, nd do pad_buf[2 * i - 2], pad_buf[2 * i - 1] = pad.lo[i], pad.hi[i] end
   else
      -- 'same' / 'causal' from the kernel (a weight of the wrong rank is left to the core to refuse)
      local xnd = x.ndim
      for i = 1, nd do
         local k = w.ndim == nd + 2 and tonumber(w.shape_[1 + i]) or 1
         local st, ext = s.stride[i], s.dil[i] * (k - 1) + 1
         local total
         if pad == 'causal' then
            pad_buf[0], pad_buf[1] = ext - 1, 0
         else
            if s.transposed then   -- Keras: the output is input * stride
               total = max(ext - st, 0)
               opad_buf[i - 1] = max(st - ext, 0)
            else   -- stride 1: PyTorch's total d (k - 1); stride > 1: TensorFlow's, output ceil(in / stride)
               local n = xnd >= nd + 1 and tonumber(x.shape_[xnd - nd + i - 1]) or 1
               total = max((ceil(n / st) - 1) * st + ext - n, 0)
            end
            pad_buf[2 * i - 2] = floor(total / 2)        -- the odd one goes at the end
            pad_buf[2 * i - 1] = total - floor(total / 2)
         end
      end
   end
   local padded
   if s.mode then   -- PyTorch's _conv_forward: F.pad(x, widths, mode), then a convolution with padding 0
      -- core/ops/shape.c's pad_mode rows move 4- and 8-byte elements only: a bfloat16 x is widened
      -- first (exact; the convolution's output dtype is the same either way)
      if x.dtype_ == 3 then x = x:float() end
      local xnd, widths = x.ndim, {}
      for i = nd, 1, -1 do
         widths[#widths + 1], widths[#widths + 2] = tonumber(pad_buf[2 * i - 2]), tonumber(pad_buf[2 * i - 1])
         pad_buf[2 * i - 2], pad_buf[2 * i - 1] = 0, 0
      end
      if xnd < nd then widths = {} end   -- a wrong rank: left to the convolution to refuse
      for i = 1, #widths do pads64_buf[i - 1] = widths[i] end
      padded = new()
      if C.fnn_pad_mode(padded, x, #widths / 2, pads64_buf, PAD_KIND[s.mode]) ~= 0 then
         local msg = ffi_string(C.fnn_last_error())
         error((label or s.op) .. ': ' .. msg, level + 1)
      end
      x = done(padded)
   end
   local out = new()
   local rc
   dtype = dtype or -1
   if s.transposed then
      rc = fnn_conv_transpose(out, x, w, b, nd, stride_buf, pad_buf, opad_buf, dil_buf, s.groups, dtype)
   elseif s.act then rc = fnn_conv_act(out, x, w, b, nd, stride_buf, pad_buf, dil_buf, s.groups, s.act, dtype)
   else rc = fnn_conv(out, x, w, b, nd, stride_buf, pad_buf, dil_buf, s.groups, dtype) end
   if rc ~= 0 then
      local msg = ffi_string(C.fnn_last_error())
      if label then msg = label .. ': ' .. msg:gsub('^[%w_]+: ', '', 1) end
      error(msg, level + 1)
   end
   return done(out)
end
M._run = run

-- the functional convolutions' options (the layers declare theirs): their values are checked by
-- parse, which the layers share (its messages name the dims), so here only an unknown key is refused
local function conv_options(op, transposed)
   local entries = {
      {'stride', 'any', 1, 'the step: an integer or one per spatial dim'},
      {'padding', 'any', 0, "zeros around the input: an integer, one per spatial dim (an entry may "
       .. "be {before, after}), 'valid' (0), 'same'" .. (transposed and '' or ", or 'causal' (1-d)")},
      {'dilation', 'any', 1, 'the spacing of the kernel taps: an integer or one per spatial dim'},
      {'groups', 'any', 1, 'an integer: input and output channels split into this many independent groups'},
   }
   if transposed then
      entries[#entries + 1] = {'output_padding', 'any', 0, 'added to one side of each output size: an integer or one '
                               .. 'per spatial dim'}
   end
   if not transposed then
      entries[#entries + 1] = {'activation', 'string', nil, "'relu': y = relu(conv + b) in the same node, no tensor "
                               .. "between (Keras' Conv2D(activation = 'relu')); nil or 'none': none", values = {'relu', 'none'}}
   end
   return require('fastnn.options').declare('fnn.' .. op, entries)
end

-- fnn.<op>(x, w, b, opts): errors at the caller's line (1 the helper, 2 the binding, 3 the caller)
local function binding(op, nd, transposed)
   local OPTS = conv_options(op, transposed)
   return function(x, w, b, opts, extra)
      if extra ~= nil then too_many(op, 5, extra, 'x, weight[, bias[, opts]]') end
      check_tensor(op, x, 'input')
      check_tensor(op, w, 'weight')
      if b ~= nil then check_tensor(op, b, 'bias') end
      if opts ~= nil and type(opts) == 'table' then OPTS:check(opts, 2) end   -- a non-table: parse says so
      local s = parse(op, nd, transposed, opts, 2)
      local out = run(s, x, w, b, nil, 2)
      return out
   end
end

for nd = 1, 3 do
   local name, tname = 'conv' .. nd .. 'd', 'conv_transpose' .. nd .. 'd'
   M[name], M[tname] = binding(name, nd, false), binding(tname, nd, true)
   Tensor[name], Tensor[tname] = M[name], M[tname]
end

return M
