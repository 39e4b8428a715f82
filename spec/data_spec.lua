-- data: TensorDataset, DataLoader (order, shuffling, drop_last, seeds, the three
-- dataset forms) and FashionMnist from the Debian package dataset-fashion-mnist.
local fnn = require 'fastnn'
local data = fnn.data

-- N items: input row i is {i, 10 i}, target i is i (so a batch shows which items it holds)
local function numbered(n)
   local xs, ys = {}, {}
   for i = 1, n do xs[#xs + 1] = i; xs[#xs + 1] = 10 * i; ys[i] = i end
   return data.TensorDataset(fnn.tensor(xs, {n, 2}), fnn.tensor(ys))
end

-- every batch's item ids (from targets) for one pass, checking inputs stay aligned
local function pass(loader)
   local seen, sizes = {}, {}
   for batch, index in loader:iter() do
      assert.equals(#sizes + 1, index)
      local ids = batch:labels()
      local x = batch.inputs:to_table()
      assert.equals(#ids, #x)
      assert.equals(batch.size, #ids)
      for k = 1, #ids do
         local id = ids[k]
         assert.same({id, 10 * id}, x[k])
         seen[#seen + 1] = id
      end
      sizes[#sizes + 1] = #ids
   end
   return seen, sizes
end

local function is_permutation(ids, n)
   if #ids ~= n then return false end
   local count = {}
   for _, id in ipairs(ids) do
      if id < 1 or id > n or count[id] then return false end
      count[id] = true
   end
   return true
end

describe('data.TensorDataset', function()
   it('has len() and get(i)', function()
      local ds = numbered(5)
      assert.equals(5, ds:len())
      local x, y = ds:get(3)
      assert.same({3, 30}, x:to_flat())
      assert.equals(3, y)
      assert.has_error(function() ds:get(6) end, 'TensorDataset:get: index 6 outside 1..5')
   end)
   it('refuses inputs and targets of different lengths', function()
      assert.has_error(function() data.TensorDataset(fnn.zeros(4, 2), fnn.zeros(3)) end,
                       'TensorDataset: inputs [4,2] and targets [3] differ in dim 1')
   end)
end)

describe('data.DataLoader', function()
   it('without shuffle yields items in order, the last batch short', function()
      local loader = data.DataLoader(numbered(10), 3)
      local seen, sizes = pass(loader)
      assert.same({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, seen)
      assert.same({3, 3, 3, 1}, sizes)
      assert.equals(4, loader:len())
   end)

   it('drop_last drops the short batch; len() agrees', function()
      local loader = data.DataLoader(numbered(10), 3):drop_last(true)
      local seen, sizes = pass(loader)
      assert.same({3, 3, 3}, sizes)
      assert.same({1, 2, 3, 4, 5, 6, 7, 8, 9}, seen)
      assert.equals(3, loader:len())
      assert.equals(2, data.DataLoader(numbered(10), 5):drop_last(true):len())
   end)

   it('with shuffle covers every index exactly once per pass, in a new order each pass', function()
      local loader = data.DataLoader(numbered(100), 7):shuffle(true)
      local first, sizes = pass(loader)
      assert.is_true(is_permutation(first, 100))
      assert.equals(loader:len(), #sizes)
      assert.equals(2, sizes[#sizes])                  -- 100 = 14 * 7 + 2
      local second = pass(loader)
      assert.is_true(is_permutation(second, 100))
      assert.are_not.same(first, second)
      local ordered = {}
      for i = 1, 100 do ordered[i] = i end
      assert.are_not.same(ordered, first)
   end)

   it('with shuffle and drop_last covers full batches of distinct items', function()
      local seen, sizes = pass(data.DataLoader(numbered(50), 8):shuffle(true):drop_last(true))
      assert.same({8, 8, 8, 8, 8, 8}, sizes)
      local distinct = {}
      for _, id in ipairs(seen) do
         assert.is_nil(distinct[id])
         distinct[id] = true
      end
   end)

   it('seed(n) makes the sequence of passes reproducible; another seed differs', function()
      local function two_passes(seed)
         local loader = data.DataLoader(numbered(60), 16):shuffle(true):seed(seed)
         local a = pass(loader)
         local b = pass(loader)
         return a, b
      end
      local a1, b1 = two_passes(7)
      local a2, b2 = two_passes(7)
      assert.same(a1, a2)
      assert.same(b1, b2)
      assert.are_not.same(a1, b1)
      local c1 = two_passes(8)
      assert.are_not.same(a1, c1)
   end)

   it('without seed, fnn.manual_seed makes the shuffle reproducible', function()
      local loader = data.DataLoader(numbered(40), 8):shuffle(true)
      fnn.manual_seed(11)
      local a = pass(loader)
      fnn.manual_seed(11)
      local b = pass(loader)
      assert.same(a, b)
   end)

   it('batch:labels() is an int64 tensor of 1-based ids that indexes like a Lua array', function()
      local ds = data.TensorDataset(fnn.zeros(4, 3), {3, 1, 10, 2})
      local batch = data.DataLoader(ds, 4):iter()()
      local labels = batch:labels()
      assert.equals('int64', labels:dtype())
      assert.same({3, 1, 10, 2}, labels:to_table())
      assert.equals(4, #labels)
      assert.equals(10, labels[3])
   end)

   it('batch:labels() is exact past 2^24 and refuses targets that are not whole numbers', function()
      local big = 2^24 + 3
      local ds = data.TensorDataset(fnn.zeros(2, 1), fnn.long{big, big + 2})
      local labels = data.DataLoader(ds, 2):iter()():labels()
      assert.same({big, big + 2}, labels:to_table())
      local bad = data.TensorDataset(fnn.zeros(2, 1), {1, 2.5})
      local ok, err = pcall(function() return data.DataLoader(bad, 2):iter()():labels() end)
      assert.is_false(ok)
      assert.matches('element 2 of %[2%] is 2.5, not a whole number', err)
   end)

   it('batches a get(i) dataset of tensors and numbers', function()
      local ds = {len = function() return 5 end,
                  get = function(_, i) return fnn.tensor{i, 10 * i}, i end}
      local seen, sizes = pass(data.DataLoader(ds, 2):shuffle(true))
      assert.is_true(is_permutation(seen, 5))
      assert.same({2, 2, 1}, sizes)
      local tbl = {len = function() return 3 end, get = function(_, i) return {i, 10 * i}, {i} end}
      local batch = data.DataLoader(tbl, 3):iter()()
      assert.same({{1, 10}, {2, 20}, {3, 30}}, batch.inputs:to_table())
      assert.same({3, 1}, batch.targets:shape())
   end)

   it('batches a write(i, input_slot, target_slot) dataset into one buffer', function()
      local ds = {input_shape = {2}, target_shape = {},
                  len = function() return 7 end,
                  write = function(_, i, x, y) x[0], x[1] = i, 10 * i; y[0] = i end}
      local seen, sizes = pass(data.DataLoader(ds, 3):shuffle(true):seed(1))
      assert.is_true(is_permutation(seen, 7))
      assert.same({3, 3, 1}, sizes)
   end)

   it('refuses a table that is not a dataset and a bad batch size', function()
      assert.has_error(function() data.DataLoader({}, 4) end)
      assert.has_error(function() data.DataLoader(numbered(3), 0) end,
                       'DataLoader: batch size is 0, expected a positive integer')
   end)
end)

describe('data.FashionMnist', function()
   local dir = data.FashionMnist.SYSTEM_DIR

   it('finds the Debian package dataset-fashion-mnist', function()
      for _, f in ipairs{'train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz',
                         't10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz'} do
         local h = io.open(dir .. '/' .. f, 'rb')
         assert(h, dir .. '/' .. f .. ' is missing: apt-get install dataset-fashion-mnist')
         h:close()
      end
   end)

   local function check_split(split, n)
      local ds = data.FashionMnist.load(split)
      assert.equals(n, ds:len())
      assert.same({n, 1, 28, 28}, ds.inputs:shape())
      assert.same({n}, ds.targets:shape())
      local lo, hi = ds.inputs:min():item(), ds.inputs:max():item()
      assert.is_true(lo >= 0 and lo < 0.01, 'min ' .. lo)
      assert.is_true(hi <= 1 and hi > 0.99, 'max ' .. hi)
      -- labels are integers 1..10, every class present (Fashion-MNIST is balanced)
      local counts = {}
      local labels = data.DataLoader(ds, n):iter()():labels()
      assert.equals('int64', labels:dtype())
      assert.equals('int64', ds.targets:dtype())
      for _, id in ipairs(labels:to_table()) do
         assert.is_true(id >= 1 and id <= 10 and id == math.floor(id))
         counts[id] = (counts[id] or 0) + 1
      end
      for c = 1, 10 do assert.equals(n / 10, counts[c]) end
      local y = ds.targets:to_flat()
      for i = 1, 100 do assert.equals(math.floor(y[i]), y[i]) end
      assert.equals(10, #ds.classes)
      return ds
   end

   it('loads train: [60000, 1, 28, 28] in [0, 1], labels 1..10', function()
      local ds = check_split('train', 60000)
      local x, y = ds:get(1)
      assert.same({1, 28, 28}, x:shape())
      assert.equals(10, y)   -- the first training image is an ankle boot (label byte 9)
   end)

   it('loads test: [10000, 1, 28, 28]', function()
      check_split('test', 10000)
   end)

   -- two 28x28 test images (all 0 and all 255) and labels {3, 0}, as plain IDX files under root
   local function tiny_data_dir()
      local root = os.tmpname()
      os.remove(root)
      assert(os.execute(('mkdir -p %q'):format(root .. '/fashion-mnist')))
      local function be32(v)
         return string.char(math.floor(v / 16777216) % 256, math.floor(v / 65536) % 256,
                            math.floor(v / 256) % 256, v % 256)
      end
      local f = assert(io.open(root .. '/fashion-mnist/t10k-images-idx3-ubyte', 'wb'))
      f:write(be32(0x803), be32(2), be32(28), be32(28), string.rep('\0', 784), string.rep('\255', 784))
      f:close()
      f = assert(io.open(root .. '/fashion-mnist/t10k-labels-idx1-ubyte', 'wb'))
      f:write(be32(0x801), be32(2), string.char(3, 0))
      f:close()
      return root
   end
   local function child(root, system_dir)
      local code = ('package.path = %q; local data = require("fastnn").data; '):format(package.path)
                .. (system_dir and ('data.FashionMnist.SYSTEM_DIR = %q; '):format(system_dir) or '')
                .. "local d = data.FashionMnist.load('test'); "
                .. "io.write(d:len(), ' ', d.inputs:max():item(), ' ', table.concat(d.targets:narrow(1, 1, 2):to_table(), ','))"
      local p = io.popen(('FASTNN_DATA=%q luajit -e %q 2>&1'):format(root, code))
      local out = p:read('*a')
      p:close()
      return out
   end

   it('looks in the Debian package first, then in the data directory (plain IDX files accepted)', function()
      local root = tiny_data_dir()
      local from_package = child(root, nil)
      local from_data_dir = child(root, '/nonexistent/fashion-mnist')
      os.execute(('rm -rf %q'):format(root))
      assert.matches('^10000 1 ', from_package)
      assert.equals('2 1 4,1', from_data_dir)
   end)

   it('names the places searched, the Debian package and the mirrors when nothing has the files', function()
      local saved = {data.FashionMnist.SYSTEM_DIR, data.FashionMnist.mirrors}
      local dir = os.tmpname()
      os.remove(dir)
      data.FashionMnist.SYSTEM_DIR = '/nonexistent/fashion-mnist'
      data.FashionMnist.set_mirrors{'http://127.0.0.1:1/'}   -- loopback, nothing listens: refused at once
      data.set_dir(dir)
      local ds, err = data.FashionMnist.try_load('train', {progress = false, connect_timeout = 1, timeout = 2})
      data.FashionMnist.SYSTEM_DIR, data.FashionMnist.mirrors = saved[1], saved[2]
      data.set_dir(nil)
      os.execute(('rm -rf %q'):format(dir))
      assert.is_nil(ds)
      assert.matches('/nonexistent/fashion%-mnist', err)
      assert.matches('dataset%-fashion%-mnist', err)
      assert.matches('train%-images%-idx3%-ubyte%.gz', err)
      assert.matches('http://127%.0%.0%.1:1/train%-images%-idx3%-ubyte%.gz', err)
      assert.has_error(function() data.FashionMnist.load('validation') end,
                       "FashionMnist.load: split is 'validation', expected 'train' or 'test'")
   end)
end)
