-- cnn_fmnist: small CNN on Fashion-MNIST, Adam(1e-3), batch 64, 200 timed steps;
-- the counterpart of reference/cnn_fmnist.py. Reports the median ms per step and
-- images/s (64*200 / total timed seconds).
--   Conv(1->32, 3x3, pad 1) -> ReLU -> MaxPool 2 -> Conv(32->64, 3x3, pad 1) -> ReLU -> MaxPool 2
--   -> Flatten (C,H,W) 3136 -> Linear(3136,128) -> ReLU -> Linear(128,10)
-- One permutation drawn untimed; step k gathers perm[64k+1 .. 64k+64] inside its timing. Where the build
-- has it, each Conv -> ReLU is one layer, nn.Conv2d(..., {activation = 'relu'}) (issue 32's fusions).
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn

local NAME, BATCH, STEPS, N = 'cnn_fmnist', 64, 200, 60000

B.main(NAME, function()
   B.setup_threads(NAME)
   local nn, optim
   B.need{
      {'fastnn.nn', function() nn = fnn.nn; return nn end},
      {'nn.Conv2d', function() return nn.Conv2d end},
      {'nn.MaxPool2d', function() return nn.MaxPool2d end},
      {'a conv2d op in the core registry', function() return B.has_op('conv2d') end},
      {'a max_pool2d op in the core registry', function() return B.has_op('max_pool2d') end},
      {'nn.Flatten', function() return nn.Flatten end},
      {'nn.Linear', function() return nn.Linear end},
      {'nn.ReLU', function() return nn.ReLU end},
      {'nn.Sequential', function() return nn.Sequential end},
      {'nn.cross_entropy', function() return nn.cross_entropy end},
      {'fastnn.optim', function() optim = fnn.optim; return optim end},
      {'optim.Adam', function() return optim.Adam end},
      {'Tensor:index_select', function() return fnn.Tensor.index_select end},
   }
   local FUSED = pcall(nn.Conv2d, 1, 1, 1, {activation = 'relu'})   -- before the seed: the probe draws weights
   print('# Conv2d then ReLU: ' .. (FUSED and "one layer ({activation = 'relu'})" or 'two ops'))
   fnn.manual_seed(0)

   local xtr, ytr = B.load_fmnist('train')         -- untimed
   xtr = xtr:reshape(N, 1, 28, 28):contiguous()

   -- each Conv -> ReLU as one layer where the build has it (nn.Conv2d's {activation = 'relu'}: the same
   -- model and numbers, the relu inside the convolution's node); an older build runs the two ops
   local function conv_relu(model, cin, cout)
      if FUSED then model:add(nn.Conv2d(cin, cout, 3, {padding = 1, activation = 'relu'}))
      else model:add(nn.Conv2d(cin, cout, 3, {padding = 1})); model:add(nn.ReLU()) end
   end
   local model = nn.Sequential()
   conv_relu(model, 1, 32); model:add(nn.MaxPool2d(2))
   conv_relu(model, 32, 64); model:add(nn.MaxPool2d(2))
   model:add(nn.Flatten()); model:add(nn.Linear(3136, 128)); model:add(nn.ReLU()); model:add(nn.Linear(128, 10))
   local opt = optim.Adam(model:parameters(), 1e-3, {betas = {0.9, 0.999}, eps = 1e-8})
   fnn.manual_seed(1)
   local perm = fnn.randperm(N)                    -- untimed, 1-based ids

   local ce = nn.cross_entropy
   local function train_step(k)
      local idx = perm:narrow(1, k * BATCH + 1, BATCH)   -- batching from in-memory arrays: timed
      local xb, yb = xtr:index_select(1, idx), ytr:index_select(1, idx)
      opt:zero_grad()
      local loss = B.precision(function() return ce(model:forward(xb), yb) end)
      loss:backward()
      opt:step()
      return loss
   end

   train_step(0)                                   -- warm-up, untimed
   local times, loss = {}, nil
   for k = 1, STEPS do
      local t0 = B.now()
      loss = train_step(k)
      times[#times + 1] = B.now() - t0
   end
   local s = B.step_summary(times)
   local ips = BATCH * STEPS / s.total_s
   print(('# params=%d steps=%d last_loss=%.4f total_s=%.3f median_ms=%.3f mean_ms=%.3f min_ms=%.3f max_ms=%.3f'):format(
      model:num_parameters(), STEPS, loss:item(), s.total_s, s.median, s.mean, s.min, s.max))
   B.result(NAME, {'ms_per_step', s.median, 'ms'}, {'images_per_s', ips, 'img/s'})
end)
