-- The normalization layers:
--   BatchNorm -> BatchNorm1d, BatchNorm2d, BatchNorm3d (statistics over the batch)
--   InstanceNormBase -> InstanceNorm, InstanceNorm1d/2d/3d (per sample and channel)
--   LayerNorm, GroupNorm, RMSNorm, UnitNormalization
--   M.filled(shape, value), M.check_size(layer, what, v, level): helpers
-- Each base class has the methods; the classes below it set the input layouts they take. The
-- kernels are core/ops/norm.c (fnn_batch_norm, fnn_group_norm); forward methods call C directly
-- so that fail() (1 fail, 2 forward, 3 the caller) raises at the user's line.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local C = fnn_tensor.C
local new, done, fail, istype, parse_shape, shape_str = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail,
   fnn_tensor.is_tensor, fnn_tensor.parse_shape, fnn_tensor.shape_str
local Param = nn.Param
local floor = math.floor

local M = {}

function M.filled(shape, value)
   local n, buf = parse_shape('norm', false, shape)
   local out = new()
   if C.fnn_full_dtype(out, n, buf, value, 0) ~= 0 then fail() end
   return done(out)
end
local filled = M.filled

-- errors from a constructor land on the line that called nn.X(...): 1 the raiser, 2 __init,
-- 3 Module's __call, 4 the user; helpers called from __init pass level 4
function M.check_size(layer, what, v, level)
   if type(v) ~= 'number' or v < 1 or v ~= floor(v) then
      error(('nn.%s: %s is %s, expected a positive integer'):format(layer, what, require('fastnn.options').describe(v)),
            level or 4)
   end
end

local function flag(opts, key, default)
   local v = opts[key]
   if v == nil then return default end
   return v and true or false
end

local function check_eps(layer, eps)
   if type(eps) ~= 'number' or eps < 0 then
      error(('nn.%s: eps is %s, expected a non-negative number'):format(layer, show_value(eps)), 5)
   end
end

local function check_momentum(layer, m)
   if m ~= nil and (type(m) ~= 'number' or m < 0 or m > 1) then
      error(('nn.%s: momentum is %s, expected a number in [0, 1] or false (a cumulative average)'):format(
         layer, show_value(m)), 5)
   end
end

-- num_features, eps, momentum, affine (weight ones, bias zeros), running stats as buffers; the batch
-- norms (with_activation) also an activation fused into their node
local options = require 'fastnn.options'
local function declare(name, affine_default, track_default, with_activation)
   local entries = {
      {'eps', 'number', 1e-5, 'added to the variance for numerical stability', min = 0},
      {'momentum', 'number|boolean', 0.1, 'running = (1 - momentum) running + momentum batch; false: a cumulative average '
       .. "(PyTorch's None)", min = 0, max = 1, expect = 'a number in [0, 1] or false',
       check = function(v) if v == true then return 'expected a number in [0, 1] or false' end end},
      {'affine', 'boolean', affine_default, 'learn a per-channel weight and bias'},
      {'track_running_stats', 'boolean', track_default, 'keep running mean and variance for evaluation'},
   }
   if with_activation then
      entries[#entries + 1] = {'activation', 'string', 'none',
         "applied to the output in the layer's own passes, forward and backward ('relu': BatchNorm then ReLU)",
         values = {'none', 'relu'}}
   end
   return options.declare('nn.' .. name, entries)
end

local function setup(self, name, num_features, opts, affine_default, track_default, OPTS)
   M.check_size(name, 'num_features', num_features, 5)
   opts = OPTS:check(opts, 4)
   local eps = opts.eps
   if eps == nil then eps = 1e-5 end
   check_eps(name, eps)
   -- PyTorch's momentum = None (a cumulative average) is momentum = false here, since a Lua table
   -- cannot hold a nil; `m.momentum = nil` after construction says the same
   local momentum = 0.1
   if opts.momentum ~= nil then momentum = opts.momentum or nil end
   check_momentum(name, momentum)
   self.num_features, self.eps, self.momentum = num_features, eps, momentum
   self.affine = flag(opts, 'affine', affine_default)
   self.track_running_stats = flag(opts, 'track_running_stats', track_default)
   if OPTS.by_name.activation and opts.activation ~= 'none' then self.activation = opts.activation end
   if self.affine then
      self.weight = Param(filled({num_features}, 1))
      self.bias = Param(filled({num_features}, 0))
   end
   if self.track_running_stats then
      self:register_buffer('running_mean', filled({num_features}, 0))
      self:register_buffer('running_var', filled({num_features}, 1))
      self:register_buffer('num_batches_tracked', fnn_tensor.zeros({}, {dtype = 'int64'}))
   end
end

-- running = (1 - f) running + f batch, f = momentum or 1 / batches seen (cumulative average)
local function update_running(self, mean, var)
   local count = self.num_batches_tracked + 1
   rawset(self, 'num_batches_tracked', count)
   local f = self.momentum
   if f == nil then f = 1 / count:item() end
   rawset(self, 'running_mean', self.running_mean * (1 - f) + mean * f)
   rawset(self, 'running_var', self.running_var * (1 - f) + var * f)
end

local function describe(self)
   local parts = {tostring(self.num_features), ('eps=%g'):format(self.eps)}
   parts[#parts + 1] = self.momentum and ('momentum=%g'):format(self.momentum) or 'momentum=nil (cumulative)'
   parts[#parts + 1] = 'affine=' .. tostring(self.affine)
   parts[#parts + 1] = 'track_running_stats=' .. tostring(self.track_running_stats)
   if self.activation then parts[#parts + 1] = ("activation='%s'"):format(self.activation) end
   return ('nn.%s(%s)'):format(self._name, table.concat(parts, ', '))
end

local function param_tensor(p) return p and p:tensor() or nil end

-- ---------------------------------------------------------------------------
-- BatchNorm: nn.BatchNorm{1,2,3}d(num_features, {eps = 1e-5, momentum = 0.1, affine = true,
-- track_running_stats = true, activation = 'none'}); class fields _ok_dims (the input dim counts it
-- takes) and _layout (their text). activation = 'relu' makes the layer BatchNorm then ReLU in one
-- node (fnn.batch_norm's option): field activation, nil for none

local fnn_batch_norm, fnn_group_norm = C.fnn_batch_norm, C.fnn_group_norm
local ACT = require('fastnn.ops.norm').ACTIVATIONS

local BatchNorm = nn.Module:extend('BatchNorm')

function BatchNorm:__init(num_features, opts) setup(self, self._title, num_features, opts, true, true, self._OPTS) end

function BatchNorm:forward(x)
   local name = self._title
   if not istype(x) then
      error(('%s(%d): input is a %s, expected a tensor'):format(name, self.num_features, type(x)), 2)
   end
   if not self._ok_dims[x.ndim] then
      error(('%s(%d): input %s must be %s'):format(name, self.num_features, shape_str(x), self._layout), 2)
   end
   local c = tonumber(x.shape_[1])
   if c ~= self.num_features then
      error(('%s(%d): input %s has %d channels in dim 2, expected %d'):format(
         name, self.num_features, shape_str(x), c, self.num_features), 2)
   end
   local w, b = param_tensor(self.weight), param_tensor(self.bias)
   local act = ACT[self.activation or 'none']
   if act == nil then
      error(("%s(%d): activation is %s, expected 'relu' or nil"):format(name, self.num_features,
            options.describe(self.activation)), 2)
   end
   local out = new()
   if self.training or not self.track_running_stats then
      local mean, var = new(), new()
      if fnn_batch_norm(out, mean, var, x, nil, nil, w, b, 1, self.eps, act) ~= 0 then fail() end
      if self.training and self.track_running_stats then update_running(self, done(mean), done(var)) end
   elseif fnn_batch_norm(out, nil, nil, x, self.running_mean, self.running_var, w, b, 0, self.eps, act) ~= 0 then
      fail()
   end
   return done(out)
end

BatchNorm.__tostring = describe

local function batch_norm_class(name, ndims, layout)
   local cls = BatchNorm:extend(name)
   cls._title, cls._layout, cls._ok_dims = name, layout, {}
   for _, d in ipairs(ndims) do cls._ok_dims[d] = true end
   cls._OPTS = declare(name, true, true, true)
   M[name] = cls
   return cls
end

-- nn.BatchNorm1d(num_features, {eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true,
-- activation = 'none'}): batch normalization of [N, C] or [N, C, L] over N (and L) per channel,
-- PyTorch's layer.
-- Training normalizes with the batch's mean and biased variance and moves the buffers
-- running_mean, running_var toward the batch mean and unbiased variance:
-- running = (1 - momentum) running + momentum batch (momentum = false: a cumulative average),
-- counting num_batches_tracked; eval normalizes with the running stats. weight Param ones [C],
-- bias Param zeros [C] (absent when affine is false). One fused C node: fnn.batch_norm; with
-- activation = 'relu' the layer is BatchNorm then ReLU, still one node.
local BatchNorm1d = batch_norm_class('BatchNorm1d', {2, 3}, '[N, C] or [N, C, L]')

-- nn.BatchNorm2d(num_features, {eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true,
-- activation = 'none'}): batch normalization of images [N, C, H, W] over N, H, W per channel,
-- PyTorch's layer.
-- Training normalizes with the batch's mean and biased variance and moves the buffers
-- running_mean, running_var toward the batch mean and unbiased variance:
-- running = (1 - momentum) running + momentum batch (momentum = false: a cumulative average),
-- counting num_batches_tracked; eval normalizes with the running stats. weight Param ones [C],
-- bias Param zeros [C] (absent when affine is false). One fused C node: fnn.batch_norm; with
-- activation = 'relu' the layer is BatchNorm then ReLU, still one node.
local BatchNorm2d = batch_norm_class('BatchNorm2d', {4}, '[N, C, H, W]')

-- nn.BatchNorm3d(num_features, {eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true,
-- activation = 'none'}): batch normalization of volumes [N, C, D, H, W] over N, D, H, W per channel,
-- PyTorch's layer.
-- Training normalizes with the batch's mean and biased variance and moves the buffers
-- running_mean, running_var toward the batch mean and unbiased variance:
-- running = (1 - momentum) running + momentum batch (momentum = false: a cumulative average),
-- counting num_batches_tracked; eval normalizes with the running stats. weight Param ones [C],
-- bias Param zeros [C] (absent when affine is false). One fused C node: fnn.batch_norm; with
-- activation = 'relu' the layer is BatchNorm then ReLU, still one node.
local BatchNorm3d = batch_norm_class('BatchNorm3d', {5}, '[N, C, D, H, W]')

-- ---------------------------------------------------------------------------
-- InstanceNormBase: nn.InstanceNorm{,1d,2d,3d}(num_features, {eps = 1e-5, momentum = 0.1,
-- affine = false, track_running_stats = false}): statistics per sample and channel over the
-- spatial dims. Class field _ndim: the batched input's dim count (nil: any of 3 or more); an input
-- with one dim fewer is one unbatched sample (PyTorch). With track_running_stats, training also
-- keeps running stats (the batch means of the per-instance mean and unbiased variance) and eval
-- normalizes with them.

local InstanceNormBase = nn.Module:extend('InstanceNormBase')

function InstanceNormBase:__init(num_features, opts)
   setup(self, self._title, num_features, opts, false, false, self._OPTS)
end

function InstanceNormBase:forward(x)
   local name, ndim = self._title, self._ndim
   if not istype(x) then
      error(('%s(%d): input is a %s, expected a tensor'):format(name, self.num_features, type(x)), 2)
   end
   local nd = x.ndim
   local unbatched = ndim ~= nil and nd == ndim - 1
   if not (unbatched or (ndim == nil and nd >= 3) or nd == ndim) then
      error(('%s(%d): input %s must be %s'):format(name, self.num_features, shape_str(x), self._layout), 2)
   end
   local c = tonumber(x.shape_[unbatched and 0 or 1])
   if c ~= self.num_features then
      error(('%s(%d): input %s has %d channels in dim %d, expected %d'):format(
         name, self.num_features, shape_str(x), c, unbatched and 1 or 2, self.num_features), 2)
   end
   if unbatched then x = x:unsqueeze(1) end
   local w, b = param_tensor(self.weight), param_tensor(self.bias)
   local out = new()
   if self.training or not self.track_running_stats then
      if fnn_group_norm(out, x, c, w, b, self.eps) ~= 0 then fail() end
      if self.training and self.track_running_stats then
         local flat = x:detach():flatten(3)   -- [N, C, L]: per-instance stats, averaged over N
         update_running(self, flat:mean(3):mean(1), flat:var(3):mean(1))
      end
   elseif fnn_batch_norm(out, nil, nil, x, self.running_mean, self.running_var, w, b, 0, self.eps, 0) ~= 0 then
      fail()
   end
   out = done(out)
   if unbatched then out = out:squeeze(1) end
   return out
end

InstanceNormBase.__tostring = describe

local function instance_norm_class(name, ndim, layout)
   local cls = InstanceNormBase:extend(name)
   cls._title, cls._ndim, cls._layout = name, ndim, layout
   cls._OPTS = declare(name, false, false)
   M[name] = cls
   return cls
end

-- nn.InstanceNorm(num_features, {eps = 1e-5, momentum = 0.1, affine = false, track_running_stats = false}):
-- instance normalization of [N, C, *] (3 or more dims): each sample's channel normalized over its
-- spatial dims (a group norm with one group per channel), PyTorch's defaults. With affine,
-- weight Param ones [C] and bias Param zeros [C]; with track_running_stats, buffers running_mean
-- and running_var kept in training (batch means of the per-instance statistics) and used in eval.
-- nn.InstanceNorm1d/2d/3d check the layout and also take one unbatched sample.
local InstanceNorm = instance_norm_class('InstanceNorm', nil, '[N, C, *] (3 or more dims)')

-- nn.InstanceNorm1d(num_features, {eps = 1e-5, momentum = 0.1, affine = false, track_running_stats = false}):
-- instance normalization of [N, C, L] or [C, L] (see nn.InstanceNorm): each sample's channel
-- normalized over its spatial dims, PyTorch's layer and defaults.
local InstanceNorm1d = instance_norm_class('InstanceNorm1d', 3, '[N, C, L] or [C, L]')

-- nn.InstanceNorm2d(num_features, {eps = 1e-5, momentum = 0.1, affine = false, track_running_stats = false}):
-- instance normalization of [N, C, H, W] or [C, H, W] (see nn.InstanceNorm): each sample's channel
-- normalized over its spatial dims, PyTorch's layer and defaults.
local InstanceNorm2d = instance_norm_class('InstanceNorm2d', 4, '[N, C, H, W] or [C, H, W]')

-- nn.InstanceNorm3d(num_features, {eps = 1e-5, momentum = 0.1, affine = false, track_running_stats = false}):
-- instance normalization of [N, C, D, H, W] or [C, D, H, W] (see nn.InstanceNorm): each sample's channel
-- normalized over its spatial dims, PyTorch's layer and defaults.
local InstanceNorm3d = instance_norm_class('InstanceNorm3d', 5, '[N, C, D, H, W] or [C, D, H, W]')

-- ---------------------------------------------------------------------------
-- nn.LayerNorm(width_or_shape, {eps = 1e-5, elementwise_affine = true}): normalizes the
-- trailing dims of its input (the given width, or the shape's trailing dims) to mean 0 and
-- variance 1 (biased, eps inside the sqrt, as PyTorch), then y = xhat * weight + bias.
-- weight Param ones(shape), bias Param zeros(shape), both absent when elementwise_affine is false.
-- x [..., *shape] -> x's shape (one fused node: fnn.layer_norm)
local fnn_layer_norm = C.fnn_layer_norm

local LayerNorm = nn.Module:extend('LayerNorm')
local LAYERNORM_OPTS = options.declare('nn.LayerNorm', {
   {'eps', 'number', 1e-5, 'added to the variance for numerical stability', min = 0},
   {'elementwise_affine', 'boolean', true, 'learn a weight and bias of the normalised shape'},
})

local function layer_norm_filled(shape, value)   -- errors name LayerNorm
   local n, buf = parse_shape('LayerNorm', false, shape)
   local out = new()
   if (value == 1 and C.fnn_ones(out, n, buf) or C.fnn_zeros(out, n, buf)) ~= 0 then fail() end
   return done(out)
end

function LayerNorm:__init(shape, opts)
   if type(shape) == 'number' then shape = {shape} end
   if type(shape) ~= 'table' or #shape == 0 then
      error(('nn.LayerNorm: shape is %s, expected a width or a table of sizes (LayerNorm(width, {eps}))'):format(
         options.describe(shape)), 3)
   end
   local count = 1
   for i, v in ipairs(shape) do
      if type(v) ~= 'number' or v < 1 or v ~= math.floor(v) then
         error(('nn.LayerNorm: size %d is %s, expected a positive integer'):format(i, options.describe(v)), 3)
      end
      count = count * v
   end
   opts = LAYERNORM_OPTS:check(opts, 3)
   local eps, affine = opts.eps, opts.elementwise_affine
   self.shape, self.count, self.eps = {unpack(shape)}, count, eps
   if affine then
      self.weight = Param(layer_norm_filled(shape, 1))
      self.bias = Param(layer_norm_filled(shape, 0))
   end
end

local function shape_text(s) return '[' .. table.concat(s, ',') .. ']' end

-- the input's trailing dims must be the module's shape (PyTorch's rule), not just its count
local function ends_in(x, shape)
   local nd, k = x.ndim, #shape
   if nd < k then return false end
   for i = 1, k do
      if tonumber(x.shape_[nd - k + i - 1]) ~= shape[i] then return false end
   end
   return true
end

function LayerNorm:forward(x)
   if not istype(x) then
      error(('LayerNorm(%s): input is a %s, expected a tensor'):format(shape_text(self.shape), type(x)), 2)
   end
   if not ends_in(x, self.shape) then
      error(('LayerNorm(%s): input %s does not end in %s'):format(
            shape_text(self.shape), fnn_tensor.shape_str(x), shape_text(self.shape)), 2)
   end
   local w, b = self.weight, self.bias
   local out = new()
   if fnn_layer_norm(out, x, w and w:tensor() or nil, b and b:tensor() or nil, self.count, self.eps) ~= 0 then
      fail()
   end
   return done(out)
end

function LayerNorm:__tostring()
   return ('nn.LayerNorm(%s, eps=%g%s)'):format(shape_text(self.shape), self.eps,
                                                self.weight and '' or ', no affine')
end
M.LayerNorm = LayerNorm

-- ---------------------------------------------------------------------------
-- nn.GroupNorm(num_groups, num_channels, {eps = 1e-5, affine = true}): splits the channels of
-- [N, C, *] into num_groups groups and normalizes each (sample, group) over its channels and
-- spatial dims (biased variance, eps inside the sqrt), then y = xhat * weight + bias per channel.
-- weight Param ones [C], bias Param zeros [C] (absent when affine is false); the same in
-- training and eval. One fused C node: fnn.group_norm.
local fnn_group_norm = C.fnn_group_norm

local GroupNorm = nn.Module:extend('GroupNorm')
local GROUPNORM_OPTS = require('fastnn.options').declare('nn.GroupNorm', {
   {'eps', 'number', 1e-5, 'added to the variance for numerical stability', min = 0},
   {'affine', 'boolean', true, 'learn a per-channel weight and bias'},
})

function GroupNorm:__init(num_groups, num_channels, opts)
   M.check_size('GroupNorm', 'num_groups', num_groups)
   M.check_size('GroupNorm', 'num_channels', num_channels)
   if num_channels % num_groups ~= 0 then
      error(('nn.GroupNorm: num_channels %d is not divisible by num_groups %d'):format(num_channels, num_groups), 3)
   end
   opts = GROUPNORM_OPTS:check(opts, 3)
   local eps = opts.eps
   if eps == nil then eps = 1e-5 end
   if type(eps) ~= 'number' or eps < 0 then
      error(('nn.GroupNorm: eps is %s, expected a non-negative number'):format(show_value(eps)), 3)
   end
   self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
   self.affine = opts.affine == nil or opts.affine and true or false
   if self.affine then
      self.weight = Param(M.filled({num_channels}, 1))
      self.bias = Param(M.filled({num_channels}, 0))
   end
end

function GroupNorm:_label() return ('GroupNorm(%d, %d)'):format(self.num_groups, self.num_channels) end

function GroupNorm:forward(x)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(self:_label(), type(x)), 2) end
   if x.ndim < 2 then
      error(('%s: input %s must be [N, C, *] (2 or more dims)'):format(self:_label(), shape_str(x)), 2)
   end
   local c = tonumber(x.shape_[1])
   if c ~= self.num_channels then
      error(('%s: input %s has %d channels in dim 2, expected %d'):format(
         self:_label(), shape_str(x), c, self.num_channels), 2)
   end
   local w, b = self.weight, self.bias
   local out = new()
   if fnn_group_norm(out, x, self.num_groups, w and w:tensor() or nil, b and b:tensor() or nil, self.eps) ~= 0 then
      fail()
   end
   return done(out)
end

function GroupNorm:__tostring()
   return ('nn.GroupNorm(%d, %d, eps=%g, affine=%s)'):format(self.num_groups, self.num_channels, self.eps,
                                                            tostring(self.affine))
end
M.GroupNorm = GroupNorm

-- ---------------------------------------------------------------------------
-- nn.RMSNorm(normalized_shape, {eps = nil, elementwise_affine = true}): divides the trailing dims
-- of its input (a width, or a table of sizes) by their root mean square, y = x / sqrt(mean(x^2) +
-- eps) * weight (PyTorch's RMSNorm: no centring, no bias). eps nil: float32's machine epsilon.
-- weight Param ones(shape), absent when elementwise_affine is false. One fused C node: fnn.rms_norm.
local fnn_rms_norm = C.fnn_rms_norm

local FLOAT_EPS = 1.1920928955078125e-07   -- torch.finfo(torch.float32).eps

local RMSNorm = nn.Module:extend('RMSNorm')
local RMSNORM_OPTS = require('fastnn.options').declare('nn.RMSNorm', {
   {'eps', 'number', nil, 'added to the mean square for numerical stability', min = 0,
    default_doc = "nil: the float32 machine epsilon, as PyTorch's None"},
   {'elementwise_affine', 'boolean', true, 'learn a weight of the normalised shape'},
})

function RMSNorm:__init(shape, opts)
   if type(shape) == 'number' then shape = {shape} end
   if type(shape) ~= 'table' or #shape == 0 then
      error(('nn.RMSNorm: normalized_shape is %s, expected a width or a table of sizes'):format(show_value(shape)), 3)
   end
   local count = 1
   for i, v in ipairs(shape) do
      M.check_size('RMSNorm', 'size ' .. i, v)
      count = count * v
   end
   opts = RMSNORM_OPTS:check(opts, 3)
   local eps = opts.eps
   if eps ~= nil and (type(eps) ~= 'number' or eps < 0) then
      error(('nn.RMSNorm: eps is %s, expected a non-negative number or nil'):format(show_value(eps)), 3)
   end
   self.shape, self.count, self.eps = {unpack(shape)}, count, eps
   local affine = opts.elementwise_affine
   if affine == nil or affine then self.weight = Param(M.filled(shape, 1)) end
end

function RMSNorm:forward(x)
   local label = 'RMSNorm(' .. shape_text(self.shape) .. ')'
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(label, type(x)), 2) end
   if not ends_in(x, self.shape) then
      error(('%s: input %s does not end in %s'):format(label, shape_str(x), shape_text(self.shape)), 2)
   end
   local w = self.weight
   local out = new()
   if fnn_rms_norm(out, x, w and w:tensor() or nil, self.count, self.eps or FLOAT_EPS) ~= 0 then fail() end
   return done(out)
end

function RMSNorm:__tostring()
   return ('nn.RMSNorm(%s, eps=%s%s)'):format(shape_text(self.shape), self.eps and ('%g'):format(self.eps) or 'nil',
                                              self.weight and '' or ', no affine')
end
M.RMSNorm = RMSNorm

-- ---------------------------------------------------------------------------
-- nn.UnitNormalization({axis = -1}): Keras' layer, scales its input to unit L2 norm along axis
-- (a dim, 1-based or negative, or a table of dims): y = x / sqrt(max(sum(x^2), 1e-12)), the
-- floor as tf.math.l2_normalize, so an all-zero slice stays zero. No weights. A composition of
-- C ops (square, sum, clamp, rsqrt, mul): two passes over x, each vectorized in C.

local UnitNormalization = nn.Module:extend('UnitNormalization')
local UNITNORMALIZATION_OPTS = require('fastnn.options').declare('nn.UnitNormalization', {
   {'axis', 'integer|table', -1, 'the dim or dims normalised (1-based; negative from the end)'},
})

local EPS = 1e-12

function UnitNormalization:__init(opts)
   local axis = UNITNORMALIZATION_OPTS:check(opts, 3).axis
   local axes = type(axis) == 'table' and {unpack(axis)} or {axis}
   if #axes == 0 then error('nn.UnitNormalization: axis is an empty table, expected a dim or dims', 3) end
   for _, a in ipairs(axes) do
      if type(a) ~= 'number' or a ~= floor(a) or a == 0 then
         error(('nn.UnitNormalization: axis %s is not a dim (1-based, or negative from the end)'):format(
            tostring(a)), 3)
      end
   end
   self.axes = axes
end

function UnitNormalization:forward(x)
   if not istype(x) then
      error(('UnitNormalization: input is a %s, expected a tensor'):format(type(x)), 2)
   end
   local nd = x.ndim
   local ss = x * x
   for _, a in ipairs(self.axes) do
      if a > nd or a < -nd then
         error(('UnitNormalization: axis %d out of range for input %s (dims are 1..%d or -%d..-1)'):format(
            a, shape_str(x), nd, nd), 2)
      end
      ss = ss:sum(a, true)
   end
   return x * ss:clamp(EPS):rsqrt()
end

function UnitNormalization:__tostring()
   local axes = #self.axes == 1 and tostring(self.axes[1]) or ('{' .. table.concat(self.axes, ', ') .. '}')
   return ('nn.UnitNormalization(axis=%s)'):format(axes)
end
M.UnitNormalization = UnitNormalization

return M
