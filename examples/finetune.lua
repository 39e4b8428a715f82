-- finetune: transfer learning in three moves. (1) Pretrain a backbone (an MLP 784-256-128) with a
-- head for the first five Fashion-MNIST classes (T-shirt/top, Trouser, Pullover, Dress, Coat).
-- (2) Freeze the backbone (module:freeze(): its parameters hand out detached tensors, so no
-- gradient reaches them). (3) Train a new head, and only the head's parameters, on the other five
-- classes (Sandal, Shirt, Sneaker, Bag, Ankle boot) on top of the frozen features. The backbone is
-- saved before and after (3) and the two files are compared byte for byte.
--   fastnn-lua examples/finetune.lua            # 3 + 3 epochs on all images of each half
--   fastnn-lua examples/finetune.lua --quick    # 6000 images, 2 + 2 epochs (CI)
-- Prints the losses per epoch, the pretrained and the fine-tuned test accuracy (`test accuracy
-- 0.xxxx` for the new head) and `backbone weights bit-identical after head training: yes`.
-- Writes under --out (default ./fastnn-out): finetune_loss.png (both phases' training loss per
-- epoch) and finetune_confusion.png (the new head on its five test classes).
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim, data, plot = fnn.nn, fnn.optim, fnn.data, require 'fastnn.plot'
local cli, pictures, datasets = require 'common.cli', require 'common.pictures', require 'common.datasets'
local classify = require 'common.classify'

local opts = cli.parse{
   name = 'finetune', about = 'Pretrain on five classes, freeze the backbone, train a new head on the other five.',
   options = {
      {'pretrain_epochs', 3, 'epochs of phase 1 (backbone + first head)'},
      {'head_epochs', 3, 'epochs of phase 3 (new head only)'},
      {'batch_size', 128, 'images per step'},
      {'lr', 1e-3, 'Adam learning rate of phase 1'},
      {'head_lr', 1e-2, 'Adam learning rate of phase 3 (a single layer takes a larger step)'},
      {'train_size', 0, 'use the first N training images (0: all)'},
      {'test_size', 0, 'score on the first N test images (0: all)'},
   },
   quick = {pretrain_epochs = 2, head_epochs = 2, train_size = 6000, test_size = 1000},
}
fnn.manual_seed(opts.seed)

local train, test = datasets.load('fashion')
if opts.train_size > 0 then train = datasets.head(train, opts.train_size) end
if opts.test_size > 0 then test = datasets.head(test, opts.test_size) end
local old_classes, new_classes = {1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}
local old_train, old_test = datasets.only(train, old_classes), datasets.only(test, old_classes)
local new_train, new_test = datasets.only(train, new_classes), datasets.only(test, new_classes)

-- epochs of cross-entropy training of model, updating only params; the mean loss of each epoch
local function fit(model, params, lr, ds, epochs, label)
   local opt = optim.Adam(params, lr)
   local loader = data.DataLoader(ds, opts.batch_size):shuffle(true)
   local losses = {}
   model:train()
   for epoch = 1, epochs do
      local total, batches = 0, 0
      for batch in loader:iter() do
         local loss = nn.cross_entropy(model(batch.inputs), batch.targets)
         opt:zero_grad()
         loss:backward()
         opt:step()
         total, batches = total + loss:item(), batches + 1
      end
      losses[epoch] = total / batches
      print(('%s epoch %d/%d  train loss %.4f'):format(label, epoch, epochs, losses[epoch]))
   end
   return losses
end

-- (1) pretrain backbone + head on the first five classes
local backbone = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU())
local old_model = nn.Sequential(backbone, nn.Linear(128, 5))
print(('phase 1: pretrain on %s (%d images)'):format(table.concat(old_train.classes, ', '), old_train:len()))
local pretrain_losses = fit(old_model, old_model:parameters(), opts.lr, old_train, opts.pretrain_epochs, 'pretrain')
print(('pretrained: test accuracy on its own classes %.4f'):format(classify.evaluate(old_model, old_test, {classes = 5}).accuracy))

-- (2) freeze the backbone and keep a copy of it to compare with later
backbone:freeze()
local before, after = pictures.path(opts, 'finetune_backbone_before.fdl'), pictures.path(opts, 'finetune_backbone_after.fdl')
fnn.save(backbone, before)

-- (3) a new head on the frozen features; the optimizer sees only the head's parameters
local head = nn.Linear(128, 5)
local new_model = nn.Sequential(backbone, head)
print(('phase 3: new head on %s (%d images); %d of %d parameters trainable'):format(
   table.concat(new_train.classes, ', '), new_train:len(), new_model:num_parameters{trainable = true},
   new_model:num_parameters()))
local head_losses = fit(new_model, head:parameters(), opts.head_lr, new_train, opts.head_epochs, 'head')

fnn.save(backbone, after)
local function read(path)
   local f = assert(io.open(path, 'rb'))
   local bytes = f:read('*a')
   f:close()
   return bytes
end
local identical = read(before) == read(after)
print(('backbone weights bit-identical after head training: %s (%d weights compared)'):format(
   identical and 'yes' or 'NO', backbone:num_parameters()))
os.remove(before)
os.remove(after)

local result = classify.evaluate(new_model, new_test, {classes = 5})
print(('test accuracy %.4f on the new classes (%d images)'):format(result.accuracy, new_test:len()))

local x1, x2 = {}, {}
for i = 1, #pretrain_losses do x1[i] = i end
for i = 1, #head_losses do x2[i] = #pretrain_losses + i end
pictures.wrote(plot.line{path = pictures.path(opts, 'finetune_loss.png'), title = 'fine-tuning: training loss',
                         xlabel = 'epoch', ylabel = 'cross-entropy', series = {
                            {name = 'pretrain (classes 1-5)', x = x1, y = pretrain_losses},
                            {name = 'new head (classes 6-10)', x = x2, y = head_losses}}})
pictures.confusion(pictures.path(opts, 'finetune_confusion.png'), result.confusion, new_test.classes,
                   {title = 'new head: confusion matrix'})
if not identical then os.exit(1) end
