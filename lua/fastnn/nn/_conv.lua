-- Shared maker of the convolution layers: nn.Conv1d/2d/3d and nn.ConvTranspose1d/2d/3d are one
-- line each calling M.class; nn.DepthwiseConv1d/2d and nn.SeparableConv1d/2d build on M.setup
-- and M.run. A layer parses its options once into a spec (fastnn.ops.conv's _parse) and runs it
-- per call, so padding 'same' with a stride follows each input's size.
--   weight Param: Conv [out, in/groups, k...], ConvTranspose [in, out/groups, k...]; bias [out].
--   init (PyTorch's): U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for both, fan_in = weight:size(2) * prod(k)
--   (in/groups * prod(k) for a conv, out/groups * prod(k) for a transposed one, as PyTorch computes it).
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local conv = require 'fastnn.ops.conv'
local C = fnn_tensor.C
local istype, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str
local tuple, parse, run = conv._tuple, conv._parse, conv._run
local Param = nn.Param
local floor, concat = math.floor, table.concat

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

function M.forward(self, x)
   M.check_input(self, x, 2)
   local b = self.bias
   local y = run(self.spec, x, self.weight:tensor(), b and b:tensor() or nil, M.label(self), 2)
   return y
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
   if extra then parts[#parts + 1] = extra end
   if not self.bias then parts[#parts + 1] = 'no bias' end
   return ('nn.%s(%s)'):format(self._name, concat(parts, ', '))
end

-- nn.<name>(in, out, kernel, {...}): a plain (transposed = false) or transposed convolution
function M.class(name, nd, transposed)
   local cls = nn.Module:extend(name)
   local OPTS = declare(name, nd, transposed)
   -- the user is level 3 as seen from __init (2 is Module's __call)
   function cls:__init(inputs, outputs, kernel, opts)
      M.setup(self, name, nd, transposed, inputs, outputs, kernel, OPTS:check(opts, 3), 3)
   end
   cls.forward = M.forward
   cls.__tostring = M.describe
   return cls
end

-- nn.<name>(channels, kernel, {depth_multiplier = 1, stride, padding, dilation, bias}): a grouped
-- convolution with groups = channels, weight [channels * m, 1, k...], fan_in = prod(k)
function M.depthwise_class(name, nd)
   local cls = nn.Module:extend(name)
   local OPTS = declare(name, nd, false, {{'depth_multiplier', 'integer', 1, 'output channels per input channel', min = 1}},
                        true)
   function cls:__init(channels, kernel, opts)
      if type(opts) == 'table' and opts.groups ~= nil then
         error(('nn.%s: groups is the channel count; use nn.Conv%dd for other groups'):format(name, nd), 3)
      end
      opts = OPTS:check(opts, 3)
      local m = opts.depth_multiplier
      if m == nil then m = 1 end
      M.check_positive(name, 'depth_multiplier', m, 3)
      M.check_positive(name, 'channels', channels, 3)
      local o = {groups = channels}
      for key, v in pairs(opts) do if key ~= 'depth_multiplier' then o[key] = v end end
      M.setup(self, name, nd, false, channels, channels * m, kernel, o, 3)
      self.depth_multiplier, self._depthwise = m, true
   end
   cls.forward = M.forward
   function cls:__tostring() return M.describe(self, self.depth_multiplier ~= 1 and ('m=' .. self.depth_multiplier)) end
   return cls
end

-- nn.<name>(in, out, kernel, {depth_multiplier = 1, stride, padding, dilation, bias}): a depthwise
-- convolution (no bias) then a pointwise 1x1 one, children 'depthwise' and 'pointwise'
function M.separable_class(name, nd)
   local cls = nn.Module:extend(name)
   local op = 'nn.' .. name
   local OPTS = declare(name, nd, false, {{'depth_multiplier', 'integer', 1, 'output channels per input channel', min = 1}},
                        true)
   function cls:__init(inputs, outputs, kernel, opts)
      M.check_positive(name, 'in', inputs, 3)
      M.check_positive(name, 'out', outputs, 3)
      opts = OPTS:check(opts, 3)
      local m = opts.depth_multiplier
      if m == nil then m = 1 end
      M.check_positive(name, 'depth_multiplier', m, 3)
      local bias = opts.bias
      if bias == nil then bias = true end
      -- the children's checks, with this layer's name and the user's line
      local ok, err = pcall(function()
         self.depthwise = nn['DepthwiseConv' .. nd .. 'd'](inputs, kernel, {
            depth_multiplier = m, stride = opts.stride, padding = opts.padding, dilation = opts.dilation, bias = false,
            padding_mode = opts.padding_mode})
      end)
      if not ok then
         error((tostring(err):gsub('^[^:\n]+:%d+: ', ''):gsub('^nn%.DepthwiseConv%dd', op)), 3)
      end
      self.pointwise = nn['Conv' .. nd .. 'd'](inputs * m, outputs, 1, {bias = bias})
      self.inputs, self.outputs, self.nd, self.kernel, self.depth_multiplier = inputs, outputs, nd,
         self.depthwise.kernel, m
   end
   -- both convolutions through M.run, so that their errors name this layer at the user's line
   function cls:forward(x)
      M.check_input(self, x, 2)
      local label, pw = M.label(self), self.pointwise
      local h = run(self.depthwise.spec, x, self.depthwise.weight:tensor(), nil, label, 2)
      local y = run(pw.spec, h, pw.weight:tensor(), pw.bias and pw.bias:tensor() or nil, label, 2)
      return y
   end
   function cls:__tostring()
      local d = self.depthwise
      local view = {_name = name, inputs = self.inputs, outputs = self.outputs, nd = nd, kernel = d.kernel,
                    spec = d.spec, padding_name = d.padding_name, bias = self.pointwise.bias, _depthwise = true}
      local lines = {M.describe(view, self.depth_multiplier ~= 1 and ('m=' .. self.depth_multiplier)) .. ' {'}
      for _, pair in ipairs(self:named_children()) do
         lines[#lines + 1] = '  (' .. pair[1] .. '): ' .. tostring(pair[2])
      end
      lines[#lines + 1] = '}'
      return concat(lines, '\n')
   end
   return cls
end

return M
