-- spec/dist/checkpoint.lua: every rank starts from its own weights (seed 20 + rank) and calls
-- save_training; only rank 0 writes, then every rank loads the file. Prints
-- `before <rank> <sum of weights>` and `after <rank> <sum> <step> <lr>`.
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim
local dist = fnn.distributed

return function(path)
   local rank = dist.rank()
   fnn.manual_seed(20 + rank)
   local model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
   local opt = optim.Adam(model:parameters(), 1e-3 * (rank + 1))
   local function total()
      local s = 0
      for _, p in ipairs(model:parameters()) do s = s + p:tensor():sum():item() end
      return s
   end
   print(('before %d %.9g'):format(rank, total()))
   fnn.save_training(model, opt, 7 + rank, path)
   -- every rank now sees rank 0's file (save_training ends with a barrier)
   fnn.manual_seed(99)
   model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
   opt = optim.Adam(model:parameters(), 0.5)
   local step = fnn.load_training(model, opt, path)
   print(('after %d %.9g %s %.9g'):format(rank, total(), tostring(step), opt:lr()))
end
