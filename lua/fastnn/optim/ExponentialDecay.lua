-- optim.ExponentialDecay(base, decay_steps, rate, {staircase = false}) (Keras):
--   lr_at(t) = base * rate^(t / decay_steps), with floor(t / decay_steps) when staircase
local S = require 'fastnn.optim._schedule'
local ExponentialDecay = S.class('ExponentialDecay')
local OPTS = require('fastnn.options').declare('optim.ExponentialDecay', {
   {'staircase', 'boolean', false, 'decay in whole steps of decay_steps'},
})

function ExponentialDecay:__init(base, decay_steps, rate, opts)
   self.base = S.number('ExponentialDecay', 'base', base, 0)
   self.decay_steps = S.number('ExponentialDecay', 'decay_steps', decay_steps, 1)
   self.decay_rate = S.number('ExponentialDecay', 'rate', rate, 0)
   self.staircase = OPTS:check(opts, 3).staircase
end

function ExponentialDecay:rate(t)
   local e = t / self.decay_steps
   if self.staircase then e = math.floor(e) end
   return self.base * self.decay_rate ^ e
end

function ExponentialDecay:describe()
   return ('base=%g, decay_steps=%d, rate=%g%s'):format(self.base, self.decay_steps, self.decay_rate,
                                                        self.staircase and ', staircase' or '')
end

return ExponentialDecay
