-- nn.Conv2d(in, out, kernel, {stride = 1, padding = 0, dilation = 1, groups = 1, bias = true}):
-- 2-D convolution over [N, in, H, W] (or [in, H, W]) -> [N, out, Ho, Wo].
-- kernel, stride, padding and dilation are numbers or {h, w}; padding may also be 'valid' or
-- 'same' (stride 1; an odd total pad goes to the bottom/right, as PyTorch).
-- weight Param [out, in/groups, kh, kw], bias Param [out]; both drawn from U(-1/sqrt(fan_in),
-- 1/sqrt(fan_in)) with fan_in = in/groups * kh * kw (PyTorch's default init).
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local C = fnn_tensor.C
local new, done, fail, istype, parse_shape = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail,
   fnn_tensor.is_tensor, fnn_tensor.parse_shape
local pair = require('fastnn.ops.conv')._pair
local fnn_conv2d = C.fnn_conv2d
local Param = nn.Param
local floor = math.floor

local Conv2d = nn.Module:extend('Conv2d')

local function uniform(shape, bound)
   local n, buf = parse_shape('Conv2d', false, shape)
   local out = new()
   if C.fnn_uniform(out, n, buf, -bound, bound) ~= 0 then fail() end
   return done(out)
end

-- errors from here land on the line that called nn.Conv2d(...): 1 here, 2 __init, 3 __call, 4 the user
local function check_positive(what, v)
   if type(v) ~= 'number' or v < 1 or v ~= floor(v) then
      error(('nn.Conv2d: %s is %s, expected a positive integer (Conv2d(in, out, kernel, {...}))'):format(
         what, tostring(v)), 4)
   end
end

function Conv2d:__init(inputs, outputs, kernel, opts)
   check_positive('in', inputs)
   check_positive('out', outputs)
   if opts ~= nil and type(opts) ~= 'table' then
      error(('nn.Conv2d: options must be a table like {padding = 1}, got a %s'):format(type(opts)), 3)
   end
   opts = opts or {}
   local kh, kw = pair('nn.Conv2d', 'kernel', kernel, nil, 4)
   check_positive('kernel height', kh); check_positive('kernel width', kw)
   local sh, sw = pair('nn.Conv2d', 'stride', opts.stride, 1, 4)
   local dh, dw = pair('nn.Conv2d', 'dilation', opts.dilation, 1, 4)
   check_positive('stride', math.min(sh, sw)); check_positive('dilation', math.min(dh, dw))
   local groups = opts.groups or 1
   check_positive('groups', groups)
   if inputs % groups ~= 0 or outputs % groups ~= 0 then
      error(('nn.Conv2d: in %d and out %d must both be divisible by groups %d'):format(inputs, outputs, groups), 3)
   end
   -- padding -> symmetric (ph, pw) plus the extra bottom/right row/column of an odd 'same'
   local ph, pw, extra_h, extra_w = 0, 0, 0, 0
   local padding = opts.padding
   if padding == 'same' then
      if sh ~= 1 or sw ~= 1 then error(("nn.Conv2d: padding 'same' needs stride 1, got %dx%d"):format(sh, sw), 3) end
      local th, tw = dh * (kh - 1), dw * (kw - 1)
      ph, pw, extra_h, extra_w = floor(th / 2), floor(tw / 2), th % 2, tw % 2
   elseif padding ~= 'valid' then
      ph, pw = pair('nn.Conv2d', 'padding', padding, 0, 4)
      if ph < 0 or pw < 0 then error(('nn.Conv2d: padding %dx%d must not be negative'):format(ph, pw), 3) end
   end
   local bias = opts.bias
   if bias == nil then bias = true end

   self.inputs, self.outputs, self.groups = inputs, outputs, groups
   self.kh, self.kw, self.sh, self.sw, self.dh, self.dw = kh, kw, sh, sw, dh, dw
   self.ph, self.pw, self.extra_h, self.extra_w = ph, pw, extra_h, extra_w
   self.padding_name = type(padding) == 'string' and padding or nil
   local bound = 1 / math.sqrt(inputs / groups * kh * kw)
   self.weight = Param(uniform({outputs, inputs / groups, kh, kw}, bound))
   if bias then self.bias = Param(uniform({outputs}, bound)) end
end

function Conv2d:forward(x)
   if not istype(x) then
      error(('%s: input is a %s, expected a tensor'):format(self:_label(), type(x)), 2)
   end
   local nd = x.ndim
   if nd ~= 3 and nd ~= 4 then
      error(('%s: input %s must be [N, C, H, W] or [C, H, W]'):format(self:_label(), fnn_tensor.shape_str(x)), 2)
   end
   local c = tonumber(x.shape_[nd - 3])
   if c ~= self.inputs then
      error(('%s: input %s has %d channels in dim %d, expected %d'):format(
            self:_label(), fnn_tensor.shape_str(x), c, nd - 2, self.inputs), 2)
   end
   if self.extra_h > 0 or self.extra_w > 0 then x = x:pad{0, self.extra_w, 0, self.extra_h} end
   local b = self.bias
   local out = new()
   if fnn_conv2d(out, x, self.weight:tensor(), b and b:tensor() or nil, self.sh, self.sw, self.ph, self.pw,
                 self.dh, self.dw, self.groups) ~= 0 then
      fail()
   end
   return done(out)
end

function Conv2d:_label()
   return ('Conv2d(%d -> %d, %dx%d)'):format(self.inputs, self.outputs, self.kh, self.kw)
end

function Conv2d:__tostring()
   local parts = {}
   if self.sh ~= 1 or self.sw ~= 1 then parts[#parts + 1] = ('stride %dx%d'):format(self.sh, self.sw) end
   if self.padding_name then parts[#parts + 1] = ("padding '%s'"):format(self.padding_name)
   elseif self.ph ~= 0 or self.pw ~= 0 then parts[#parts + 1] = ('padding %dx%d'):format(self.ph, self.pw) end
   if self.dh ~= 1 or self.dw ~= 1 then parts[#parts + 1] = ('dilation %dx%d'):format(self.dh, self.dw) end
   if self.groups ~= 1 then parts[#parts + 1] = ('groups %d'):format(self.groups) end
   if not self.bias then parts[#parts + 1] = 'no bias' end
   local extra = #parts > 0 and (', ' .. table.concat(parts, ', ')) or ''
   return ('nn.Conv2d(%d -> %d, %dx%d%s)'):format(self.inputs, self.outputs, self.kh, self.kw, extra)
end

return Conv2d
