-- data_loader: the DataLoader against the mlp_fmnist epoch it feeds.
--   luajit bench/data_loader.lua        (FASTNN_LIB=<build>/libfastnn.so; REPS=n, default 3)
-- Measures, on Fashion-MNIST train (60,000 images, batch 128, shuffled, after one untimed pass):
--   loader_s        one epoch of DataLoader batches alone, main thread (no prefetch)
--   loader_reuse_s  the same epoch as loader_s with {reuse = true} (every batch written into one buffer)
--   loader_pf_s     the same with prefetch(2) (the main thread only waits for the worker)
--   mlp_hand_s      the mlp_fmnist epoch as bench/mlp_fmnist.lua writes it (randperm + index_select)
--   mlp_loader_s    the same training written with DataLoader(...):prefetch(2)
-- and the ratios: loader_s / mlp_hand_s and loader_reuse_s / mlp_hand_s (target: under 5%), and
-- mlp_loader_s / mlp_hand_s (target: <= 1).
-- Each figure is the median of REPS runs, interleaved so machine load hits all alike.
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn

local NAME, BATCH = 'data_loader', 128

B.main(NAME, function()
   B.setup_threads(NAME)
   local nn, optim, data = fnn.nn, fnn.optim, fnn.data
   local reps = tonumber(os.getenv('REPS') or '') or 3
   local ds = data.FashionMnist.load('train')
   local N = ds:len()
   local flat = ds.inputs:reshape(N, 784):contiguous()
   local labels = ds.targets

   local function loader_epoch(prefetch, reuse)
      local loader = data.DataLoader(ds, BATCH, {reuse = reuse}):shuffle(true):seed(1):prefetch(prefetch)
      local t0 = B.now()
      local n = 0
      for batch in loader:iter() do n = n + batch.size end
      assert(n == N)
      return B.now() - t0
   end

   local function model_and_step()
      fnn.manual_seed(0)
      local model = nn.Sequential()
      model:add(nn.Linear(784, 128)); model:add(nn.ReLU()); model:add(nn.Linear(128, 10))
      local opt = optim.Adam(model:parameters(), 1e-3)
      return function(xb, yb)
         opt:zero_grad()
         local loss = nn.cross_entropy(model:forward(xb), yb)
         loss:backward()
         opt:step()
         return loss
      end
   end

   local function mlp_hand()
      local step = model_and_step()
      step(flat:narrow(1, 1, BATCH), labels:narrow(1, 1, BATCH))   -- warm-up, untimed
      fnn.manual_seed(1)
      local t0 = B.now()
      local perm = fnn.randperm(N)
      for i = 0, N - 1, BATCH do
         local idx = perm:narrow(1, i + 1, math.min(BATCH, N - i))
         step(flat:index_select(1, idx), labels:index_select(1, idx))
      end
      return B.now() - t0
   end

   local flat_ds = data.TensorDataset(flat, labels)
   local function mlp_loader()
      local step = model_and_step()
      step(flat:narrow(1, 1, BATCH), labels:narrow(1, 1, BATCH))
      local loader = data.DataLoader(flat_ds, BATCH):shuffle(true):seed(1):prefetch(2)
      local t0 = B.now()
      for batch in loader:iter() do step(batch.inputs, batch.targets) end
      return B.now() - t0
   end

   loader_epoch(0)   -- untimed: first touches of the dataset and of the batch buffers
   loader_epoch(0, true)
   loader_epoch(2)
   local t = {loader = {}, loader_reuse = {}, loader_pf = {}, hand = {}, mlp_loader = {}}
   for _ = 1, reps do
      t.loader[#t.loader + 1] = loader_epoch(0)
      t.loader_reuse[#t.loader_reuse + 1] = loader_epoch(0, true)
      t.loader_pf[#t.loader_pf + 1] = loader_epoch(2)
      t.hand[#t.hand + 1] = mlp_hand()
      t.mlp_loader[#t.mlp_loader + 1] = mlp_loader()
   end
   local loader_s, loader_pf_s, reuse_s = B.median(t.loader), B.median(t.loader_pf), B.median(t.loader_reuse)
   local hand_s, mlp_loader_s = B.median(t.hand), B.median(t.mlp_loader)
   print(('# loader_s=%.4f loader_reuse_s=%.4f loader_pf_s=%.4f mlp_hand_s=%.4f mlp_loader_s=%.4f '
          .. 'loader/epoch=%.1f%% loader_reuse/epoch=%.1f%% mlp_loader/mlp_hand=%.3f (median of %d)'):format(
          loader_s, reuse_s, loader_pf_s, hand_s, mlp_loader_s, 100 * loader_s / hand_s, 100 * reuse_s / hand_s,
          mlp_loader_s / hand_s, reps))
   B.result(NAME, {'loader_s', loader_s, 's'}, {'loader_pf_s', loader_pf_s, 's'}, {'mlp_hand_s', hand_s, 's'},
            {'mlp_loader_s', mlp_loader_s, 's'}, {'loader_share', 100 * loader_s / hand_s, '%'},
            {'mlp_loader_ratio', mlp_loader_s / hand_s, 'x'}, {'loader_reuse_s', reuse_s, 's'},
            {'loader_reuse_share', 100 * reuse_s / hand_s, '%'})
end)
