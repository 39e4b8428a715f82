-- spec/dist/fail.lua [exit]: the last rank makes a shape error (with `exit`: calls os.exit(3))
-- while the others wait in an all-reduce; the launcher must print that rank's message and abort
-- the whole job (no hang).
local fnn = require 'fastnn'
local dist = fnn.distributed
dist.init()
local last = dist.world_size() - 1
print(('started %d'):format(dist.rank()))
io.stdout:flush()
if dist.rank() == last then
   if arg[1] == 'exit' then os.exit(3) end
   local _ = fnn.ones(2, 3):matmul(fnn.ones(4, 5))
end
dist.all_reduce(fnn.ones(3))
print(('unreachable %d'):format(dist.rank()))
