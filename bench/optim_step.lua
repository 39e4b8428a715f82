-- optim_step: one Adam step over 10 million parameters split into 100 tensors of 100,000, with
-- fixed gradients, the counterpart of bench/reference/optim_step.py (issue #9): the median ms of
-- ITERS steps (one fused C call per tensor, core/optim.c). PyTorch's default Adam is the target
-- and its fused=True figure is shown beside it.
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn

local NAME, NT, SIZE, ITERS = 'optim_step', 100, 100000, 20

B.main(NAME, function()
   B.setup_threads(NAME)
   fnn.manual_seed(0)
   local params = {}
   for i = 1, NT do
      params[i] = fnn.Param(fnn.randn(SIZE))
      params[i]:set_grad(fnn.randn(SIZE))
   end
   local opt = fnn.optim.Adam(params, 1e-3)
   opt:step()                                    -- warm-up: allocates the moments
   local times = {}
   for i = 1, ITERS do
      local t0 = B.now()
      opt:step()
      times[i] = (B.now() - t0) * 1e3
   end
   local ms = B.median(times)
   print(('# %d tensors x %d: %.3f ms per step'):format(NT, SIZE, ms))
   B.result(NAME, {'adam_step_ms', ms, 'ms'})
end)
