-- ddp_mlp: data-parallel training of the mlp_fmnist model (784-128-ReLU-10, Adam) on
-- Fashion-MNIST, one process per rank, through fnn.distributed (Open MPI; NCCL for GPUs).
--   tools/mpirun.sh -np 2 build/fastnn-lua examples/ddp_mlp.lua      # 2 ranks on this machine
--   mpirun -np 2 fastnn-lua examples/ddp_mlp.lua                      # the same with plain mpirun
--   fastnn-lua examples/ddp_mlp.lua --quick                           # world size 1 works too
-- Each rank reads a disjoint 1/N of every epoch (DataLoader:shard) at --batch-size images per
-- step, so N ranks train as one process at N x batch. DataParallel starts every rank from rank
-- 0's weights and averages the gradients before each step (wrap_optimizer).
-- Prints per rank: `rank r/N epoch e: S steps, I images, loss L, T s`; then the global figures
-- from rank 0: `global epoch e: ... images/s`, the test accuracy, and whether the ranks' weights
-- agree. Rank 0 writes the training checkpoint --out/ddp_mlp.fdl (`saved <path>`).
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim, data = fnn.nn, fnn.optim, fnn.data
local cli, pictures, datasets = require 'common.cli', require 'common.pictures', require 'common.datasets'
local classify, clock = require 'common.classify', require 'common.clock'
local dist = fnn.distributed

local opts = cli.parse{
   name = 'ddp_mlp', about = 'Data-parallel MLP on Fashion-MNIST: run it under mpirun (any number of ranks).',
   options = {
      {'epochs', 3, 'passes over the training set'},
      {'batch_size', 64, 'images per step on each rank'},
      {'lr', 1e-3, 'Adam learning rate'},
      {'train_size', 0, 'use the first N training images (0: all)'},
      {'test_size', 0, 'score on the first N test images (0: all)'},
      {'bucket_mb', 25, 'gradient all-reduce bucket size in MB'},
   },
   quick = {epochs = 1, train_size = 3000, test_size = 1000},
}

dist.init()
local rank, world = dist.rank(), dist.world_size()
local function main_print(...) if dist.is_main() then print(...) end end
-- one thread per rank unless asked otherwise: N ranks share this machine's cores
if not os.getenv('FASTNN_NUM_THREADS') and world > 1 then fnn.set_num_threads(1) end

local train, test = datasets.load('fashion')
if opts.train_size > 0 then train = datasets.head(train, opts.train_size) end
if opts.test_size > 0 then test = datasets.head(test, opts.test_size) end
main_print(('Fashion-MNIST: %d training and %d test images, %d rank(s) at batch %d (global batch %d), backend %s'):format(
   train:len(), test:len(), world, opts.batch_size, world * opts.batch_size, dist.backend()))

fnn.manual_seed(opts.seed + rank)   -- different on purpose: DataParallel replaces them with rank 0's
local model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
local ddp = dist.DataParallel(model, {bucket_mb = opts.bucket_mb})
local opt = dist.wrap_optimizer(optim.Adam(model:parameters(), opts.lr), ddp)
local loader = data.DataLoader(train, opts.batch_size):shuffle(true):seed(opts.seed):shard(rank, world)

for epoch = 1, opts.epochs do
   local t0, total, steps, images = clock(), 0, 0, 0
   for batch in loader:iter() do
      local loss = nn.cross_entropy(ddp(batch.inputs), batch.targets)
      opt:zero_grad()
      loss:backward()
      opt:step()                   -- averages the gradients over the ranks, then Adam
      total, steps, images = total + loss:item(), steps + 1, images + batch.size
   end
   local seconds = clock() - t0
   print(('rank %d/%d epoch %d: %d steps, %d images, loss %.4f, %.2f s'):format(
      rank, world, epoch, steps, images, total / math.max(steps, 1), seconds))
   -- the global figures: mean loss over ranks, all images, the slowest rank's time
   local g = dist.all_reduce(fnn.tensor{total / math.max(steps, 1), images}, {op = 'sum'})
   local slowest = dist.all_reduce(fnn.tensor{seconds}, {op = 'max'})[1]
   main_print(('global epoch %d: loss %.4f, %d images, %.2f s, %.0f images/s'):format(
      epoch, g[1] / world, g[2], slowest, g[2] / slowest))
end

-- every rank holds the same weights: the spread of a checksum over the ranks is 0
local sum = 0
for _, p in ipairs(model:parameters()) do sum = sum + p:tensor():abs():sum():item() end
local spread = dist.all_reduce(fnn.tensor{sum}, {op = 'max'})[1] - dist.all_reduce(fnn.tensor{sum}, {op = 'min'})[1]
main_print(('weights agree across ranks: %s (checksum %.6f, spread %.3g)'):format(tostring(spread == 0), sum, spread))

if dist.is_main() then
   local r = classify.evaluate(model, test)
   print(('test accuracy %.4f'):format(r.accuracy))
end
local path = pictures.path(opts, 'ddp_mlp.fdl')
fnn.save_training(model, opt, opts.epochs, path)   -- rank 0 writes; every rank waits for it
main_print('saved ' .. path)
