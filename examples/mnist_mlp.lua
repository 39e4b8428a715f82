-- mnist_mlp: a complete classifier run. An MLP (784-256-256-10, ReLU, dropout) learns MNIST with
-- Adam in shuffled batches; each epoch it is scored on a held-out validation set and the whole
-- training state (weights, Adam's moments, the step, the loader's shuffle stream, the random
-- state) is saved, so --resume continues where a run stopped. At the end: the test accuracy.
--   fastnn-lua examples/mnist_mlp.lua                     # 10 epochs on all 60000 images
--   fastnn-lua examples/mnist_mlp.lua --epochs 15 --resume   # 5 more epochs from the checkpoint
--   fastnn-lua examples/mnist_mlp.lua --dataset fashion   # Fashion-MNIST instead
--   fastnn-lua examples/mnist_mlp.lua --quick             # 3000 images, 3 epochs (CI)
-- MNIST is downloaded once into $FASTNN_DATA (default ~/.cache/fastnn). Without a network it says
-- so and uses Fashion-MNIST from the Debian package dataset-fashion-mnist.
-- Prints one line per epoch (losses, validation accuracy, time) and `test accuracy 0.xxxx`.
-- Writes under --out (default ./fastnn-out): mnist_mlp.fdl (the checkpoint), mnist_mlp_loss.png
-- (train and validation loss per epoch) and mnist_mlp_confusion.png (test confusion matrix).
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim, data, json = fnn.nn, fnn.optim, fnn.data, require 'fastnn.json'
local cli, pictures, datasets = require 'common.cli', require 'common.pictures', require 'common.datasets'
local classify, clock = require 'common.classify', require 'common.clock'

local opts = cli.parse{
   name = 'mnist_mlp', about = 'An MLP on MNIST: batching, validation, checkpoints, test accuracy.',
   options = {
      {'dataset', 'mnist', "'mnist' (downloaded; Fashion-MNIST when that fails) or 'fashion'", 'NAME'},
      {'epochs', 10, 'train until this many epochs are done'},
      {'batch_size', 128, 'images per step'},
      {'lr', 1e-3, 'Adam learning rate'},
      {'train_size', 0, 'use the first N training images (0: all)'},
      {'test_size', 0, 'score on the first N test images (0: all)'},
      {'resume', false, 'continue from the checkpoint in --out'},
   },
   quick = {epochs = 3, train_size = 3000, test_size = 1000},
}
fnn.manual_seed(opts.seed)
local t0 = clock()

local train, test, name = datasets.load(opts.dataset)
if opts.train_size > 0 then train = datasets.head(train, opts.train_size) end
if opts.test_size > 0 then test = datasets.head(test, opts.test_size) end
local train_set, val_set = datasets.split(train, math.floor(train:len() / 12))   -- 55000 / 5000
print(('%s: %d training, %d validation and %d test images'):format(
   name, train_set:len(), val_set:len(), test:len()))

local model = nn.Sequential(
   nn.Flatten(),
   nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.2),
   nn.Linear(256, 256), nn.ReLU(), nn.Dropout(0.2),
   nn.Linear(256, 10))
print(model)
print(('%d parameters'):format(model:num_parameters()))

local opt = optim.Adam(model:parameters(), opts.lr)
local loader = data.DataLoader(train_set, opts.batch_size):shuffle(true):seed(opts.seed)

-- the checkpoint carries the curves so far, so a resumed run draws the whole history
local checkpoint = pictures.path(opts, 'mnist_mlp.fdl')
local history = {train = {}, validation = {}}
local done = 0
if opts.resume then
   local f = io.open(checkpoint, 'rb')
   if f then
      f:close()
      done = fnn.load_training(model, opt, checkpoint, {loader = loader})
      history = json.decode(fnn.serialize.info(checkpoint).metadata.history)
      print(('resumed after epoch %d from %s'):format(done, checkpoint))
   else
      print(('no checkpoint at %s: starting from scratch'):format(checkpoint))
   end
end

model:train()
for epoch = done + 1, opts.epochs do
   local e0, total, batches = clock(), 0, 0
   for batch in loader:iter() do
      local loss = nn.cross_entropy(model(batch.inputs), batch.targets)
      opt:zero_grad()
      loss:backward()
      opt:step()
      total, batches = total + loss:item(), batches + 1
   end
   local val = classify.evaluate(model, val_set)
   history.train[epoch], history.validation[epoch] = total / batches, val.loss
   fnn.save_training(model, opt, epoch, checkpoint,
                     {loader = loader, metadata = {history = json.encode(history)}})
   print(('epoch %2d/%d  train loss %.4f  validation loss %.4f  validation accuracy %.4f  (%.1fs)'):format(
      epoch, opts.epochs, history.train[epoch], val.loss, val.accuracy, clock() - e0))
end
print(('saved the training state to %s'):format(checkpoint))

local result = classify.evaluate(model, test)
print(('test accuracy %.4f on %s (%d images)'):format(result.accuracy, name, test:len()))
pictures.loss_curves(pictures.path(opts, 'mnist_mlp_loss.png'), history,
                     {title = name .. ' MLP: cross-entropy per epoch'})
pictures.confusion(pictures.path(opts, 'mnist_mlp_confusion.png'), result.confusion, test.classes,
                   {title = name .. ' test set: confusion matrix'})
print(('done in %.1fs'):format(clock() - t0))
