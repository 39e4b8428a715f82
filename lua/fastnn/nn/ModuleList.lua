-- nn.ModuleList(m1, m2, ...) or nn.ModuleList{m1, m2}: an array of modules for a user module
-- that calls them itself. Children are named by 1-based position ('2.weight'); list[i],
-- #list and ipairs(list) work as on a Lua array (the modules are its integer keys).
--   function Stack:__init(n, w)
--      self.layers = nn.ModuleList()
--      for _ = 1, n do self.layers:add(nn.Linear(w, w)) end
--   end
--   function Stack:forward(x)
--      for _, layer in ipairs(self.layers) do x = layer(x):relu() end
--      return x
--   end
-- nn.Sequential is a ModuleList with a forward that chains its modules.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local nn = require 'fastnn.nn'
local Module = nn.Module
local is_module = Module.is_module
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped

local ModuleList = Module:extend('ModuleList')

-- errors from here land on the user's line: 1 here, 2 __init or the method, 3 the user
local function check_module(self, what, m, level)
   if not is_module(m) then
      error(('%s: %s is a %s, expected a module'):format(self:_full_name(), what, type(m)), level)
   end
end

function ModuleList:__init(...)
   local args, n = {...}, select('#', ...)
   -- ModuleList{m1, m2} as well as ModuleList(m1, m2)
   if n == 1 and type(args[1]) == 'table' and not is_module(args[1]) then
      args, n = args[1], #args[1]
   end
   for i = 1, n do
      check_module(self, 'argument ' .. i, args[i], 4)
      rawset(self, i, args[i])
   end
end

-- add(m): appends m and returns the container, so calls chain
function ModuleList:add(m, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':add', 2, extra, 'm') end
   check_module(self, 'add: argument', m, 3)
   rawset(self, #self + 1, m)
   return self
end
ModuleList.append = ModuleList.add

-- position i: 1-based, negative from the end
local function position(self, op, i, n)
   if type(i) ~= 'number' or i ~= math.floor(i) then
      error(('%s:%s: position is %s, expected an integer'):format(self:_full_name(), op, show_value(i)), 3)
   end
   local p = i < 0 and n + 1 + i or i
   if p < 1 or p > n then
      error(('%s:%s: position %d out of range for %d modules'):format(self:_full_name(), op, i, #self), 3)
   end
   return p
end

-- insert(m, pos = #self + 1): Torch7's argument order
function ModuleList:insert(m, pos, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':insert', 3, extra, 'm, pos') end
   check_module(self, 'insert: argument', m, 3)
   local n = #self
   local p = pos == nil and n + 1 or position(self, 'insert', pos, n + 1)
   for i = n, p, -1 do rawset(self, i + 1, rawget(self, i)) end
   rawset(self, p, m)
   return self
end

-- remove(pos = #self): takes the module out and returns it
function ModuleList:remove(pos, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':remove', 2, extra, 'pos') end
   local n = #self
   local p = position(self, 'remove', pos == nil and n or pos, n)
   local m = rawget(self, p)
   for i = p, n - 1 do rawset(self, i, rawget(self, i + 1)) end
   rawset(self, n, nil)
   return m
end

function ModuleList:get(i, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':get', 2, extra, 'i') end
   return rawget(self, position(self, 'get', i, #self))
end
function ModuleList:len(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':len', 1, extra, '') end
   return #self
end

function ModuleList:named_children(extra)
   if extra ~= nil then too_many(self:_full_name() .. ':named_children', 1, extra, '') end
   local out = {}
   for i = 1, #self do out[i] = {tostring(i), self[i]} end
   return out
end

function ModuleList:forward()
   error(('%s has no forward: call its modules from your own forward, or use nn.Sequential'):format(
      self:_full_name()), 2)
end
Module._not_callable_forward[ModuleList.forward] = true   -- it raises its own message

return ModuleList
