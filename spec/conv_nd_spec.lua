-- conv1d, conv3d and the padding modes of every convolution (core/ops/conv.c), the direct
-- depthwise kernels (core/ops/conv_depthwise.c), against the direct loops of spec/conv_reference.lua:
-- stride, dilation, groups, per-side padding, 'same' (stride 1 and 2), 'valid', 'causal', odd
-- sizes, unbatched and non-contiguous inputs, batches split over threads; gradients against the
-- adjoint loops; output shapes for a table of configurations; the layers nn.Conv1d, nn.Conv3d,
-- nn.DepthwiseConv1d/2d, nn.SeparableConv1d/2d; and the errors, at the caller's line.
local fnn = require 'fastnn'
local nn = fnn.nn
local ref = require 'conv_reference'
local support = require 'support'
local err_of = support.err_of

-- float32 sums of up to a few hundred products: 1e-4 relative (absolute below 1)
local function approx(expected, t, tol) return support.approx(expected, t, tol or 1e-4) end

local function check_values(op, cfg)
   fnn.manual_seed(cfg.seed or 1)
   local x, w = fnn.randn(cfg.x), fnn.randn(cfg.w)
   local b = cfg.bias ~= false and fnn.randn(cfg.w[1]) or nil
   local y = fnn[op](x, w, b, cfg.opts)
   local expected, shape = ref.values(ref.conv_each, x, w, b, cfg.ref)
   assert.same(shape, y:shape())
   approx(expected, y)
end

local function check_grads(op, cfg)
   fnn.manual_seed(cfg.seed or 2)
   local px, pw, pb = fnn.Param(fnn.randn(cfg.x)), fnn.Param(fnn.randn(cfg.w)), fnn.Param(fnn.randn(cfg.w[1]))
   local y = fnn[op](px:tensor(), pw:tensor(), pb:tensor(), cfg.opts)
   local gy = fnn.randn(y:shape())
   y:backward(gy)
   local dx, dw, db = ref.grads(ref.conv_each, px:tensor(), pw:tensor(), cfg.ref, gy)
   approx(dx, px:grad(), cfg.grad_tol)
   approx(dw, pw:grad(), cfg.grad_tol)
   approx(db, pb:grad(), cfg.grad_tol)
end

-- ---------------------------------------------------------------------------

describe('conv1d', function()
   local configs = {
      {name = 'plain, odd length', x = {2, 3, 11}, w = {4, 3, 3}, opts = {}, ref = {}},
      {name = 'stride 2, padding 1', x = {2, 3, 10}, w = {5, 3, 4}, opts = {stride = 2, padding = 1},
       ref = {stride = {2}, pad = {1}}},
      {name = 'dilation 3, stride 3', x = {1, 2, 17}, w = {3, 2, 3}, opts = {dilation = 3, stride = 3},
       ref = {stride = {3}, dil = {3}}},
      {name = 'groups 2, no bias', x = {2, 4, 9}, w = {6, 2, 3}, opts = {groups = 2, padding = {2}}, bias = false,
       ref = {groups = 2, pad = {2}}},
      {name = 'per-side padding {{3, 0}}', x = {2, 2, 7}, w = {3, 2, 3}, opts = {padding = {{3, 0}}},
       ref = {pad = {{3, 0}}}},
      {name = "'valid'", x = {1, 2, 9}, w = {2, 2, 5}, opts = {padding = 'valid'}, ref = {}},
      {name = 'kernel as long as the input', x = {2, 3, 6}, w = {2, 3, 6}, opts = {}, ref = {}},
      {name = 'pointwise (1x1)', x = {3, 4, 7}, w = {5, 4, 1}, opts = {}, ref = {}},
      {name = 'pointwise with stride 2', x = {2, 3, 9}, w = {2, 3, 1}, opts = {stride = 2}, ref = {stride = {2}}},
      -- dw sums 16 x 256 products: in float, in oneDNN's order (one chain per output), a cancelled
      -- sum lands ~1e-4 from the double loops (0.05767 against 0.05756), so 3e-4 for the gradients
      {name = 'a batch split over threads', x = {16, 8, 256}, w = {8, 8, 5}, opts = {padding = 2}, ref = {pad = {2}},
       grad_tol = 3e-4},
   }
   for _, cfg in ipairs(configs) do
      it('matches the direct loops: ' .. cfg.name, function() check_values('conv1d', cfg) end)
   end

   it('computes the gradients of x, w and b of the adjoint loops', function()
      for _, i in ipairs{2, 3, 4, 5, 8, 10} do check_grads('conv1d', configs[i]) end
   end)

   it("pads 'same' with stride 1 as PyTorch (the odd pad at the end) and with stride 2 as TensorFlow", function()
      fnn.manual_seed(3)
      for _, c in ipairs{{n = 9, k = 3, s = 1, d = 1}, {n = 8, k = 4, s = 1, d = 1}, {n = 7, k = 2, s = 1, d = 3},
                         {n = 9, k = 3, s = 2, d = 1}, {n = 8, k = 4, s = 2, d = 1}, {n = 8, k = 3, s = 3, d = 1},
                         {n = 10, k = 1, s = 2, d = 1}, {n = 11, k = 3, s = 2, d = 2}} do
         local x, w, b = fnn.randn(2, 3, c.n), fnn.randn(4, 3, c.k), fnn.randn(4)
         local y = fnn.conv1d(x, w, b, {padding = 'same', stride = c.s, dilation = c.d})
         assert.same({2, 4, math.ceil(c.n / c.s)}, y:shape())
         local pad = ref.same_pad(c.n, c.k, c.s, c.d)
         approx((ref.values(ref.conv_each, x, w, b, {stride = {c.s}, dil = {c.d}, pad = {pad}})), y)
      end
      -- the rule's pads, spelled out: 8 by 3 with stride 3 -> 3 outputs, total pad 1, all of it after
      assert.same({0, 1}, ref.same_pad(8, 3, 3, 1))
      assert.same({1, 2}, ref.same_pad(8, 4, 1, 1))
   end)

   it("pads 'causal' with dilation (k - 1) on the left: the output keeps the length, each step sees its past", function()
      fnn.manual_seed(4)
      local x, w, b = fnn.randn(2, 3, 9), fnn.randn(4, 3, 3), fnn.randn(4)
      local y = fnn.conv1d(x, w, b, {padding = 'causal', dilation = 2})
      assert.same({2, 4, 9}, y:shape())
      approx((ref.values(ref.conv_each, x, w, b, {dil = {2}, pad = {{4, 0}}})), y)
      -- changing x at step 6 leaves steps 1..5 unchanged and changes step 6
      local bumped = x:to_flat()
      for c = 0, 2 do bumped[c * 9 + 6] = bumped[c * 9 + 6] + 1 end
      local y2 = fnn.conv1d(fnn.tensor(bumped, {2, 3, 9}), w, b, {padding = 'causal', dilation = 2})
      local a, c = y:to_flat(), y2:to_flat()
      for o = 0, 3 do
         for t = 1, 5 do assert.equals(a[o * 9 + t], c[o * 9 + t]) end
         assert.is_true(a[o * 9 + 6] ~= c[o * 9 + 6])
      end
      -- with a stride the causal output is ceil-free: (L + d(k-1) - d(k-1) - 1) / s + 1
      assert.same({2, 4, 5}, fnn.conv1d(x, w, nil, {padding = 'causal', stride = 2}):shape())
   end)

   it('gives PyTorch output sizes for a table of configurations', function()
      local cases = {   -- input length, kernel, options, output length
         {10, 3, {}, 8}, {10, 3, {padding = 1}, 10}, {10, 3, {stride = 2}, 4}, {10, 3, {stride = 2, padding = 1}, 5},
         {10, 3, {dilation = 2}, 6}, {10, 4, {padding = 'same'}, 10}, {10, 4, {padding = 'same', stride = 3}, 4},
         {10, 4, {padding = 'causal'}, 10}, {10, 4, {padding = {{2, 0}}}, 9}, {1, 1, {}, 1}, {5, 5, {}, 1},
         {5, 3, {padding = 'valid', stride = 5}, 1}, {7, 2, {stride = 2, dilation = 3}, 2},
      }
      for _, c in ipairs(cases) do
         local y = fnn.conv1d(fnn.ones(1, 2, c[1]), fnn.ones(3, 2, c[2]), nil, c[3])
         assert.same({1, 3, c[4]}, y:shape())
      end
   end)

   it('takes unbatched [C, L] and non-contiguous inputs, as a tensor method too', function()
      fnn.manual_seed(5)
      local x, w, b = fnn.randn(3, 7), fnn.randn(2, 3, 3), fnn.randn(2)
      local y = x:conv1d(w, b, {padding = 1})
      assert.same({2, 7}, y:shape())
      approx((ref.values(ref.conv_each, x:reshape(1, 3, 7), w, b, {pad = {1}})), y)
      local xt = fnn.randn(2, 8, 3):transpose(2, 3)   -- [2,3,8], strided
      assert.is_false(xt:is_contiguous())
      approx((ref.values(ref.conv_each, xt:contiguous(), w, nil, {stride = {2}})), fnn.conv1d(xt, w, nil, {stride = 2}))
   end)

   it('refuses mismatched channels, naming both shapes, at the caller\'s line', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = fnn.conv1d(fnn.ones(2, 3, 8), fnn.ones(4, 2, 3)) end)
      assert.equals(('spec/conv_nd_spec.lua:%d: conv1d: input [2,3,8] has 3 channels, weight [4,2,3] expects 2 (groups 1)')
                    :format(line), err)
      assert.matches('conv1d: input %[2,3,8%] has 3 channels, not divisible by groups 2',
                     err_of(function() local _ = fnn.conv1d(fnn.ones(2, 3, 8), fnn.ones(4, 1, 3), nil, {groups = 2}) end))
      assert.matches('conv1d: weight %[3,2,3%] has 3 output channels, not divisible by groups 2',
                     err_of(function() local _ = fnn.conv1d(fnn.ones(2, 4, 8), fnn.ones(3, 2, 3), nil, {groups = 2}) end))
      assert.matches('conv1d: groups 0 must be positive',
                     err_of(function() local _ = fnn.conv1d(fnn.ones(2, 4, 8), fnn.ones(3, 2, 3), nil, {groups = 0}) end))
   end)

   it('refuses a kernel larger than the padded input, zero or negative sizes and bad padding', function()
      local x, w = fnn.ones(1, 2, 4), fnn.ones(3, 2, 3)
      assert.matches('conv1d: kernel 3 %(dilation 2%) is larger than the padded input 4 %(input %[1,2,4%], padding 0%)',
                     err_of(function() local _ = fnn.conv1d(x, w, nil, {dilation = 2}) end))
      assert.matches('conv1d: kernel 3 %(dilation 3%) is larger than the padded input 6 %(input %[1,2,4%], padding %(2,0%)%)',
                     err_of(function() local _ = fnn.conv1d(x, w, nil, {dilation = 3, padding = {{2, 0}}}) end))
      assert.matches('conv1d: stride 0 must be positive', err_of(function() local _ = fnn.conv1d(x, w, nil, {stride = 0}) end))
      assert.matches('conv1d: dilation %-1 must be positive',
                     err_of(function() local _ = fnn.conv1d(x, w, nil, {dilation = -1}) end))
      assert.matches('conv1d: padding %(1,%-1%) must not be negative',
                     err_of(function() local _ = fnn.conv1d(x, w, nil, {padding = {{1, -1}}}) end))
      assert.matches('conv1d: weight %[3,2,0%] has an empty kernel',
                     err_of(function() local _ = fnn.conv1d(x, fnn.ones(3, 2, 0)) end))
      assert.matches('conv1d: input %[1,2,0%] has an empty spatial size 0',
                     err_of(function() local _ = fnn.conv1d(fnn.ones(1, 2, 0), w, nil, {padding = 2}) end))
      assert.matches("conv1d: padding is 'full', expected an integer, a table {l} %(an entry may be {before, after}%), "
                     .. "'valid', 'same' or 'causal'",
                     err_of(function() local _ = fnn.conv1d(x, w, nil, {padding = 'full'}) end))
      assert.matches('conv1d: padding is a table of 2 values, expected',
                     err_of(function() local _ = fnn.conv1d(x, w, nil, {padding = {1, 1}}) end))
      assert.matches('conv1d: stride is 1.5, expected an integer or a table {l}',
                     err_of(function() local _ = fnn.conv1d(x, w, nil, {stride = 1.5}) end))
   end)

   it('refuses wrong ranks, a mismatched bias and bad arguments', function()
      assert.matches('conv1d: input %[8%] must be 3%-D %[N,C,L%] or 2%-D %[C,L%]',
                     err_of(function() local _ = fnn.conv1d(fnn.ones(8), fnn.ones(1, 1, 1)) end))
      assert.matches('conv1d: weight %[2,3%] must be 3%-D %[out, in/groups, k%]',
                     err_of(function() local _ = fnn.conv1d(fnn.ones(1, 3, 5), fnn.ones(2, 3)) end))
      assert.matches('conv1d: bias %[3%] does not match weight %[2,3,3%] %(expected %[2%]%)',
                     err_of(function() local _ = fnn.conv1d(fnn.ones(1, 3, 5), fnn.ones(2, 3, 3), fnn.ones(3)) end))
      assert.matches('conv1d: input is a nil, expected a tensor', err_of(function() local _ = fnn.conv1d(nil, fnn.ones(1)) end))
      assert.matches('conv1d: options must be a table',
                     err_of(function() local _ = fnn.conv1d(fnn.ones(1, 3, 5), fnn.ones(2, 3, 3), nil, 'same') end))
      assert.matches('conv1d: expected a float32 tensor, got an int64',
                     err_of(function() local _ = fnn.conv1d(fnn.ones(1, 3, 5):long(), fnn.ones(2, 3, 3)) end))
   end)
end)

describe('conv3d', function()
   local configs = {
      {name = 'plain 3x3x3', x = {2, 2, 4, 5, 4}, w = {3, 2, 3, 3, 3}, opts = {}, ref = {}},
      {name = 'mixed strides, padding and dilation', x = {1, 3, 5, 6, 7}, w = {2, 3, 2, 3, 2},
       opts = {stride = {2, 1, 3}, padding = {1, 0, 2}, dilation = {2, 1, 1}},
       ref = {stride = {2, 1, 3}, pad = {1, 0, 2}, dil = {2, 1, 1}}},
      {name = 'groups 2, per-side padding', x = {2, 4, 3, 4, 3}, w = {6, 2, 2, 2, 3},
       opts = {groups = 2, padding = {{1, 0}, 1, {0, 2}}}, ref = {groups = 2, pad = {{1, 0}, 1, {0, 2}}}},
      {name = 'pointwise 1x1x1, no bias', x = {2, 3, 3, 2, 4}, w = {4, 3, 1, 1, 1}, opts = {}, bias = false, ref = {}},
      {name = "'same' with stride 2", x = {1, 2, 5, 6, 7}, w = {2, 2, 3, 2, 3}, opts = {padding = 'same', stride = 2},
       ref = {stride = {2, 2, 2}, pad = {ref.same_pad(5, 3, 2, 1), ref.same_pad(6, 2, 2, 1), ref.same_pad(7, 3, 2, 1)}}},
      {name = "'same' with stride 1, even kernel", x = {1, 2, 4, 5, 4}, w = {3, 2, 2, 3, 4}, opts = {padding = 'same'},
       ref = {pad = {{0, 1}, {1, 1}, {1, 2}}}},
   }
   for _, cfg in ipairs(configs) do
      it('matches the direct loops: ' .. cfg.name, function() check_values('conv3d', cfg) end)
   end

   it('computes the gradients of x, w and b of the adjoint loops', function()
      for _, i in ipairs{1, 2, 3, 4} do check_grads('conv3d', configs[i]) end
   end)

   it('gives PyTorch output sizes for a table of configurations, unbatched too', function()
      local cases = {   -- input, kernel, options, output spatial sizes
         {{5, 6, 7}, {3, 3, 3}, {}, {3, 4, 5}}, {{5, 6, 7}, {3, 3, 3}, {padding = 1}, {5, 6, 7}},
         {{5, 6, 7}, {3, 3, 3}, {stride = 2, padding = 1}, {3, 3, 4}},
         {{5, 6, 7}, {1, 2, 3}, {dilation = {1, 2, 3}}, {5, 4, 1}},
         {{5, 6, 7}, {2, 2, 2}, {padding = 'same', stride = {1, 2, 3}}, {5, 3, 3}},
         {{4, 4, 4}, {4, 4, 4}, {}, {1, 1, 1}},
      }
      for _, c in ipairs(cases) do
         local y = fnn.conv3d(fnn.ones(2, 1, unpack(c[1])), fnn.ones(3, 1, unpack(c[2])), nil, c[3])
         assert.same({2, 3, unpack(c[4])}, y:shape())
         local y3 = fnn.conv3d(fnn.ones(1, unpack(c[1])), fnn.ones(3, 1, unpack(c[2])), nil, c[3])
         assert.same({3, unpack(c[4])}, y3:shape())
      end
   end)

   it('refuses wrong ranks and kernels larger than the padded input, naming the shapes', function()
      assert.matches('conv3d: input %[3,4,4%] must be 5%-D %[N,C,D,H,W%] or 4%-D %[C,D,H,W%]',
                     err_of(function() local _ = fnn.conv3d(fnn.ones(3, 4, 4), fnn.ones(1, 2, 1, 1, 1)) end))
      assert.matches('conv3d: weight %[1,2,1,1%] must be 5%-D %[out, in/groups, kd, kh, kw%]',
                     err_of(function() local _ = fnn.conv3d(fnn.ones(1, 2, 4, 4, 4), fnn.ones(1, 2, 1, 1)) end))
      assert.matches('conv3d: kernel 3x5x3 %(dilation 1x1x1%) is larger than the padded input 4x4x4 '
                     .. '%(input %[1,2,4,4,4%], padding 0x0x0%)',
                     err_of(function() local _ = fnn.conv3d(fnn.ones(1, 2, 4, 4, 4), fnn.ones(1, 2, 3, 5, 3)) end))
      assert.matches('conv3d: stride 1x0x1 must be positive',
                     err_of(function() local _ = fnn.conv3d(fnn.ones(1, 2, 4, 4, 4), fnn.ones(1, 2, 1, 1, 1), nil,
                                                            {stride = {1, 0, 1}}) end))
      assert.matches('conv3d: stride is a table of 2 values, expected an integer or a table {d, h, w}',
                     err_of(function() local _ = fnn.conv3d(fnn.ones(1, 2, 4, 4, 4), fnn.ones(1, 2, 1, 1, 1), nil,
                                                            {stride = {1, 1}}) end))
   end)
end)

describe('conv2d padding modes', function()
   it("pads per side, and 'same' with stride 2 as TensorFlow (output ceil(in / stride))", function()
      fnn.manual_seed(6)
      local x, w, b = fnn.randn(2, 2, 7, 8), fnn.randn(3, 2, 3, 4), fnn.randn(3)
      approx((ref.values(ref.conv_each, x, w, b, {pad = {{2, 0}, {1, 3}}})), fnn.conv2d(x, w, b, {padding = {{2, 0}, {1, 3}}}))
      local y = fnn.conv2d(x, w, b, {padding = 'same', stride = 2})
      assert.same({2, 3, 4, 4}, y:shape())
      approx((ref.values(ref.conv_each, x, w, b, {stride = {2, 2}, pad = {ref.same_pad(7, 3, 2, 1), ref.same_pad(8, 4, 2, 1)}})), y)
      local y3 = fnn.conv2d(x, w, b, {padding = 'same', stride = {3, 1}, dilation = {1, 2}})
      assert.same({2, 3, 3, 8}, y3:shape())
      approx((ref.values(ref.conv_each, x, w, b, {stride = {3, 1}, dil = {1, 2},
                                                  pad = {ref.same_pad(7, 3, 3, 1), ref.same_pad(8, 4, 1, 2)}})), y3)
   end)
end)

-- ---------------------------------------------------------------------------

describe('depthwise convolutions (groups = channels, the direct kernels)', function()
   local configs = {
      {name = '1-d, multiplier 1', op = 'conv1d', x = {2, 3, 9}, w = {3, 1, 3}, opts = {groups = 3, padding = 1},
       ref = {groups = 3, pad = {1}}},
      {name = '1-d, multiplier 3, stride 2, dilation 2', op = 'conv1d', x = {2, 2, 12}, w = {6, 1, 3},
       opts = {groups = 2, stride = 2, dilation = 2, padding = {{3, 1}}}, ref = {groups = 2, stride = {2}, dil = {2}, pad = {{3, 1}}}},
      {name = '2-d, odd sizes, stride {2, 3}', op = 'conv2d', x = {2, 4, 7, 9}, w = {4, 1, 3, 3},
       opts = {groups = 4, stride = {2, 3}, padding = 1}, ref = {groups = 4, stride = {2, 3}, pad = {1, 1}}},
      {name = '2-d, multiplier 2, rectangular kernel, dilation, no bias', op = 'conv2d', x = {1, 3, 8, 7}, w = {6, 1, 2, 3},
       opts = {groups = 3, dilation = {3, 1}, padding = {{0, 2}, 1}}, bias = false,
       ref = {groups = 3, dil = {3, 1}, pad = {{0, 2}, 1}}},
      {name = '2-d, kernel wider than the input with padding', op = 'conv2d', x = {2, 2, 3, 2}, w = {2, 1, 3, 5},
       opts = {groups = 2, padding = {1, 2}}, ref = {groups = 2, pad = {1, 2}}},
      {name = '3-d, multiplier 2', op = 'conv3d', x = {2, 2, 4, 5, 4}, w = {4, 1, 3, 2, 3},
       opts = {groups = 2, padding = {1, 0, 1}, stride = {1, 2, 1}}, ref = {groups = 2, pad = {1, 0, 1}, stride = {1, 2, 1}}},
      {name = '2-d, planes split over threads', op = 'conv2d', x = {8, 8, 24, 24}, w = {8, 1, 3, 3},
       opts = {groups = 8, padding = 1}, ref = {groups = 8, pad = {1, 1}}},
   }
   for _, cfg in ipairs(configs) do
      it('matches the direct loops: ' .. cfg.name, function()
         check_values(cfg.op, cfg)
         check_grads(cfg.op, cfg)
      end)
   end

   it('gets the gradient of w alone (frozen input) and of x alone (frozen weight)', function()
      local cfg = configs[3]
      fnn.manual_seed(7)
      local x, pw = fnn.randn(cfg.x), fnn.Param(fnn.randn(cfg.w))
      local y = fnn.conv2d(x, pw:tensor(), nil, cfg.opts)
      local gy = fnn.randn(y:shape())
      y:backward(gy)
      local dx, dw = ref.grads(ref.conv_each, x, pw:tensor(), cfg.ref, gy)
      approx(dw, pw:grad())
      local px = fnn.Param(x)
      pw:freeze()
      fnn.conv2d(px:tensor(), pw:tensor(), nil, cfg.opts):backward(gy)
      approx(dx, px:grad())
   end)
end)

-- ---------------------------------------------------------------------------

local function in_bounds(t, bound)
   for _, v in ipairs(t:to_flat()) do
      if v < -bound or v > bound then return false end
   end
   return true
end

describe('nn.Conv1d and nn.Conv3d', function()
   it('have weight [out, in/groups, k...] and bias [out] in U(-1/sqrt(fan_in), 1/sqrt(fan_in))', function()
      fnn.manual_seed(8)
      local c1 = nn.Conv1d(6, 4, 5, {groups = 2})
      assert.same({4, 3, 5}, c1.weight:shape())
      assert.same({4}, c1.bias:shape())
      assert.is_true(in_bounds(c1.weight:tensor(), 1 / math.sqrt(15)) and in_bounds(c1.bias:tensor(), 1 / math.sqrt(15)))
      -- not a narrower range either: the extremes of 60 draws come near the bound
      local lo, hi = math.huge, -math.huge
      for _, v in ipairs(c1.weight:tensor():to_flat()) do lo, hi = math.min(lo, v), math.max(hi, v) end
      assert.is_true(hi - lo > 1 / math.sqrt(15))
      local c3 = nn.Conv3d(2, 3, {1, 2, 3}, {bias = false})
      assert.same({3, 2, 1, 2, 3}, c3.weight:shape())
      assert.is_nil(c3.bias)
      assert.is_true(in_bounds(c3.weight:tensor(), 1 / math.sqrt(12)))
      local names = {}
      for i, pair in ipairs(c1:named_parameters()) do names[i] = pair[1] end
      assert.same({'weight', 'bias'}, names)
   end)

   it('compute their convolution with their options, and train through backward', function()
      fnn.manual_seed(9)
      local c1 = nn.Conv1d(3, 4, 3, {stride = 2, padding = 'same', dilation = 2})
      local x = fnn.randn(2, 3, 9)
      local y = c1(x)
      assert.same({2, 4, 5}, y:shape())
      approx((ref.values(ref.conv_each, x, c1.weight:tensor(), c1.bias:tensor(),
                         {stride = {2}, dil = {2}, pad = {ref.same_pad(9, 3, 2, 2)}})), y)
      -- 'same' with a stride follows each input's length
      assert.same({2, 4, 4}, c1(fnn.randn(2, 3, 8)):shape())
      y:sum():backward()
      assert.same({4, 3, 3}, c1.weight:grad():shape())
      local causal = nn.Conv1d(3, 2, 4, {padding = 'causal', bias = false})
      approx((ref.values(ref.conv_each, x, causal.weight:tensor(), nil, {pad = {{3, 0}}})), causal(x))
      local c3 = nn.Conv3d(2, 3, 3, {padding = {1, 0, 1}, stride = {1, 1, 2}})
      local x3 = fnn.randn(1, 2, 4, 5, 6)
      approx((ref.values(ref.conv_each, x3, c3.weight:tensor(), c3.bias:tensor(), {pad = {1, 0, 1}, stride = {1, 1, 2}})), c3(x3))
      assert.same({3, 4, 3, 3}, c3(fnn.randn(2, 4, 5, 6)):shape())   -- unbatched
   end)

   it('print their options in the module tree', function()
      assert.equals('nn.Conv1d(3 -> 8, k=5, s=2)', nn.Conv1d(3, 8, 5, {stride = 2}):short_str())
      assert.equals('nn.Conv1d(3 -> 8, k=5, p=causal, d=2, no bias)',
                    tostring(nn.Conv1d(3, 8, 5, {padding = 'causal', dilation = 2, bias = false})))
      assert.equals('nn.Conv1d(4 -> 8, k=3, p=(2,0), g=2)', tostring(nn.Conv1d(4, 8, 3, {padding = {{2, 0}}, groups = 2})))
      assert.equals('nn.Conv3d(2 -> 4, k=3x1x3, s=1x2x1, p=1x0x1)',
                    tostring(nn.Conv3d(2, 4, {3, 1, 3}, {stride = {1, 2, 1}, padding = {1, 0, 1}})))
      local model = nn.Sequential()
      model:add(nn.Conv1d(2, 4, 3)); model:add(nn.ReLU())
      assert.matches('%(1%): nn.Conv1d%(2 %-> 4, k=3%)', tostring(model))
   end)

   it('refuse bad construction arguments at the caller\'s line', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = nn.Conv1d(3, 4, 0) end)
      assert.equals(('spec/conv_nd_spec.lua:%d: nn.Conv1d: kernel is 0, expected a positive integer'):format(line), err)
      assert.matches('nn.Conv1d: in 3 and out 4 must both be divisible by groups 2',
                     err_of(function() local _ = nn.Conv1d(3, 4, 3, {groups = 2}) end))
      assert.matches('nn.Conv1d: out is 0, expected a positive integer', err_of(function() local _ = nn.Conv1d(3, 0, 3) end))
      assert.matches('nn.Conv3d: kernel is a table of 2 values, expected an integer or a table {d, h, w}',
                     err_of(function() local _ = nn.Conv3d(3, 4, {3, 3}) end))
      assert.matches("nn.Conv3d: padding 'causal' is only for 1%-d convolutions",
                     err_of(function() local _ = nn.Conv3d(3, 4, 3, {padding = 'causal'}) end))
      assert.matches('nn.Conv1d: stride is 0, expected a positive integer',
                     err_of(function() local _ = nn.Conv1d(3, 4, 3, {stride = 0}) end))
      assert.matches('nn.Conv1d: padding must not be negative',
                     err_of(function() local _ = nn.Conv1d(3, 4, 3, {padding = -1}) end))
      assert.matches('nn.Conv1d: options must be a table', err_of(function() local _ = nn.Conv1d(3, 4, 3, 'same') end))
   end)

   it('refuse an input that does not fit, naming the layer and the shapes at the caller\'s line', function()
      local conv = nn.Conv1d(3, 4, 5)
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = conv(fnn.ones(2, 2, 8)) end)
      assert.equals(('spec/conv_nd_spec.lua:%d: Conv1d(3 -> 4, k=5): input [2,2,8] has 2 channels in dim 2, expected 3')
                    :format(line), err)
      line = debug.getinfo(1, 'l').currentline + 1
      err = err_of(function() local _ = conv(fnn.ones(2, 3, 4)) end)
      assert.equals(('spec/conv_nd_spec.lua:%d: Conv1d(3 -> 4, k=5): kernel 5 (dilation 1) is larger than the padded '
                     .. 'input 4 (input [2,3,4], padding 0)'):format(line), err)
      assert.matches('Conv1d%(3 %-> 4, k=5%): input %[8%] must be %[N, C, L%] or %[C, L%]',
                     err_of(function() local _ = conv(fnn.ones(8)) end))
      assert.matches('Conv3d%(3 %-> 4, k=3x3x3%): input %[2,3,4,4%] has 2 channels in dim 1, expected 3',
                     err_of(function() local _ = nn.Conv3d(3, 4, 3)(fnn.ones(2, 3, 4, 4)) end))
      assert.matches('Sequential%[1%] nn.Conv1d%(3 %-> 4, k=5%): Conv1d%(3 %-> 4, k=5%): input %[2,2,8%] has 2 channels',
                     err_of(function() local _ = nn.Sequential():add(conv)(fnn.ones(2, 2, 8)) end))
   end)
end)

describe('nn.DepthwiseConv1d and nn.DepthwiseConv2d', function()
   it('are grouped convolutions with weight [C * multiplier, 1, k...] and fan_in = prod(k)', function()
      fnn.manual_seed(10)
      local d2 = nn.DepthwiseConv2d(3, {3, 2}, {depth_multiplier = 2, stride = 2, padding = 1})
      assert.same({6, 1, 3, 2}, d2.weight:shape())
      assert.same({6}, d2.bias:shape())
      assert.is_true(in_bounds(d2.weight:tensor(), 1 / math.sqrt(6)) and in_bounds(d2.bias:tensor(), 1 / math.sqrt(6)))
      local x = fnn.randn(2, 3, 7, 6)
      approx((ref.values(ref.conv_each, x, d2.weight:tensor(), d2.bias:tensor(), {groups = 3, stride = {2, 2}, pad = {1, 1}})), d2(x))
      local d1 = nn.DepthwiseConv1d(4, 3, {padding = 'causal', dilation = 2, bias = false})
      assert.same({4, 1, 3}, d1.weight:shape())
      assert.is_nil(d1.bias)
      local x1 = fnn.randn(2, 4, 10)
      local y1 = d1(x1)
      assert.same({2, 4, 10}, y1:shape())
      approx((ref.values(ref.conv_each, x1, d1.weight:tensor(), nil, {groups = 4, dil = {2}, pad = {{4, 0}}})), y1)
      y1:sum():backward()
      assert.same({4, 1, 3}, d1.weight:grad():shape())
   end)

   it('print as a depthwise layer and refuse bad arguments', function()
      assert.equals('nn.DepthwiseConv2d(3 -> 6, k=3x3, p=same, m=2)',
                    tostring(nn.DepthwiseConv2d(3, 3, {padding = 'same', depth_multiplier = 2})))
      assert.equals('nn.DepthwiseConv1d(4 -> 4, k=5, s=2)', nn.DepthwiseConv1d(4, 5, {stride = 2}):short_str())
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = nn.DepthwiseConv2d(3, 3, {depth_multiplier = 0}) end)
      assert.equals(('spec/conv_nd_spec.lua:%d: nn.DepthwiseConv2d: depth_multiplier is 0, expected a positive integer')
                    :format(line), err)
      assert.matches('nn.DepthwiseConv2d: groups is the channel count',
                     err_of(function() local _ = nn.DepthwiseConv2d(4, 3, {groups = 2}) end))
      assert.matches('nn.DepthwiseConv1d: channels is nil', err_of(function() local _ = nn.DepthwiseConv1d(nil, 3) end))
      assert.matches('DepthwiseConv2d%(3 %-> 3, k=3x3%): input %[1,4,5,5%] has 4 channels in dim 2, expected 3',
                     err_of(function() local _ = nn.DepthwiseConv2d(3, 3)(fnn.ones(1, 4, 5, 5)) end))
   end)
end)

describe('nn.SeparableConv1d and nn.SeparableConv2d', function()
   it('run a depthwise convolution then a pointwise one, with named parameters', function()
      fnn.manual_seed(11)
      local s = nn.SeparableConv2d(3, 5, 3, {depth_multiplier = 2, padding = 'same', stride = 2})
      local names, shapes = {}, {}
      for i, pair in ipairs(s:named_parameters()) do names[i], shapes[i] = pair[1], pair[2]:shape() end
      assert.same({'depthwise.weight', 'pointwise.weight', 'pointwise.bias'}, names)
      assert.same({{6, 1, 3, 3}, {5, 6, 1, 1}, {5}}, shapes)
      local x = fnn.randn(2, 3, 7, 8)
      local y = s(x)
      assert.same({2, 5, 4, 4}, y:shape())
      local h, hs = ref.values(ref.conv_each, x, s.depthwise.weight:tensor(), nil,
                               {groups = 3, stride = {2, 2}, pad = {ref.same_pad(7, 3, 2, 1), ref.same_pad(8, 3, 2, 1)}})
      approx((ref.values(ref.conv_each, fnn.tensor(h, hs), s.pointwise.weight:tensor(), s.pointwise.bias:tensor(), {})), y)
      y:sum():backward()
      for _, p in ipairs(s:parameters()) do assert.is_not_nil(p:grad()) end
      local s1 = nn.SeparableConv1d(2, 3, 3, {padding = 'causal', bias = false})
      local names1 = {}
      for i, pair in ipairs(s1:named_parameters()) do names1[i] = pair[1] end
      assert.same({'depthwise.weight', 'pointwise.weight'}, names1)
      local x1 = fnn.randn(2, 2, 6)
      local h1, hs1 = ref.values(ref.conv_each, x1, s1.depthwise.weight:tensor(), nil, {groups = 2, pad = {{2, 0}}})
      approx((ref.values(ref.conv_each, fnn.tensor(h1, hs1), s1.pointwise.weight:tensor(), nil, {})), s1(x1))
   end)

   it('print as one layer over its two children, and name themselves in errors at the caller\'s line', function()
      local s = nn.SeparableConv1d(4, 6, 3, {padding = 'causal', depth_multiplier = 2})
      assert.equals('nn.SeparableConv1d(4 -> 6, k=3, p=causal, m=2)', s:short_str())
      assert.equals('nn.SeparableConv1d(4 -> 6, k=3, p=causal, m=2) {\n'
                    .. '  (depthwise): nn.DepthwiseConv1d(4 -> 8, k=3, p=causal, m=2, no bias)\n'
                    .. '  (pointwise): nn.Conv1d(8 -> 6, k=1)\n}', tostring(s))
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = s(fnn.ones(2, 3, 9)) end)
      assert.equals(('spec/conv_nd_spec.lua:%d: SeparableConv1d(4 -> 6, k=3): input [2,3,9] has 3 channels in dim 2, '
                     .. 'expected 4'):format(line), err)
      line = debug.getinfo(1, 'l').currentline + 1
      err = err_of(function() local _ = nn.SeparableConv2d(4, 6, 5)(fnn.ones(1, 4, 3, 8)) end)
      assert.equals(('spec/conv_nd_spec.lua:%d: SeparableConv2d(4 -> 6, k=5x5): kernel 5x5 (dilation 1x1) is larger '
                     .. 'than the padded input 3x8 (input [1,4,3,8], padding 0x0)'):format(line), err)
      line = debug.getinfo(1, 'l').currentline + 1
      err = err_of(function() local _ = nn.SeparableConv2d(4, 6, 3, {padding = 'causal'}) end)
      assert.equals(("spec/conv_nd_spec.lua:%d: nn.SeparableConv2d: padding 'causal' is only for 1-d convolutions")
                    :format(line), err)
      assert.matches('nn.SeparableConv2d: out is %-1, expected a positive integer',
                     err_of(function() local _ = nn.SeparableConv2d(4, -1, 3) end))
   end)
end)
