-- multi_task: one network, two jobs. A shared trunk (an MLP 784-256-128) feeds two heads: one
-- names the Fashion-MNIST class, the other estimates how much ink the image holds (its mean pixel
-- intensity, standardised over the training set). The model is a user module (nn.Module:extend)
-- whose forward returns both outputs; one backward of the combined loss
--   loss = cross_entropy(class) + weight * mse(intensity)
-- trains the trunk for both and each head for its own.
--   fastnn-lua examples/multi_task.lua                 # 5 epochs on all 60000 images
--   fastnn-lua examples/multi_task.lua --weight 0.1    # care less about the intensity
--   fastnn-lua examples/multi_task.lua --quick         # 3000 images, 2 epochs (CI)
-- Prints both losses per epoch, then `test accuracy 0.xxxx` and `intensity RMSE x.xxxx` beside the
-- RMSE of always guessing the training mean. Writes under --out (default ./fastnn-out):
-- multi_task_loss.png (each head's train and validation loss per epoch), multi_task_intensity.png
-- (predicted against true intensity on test images) and multi_task_confusion.png.
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim, data, plot = fnn.nn, fnn.optim, fnn.data, require 'fastnn.plot'
local cli, pictures, datasets = require 'common.cli', require 'common.pictures', require 'common.datasets'
local classify = require 'common.classify'

local opts = cli.parse{
   name = 'multi_task', about = 'A shared trunk, two heads (class and ink intensity), one combined loss.',
   options = {
      {'epochs', 5, 'passes over the training set'},
      {'batch_size', 128, 'images per step'},
      {'lr', 1e-3, 'Adam learning rate'},
      {'weight', 1, 'weight of the intensity loss in the sum'},
      {'train_size', 0, 'use the first N training images (0: all)'},
      {'test_size', 0, 'score on the first N test images (0: all)'},
   },
   quick = {epochs = 2, train_size = 3000, test_size = 1000},
}
fnn.manual_seed(opts.seed)

local train, test = datasets.load('fashion')
if opts.train_size > 0 then train = datasets.head(train, opts.train_size) end
if opts.test_size > 0 then test = datasets.head(test, opts.test_size) end
local train_set, val_set = datasets.split(train, math.floor(train:len() / 12))

-- the regression target: mean pixel intensity [N], standardised with the training set's statistics
local function ink(images) return images:reshape{images:size(1), -1}:mean(2) end
local train_ink = ink(train_set.inputs)
local ink_mean, ink_std = train_ink:mean():item(), train_ink:std():item()
local function target(images) return (ink(images) - ink_mean) / ink_std end

local MultiTask = nn.Module:extend('MultiTask')
function MultiTask:__init()
   self.trunk = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU())
   self.class_head = nn.Linear(128, 10)
   self.ink_head = nn.Linear(128, 1)
end
function MultiTask:forward(x)       -- x [N, 1, 28, 28] -> logits [N, 10], intensity [N]
   local h = self.trunk(x)
   return self.class_head(h), self.ink_head(h):reshape{-1}
end

local model = MultiTask()
print(model)
local opt = optim.Adam(model:parameters(), opts.lr)
local loader = data.DataLoader(train_set, opts.batch_size):shuffle(true)

-- both losses of a batch
local function losses(batch)
   local logits, intensity = model(batch.inputs)
   return nn.cross_entropy(logits, batch.targets), nn.mse(intensity, target(batch.inputs))
end

-- mean losses over a dataset, in eval mode and without a graph
local function validate(ds)
   model:eval()
   local ce, mse = 0, 0
   fnn.no_grad(function()
      for batch in data.DataLoader(ds, 1000):iter() do
         local a, b = losses(batch)
         ce, mse = ce + a:item() * batch.size, mse + b:item() * batch.size
      end
   end)
   model:train()
   return ce / ds:len(), mse / ds:len()
end

local curves = {class_train = {}, class_val = {}, ink_train = {}, ink_val = {}}
model:train()
for epoch = 1, opts.epochs do
   local ce_sum, mse_sum, batches = 0, 0, 0
   for batch in loader:iter() do
      local ce, mse = losses(batch)
      local loss = ce + opts.weight * mse       -- one scalar: one backward trains everything
      opt:zero_grad()
      loss:backward()
      opt:step()
      ce_sum, mse_sum, batches = ce_sum + ce:item(), mse_sum + mse:item(), batches + 1
   end
   curves.class_train[epoch], curves.ink_train[epoch] = ce_sum / batches, mse_sum / batches
   curves.class_val[epoch], curves.ink_val[epoch] = validate(val_set)
   print(('epoch %d/%d  class loss %.4f (validation %.4f)  intensity loss %.4f (validation %.4f)'):format(
      epoch, opts.epochs, curves.class_train[epoch], curves.class_val[epoch], curves.ink_train[epoch],
      curves.ink_val[epoch]))
end

local result = classify.evaluate(model, test)
print(('test accuracy %.4f'):format(result.accuracy))
-- intensity error in the image's own units (mean pixel value in [0, 1])
model:eval()
local predicted = fnn.no_grad(function() local _, y = model(test.inputs); return y end) * ink_std + ink_mean
local truth = ink(test.inputs)
local rmse = ((predicted - truth) ^ 2):mean():sqrt():item()
local baseline = ((truth - ink_mean) ^ 2):mean():sqrt():item()
print(('intensity RMSE %.4f (always guessing the training mean: %.4f)'):format(rmse, baseline))

pictures.wrote(plot.line{path = pictures.path(opts, 'multi_task_loss.png'), title = 'multi-task losses',
   xlabel = 'epoch', ylabel = 'loss', series = {
      {name = 'class (train)', y = curves.class_train}, {name = 'class (validation)', y = curves.class_val},
      {name = 'intensity (train)', y = curves.ink_train}, {name = 'intensity (validation)', y = curves.ink_val}}})
pictures.wrote(plot.scatter{path = pictures.path(opts, 'multi_task_intensity.png'),
   title = 'ink intensity on test images', xlabel = 'true mean pixel value', ylabel = 'predicted',
   series = {{name = 'test image', x = truth, y = predicted}}})
pictures.confusion(pictures.path(opts, 'multi_task_confusion.png'), result.confusion, test.classes,
                   {title = 'class head: confusion matrix'})
