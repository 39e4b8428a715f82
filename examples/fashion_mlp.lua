-- fashion_mlp: the default demo. A 784-128-10 MLP learns Fashion-MNIST in two
-- epochs (Adam, batch 128) and reports the loss per epoch and the test accuracy.
--   fastnn-lua examples/fashion_mlp.lua [epochs]
-- Needs the IDX files: the Debian package dataset-fashion-mnist, or $FASTNN_DATA/fashion-mnist.
local fnn = require 'fastnn'
local nn, optim, data = fnn.nn, fnn.optim, fnn.data

local epochs = tonumber(arg and arg[1]) or 2
fnn.manual_seed(1)

-- a monotonic wall clock (os.clock would count the CPU time of every BLAS thread)
local ffi = require 'ffi'
local clock = os.clock
if pcall(ffi.cdef, 'struct fastnn_demo_ts { int64_t sec; int64_t nsec; }; '
                   .. 'int clock_gettime(int clk, struct fastnn_demo_ts *ts);') then
   local ts = ffi.new('struct fastnn_demo_ts')
   clock = function()
      ffi.C.clock_gettime(1, ts)   -- CLOCK_MONOTONIC
      return tonumber(ts.sec) + 1e-9 * tonumber(ts.nsec)
   end
end
local t0 = clock()
local train = data.FashionMnist.load('train')
local test = data.FashionMnist.load('test')
print(('loaded %d training and %d test images in %.1fs'):format(train:len(), test:len(), clock() - t0))

local model = nn.Sequential(
   nn.Flatten(),
   nn.Linear(784, 128),
   nn.ReLU(),
   nn.Linear(128, 10))
print(model)
print(('%d parameters'):format(model:num_parameters()))

local opt = optim.Adam(model:parameters(), 1e-3)
local loader = data.DataLoader(train, 128):shuffle(true)

-- the share of test images whose largest logit is the right class
local function accuracy(ds)
   return fnn.no_grad(function()
      local correct = 0
      for batch in data.DataLoader(ds, 1000):iter() do
         local predicted = model(batch.inputs):argmax(2)
         correct = correct + predicted:eq(batch.targets):sum():item()
      end
      return correct / ds:len()
   end)
end

model:train()
for epoch = 1, epochs do
   local e0 = clock()
   local total, batches = 0, 0
   for batch in loader:iter() do
      local loss = nn.cross_entropy(model(batch.inputs), batch.targets)
      opt:zero_grad()
      loss:backward()
      opt:step()
      total = total + loss:item()
      batches = batches + 1
   end
   model:eval()
   local acc = accuracy(test)
   model:train()
   print(('epoch %d  loss %.4f  test accuracy %.2f%%  (%.1fs)'):format(
      epoch, total / batches, 100 * acc, clock() - e0))
end
print(('done in %.1fs'):format(clock() - t0))
