-- spec/hosts/threads_worker.lua: what each thread of threads_host runs in its own lua_State
-- (spec/host_threads_spec.lua). Returns a function(id, rounds) -> one line of figures that
-- depend only on id: the host runs it on its main thread first, then in all threads at once, and
-- every thread's line must equal its single-thread line.
--   draws: fnn.randn after fnn.manual_seed(1000 + id), several rounds (the random state is per thread)
--   infer: a Linear-ReLU-Linear model (weights drawn from seed 7: the same in every thread) on an
--          input made from id, under fnn.no_grad: no graph may be recorded
--   grad:  the same model with grad on, backward, the weight gradients' sums (another thread is in
--          no_grad meanwhile: the flag is per thread)
--   error: a shape error naming this thread's shapes (the message slot is per thread)
local fnn = require 'fastnn'
local nn = fnn.nn

return function(id, rounds)
   fnn.manual_seed(7)
   local model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
   local x = fnn.arange(0, 8 * 16):float():reshape(8, 16) / 128 - 0.5 + id / 10
   local draws, infer, grad = 0, 0, 0
   for round = 1, rounds do
      fnn.manual_seed(1000 * id + round)
      local r = fnn.randn(257)                     -- odd: the spare normal of Box-Muller carries over
      draws = draws + r:sum():item() + fnn.rand(3):sum():item()

      local y = fnn.no_grad(function()
         assert(not fnn.is_grad_enabled(), 'no_grad is off inside no_grad')
         local out = model:forward(x)
         assert(out:grad_fn() == nil, 'a graph was recorded under no_grad')
         return out
      end)
      assert(fnn.is_grad_enabled(), 'grad mode did not come back after no_grad')
      infer = infer + y:sum():item()

      model:zero_grad()
      local out = model:forward(x)
      assert(out:grad_fn() ~= nil, 'no graph was recorded with grad on')
      out:sum():backward()
      for _, p in ipairs(model:parameters()) do grad = grad + p:grad():sum():item() end

      local ok, err = pcall(function() return fnn.ones(id + 1, 2) + fnn.ones(id + 2, 3) end)
      assert(not ok, 'a shape error was not raised')
      local want = ('[%d,2]'):format(id + 1)
      assert(err:find(want, 1, true) and err:find(('[%d,3]'):format(id + 2), 1, true),
             'thread ' .. id .. ' got another thread\'s error: ' .. err)
   end
   return ('draws %.9g infer %.9g grad %.9g'):format(draws, infer, grad)
end
