-- The shared maker of learning-rate schedules: a schedule maps a step (counted from 0, as the
-- FastNN seed does: lr_at(0) is the first step's rate) to a rate.
--   local sched = optim.Warmup(optim.CosineAnnealing(1e-3, 1000), 100)
--   for step = 0, 1099 do opt:set_lr(sched:lr_at(step)) ... end      -- or sched:apply(opt, step)
-- sched(step) is lr_at(step). A class gives `__init(self, ...)` (checking its arguments; errors
-- at the user's line are level 3 there) and `rate(self, step)`.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local class = require 'fastnn.class'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local M = {}

local function check_step(name, step)
   if type(step) ~= 'number' or step < 0 or step ~= math.floor(step) then
      error(('optim.%s: lr_at: step is %s, expected a whole number >= 0 (steps count from 0)'):format(
         name, show_value(step)), 3)
   end
end

-- what every schedule has; a schedule class extends it
local Schedule = class('Schedule')

function Schedule:lr_at(step, extra)
   if extra ~= nil then too_many(('optim.%s:lr_at'):format(self._name), 2, extra, 'step') end
   check_step(self._name, step)
   return self:rate(step)
end

Schedule.__call = function(self, step, extra)
   if extra ~= nil then too_many(('optim.%s'):format(self._name), 2, extra, 'step') end
   check_step(self._name, step)
   return self:rate(step)
end

-- apply(opt, step): opt:set_lr(lr_at(step)); returns the rate
function Schedule:apply(opt, step, extra)
   if extra ~= nil then too_many(('optim.%s:apply'):format(self._name), 3, extra, 'opt, step') end
   check_step(self._name, step)
   local lr = self:rate(step)
   opt:set_lr(lr)
   return lr
end

Schedule.__tostring = function(self) return ('optim.%s(%s)'):format(self._name, self:describe()) end
function Schedule:describe() return '' end

-- Class(...) runs __init after refusing an argument past its last (StepDecay(0.1, 10, 0.5, 3)):
-- __init's parameter count, read once per class
local init_takes = setmetatable({}, {__mode = 'k'})
local function construct(cls, ...)
   local init = cls.__init
   local takes = init_takes[init]
   if takes == nil then
      local np = debug.getinfo(init, 'u').nparams - 1   -- without self
      local names = {}
      for i = 2, np + 1 do names[#names + 1] = debug.getlocal(init, i) end
      takes = {np, table.concat(names, ', ')}
      init_takes[init] = takes
   end
   for i = takes[1] + 1, select('#', ...) do
      local v = select(i, ...)
      if v ~= nil then too_many('optim.' .. cls._name, i, v, takes[2]) end   -- 1 too_many, 2 here, 3 the user
   end
   local self = setmetatable({}, cls)
   self:__init(...)
   return self
end

-- a schedule class named name
function M.class(name) return class.extend(Schedule, name, {construct = construct}) end

-- a number check for constructors, raised at the user's line (1 here, 2 __init, 3 the class call, 4 user)
function M.number(name, what, v, lo, hi)
   if type(v) ~= 'number' or v ~= v or (lo and v < lo) or (hi and v > hi) then
      error(('optim.%s: %s is %s, expected a number%s'):format(name, what, show_value(v),
            lo and hi and (' in [%g, %g]'):format(lo, hi) or lo and (' >= %g'):format(lo) or ''), 4)
   end
   return v
end

-- a schedule (anything with lr_at) or a constant rate
function M.schedule(name, what, v)
   if type(v) == 'number' then return {lr_at = function() return v end, rate = function() return v end} end
   if type(v) ~= 'table' or type(v.lr_at) ~= 'function' then
      error(('optim.%s: %s is a %s, expected a schedule or a number'):format(name, what, type(v)), 4)
   end
   return v
end

return M
