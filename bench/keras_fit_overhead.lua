-- keras_fit_overhead: what model:fit adds over the hand-written loop of mlp_fmnist.lua (784-128-
-- ReLU-10, Adam 1e-3, batch 128, one shuffled epoch of Fashion-MNIST, batches gathered by
-- index_select). Both run the same model from the same weights; fit runs with verbose = 0 and no
-- metrics. Prints both epoch times and the overhead; the issue's bar is under 5%.
--   luajit bench/keras_fit_overhead.lua        (LUA_PATH as bench/run.sh sets it)
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn
local nn, optim = fnn.nn, fnn.optim

B.main('keras_fit_overhead', function()
   B.setup_threads('keras_fit_overhead')
   local N, BATCH = 60000, 128
   local xtr, ytr = B.load_fmnist('train')
   xtr = xtr:reshape(N, 784):contiguous()
   local function make()
      fnn.manual_seed(0)
      return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
   end

   local function hand()
      local model = make()
      local opt = optim.Adam(model:parameters(), 1e-3)
      local t0 = B.now()
      local perm = fnn.randperm(N)
      for i = 0, N - 1, BATCH do
         local idx = perm:narrow(1, i + 1, math.min(BATCH, N - i))
         opt:zero_grad()
         local loss = nn.cross_entropy(model:forward(xtr:index_select(1, idx)), ytr:index_select(1, idx))
         loss:backward()
         opt:step()
         loss:item()
      end
      return B.now() - t0
   end

   local function keras()
      local model = make():build{BATCH, 784}
      model:compile{optimizer = optim.Adam{lr = 1e-3}, loss = 'cross_entropy'}
      local t0 = B.now()
      model:fit(xtr, ytr, {epochs = 1, batch_size = BATCH, verbose = 0})
      return B.now() - t0
   end

   hand(); keras()                       -- warm-up
   local h, k = math.huge, math.huge
   for _ = 1, 3 do h = math.min(h, hand()); k = math.min(k, keras()) end
   print(('# hand_s=%.4f fit_s=%.4f overhead=%.2f%%'):format(h, k, 100 * (k / h - 1)))
   B.result('keras_fit_overhead', {'hand_sec_per_epoch', h, 's'}, {'fit_sec_per_epoch', k, 's'},
            {'fit_overhead', 100 * (k / h - 1), '%'})
end)
