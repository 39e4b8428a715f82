-- data.ImageFolder and data.transforms (core/io/transforms.c): class order and ids, batches from
-- DataLoader, bad files skipped and counted, transforms against hand-computed values, and the
-- same seed giving the same augmented batches.
local fnn = require 'fastnn'
local process = require 'spec.process'
local data, image = fnn.data, fnn.image
local T = data.transforms

local dir = process.tmpdir()
teardown(function() os.execute('rm -rf ' .. process.quote(dir)) end)

local function flat(t) return t:to_flat() end   -- the values, row-major

local function near(expected, got, tol)
   assert.equals(#expected, #got)
   for i = 1, #expected do
      if math.abs(expected[i] - got[i]) > tol then
         error(('element %d: expected %.7g, got %.7g'):format(i, expected[i], got[i]), 2)
      end
   end
end

local function grid(c, h, w) return fnn.arange(0, c * h * w):float():reshape(c, h, w) end

-- root/zebra (2 PNG), root/Apple (1 JPEG), root/mango (1 PNG, 1 text file), root/empty (nothing)
local root = dir .. '/pics'
os.execute('mkdir -p ' .. process.quote(root) .. '/zebra ' .. process.quote(root) .. '/Apple '
           .. process.quote(root) .. '/mango ' .. process.quote(root) .. '/empty')
image.save(root .. '/zebra/b.png', fnn.full({3, 6, 8}, 0.2))
image.save(root .. '/zebra/a.png', fnn.full({3, 6, 8}, 0.4))
image.save(root .. '/Apple/x.JPG', fnn.full({3, 5, 5}, 0.6))
image.save(root .. '/mango/m.png', fnn.full({1, 7, 9}, 0.8))
process.write_file(root .. '/mango/notes.txt', 'not a picture')

describe('data.ImageFolder', function()
   it('takes the sub-folders sorted by name as classes with 1-based ids, files in name order', function()
      local ds = data.ImageFolder(root)
      assert.same({'Apple', 'empty', 'mango', 'zebra'}, ds.classes)
      assert.equals(4, ds:len())
      assert.same({1, 3, 4, 4}, ds.targets)
      assert.same({root .. '/Apple/x.JPG', root .. '/mango/m.png', root .. '/zebra/a.png', root .. '/zebra/b.png'},
                  ds.files)
      local x, y = ds:get(3)
      assert.same({3, 6, 8}, x:shape())
      assert.equals(4, y)
      near({0.4}, {flat(x)[1]}, 1 / 510)
      assert.equals(0, ds.skipped)
   end)

   it('reads only the extensions asked for', function()
      local ds = data.ImageFolder(root, {extensions = {'.png'}})
      assert.equals(3, ds:len())
      assert.same({3, 4, 4}, ds.targets)
   end)

   it('batches [N, C, H, W] with DataLoader, labels the class ids', function()
      local ds = data.ImageFolder(root, {transform = T.Compose{T.Resize{4, 4}, T.Grayscale()}})
      local loader = data.DataLoader(ds, 3)
      local batches = {}
      for b in loader:iter() do batches[#batches + 1] = b end
      assert.equals(2, #batches)
      assert.same({3, 1, 4, 4}, batches[1].inputs:shape())
      assert.same({1, 3, 4}, batches[1]:labels():to_table())
      assert.same({1, 1, 4, 4}, batches[2].inputs:shape())
      assert.same({4}, batches[2]:labels():to_table())
      near({0.8}, {flat(batches[1].inputs)[17]}, 1 / 255)   -- the mango picture, constant 0.8
   end)

   it('refuses a batch of pictures of different sizes, naming the files', function()
      local loader = data.DataLoader(data.ImageFolder(root), 4)
      local ok, err = pcall(function() for _ in loader:iter() do end end)
      assert.is_false(ok)
      assert.matches('ImageFolder: .*m%.png is %[1,7,9%] after the transform, .*x%.JPG is %[3,5,5%]', err)
   end)

   it("raises naming a bad file, or with on_error = 'skip' leaves it out and counts it", function()
      local bad = dir .. '/bad'
      os.execute('mkdir -p ' .. process.quote(bad) .. '/one ' .. process.quote(bad) .. '/two')
      image.save(bad .. '/one/good.png', fnn.full({3, 4, 4}, 0.5))
      process.write_file(bad .. '/one/empty.png', '')
      process.write_file(bad .. '/two/text.jpg', 'hello')
      image.save(bad .. '/two/good.jpg', fnn.full({3, 4, 4}, 0.5))
      local ds = data.ImageFolder(bad)
      assert.equals(4, ds:len())
      local ok, err = pcall(function() for _ in data.DataLoader(ds, 4):iter() do end end)
      assert.is_false(ok)
      assert.matches('image%.load: .*/one/empty%.png is empty', err)
      local skip = data.ImageFolder(bad, {on_error = 'skip'})
      assert.equals(2, skip:len())
      assert.equals(2, skip.skipped)
      assert.same({1, 2}, skip.targets)
      assert.matches('empty%.png', skip.skipped_files[1].path)
      assert.matches('neither a PNG nor a JPEG', skip.skipped_files[2].error)
      local n = 0
      for b in data.DataLoader(skip, 4):iter() do n = n + b.size end
      assert.equals(2, n)
   end)

   it('refuses a bad root or options', function()
      assert.has_error(function() data.ImageFolder(dir .. '/nowhere') end)
      assert.has_error(function() data.ImageFolder(root, {on_error = 'ignore'}) end)
      assert.has_error(function() data.ImageFolder(root, {transform = function() end}) end)
   end)
end)

describe('data.transforms', function()
   it('Resize: the shorter side, or {h, w}', function()
      assert.same({1, 2, 4}, T.Resize(2)(fnn.zeros(1, 4, 8)):shape())
      assert.same({3, 6, 3}, T.Resize(3)(fnn.zeros(3, 10, 5)):shape())
      near({0, 0.25, 0.75, 1}, flat(T.Resize{1, 4}(fnn.tensor({0, 1}, {1, 1, 2}))), 1e-6)
   end)

   it('CenterCrop: the centre box, corner rounded half to even', function()
      assert.same({5, 6, 9, 10}, flat(T.CenterCrop(2)(grid(1, 4, 4))))
      assert.same({5, 6}, flat(T.CenterCrop{1, 2}(grid(1, 3, 4))))
      -- 6 - 1 = 5: the corner (2.5) rounds to 2, as Python's round
      assert.same({14}, flat(T.CenterCrop(1)(grid(1, 6, 6))))
      assert.has_error(function() T.CenterCrop(5)(grid(1, 4, 4)) end)
      local ok, err = pcall(T.CenterCrop(1), fnn.zeros(4))
      assert.is_false(ok)
      assert.matches('transforms: expected a picture %[C,H,W%] or %[H,W%], got %[4%]', err)
   end)

   it('RandomResizedCrop: the whole picture at scale 1, a sub-block at a quarter', function()
      local g = grid(1, 4, 4)
      local whole = T.RandomResizedCrop(4, {scale = {1, 1}, ratio = {1, 1}})
      assert.same(flat(g), flat(whole(g, 1)))
      local quarter = T.RandomResizedCrop(2, {scale = {0.25, 0.25}, ratio = {1, 1}})
      local seen = {}
      for seed = 1, 40 do
         local v = flat(quarter(g, seed))
         -- a 2x2 block of the grid: top-left t, then t + 1, t + 4, t + 5
         assert.same({v[1], v[1] + 1, v[1] + 4, v[1] + 5}, v)
         assert.is_true(v[1] % 4 <= 2 and v[1] < 12)
         seen[v[1]] = true
      end
      local n = 0
      for _ in pairs(seen) do n = n + 1 end
      assert.is_true(n >= 5, 'the boxes vary with the seed')
      assert.same(flat(quarter(g, 7)), flat(quarter(g, 7)))
      assert.same({3, 5, 6}, T.RandomResizedCrop{5, 6}(fnn.rand(3, 20, 30)):shape())
      assert.has_error(function() T.RandomResizedCrop(4, {scale = {0.5, 2}}) end)
   end)

   it('RandomHorizontalFlip: p = 1 always, p = 0 never, p = 0.5 some', function()
      local x = fnn.tensor({1, 2, 3, 4, 5, 6}, {1, 2, 3})
      assert.same({3, 2, 1, 6, 5, 4}, flat(T.RandomHorizontalFlip(1)(x)))
      assert.same({1, 2, 3, 4, 5, 6}, flat(T.RandomHorizontalFlip(0)(x)))
      local flips = 0
      for seed = 1, 100 do if flat(T.RandomHorizontalFlip()(x, seed))[1] == 3 then flips = flips + 1 end end
      assert.is_true(flips > 30 and flips < 70, flips .. ' flips of 100')
   end)

   it('ColorJitter: brightness scales every value by one factor; nothing asked, nothing changed', function()
      local x = fnn.tensor({0.1, 0.2, 0.3, 0.4, 0.2, 0.2, 0.1, 0.1, 0.3, 0.3, 0.3, 0.3}, {3, 2, 2})
      assert.same(flat(x), flat(T.ColorJitter{}(x)))
      local b = flat(T.ColorJitter{brightness = 0.5}(x, 3))
      local xs = flat(x)
      local f = b[1] / xs[1]
      assert.is_true(f >= 0.5 and f <= 1.5)
      near((function() local e = {} for i, v in ipairs(xs) do e[i] = v * f end return e end)(), b, 1e-6)
      -- saturation 0..2 on a grey picture leaves it grey (the blend is with its own grey)
      local grey = fnn.full({3, 2, 2}, 0.4)
      near(flat(grey), flat(T.ColorJitter{saturation = 1}(grey, 5)), 1e-6)
      -- contrast keeps the grey mean: the blend is f x + (1 - f) mean
      local c = flat(T.ColorJitter{contrast = 0.9}(fnn.tensor({0.2, 0.4, 0.6, 0.8}, {1, 2, 2}), 11))
      near({0.5}, {(c[1] + c[2] + c[3] + c[4]) / 4}, 1e-6)
      near({c[2] - c[1]}, {c[4] - c[3]}, 1e-6)
   end)

   it('Normalize: (x - mean) / std per channel, or one value for all', function()
      local x = fnn.tensor({0, 1, 0.5, 0.5, 1, 0}, {3, 1, 2})
      near({-1, 1, 0.5, 0.5, 0.5, 0}, flat(T.Normalize({0.5, 0.25, 0}, {0.5, 0.5, 2})(x)), 1e-6)
      near({-2, 2, 0, 0, 2, -2}, flat(T.Normalize(0.5, 0.25)(x)), 1e-6)
      assert.has_error(function() T.Normalize({0.5, 0.5}, {1, 1})(x) end)
      assert.has_error(function() T.Normalize({0.5}, {0}) end)
   end)

   it('Grayscale and Compose run in the order given', function()
      local x = fnn.tensor({1, 0, 0, 1, 0, 0}, {3, 1, 2})
      near({0.299, 0.587}, flat(T.Grayscale()(x)), 1e-6)
      local tf = T.Compose{T.Grayscale(), T.Normalize(0.299, 0.5), T.RandomHorizontalFlip(1)}
      near({(0.587 - 0.299) / 0.5, 0}, flat(tf(x)), 1e-6)
   end)

   it('gives the same augmented batches for the same loader seed', function()
      local tf = T.Compose{T.RandomResizedCrop(4), T.RandomHorizontalFlip(), T.ColorJitter{brightness = 0.3}, T.Grayscale()}
      local ds = data.ImageFolder(root, {transform = tf})
      local function pass(seed)
         local out = {}
         for b in data.DataLoader(ds, 2, {shuffle = true, seed = seed}):iter() do
            out[#out + 1] = {flat(b.inputs), b:labels():to_table()}
         end
         return out
      end
      local a, b, c = pass(5), pass(5), pass(6)
      assert.same(a, b)
      assert.are_not.same(a, c)
   end)

   it('gives the same batches from the prefetch thread as on the main thread', function()
      local tf = T.Compose{T.RandomResizedCrop(4), T.RandomHorizontalFlip(), T.ColorJitter{contrast = 0.5}, T.Grayscale()}
      local ds = data.ImageFolder(root, {transform = tf})
      local function pass(depth, workers)
         local loader = data.DataLoader(ds, 3, {shuffle = true, seed = 9}):prefetch(depth, {workers = workers})
         assert.equals(depth > 0, loader:is_prefetching())
         local out = {}
         for _ = 1, 2 do   -- two passes: the stream carries on from one to the next
            for b in loader:iter() do out[#out + 1] = {flat(b.inputs), b:labels():to_table()} end
         end
         return out
      end
      local main = pass(0)
      assert.equals(4, #main)
      assert.same(main, pass(2))
      assert.same(main, pass(1))
      assert.same(main, pass(2, 2))   -- two workers: each batch from its own seed, whoever makes it
      assert.same(main, pass(4, 3))
   end)

   it('reports a bad file from the prefetch thread, naming it', function()
      local bad = dir .. '/bad2'
      os.execute('mkdir -p ' .. process.quote(bad) .. '/c')
      image.save(bad .. '/c/a.png', fnn.full({3, 4, 4}, 0.5))
      process.write_file(bad .. '/c/b.png', 'text')
      for _, workers in ipairs{1, 2} do
         local loader = data.DataLoader(data.ImageFolder(bad), 1):prefetch(2, {workers = workers})
         local ok, err = pcall(function() for _ in loader:iter() do end end)
         assert.is_false(ok)
         assert.matches('image%.load: .*/c/b%.png is neither a PNG nor a JPEG', err)
      end
   end)
end)
