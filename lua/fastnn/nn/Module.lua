-- nn.Module: the base class of every layer and model.
--   local Residual = nn.Module:extend('Residual')
--   function Residual:__init(width) self.inner = nn.Linear(width, width) end
--   function Residual:forward(x) return x + self.inner(x) end
--   local m = Residual(16); m(x); m:named_parameters()  --> {{'inner.weight', p}, {'inner.bias', p}}
-- Params and modules assigned to fields are recorded in assignment order, so
-- named_parameters() is stable without a registration call (PyTorch's
-- __setattr__). Buffers (tensors such as running statistics) are declared
-- with register_buffer. A module that keeps weights some other way overrides
-- named_parameters (nn.scoped helps with the names).
local Param = require('fastnn.autograd').Param

local Module = {}
Module.__index = Module
Module._name = 'Module'
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

local function call_forward(self, ...) return self:forward(...) end

local class_mt = {}
-- Class(...) makes an instance and runs __init
class_mt.__call = function(cls, ...)
   local self = setmetatable({}, cls)
   rawset(self, 'training', true)
   self:__init(...)
   return self
end
class_mt.__tostring = function(cls) return 'class ' .. cls:_full_name() end
setmetatable(Module, class_mt)

-- Module:extend('Name') -> a new class inheriting from self
function Module:extend(name)
   if type(name) ~= 'string' then error('extend: expected a class name', 2) end
   local cls = {}
   -- metamethods are looked up raw: copy the parent's, the class may override them
   for _, k in ipairs{'__call', '__tostring', '__newindex', '__eq', '__len', '__concat'} do
      cls[k] = rawget(self, k)
   end
   cls.__index = cls
   cls._name = name
   cls._is_class = true
   cls._parent = self
   return setmetatable(cls, {__index = self, __call = class_mt.__call, __tostring = class_mt.__tostring})
end

Module.__call = call_forward
Module.__newindex = track

function Module:__init() end

function Module:forward()
   error(('%s: forward is not defined'):format(self:_full_name()), 2)
end

function Module:_full_name()
   local n = self._name
   if n:find('.', 1, true) then return n end
   return 'nn.' .. n
end

-- explicit registration, for names built at run time
function Module:add_module(name, m)
   if not is_module(m) then error(('add_module: %s is not a module'):format(tostring(name)), 2) end
   rawset(self, name, m)
   list_add(self, '_child_names', name)
   return self
end

function Module:register_parameter(name, p)
   if p ~= nil and not is_param(p) then error(('register_parameter: %s is not an nn.Param'):format(name), 2) end
   rawset(self, name, p)
   list_add(self, '_param_names', name)
   return p
end

function Module:register_buffer(name, t)
   rawset(self, name, t)
   list_add(self, '_buffer_names', name)
   return t
end

-- ordered {name, module} pairs of the direct children
function Module:named_children()
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

function Module:children()
   local out = {}
   for i, pair in ipairs(self:named_children()) do out[i] = pair[2] end
   return out
end

-- this module and every descendant, depth first
function Module:modules()
   local out = {self}
   for _, c in ipairs(self:children()) do
      for _, m in ipairs(c:modules()) do out[#out + 1] = m end
   end
   return out
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

function Module:named_parameters() return named(self, '_param_names', 'named_parameters') end
function Module:named_buffers() return named(self, '_buffer_names', 'named_buffers') end

function Module:parameters()
   local out = {}
   for i, pair in ipairs(self:named_parameters()) do out[i] = pair[2] end
   return out
end

function Module:buffers()
   local out = {}
   for i, pair in ipairs(self:named_buffers()) do out[i] = pair[2] end
   return out
end

function Module:num_parameters()
   local n = 0
   for _, p in ipairs(self:parameters()) do n = n + p:numel() end
   return n
end

-- train()/train(false)/eval(): sets `training` here and in every descendant
function Module:train(mode)
   if mode == nil then mode = true end
   rawset(self, 'training', mode and true or false)
   for _, c in ipairs(self:children()) do c:train(mode) end
   return self
end
function Module:eval() return self:train(false) end

function Module:zero_grad()
   for _, p in ipairs(self:parameters()) do p:zero_grad() end
   return self
end

-- a frozen module's params hand out detached tensors: no gradient reaches them
function Module:freeze()
   for _, p in ipairs(self:parameters()) do p:freeze() end
   return self
end
function Module:unfreeze()
   for _, p in ipairs(self:parameters()) do p:unfreeze() end
   return self
end

-- moves every parameter and buffer to device d (a Device or 'cuda'/'cpu' string understood by Tensor:to)
function Module:to_device(d)
   for _, p in ipairs(self:parameters()) do
      local t = p:tensor():detach()
      p:set(t:to(d))
   end
   local function move_buffers(m)
      local names = rawget(m, '_buffer_names')
      if names then
         for _, n in ipairs(names) do
            local t = rawget(m, n)
            if t ~= nil then rawset(m, n, t:to(d)) end
         end
      end
      for _, c in ipairs(m:children()) do move_buffers(c) end
   end
   move_buffers(self)
   return self
end

-- one line naming the module (used in trees and container error prefixes)
function Module:short_str()
   local s = tostring(self)
   return (s:match('^[^\n]*'):gsub(' {$', ''))
end

-- Torch7-style tree: a leaf prints its name; a module with children lists them
function Module:__tostring()
   local head = self:_full_name()
   local kids = self:named_children()
   if #kids == 0 then return head end
   local lines = {head .. ' {'}
   for _, pair in ipairs(kids) do
      local s = tostring(pair[2]):gsub('\n', '\n  ')
      lines[#lines + 1] = '  (' .. pair[1] .. '): ' .. s
   end
   lines[#lines + 1] = '}'
   return table.concat(lines, '\n')
end

return Module
