-- spec/dist/suite.lua CHECKPOINT_PATH [exit]: what spec/distributed_spec.lua checks under mpirun, in
-- one launch (MPI_Init alone costs half a second here): the collectives, 20 steps of data
-- parallel training with large and tiny buckets, a sync with missing gradients, sharded
-- loaders, a checkpoint saved on rank 0, and that every function fastnn_dist.h declares resolves
-- in libfastnn_dist. Every rank prints `<key> <rank> <values...>`. With `exit` it ends through
-- os.exit(0) instead of the end of the script (both must end the rank cleanly).
package.path = 'spec/dist/?.lua;' .. package.path
local fnn = require 'fastnn'
local dist = fnn.distributed
dist.init()
local rank, world = dist.rank(), dist.world_size()

-- the ABI: every declared function resolves
local missing = {}
for name in require('fastnn.dist_cdef'):gmatch('[%w_%*%s]+[%s%*](fnn_dist_[%w_]+)%s*%(') do
   if not pcall(function() return dist._library()[name] end) then missing[#missing + 1] = name end
end
print(('abi %d %d %s'):format(rank, #missing, table.concat(missing, ' ')))

require('collectives')()

local train = require('train')
for _, c in ipairs{{'big', 25}, {'small', 1e-4}} do
   local w, steps, buckets = train(4, 20, {ddp = true, bucket_mb = c[2]})
   for _, values in ipairs(w) do
      local s = {}
      for i, v in ipairs(values) do s[i] = ('%.9g'):format(v) end
      print(('w_%s %d %s'):format(c[1], rank, table.concat(s, ' ')))
   end
   print(('steps_%s %d %d'):format(c[1], rank, steps))
   print(('buckets_%s %d %d'):format(c[1], rank, buckets))
end

require('unused')()
local shard = require('shard')
shard(6 * world, 2, false, '')
shard(6 * world + 2, 4, true, 'd')
require('checkpoint')(arg[1])
print(('finished %d'):format(rank))
if arg[2] == 'exit' then
   io.stdout:flush()
   os.exit(0)
end
