-- fnn.conv1d/2d/3d(x, w, b, {activation = 'relu'}), nn.Conv1d/2d/3d(..., {activation = 'relu'}) and
-- Keras' Conv2D(..., {activation = 'relu'}): the relu in the convolution's own node (oneDNN's eltwise
-- post-op inside the kernel on the CPU, a pass after the direct and im2col kernels; the backward makes
-- dy = g relu'(y) from the saved output, then runs the convolution's). Held against the unfused
-- composition fnn.conv2d(x, w, b):relu(), values and the gradients of x, w and b, on the kernels'
-- paths (one oneDNN primitive, image slots, a 1-channel input, depthwise, 1-d and 3-d), both kernel
-- sets, under autocast; a gradcheck on inputs kept off relu's kink; the layers; errors. (Its ONNX
-- export, Conv then Relu, is onnx_spec's.)
local fnn = require 'fastnn'
local nn = fnn.nn

local has_onednn = not fnn.config().onednn:match('^not built')
local rel_diff = require('support').rel_diff
local err_of = require('support').err_of

-- y and the gradients of x, w (and b) under gy, the relu fused or not
local function run(op, x, w, b, opts, gy, fused)
   local px, pw, pb = fnn.Param(x), fnn.Param(w), b and fnn.Param(b)
   local o = {}
   for k, v in pairs(opts or {}) do o[k] = v end
   local y
   if fused then
      o.activation = 'relu'
      y = fnn[op](px:tensor(), pw:tensor(), pb and pb:tensor(), o)
   else
      y = fnn[op](px:tensor(), pw:tensor(), pb and pb:tensor(), o):relu()
   end
   y:float():backward(gy)
   return {y = y, dx = px:grad(), dw = pw:grad(), db = pb and pb:grad()}
end

-- op, x's shape, w's shape, bias, options
local CASES = {
   {'conv2d', {4, 8, 10, 10}, {16, 8, 3, 3}, true, {padding = 1}},          -- one oneDNN primitive
   {'conv2d', {5, 8, 9, 7}, {6, 8, 3, 3}, true, {stride = 2}},              -- image slots (5 images)
   {'conv2d', {3, 1, 12, 12}, {8, 1, 3, 3}, false, {padding = 1}},          -- a 1-channel input
   {'conv2d', {2, 6, 8, 8}, {12, 1, 3, 3}, true, {groups = 6, padding = 1}}, -- depthwise x2
   {'conv2d', {2, 4, 7, 7}, {6, 2, 1, 1}, true, {groups = 2}},               -- 1x1, groups
   {'conv1d', {3, 5, 17}, {7, 5, 3}, true, {padding = 'causal', dilation = 2}},
   {'conv3d', {2, 3, 5, 6, 5}, {4, 3, 2, 3, 2}, true, {padding = 1}},
   {'conv2d', {6, 9, 8}, {4, 6, 3, 3}, true, {padding = 'same'}},            -- unbatched
}

local function inputs(c)
   local x = fnn.randn(c[2])
   local fan = 1
   for i = 2, #c[3] do fan = fan * c[3][i] end
   local w = fnn.randn(c[3]) / math.sqrt(fan)
   local b = c[4] and fnn.randn(c[3][1]) * 0.5 or nil
   local y = fnn[c[1]](x, w, b, c[5])
   return x, w, b, fnn.randn(y:shape())
end

-- the fused results against the unfused: within tol (0: the same values)
local function check(c, tol)
   local x, w, b, gy = inputs(c)
   local f, u = run(c[1], x, w, b, c[5], gy, true), run(c[1], x, w, b, c[5], gy, false)
   local label = ('%s %s * %s'):format(c[1], fnn.shape_str(x), fnn.shape_str(w))
   assert.same(u.y:shape(), f.y:shape(), label)
   local y = f.y:float():to_flat()
   local negative, zero = 0, 0
   for i = 1, #y do
      if y[i] < 0 then negative = negative + 1 end
      if y[i] == 0 then zero = zero + 1 end
   end
   assert.equals(0, negative, label .. ': a negative output')
   assert(zero > 0 and zero < #y, label .. ': the relu should cut some outputs and keep others')
   for _, k in ipairs{'y', 'dx', 'dw', 'db'} do
      if u[k] then
         local d = rel_diff(u[k]:float(), f[k]:float())
         assert(d <= tol, ('%s: %s differs from the unfused by %.3g'):format(label, k, d))
      else
         assert.is_nil(f[k], label .. ': a gradient for an absent bias')
      end
   end
   return f
end

describe('a convolution with activation relu', function()
   it('gives the values and gradients of conv then relu, on every kernel path', function()
      fnn.manual_seed(21)
      for _, c in ipairs(CASES) do check(c, 1e-6) end
   end)

   it("runs inside oneDNN's convolution kernel as its post-op (oneDNN's own log says so)", function()
      if not has_onednn or fnn.get_kernels() ~= 'onednn' then
         assert.equals('portable', fnn.get_kernels())   -- the portable kernels: the pass after im2col, above
         return
      end
      local P = require 'spec.process'
      local script = P.tmpname('.lua')
      P.write_file(script, [[
package.path = './lua/?.lua;./lua/?/init.lua;' .. package.path
local fnn = require 'fastnn'
local y = fnn.conv2d(fnn.randn(4, 8, 10, 10), fnn.randn(16, 8, 3, 3), fnn.randn(16), {padding = 1, activation = 'relu'})
io.write(y:min():item() >= 0 and 'relu held\n' or 'a negative output\n')
]])
      local p = io.popen('ONEDNN_VERBOSE=1 luajit ' .. P.quote(script) .. ' 2>&1')
      local out = p:read('*a')
      p:close()
      os.remove(script)
      assert.matches('relu held', out, 1, true)
      -- the forward primitive ran, with the relu in its attributes (no im2col fallback, no pass after)
      assert.matches('convolution,[^\n]*forward_training[^\n]*attr%-post%-ops:eltwise_relu', out)
   end)

   it('without a graph gives the same values (no output kept)', function()
      fnn.manual_seed(22)
      for _, c in ipairs(CASES) do
         local x, w, b = inputs(c)
         local o = {activation = 'relu'}
         for k, v in pairs(c[5]) do o[k] = v end
         local want = fnn[c[1]](x, w, b, c[5]):relu()
         assert(rel_diff(want, fnn[c[1]](x, w, b, o)) <= 1e-6, c[1])
         assert(rel_diff(want, fnn[c[1]](x, w, b, o)) <= 1e-6, c[1])
      end
   end)

   it('both kernel sets (oneDNN and portable) give the unfused values and gradients', function()
      if not has_onednn then
         assert.equals('portable', fnn.get_kernels())   -- the cases above ran the portable kernels
         return
      end
      local got = {}
      for _, kernels in ipairs{'onednn', 'portable'} do
         fnn.set_kernels(kernels)
         fnn.manual_seed(23)
         got[kernels] = {}
         for i = 1, 3 do got[kernels][i] = check(CASES[i], 1e-6) end
      end
      fnn.set_kernels('onednn')
      for i = 1, 3 do
         for _, k in ipairs{'y', 'dx', 'dw'} do
            assert(rel_diff(got.onednn[i][k], got.portable[i][k]) <= 1e-5, ('case %d: %s differs between the kernel sets'):format(i, k))
         end
      end
   end)

   it('under autocast: a bfloat16 output, the unfused bits', function()
      fnn.manual_seed(24)
      for i = 1, 3 do
         local c = CASES[i]
         local x, w, b, gy = inputs(c)
         local f, u = fnn.autocast('bf16', function()
            return run(c[1], x, w, b, c[5], gy, true), run(c[1], x, w, b, c[5], gy, false)
         end)
         assert.equals('bfloat16', f.y:dtype())
         -- relu commutes with rounding to bfloat16 (both keep the sign and 0): the same bits
         assert.same(u.y:float():to_flat(), f.y:float():to_flat())
         for _, k in ipairs{'dx', 'dw', 'db'} do
            if u[k] then assert(rel_diff(u[k], f[k]) <= 1e-6, k) end
         end
      end
   end)

   it('passes gradcheck on inputs kept off the kink at 0, on every kernel path', function()
      -- x and w in eighths, the bias 1/128 past a multiple of 1/64: every pre-activation (a multiple of
      -- 1/64 plus the bias, exact in float32) lies at least 1/128 from 0, beyond the steps of 1e-3
      local eighths = require('support').eighths
      for i, c in ipairs(CASES) do
         if c[4] then
            local small = {}   -- the case's geometry at batch 2 (or unbatched) and a few positions
            for k, v in ipairs(c[2]) do small[k] = v end
            if #small == #c[3] then small[1] = math.min(small[1], 2) end
            local o = {activation = 'relu'}
            for k, v in pairs(c[5]) do o[k] = v end
            local ok, report = fnn.gradcheck(function(x, w, b) return fnn[c[1]](x, w, b, o) end,
               {eighths(small), eighths(c[3]), eighths{c[3][1]} + 1 / 128}, {eps = 1e-3, atol = 1e-2, rtol = 1e-2})
            assert(ok, ('case %d (%s): %s'):format(i, c[1], tostring(report)))
         end
      end
   end)

   it('is an option of nn.Conv1d/2d/3d, printed, and of Keras\' Conv2D (one node), as Dense\'s is', function()
      fnn.manual_seed(25)
      local layer = nn.Conv2d(3, 5, 3, {padding = 1, activation = 'relu'})
      assert.matches('relu', tostring(layer))
      local plain = nn.Conv2d(3, 5, 3, {padding = 1})
      plain.weight, plain.bias = layer.weight, layer.bias
      local x = fnn.randn(2, 3, 6, 6)
      assert(rel_diff(plain(x):relu(), layer(x)) <= 1e-6)
      assert.equals('conv2d', layer(x):grad_fn())   -- one node: no relu after it
      assert.same({2, 4, 5}, nn.Conv1d(3, 4, 5, {activation = 'relu'})(fnn.randn(2, 3, 9)):shape())
      assert.same({2, 4, 2, 2, 2}, nn.Conv3d(3, 4, 2, {activation = 'none'})(fnn.randn(2, 3, 3, 3, 3)):shape())
      -- Keras: the relu goes into the inner Conv2d's node, the same numbers as the composition
      local k = nn.Conv2D(5, 3, {padding = 'same', activation = 'relu'})
      local yk = k(x)
      assert.equals('relu', k.inner.spec.act)
      assert.equals('conv2d', yk:grad_fn())
      local ref = fnn.conv2d(x, k.inner.weight:tensor(), k.inner.bias:tensor(), {padding = 1}):relu()
      assert(rel_diff(ref, yk) <= 1e-6)
      assert.matches('relu', tostring(k))
      -- and Dense: relu and gelu in the Linear's node, the numbers of the composition
      for _, act in ipairs{'relu', 'gelu'} do
         local d = nn.Dense(6, act)
         local v = fnn.randn(4, 5)
         local yd = d(v)
         assert.equals('linear', yd:grad_fn())
         assert(rel_diff(fnn.linear(v, d.inner.weight:tensor(), d.inner.bias:tensor())[act](
            fnn.linear(v, d.inner.weight:tensor(), d.inner.bias:tensor())), yd) <= 1e-6, act)
      end
   end)

   it('refuses another activation, and a transposed convolution\'s, at the caller\'s line', function()
      local x, w = fnn.randn(1, 2, 4, 4), fnn.randn(3, 2, 3, 3)
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = fnn.conv2d(x, w, nil, {activation = 'gelu'}) end)
      assert.matches(('conv_activation_spec.lua:%d: fnn.conv2d: activation'):format(line), err, 1, true)
      assert.matches("'gelu'", err, 1, true)
      assert.matches("unknown option 'activation'",
                     err_of(function() local _ = fnn.conv_transpose2d(x, fnn.randn(2, 3, 3, 3), nil, {activation = 'relu'}) end),
                     1, true)
      assert.matches("activation", err_of(function() local _ = nn.Conv2d(2, 3, 3, {activation = 'tanh'}) end), 1, true)
      assert.matches("unknown option 'activation'",
                     err_of(function() local _ = nn.ConvTranspose2d(2, 3, 3, {activation = 'relu'}) end), 1, true)
   end)
end)
