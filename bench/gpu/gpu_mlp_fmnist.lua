-- bench/gpu/gpu_mlp_fmnist.lua: bench/mlp_fmnist.lua on the GPU (a copy: that script has no device
-- option). The same model and work: MLP 784-128-ReLU-10, Adam(1e-3), batch 128, one epoch of
-- Fashion-MNIST (469 steps, permutation and per-batch index_select gathers included, here on the
-- GPU after one untimed upload of the training set), timed between two fnn.cuda.synchronize calls.
-- A second figure runs the epoch through DataLoader(...):to_device(gpu) (batches gathered on the
-- CPU, staged in pinned buffers, copied on the copy stream), the loader path issue 17 overlaps.
-- check.sh divides this machine's CPU epoch (bench/results) by sec_per_epoch: the target is >= 5x.
-- Without the data files (FMNIST_DIR) it runs on random data of the same shapes and says so.
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. (arg[0]:match('^(.*)/gpu/[^/]*$') or '..') ..
   '/?.lua;' .. package.path
local G = require 'gpu_util'
local B, fnn = G.B, G.fnn
local NAME, BATCH = 'gpu_mlp_fmnist', 128

B.main(NAME, function()
   local gpu = G.device(NAME)
   local nn, optim = fnn.nn, fnn.optim
   fnn.manual_seed(0)
   local N = G.smoke and 512 or 60000
   local ok, xtr, ytr = pcall(B.load_fmnist, 'train')
   if ok then
      xtr, ytr = xtr:reshape(60000, 784):narrow(1, 1, N):contiguous(), ytr:narrow(1, 1, N):contiguous()
   else
      print('# Fashion-MNIST not found (' .. tostring(xtr):match('^[^\n]*') .. '): random data of the same shapes')
      xtr, ytr = fnn.rand(N, 784), (fnn.rand(N) * 10):floor() + 1
   end
   ytr = ytr:long()   -- class ids on a GPU are int64
   local model = nn.Sequential()
   model:add(nn.Linear(784, 128)); model:add(nn.ReLU()); model:add(nn.Linear(128, 10))
   model:to_device(gpu)
   local opt = optim.Adam(model:parameters(), 1e-3)
   local ce = nn.cross_entropy
   local function train_step(xb, yb)
      opt:zero_grad()
      local loss = ce(model:forward(xb), yb)
      loss:backward()
      opt:step()
      return loss
   end
   G.run_or_skip(NAME, function()
      local gx, gy = xtr:to(gpu), ytr:to(gpu)   -- untimed upload, as the CPU bench's data sits in memory
      train_step(gx:narrow(1, 1, BATCH), gy:narrow(1, 1, BATCH))   -- warm-up
      fnn.manual_seed(1)
      local loss, steps
      local epoch_s = G.timed(1, function()
         steps = 0
         local perm = fnn.randperm(N):to(gpu)
         for i = 0, N - 1, BATCH do
            local idx = perm:narrow(1, i + 1, math.min(BATCH, N - i))
            loss = train_step(gx:index_select(1, idx), gy:index_select(1, idx))
            steps = steps + 1
         end
      end)
      -- the loader path: CPU batches, pinned staging, async copies
      local loader = fnn.data.DataLoader(fnn.data.TensorDataset(xtr, ytr), BATCH):shuffle(true):seed(1):to_device(gpu)
      local loader_s = G.timed(1, function()
         for b in loader:iter() do loss = train_step(b.inputs, b.targets) end
      end)
      local st = fnn.cuda.memory_stats()
      print(('# steps=%d last_loss=%.4f epoch_s=%.4f ms_per_step=%.3f loader_epoch_s=%.4f pinned_allocs=%d pinned_reuses=%d'):format(
         steps, loss:to('cpu'):item(), epoch_s, epoch_s / steps * 1e3, loader_s, st.pinned_allocs, st.pinned_reuses))
      B.result(NAME, {'sec_per_epoch', epoch_s, 's'}, {'loader_sec_per_epoch', loader_s, 's'})
   end)
end)
