-- nn_ops: forward + backward of one layer at a representative size for each layer family of
-- issue #8, the counterpart of bench/reference/nn_ops.py (same table, same timing): 2 warm-up
-- iterations, then the median ms of ITERS iterations of y = layer(x); y:backward(g), with x a
-- Param so the input gradient is computed as well as the weights'. A layer that does not exist
-- yet prints `NOTYET <metric>: <reason>` and the others still run.
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn

local NAME, ITERS = 'nn_ops', 20

B.main(NAME, function()
   B.setup_threads(NAME)
   local nn = fnn.nn
   fnn.manual_seed(0)
   -- metric, input shape, maker of the layer (a module or a function of x)
   local cases = {
      {'conv1d_ms', {32, 64, 256}, function() return nn.Conv1d(64, 64, 5, {padding = 2}) end},
      {'conv3d_ms', {8, 16, 16, 16, 16}, function() return nn.Conv3d(16, 32, 3, {padding = 1}) end},
      {'conv_transpose2d_ms', {16, 64, 16, 16},
       function() return nn.ConvTranspose2d(64, 32, 4, {stride = 2, padding = 1}) end},
      {'depthwise_conv2d_ms', {32, 64, 32, 32}, function() return nn.Conv2d(64, 64, 3, {padding = 1, groups = 64}) end},
      {'batch_norm2d_ms', {64, 64, 32, 32}, function() return nn.BatchNorm2d(64) end},
      {'group_norm_ms', {32, 64, 32, 32}, function() return nn.GroupNorm(8, 64) end},
      {'upsample_bilinear2d_ms', {16, 32, 32, 32}, function() return nn.UpSampling2d(2, {mode = 'bilinear'}) end},
   }
   local results = {}
   for _, case in ipairs(cases) do
      local metric, shape, make = case[1], case[2], case[3]
      local ok, layer = pcall(make)
      if not ok or layer == nil then
         io.write(('NOTYET %s: %s\n'):format(metric, (tostring(layer):gsub('\n', ' '))))
      else
         if layer.train then layer:train() end
         local px = fnn.Param(fnn.randn(shape))
         local g = fnn.no_grad(function() return fnn.randn(layer(px:tensor()):shape()) end)
         local params = layer.parameters and layer:parameters() or {}
         local function step()
            for _, p in ipairs(params) do p:zero_grad() end
            px:zero_grad()
            layer(px:tensor()):backward(g)
         end
         step(); step()
         local times = {}
         for i = 1, ITERS do
            local t0 = B.now()
            step()
            times[i] = (B.now() - t0) * 1e3
         end
         local ms = B.median(times)
         print(('# %s: input %s median %.3f ms over %d'):format(metric, fnn.shape_str(px:tensor()), ms, ITERS))
         results[#results + 1] = {metric, ms, 'ms'}
      end
   end
   if #results > 0 then B.result(NAME, unpack(results)) end
end)
