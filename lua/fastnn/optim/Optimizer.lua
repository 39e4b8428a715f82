-- optim.Optimizer: the base every optimizer extends. It parses the call forms,
-- keeps parameter groups and per-parameter state, and leaves the arithmetic to
-- each class's `update` (one fused C call per parameter).
--   optim.Adam(params, 1e-3, {weight_decay = 1e-4})
--   optim.Adam(params, {lr = 1e-3})
--   optim.Adam{lr = 1e-3}                       -- unbound; opt:bind(params) later
--   optim.SGD({ {params = a, lr = 0.1}, {params = b} }, {lr = 0.01, momentum = 0.9})
-- params: a list of nn.Param, a module (its parameters()), or named {name, p} pairs.
-- A class declares `defaults` (PyTorch's option names and values), `state_tensors`
-- (names of its per-parameter state tensors), and implements
-- `update(p, group, st)` where st.step already counts this step.
-- Weight decay comes in two named forms: `weight_decay` alone is coupled (L2: wd * p added to
-- the gradient, PyTorch's default); with `decoupled_weight_decay = true` it is decoupled
-- (p *= 1 - lr * wd before the update, AdamW's form). update() asks coupled_decay(p, group)
-- for the coefficient to put into the gradient.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local autograd = require 'fastnn.autograd'
local C, new, done, fail = fnn_tensor.C, fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail
local Param = autograd.Param
local is_param = Param.is_param
local options = require 'fastnn.options'
local class = require 'fastnn.class'
local declare

local Optimizer = class('Optimizer')
Optimizer.defaults = {}
Optimizer.state_tensors = {}

local function param_list(what, params)
   return require('fastnn.optim')._param_list(what, params)
end

local function copy_value(v)
   if type(v) == 'table' then
      local c = {}
      for k, x in pairs(v) do c[k] = x end
      return c
   end
   return v
end

-- options = defaults <- opts: fastnn.options refuses names (nearest first) and types the class
-- does not declare; check_options adds each class's ranges
local GROUP_KEYS = {params = true}
local function merge_options(cls, base, opts, allow_params)
   local out = {}
   for k, v in pairs(base) do out[k] = copy_value(v) end
   if opts ~= nil then
      local given = cls._options:check(opts, 0, allow_params and GROUP_KEYS or nil)
      for k, v in pairs(given) do
         if k ~= 'params' and opts[k] ~= nil then out[k] = copy_value(v) end
      end
   end
   cls.check_options(cls, out)
   return out
end

local function strip_where(msg)
   if type(msg) ~= 'string' then return msg end
   return (msg:gsub('^[^:\n]+:%d+: ', ''))
end

-- the constructor: Class(params, lr, opts) | Class(params, opts) | Class(opts)
local function build(cls, params, lr, opts, extra)
   if extra ~= nil then   -- refused, never dropped
      error(('optim.%s: unexpected argument 4 (%s); it takes (params, lr, opts)'):format(cls._name,
            options.describe(extra)), 0)
   end
   if type(lr) == 'table' and opts == nil then lr, opts = nil, lr end
   if lr ~= nil and type(lr) ~= 'number' then
      error(('optim.%s: lr is a %s, expected a number'):format(cls._name, type(lr)), 0)
   end
   if opts ~= nil and type(opts) ~= 'table' then
      error(('optim.%s: options must be a table, got a %s'):format(cls._name, type(opts)), 0)
   end
   -- a table with option keys and no array part is the unbound form
   local unbound = params == nil
   if type(params) == 'table' and not is_param(params) and params.parameters == nil
      and #params == 0 and next(params) ~= nil and lr == nil and opts == nil then
      opts, params, unbound = params, nil, true
   end
   local self = setmetatable({}, cls)
   local base = merge_options(cls, cls.defaults, opts)
   if lr ~= nil then
      base.lr = lr
      cls.check_options(cls, base)
   end
   self.options = base           -- what a group without its own value gets
   self.groups = {}
   self._state = {}              -- Param -> {step = n, <state tensors>}
   self._steps = 0
   if not unbound then self:_bind(params) end
   return self
end

local function construct(cls, ...)
   local ok, r = pcall(build, cls, ...)
   if not ok then error(strip_where(r), 2) end
   return r
end

-- one line per option name any optimizer takes: the declaration's doc (docs/options.md)
local DOCS = {
   lr = 'learning rate', betas = 'coefficients {b1, b2} of the running averages of the gradient and its square',
   eps = 'added to the denominator for numerical stability', weight_decay = 'weight decay coefficient (L2 unless decoupled)',
   decoupled_weight_decay = 'apply weight decay as p *= 1 - lr * wd (AdamW) instead of adding it to the gradient',
   amsgrad = 'use the maximum of past squared-gradient averages (AMSGrad)', momentum = 'momentum factor',
   dampening = 'dampening of the momentum', nesterov = 'Nesterov momentum', alpha = 'smoothing constant of the squared average',
   centered = 'normalise by the centered variance of the gradient', rho = 'coefficient of the running averages',
   lr_decay = 'learning-rate decay per step', initial_accumulator_value = 'starting value of the squared-gradient sum',
}
local TYPES = {number = 'number', boolean = 'boolean', table = 'table'}

-- the class's options as a fastnn.options declaration, from its defaults
declare = function(cls)
   local entries = {}
   for k, v in pairs(cls.defaults) do
      entries[#entries + 1] = {k, TYPES[type(v)] or 'any', v, DOCS[k] or k}
   end
   table.sort(entries, function(a, b) return a[1] < b[1] end)
   return options.declare('optim.' .. cls._name, entries)
end

function Optimizer:extend(name, defaults, state_tensors)
   local cls = class.extend(self, name, {construct = construct})
   cls.defaults = {}
   for k, v in pairs(self.defaults) do cls.defaults[k] = v end
   for k, v in pairs(defaults or {}) do cls.defaults[k] = v end
   cls.state_tensors = state_tensors or self.state_tensors
   cls._options = declare(cls)
   return cls
end

-- validate option values; classes add their own checks
function Optimizer.check_options(cls, o)
   if o.lr ~= nil and (type(o.lr) ~= 'number' or o.lr < 0) then
      error(('optim.%s: invalid learning rate %s'):format(cls._name, tostring(o.lr)), 0)
   end
   if o.weight_decay ~= nil and (type(o.weight_decay) ~= 'number' or o.weight_decay < 0) then
      error(('optim.%s: invalid weight_decay %s'):format(cls._name, tostring(o.weight_decay)), 0)
   end
end

-- shared checks: a number in [lo, hi) (hi_open) or [lo, hi]
function Optimizer.check_range(cls, what, v, lo, hi, hi_open)
   if type(v) ~= 'number' or v ~= v or v < lo or (hi_open and v >= hi) or (not hi_open and v > hi) then
      error(('optim.%s: invalid %s %s (expected a number in [%g, %g%s)'):format(cls._name, what, show_value(v), lo, hi,
            hi_open and '' or ']'), 0)
   end
end
function Optimizer.check_betas(cls, b)
   if type(b) ~= 'table' or type(b[1]) ~= 'number' or type(b[2]) ~= 'number'
      or b[1] < 0 or b[1] >= 1 or b[2] < 0 or b[2] >= 1 then
      error(('optim.%s: betas must be {b1, b2} with each in [0, 1), got %s'):format(cls._name,
            type(b) == 'table' and ('{' .. tostring(b[1]) .. ', ' .. tostring(b[2]) .. '}') or tostring(b)), 0)
   end
end

-- bind(params): add parameters (a list, a module, or a list of groups)
function Optimizer:bind(params, extra)
   if extra ~= nil then too_many(('optim.%s:bind'):format(self._name), 2, extra, 'params') end
   local ok, r = pcall(self._bind, self, params)
   if not ok then error(strip_where(r), 2) end
   return r
end

function Optimizer:_bind(params)
   local cls = getmetatable(self)
   local first = type(params) == 'table' and params[1]
   local is_groups = type(first) == 'table' and not is_param(first) and first.params ~= nil
   local specs = is_groups and params or {{params = params}}
   local seen = {}
   for _, g in ipairs(self.groups) do
      for _, p in ipairs(g.params) do seen[p] = true end
   end
   for gi, spec in ipairs(specs) do
      local group = merge_options(cls, self.options, spec, true)
      group.params = param_list(('optim.%s group %d'):format(cls._name, gi), spec.params)
      for _, p in ipairs(group.params) do
         if seen[p] then
            error(('optim.%s: a parameter appears twice'):format(cls._name), 0)
         end
         seen[p] = true
      end
      self.groups[#self.groups + 1] = group
   end
   return self
end

-- a reusable header for asking whether a param has a gradient (no allocation)
local grad_probe = new()
local fnn_param_grad, fnn_tensor_clear, fnn_param_frozen = C.fnn_param_grad, C.fnn_tensor_clear, C.fnn_param_frozen

local function has_grad(p)
   local node = p.node
   if fnn_param_frozen(node) ~= 0 then return false end
   if fnn_param_grad(grad_probe, node) ~= 0 then fail() end
   local has = grad_probe.ndim >= 0
   fnn_tensor_clear(grad_probe)
   return has
end

-- a zero tensor shaped (and placed) like p's value: fresh storage the kernels update in place,
-- made on p's device (a GPU parameter's state is filled there, not sent over from the host)
function Optimizer.zeros_like_param(p) return Optimizer.full_like_param(p, 0) end

-- st[k] = zeros_like_param(p) for each state tensor k of names that st does not hold yet: each
-- buffer on its own (load_state refuses a state missing one)
function Optimizer.zero_state(p, st, names)
   for i = 1, #names do
      local k = names[i]
      if st[k] == nil then st[k] = Optimizer.zeros_like_param(p) end
   end
end

-- step(closure): one update of every parameter that has a gradient (frozen ones are skipped).
-- closure, when given, is called first (grad on) and its result returned.
function Optimizer:step(closure, extra)
   if extra ~= nil then too_many(('optim.%s:step'):format(self._name), 2, extra, 'closure') end
   local loss
   if closure ~= nil then loss = autograd.enable_grad(closure) end
   local state = self._state
   local profiling = fnn_tensor.profiling()   -- fnn.profile: each update is an op of its own
   -- a rule with update_many (Adam, AdamW) updates a group's parameters in one C call (PyTorch's
   -- multi-tensor apply), except under fnn.profile, which times each parameter's update as an op
   local many = self.update_many ~= nil and not profiling
   for _, group in ipairs(self.groups) do
      local params = group.params
      local ready, states = many and {} or nil, many and {} or nil
      for i = 1, #params do
         local p = params[i]
         if has_grad(p) then
            local st = state[p]
            if st == nil then
               st = {step = 0}
               state[p] = st
            end
            st.step = st.step + 1
            if many then
               ready[#ready + 1], states[#states + 1] = p, st
            else
               if profiling then C.fnn_profile_begin() end
               self:update(p, group, st)
               if profiling then C.fnn_profile_mark(2) end
            end
         end
      end
      if many and #ready > 0 then self:update_many(ready, group, states) end
   end
   self._steps = self._steps + 1
   return loss
end

function Optimizer:update()
   error(('optim.%s: update is not defined'):format(self._name), 2)
end

-- the coupled weight decay for this update; a decoupled one is applied here (p *= 1 - lr wd)
-- and 0 is returned
function Optimizer.coupled_decay(p, group)
   local wd = group.weight_decay or 0
   if wd ~= 0 and group.decoupled_weight_decay then
      if C.fnn_optim_decay(p.node, 1 - group.lr * wd) ~= 0 then fail() end
      return 0
   end
   return wd
end

-- a state tensor of p's shape and device filled with v (Adagrad's initial accumulator)
function Optimizer.full_like_param(p, v)
   local t = p:tensor()
   local out = new()
   if C.fnn_full_on(out, t.device_, t.ndim, t.shape_, v, 0) ~= 0 then fail() end
   return done(out)
end

function Optimizer:zero_grad(extra)
   if extra ~= nil then too_many(('optim.%s:zero_grad'):format(self._name), 1, extra, '') end
   for _, group in ipairs(self.groups) do
      local params = group.params
      for i = 1, #params do C.fnn_param_zero_grad(params[i].node) end
   end
end

function Optimizer:parameters(extra)
   if extra ~= nil then too_many(('optim.%s:parameters'):format(self._name), 1, extra, '') end
   local out = {}
   for _, group in ipairs(self.groups) do
      for _, p in ipairs(group.params) do out[#out + 1] = p end
   end
   return out
end

function Optimizer:gradients_are_finite(extra)
   if extra ~= nil then too_many(('optim.%s:gradients_are_finite'):format(self._name), 1, extra, '') end
   return autograd.gradients_are_finite(self:parameters())
end

-- the learning rate of the first group (the default when unbound)
function Optimizer:lr(extra)
   if extra ~= nil then too_many(('optim.%s:lr'):format(self._name), 1, extra, '') end
   local g = self.groups[1]
   return g and g.lr or self.options.lr
end

-- set_lr(lr): every group (schedules call this each step)
function Optimizer:set_lr(lr, extra)
   if extra ~= nil then too_many(('optim.%s:set_lr'):format(self._name), 2, extra, 'lr') end
   if type(lr) ~= 'number' or lr < 0 then
      error(('optim.%s: set_lr: invalid learning rate %s'):format(self._name, tostring(lr)), 2)
   end
   self.options.lr = lr
   for _, g in ipairs(self.groups) do g.lr = lr end
   return self
end

function Optimizer:steps(extra)
   if extra ~= nil then too_many(('optim.%s:steps'):format(self._name), 1, extra, '') end
   return self._steps
end

-- state(): plain tables. {steps = n, groups = {options per group},
-- params = {[i] = {step = n, <state tensor name> = tensor}}} with i the position
-- in parameters(). Tensors are the live ones; load_state copies what it is given.
function Optimizer:state(extra)
   if extra ~= nil then too_many(('optim.%s:state'):format(self._name), 1, extra, '') end
   local s = {optimizer = self._name, steps = self._steps, groups = {}, params = {}}
   for gi, g in ipairs(self.groups) do
      local opts = {}
      for k, v in pairs(g) do
         if k ~= 'params' then opts[k] = copy_value(v) end
      end
      s.groups[gi] = opts
   end
   for i, p in ipairs(self:parameters()) do
      local st = self._state[p]
      local e = {step = st and st.step or 0}
      if st then
         for _, name in ipairs(self.state_tensors) do e[name] = st[name] end
      end
      s.params[i] = e
   end
   return s
end

-- an own copy of t, since the kernels update state tensors in place
local function fresh_copy(t)
   local out = new()
   if C.fnn_mul_scalar(out, t, 1) ~= 0 then fail() end
   return done(out)
end

-- the state tensors a parameter that has stepped must hold under the group options g; a
-- class lists its own (SGD none: PyTorch's SGD starts a missing momentum buffer from the gradient)
function Optimizer.required_state(g) return {} end

-- load_state(s): refuses (leaving this optimizer unchanged) a state for another
-- parameter count, with a mis-shaped tensor, or missing a buffer its options need (Adam's
-- exp_avg_sq made again as zeros beside a loaded exp_avg and step would take steps ~30x lr)
function Optimizer:load_state(s, extra)
   if extra ~= nil then too_many(('optim.%s:load_state'):format(self._name), 2, extra, 's') end
   local name = self._name
   if type(s) ~= 'table' or type(s.params) ~= 'table' then
      error(('optim.%s: load_state: expected a table from state()'):format(name), 2)
   end
   if s.optimizer ~= nil and s.optimizer ~= name then
      error(('optim.%s: load_state: the state is from optim.%s'):format(name, tostring(s.optimizer)), 2)
   end
   local params = self:parameters()
   if #s.params ~= #params then
      error(('optim.%s: load_state: state has %d parameters, this optimizer has %d'):format(
         name, #s.params, #params), 2)
   end
   if s.groups and #s.groups ~= #self.groups then
      error(('optim.%s: load_state: state has %d groups, this optimizer has %d'):format(
         name, #s.groups, #self.groups), 2)
   end
   -- each parameter's group options as they will be once the state's groups are loaded
   local options_of = {}
   for gi, g in ipairs(self.groups) do
      local sg = s.groups and type(s.groups[gi]) == 'table' and s.groups[gi] or {}
      local o = {}
      for k in pairs(self.defaults) do
         local v = sg[k]
         if v == nil or type(v) ~= type(self.defaults[k]) then v = g[k] end   -- a mistyped one is refused below
         o[k] = v
      end
      for _ = 1, #g.params do options_of[#options_of + 1] = o end
   end
   local new_state = {}
   for i, p in ipairs(params) do
      local e = s.params[i]
      if type(e) ~= 'table' or type(e.step) ~= 'number' then
         error(('optim.%s: load_state: entry %d is not a {step = n, ...} table'):format(name, i), 2)
      end
      if e.step > 0 then
         local st = {step = e.step}
         local want = fnn_tensor.shape_str(p:tensor())
         for _, tn in ipairs(self.state_tensors) do
            local t = e[tn]
            if t ~= nil then
               if not fnn_tensor.is_tensor(t) then
                  error(('optim.%s: load_state: %s of parameter %d is a %s, expected a tensor'):format(
                     name, tn, i, type(t)), 2)
               end
               if fnn_tensor.shape_str(t) ~= want then
                  error(('optim.%s: load_state: %s of parameter %d is %s, the parameter is %s'):format(
                     name, tn, i, fnn_tensor.shape_str(t), want), 2)
               end
               st[tn] = fresh_copy(t:detach())
            end
         end
         local need = self.required_state(options_of[i])
         for _, tn in ipairs(need) do
            if st[tn] == nil then
               error(('optim.%s: load_state: parameter %d has stepped (step %d) but its state has no %s (an incomplete '
                      .. 'state: with these options it needs %s)'):format(name, i, e.step, tn, table.concat(need, ', ')), 2)
            end
         end
         new_state[p] = st
      end
   end
   -- the rest is checked before anything changes (a state from a file is untrusted): a group that
   -- is not a table, or an option of another type than its default, would fail only at the next step
   if s.steps ~= nil and (type(s.steps) ~= 'number' or s.steps < 0 or s.steps ~= math.floor(s.steps)) then
      error(('optim.%s: load_state: steps is %s, expected a whole number'):format(name, show_value(s.steps)), 2)
   end
   for gi = 1, s.groups and #self.groups or 0 do
      local sg = s.groups[gi]
      if type(sg) ~= 'table' then
         error(('optim.%s: load_state: group %d is a %s, expected a table of options'):format(name, gi, type(sg)), 2)
      end
      for k, v in pairs(sg) do
         local d = self.defaults[k]
         if d ~= nil and type(v) ~= type(d) then
            error(('optim.%s: load_state: option %s of group %d is a %s, expected a %s'):format(
               name, show_value(k), gi, type(v), type(d)), 2)
         end
      end
   end
   self._state = new_state
   self._steps = s.steps or self._steps
   if s.groups then
      for gi, g in ipairs(self.groups) do
         for k, v in pairs(s.groups[gi]) do
            if self.defaults[k] ~= nil then g[k] = copy_value(v) end
         end
      end
   end
   return self
end

function Optimizer:__tostring()
   local parts = {}
   local names = {}
   for k in pairs(self.defaults) do names[#names + 1] = k end
   table.sort(names)
   for _, k in ipairs(names) do
      local v = self.options[k]
      if type(v) == 'table' then v = '{' .. table.concat(v, ', ') .. '}' end
      parts[#parts + 1] = k .. '=' .. tostring(v)
   end
   return ('optim.%s(%s; %d parameters)'):format(self._name, table.concat(parts, ', '), #self:parameters())
end

return Optimizer
