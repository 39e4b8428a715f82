-- The batch and instance normalization layers, and helpers the other norms use:
--   BatchNorm -> BatchNorm1d, BatchNorm2d, BatchNorm3d (statistics over the batch)
--   InstanceNormBase -> InstanceNorm, InstanceNorm1d/2d/3d (per sample and channel)
--   M.filled(shape, value), M.check_size(layer, what, v, level)   (GroupNorm.lua, RMSNorm.lua)
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

-- num_features, eps, momentum, affine (weight ones, bias zeros), running stats as buffers
local options = require 'fastnn.options'
local function declare(name, affine_default, track_default)
   return options.declare('nn.' .. name, {
      {'eps', 'number', 1e-5, 'added to the variance for numerical stability', min = 0},
      {'momentum', 'number|boolean', 0.1, 'running = (1 - momentum) running + momentum batch; false: a cumulative average '
       .. "(PyTorch's None)", min = 0, max = 1, expect = 'a number in [0, 1] or false',
       check = function(v) if v == true then return 'expected a number in [0, 1] or false' end end},
      {'affine', 'boolean', affine_default, 'learn a per-channel weight and bias'},
      {'track_running_stats', 'boolean', track_default, 'keep running mean and variance for evaluation'},
   })
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
   return ('nn.%s(%s)'):format(self._name, table.concat(parts, ', '))
end

local function param_tensor(p) return p and p:tensor() or nil end

-- ---------------------------------------------------------------------------
-- BatchNorm: nn.BatchNorm{1,2,3}d(num_features, {eps = 1e-5, momentum = 0.1, affine = true,
-- track_running_stats = true}); class fields _ok_dims (the input dim counts it takes) and
-- _layout (their text)

local fnn_batch_norm, fnn_group_norm = C.fnn_batch_norm, C.fnn_group_norm

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
   local out = new()
   if self.training or not self.track_running_stats then
      local mean, var = new(), new()
      if fnn_batch_norm(out, mean, var, x, nil, nil, w, b, 1, self.eps) ~= 0 then fail() end
      if self.training and self.track_running_stats then update_running(self, done(mean), done(var)) end
   elseif fnn_batch_norm(out, nil, nil, x, self.running_mean, self.running_var, w, b, 0, self.eps) ~= 0 then
      fail()
   end
   return done(out)
end

BatchNorm.__tostring = describe

local function batch_norm_class(name, ndims, layout)
   local cls = BatchNorm:extend(name)
   cls._title, cls._layout, cls._ok_dims = name, layout, {}
   for _, d in ipairs(ndims) do cls._ok_dims[d] = true end
   cls._OPTS = declare(name, true, true)
   M[name] = cls
   return cls
end

-- nn.BatchNorm1d(num_features, {eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true}):
-- batch normalization of [N, C] or [N, C, L] over N (and L) per channel, PyTorch's layer.
-- Training normalizes with the batch's mean and biased variance and moves the buffers
-- running_mean, running_var toward the batch mean and unbiased variance:
-- running = (1 - momentum) running + momentum batch (momentum = false: a cumulative average),
-- counting num_batches_tracked; eval normalizes with the running stats. weight Param ones [C],
-- bias Param zeros [C] (absent when affine is false). One fused C node: fnn.batch_norm.
local BatchNorm1d = batch_norm_class('BatchNorm1d', {2, 3}, '[N, C] or [N, C, L]')

-- nn.BatchNorm2d(num_features, {eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true}):
-- batch normalization of images [N, C, H, W] over N, H, W per channel, PyTorch's layer.
-- Training normalizes with the batch's mean and biased variance and moves the buffers
-- running_mean, running_var toward the batch mean and unbiased variance:
-- running = (1 - momentum) running + momentum batch (momentum = false: a cumulative average),
-- counting num_batches_tracked; eval normalizes with the running stats. weight Param ones [C],
-- bias Param zeros [C] (absent when affine is false). One fused C node: fnn.batch_norm.
local BatchNorm2d = batch_norm_class('BatchNorm2d', {4}, '[N, C, H, W]')

-- nn.BatchNorm3d(num_features, {eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true}):
-- batch normalization of volumes [N, C, D, H, W] over N, D, H, W per channel, PyTorch's layer.
-- Training normalizes with the batch's mean and biased variance and moves the buffers
-- running_mean, running_var toward the batch mean and unbiased variance:
-- running = (1 - momentum) running + momentum batch (momentum = false: a cumulative average),
-- counting num_batches_tracked; eval normalizes with the running stats. weight Param ones [C],
-- bias Param zeros [C] (absent when affine is false). One fused C node: fnn.batch_norm.
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
   elseif fnn_batch_norm(out, nil, nil, x, self.running_mean, self.running_var, w, b, 0, self.eps) ~= 0 then
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

return M
