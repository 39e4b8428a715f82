-- image_folder: training from a folder of picture files, the way a first real project starts.
-- Writes a small folder dataset from Fashion-MNIST as PNG files (root/train/<class>/<n>.png and
-- root/test/...), or takes --root for your own (the same layout: train/ and test/, one sub-folder
-- per class, PNG or JPEG), then trains a small CNN on data.ImageFolder with augmentation
-- (RandomResizedCrop, RandomHorizontalFlip, ColorJitter, Normalize) decoded and transformed in C
-- on the loader's prefetch threads (--workers of them).
--   fastnn-lua examples/image_folder.lua                 # 500 pictures a class, 5 epochs
--   fastnn-lua examples/image_folder.lua --root ~/photos --size 64
--   fastnn-lua examples/image_folder.lua --quick         # 100 pictures a class, 2 epochs (CI)
-- Prints one line per epoch and `test accuracy 0.xxxx`; writes under --out (default ./fastnn-out)
-- image_folder_samples.png (an augmented training batch) and image_folder_loss.png.
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim, data = fnn.nn, fnn.optim, fnn.data
local plot = require 'fastnn.plot'
local cli, pictures, clock = require 'common.cli', require 'common.pictures', require 'common.clock'
local T = data.transforms

local opts = cli.parse{
   name = 'image_folder', about = 'A CNN trained from a folder of PNG/JPEG files with augmentation.',
   options = {
      {'root', '', 'a folder with train/ and test/, one sub-folder per class (default: written from Fashion-MNIST)', 'DIR'},
      {'per_class', 500, 'pictures per class written from Fashion-MNIST (training; a fifth as many for test)'},
      {'size', 28, 'the side the pictures are cropped and resized to'},
      {'epochs', 5, 'passes over the training set'},
      {'batch_size', 64, 'pictures per step'},
      {'lr', 2e-3, 'Adam learning rate'},
      {'workers', 2, 'C threads that decode and augment the next batches (DataLoader:prefetch)'},
   },
   quick = {per_class = 100, epochs = 3},
}
fnn.manual_seed(opts.seed)
local t0 = clock()

local function quote(s) return "'" .. s:gsub("'", [['\'']]) .. "'" end

-- root/<split>/<class>/<n>.png from the first `per_class` items of each Fashion-MNIST class
local function write_folder(root, split, per_class)
   local ds = data.FashionMnist.load(split)
   local count, written = {}, 0
   for c = 1, 10 do
      count[c] = 0
      os.execute('mkdir -p ' .. quote(('%s/%s/%02d'):format(root, split, c)))
   end
   local labels = ds.targets:to_table()
   for i = 1, ds:len() do
      local c = labels[i]
      if count[c] < per_class then
         count[c] = count[c] + 1
         fnn.image.save(('%s/%s/%02d/%d.png'):format(root, split, c, count[c]), ds.inputs[i])
         written = written + 1
         if written == 10 * per_class then break end
      end
   end
   return written
end

local root = opts.root
if root == '' then
   root = pictures.path(opts, 'image_folder_data')
   local n = write_folder(root, 'train', opts.per_class)
   local m = write_folder(root, 'test', math.max(1, math.floor(opts.per_class / 5)))
   print(('made %d training and %d test pictures (Fashion-MNIST) as PNG files under %s'):format(n, m, root))
end

local S = opts.size
local train_tf = T.Compose{T.Grayscale(), T.RandomResizedCrop(S, {scale = {0.7, 1}}), T.RandomHorizontalFlip(),
                           T.ColorJitter{brightness = 0.2, contrast = 0.2}, T.Normalize(0.5, 0.5)}
local test_tf = T.Compose{T.Grayscale(), T.Resize{S, S}, T.Normalize(0.5, 0.5)}
local train = data.ImageFolder(root .. '/train', {transform = train_tf, on_error = 'skip'})
local test = data.ImageFolder(root .. '/test', {transform = test_tf, on_error = 'skip'})
local K = #train.classes
print(('%d classes, %d training and %d test pictures (%d unreadable skipped)'):format(
   K, train:len(), test:len(), train.skipped + test.skipped))

local model = nn.Sequential(
   nn.Conv2d(1, 16, 3, {padding = 1}), nn.ReLU(), nn.MaxPool2d(2),
   nn.Conv2d(16, 32, 3, {padding = 1}), nn.ReLU(), nn.MaxPool2d(2),
   nn.Flatten(), nn.Linear(32 * math.floor(S / 4) ^ 2, K))
local opt = optim.Adam(model:parameters(), opts.lr)
local loader = data.DataLoader(train, opts.batch_size, {shuffle = true, seed = opts.seed, prefetch = 4,
                                                       workers = opts.workers})

local losses = {}
for epoch = 1, opts.epochs do
   local e0, total, batches = clock(), 0, 0
   for batch in loader:iter() do
      if epoch == 1 and batches == 0 then
         local path = pictures.path(opts, 'image_folder_samples.png')
         plot.image_grid{path = path, images = batch.inputs, range = {-1, 1}, scale = 2}
         pictures.wrote(path)
      end
      local loss = nn.cross_entropy(model(batch.inputs), batch:labels())
      opt:zero_grad()
      loss:backward()
      opt:step()
      total, batches = total + loss:item(), batches + 1
   end
   losses[epoch] = total / batches
   print(('epoch %d/%d  train loss %.4f  (%.1fs)'):format(epoch, opts.epochs, losses[epoch], clock() - e0))
end

local correct = 0
model:eval()
fnn.no_grad(function()
   for batch in data.DataLoader(test, 256, {prefetch = 4, workers = opts.workers}):iter() do
      local predicted, truth = model(batch.inputs):argmax(2):to_table(), batch:labels():to_table()
      for i = 1, #truth do if predicted[i] == truth[i] then correct = correct + 1 end end
   end
end)
print(('test accuracy %.4f (%d of %d; chance %.2f)'):format(correct / test:len(), correct, test:len(), 1 / K))
pictures.loss_curves(pictures.path(opts, 'image_folder_loss.png'), {train = losses})
print(('done in %.1fs'):format(clock() - t0))
