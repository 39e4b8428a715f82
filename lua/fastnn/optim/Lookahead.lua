-- optim.Lookahead(inner, k = 5, alpha = 0.5) (Zhang et al. 2019): the inner optimizer takes k
-- fast steps; then each parameter's slow copy moves alpha of the way towards it and the
-- parameter is set to the slow copy. Every other call goes to the inner optimizer.
--   local opt = optim.Lookahead(optim.Adam(model:parameters(), 1e-3), 5, 0.5)
-- STATE: the inner optimizer's, the slow weights and the fast-step count.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local C = fnn_tensor.C
local fail = fnn_tensor.fail
local copy_of = require('fastnn.optim')._copy_of

local Lookahead = require('fastnn.class')('Lookahead')

function Lookahead.__new(cls, inner, k, alpha, extra)
   if extra ~= nil then too_many('optim.Lookahead', 4, extra, 'inner, k, alpha') end
   if type(inner) ~= 'table' or type(inner.step) ~= 'function' or type(inner.parameters) ~= 'function' then
      error('optim.Lookahead: expected an optimizer to wrap, got a ' .. type(inner), 2)
   end
   k, alpha = k or 5, alpha or 0.5
   if type(k) ~= 'number' or k < 1 or k ~= math.floor(k) then
      error(('optim.Lookahead: k is %s, expected a positive whole number'):format(show_value(k)), 2)
   end
   if type(alpha) ~= 'number' or alpha < 0 or alpha > 1 then
      error(('optim.Lookahead: alpha is %s, expected a number in [0, 1]'):format(show_value(alpha)), 2)
   end
   local self = setmetatable({inner = inner, k = k, alpha = alpha, _count = 0, _slow = {}}, cls)
   for i, p in ipairs(inner:parameters()) do self._slow[i] = copy_of(p:tensor()) end
   return self
end

function Lookahead:step(closure, extra)
   if extra ~= nil then too_many('optim.Lookahead:step', 2, extra, 'closure') end
   local loss = self.inner:step(closure)
   self._count = self._count + 1
   if self._count % self.k == 0 then
      for i, p in ipairs(self.inner:parameters()) do
         local slow = self._slow[i]
         if C.fnn_optim_lerp(slow, p:tensor():detach(), self.alpha) ~= 0 then fail() end
         p:set(slow)
      end
   end
   return loss
end

for _, name in ipairs{'zero_grad', 'lr', 'parameters', 'gradients_are_finite', 'steps'} do
   Lookahead[name] = function(self, extra)   -- each takes nothing: an extra is refused under Lookahead's name
      if extra ~= nil then too_many('optim.Lookahead:' .. name, 1, extra, '') end
      return self.inner[name](self.inner)
   end
end
function Lookahead:set_lr(lr, extra)
   if extra ~= nil then too_many('optim.Lookahead:set_lr', 2, extra, 'lr') end
   self.inner:set_lr(lr); return self
end

function Lookahead:state(extra)
   if extra ~= nil then too_many('optim.Lookahead:state', 1, extra, '') end
   return {optimizer = 'Lookahead', inner = self.inner:state(), count = self._count, slow = self._slow}
end

function Lookahead:load_state(s, extra)
   if extra ~= nil then too_many('optim.Lookahead:load_state', 2, extra, 's') end
   if type(s) ~= 'table' or s.optimizer ~= 'Lookahead' or type(s.slow) ~= 'table' then
      error(('optim.Lookahead: load_state: expected a state from Lookahead:state(), got %s'):format(
         type(s) == 'table' and ('one from optim.' .. show_value(s.optimizer)) or type(s)), 2)
   end
   local params = self.inner:parameters()
   if #s.slow ~= #params then
      error(('optim.Lookahead: load_state: state has %d slow weights, this optimizer has %d parameters'):format(
         #s.slow, #params), 2)
   end
   for i, p in ipairs(params) do
      if fnn_tensor.shape_str(s.slow[i]) ~= fnn_tensor.shape_str(p:tensor()) then
         error(('optim.Lookahead: load_state: slow weight %d is %s, the parameter is %s'):format(
            i, fnn_tensor.shape_str(s.slow[i]), fnn_tensor.shape_str(p:tensor())), 2)
      end
   end
   local ok, err = pcall(self.inner.load_state, self.inner, s.inner)
   if not ok then error((tostring(err):gsub('^[^:\n]+:%d+: ', '')), 2) end
   for i = 1, #params do self._slow[i] = copy_of(s.slow[i]) end
   self._count = s.count or 0
   return self
end

function Lookahead:__tostring()
   return ('optim.Lookahead(k=%d, alpha=%g; %s)'):format(self.k, self.alpha, tostring(self.inner))
end

return Lookahead
