-- onednn_ops: fastnn's side of bench/onednn_ops.c: the same ops and shapes through the public Lua
-- API, timed the same way (median ms of ITERS runs, at least MIN_S seconds of them, after 3
-- warm-up runs), at fnn.set_num_threads(BENCH_THREADS or 2).
--
-- The input is an fnn.Param (as in training, so the forward records the autograd graph) and
-- layers are in training mode. fwd: y = op(x) alone. fwdbwd: zero the grads, y = op(x),
-- y:backward(g). fastnn's backward runs through autograd and cannot be timed alone: bwd is the
-- difference of the two medians (fwdbwd - fwd), printed as such.
--
--   build/fastnn-lua bench/onednn_ops.lua [ITERS]
-- Output: `RESULT fastnn_<op>_<pass> ms=<median> min=<fastest run>`.
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn
local nn = fnn.nn

local ITERS, MIN_S, WARMUP = tonumber(arg[1]) or 30, 0.5, 3

local function timeit(fn)
   for _ = 1, WARMUP do fn() end
   local times, t_start = {}, B.now()
   while #times < ITERS or (B.now() - t_start < MIN_S and #times < 1000) do
      local t0 = B.now()
      fn()
      times[#times + 1] = (B.now() - t0) * 1e3
   end
   return B.median(times), math.min(unpack(times))
end

local function report(name, pass, ms, min)
   if min then
      io.write(('RESULT fastnn_%s_%s ms=%.4f min=%.4f\n'):format(name, pass, ms, min))
   else
      io.write(('RESULT fastnn_%s_%s ms=%.4f\n'):format(name, pass, ms))
   end
   io.stdout:flush()
end

B.main('onednn_ops', function()
   B.setup_threads('onednn_ops')
   fnn.manual_seed(0)
   -- name, input shape, maker of the op (a module or a function of x, returning y)
   local cases = {
      {'gelu', {2048, 512}, function() return function(x) return x:gelu() end end},
      {'layer_norm', {2048, 128}, function() return nn.LayerNorm(128) end},
      {'softmax', {8192, 64}, function() return function(x) return x:softmax(2) end end},
      {'batch_norm2d', {64, 64, 32, 32}, function() return nn.BatchNorm2d(64) end},
      {'max_pool2d', {32, 64, 32, 32}, function() return function(x) return fnn.max_pool2d(x, 2) end end},
      -- batch-first [N, T, I]; the output is the whole sequence [N, T, H], h0 = c0 = 0
      {'lstm', {32, 50, 64}, function()
         local m = nn.LSTM(64, 256)
         return function(x) return (m:forward(x)) end, m
      end},
   }
   for _, case in ipairs(cases) do
      local name, shape = case[1], case[2]
      local ok, op, mod = pcall(case[3])
      if not ok then
         io.write(('ERROR fastnn_%s: %s\n'):format(name, (tostring(op):gsub('\n', ' '))))
      else
         mod = mod or (type(op) == 'table' and op) or nil
         if mod and mod.train then mod:train() end
         local f = type(op) == 'table' and function(x) return op:forward(x) end or op
         local params = mod and mod.parameters and mod:parameters() or {}
         local px = fnn.Param(fnn.randn(shape))
         local g = fnn.no_grad(function() return fnn.randn(f(px:tensor()):shape()) end)
         local fwd, fmin = timeit(function() f(px:tensor()) end)
         local both, bmin = timeit(function()
            for _, p in ipairs(params) do p:zero_grad() end
            px:zero_grad()
            f(px:tensor()):backward(g)
         end)
         report(name, 'fwd', fwd, fmin)
         report(name, 'bwd', both - fwd)   -- fwdbwd - fwd, not timed alone
         report(name, 'fwdbwd', both, bmin)
      end
   end
end)
