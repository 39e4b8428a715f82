-- nn.ELU(alpha = 1) or nn.ELU{alpha = 1}: x > 0 ? x : alpha (e^x - 1). x any shape -> same shape.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local fnn_elu = fnn_tensor.C.fnn_elu

local ELU = nn.Module:extend('ELU')
local OPTS = require('fastnn.options').declare('nn.ELU', {
   {'alpha', 'number', 1, 'the value the negative side saturates to, times -1'},
})

function ELU:__init(opts)
   local alpha = opts
   if type(opts) == 'table' then alpha = OPTS:check(opts, 3).alpha end   -- 3: the user's line
   if alpha == nil then alpha = 1 end
   if type(alpha) ~= 'number' or alpha ~= alpha or alpha == math.huge or alpha == -math.huge then
      error(('nn.ELU: alpha is %s (a %s), expected a finite number'):format(show_value(alpha), type(alpha)), 3)
   end
   self.alpha = alpha
end

function ELU:forward(x)
   if not istype(x) then error(('ELU: input is a %s, expected a tensor'):format(type(x)), 2) end
   local out = new()
   if fnn_elu(out, x, self.alpha) ~= 0 then fail() end
   return done(out)
end

function ELU:__tostring() return ('nn.ELU(alpha=%g)'):format(self.alpha) end

return ELU
