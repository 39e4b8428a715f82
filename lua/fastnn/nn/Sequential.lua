-- nn.Sequential(m1, m2, ...), nn.Sequential{m1, m2} or nn.Sequential():add(m1):add(m2):
-- runs its children in order; the first gets every argument of forward, each next one
-- the output of the one before, and the last one's results are returned (all of them, so
-- a final LSTM hands back its state too). An empty Sequential returns its input.
-- Children are named by 1-based position ('2.weight'); seq[i] and #seq work (a ModuleList).
-- A child's error is re-raised at the line that called the model, prefixed with the
-- child's position and short_str; nested containers chain their prefixes:
--   Sequential[3] nn.Linear(784 -> 128): Linear(784 -> 128): input [8,100] has ...
local nn = require 'fastnn.nn'
local unpack = unpack or table.unpack

local Sequential = nn.ModuleList:extend('Sequential')
local child_error = nn.Module._child_error

local function run(self, ...)
   local n = #self
   if n == 0 then return ... end
   rawset(self, '_at', 1)
   if n == 1 then return self[1]:forward(...) end
   local x = self[1]:forward(...)
   for i = 2, n - 1 do
      rawset(self, '_at', i)
      x = self[i]:forward(x)
   end
   rawset(self, '_at', n)
   return self[n]:forward(x)
end

function Sequential:forward(...)
   local r = {pcall(run, self, ...)}
   if r[1] then return unpack(r, 2, table.maxn(r)) end
   local i = rawget(self, '_at')
   local msg = child_error(('Sequential[%d] %s: '):format(i, self[i]:short_str()), r[2])
   if msg == nil then error(r[2], 0) end
   error(msg, 2)   -- the caller of forward (model(x) reaches forward by a tail call)
end

-- The Keras-style model methods (build(input_shape), output_shape, compile, fit, train_batch,
-- evaluate, predict, summary, ...) are fastnn.keras's, a layer above nn: it adds them to this
-- class when it loads (fastnn/keras/sequential.lua and model.lua).

return Sequential
