-- spec/dist/collectives.lua: the collectives, run by spec/dist/suite.lua on every rank. Each
-- rank prints its results as lines `<key> <rank> <values...>` for the spec to compare with
-- hand-computed ones.
local fnn = require 'fastnn'
local dist = fnn.distributed
return function()
   local r, n = dist.rank(), dist.world_size()
   local function out(key, t)
      local v = type(t) == 'table' and t or t:to_flat()
      local s = {}
      for i = 1, #v do s[i] = ('%.9g'):format(v[i]) end
      print(('%s %d %s'):format(key, r, table.concat(s, ' ')))
   end
   print(('world %d %d %s %d'):format(r, n, tostring(dist.is_main()), dist.local_rank()))
   -- rank r holds [r+1, 10(r+1), -r, 2^r] (exact in float32)
   local x = fnn.tensor{r + 1, 10 * (r + 1), -r, 2 ^ r}
   out('sum', dist.all_reduce(x))
   out('mean', dist.all_reduce(x, {op = 'mean'}))
   out('max', dist.all_reduce(x, {op = 'max'}))
   out('min', dist.all_reduce(x, {op = 'min'}))
   out('input', x)                                     -- untouched: results are new tensors
   -- a big one (storage, not inline) and a strided view
   local big = fnn.arange(0, 1000):float():reshape(10, 100):transpose(1, 2) * (r + 1)
   local s = dist.all_reduce(big)
   out('big', {s:shape()[1], s:shape()[2], s:to_flat()[1], s:to_flat()[2], s:to_flat()[1000]})
   out('long', dist.all_reduce(fnn.tensor{r, 3}:long()))
   local l = dist.all_reduce(fnn.tensor{r, 3}:long(), {op = 'max'})
   print(('longtype %d %s'):format(r, l:dtype()))
   out('bcast', dist.broadcast(x, n - 1))
   out('bcast0', dist.broadcast(fnn.full({3}, r + 7)))
   local g = dist.all_gather(fnn.tensor{{r, r + 0.5}})
   out('gather_shape', g:shape())
   out('gather', g)
   -- a shape mismatch raises on the ranks that differ (here every rank sees one) and names both
   local ok, err = pcall(dist.all_reduce, fnn.zeros(r == 1 and 3 or 2))
   print(('mismatch %d %s %s'):format(r, tostring(ok), tostring(err)))
   local ok2, err2 = pcall(dist.all_reduce, x, {op = 'prod'})
   print(('badop %d %s %s'):format(r, tostring(ok2), tostring(err2)))
   dist.barrier()
   print(('done %d'):format(r))
end
