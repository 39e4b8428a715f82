-- mlp_fmnist: MLP 784-128-ReLU-10, Adam(1e-3), batch 128, one epoch of Fashion-MNIST;
-- the counterpart of reference/mlp_fmnist.py. Reports training seconds per epoch
-- (permutation and per-batch gathers included) and test accuracy.
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn

local NAME, BATCH, N = 'mlp_fmnist', 128, 60000

B.main(NAME, function()
   B.setup_threads(NAME)
   local nn, optim
   B.need{
      {'fastnn.nn', function() nn = fnn.nn; return nn end},
      {'nn.Linear', function() return nn.Linear end},
      {'nn.ReLU', function() return nn.ReLU end},
      {'nn.Sequential', function() return nn.Sequential end},
      {'nn.cross_entropy', function() return nn.cross_entropy end},
      {'fastnn.optim', function() optim = fnn.optim; return optim end},
      {'optim.Adam', function() return optim.Adam end},
      {'Tensor:index_select', function() return fnn.Tensor.index_select end},
      {'Tensor:narrow', function() return fnn.Tensor.narrow end},
      {'Tensor:reshape', function() return fnn.Tensor.reshape end},
   }
   fnn.manual_seed(0)

   -- data loading from disk: untimed. Images [N,784] in [0,1], labels 1-based ids as floats.
   local xtr, ytr = B.load_fmnist('train')
   local xte, yte = B.load_fmnist('t10k')
   xtr = xtr:reshape(N, 784):contiguous()
   xte = xte:reshape(10000, 784):contiguous()

   local model = nn.Sequential()
   model:add(nn.Linear(784, 128)); model:add(nn.ReLU()); model:add(nn.Linear(128, 10))
   local opt = optim.Adam(model:parameters(), 1e-3)
   local ce = nn.cross_entropy

   local function train_step(xb, yb)
      opt:zero_grad()
      local loss = B.precision(function() return ce(model:forward(xb), yb) end)
      loss:backward()
      opt:step()
      return loss
   end

   -- warm-up: one step on the first 128 training images in file order, untimed
   train_step(xtr:narrow(1, 1, BATCH), ytr:narrow(1, 1, BATCH))

   -- timed: one epoch = shuffle + 469 steps (468 x 128 + 1 x 96), batches gathered per step
   fnn.manual_seed(1)
   local loss
   local nsteps = 0
   local t0 = B.now()
   local perm = fnn.randperm(N)                     -- 1-based ids
   for i = 0, N - 1, BATCH do
      local idx = perm:narrow(1, i + 1, math.min(BATCH, N - i))
      loss = train_step(xtr:index_select(1, idx), ytr:index_select(1, idx))
      nsteps = nsteps + 1
   end
   local epoch_s = B.now() - t0

   -- test accuracy: untimed
   local logits = fnn.no_grad(function() return model:forward(xte) end)
   local acc = B.accuracy(logits, yte)
   print(('# steps=%d last_loss=%.4f epoch_s=%.4f ms_per_step=%.3f test_acc=%.2f%%'):format(
      nsteps, loss:item(), epoch_s, epoch_s / nsteps * 1e3, acc))
   B.result(NAME, {'sec_per_epoch', epoch_s, 's'}, {'test_acc', acc, '%'})
end)
