-- fastnn.class: the one class helper. Modules (nn.Module:extend), optimizers (Optimizer:extend),
-- metrics (Metric:extend) and callbacks are all made with it, so they behave alike: a class is a
-- table its instances index, a class indexes its parent, and calling a class builds an instance.
--   local Base = {}; Base.__index = Base
--   local Sub = class.extend(Base, 'Sub')          -- Sub(...) -> setmetatable({}, Sub), then :__init(...)
--   local Other = class.extend(Base, 'Other', {construct = function(cls, ...) ... end})
local M = {}

-- Lua looks metamethods up raw in an instance's metatable, so a subclass starts with a raw copy of
-- its parent's (it may override them)
local METAMETHODS = {'__call', '__tostring', '__newindex', '__eq', '__len', '__concat'}

local function default_construct(cls, ...)
   local self = setmetatable({}, cls)
   if self.__init then self:__init(...) end
   return self
end

-- a subclass of parent named name; how.construct(cls, ...) builds an instance (default: above),
-- how.class_tostring prints the class itself
function M.extend(parent, name, how)
   how = how or {}
   local cls = {}
   for _, k in ipairs(METAMETHODS) do cls[k] = rawget(parent, k) end
   cls.__index = cls
   cls._name = name
   cls._parent = parent
   return setmetatable(cls, {__index = parent, __call = how.construct or default_construct,
                             __tostring = how.class_tostring})
end

return M
