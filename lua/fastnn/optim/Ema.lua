-- optim.Ema(params, decay = 0.999): an exponential moving average of the parameters, for
-- evaluation with smoothed weights.
--   local ema = optim.Ema(model:parameters(), 0.999)
--   ... opt:step(); ema:update() ...
--   ema:swap_in(); evaluate(model); ema:swap_out()
-- update(): shadow = decay * shadow + (1 - decay) * p, in place in C (one pass per parameter).
-- swap_in() puts the averages into the parameters (keeping the trained values aside);
-- swap_out() puts the trained values back. STATE: the shadow weights and the update count.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local C = fnn_tensor.C
local fail = fnn_tensor.fail
local optim = require 'fastnn.optim'
local param_list, copy_of = optim._param_list, optim._copy_of

local Ema = require('fastnn.class')('Ema')

function Ema.__new(cls, params, decay, extra)
   if extra ~= nil then too_many('optim.Ema', 3, extra, 'params, decay') end
   local list = param_list('optim.Ema', params)
   decay = decay or 0.999
   if type(decay) ~= 'number' or decay < 0 or decay > 1 then
      error(('optim.Ema: decay is %s, expected a number in [0, 1]'):format(show_value(decay)), 2)
   end
   local self = setmetatable({params = list, decay = decay, updates = 0, shadow = {}, _backup = nil}, cls)
   for i, p in ipairs(list) do self.shadow[i] = copy_of(p:tensor()) end
   return self
end

function Ema:update(extra)
   if extra ~= nil then too_many('optim.Ema:update', 1, extra, '') end
   if self._backup then error('optim.Ema: update() while the averages are swapped in; call swap_out() first', 2) end
   for i, p in ipairs(self.params) do
      if C.fnn_optim_lerp(self.shadow[i], p:tensor():detach(), 1 - self.decay) ~= 0 then fail() end
   end
   self.updates = self.updates + 1
   return self
end

function Ema:swap_in(extra)
   if extra ~= nil then too_many('optim.Ema:swap_in', 1, extra, '') end
   if self._backup then error('optim.Ema: the averages are already swapped in', 2) end
   local backup = {}
   for i, p in ipairs(self.params) do
      backup[i] = copy_of(p:tensor())
      p:set(self.shadow[i])
   end
   self._backup = backup
   return self
end

function Ema:swap_out(extra)
   if extra ~= nil then too_many('optim.Ema:swap_out', 1, extra, '') end
   if not self._backup then error('optim.Ema: swap_out() without swap_in()', 2) end
   for i, p in ipairs(self.params) do p:set(self._backup[i]) end
   self._backup = nil
   return self
end

function Ema:state(extra)
   if extra ~= nil then too_many('optim.Ema:state', 1, extra, '') end
   return {optimizer = 'Ema', decay = self.decay, updates = self.updates, shadow = self.shadow}
end

function Ema:load_state(s, extra)
   if extra ~= nil then too_many('optim.Ema:load_state', 2, extra, 's') end
   if type(s) ~= 'table' or s.optimizer ~= 'Ema' or type(s.shadow) ~= 'table' or #s.shadow ~= #self.params then
      error(('optim.Ema: load_state: expected a state from Ema:state() for %d parameters'):format(#self.params), 2)
   end
   for i, p in ipairs(self.params) do
      if fnn_tensor.shape_str(s.shadow[i]) ~= fnn_tensor.shape_str(p:tensor()) then
         error(('optim.Ema: load_state: shadow %d is %s, the parameter is %s'):format(
            i, fnn_tensor.shape_str(s.shadow[i]), fnn_tensor.shape_str(p:tensor())), 2)
      end
   end
   for i = 1, #self.params do self.shadow[i] = copy_of(s.shadow[i]) end
   self.decay, self.updates = s.decay or self.decay, s.updates or 0
   return self
end

function Ema:__tostring() return ('optim.Ema(decay=%g; %d parameters)'):format(self.decay, #self.params) end

return Ema
