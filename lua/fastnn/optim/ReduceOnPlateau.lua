-- optim.ReduceOnPlateau(opt, {factor = 0.1, patience = 10, mode = 'min', threshold = 1e-4,
-- threshold_mode = 'rel', cooldown = 0, min_lr = 0}) (PyTorch's ReduceLROnPlateau): driven by a
-- metric, not by the step count.
--   sched:step(val_loss)   -- after each evaluation; returns the (possibly reduced) rate
-- When the metric has not improved for more than `patience` calls, the optimizer's rate is
-- multiplied by factor (not below min_lr), then `cooldown` calls pass before counting again.
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ReduceOnPlateau = require('fastnn.class')('ReduceOnPlateau')

local OPTS = require('fastnn.options').declare('optim.ReduceOnPlateau', {
   {'factor', 'number', 0.1, 'the rate is multiplied by it on a plateau', min = 0, max = 1, max_open = true},
   {'patience', 'number', 10, 'calls without improvement that are tolerated', min = 0},
   {'mode', 'string', 'min', "'min': lower is better; 'max': higher is", values = {'min', 'max'}},
   {'threshold', 'number', 1e-4, 'the least change that counts as an improvement', min = 0},
   {'threshold_mode', 'string', 'rel', "'rel' (relative to the best) or 'abs'", values = {'rel', 'abs'}},
   {'cooldown', 'number', 0, 'calls to wait after a reduction before counting again', min = 0},
   {'min_lr', 'number', 0, 'the rate is never reduced below it', min = 0},
})
local function opt_number(what, v, lo)
   if type(v) ~= 'number' or v ~= v or v < lo then
      error(('optim.ReduceOnPlateau: %s is %s, expected a number >= %g'):format(what, show_value(v), lo), 3)
   end
   return v
end

function ReduceOnPlateau.__new(cls, opt, opts, extra)
   if extra ~= nil then too_many('optim.ReduceOnPlateau', 3, extra, 'opt, opts') end
   if type(opt) ~= 'table' or type(opt.set_lr) ~= 'function' or type(opt.lr) ~= 'function' then
      error('optim.ReduceOnPlateau: expected an optimizer first, got a ' .. type(opt), 2)
   end
   opts = OPTS:check(opts, 2)
   local self = setmetatable({opt = opt}, cls)
   self.factor = opt_number('factor', opts.factor, 0)
   if self.factor >= 1 then error('optim.ReduceOnPlateau: factor should be < 1.0, got ' .. self.factor, 2) end
   self.patience = opt_number('patience', opts.patience, 0)
   self.threshold = opt_number('threshold', opts.threshold, 0)
   self.cooldown = opt_number('cooldown', opts.cooldown, 0)
   self.min_lr = opt_number('min_lr', opts.min_lr, 0)
   self.mode = opts.mode
   self.threshold_mode = opts.threshold_mode
   if self.mode ~= 'min' and self.mode ~= 'max' then
      error(("optim.ReduceOnPlateau: mode is '%s', expected 'min' or 'max'"):format(show_value(self.mode)), 2)
   end
   if self.threshold_mode ~= 'rel' and self.threshold_mode ~= 'abs' then
      error(("optim.ReduceOnPlateau: threshold_mode is '%s', expected 'rel' or 'abs'"):format(
         show_value(self.threshold_mode)), 2)
   end
   self.best = self.mode == 'min' and math.huge or -math.huge
   self.bad, self.cooling = 0, 0
   return self
end

function ReduceOnPlateau:_improved(v)
   local b, th = self.best, self.threshold
   if self.mode == 'min' then
      return self.threshold_mode == 'rel' and v < b * (1 - th) or (self.threshold_mode == 'abs' and v < b - th)
   end
   return self.threshold_mode == 'rel' and v > b * (1 + th) or (self.threshold_mode == 'abs' and v > b + th)
end

function ReduceOnPlateau:step(metric, extra)
   if extra ~= nil then too_many('optim.ReduceOnPlateau:step', 2, extra, 'metric') end
   if type(metric) ~= 'number' or metric ~= metric then
      error(('optim.ReduceOnPlateau: step: metric is %s, expected a number'):format(show_value(metric)), 2)
   end
   if self:_improved(metric) then
      self.best, self.bad = metric, 0
   else
      self.bad = self.bad + 1
   end
   if self.cooling > 0 then
      self.cooling = self.cooling - 1
      self.bad = 0
   end
   if self.bad > self.patience then
      local lr = math.max(self.opt:lr() * self.factor, self.min_lr)
      self.opt:set_lr(lr)
      self.cooling, self.bad = self.cooldown, 0
   end
   return self.opt:lr()
end

function ReduceOnPlateau:lr(extra)
   if extra ~= nil then too_many('optim.ReduceOnPlateau:lr', 1, extra, '') end
   return self.opt:lr()
end

function ReduceOnPlateau:__tostring()
   return ('optim.ReduceOnPlateau(factor=%g, patience=%d, mode=%s, best=%g)'):format(self.factor, self.patience,
                                                                                   self.mode, self.best)
end

return ReduceOnPlateau
