-- keras_graph: the RustyML seed's second program in Lua. A graph model wires the same layers by
-- node: input declares an inlet, add calls a layer on earlier nodes (so a residual connection is
-- one extra node in the list), build names the outlets. fit, predict and evaluate take one tensor
-- per inlet and give one per outlet.
--   fastnn-lua examples/keras_graph.lua            # the seed's program: 5 epochs
--   fastnn-lua examples/keras_graph.lua --quick    # the same (it takes milliseconds)
-- Prints the summary, one line per epoch, `loss after 5 epochs: x` and the prediction shape.
-- Writes under --out (default ./fastnn-out): keras_graph_loss.png (loss per epoch).
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim
local cli, pictures = require 'common.cli', require 'common.pictures'

local opts = cli.parse{
   name = 'keras_graph', about = "The RustyML seed's graph program: Dense(4, relu), a residual Add, Dense(1).",
   options = {{'epochs', 5, 'passes over the 8 samples'}},
}
fnn.manual_seed(opts.seed)
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
local history = model:fit({x}, {y}, {epochs = opts.epochs})
print(('loss after %d epochs: %.4f'):format(#history.loss, history.loss[#history.loss]))

local preds = model:predict{x}
print(('prediction shape: %s'):format(fnn.shape_str(preds[1])))
pictures.loss_curves(pictures.path(opts, 'keras_graph_loss.png'), {train = history.loss},
                     {title = 'graph model: mean squared error'})
