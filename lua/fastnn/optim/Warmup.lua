-- optim.Warmup(inner, steps): a linear ramp over the first `steps` steps to the inner schedule's
-- first rate, then the inner schedule from its own step 0:
--   t < steps:  inner:lr_at(0) * (t + 1) / steps        t >= steps:  inner:lr_at(t - steps)
-- so Warmup(CosineAnnealing(1e-3, 1000), 100) ramps for 100 steps and then runs the whole cosine.
-- inner may be a number (a constant rate).
local S = require 'fastnn.optim._schedule'
local Warmup = S.class('Warmup')

function Warmup:__init(inner, steps)
   self.inner = S.schedule('Warmup', 'inner', inner)
   self.steps = S.number('Warmup', 'steps', steps, 0)
end

function Warmup:rate(t)
   if t < self.steps then return self.inner:lr_at(0) * (t + 1) / self.steps end
   return self.inner:lr_at(t - self.steps)
end

function Warmup:describe() return ('steps=%d, %s'):format(self.steps, tostring(self.inner)) end

return Warmup
