-- spec/hosts/churn_worker.lua: for threads_host --churn (spec/host_threads_spec.lua). A short-lived
-- thread's work: 2000 small tensors (4 KB each, the core's per-thread free lists keep up to 4 MB
-- of them), all released by the time the thread ends.
local fnn = require 'fastnn'
return function(id)
   local keep = {}
   for i = 1, 2000 do keep[i] = fnn.ones(1000) * id end
   local sum = 0
   for i = 1, #keep, 500 do sum = sum + keep[i]:sum():item() end
   keep = nil
   collectgarbage()
   collectgarbage()
   return ('sum %g'):format(sum)
end
