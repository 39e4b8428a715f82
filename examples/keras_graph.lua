-- keras_graph: the RustyML seed's second program in Lua. A graph model wires the same layers by
-- node: input declares an inlet, add calls a layer on earlier nodes (so a residual connection is
-- one extra node in the list), build names the outlets. fit, predict and evaluate take one tensor
-- per inlet and give one per outlet.
--   fastnn-lua examples/keras_graph.lua
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim

fnn.manual_seed(1)
local x = fnn.ones(8, 4)
local y = fnn.ones(8, 1)

local builder = nn.GraphBuilder()
local input = builder:input{8, 4}
local hidden = builder:add(nn.Dense(4, 'relu'), {input})
-- Add reads 2 nodes, so the block adds its own input to what the layer computed
local residual = builder:add(nn.Add(), {input, hidden})
local head = builder:add(nn.Dense(1, 'linear'), {residual})
local model = builder:build{head}

model:compile{
   optimizer = optim.Adam{lr = 0.001, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0},
   loss = nn.MeanSquaredError(),
}
model:summary()
local history = model:fit({x}, {y}, {epochs = 5})
print(('loss after %d epochs: %.4f'):format(#history.loss, history.loss[#history.loss]))

local preds = model:predict{x}
print(('prediction shape: %s'):format(fnn.shape_str(preds[1])))
