-- keras_sequential: the RustyML seed's first program in Lua. A chain of two Dense layers is built
-- for 8 samples of 4 features (build refuses a stack that does not agree before any data moves),
-- compiled with Adam and mean squared error, trained for 5 epochs, and asked for predictions.
--   fastnn-lua examples/keras_sequential.lua            # the seed's program: 5 epochs
--   fastnn-lua examples/keras_sequential.lua --quick    # the same (it takes milliseconds)
-- Prints the summary, one line per epoch, `loss after 5 epochs: x` and the prediction shape.
-- Writes under --out (default ./fastnn-out): keras_sequential_loss.png (loss per epoch).
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim
local cli, pictures = require 'common.cli', require 'common.pictures'

local opts = cli.parse{
   name = 'keras_sequential', about = "The RustyML seed's Sequential program: Dense(16, relu) -> Dense(1), Adam, MSE.",
   options = {{'epochs', 5, 'passes over the 8 samples'}},
}
fnn.manual_seed(opts.seed)
local x = fnn.ones(8, 4)   -- 8 samples, 4 features
local y = fnn.ones(8, 1)   -- 8 samples, 1 target

-- the builder collects the layers, and build gives every one of them the shape that reaches it
local model = nn.Sequential()
   :add(nn.Dense(16, 'relu'))
   :add(nn.Dense(1, 'linear'))
   :build(x:shape())
model:compile{
   optimizer = optim.Adam{lr = 0.001, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0},
   loss = nn.MeanSquaredError(),
}
model:summary()

local history = model:fit(x, y, {epochs = opts.epochs})
print(('loss after %d epochs: %.4f'):format(#history.loss, history.loss[#history.loss]))
local preds = model:predict(x)
print(('prediction shape: %s'):format(fnn.shape_str(preds)))
pictures.loss_curves(pictures.path(opts, 'keras_sequential_loss.png'), {train = history.loss},
                     {title = 'Sequential: mean squared error'})
