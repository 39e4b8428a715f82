-- the convolutions on bfloat16 in C (core/ops/conv.c's entry and CPU rows): a bfloat16 x (and w, b) is
-- widened exactly, the products are the float32 op's (rounded operands under bf16 precision or
-- autocast: oneDNN's emulated path or im2col's fnn_gemm_prec, told the widened operands are exact), and
-- the float32 result is rounded into a bfloat16 output where precision.lua's rule says so (inside
-- fnn.autocast, or every float input bfloat16). Held BIT FOR BIT to the composition that ran before it,
-- the wrapper's: the op on the widened operands (x:bf16():float()), then :bf16() where the rule narrows
-- (autocast's rounded products are set_float32_precision('bf16')'s), forward and gradients, over
-- conv1d/2d/3d and conv_transpose1d/2d/3d with odd shapes, strides, dilation, groups, depthwise,
-- 1x1, 1-channel inputs, both kernel sets and 1 and 2 threads.
local fnn = require 'fastnn'
local nn = fnn.nn

local KERNELS = require('support').bf16_kernels(after_each)   -- which puts the defaults back after each case

local same = require('support').same_tensor

local MODES = require('support').BF16_MODES

-- op, x's shape, w's shape, options, bias; odd sizes throughout. The 1-channel conv2d's weight gradient
-- runs im2col under the oneDNN kernels (conv_onednn.c refuses its padded src layout), the depthwise ones
-- the direct kernels under the portable ones, the [4, 16, 14, 14] one oneDNN's blocked primitives with
-- the images split over 2 threads
local CASES = {
   {'conv2d', {2, 3, 7, 6}, {4, 3, 3, 3}, {padding = 1}, true},
   {'conv2d', {3, 4, 9, 8}, {6, 2, 3, 3}, {stride = 2, padding = 1, groups = 2}, true},
   {'conv2d', {2, 3, 8, 7}, {6, 1, 3, 3}, {groups = 3, padding = 1}, true},            -- depthwise x2
   {'conv2d', {3, 1, 12, 11}, {8, 1, 3, 3}, {padding = 1}, true},                      -- 1 input channel
   {'conv2d', {2, 4, 5, 6}, {3, 4, 1, 1}, nil, false},                                 -- 1x1
   {'conv2d', {3, 6, 5}, {2, 3, 3, 3}, {padding = {1, {0, 1}}, dilation = {1, 2}, groups = 1}, true},  -- unbatched
   {'conv2d', {4, 16, 14, 14}, {32, 16, 3, 3}, {padding = 1}, true},
   {'conv1d', {2, 4, 17}, {6, 2, 3}, {stride = 2, padding = {{2, 1}}, dilation = 2, groups = 2}, true},
   {'conv1d', {3, 2, 13}, {5, 2, 4}, {padding = 'causal'}, false},
   {'conv3d', {2, 2, 4, 5, 4}, {3, 2, 2, 3, 2}, {stride = {1, 2, 1}, padding = {1, 0, 1}}, true},
   {'conv_transpose1d', {2, 3, 9}, {3, 4, 3}, {stride = 2, padding = 1, output_padding = 1}, true},
   {'conv_transpose2d', {2, 4, 5, 4}, {4, 2, 3, 3}, {stride = 2, padding = 1, output_padding = 1, groups = 2}, true},
   {'conv_transpose2d', {2, 3, 3, 3}, {3, 1, 2, 2}, {stride = 2, groups = 3}, false},  -- depthwise
   {'conv_transpose2d', {2, 1, 6, 5}, {1, 5, 3, 3}, {padding = 1}, true},             -- 1 input channel
   {'conv_transpose3d', {2, 2, 3, 3, 2}, {2, 3, 2, 3, 2}, {stride = 2, padding = {1, 0, 1}, output_padding = 1},
    true},
}

-- out, and the gradients of x, w, b, of loss = sum(out r): native, the op as users call it on the
-- bfloat16 tensors; else the composition (widened operands, the float32 op, :bf16() where it narrows)
local function run(mode, native, c, x0, w0, b0, r)
   local px, pw, pb = nn.Param(x0), nn.Param(w0), b0 and nn.Param(b0)
   local out
   local function step()
      local x, w, b = px:tensor(), pw:tensor(), pb and pb:tensor()
      if mode.x then x = native and x:bf16() or x:bf16():float() end
      if mode.wb then
         w = native and w:bf16() or w:bf16():float()
         b = b and (native and b:bf16() or b:bf16():float())
      end
      out = fnn[c[1]](x, w, b, c[4])
      if not native and mode.out == 'bfloat16' then out = out:bf16() end
      ;(out * r):sum():backward()
   end
   require('support').bf16_run(native, mode, step)
   return out, px:grad(), pw:grad(), pb and pb:grad()
end

local function label(c)
   return ('%s x %s w %s'):format(c[1], table.concat(c[2], 'x'), table.concat(c[3], 'x'))
end

describe('the convolutions on bfloat16', function()
   for _, mode in ipairs(MODES) do
      for _, kernels in ipairs(KERNELS) do
         for _, threads in ipairs{1, 2} do
            it(('%s, %s kernels, %d thread(s): the composition\'s bits, forward and gradients'):format(
               mode.name, kernels, threads), function()
               fnn.set_kernels(kernels)
               fnn.set_num_threads(threads)
               for ci, c in ipairs(CASES) do
                  fnn.manual_seed(ci)
                  local x0, w0 = fnn.randn(table.unpack(c[2])), fnn.randn(table.unpack(c[3])) * 0.3
                  local transposed = c[1]:find('transpose') ~= nil
                  local groups = c[4] and c[4].groups or 1
                  local b0 = c[5] and fnn.randn(transposed and c[3][2] * groups or c[3][1]) or nil
                  -- a float32 gradient with more bits than bf16: the backward rounds it itself
                  local r = fnn.randn(table.unpack(fnn[c[1]](x0, w0, b0, c[4]):shape()))
                  local what = label(c)
                  local y, gx, gw, gb = run(mode, true, c, x0, w0, b0, r)
                  local ry, rgx, rgw, rgb = run(mode, false, c, x0, w0, b0, r)
                  assert.equals(mode.out, y:dtype(), what)
                  -- one node, the convolution's own: no widening or narrowing node around it
                  assert.equals(c[1], y:grad_fn(), what)
                  same(y, ry, what .. ': output')
                  same(gx, rgx, what .. ': x gradient')
                  assert.equals('float32', gx:dtype())
                  same(gw, rgw, what .. ': w gradient')
                  assert.equals('float32', gw:dtype())
                  if gb then same(gb, rgb, what .. ': b gradient') end
               end
            end)
         end
      end
   end

   it('rounds what bf16 precision rounds: the ieee op on operands rounded beforehand, forward and dx, dw', function()
      -- independent of the composition (which runs the same entry): without bf16 units the products are
      -- the float32 kernels' on rounded operands, so the ieee op on operands rounded here gives the same
      -- bits (bf16 units sum in their own order: a float32 tolerance there). Catches an operand taken as
      -- exact (not rounded) that is not. Not depthwise: the portable depthwise kernels stay float32
      local emulated = fnn.config().bf16_path:match('^emulated') ~= nil
      local function check(got, want, what)
         if emulated then return same(got, want, what) end
         local d = (got:float() - want:float()):abs():max():item()
         assert(d <= 1e-5 * (want:float():abs():max():item() + 1), what .. (': off by %g'):format(d))
      end
      local function r16(t) return t:bf16():float() end
      local OPS = {{'conv2d', {3, 3, 7, 6}, {4, 3, 3, 3}, {padding = 1}},
                   {'conv_transpose2d', {3, 4, 5, 4}, {4, 2, 3, 3}, {stride = 2, padding = 1, groups = 2}}}
      for _, kernels in ipairs(KERNELS) do
         for _, threads in ipairs{1, 2} do
            fnn.set_kernels(kernels)
            fnn.set_num_threads(threads)
            for i, c in ipairs(OPS) do
               fnn.manual_seed(20 + i)
               local x, w = fnn.randn(table.unpack(c[2])), fnn.randn(table.unpack(c[3]))
               local r = fnn.randn(table.unpack(fnn[c[1]](x, w, nil, c[4]):shape()))
               local what = ('%s, %s kernels, %d thread(s)'):format(c[1], kernels, threads)
               local px, pw = nn.Param(x), nn.Param(w)
               fnn.set_float32_precision('bf16')
               local y = fnn[c[1]](px:tensor():bf16(), pw:tensor(), nil, c[4])   -- bf16 x, float32 w and out
               ;(y * r):sum():backward()
               fnn.set_float32_precision('ieee')
               local qx, qw = nn.Param(r16(x)), nn.Param(r16(w))
               local want = fnn[c[1]](qx:tensor(), qw:tensor(), nil, c[4])
               ;(want * r16(r)):sum():backward()
               check(y, want, what .. ': output')
               check(px:grad(), qx:grad(), what .. ': x gradient')
               check(pw:grad(), qw:grad(), what .. ': w gradient')
               -- autocast on float32 x and w: both rounded, the output rounded after
               local z = fnn.autocast('bf16', function() return fnn[c[1]](x, w, nil, c[4]) end)
               check(z, want:bf16(), what .. ': autocast output')
            end
         end
      end
   end)

   it('rounds in the backward what its own precision says, whatever the forward ran under', function()
      -- oneDNN's forward keeps its blocked copy of x for the backward weights: rounded under bf16
      -- precision, as it is under ieee. A backward under the other precision must not read it as
      -- its own x. Blocked layouts (16 channels), the images split over 2 threads or not
      local emulated = fnn.config().bf16_path:match('^emulated') ~= nil
      local function check(got, want, what)
         if emulated then return same(got, want, what) end
         local d = (got - want):abs():max():item()
         assert(d <= 1e-5 * (want:abs():max():item() + 1), what .. (': off by %g'):format(d))
      end
      local function r16(t) return t:bf16():float() end
      -- the ieee gradients of sum(conv2d(x, w) r) on the operands given
      local function grads(x, w, r)
         local px, pw = nn.Param(x), nn.Param(w)
         ;(fnn.conv2d(px:tensor(), pw:tensor(), nil, {padding = 1}) * r):sum():backward()
         return px:grad(), pw:grad()
      end
      fnn.manual_seed(31)
      local x, w = fnn.randn(4, 16, 10, 9), fnn.randn(32, 16, 3, 3) * 0.2
      local r = fnn.randn(4, 32, 10, 9)
      for _, kernels in ipairs(KERNELS) do
         for _, threads in ipairs{1, 2} do
            fnn.set_kernels(kernels)
            fnn.set_num_threads(threads)
            -- the same kernels and threads: the same order of the sums
            local want = {ieee = {grads(x, w, r)}, bf16 = {grads(r16(x), r16(w), r16(r))}}
            for _, order in ipairs{{'ieee', 'bf16'}, {'bf16', 'ieee'}} do
               local what = ('%s kernels, %d thread(s), forward %s, backward %s'):format(kernels, threads,
                                                                                       order[1], order[2])
               local px, pw = nn.Param(x), nn.Param(w)
               fnn.set_float32_precision(order[1])
               local y = fnn.conv2d(px:tensor(), pw:tensor(), nil, {padding = 1})
               fnn.set_float32_precision(order[2])
               ;(y * r):sum():backward()
               fnn.set_float32_precision('ieee')
               check(px:grad(), want[order[2]][1], what .. ': x gradient')
               check(pw:grad(), want[order[2]][2], what .. ': w gradient')
            end
         end
      end
   end)

   it('keeps the rule for non-contiguous operands: a transposed bf16 x, a bf16 bias at stride 2', function()
      fnn.manual_seed(3)
      local x, w, b = fnn.randn(2, 3, 6, 7):bf16(), fnn.randn(4, 3, 3, 2):bf16(), fnn.randn(4, 2):bf16()
      for _, kernels in ipairs(KERNELS) do
         fnn.set_kernels(kernels)
         local y = fnn.conv2d(x:transpose(3, 4), w, b:select(2, 1), {stride = {2, 1}})
         assert.equals('bfloat16', y:dtype())
         same(y, fnn.conv2d(x:transpose(3, 4):float(), w:float(), b:select(2, 1):float(), {stride = {2, 1}}):bf16(),
              kernels .. ': transposed')
         y = fnn.conv_transpose1d(x:select(4, 2):transpose(2, 3), fnn.randn(6, 2, 3):bf16())
         assert.equals('bfloat16', y:dtype())
      end
   end)

   it('saves x as given: the node holds the bf16 x, not a float32 copy of it (im2col kernels)', function()
      fnn.set_kernels('portable')   -- oneDNN's forward would keep its blocked copy of x besides
      fnn.manual_seed(4)
      local w = nn.Param(fnn.randn(2, 8, 1, 1))
      collectgarbage(); collectgarbage()
      local base = fnn.live_bytes()
      local x = fnn.randn(4, 8, 32, 32):bf16()   -- 64 KiB as bf16
      local y = fnn.conv2d(x, w:tensor())        -- float32 [4, 2, 32, 32]: 32 KiB
      x = nil
      collectgarbage(); collectgarbage()
      -- y and the saved bf16 x; the widening composition kept a float32 copy of x besides (128 KiB)
      local held = fnn.live_bytes() - base
      assert.is_true(held <= 65536 + 32768 + 4096, ('%d bytes held'):format(held))
      y:sum():backward()
      assert.same({2, 8, 1, 1}, w:grad():shape())
   end)

   it('refuses a bad output dtype code by the op\'s name', function()
      local ffi = require 'ffi'
      local C = require('fastnn.tensor').C
      local out = ffi.new('fnn_tensor')
      local x, w = fnn.randn(1, 2, 5, 5), fnn.randn(3, 2, 3, 3)
      assert.is_not.equals(0, C.fnn_conv_to(out, x, w, nil, 2, nil, nil, nil, 1, 1))
      assert.matches('conv2d: output dtype code 1 is not float32', ffi.string(C.fnn_last_error()), 1, true)
      assert.is_not.equals(0, C.fnn_conv_transpose_to(out, x, w:transpose(1, 2), nil, 2, nil, nil, nil, nil, 1, 7))
      assert.matches('conv_transpose2d: output dtype code 7', ffi.string(C.fnn_last_error()), 1, true)
   end)

   it('passes finite differences on the bf16 path (values exact in bf16, steps of 1/4)', function()
      -- x, w, b multiples of 1/8 in [-1/2, 1/2] and steps of 1/4: every operand and every sum of 8
      -- products is exact in bf16, so the difference quotients are exact and bf16's tolerances hold
      local eighths = require('support').eighths
      fnn.manual_seed(5)
      local opts = {eps = 0.25, atol = 2e-2, rtol = 2e-2}
      for _, kernels in ipairs(KERNELS) do
         fnn.set_kernels(kernels)
         local inputs = {eighths(2, 2, 4, 3), eighths(3, 2, 2, 2), eighths(3)}
         local ok, report = fnn.gradcheck(function(x, w, b)
            return fnn.conv2d(x:bf16(), w:bf16(), b:bf16(), {padding = 1}):float()
         end, inputs, opts)
         assert(ok, tostring(report))
         ok, report = fnn.gradcheck(function(x, w, b)
            return fnn.autocast('bf16', function() return fnn.conv2d(x:bf16(), w, b, {stride = 2}):float() end)
         end, inputs, opts)
         assert(ok, tostring(report))
         inputs = {eighths(2, 3, 5), eighths(3, 2, 3), eighths(2)}
         ok, report = fnn.gradcheck(function(x, w, b)
            return fnn.conv_transpose1d(x:bf16(), w:bf16(), b:bf16(), {stride = 2}):float()
         end, inputs, opts)
         assert(ok, tostring(report))
      end
   end)
end)

describe('the conv layers on bfloat16', function()
   -- each: a maker, an input shape, the grad_fn of its output
   local LAYERS = {
      {function() return nn.Conv2d(3, 5, 3, {padding = 1}) end, {2, 3, 7, 6}, 'conv2d'},
      {function() return nn.Conv1d(2, 4, 3, {padding = 1, padding_mode = 'reflect'}) end, {2, 2, 9}, 'conv1d'},
      {function() return nn.Conv3d(2, 3, 2) end, {1, 2, 4, 3, 5}, 'conv3d'},
      {function() return nn.ConvTranspose2d(3, 2, 3, {stride = 2}) end, {2, 3, 4, 5}, 'conv_transpose2d'},
      {function() return nn.DepthwiseConv2d(3, 3, {depth_multiplier = 2}) end, {2, 3, 6, 5}, 'conv2d'},
      {function() return nn.SeparableConv1d(3, 4, 3, {padding = 'same'}) end, {2, 3, 11}, 'conv1d'},
      {function() return nn.Conv2D(4, 3, {activation = 'relu'}) end, {2, 3, 6, 7}, 'conv2d'},   -- the relu in its node
      {function() return nn.Conv1DTranspose(2, 3) end, {2, 3, 8}, 'conv_transpose1d'},
   }
   for _, kernels in ipairs(KERNELS) do
      it(('follow their input: a bf16 x gives bf16 out (float32 parameters), made by the op itself (%s)'):format(
         kernels), function()
         fnn.set_kernels(kernels)
         fnn.manual_seed(7)
         for _, l in ipairs(LAYERS) do
            local m = l[1]()
            local x = fnn.randn(table.unpack(l[2]))
            m:forward(x)   -- the Keras layers build on their first input
            local y = m:forward(x:bf16())
            assert.equals('bfloat16', y:dtype(), tostring(m))
            assert.equals(l[3], y:grad_fn(), tostring(m))
            same(y, m:forward(x:bf16():float()):bf16(), tostring(m))
            local z = fnn.autocast('bf16', function() return m:forward(x) end)
            assert.equals('bfloat16', z:dtype(), tostring(m))
            assert.equals(l[3], z:grad_fn(), tostring(m))
            fnn.set_float32_precision('bf16')
            local rz = m:forward(x):bf16()
            fnn.set_float32_precision('ieee')
            same(z, rz, tostring(m) .. ' under autocast')
         end
      end)
   end
end)

describe('the convolutions under autocast', function()
   it('run with no float/bf16 conversion node in the forward or the backward (fnn.profile)', function()
      fnn.manual_seed(9)
      local model = nn.Sequential(nn.Conv2d(1, 4, 3, {padding = 1}), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(4, 6, 3), nn.ConvTranspose2d(6, 2, 2, {stride = 2}))
      local x = fnn.randn(2, 1, 10, 10)
      local report = fnn.profile(function()
         fnn.autocast('bf16', function()
            local y = model:forward(x)
            assert.equals('bfloat16', y:dtype())
            ;(y * fnn.randn(table.unpack(y:shape()))):sum():backward()
         end)
      end)
      local all = require('support').ops_without_casts(report)
      assert.matches('conv2d/forward', all, 1, true)
      assert.matches('conv_transpose2d/backward', all, 1, true)
      for _, p in ipairs(model:parameters()) do assert.equals('float32', p:grad():dtype()) end
   end)
end)
