-- fastnn.ops.elementwise: bindings for core/ops/elementwise.c.
-- The pattern every op binding follows: a fresh header, one C call, `fail()`
-- raising the core's message at the caller's line, `done()` adding the
-- finalizer when the result holds memory. (+ - * / ^ and unary minus live in
-- tensor.lua because LuaJIT locks a metatype once it is set.)
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, as_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.as_tensor
local M = {}

-- a tensor argument checked before the C call: LuaJIT's own conversion error ("bad argument #2 to
-- 'cfn'") would name neither the op nor the caller's line
local is_tensor = fnn_tensor.is_tensor
local check_x = fnn_tensor.check_tensor
-- an argument past an op's last is refused at the caller's line (fastnn.tensor's too_many): each
-- binding names one parameter past its last, `extra`, and refuses it when it is not nil
local too_many = fnn_tensor.too_many

-- x:name() through fnn_<name>(out, x): x -> same shape
local function bind_unary(name)
   local cfn = C['fnn_' .. name]
   Tensor[name] = function(x, extra)
      if extra ~= nil then too_many(name, 2, extra, 'x') end
      check_x(name, x)
      local out = new()
      if cfn(out, x) ~= 0 then fail() end
      return done(out)
   end
end

-- unary ops without numbers (core/ops/elementwise_ops.h's FNN_MAP_UNARY_PLAIN): x -> same shape, as
-- x:name() and fnn.name(x); -x is neg
local PLAIN_UNARY = {'abs', 'exp', 'log', 'sqrt', 'rsqrt', 'sin', 'cos', 'tanh', 'sigmoid', 'relu', 'silu',
                     'softplus', 'selu', 'mish', 'hardsigmoid', 'hardswish', 'softsign', 'erf'}
for _, name in ipairs(PLAIN_UNARY) do bind_unary(name) end
bind_unary('neg')

-- gelu: exact (erf) by default, {approximate = 'tanh'} for the tanh form
local GELU_OPTS = require('fastnn.options').declare('Tensor.gelu', {
   {'approximate', 'string', 'none', "'none' (exact, through erf) or 'tanh' (the tanh approximation)",
    values = {'none', 'tanh'}},
})
function Tensor.gelu(x, opts, extra)
   if extra ~= nil then too_many('gelu', 3, extra, "x[, {approximate = 'tanh'}]") end
   check_x('gelu', x)
   local out = new()
   local tanh_form = GELU_OPTS:check(opts, 2).approximate == 'tanh'
   if (tanh_form and C.fnn_gelu_tanh(out, x) or C.fnn_gelu(out, x)) ~= 0 then fail() end
   return done(out)
end

-- clamp(min, max): nil means no bound on that side
function Tensor.clamp(x, lo, hi, extra)
   if extra ~= nil then too_many('clamp', 4, extra, 'x, min, max') end
   check_x('clamp', x)
   local out = new()
   if C.fnn_clamp(out, x, lo or -math.huge, hi or math.huge) ~= 0 then fail() end
   return done(out)
end

Tensor.hard_sigmoid, Tensor.hard_swish = Tensor.hardsigmoid, Tensor.hardswish   -- the Keras names

-- activations with one number: leaky_relu(negative_slope = 0.01), elu(alpha = 1), celu(alpha = 1)
for name, spec in pairs{leaky_relu = {'negative_slope', 0.01}, elu = {'alpha', 1}, celu = {'alpha', 1}} do
   local cfn, what, default = C['fnn_' .. name], spec[1], spec[2]
   local takes = 'x[, ' .. what .. ']'
   Tensor[name] = function(x, k, extra)
      if extra ~= nil then too_many(name, 3, extra, takes) end
      if k == nil then k = default end
      if type(k) ~= 'number' then
         error(('%s: %s is a %s, expected a number'):format(name, what, type(k)), 2)
      end
      check_x(name, x)
      local out = new()
      if cfn(out, x, k) ~= 0 then fail() end
      return done(out)
   end
end

-- logit(eps): log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given (torch.logit)
function Tensor.logit(x, eps, extra)
   if extra ~= nil then too_many('logit', 3, extra, 'x[, eps]') end
   if eps ~= nil and type(eps) ~= 'number' then
      error(('logit: eps is a %s, expected a number in [0, 0.5] or nil'):format(type(eps)), 2)
   end
   if eps ~= nil and not (eps >= 0) then error(('logit: eps is %s, expected a number in [0, 0.5] or nil'):format(eps), 2) end
   check_x('logit', x)
   local out = new()
   if C.fnn_logit(out, x, eps or -1) ~= 0 then fail() end
   return done(out)
end

-- binary with broadcasting; numbers are accepted as 0-dim tensors
for _, name in ipairs{'maximum', 'minimum', 'eq', 'ne', 'lt', 'le', 'gt', 'ge'} do
   local cfn = C['fnn_' .. name]
   Tensor[name] = function(a, b, extra)
      if extra ~= nil then too_many(name, 3, extra, 'a, b') end
      local out = new()
      if cfn(out, as_tensor(name, a, 1, b), as_tensor(name, b, 2, a)) ~= 0 then fail() end
      return done(out)
   end
end

-- where(cond, a, b): cond ~= 0 picks a, else b (all three broadcast)
function M.where(cond, a, b, extra)
   if extra ~= nil then too_many('where', 4, extra, 'cond, a, b') end
   local out = new()
   -- a number takes the dtype and device of the other value (of cond when both are numbers)
   if C.fnn_where(out, as_tensor('where', cond, 1), as_tensor('where', a, 2, type(b) == 'number' and cond or b),
                  as_tensor('where', b, 3, type(a) == 'number' and cond or a)) ~= 0 then
      fail()
   end
   return done(out)
end
Tensor.where = function(cond, a, b, extra) return M.where(cond, a, b, extra) end

-- the unary ops are fnn functions too: fnn.relu(x), fnn.leaky_relu(x, 0.2)
for _, name in ipairs(PLAIN_UNARY) do M[name] = Tensor[name] end
for _, name in ipairs{'gelu', 'clamp', 'leaky_relu', 'elu', 'celu', 'logit', 'hard_sigmoid', 'hard_swish'} do
   M[name] = Tensor[name]
end
-- and the named arithmetic (a:add(b), fnn.add(a, b); fastnn.tensor makes them): here, so that
-- fastnn.precision leaves them to the core's bfloat16 path as it leaves this family's other ops
for _, name in ipairs{'add', 'sub', 'mul', 'div', 'pow'} do M[name] = Tensor[name] end

return M
