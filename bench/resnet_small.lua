-- resnet_small: a CIFAR-sized ResNet, the counterpart of reference/resnet_small.py
-- (../shared/bench/WORKLOADS.md v2). Batch 64 of random [3,32,32] images, 10 classes, 50 timed steps.
--   stem: Conv(3->16, 3x3, pad 1, no bias) -> BatchNorm2d -> ReLU
--   blocks 16->16 (stride 1), 16->32 (stride 2), 32->64 (stride 2):
--     relu(BN2(Conv2(relu(BN1(Conv1(x))))) + shortcut(x)), shortcut = identity or Conv1x1(stride 2) -> BN
--   global average pool over H, W -> Linear(64, 10); cross entropy; BatchNorm in training mode
--   SGD lr 0.1, momentum 0.9, weight decay 5e-4 (coupled), on all parameters
-- Where the build has it, each BatchNorm2d followed directly by a ReLU (the stem's and each block's
-- first) is one layer, nn.BatchNorm2d(C, {activation = 'relu'}) (issue 32): the same model and
-- numbers, one node and no tensor between; an older build runs the two ops.
-- Reports the median ms per step and images/s.
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn

local NAME, BATCH, K, STEPS = 'resnet_small', 64, 10, 50

B.main(NAME, function()
   B.setup_threads(NAME)
   local nn, optim
   B.need{
      {'fastnn.nn', function() nn = fnn.nn; return nn end},
      {'nn.Conv2d', function() return nn.Conv2d end},
      {'nn.BatchNorm2d', function() return nn.BatchNorm2d end},
      {'nn.Linear', function() return nn.Linear end},
      {'nn.Module:extend', function() return nn.Module and nn.Module.extend end},
      {'nn.cross_entropy', function() return nn.cross_entropy end},
      {'fastnn.optim', function() optim = fnn.optim; return optim end},
      {'optim.SGD', function() return optim.SGD end},
   }
   -- the fused option where this build declares it (an older one refuses the key)
   local FUSED = pcall(nn.BatchNorm2d, 1, {activation = 'relu'})
   print('# BatchNorm2d then ReLU: ' .. (FUSED and "one layer ({activation = 'relu'})" or 'two ops'))
   local function bn_relu(c) return FUSED and nn.BatchNorm2d(c, {activation = 'relu'}) or nn.BatchNorm2d(c) end
   local function relu_after(bn, x) if FUSED then return bn(x) end return bn(x):relu() end
   fnn.manual_seed(0)

   local Block = nn.Module:extend('Block')
   function Block:__init(cin, cout, stride)
      self.c1 = nn.Conv2d(cin, cout, 3, {stride = stride, padding = 1, bias = false})
      self.b1 = bn_relu(cout)
      self.c2 = nn.Conv2d(cout, cout, 3, {padding = 1, bias = false})
      self.b2 = nn.BatchNorm2d(cout)
      if stride ~= 1 or cin ~= cout then
         self.sc = nn.Conv2d(cin, cout, 1, {stride = stride, bias = false})
         self.sb = nn.BatchNorm2d(cout)
      end
   end
   function Block:forward(x)
      local y = relu_after(self.b1, self.c1(x))
      y = self.b2(self.c2(y))
      local short = self.sc and self.sb(self.sc(x)) or x
      return (y + short):relu()
   end

   local Net = nn.Module:extend('ResNetSmall')
   function Net:__init()
      self.stem = nn.Conv2d(3, 16, 3, {padding = 1, bias = false})
      self.bn = bn_relu(16)
      self.s1, self.s2, self.s3 = Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2)
      self.head = nn.Linear(64, K)
   end
   function Net:forward(x)
      x = relu_after(self.bn, self.stem(x))            -- [B,16,32,32]
      x = self.s3(self.s2(self.s1(x)))                 -- [B,64,8,8]
      return self.head(x:flatten(3):mean(3))           -- global average pool -> [B,64]
   end

   local model = Net()
   model:train()
   local opt = optim.SGD(model:parameters(), 0.1, {momentum = 0.9, weight_decay = 5e-4})
   -- random data, made before timing: X[i] [64,3,32,32] from N(0,1), labels uniform in 1..10
   local X, Y = {}, {}
   math.randomseed(0)
   for i = 0, STEPS do
      X[i] = fnn.randn(BATCH, 3, 32, 32)
      local ids = {}
      for j = 1, BATCH do ids[j] = math.random(1, K) end
      Y[i] = fnn.long(ids)
   end

   local ce = nn.cross_entropy
   local function train_step(i)
      opt:zero_grad()
      local loss = B.precision(function() return ce(model(X[i]), Y[i]) end)
      loss:backward()
      opt:step()
      return loss
   end

   train_step(0)                                   -- warm-up, untimed
   local times, loss = {}, nil
   for i = 1, STEPS do
      local t0 = B.now()
      loss = train_step(i)
      times[#times + 1] = B.now() - t0
   end
   local s = B.step_summary(times)
   print(('# params=%d steps=%d last_loss=%.4f total_s=%.3f median_ms=%.3f mean_ms=%.3f min_ms=%.3f max_ms=%.3f'):format(
      model:num_parameters(), STEPS, loss:item(), s.total_s, s.median, s.mean, s.min, s.max))
   B.result(NAME, {'ms_per_step', s.median, 'ms'}, {'images_per_s', BATCH * STEPS / s.total_s, 'img/s'})
end)
