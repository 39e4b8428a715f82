-- tiny_ops: per-op dispatch overhead, the counterpart of reference/tiny_ops.py.
-- (a) 100,000 out-of-place adds of two float32 [16] tensors under fnn.no_grad -> us per op
-- (b) 2,000 SGD(lr 0.01) steps of an MLP 32-32-32-1 (ReLU) on a fixed batch of 8 -> us per step
-- Both use the host language's own loop, which is part of the time (../shared/bench/WORKLOADS.md).
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn

local NAME, NADD, NSTEP = 'tiny_ops', 100000, 2000

B.main(NAME, function()
   B.setup_threads(NAME)
   fnn.manual_seed(0)

   -- (a) elementwise add, no autograd
   local a, b = fnn.randn(16), fnn.randn(16)
   local add_s = fnn.no_grad(function()
      local c = a + b                              -- warm-up, untimed
      local t0 = B.now()
      for _ = 1, NADD do
         c = a + b
      end
      return B.now() - t0
   end)
   local add_us = add_s / NADD * 1e6

   -- (b) tiny MLP training steps. The nn and optim modules may not exist yet;
   -- then (a) is still reported and (b) is "not yet".
   local nn, optim
   local missing = B.check{
      {'fastnn.nn', function() nn = fnn.nn; return nn end},
      {'nn.Linear', function() return nn.Linear end},
      {'nn.ReLU', function() return nn.ReLU end},
      {'nn.Sequential', function() return nn.Sequential end},
      {'nn.mse (or fnn.mse_loss)', function() return B.pick(function() return nn.mse end,
                                                             function() return fnn.mse_loss end) end},
      {'fastnn.optim', function() optim = fnn.optim; return optim end},
      {'optim.SGD', function() return optim.SGD end},
   }
   local step_s, loss
   if not missing then
      local good, err = xpcall(function()
         local mse = B.pick(function() return nn.mse end, function() return fnn.mse_loss end)
         local model = nn.Sequential()
         model:add(nn.Linear(32, 32)); model:add(nn.ReLU())
         model:add(nn.Linear(32, 32)); model:add(nn.ReLU())
         model:add(nn.Linear(32, 1))
         local opt = optim.SGD(model:parameters(), 0.01)
         local x, y = fnn.randn(8, 32), fnn.randn(8, 1)

         local function train_step()
            opt:zero_grad()
            local l = mse(model:forward(x), y)
            l:backward()
            opt:step()
            return l
         end

         train_step()                              -- warm-up, untimed
         local t0 = B.now()
         for _ = 1, NSTEP do
            loss = train_step()
         end
         step_s = B.now() - t0
      end, debug.traceback)
      if not good then
         if not B.is_missing(err) then error(err, 0) end
         io.stderr:write(tostring(err), '\n')
         missing = tostring(err):match('^[^\n]*')
      end
   end

   if missing then
      print(('# add: %d ops in %.4fs = %.3f us/op'):format(NADD, add_s, add_us))
      B.result(NAME, {'add_us_per_op', add_us, 'us'})
      print('NOTYET mlp_us_per_step: ' .. missing)
      return
   end
   local step_us = step_s / NSTEP * 1e6
   print(('# add: %d ops in %.4fs = %.3f us/op; mlp: %d steps in %.4fs = %.2f us/step, last_loss=%.4f'):format(
      NADD, add_s, add_us, NSTEP, step_s, step_us, loss:item()))
   B.result(NAME, {'add_us_per_op', add_us, 'us'}, {'mlp_us_per_step', step_us, 'us'})
end)
