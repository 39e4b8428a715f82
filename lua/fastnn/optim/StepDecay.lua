-- optim.StepDecay(base, step_size, gamma = 0.1): lr_at(t) = base * gamma^floor(t / step_size)
-- (PyTorch's StepLR)
local S = require 'fastnn.optim._schedule'
local StepDecay = S.class('StepDecay')

function StepDecay:__init(base, step_size, gamma)
   self.base = S.number('StepDecay', 'base', base, 0)
   self.step_size = S.number('StepDecay', 'step_size', step_size, 1)
   self.gamma = S.number('StepDecay', 'gamma', gamma or 0.1, 0)
end

function StepDecay:rate(t) return self.base * self.gamma ^ math.floor(t / self.step_size) end

function StepDecay:describe() return ('base=%g, step_size=%d, gamma=%g'):format(self.base, self.step_size, self.gamma) end

return StepDecay
