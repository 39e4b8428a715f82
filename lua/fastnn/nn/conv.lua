-- The convolution layers: one file, each kind a base class with its methods, and its 1d/2d/3d
-- classes declared by name below it (with their docs):
--   Conv -> Conv1d, Conv2d, Conv3d                ConvTranspose -> ConvTranspose1d/2d/3d
--   DepthwiseConv -> DepthwiseConv1d/2d           SeparableConv -> SeparableConv1d/2d
-- A layer parses its options once into a spec (fastnn.ops.conv's _parse) and runs it per call,
-- so padding 'same' with a stride follows each input's size.
--   weight Param: Conv [out, in/groups, k...], ConvTranspose [in, out/groups, k...]; bias [out].
--   init (PyTorch's): U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for both, fan_in = weight:size(2) * prod(k)
--   (in/groups * prod(k) for a conv, out/groups * prod(k) for a transposed one, as PyTorch computes it).
-- The Keras spellings (Conv2D, Conv2DTranspose, DepthwiseConv2D, ...) are keras_layers.lua's.
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local conv = require 'fastnn.ops.conv'
local C = fnn_tensor.C
local istype, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str
local tuple, parse, run = conv._tuple, conv._parse, conv._run
local Param = nn.Param
local floor, concat = math.floor, table.concat
local BF16 = 3   -- the dtype code

local options = require 'fastnn.options'

local M = {}
M.run = run
M.LAYOUT = {'[N, C, L] or [C, L]', '[N, C, H, W] or [C, H, W]', '[N, C, D, H, W] or [C, D, H, W]'}

local function uniform(shape, bound) return fnn_tensor.uniform(shape, -bound, bound) end

-- `level` below is the user's level as seen from the function's caller
function M.check_positive(name, what, v, level)
   if type(v) ~= 'number' or v < 1 or v ~= floor(v) then
      error(('nn.%s: %s is %s, expected a positive integer'):format(name, what, options.describe(v)), level + 1)
   end
end

function M.check_opts(name, opts, level)
   if opts ~= nil and type(opts) ~= 'table' then
      error(('nn.%s: options must be a table like {padding = 1}, got a %s'):format(name, type(opts)), level + 1)
   end
   return opts or {}
end

local function dims(t) return concat(t, 'x') end
local function all_equal(t, v)
   for i = 1, #t do if t[i] ~= v then return false end end
   return true
end

-- the declaration of a conv layer's options (extra: the layer's own entries first)
local function declare(name, nd, transposed, extra, depthwise)
   local e = {}
   for _, x in ipairs(extra or {}) do e[#e + 1] = x end
   local ints = 'integer or a table of ' .. nd
   e[#e + 1] = {'stride', 'integer|table', 1, 'step of the window: an ' .. ints}
   e[#e + 1] = {'padding', 'integer|table|string', 0, "zeros added on each side: an " .. ints ..
                " (an entry may be {before, after}), 'valid' or 'same'" .. ((nd == 1 and not transposed) and " or 'causal'" or ''),
                values = {'valid', 'same', 'causal'}}   -- 'causal' elsewhere: the conv op says why not
   if transposed then
      e[#e + 1] = {'output_padding', 'integer|table', 0, 'extra size added to one side of the output: an ' .. ints}
   end
   e[#e + 1] = {'dilation', 'integer|table', 1, 'spacing of the kernel taps: an ' .. ints}
   if not depthwise then e[#e + 1] = {'groups', 'integer', 1, 'blocked connections: in and out must both divide by it', min = 1} end
   e[#e + 1] = {'bias', 'boolean', true, 'learn an additive bias [out]'}
   if not transposed then
      e[#e + 1] = {'padding_mode', 'string', 'zeros', "how padding is filled, as PyTorch: 'zeros', or the input "
                   .. "padded first by Tensor.pad's 'reflect' (each width < the input's size), 'replicate' or 'circular' "
                   .. "(width <= size) and convolved with padding 0",
                   values = {'zeros', 'reflect', 'replicate', 'circular'}}
   end
   return options.declare('nn.' .. name, e)
end

-- sizes, options, weight and bias of a conv layer named `name` (errors say 'nn.<name>')
function M.setup(self, name, nd, transposed, inputs, outputs, kernel, opts, level)
   local op = 'nn.' .. name
   M.check_positive(name, 'in', inputs, level + 1)
   M.check_positive(name, 'out', outputs, level + 1)
   opts = M.check_opts(name, opts, level + 1)
   local k = tuple(op, 'kernel', kernel, nil, nd, level + 1)
   local s = parse(op, nd, transposed, opts, level + 1)
   for i = 1, nd do
      M.check_positive(name, 'kernel', k[i], level + 1)
      M.check_positive(name, 'stride', s.stride[i], level + 1)
      M.check_positive(name, 'dilation', s.dil[i], level + 1)
      if type(s.pad) == 'table' and (s.pad.lo[i] < 0 or s.pad.hi[i] < 0) then
         error(('%s: padding must not be negative'):format(op), level + 1)
      end
      if s.opad[i] < 0 or (s.opad[i] >= s.stride[i] and s.opad[i] >= s.dil[i]) then
         error(('%s: output_padding %s must be non-negative and smaller than the stride %s or the dilation %s')
               :format(op, dims(s.opad), dims(s.stride), dims(s.dil)), level + 1)
      end
   end
   M.check_positive(name, 'groups', s.groups, level + 1)
   if inputs % s.groups ~= 0 or outputs % s.groups ~= 0 then
      error(('%s: in %d and out %d must both be divisible by groups %d'):format(op, inputs, outputs, s.groups),
            level + 1)
   end
   local bias = opts.bias
   if bias == nil then bias = true end

   self.inputs, self.outputs, self.groups, self.nd, self.transposed = inputs, outputs, s.groups, nd, transposed
   self.kernel, self.spec = k, s
   local pm = not transposed and opts.padding_mode   -- a transposed conv has none (as PyTorch's: zeros only)
   if pm and pm ~= 'zeros' then s.mode = pm end      -- read by fastnn.ops.conv's run
   self.padding_name = type(opts.padding) == 'string' and opts.padding or nil
   local receptive = 1
   for i = 1, nd do receptive = receptive * k[i] end
   local wshape = transposed and {inputs, outputs / s.groups} or {outputs, inputs / s.groups}
   for i = 1, nd do wshape[2 + i] = k[i] end
   local bound = 1 / math.sqrt(wshape[2] * receptive)
   self.weight = Param(uniform(wshape, bound))
   if bias then self.bias = Param(uniform({outputs}, bound)) end
end

-- the layer in messages: 'Conv1d(3 -> 8, k=5)'
function M.label(self)
   return ('%s(%d -> %d, k=%s)'):format(self._name, self.inputs, self.outputs, dims(self.kernel))
end

-- checks of x against the layer (a tensor, the rank, the channels), at the user's line
function M.check_input(self, x, level)
   local nd = self.nd
   if not istype(x) then
      error(('%s: input is a %s, expected a tensor'):format(M.label(self), type(x)), level + 1)
   end
   local xnd = x.ndim
   if xnd ~= nd + 1 and xnd ~= nd + 2 then
      error(('%s: input %s must be %s'):format(M.label(self), shape_str(x), M.LAYOUT[nd]), level + 1)
   end
   local c = tonumber(x.shape_[xnd - nd - 1])
   if c ~= self.inputs then
      error(('%s: input %s has %d channels in dim %d, expected %d'):format(
            M.label(self), shape_str(x), c, xnd - nd, self.inputs), level + 1)
   end
end

-- 'nn.Conv1d(3 -> 8, k=5, s=2)': the options that differ from the defaults
function M.describe(self, extra)
   local s = self.spec
   local parts = {('%d -> %d'):format(self.inputs, self.outputs), 'k=' .. dims(self.kernel)}
   if not all_equal(s.stride, 1) then parts[#parts + 1] = 's=' .. dims(s.stride) end
   if self.padding_name then
      parts[#parts + 1] = 'p=' .. self.padding_name
   elseif not (all_equal(s.pad.lo, 0) and all_equal(s.pad.hi, 0)) then
      local p = {}
      for i = 1, self.nd do
         p[i] = s.pad.lo[i] == s.pad.hi[i] and tostring(s.pad.lo[i]) or ('(%d,%d)'):format(s.pad.lo[i], s.pad.hi[i])
      end
      parts[#parts + 1] = 'p=' .. concat(p, 'x')
   end
   if self.transposed and not all_equal(s.opad, 0) then parts[#parts + 1] = 'op=' .. dims(s.opad) end
   if not all_equal(s.dil, 1) then parts[#parts + 1] = 'd=' .. dims(s.dil) end
   if s.groups ~= 1 and not self._depthwise then parts[#parts + 1] = 'g=' .. s.groups end
   if s.mode then parts[#parts + 1] = s.mode end
   if s.act then parts[#parts + 1] = s.act end
   if extra then parts[#parts + 1] = extra end
   if not self.bias then parts[#parts + 1] = 'no bias' end
   return ('nn.%s(%s)'):format(self._name, concat(parts, ', '))
end

-- a subclass of base named name over nd spatial dims, its options declared
local function dims_class(base, name, nd)
   local cls = base:extend(name)
   cls._title, cls._nd = name, nd
   cls._OPTS = base._declare(name, nd)
   M[name] = cls
   return cls
end

-- ---------------------------------------------------------------------------
-- Conv and ConvTranspose: nn.<name>(in, out, kernel, {...}), a plain or transposed convolution

local Conv = nn.Module:extend('Conv')
Conv._transposed = false
function Conv._declare(name, nd)
   return declare(name, nd, false, {{'activation', 'string', nil, "'relu': relu(conv + b) from the same node, with no "
                                     .. "tensor between (Keras' Conv2D(activation = 'relu')); nil or 'none': none",
                                     values = {'relu', 'none'}}})
end

-- the user is level 3 as seen from __init (2 is Module's __call)
function Conv:__init(inputs, outputs, kernel, opts)
   M.setup(self, self._title, self._nd, self._transposed, inputs, outputs, kernel, self._OPTS:check(opts, 3), 3)
end

function Conv:forward(x)
   M.check_input(self, x, 2)
   local b = self.bias
   -- a bfloat16 x gives a bfloat16 output whatever the (float32) parameters: a layer's output follows
   -- its input (fastnn.precision's rule for layers); else the op's own rule (autocast, promotion)
   local y = run(self.spec, x, self.weight:tensor(), b and b:tensor() or nil, M.label(self), 2,
                 x.dtype_ == BF16 and BF16 or nil)
   return y
end

Conv.__tostring = M.describe

local ConvTranspose = Conv:extend('ConvTranspose')
ConvTranspose._transposed = true
function ConvTranspose._declare(name, nd) return declare(name, nd, true) end

-- nn.Conv1d(in, out, kernel, {stride = 1, padding = 0, dilation = 1, groups = 1, bias = true,
-- activation = nil ('relu': relu(conv + b) from one node)}):
-- 1-d convolution over [N, in, L] (or [in, L]) -> [N, out, Lo]. kernel, stride, padding and
-- dilation are numbers or {l}; padding may also be {{before, after}}, 'valid', 'same' (stride 1:
-- PyTorch's; stride > 1: TensorFlow's, Lo = ceil(L / stride)) or 'causal' (dilation (k - 1) on the
-- left only: Lo = L, each output sees only its past). weight Param [out, in/groups, k], bias [out],
-- both U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups * k (PyTorch's default).
local Conv1d = dims_class(Conv, 'Conv1d', 1)

-- nn.Conv2d(in, out, kernel, {stride = 1, padding = 0, dilation = 1, groups = 1, bias = true,
-- activation = nil ('relu': relu(conv + b) from one node)}):
-- 2-d convolution over [N, in, H, W] (or [in, H, W]) -> [N, out, Ho, Wo]. kernel, stride, padding
-- and dilation are numbers or {h, w}; a padding entry may be {before, after}; padding may also be
-- 'valid' or 'same' (stride 1: PyTorch's, the odd pad at the bottom/right; stride > 1:
-- TensorFlow's, Ho = ceil(H / stride)). weight Param [out, in/groups, kh, kw], bias [out], both
-- U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups * kh * kw (PyTorch's default).
local Conv2d = dims_class(Conv, 'Conv2d', 2)

-- nn.Conv3d(in, out, kernel, {stride = 1, padding = 0, dilation = 1, groups = 1, bias = true,
-- activation = nil ('relu': relu(conv + b) from one node)}):
-- 3-d convolution over [N, in, D, H, W] (or [in, D, H, W]) -> [N, out, Do, Ho, Wo]. kernel,
-- stride, padding and dilation are numbers or {d, h, w}; padding also 'valid' or 'same' (as
-- nn.Conv2d). weight Param [out, in/groups, kd, kh, kw], bias [out], both
-- U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups * kd * kh * kw (PyTorch's default).
local Conv3d = dims_class(Conv, 'Conv3d', 3)

-- nn.ConvTranspose1d(in, out, kernel, {stride = 1, padding = 0, output_padding = 0, dilation = 1,
-- groups = 1, bias = true}): the transposed (fractionally strided) 1-d convolution, the input
-- gradient of nn.Conv1d(out, in, kernel) with the same options, over
-- [N, in, L] (or [in, L]) -> [N, out, Lo].
-- Per dim, out size = (in - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1
-- (PyTorch's); output_padding must be smaller than the stride or the dilation. kernel, stride,
-- padding, output_padding and dilation are numbers or {l}; padding 'valid' is 0 and 'same'
-- gives in * stride (Keras). weight Param [in, out/groups, k], bias [out], both
-- U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = out/groups * prod(kernel) (PyTorch's default).
local ConvTranspose1d = dims_class(ConvTranspose, 'ConvTranspose1d', 1)

-- nn.ConvTranspose2d(in, out, kernel, {stride = 1, padding = 0, output_padding = 0, dilation = 1,
-- groups = 1, bias = true}): the transposed (fractionally strided) 2-d convolution, the input
-- gradient of nn.Conv2d(out, in, kernel) with the same options, over
-- [N, in, H, W] (or [in, H, W]) -> [N, out, Ho, Wo].
-- Per dim, out size = (in - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1
-- (PyTorch's); output_padding must be smaller than the stride or the dilation. kernel, stride,
-- padding, output_padding and dilation are numbers or {h, w}; padding 'valid' is 0 and 'same'
-- gives in * stride (Keras). weight Param [in, out/groups, kh, kw], bias [out], both
-- U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = out/groups * prod(kernel) (PyTorch's default).
local ConvTranspose2d = dims_class(ConvTranspose, 'ConvTranspose2d', 2)

-- nn.ConvTranspose3d(in, out, kernel, {stride = 1, padding = 0, output_padding = 0, dilation = 1,
-- groups = 1, bias = true}): the transposed (fractionally strided) 3-d convolution, the input
-- gradient of nn.Conv3d(out, in, kernel) with the same options, over
-- [N, in, D, H, W] (or [in, D, H, W]) -> [N, out, Do, Ho, Wo].
-- Per dim, out size = (in - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1
-- (PyTorch's); output_padding must be smaller than the stride or the dilation. kernel, stride,
-- padding, output_padding and dilation are numbers or {d, h, w}; padding 'valid' is 0 and 'same'
-- gives in * stride (Keras). weight Param [in, out/groups, kd, kh, kw], bias [out], both
-- U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = out/groups * prod(kernel) (PyTorch's default).
local ConvTranspose3d = dims_class(ConvTranspose, 'ConvTranspose3d', 3)

-- ---------------------------------------------------------------------------
-- DepthwiseConv: nn.<name>(channels, kernel, {depth_multiplier = 1, stride, padding, dilation,
-- bias}): a grouped convolution with groups = channels, weight [channels * m, 1, k...],
-- fan_in = prod(k); Conv's forward

local DepthwiseConv = Conv:extend('DepthwiseConv')
function DepthwiseConv._declare(name, nd)
   return declare(name, nd, false, {{'depth_multiplier', 'integer', 1, 'output channels per input channel', min = 1}},
                  true)
end

function DepthwiseConv:__init(channels, kernel, opts)
   local name, nd = self._title, self._nd
   if type(opts) == 'table' and opts.groups ~= nil then
      error(('nn.%s: groups is the channel count; use nn.Conv%dd for other groups'):format(name, nd), 3)
   end
   opts = self._OPTS:check(opts, 3)
   local m = opts.depth_multiplier
   if m == nil then m = 1 end
   M.check_positive(name, 'depth_multiplier', m, 3)
   M.check_positive(name, 'channels', channels, 3)
   local o = {groups = channels}
   for key, v in pairs(opts) do if key ~= 'depth_multiplier' then o[key] = v end end
   M.setup(self, name, nd, false, channels, channels * m, kernel, o, 3)
   self.depth_multiplier, self._depthwise = m, true
end

function DepthwiseConv:__tostring()
   return M.describe(self, self.depth_multiplier ~= 1 and ('m=' .. self.depth_multiplier))
end

-- nn.DepthwiseConv1d(channels, kernel, {depth_multiplier = 1, stride = 1, padding = 0, dilation = 1,
-- bias = true}): each of the channels convolved with depth_multiplier kernels of its own, over
-- [N, C, L] (or [C, L]) -> channels * depth_multiplier channels; a grouped nn.Conv1d with groups =
-- channels, run by the core's direct depthwise kernels. Padding: numbers, 'valid', 'same' or 'causal'.
-- weight Param [channels * depth_multiplier, 1, k], bias [channels * depth_multiplier],
-- both U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = prod(kernel) (PyTorch's default).
local DepthwiseConv1d = dims_class(DepthwiseConv, 'DepthwiseConv1d', 1)

-- nn.DepthwiseConv2d(channels, kernel, {depth_multiplier = 1, stride = 1, padding = 0, dilation = 1,
-- bias = true}): each of the channels convolved with depth_multiplier kernels of its own, over
-- [N, C, H, W] (or [C, H, W]) -> channels * depth_multiplier channels; a grouped nn.Conv2d with groups =
-- channels, run by the core's direct depthwise kernels. Padding: numbers, 'valid' or 'same'.
-- weight Param [channels * depth_multiplier, 1, kh, kw], bias [channels * depth_multiplier],
-- both U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = prod(kernel) (PyTorch's default).
local DepthwiseConv2d = dims_class(DepthwiseConv, 'DepthwiseConv2d', 2)

-- ---------------------------------------------------------------------------
-- SeparableConv: nn.<name>(in, out, kernel, {depth_multiplier = 1, stride, padding, dilation,
-- bias}): a depthwise convolution (no bias) then a pointwise 1x1 one, children 'depthwise' and
-- 'pointwise'

local SeparableConv = nn.Module:extend('SeparableConv')
SeparableConv._declare = DepthwiseConv._declare

function SeparableConv:__init(inputs, outputs, kernel, opts)
   local name, nd = self._title, self._nd
   local op = 'nn.' .. name
   M.check_positive(name, 'in', inputs, 3)
   M.check_positive(name, 'out', outputs, 3)
   opts = self._OPTS:check(opts, 3)
   local m = opts.depth_multiplier
   if m == nil then m = 1 end
   M.check_positive(name, 'depth_multiplier', m, 3)
   local bias = opts.bias
   if bias == nil then bias = true end
   -- the children's checks, with this layer's name and the user's line
   local ok, err = pcall(function()
      self.depthwise = M['DepthwiseConv' .. nd .. 'd'](inputs, kernel, {
         depth_multiplier = m, stride = opts.stride, padding = opts.padding, dilation = opts.dilation, bias = false,
         padding_mode = opts.padding_mode})
   end)
   if not ok then
      error((tostring(err):gsub('^[^:\n]+:%d+: ', ''):gsub('^nn%.DepthwiseConv%dd', op)), 3)
   end
   self.pointwise = M['Conv' .. nd .. 'd'](inputs * m, outputs, 1, {bias = bias})
   self.inputs, self.outputs, self.nd, self.kernel, self.depth_multiplier = inputs, outputs, nd,
      self.depthwise.kernel, m
end

-- both convolutions through run, so that their errors name this layer at the user's line. The
-- depthwise result follows the op's rule (float32 from a bf16 x and float32 weights; bf16 under
-- autocast, which the pointwise products would round anyway); the output follows a bfloat16 x
function SeparableConv:forward(x)
   M.check_input(self, x, 2)
   local label, pw = M.label(self), self.pointwise
   local h = run(self.depthwise.spec, x, self.depthwise.weight:tensor(), nil, label, 2)
   local y = run(pw.spec, h, pw.weight:tensor(), pw.bias and pw.bias:tensor() or nil, label, 2,
                 x.dtype_ == BF16 and BF16 or nil)
   return y
end

function SeparableConv:__tostring()
   local d = self.depthwise
   local view = {_name = self._title, inputs = self.inputs, outputs = self.outputs, nd = self._nd, kernel = d.kernel,
                 spec = d.spec, padding_name = d.padding_name, bias = self.pointwise.bias, _depthwise = true}
   local lines = {M.describe(view, self.depth_multiplier ~= 1 and ('m=' .. self.depth_multiplier)) .. ' {'}
   for _, pair in ipairs(self:named_children()) do
      lines[#lines + 1] = '  (' .. pair[1] .. '): ' .. tostring(pair[2])
   end
   lines[#lines + 1] = '}'
   return concat(lines, '\n')
end

-- nn.SeparableConv1d(in, out, kernel, {depth_multiplier = 1, stride = 1, padding = 0, dilation = 1,
-- bias = true}): a depthwise convolution (nn.DepthwiseConv1d without bias: stride, padding,
-- dilation go there) then a pointwise 1x1 nn.Conv1d(in * depth_multiplier, out) with the bias,
-- as Keras's SeparableConv1D, over [N, C, L] (or [C, L]). Padding: numbers, 'valid', 'same' or 'causal'.
-- Parameters 'depthwise.weight' [in * depth_multiplier, 1, k], 'pointwise.weight'
-- [out, in * depth_multiplier, 1...], 'pointwise.bias' [out].
local SeparableConv1d = dims_class(SeparableConv, 'SeparableConv1d', 1)

-- nn.SeparableConv2d(in, out, kernel, {depth_multiplier = 1, stride = 1, padding = 0, dilation = 1,
-- bias = true}): a depthwise convolution (nn.DepthwiseConv2d without bias: stride, padding,
-- dilation go there) then a pointwise 1x1 nn.Conv2d(in * depth_multiplier, out) with the bias,
-- as Keras's SeparableConv2D, over [N, C, H, W] (or [C, H, W]). Padding: numbers, 'valid' or 'same'.
-- Parameters 'depthwise.weight' [in * depth_multiplier, 1, kh, kw], 'pointwise.weight'
-- [out, in * depth_multiplier, 1...], 'pointwise.bias' [out].
local SeparableConv2d = dims_class(SeparableConv, 'SeparableConv2d', 2)

return M
