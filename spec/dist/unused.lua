-- spec/dist/unused.lua: DataParallel:sync with parameters some ranks have no gradient for.
-- Rank 0 uses heads a and b, the other ranks only a; head c is used nowhere; `frozen` is frozen.
-- Prints `pre <rank> <name> <grad values or nil>` before the sync and `post ...` after it.
local fnn = require 'fastnn'
local nn = fnn.nn
local dist = fnn.distributed

return function()
   local rank = dist.rank()
   fnn.manual_seed(3)
   local Net = nn.Module:extend('Net')
   function Net:__init()
      self.trunk = nn.Linear(3, 4)
      self.a = nn.Linear(4, 2)
      self.b = nn.Linear(4, 2)
      self.c = nn.Linear(4, 2)
      self.frozen = nn.Linear(4, 1)
      self.frozen:freeze()
   end
   local model = Net()
   local ddp = dist.DataParallel(model, {bucket_mb = 1e-4})
   local x = fnn.full({2, 3}, rank + 1)
   local h = model.trunk(x):tanh()
   local loss = model.a(h):sum() + model.frozen(h):sum()
   if rank == 0 then loss = loss + (model.b(h) * 3):sum() end
   loss:backward()
   local function show(tag)
      for _, pair in ipairs(model:named_parameters()) do
         local g = pair[2]:grad()
         local s = {}
         if g then for i, v in ipairs(g:to_flat()) do s[i] = ('%.9g'):format(v) end end
         print(('%s %d %s %s'):format(tag, rank, pair[1], g and table.concat(s, ' ') or 'nil'))
      end
   end
   show('pre')
   ddp:sync()
   show('post')
end
