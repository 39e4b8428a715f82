-- optim.CosineAnnealing(base, T, {min = 0}): lr_at(t) = min + (base - min) (1 + cos(pi t / T)) / 2
-- for 0 <= t <= T, then min (no restarts).
local S = require 'fastnn.optim._schedule'
local CosineAnnealing = S.class('CosineAnnealing')
local OPTS = require('fastnn.options').declare('optim.CosineAnnealing', {
   {'min', 'number', 0, 'the rate after T steps (eta_min)', min = 0},
})

function CosineAnnealing:__init(base, T, opts)
   self.base = S.number('CosineAnnealing', 'base', base, 0)
   self.T = S.number('CosineAnnealing', 'T', T, 1)
   -- 1 check, 2 here, 3 the class call: the user is level 4
   self.min = S.number('CosineAnnealing', 'min', OPTS:check(opts, 3).min, 0)
end

function CosineAnnealing:rate(t)
   if t >= self.T then return self.min end
   return self.min + (self.base - self.min) * (1 + math.cos(math.pi * t / self.T)) / 2
end

function CosineAnnealing:describe() return ('base=%g, T=%d, min=%g'):format(self.base, self.T, self.min) end

return CosineAnnealing
