-- spec/dist/train.lua: 20 steps of a small regression, as a function both sides call:
--   train(B, steps, {ddp = true, bucket_mb})  on each rank under mpirun: N ranks at batch B
--   train(N * B, steps)                       in the spec's own process: one at batch N*B
-- Same data (48 items), same loader seed, SGD with momentum. Each rank starts from different
-- weights (seed 100 + rank): DataParallel must replace them with rank 0's (the single run uses
-- seed 100). Returns every parameter's final values (a list of flat lists), the step count and
-- the number of buckets of the last sync.
local fnn = require 'fastnn'
local nn, optim, data = fnn.nn, fnn.optim, fnn.data
local dist = fnn.distributed

return function(B, steps, opts)
   opts = opts or {}
   local rank = dist.rank()
   local xs, ys = {}, {}
   for i = 1, 48 do   -- a fixed smooth function of the index
      xs[i] = {math.sin(i), math.cos(2 * i), (i % 7) / 7, ((i * 5) % 11) / 11 - 0.5}
      ys[i] = {math.sin(i) * 0.5, (i % 3) - 1, math.cos(i) * 0.25}
   end
   local ds = data.TensorDataset(fnn.tensor(xs), fnn.tensor(ys))
   fnn.manual_seed(100 + rank)
   local model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
   local opt = optim.SGD(model:parameters(), {lr = 0.1, momentum = 0.9})
   local loader = data.DataLoader(ds, B):shuffle(true):seed(5)
   local net = model
   if opts.ddp then
      net = dist.DataParallel(model, {bucket_mb = opts.bucket_mb})
      opt = dist.wrap_optimizer(opt, net)
      loader:shard(rank, dist.world_size())
   end
   local done = 0
   while done < steps do
      for batch in loader:iter() do
         opt:zero_grad()
         nn.mse(net(batch.inputs), batch.targets):backward()
         opt:step()
         done = done + 1
         if done == steps then break end
      end
   end
   local w = {}
   for i, p in ipairs(model:parameters()) do w[i] = p:tensor():to_flat() end
   return w, done, opts.ddp and net:last_sync_buckets() or 0
end
