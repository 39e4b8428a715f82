-- image_loader: pictures from disk through data.ImageFolder and DataLoader, against the same work
-- in Python (bench/reference/image_loader.py: torchvision's ImageFolder and transforms, or Pillow where
-- no torchvision matches the installed torch, with torch's DataLoader(num_workers = 2)).
--   build/fastnn-lua bench/image_loader.lua [DIR]   (N = pictures, default 1000)
-- Writes DIR (default: a temporary folder) once: N JPEGs of 256x256 RGB (Fashion-MNIST pictures
-- scaled up, tinted per class) in 10 class folders, untimed. Then, after one untimed pass, times a
-- shuffled pass of batch 32: decode + RandomResizedCrop(224) + RandomHorizontalFlip + Normalize,
--   images_per_s          prefetch(4, {workers = 2}): two C threads decode (and the main thread,
--                         when it would otherwise wait)
--   images_per_s_1worker  prefetch(2): one C thread and the main thread
--   images_per_s_main     the same on the main thread alone
-- python3 bench/reference/image_loader.py DIR prints the reference's images/s on the same files.
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn
local NAME = 'image_loader'

B.main(NAME, function()
   B.setup_threads(NAME)
   local data, image = fnn.data, fnn.image
   local T = data.transforms
   local N = tonumber(os.getenv('N') or '') or 1000
   local dir = arg[1] or io.popen('mktemp -d'):read('*l')
   local probe = io.open(dir .. '/01/1.jpg', 'rb')
   if probe then probe:close() else
      local fm = data.FashionMnist.load('test')
      local labels = fm.targets:to_table()
      for c = 1, 10 do os.execute(('mkdir -p %s/%02d'):format(dir, c)) end
      for i = 1, N do
         local c = labels[i]
         local g = image.resize(fm.inputs[i], 256, 256)
         local tint = fnn.tensor({0.5 + c / 20, 1 - c / 20, 0.75}, {3, 1, 1})
         image.save(('%s/%02d/%d.jpg'):format(dir, c, i), (g:expand(3, 256, 256) * tint):contiguous(), {quality = 90})
      end
      print(('# wrote %d JPEGs under %s'):format(N, dir))
   end
   local tf = T.Compose{T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                        T.Normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225})}
   local ds = data.ImageFolder(dir, {transform = tf})
   local function pass(depth, workers)
      local loader = data.DataLoader(ds, 32, {shuffle = true, seed = 1, prefetch = depth, workers = workers})
      local t0, n = B.now(), 0
      for batch in loader:iter() do n = n + batch.size end
      return n / (B.now() - t0)
   end
   pass(4, 2)
   local two, one, main = pass(4, 2), pass(2, 1), pass(0, 1)
   B.result(NAME, {'images_per_s', two, 'img/s'}, {'images_per_s_1worker', one, 'img/s'},
            {'images_per_s_main', main, 'img/s'})
   print('# dir ' .. dir)
end)
