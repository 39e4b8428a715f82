-- optim.OneCycle(max_lr, total_steps, {pct_start = 0.3, div_factor = 25, final_div_factor = 1e4,
-- anneal = 'cos' | 'linear'}) (Smith & Topin; PyTorch's OneCycleLR without momentum cycling):
-- from max_lr / div_factor up to max_lr over the first pct_start of the steps, then down to
-- initial / final_div_factor at the last step (step total_steps - 1).
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local S = require 'fastnn.optim._schedule'
local OneCycle = S.class('OneCycle')
local OPTS = require('fastnn.options').declare('optim.OneCycle', {
   {'pct_start', 'number', 0.3, 'the fraction of the steps spent rising', min = 0, max = 1},
   {'div_factor', 'number', 25, 'the first rate is max_lr / div_factor', min = 0},
   {'final_div_factor', 'number', 1e4, 'the last rate is the first / final_div_factor', min = 0},
   {'anneal', 'string', 'cos', "'cos' or 'linear'", values = {'cos', 'linear'}},
})

function OneCycle:__init(max_lr, total, opts)
   opts = OPTS:check(opts, 3)
   self.max_lr = S.number('OneCycle', 'max_lr', max_lr, 0)
   self.total = S.number('OneCycle', 'total_steps', total, 2)
   self.pct_start = S.number('OneCycle', 'pct_start', opts.pct_start, 0, 1)
   self.initial = self.max_lr / S.number('OneCycle', 'div_factor', opts.div_factor, 0)
   self.final = self.initial / S.number('OneCycle', 'final_div_factor', opts.final_div_factor, 0)
   self.anneal = opts.anneal
   if self.anneal ~= 'cos' and self.anneal ~= 'linear' then
      error(("optim.OneCycle: anneal is '%s', expected 'cos' or 'linear'"):format(show_value(self.anneal)), 3)
   end
   -- the step that ends each phase, as PyTorch: pct_start * total - 1, then total - 1
   self.peak = self.pct_start * self.total - 1
end

local function anneal(kind, from, to, pct)
   if kind == 'linear' then return from + (to - from) * pct end
   return to + (from - to) / 2 * (1 + math.cos(math.pi * pct))
end

function OneCycle:rate(t)
   if t >= self.total - 1 then return self.final end
   if t <= self.peak then
      return anneal(self.anneal, self.initial, self.max_lr, self.peak > 0 and t / self.peak or 1)
   end
   return anneal(self.anneal, self.max_lr, self.final, (t - self.peak) / (self.total - 1 - self.peak))
end

function OneCycle:describe() return ('max_lr=%g, total_steps=%d, pct_start=%g'):format(self.max_lr, self.total, self.pct_start) end

return OneCycle
