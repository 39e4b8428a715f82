-- nn.Module: the base class of every layer and model.
--
-- A user layer takes a few lines (the FastNN seed's Residual):
--   local Residual = nn.Module:extend('Residual')
--   function Residual:__init(width) self.inner = nn.Linear(width, width) end
--   function Residual:forward(x) return x + self.inner(x):relu() end
--   local m = Residual(16); local y = m(x)               -- m(x) is m:forward(x)
--   m:named_parameters()  --> {{'inner.weight', p}, {'inner.bias', p}}
--
-- The hooks a layer writer uses:
--   __init(...)          the constructor (Class(...) runs it; `self.training` is already true).
--                        Params and modules assigned to fields are recorded in assignment
--                        order (PyTorch's __setattr__), so names are stable with no
--                        registration call. Values kept in plain Lua tables are not seen:
--                        use nn.ModuleList, or override named_parameters.
--                        Raise a bad argument with error(msg, 3): 1 __init, 2 Class(), 3 the user.
--   forward(x, ...)      the computation. Raise a programming mistake with error(msg, 2)
--                        (the caller's line), naming the layer and every shape.
--   short_str()          one line naming the module and its options, e.g. 'nn.Linear(784 -> 128)';
--                        it is the module's line in the __tostring tree and in container error
--                        prefixes. Default 'nn.<Name>'. A class that defines a one-line
--                        __tostring instead gets that line as its short_str.
--   register_buffer(name, t)  a tensor that is state but not trained (BatchNorm's running_mean):
--                        listed by named_buffers(), moved by to_device, saved by checkpoints.
--                        Tensors are immutable: update it by assignment (self.running_mean = t).
--   register_parameter(name, p), add_module(name, m)  the same for names made at run time.
--   named_parameters()   override only when weights are kept some other way;
--                        nn.scoped('inner', m:named_parameters()) prefixes the names.
--   named_children()     override only when children are kept some other way (containers do).
--   self.training        true after train(), false after eval(); read it in forward.
--   output_shape(shape)  optional: the output shape for an input shape (batch dim included), for
--                        Sequential:build and GraphBuilder. The default (fastnn/nn/shape.lua)
--                        has rules for the common layers and otherwise runs forward once on zeros
--                        with a batch of 1; define it when forward is costly or takes no zeros.
--   build(shape)         optional: a Keras-style layer makes its weights for this input shape
--                        (fastnn/nn/keras_layers.lua); Sequential:build calls it before output_shape.
-- Everything else follows from those: parameters, num_parameters, buffers, zero_grad,
-- freeze/unfreeze, train/eval, to_device, children, modules, apply, set_buffer, __tostring.
local Param = require('fastnn.autograd').Param
local class = require 'fastnn.class'

-- an argument past the last of a class's __init is refused, never dropped (nn.Linear(3, 4, {}, 5)):
-- __init's parameter count, read once per __init (a vararg __init takes what it takes)
local describe = require('fastnn.options').describe
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local init_params = setmetatable({}, {__mode = 'k'})
local function check_arity(cls, ...)
   local init = cls.__init
   local np = init_params[init]
   if np == nil then
      local info = debug.getinfo(init, 'u')
      np = false
      if not info.isvararg then np = info.nparams - 1 end   -- without self
      init_params[init] = np
   end
   if not np then return end
   for i = np + 1, select('#', ...) do
      local v = select(i, ...)
      if v ~= nil then
         error(('%s: unexpected argument %d (%s); it takes %d'):format(cls:_full_name(), i, describe(v), np), 3)
      end
   end
end

-- an input past the last of a class's forward is refused, never dropped (model:forward(x, 5), a
-- one-input layer called as layer(x, y)). The first construction of each class replaces the forward
-- it resolves to with a checking tail call, made once per forward function and cached: m(x) reaches
-- it through __call, m:forward(x) directly, and a child's forward inside a container too. The cost
-- is one more frame and four nil tests per call. The parameters are the class's own forward's: under
-- fastnn.precision's autocast wrapper (a vararg function) the layer's forward is its upvalue f.
local checked_forward = setmetatable({}, {__mode = 'k'})   -- forward -> its checking wrapper
local is_checker = setmetatable({}, {__mode = 'k'})        -- the wrappers themselves
local NOT_CALLABLE = {}                                     -- forwards that only raise 'no forward'

local function own_forward(f)
   for _ = 1, 4 do
      local info = debug.getinfo(f, 'Su')
      if not (info.isvararg and info.source:find('fastnn/precision.lua', 1, true)) then return f, info end
      local inner
      for i = 1, 60 do
         local name, v = debug.getupvalue(f, i)
         if name == nil then break end
         if name == 'f' and type(v) == 'function' then inner = v end
      end
      if not inner then return f, info end
      f = inner
   end
   return f, debug.getinfo(f, 'u')
end

-- the inputs a forward takes, by name: '(x)', '(q, k, v, opts)'
local function input_names(f, np)
   local names = {}
   for i = 2, np + 1 do names[#names + 1] = debug.getlocal(f, i) or '?' end
   return '(' .. table.concat(names, ', ') .. ')'
end

-- the first extra (e1..e4 stand at positions np + 1 ..) refused at the user's line
local function refuse_input(self, f, np, ...)
   for i = 1, select('#', ...) do
      local v = select(i, ...)
      if v ~= nil then
         error(('%s:forward: unexpected argument %d (%s); it takes %s'):format(self:_full_name(), np + i, describe(v),
               input_names(f, np)), 3)   -- 1 here, 2 the checking forward, 3 the user
      end
   end
end

-- The checking forward has fixed parameters, the forward's own and four more, made once per
-- parameter count from a template: where a training step runs interpreted (a trace aborted), a
-- vararg wrapper added ~30-70 ns a call, a fixed one ~0-50 ns (a 1e7-call loop under -joff on a
-- loaded machine; compiled, both under 1 ns). An extra behind four nils
-- (layer(x, nil, nil, nil, nil, 5)) is past what it looks at.
local EXTRA_SLOTS = 4
local makers = {}
local function maker(np)
   local m = makers[np]
   if m then return m end
   local args, extras = {'self'}, {}
   for i = 1, np do args[#args + 1] = 'a' .. i end
   for i = 1, EXTRA_SLOTS do extras[#extras + 1] = 'e' .. i end
   local tests = {}
   for i = 1, EXTRA_SLOTS do tests[i] = 'e' .. i .. ' ~= nil' end
   local src = ([[local f, own, np, refuse = ...
return function(%s, %s)
   if %s then refuse(self, own, np, %s) end
   return f(%s)   -- a tail call: forward's error levels count as without this wrapper
end]]):format(table.concat(args, ', '), table.concat(extras, ', '), table.concat(tests, ' or '),
               table.concat(extras, ', '), table.concat(args, ', '))
   m = assert(loadstring(src, '=nn.Module checking forward'))
   makers[np] = m
   return m
end

local function checking_forward(f)
   local w = checked_forward[f]
   if w then return w end
   local own, info = own_forward(f)
   -- a vararg forward takes what it takes; one that names not even self (function M.forward() error(e) end)
   -- reads no argument, so there is no count to hold it to
   if info.isvararg or info.nparams == 0 or NOT_CALLABLE[own] then
      checked_forward[f] = f   -- decided once: left as it is
      return f
   end
   local np = info.nparams - 1                                -- without self
   w = maker(np)(f, own, np, refuse_input)
   checked_forward[f], is_checker[w] = w, true
   return w
end

local function check_forward(cls)
   local f = cls.forward
   if type(f) == 'function' and not is_checker[f] then
      local w = checking_forward(f)
      if w ~= f then rawset(cls, 'forward', w) end
   end
end

-- Class(...) makes an instance and runs __init
local function construct(cls, ...)
   check_arity(cls, ...)
   check_forward(cls)
   local self = setmetatable({}, cls)
   rawset(self, 'training', true)
   self:__init(...)
   return self
end
local MODULE_CLASS = {construct = construct, class_tostring = function(cls) return 'class ' .. cls:_full_name() end}

local Module = class('Module', MODULE_CLASS)
Module._is_class = true

local is_param = Param.is_param

-- an instance of some Module class (not a class itself)
local function is_module(v)
   if type(v) ~= 'table' then return false end
   local mt = getmetatable(v)
   return type(mt) == 'table' and rawget(mt, '_is_class') == true
end
Module.is_module = is_module

local function list_add(self, key, name)
   local list = rawget(self, key)
   if list == nil then
      list = {}
      rawset(self, key, list)
   end
   for i = 1, #list do if list[i] == name then return end end
   list[#list + 1] = name
end

-- field assignment on an instance: remember Params and child modules in order
local function track(self, k, v)
   if type(k) == 'string' then
      if is_param(v) then list_add(self, '_param_names', k)
      elseif is_module(v) then list_add(self, '_child_names', k) end
   end
   rawset(self, k, v)
end

-- m(x): a tail call, so error levels inside forward count as for m:forward(x)
local function call_forward(self, ...) return self:forward(...) end

-- Module:extend('Name') -> a new class inheriting from self (nn.Linear:extend('MyLinear') works too)
function Module:extend(name, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':extend', 2, extra, 'name') end
   if type(name) ~= 'string' then error('extend: expected a class name', 2) end
   if is_module(self) then error(('extend: called on an instance of %s, expected a class'):format(
      self:_full_name()), 2) end
   local cls = class.extend(self, name, MODULE_CLASS)
   cls._is_class = true
   return cls
end

Module.__call = call_forward
Module.__newindex = track

function Module:__init() end

function Module:forward()
   error(('%s: forward is not defined'):format(self:_full_name()), 2)
end
NOT_CALLABLE[Module.forward] = true
Module._not_callable_forward = NOT_CALLABLE   -- ModuleList's joins it

function Module:_full_name()
   local n = self._name
   if n:find('.', 1, true) then return n end
   return 'nn.' .. n
end

-- is this module an instance of cls or of a class derived from it?
function Module:is_instance_of(cls, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':is_instance_of', 2, extra, 'cls') end
   local c = getmetatable(self)
   while c do
      if c == cls then return true end
      c = rawget(c, '_parent')
   end
   return false
end

-- explicit registration, for names built at run time: the name (and, where `bad` says what the
-- value is not, the value) refused at the caller's line, then recorded in the list that keeps the order
local function register(self, op, list, name, v, bad)
   if type(name) ~= 'string' then error(('%s: name is a %s, expected a string'):format(op, type(name)), 3) end
   if bad then error(('%s: %s is not %s'):format(op, name, bad), 3) end
   rawset(self, name, v)
   list_add(self, list, name)
end

function Module:add_module(name, m, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':add_module', 3, extra, 'name, m') end
   register(self, 'add_module', '_child_names', name, m, not is_module(m) and 'a module')
   return self
end

function Module:register_parameter(name, p, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':register_parameter', 3, extra, 'name, p') end
   register(self, 'register_parameter', '_param_names', name, p, p ~= nil and not is_param(p) and 'an nn.Param')
   return p
end

function Module:register_buffer(name, t, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':register_buffer', 3, extra, 'name, t') end
   register(self, 'register_buffer', '_buffer_names', name, t)
   return t
end

-- ordered {name, module} pairs of the direct children
function Module:named_children(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':named_children', 1, extra, '') end
   local out = {}
   local names = rawget(self, '_child_names')
   if names then
      for _, n in ipairs(names) do
         local m = rawget(self, n)
         if is_module(m) then out[#out + 1] = {n, m} end
      end
   end
   return out
end

-- the values of {name, value} pairs, in order (children, modules, parameters, buffers)
local function values(named)
   local out = {}
   for i, pair in ipairs(named) do out[i] = pair[2] end
   return out
end

function Module:children(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':children', 1, extra, '') end
   return values(self:named_children())
end

-- {{'', self}, {'fc', m}, {'block.1', m}, ...}: this module and every descendant, depth
-- first, each once (a shared layer under its first name)
function Module:named_modules(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':named_modules', 1, extra, '') end
   local out, seen = {}, {}
   local function walk(prefix, m)
      if seen[m] then return end
      seen[m] = true
      out[#out + 1] = {prefix, m}
      for _, pair in ipairs(m:named_children()) do
         walk(prefix == '' and pair[1] or (prefix .. '.' .. pair[1]), pair[2])
      end
   end
   walk('', self)
   return out
end

function Module:modules(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':modules', 1, extra, '') end
   return values(self:named_modules())
end

-- apply(fn): fn(m) for every descendant, children before their parent (PyTorch's order)
function Module:apply(fn, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':apply', 2, extra, 'fn') end
   if type(fn) ~= 'function' then error(('apply: expected a function, got a %s'):format(type(fn)), 2) end
   local seen = {}
   local function walk(m)
      if seen[m] then return end
      seen[m] = true
      for _, c in ipairs(m:children()) do walk(c) end
      fn(m)
   end
   walk(self)
   return self
end

-- own entries of one kind, then each child's prefixed by the child's name; a
-- value reached twice (a shared layer) is listed once, under its first name
local function named(self, own_key, method)
   local out, seen = {}, {}
   local function add(name, v)
      if not seen[v] then
         seen[v] = true
         out[#out + 1] = {name, v}
      end
   end
   local names = rawget(self, own_key)
   if names then
      for _, n in ipairs(names) do
         local v = rawget(self, n)
         if v ~= nil and v ~= false then add(n, v) end
      end
   end
   for _, pair in ipairs(self:named_children()) do
      for _, sub in ipairs(pair[2][method](pair[2])) do add(pair[1] .. '.' .. sub[1], sub[2]) end
   end
   return out
end

-- ordered {name, param} pairs with dotted names: '1.weight', 'inner.bias', 'block.2.weight'
function Module:named_parameters(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':named_parameters', 1, extra, '') end
   return named(self, '_param_names', 'named_parameters')
end
-- ordered {name, tensor} pairs of the buffers, named like the parameters
function Module:named_buffers(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':named_buffers', 1, extra, '') end
   return named(self, '_buffer_names', 'named_buffers')
end

function Module:parameters(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':parameters', 1, extra, '') end
   return values(self:named_parameters())
end

function Module:buffers(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':buffers', 1, extra, '') end
   return values(self:named_buffers())
end

-- set_buffer('2.running_mean', t): replaces a buffer found by its dotted name (what a
-- checkpoint loader needs, since tensors are immutable); raises for an unknown name
function Module:set_buffer(name, t, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':set_buffer', 3, extra, 'name, t') end
   if type(name) ~= 'string' then error(('set_buffer: name is a %s, expected a string'):format(type(name)), 2) end
   local m, rest = self, name
   while true do
      local names = rawget(m, '_buffer_names')
      local found = false
      if names then for _, n in ipairs(names) do found = found or n == rest end end
      if found then rawset(m, rest, t); return self end
      local head, tail = rest:match('^([^.]+)%.(.+)$')
      local child
      if head then
         for _, pair in ipairs(m:named_children()) do
            if pair[1] == head then child = pair[2]; break end
         end
      end
      if not child then error(('set_buffer: %s has no buffer %s'):format(self:short_str(), name), 2) end
      m, rest = child, tail
   end
end

-- the number of parameter elements; {trainable = true} counts only unfrozen params
local NUM_PARAMETERS = require('fastnn.options').declare('Module:num_parameters', {
   {'trainable', 'boolean', false, 'count only the parameters that are not frozen'},
})
function Module:num_parameters(opts, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':num_parameters', 2, extra, 'opts') end
   local trainable = NUM_PARAMETERS:check(opts, 2).trainable
   local n = 0
   for _, p in ipairs(self:parameters()) do
      if not (trainable and p:frozen()) then n = n + p:numel() end
   end
   return n
end

-- train()/train(false)/eval(): sets `training` here and in every descendant
function Module:train(mode, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':train', 2, extra, 'mode') end
   if mode == nil then mode = true end
   rawset(self, 'training', mode and true or false)
   for _, c in ipairs(self:children()) do c:train(mode) end
   return self
end
function Module:eval(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':eval', 1, extra, '') end
   return self:train(false)
end

-- drops every parameter's gradient (the next backward starts from zero)
function Module:zero_grad(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':zero_grad', 1, extra, '') end
   for _, p in ipairs(self:parameters()) do p:zero_grad() end
   return self
end

-- a frozen module's params hand out detached tensors: no gradient is computed for them
function Module:freeze(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':freeze', 1, extra, '') end
   for _, p in ipairs(self:parameters()) do p:freeze() end
   return self
end
function Module:unfreeze(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':unfreeze', 1, extra, '') end
   for _, p in ipairs(self:parameters()) do p:unfreeze() end
   return self
end

-- to_device(d): every parameter and buffer onto d (a Device, 'cpu', 'cuda' or 'cuda:<n>').
-- A moved parameter drops its gradient, which lives on the old device.
function Module:to_device(d, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':to_device', 2, extra, 'd') end
   local dev = require('fastnn.device')._parse('to_device', d)   -- raises at the caller's line
   for _, p in ipairs(self:parameters()) do
      local t = p:tensor():detach()
      if t:device() ~= dev then
         p:set(t:to(dev))
         p:zero_grad()
      end
   end
   for _, m in ipairs(self:modules()) do
      local names = rawget(m, '_buffer_names')
      if names then
         for _, n in ipairs(names) do
            local t = rawget(m, n)
            if t ~= nil and t ~= false then rawset(m, n, t:to(dev)) end
         end
      end
   end
   return self
end

-- one line naming the module (its line in trees and in container error prefixes)
function Module:short_str()
   local mt = getmetatable(self)
   local own = mt and mt.__tostring
   if own and own ~= Module.__tostring then
      return (tostring(own(self)):match('^[^\n]*'):gsub(' {$', ''))
   end
   return self:_full_name()
end

-- the tree: each module's short_str() on its line, its children indented under it with their names
--   nn.Sequential {
--     (1): nn.Linear(784 -> 128)
--     (2): nn.Residual {
--       (inner): nn.Linear(128 -> 128)
--     }
--   }
local function tree(m, seen)
   local head = m:short_str()
   local kids = m:named_children()
   if #kids == 0 then return head end
   if seen[m] then return head .. ' {...}' end   -- a module inside itself
   seen[m] = true
   local lines = {head .. ' {'}
   for _, pair in ipairs(kids) do
      lines[#lines + 1] = '  (' .. pair[1] .. '): ' .. tree(pair[2], seen):gsub('\n', '\n  ')
   end
   lines[#lines + 1] = '}'
   seen[m] = nil
   return table.concat(lines, '\n')
end

function Module:__tostring() return tree(self, {}) end

-- output_shape(shape): fastnn/nn/shape.lua's default (rules, else one run on zeros), loaded
-- on first use; the tail call keeps error levels at the caller's line
function Module:output_shape(s, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':output_shape', 2, extra, 's') end
   return require('fastnn.nn.shape').module_output_shape(self, s)
end
Module._output_shape_stub = Module.output_shape

-- the message a container raises for a child's error: prefix plus the child's message,
-- or nil when the error must pass through untouched (an error object, a Ctrl-C).
-- A position inside fastnn itself (where the container called the child, or a
-- library line) is dropped, since the container reports at its caller's line; a
-- position in user code (a bug in a user module's forward) is kept.
function Module._child_error(prefix, err)
   if type(err) ~= 'string' then return nil end
   local file, rest = err:match('^([^:\n]+):%d+: (.*)$')
   if (rest or err) == 'interrupted' then return nil end
   if file and (file:find('fastnn/', 1, true) or file:find('fastnn\\', 1, true)) then err = rest end
   return prefix .. err
end

-- fail(msg): a failure raised from inside an implementation, however deep, with no position;
-- guarded(impl) is impl as a method that re-raises it at the user's line (level 2 of the method):
-- positions inside fastnn are dropped; errors that are not strings (Ctrl-C) pass untouched.
-- Model building and the Keras-style methods (shape checks, GraphBuilder, compile, fit) use them.
function Module._fail(msg) error(msg, 0) end

function Module._guarded(impl)
   local child_error = Module._child_error
   return function(...)
      local r = {pcall(impl, ...)}
      if r[1] then return unpack(r, 2, table.maxn(r)) end
      local msg = child_error('', r[2])
      if msg == nil then error(r[2], 0) end
      error(msg, 2)
   end
end

return Module
