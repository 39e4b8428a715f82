-- keras_fashion: Fashion-MNIST with the Keras-style API: a small Dense model (784-128-10) built
-- for [32, 1, 28, 28], compiled with Adam and cross-entropy, fit for 2 epochs in batches of 32
-- (Keras' default) with a progress bar (one line per epoch when not on a terminal), then
-- evaluated on the test set: about 85.6% test accuracy (fnn.manual_seed(1)).
--   fastnn-lua examples/keras_fashion.lua [epochs]
-- Needs the IDX files: the Debian package dataset-fashion-mnist, or $FASTNN_DATA/fashion-mnist.
local fnn = require 'fastnn'
local nn, optim, data = fnn.nn, fnn.optim, fnn.data

local epochs = tonumber(arg and arg[1]) or 2
fnn.manual_seed(1)
local train = data.FashionMnist.load('train')
local test = data.FashionMnist.load('test')

local model = nn.Sequential()
   :add(nn.Flatten())
   :add(nn.Dense(128, 'relu'))
   :add(nn.Dense(10))
   :build{32, 1, 28, 28}
model:compile{optimizer = optim.Adam{lr = 1e-3}, loss = 'cross_entropy', metrics = {'accuracy'}}
model:summary()

model:fit(train.inputs, train.targets, {epochs = epochs, batch_size = 32})
local loss, metrics = model:evaluate(test.inputs, test.targets, {batch_size = 1000})
print(('test loss %.4f  test accuracy %.2f%%'):format(loss, 100 * metrics.accuracy))
