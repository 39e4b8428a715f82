-- mnist_cnn: a small convolutional network. Two blocks of Conv2d -> BatchNorm2d -> ReLU ->
-- MaxPool2d (28x28 -> 14x14 -> 7x7), then a two-layer classifier, trained with AdamW under a
-- learning-rate schedule: a linear warmup, then cosine annealing to zero (optim.Warmup around
-- optim.CosineAnnealing, one rate per step). Batch norm uses the batch's statistics in training
-- and its running averages in evaluation (model:train() / model:eval()).
--   fastnn-lua examples/mnist_cnn.lua                     # 5 epochs on all 60000 images
--   fastnn-lua examples/mnist_cnn.lua --dataset fashion   # Fashion-MNIST
--   fastnn-lua examples/mnist_cnn.lua --quick             # 2000 images, 2 epochs (CI)
--   fastnn-lua examples/mnist_cnn.lua --precision autocast_bf16   # forward and loss in fnn.autocast
-- MNIST is downloaded once into $FASTNN_DATA (default ~/.cache/fastnn); without a network it says so
-- and uses Fashion-MNIST from the Debian package dataset-fashion-mnist.
-- Prints one line per epoch (losses, validation accuracy, learning rate, time) and
-- `test accuracy 0.xxxx`. Writes under --out (default ./fastnn-out): mnist_cnn_loss.png (train and
-- validation loss per epoch), mnist_cnn_lr.png (the schedule) and mnist_cnn_confusion.png.
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim, data, plot = fnn.nn, fnn.optim, fnn.data, require 'fastnn.plot'
local cli, pictures, datasets = require 'common.cli', require 'common.pictures', require 'common.datasets'
local classify, clock = require 'common.classify', require 'common.clock'

local opts = cli.parse{
   name = 'mnist_cnn', about = 'A CNN with batch norm, pooling and a warmup + cosine LR schedule.',
   options = {
      {'dataset', 'mnist', "'mnist' (downloaded; Fashion-MNIST when that fails) or 'fashion'", 'NAME'},
      {'epochs', 5, 'passes over the training set'},
      {'batch_size', 64, 'images per step'},
      {'lr', 2e-3, 'peak AdamW learning rate'},
      {'warmup', 200, 'steps of linear warmup'},
      {'train_size', 0, 'use the first N training images (0: all)'},
      {'test_size', 0, 'score on the first N test images (0: all)'},
      {'precision', 'float32', "'float32', or 'autocast_bf16' (each step's forward and loss in fnn.autocast('bf16'))",
       'MODE'},
   },
   quick = {epochs = 2, train_size = 2000, test_size = 500, warmup = 10},
}
fnn.manual_seed(opts.seed)
if opts.precision ~= 'float32' and opts.precision ~= 'autocast_bf16' then
   io.stderr:write(("mnist_cnn: --precision is '%s', expected 'float32' or 'autocast_bf16'\n"):format(opts.precision))
   os.exit(2)
end
-- the forward and the loss of a step: in fnn.autocast('bf16') with --precision autocast_bf16
local function step_loss(fn)
   if opts.precision == 'autocast_bf16' then return fnn.autocast('bf16', fn) end
   return fn()
end
local t0 = clock()

local train, test, name = datasets.load(opts.dataset)
if opts.train_size > 0 then train = datasets.head(train, opts.train_size) end
if opts.test_size > 0 then test = datasets.head(test, opts.test_size) end
local train_set, val_set = datasets.split(train, math.floor(train:len() / 12))
print(('%s: %d training, %d validation and %d test images'):format(
   name, train_set:len(), val_set:len(), test:len()))

local function block(inputs, outputs)   -- [N, inputs, H, W] -> [N, outputs, H/2, W/2]
   return nn.Sequential(nn.Conv2d(inputs, outputs, 3, {padding = 1}), nn.BatchNorm2d(outputs),
                        nn.ReLU(), nn.MaxPool2d(2))
end
local model = nn.Sequential(
   block(1, 32),                                  -- [N, 32, 14, 14]
   block(32, 64),                                 -- [N, 64, 7, 7]
   nn.Flatten(),
   nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.3),
   nn.Linear(128, 10))
print(model)
print(('%d parameters'):format(model:num_parameters()))

local loader = data.DataLoader(train_set, opts.batch_size):shuffle(true):seed(opts.seed)
local total_steps = opts.epochs * loader:len()
local warmup = math.min(opts.warmup, total_steps - 1)
local schedule = optim.Warmup(optim.CosineAnnealing(opts.lr, total_steps - warmup), warmup)
local opt = optim.AdamW(model:parameters(), opts.lr, {weight_decay = 1e-4})

local history, steps, rates, step = {train = {}, validation = {}}, {}, {}, 0
model:train()
for epoch = 1, opts.epochs do
   local e0, total, batches = clock(), 0, 0
   for batch in loader:iter() do
      steps[step + 1], rates[step + 1] = step, schedule:apply(opt, step)   -- opt:set_lr(schedule:lr_at(step))
      local loss = step_loss(function() return nn.cross_entropy(model(batch.inputs), batch.targets) end)
      opt:zero_grad()
      loss:backward()
      opt:step()
      step = step + 1
      total, batches = total + loss:item(), batches + 1
   end
   local val = classify.evaluate(model, val_set, {batch_size = 500})
   history.train[epoch], history.validation[epoch] = total / batches, val.loss
   print(('epoch %d/%d  train loss %.4f  validation loss %.4f  validation accuracy %.4f  lr %.2e  (%.1fs)'):format(
      epoch, opts.epochs, history.train[epoch], val.loss, val.accuracy, opt:lr(), clock() - e0))
end

local result = classify.evaluate(model, test, {batch_size = 500})
print(('test accuracy %.4f on %s (%d images)'):format(result.accuracy, name, test:len()))
pictures.loss_curves(pictures.path(opts, 'mnist_cnn_loss.png'), history,
                     {title = name .. ' CNN: cross-entropy per epoch'})
pictures.wrote(plot.line{path = pictures.path(opts, 'mnist_cnn_lr.png'), title = 'learning rate: warmup + cosine',
                         xlabel = 'step', ylabel = 'learning rate', series = {{name = 'lr', x = steps, y = rates}}})
pictures.confusion(pictures.path(opts, 'mnist_cnn_confusion.png'), result.confusion, test.classes,
                   {title = name .. ' test set: confusion matrix'})
print(('done in %.1fs'):format(clock() - t0))
