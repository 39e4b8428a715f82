-- simple_mlp: a 2-8-1 MLP with tanh learns XOR with plain SGD and MSE.
--   fastnn-lua examples/simple_mlp.lua
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim

fnn.manual_seed(42)

local inputs = fnn.tensor{{0, 0}, {0, 1}, {1, 0}, {1, 1}}
local targets = fnn.tensor{{0}, {1}, {1}, {0}}

local model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
local opt = optim.SGD(model:parameters(), 0.1, {momentum = 0.9})

for step = 1, 500 do
   local loss = nn.mse(model(inputs), targets)
   opt:zero_grad()
   loss:backward()
   opt:step()
   if step == 1 or step % 100 == 0 then print(('step %4d  loss %.6f'):format(step, loss:item())) end
end

local out = fnn.no_grad(function() return model(inputs) end):to_flat()
local x = inputs:to_table()
for i = 1, 4 do
   print(('%d xor %d -> %.3f'):format(x[i][1], x[i][2], out[i]))
end
