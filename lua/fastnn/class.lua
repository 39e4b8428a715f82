-- fastnn.class: the one class helper. Every Lua class of fastnn is made with it (modules, optimizers,
-- schedules, datasets, loaders, metrics, callbacks, decoders, ...), so they behave alike: a class is a
-- table its instances index (their metatable), a class indexes its parent, and calling a class builds
-- an instance.
--   local class = require 'fastnn.class'
--   local Point = class('Point')                   -- a base class (or require('fastnn.class')('Point'))
--   function Point:__init(x, y) self.x, self.y = x, y end
--   local p = Point(1, 2)                          -- setmetatable({}, Point), then p:__init(1, 2)
--   local Sub = class.extend(Point, 'Sub')         -- a subclass: Sub indexes Point
-- Two ways to build an instance:
--   __init(self, ...)   fills a fresh instance. Errors at the caller's line are level 3 there
--                       (1 __init, 2 the class call, 3 the user).
--   __new(cls, ...)     builds and returns the instance itself (a table it was handed, one whose
--                       fields are checked before it exists). It is called as a tail call, so its
--                       errors at the caller's line are level 2, as in any function the user calls.
--                       It is the class's own: a subclass builds with its own __new, or with __init.
-- how.construct(cls, ...) replaces both for a family with its own rule (nn.Module, optim.Optimizer);
-- how.class_tostring prints the class itself.
local M = {}

-- Lua looks metamethods up raw in an instance's metatable, so a subclass starts with a raw copy of
-- its parent's (it may override them)
local METAMETHODS = {'__call', '__tostring', '__newindex', '__eq', '__len', '__concat'}

local function default_construct(cls, ...)
   local build = rawget(cls, '__new')
   if build then return build(cls, ...) end
   local self = setmetatable({}, cls)
   if self.__init then self:__init(...) end
   return self
end

local function finish(cls, name, parent, how)
   cls.__index = cls
   cls._name = name
   cls._parent = parent
   return setmetatable(cls, {__index = parent, __call = how.construct or default_construct,
                             __tostring = how.class_tostring})
end

-- a class named name with no parent
function M.new(name, how)
   if type(name) ~= 'string' then error('class: expected a class name', 2) end
   return finish({}, name, nil, how or {})
end

-- a subclass of parent named name
function M.extend(parent, name, how)
   local cls = {}
   for _, k in ipairs(METAMETHODS) do cls[k] = rawget(parent, k) end
   return finish(cls, name, parent, how or {})
end

-- class(name, how) is class.new(name, how)
return setmetatable(M, {__call = function(_, name, how) return M.new(name, how) end})
