-- bench/gpu/gpu_resnet_small.lua: bench/resnet_small.lua's network on the GPU (a copy: that script
-- has no device option) at a GPU-sized configuration: batch 256 (the CPU bench: 64) of random
-- [3,32,32] images, 10 classes, 30 timed steps, each step timed between fnn.cuda.synchronize calls
-- (the median is reported, and images/s). Same model: stem Conv(3->16) BN ReLU, blocks 16->16,
-- 16->32 (stride 2), 32->64 (stride 2), global average pool, Linear(64, 10); SGD 0.1, momentum 0.9,
-- weight decay 5e-4. Needs conv2d, batch_norm and their backward on cuda: until they land it prints
-- "skipped: <op> not on cuda in this build".
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. (arg[0]:match('^(.*)/gpu/[^/]*$') or '..') ..
   '/?.lua;' .. package.path
local G = require 'gpu_util'
local B, fnn = G.B, G.fnn
local NAME, K = 'gpu_resnet_small', 10
local BATCH, HW, STEPS = 256, 32, 30
if G.smoke then BATCH, HW, STEPS = 2, 8, 2 end

B.main(NAME, function()
   local gpu = G.device(NAME)
   local nn, optim = fnn.nn, fnn.optim
   fnn.manual_seed(0)
   local Block = nn.Module:extend('GpuBlock')
   function Block:__init(cin, cout, stride)
      self.c1 = nn.Conv2d(cin, cout, 3, {stride = stride, padding = 1, bias = false})
      self.b1 = nn.BatchNorm2d(cout)
      self.c2 = nn.Conv2d(cout, cout, 3, {padding = 1, bias = false})
      self.b2 = nn.BatchNorm2d(cout)
      if stride ~= 1 or cin ~= cout then
         self.sc = nn.Conv2d(cin, cout, 1, {stride = stride, bias = false})
         self.sb = nn.BatchNorm2d(cout)
      end
   end
   function Block:forward(x)
      local y = self.b1(self.c1(x)):relu()
      y = self.b2(self.c2(y))
      local short = self.sc and self.sb(self.sc(x)) or x
      return (y + short):relu()
   end
   local Net = nn.Module:extend('GpuResNetSmall')
   function Net:__init()
      self.stem = nn.Conv2d(3, 16, 3, {padding = 1, bias = false})
      self.bn = nn.BatchNorm2d(16)
      self.s1, self.s2, self.s3 = Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2)
      self.head = nn.Linear(64, K)
   end
   function Net:forward(x)
      x = self.bn(self.stem(x)):relu()
      x = self.s3(self.s2(self.s1(x)))
      return self.head(x:flatten(3):mean(3))
   end
   local model = Net()
   model:train()
   model:to_device(gpu)
   local opt = optim.SGD(model:parameters(), 0.1, {momentum = 0.9, weight_decay = 5e-4})
   local X, Y = {}, {}
   math.randomseed(0)
   for i = 0, STEPS do
      X[i] = fnn.randn(BATCH, 3, HW, HW):to(gpu)
      local ids = {}
      for j = 1, BATCH do ids[j] = math.random(1, K) end
      Y[i] = fnn.long(ids):to(gpu)
   end
   local ce = nn.cross_entropy
   local function train_step(i)
      opt:zero_grad()
      local loss = ce(model(X[i]), Y[i])
      loss:backward()
      opt:step()
      return loss
   end
   G.run_or_skip(NAME, function()
      train_step(0)   -- warm-up: the cache, cuBLAS
      local times, loss = {}, nil
      for i = 1, STEPS do times[i] = G.timed(1, function() loss = train_step(i) end) end
      local s = B.step_summary(times)
      print(('# batch=%d steps=%d last_loss=%.4f median_ms=%.3f min_ms=%.3f'):format(BATCH, STEPS, loss:to('cpu'):item(), s.median, s.min))
      B.result(NAME, {'ms_per_step', s.median, 'ms'}, {'images_per_s', BATCH * STEPS / s.total_s, 'img/s'},
               {'batch', BATCH, 'images'})
   end)
end)
