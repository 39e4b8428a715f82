-- fastnn.ops.norm: bindings for core/ops/norm.c.
--   fnn.layer_norm(x, w, b, {eps = 1e-5})  normalizes each row of the trailing elements of x
--       (biased variance, eps inside the sqrt, as PyTorch) then y = xhat * w + b. The
--       normalized size is w's element count when w is given, else b's, else x's last dim;
--       w and b may be nil. Returns x's shape. Also x:layer_norm(w, b, opts).
--   fnn.add_layer_norm(x, r, w, b, {eps = 1e-5})  s = x + r (r of x's shape) and y =
--       fnn.layer_norm(s, w, b, {eps}) from one pass over the rows; returns s, y, whose graph,
--       values and gradients are those of the two ops (a pre-norm block's residual and its norm).
--   fnn.batch_norm(x, running_mean, running_var, w, b, {training = false, eps = 1e-5, activation = 'none'})
--       x [N, C] or [N, C, *]; the others [C] (w, b may be nil). Eval normalizes with the running
--       stats; training with the batch's per-channel mean and biased variance and returns
--       y, batch_mean, batch_var (the UNBIASED variance, what PyTorch folds into running_var):
--       tensors are immutable, so the caller makes the new running stats from them (the running
--       stats may be nil in training). activation = 'relu': y is relu(batch_norm(...)), values and
--       gradients, from one node whose passes over x do the relu too (no tensor between).
--   fnn.group_norm(x, num_groups, w, b, {eps = 1e-5})  x [N, C, *]: statistics per (sample, group
--       of C/num_groups channels); w, b [C] or nil (PyTorch's F.group_norm).
--   fnn.instance_norm(x, w, b, {eps = 1e-5})  group_norm with one group per channel.
--   fnn.rms_norm(x, w, {eps, normalized_shape})  y = x / sqrt(mean(x^2) + eps) * w over the
--       trailing dims: w's element count, else normalized_shape (a size or a table of sizes),
--       else x's last dim. eps nil: float32's machine epsilon (PyTorch).
-- Each is also a method: x:batch_norm(...), x:group_norm(...), ...
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, is_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local M = {}

local FLOAT_EPS = 1.1920928955078125e-07   -- torch.finfo(torch.float32).eps

-- raised at the user's line: 1 here, 2 the binding, 3 its caller
local check_tensor = fnn_tensor.check_tensor
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped
local function check_optional(op, t, what)
   if t ~= nil then check_tensor(op, t, what) end
end

-- the functional norms' options (the layers declare theirs)
local NORM_OPTS = {}
do
   local declare = require('fastnn.options').declare
   local eps = {'eps', 'number', nil, 'added to the variance', default_doc = '1e-5 (rms_norm: float32 epsilon)'}
   for _, op in ipairs{'layer_norm', 'add_layer_norm', 'group_norm', 'instance_norm'} do
      NORM_OPTS[op] = declare('fnn.' .. op, {eps})
   end
   NORM_OPTS.batch_norm = declare('fnn.batch_norm', {eps,
      {'training', 'boolean', false, 'normalize by the batch statistics and return them (mean, unbiased variance)'},
      {'activation', 'string', 'none', 'applied to y in the same passes, forward and backward',
       values = {'none', 'relu'}}})
   NORM_OPTS.rms_norm = declare('fnn.rms_norm', {eps,
      {'normalized_shape', 'any', nil, 'the trailing sizes normalized over, without a weight',
       default_doc = 'the last dim'}})
end

-- opts: a table, or eps as a number; returns the table (maybe empty) and eps
local function options(op, opts, default_eps)
   local eps = default_eps
   if type(opts) == 'number' then
      eps, opts = opts, {}
   elseif type(opts) == 'table' then
      NORM_OPTS[op]:check(opts, 3)
      if opts.eps ~= nil then eps = opts.eps end
   elseif opts == nil then
      opts = {}
   else
      error(('%s: options must be a table like {eps = 1e-5}, got a %s'):format(op, type(opts)), 3)
   end
   if type(eps) ~= 'number' then
      error(('%s: eps is a %s, expected a number'):format(op, type(eps)), 3)
   end
   return opts, eps
end

local fnn_layer_norm = C.fnn_layer_norm
function M.layer_norm(x, w, b, opts, extra)
   if extra ~= nil then too_many('layer_norm', 5, extra, 'x, w, b, opts') end
   check_tensor('layer_norm', x, 'input')
   check_optional('layer_norm', w, 'weight')
   check_optional('layer_norm', b, 'bias')
   local _, eps = options('layer_norm', opts, 1e-5)
   local n
   if w ~= nil then n = w:numel()
   elseif b ~= nil then n = b:numel()
   elseif x.ndim > 0 then n = tonumber(x.shape_[x.ndim - 1])
   else n = 1 end
   local out = new()
   if fnn_layer_norm(out, x, w, b, n, eps) ~= 0 then fail() end
   return done(out)
end
Tensor.layer_norm = M.layer_norm

local fnn_add_layer_norm = C.fnn_add_layer_norm
function M.add_layer_norm(x, r, w, b, opts, extra)
   if extra ~= nil then too_many('add_layer_norm', 6, extra, 'x, r, w, b, opts') end
   check_tensor('add_layer_norm', x, 'input')
   check_tensor('add_layer_norm', r, 'residual')
   check_optional('add_layer_norm', w, 'weight')
   check_optional('add_layer_norm', b, 'bias')
   local _, eps = options('add_layer_norm', opts, 1e-5)
   local n   -- as layer_norm's
   if w ~= nil then n = w:numel()
   elseif b ~= nil then n = b:numel()
   elseif x.ndim > 0 then n = tonumber(x.shape_[x.ndim - 1])
   else n = 1 end
   local s, out = new(), new()
   if fnn_add_layer_norm(s, out, x, r, w, b, n, eps) ~= 0 then fail() end
   return done(s), done(out)
end
Tensor.add_layer_norm = M.add_layer_norm

-- fnn_norm_activation's codes by option value (core/include/fastnn.h)
M.ACTIVATIONS = {none = C.FNN_NORM_ACT_NONE, relu = C.FNN_NORM_ACT_RELU}

local fnn_batch_norm = C.fnn_batch_norm
function M.batch_norm(x, running_mean, running_var, w, b, opts, extra)
   if extra ~= nil then too_many('batch_norm', 7, extra, 'x, running_mean, running_var, w, b, opts') end
   check_tensor('batch_norm', x, 'input')
   check_optional('batch_norm', running_mean, 'running_mean')
   check_optional('batch_norm', running_var, 'running_var')
   check_optional('batch_norm', w, 'weight')
   check_optional('batch_norm', b, 'bias')
   local o, eps = options('batch_norm', opts, 1e-5)
   local act = M.ACTIVATIONS[o.activation or 'none']   -- eps as a number: no table, no activation
   local out = new()
   if o.training then
      local mean, var = new(), new()
      if fnn_batch_norm(out, mean, var, x, running_mean, running_var, w, b, 1, eps, act) ~= 0 then fail() end
      return done(out), done(mean), done(var)
   end
   if fnn_batch_norm(out, nil, nil, x, running_mean, running_var, w, b, 0, eps, act) ~= 0 then fail() end
   return done(out)
end
Tensor.batch_norm = M.batch_norm

local fnn_group_norm = C.fnn_group_norm
function M.group_norm(x, groups, w, b, opts, extra)
   if extra ~= nil then too_many('group_norm', 6, extra, 'x, groups, w, b, opts') end
   check_tensor('group_norm', x, 'input')
   if type(groups) ~= 'number' or groups ~= math.floor(groups) or groups < 1 then
      error(('group_norm: num_groups is %s, expected a positive integer'):format(show_value(groups)), 2)
   end
   check_optional('group_norm', w, 'weight')
   check_optional('group_norm', b, 'bias')
   local _, eps = options('group_norm', opts, 1e-5)
   local out = new()
   if fnn_group_norm(out, x, groups, w, b, eps) ~= 0 then fail() end
   return done(out)
end
Tensor.group_norm = M.group_norm

function M.instance_norm(x, w, b, opts, extra)
   if extra ~= nil then too_many('instance_norm', 5, extra, 'x, w, b, opts') end
   check_tensor('instance_norm', x, 'input')
   check_optional('instance_norm', w, 'weight')
   check_optional('instance_norm', b, 'bias')
   local _, eps = options('instance_norm', opts, 1e-5)
   if x.ndim < 2 then
      error(('instance_norm: input %s must be [N, C, *] (2 or more dims)'):format(fnn_tensor.shape_str(x)), 2)
   end
   local out = new()
   if fnn_group_norm(out, x, math.max(1, tonumber(x.shape_[1])), w, b, eps) ~= 0 then fail() end
   return done(out)
end
Tensor.instance_norm = M.instance_norm

local fnn_rms_norm = C.fnn_rms_norm
function M.rms_norm(x, w, opts, extra)
   if extra ~= nil then too_many('rms_norm', 4, extra, 'x, w, opts') end
   check_tensor('rms_norm', x, 'input')
   check_optional('rms_norm', w, 'weight')
   local o, eps = options('rms_norm', opts, FLOAT_EPS)
   local n
   if w ~= nil then
      n = w:numel()
   elseif o.normalized_shape ~= nil then
      local s = o.normalized_shape
      if type(s) == 'number' then s = {s} end
      if type(s) ~= 'table' then
         error(('rms_norm: normalized_shape is a %s, expected a size or a table of sizes'):format(type(s)), 2)
      end
      n = 1
      for _, v in ipairs(s) do n = n * v end
   elseif x.ndim > 0 then
      n = tonumber(x.shape_[x.ndim - 1])
   else
      n = 1
   end
   local out = new()
   if fnn_rms_norm(out, x, w, n, eps) ~= 0 then fail() end
   return done(out)
end
Tensor.rms_norm = M.rms_norm

return M
