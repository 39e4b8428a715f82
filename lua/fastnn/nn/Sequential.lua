-- nn.Sequential(m1, m2, ...) or nn.Sequential():add(m1):add(m2): runs its
-- children in order. Children are named by 1-based position ('1.weight').
-- A child's error is re-raised prefixed with its position and name:
--   Sequential[3] nn.Linear(784 -> 128): Linear(784 -> 128): input [8,100] has ...
local nn = require 'fastnn.nn'
local Module = nn.Module
local is_module = Module.is_module

local Sequential = Module:extend('Sequential')

function Sequential:__init(...)
   rawset(self, 'modules', {})
   rawset(self, '_at', 0)
   local args = {...}
   local n = select('#', ...)
   -- nn.Sequential{m1, m2} as well as nn.Sequential(m1, m2)
   if n == 1 and type(args[1]) == 'table' and not is_module(args[1]) then
      args, n = args[1], #args[1]
   end
   for i = 1, n do
      if not is_module(args[i]) then
         error(('nn.Sequential: argument %d is a %s, expected a module'):format(i, type(args[i])), 3)
      end
      self.modules[i] = args[i]
   end
end

function Sequential:add(m)
   if not is_module(m) then
      error(('Sequential:add: expected a module, got a %s'):format(type(m)), 2)
   end
   self.modules[#self.modules + 1] = m
   return self
end

function Sequential:get(i) return self.modules[i] end
function Sequential:len() return #self.modules end

function Sequential:named_children()
   local out = {}
   for i, m in ipairs(self.modules) do out[i] = {tostring(i), m} end
   return out
end

local function run(self, x)
   local mods = self.modules
   for i = 1, #mods do
      self._at = i
      x = mods[i]:forward(x)
   end
   return x
end

local function strip_where(msg)
   return (msg:gsub('^[^:\n]+:%d+: ', ''))
end

function Sequential:forward(x)
   local ok, y = pcall(run, self, x)
   if ok then return y end
   if type(y) ~= 'string' then error(y, 0) end   -- not ours to rewrite (an interrupt object, say)
   local i = self._at
   error(('Sequential[%d] %s: %s'):format(i, self.modules[i]:short_str(), strip_where(y)), 2)
end

function Sequential:__tostring()
   local lines = {'nn.Sequential {'}
   for i, m in ipairs(self.modules) do
      lines[#lines + 1] = ('  (%d): %s'):format(i, (tostring(m):gsub('\n', '\n  ')))
   end
   lines[#lines + 1] = '}'
   return table.concat(lines, '\n')
end

return Sequential
