-- nn.Bidirectional(layer, {merge = 'concat'}) (Keras): runs `layer` (an nn.LSTM, nn.GRU or
-- nn.SimpleRNN) and a second layer of the same class and options with go_backwards inverted
-- (fresh weights), and merges their outputs: 'concat' along the features ([..., 2H]), 'sum',
-- 'mul' or 'ave'. With return_sequences the second direction's outputs are flipped back into
-- time order first, so position t holds both directions' states at step t (Keras, PyTorch's
-- bidirectional); without, each direction's last output is merged.
-- out, {state_forward, state_backward} = m:forward(x, {state_forward, state_backward}), each
-- state in its layer's form (nil: zeros). Children: forward_layer, backward_layer.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local Reverse = nn.Reverse
local cat = require('fastnn.ops.shape').cat
local child_error = nn.Module._child_error
local istype = fnn_tensor.is_tensor

local Bidirectional = nn.Module:extend('Bidirectional')
local MERGES = {concat = true, sum = true, mul = true, ave = true}
local OPTS = require('fastnn.options').declare('nn.Bidirectional', {
   {'merge', 'string', 'concat', "how the two directions' outputs combine", values = {'concat', 'sum', 'mul', 'ave'}},
})

function Bidirectional:__init(layer, opts)
   if not nn.Module.is_module(layer) or type(layer._clone_config) ~= 'function' then
      error(('nn.Bidirectional: layer is %s, expected an nn.LSTM, nn.GRU or nn.SimpleRNN'):format(
         nn.Module.is_module(layer) and layer:short_str() or ('a ' .. type(layer))), 3)
   end
   local merge = OPTS:check(opts, 3).merge
   if not MERGES[merge] then
      error(("nn.Bidirectional: merge is %s, expected 'concat', 'sum', 'mul' or 'ave'"):format(show_value(merge)), 3)
   end
   self.merge = merge
   self.forward_layer = layer
   self.backward_layer = layer:_clone_config(true)
   rawset(self, '_index', {})
end

local function run(self, which, layer, x, state)
   local r = {pcall(layer.forward, layer, x, state)}
   if r[1] then return r[2], r[3] end
   local msg = child_error(('Bidirectional[%s] '):format(which), r[2])
   if msg == nil then error(r[2], 0) end
   error(msg, 3)   -- 1 here, 2 forward, 3 the user
end

function Bidirectional:forward(x, state)
   if state ~= nil and (type(state) ~= 'table' or istype(state)) then
      error(('%s: state is a %s, expected {state_forward, state_backward}'):format(
         self:short_str(), istype(state) and 'tensor' or type(state)), 2)
   end
   local yf, sf = run(self, 'forward', self.forward_layer, x, state and state[1])
   local yb, sb = run(self, 'backward', self.backward_layer, x, state and state[2])
   if self.forward_layer.return_sequences then yb = Reverse.flip(yb, 2, rawget(self, '_index')) end
   local m, y = self.merge, nil
   if m == 'concat' then y = cat({yf, yb}, -1)
   elseif m == 'sum' then y = yf + yb
   elseif m == 'mul' then y = yf * yb
   else y = (yf + yb) * 0.5 end
   return y, {sf, sb}
end

function Bidirectional:output_shape(shape)
   local s = self.forward_layer:output_shape(shape)
   if self.merge == 'concat' then s[#s] = 2 * s[#s] end
   return s
end

function Bidirectional:short_str()
   return ('nn.Bidirectional(%s, merge=%s)'):format(self.forward_layer:short_str(), self.merge)
end

return Bidirectional
