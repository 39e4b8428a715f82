-- spec/dist/shard.lua: each rank prints the ids of two shuffled passes of a sharded loader,
-- `<tag>ids <rank> <epoch> <id> <id> ...`, `<tag>steps <rank> <epoch> <batches>` and
-- `<tag>len <rank> <loader:len()>`.
local fnn = require 'fastnn'
local data = fnn.data
local dist = fnn.distributed

return function(n, b, drop, tag)
   local rank = dist.rank()
   local ds = data.TensorDataset(fnn.arange(1, n + 1):float():reshape(n, 1))
   local loader = data.DataLoader(ds, b):shuffle(true):seed(11):drop_last(drop):shard(rank, dist.world_size())
   print(('%slen %d %d'):format(tag, rank, loader:len()))
   for epoch = 1, 2 do
      local ids, steps = {}, 0
      for batch in loader:iter() do
         steps = steps + 1
         for _, v in ipairs(batch.inputs:to_flat()) do ids[#ids + 1] = ('%d'):format(v) end
      end
      print(('%sids %d %d %s'):format(tag, rank, epoch, table.concat(ids, ' ')))
      print(('%ssteps %d %d %d'):format(tag, rank, epoch, steps))
   end
end
