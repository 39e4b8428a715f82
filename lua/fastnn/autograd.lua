-- fastnn.autograd: backward, detach, grad modes, anomaly detection, Param and
-- gradcheck. The graph itself lives in C (core/autograd/); this is its Lua face.
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local unpack = unpack or table.unpack
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped
local M = {}

-- y:backward() for a scalar, y:backward(grad) otherwise; gradients accumulate into Params
function Tensor.backward(t, grad, extra)
   if extra ~= nil then too_many('backward', 3, extra, 't, grad') end
   if grad ~= nil and not istype(grad) then
      error(('backward: gradient is a %s, expected a tensor'):format(type(grad)), 2)
   end
   if C.fnn_backward(t, grad) ~= 0 then fail() end
end

function Tensor.detach(t, extra)
   if extra ~= nil then too_many('detach', 2, extra, 't') end
   local out = new()
   if C.fnn_detach(out, t) ~= 0 then fail() end
   return done(out)
end

-- the name of the op that made t, nil for plain data
function Tensor.grad_fn(t, extra)
   if extra ~= nil then too_many('grad_fn', 2, extra, 't') end
   local name = C.fnn_grad_fn_name(t)
   if name == nil then return nil end
   return ffi.string(name)
end

-- run fn with a per-thread flag set, restoring it even when fn raises
local function with_flag(get, set, value)
   return function(fn, ...)
      if type(fn) ~= 'function' then error('expected a function, got a ' .. type(fn), 2) end
      local prev = get()
      set(value)
      local results = {pcall(fn, ...)}
      set(prev)
      if not results[1] then error(results[2], 0) end
      return unpack(results, 2, table.maxn(results))
   end
end
M.no_grad = with_flag(C.fnn_grad_enabled, C.fnn_set_grad_enabled, 0)
M.enable_grad = with_flag(C.fnn_grad_enabled, C.fnn_set_grad_enabled, 1)
M.detect_anomaly = with_flag(C.fnn_anomaly_enabled, C.fnn_set_anomaly_enabled, 1)
function M.is_grad_enabled(extra)
   if extra ~= nil then too_many('is_grad_enabled', 1, extra, '') end
   return C.fnn_grad_enabled() ~= 0
end
function M.live_nodes(extra)
   if extra ~= nil then too_many('live_nodes', 1, extra, '') end
   return tonumber(C.fnn_live_nodes())
end

-- ---------------------------------------------------------------------------
-- Param: a trainable leaf. It owns a private copy of its value; p:tensor()
-- hands out a tensor whose gradient flows back into p (detached when frozen).
local Param = require('fastnn.class')('Param')
M.Param = Param

function Param.__new(cls, value)
   if not istype(value) then
      error(('Param: expected a tensor, got a %s'):format(type(value)), 2)
   end
   local node = C.fnn_param_new(value)
   if node == nil then fail() end
   return setmetatable({node = ffi.gc(node, C.fnn_node_release)}, cls)
end

function Param.is_param(x) return getmetatable(x) == Param end

function Param:tensor()
   local out = new()
   if C.fnn_param_tensor(out, self.node) ~= 0 then fail() end
   return done(out)
end

-- the accumulated gradient, or nil before any backward reached this param
function Param:grad()
   local out = new()
   if C.fnn_param_grad(out, self.node) ~= 0 then fail() end
   if out.ndim < 0 then return nil end
   return done(out)
end

function Param:zero_grad() C.fnn_param_zero_grad(self.node) end
function Param:set(t)
   if not istype(t) then error(('Param:set: expected a tensor, got a %s'):format(type(t)), 2) end
   if C.fnn_param_set(self.node, t) ~= 0 then fail() end
   return self
end
function Param:set_grad(g)
   if not istype(g) then error(('Param:set_grad: expected a tensor, got a %s'):format(type(g)), 2) end
   if C.fnn_param_set_grad(self.node, g) ~= 0 then fail() end
end
function Param:freeze() C.fnn_param_set_frozen(self.node, 1); return self end
function Param:unfreeze() C.fnn_param_set_frozen(self.node, 0); return self end
function Param:frozen() return C.fnn_param_frozen(self.node) ~= 0 end
function Param:shape() return self:tensor():shape() end
function Param:numel() return self:tensor():numel() end
function Param:__tostring()
   return ('nn.Param of shape %s%s'):format(fnn_tensor.shape_str(self:tensor()), self:frozen() and ' (frozen)' or '')
end

-- ---------------------------------------------------------------------------
-- gradients_are_finite(params): the cheap guard before a step
function M.gradients_are_finite(params, extra)
   if extra ~= nil then too_many('gradients_are_finite', 2, extra, 'params') end
   for _, p in ipairs(params) do
      if C.fnn_grad_all_finite(p.node) == 0 then return false end
   end
   return true
end

-- ---------------------------------------------------------------------------
-- gradcheck(fn, inputs, {eps, atol, rtol}): compares the gradient backward
-- computes for each input with central finite differences of fn itself.
-- The output is projected on fixed weights w (loss = sum(w * y)), so every
-- output element takes part; sums are taken in Lua doubles.
-- Returns true, or false and a report naming the input and element.
local GRADCHECK = require('fastnn.options').declare('fnn.gradcheck', {
   {'eps', 'number', 1e-3, 'the finite-difference step', min = 0, min_open = true},
   {'atol', 'number', 1e-2, 'absolute tolerance', min = 0},
   {'rtol', 'number', 1e-2, 'relative tolerance', min = 0},
})
function M.gradcheck(fn, inputs, opts, extra)
   if extra ~= nil then too_many('gradcheck', 4, extra, 'fn, inputs, opts') end
   opts = GRADCHECK:check(opts, 2)
   local eps, atol, rtol = opts.eps, opts.atol, opts.rtol
   local first = function(y) return y end
   local function eval(values)
      return first(M.no_grad(fn, unpack(values, 1, #inputs)))
   end
   local y0 = eval(inputs)
   if not istype(y0) then error('gradcheck: fn must return a tensor', 2) end
   local n_out = y0:numel()
   local w = {}
   for i = 1, n_out do w[i] = 0.5 + ((i * 7919) % 101) / 101 end   -- fixed, distinct weights
   local function project(y)
      local v, s = y:to_flat(), 0
      for i = 1, n_out do s = s + w[i] * v[i] end
      return s
   end

   local params, ts = {}, {}
   for i, x in ipairs(inputs) do
      params[i] = Param(x)
      ts[i] = params[i]:tensor()
   end
   local y = fn(unpack(ts, 1, #inputs))
   if y.node == nil then return false, 'gradcheck: the output does not depend on any input' end
   y:backward(fnn_tensor.tensor(w, y0:shape()))

   local report = {}
   for i, x in ipairs(inputs) do
      local base, shape = x:to_flat(), x:shape()
      local g = params[i]:grad()
      local analytic = g and g:to_flat() or {}
      local values = {}
      for k = 1, #inputs do values[k] = inputs[k] end
      for j = 1, #base do
         local save = base[j]
         base[j] = save + eps
         values[i] = fnn_tensor.tensor(base, shape)
         local fp = project(eval(values))
         base[j] = save - eps
         values[i] = fnn_tensor.tensor(base, shape)
         local fm = project(eval(values))
         base[j] = save
         local numeric = (fp - fm) / (2 * eps)
         local a = analytic[j] or 0
         if math.abs(numeric - a) > atol + rtol * math.abs(numeric) then
            report[#report + 1] = ('input %d element %d: analytic %.6g, numeric %.6g'):format(i, j, a, numeric)
            if #report >= 5 then break end
         end
      end
   end
   if #report > 0 then return false, table.concat(report, '\n') end
   return true
end

return M
