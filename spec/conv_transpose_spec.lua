-- conv_transpose1d/2d/3d (core/ops/conv.c) against a direct transposed convolution written in
-- spec/conv_reference.lua (each input element times the kernel, scattered onto the output):
-- stride, padding, output_padding, dilation, groups, depthwise, 1x1, odd sizes, 'same' (Keras:
-- input * stride) and 'valid', unbatched and non-contiguous inputs, batches split over threads;
-- the adjoint identity <conv(x), y> = <x, conv_transpose(y)>; gradients against the adjoint
-- loops; output shapes for a table of configurations; the layers nn.ConvTranspose1d/2d/3d; and
-- the errors, at the caller's line.
local fnn = require 'fastnn'
local nn = fnn.nn
local ref = require 'conv_reference'
local support = require 'support'
local err_of = support.err_of

local function approx(expected, t, tol) return support.approx(expected, t, tol or 1e-4) end

local function op_of(cfg) return 'conv_transpose' .. (#cfg.x - 2) .. 'd' end

local configs = {
   {name = '1-d plain', x = {2, 3, 5}, w = {3, 2, 3}, opts = {}, ref = {}},
   {name = '1-d stride 2, padding 1, output_padding 1', x = {2, 2, 6}, w = {2, 3, 4},
    opts = {stride = 2, padding = 1, output_padding = 1}, ref = {stride = {2}, pad = {1}, opad = {1}}},
   {name = '1-d stride 3, dilation 2, groups 2, no bias', x = {1, 4, 5}, w = {4, 3, 3}, bias = false,
    opts = {stride = 3, dilation = 2, groups = 2}, ref = {stride = {3}, dil = {2}, groups = 2}},
   {name = '1-d per-side padding', x = {2, 2, 7}, w = {2, 2, 5}, opts = {padding = {{3, 1}}}, ref = {pad = {{3, 1}}}},
   {name = '2-d stride 2, padding 1 (the 4x4 upsampler)', x = {2, 3, 4, 5}, w = {3, 2, 4, 4},
    opts = {stride = 2, padding = 1}, ref = {stride = {2, 2}, pad = {1, 1}}},
   {name = '2-d mixed strides, padding, output_padding and dilation', x = {1, 2, 5, 4}, w = {2, 3, 3, 2},
    opts = {stride = {3, 2}, padding = {2, 0}, output_padding = {2, 1}, dilation = {1, 2}},
    ref = {stride = {3, 2}, pad = {2, 0}, opad = {2, 1}, dil = {1, 2}}},
   {name = '2-d output_padding below the dilation (stride 1)', x = {2, 2, 4, 4}, w = {2, 2, 3, 3},
    opts = {dilation = 3, output_padding = {2, 1}, padding = 1}, ref = {dil = {3, 3}, opad = {2, 1}, pad = {1, 1}}},
   {name = '2-d groups 3', x = {2, 6, 3, 4}, w = {6, 2, 2, 3}, opts = {groups = 3, stride = 2}, ref = {groups = 3, stride = {2, 2}}},
   {name = '2-d depthwise (out/groups = 1)', x = {2, 4, 5, 3}, w = {4, 1, 3, 3}, opts = {groups = 4, stride = 2, padding = 1},
    ref = {groups = 4, stride = {2, 2}, pad = {1, 1}}},
   {name = '2-d depthwise, two inputs per output channel', x = {1, 4, 4, 4}, w = {4, 1, 2, 3},
    opts = {groups = 2, stride = {1, 2}}, ref = {groups = 2, stride = {1, 2}}},
   {name = '2-d 1x1 stride 1 (the gemm alone)', x = {3, 4, 3, 5}, w = {4, 2, 1, 1}, opts = {}, ref = {}},
   {name = '2-d 1x1 stride 2', x = {2, 3, 3, 3}, w = {3, 2, 1, 1}, opts = {stride = 2}, ref = {stride = {2, 2}}},
   {name = '3-d stride 2, padding 1, output_padding', x = {2, 2, 3, 4, 3}, w = {2, 3, 3, 3, 2},
    opts = {stride = {2, 1, 2}, padding = {1, 1, 0}, output_padding = {1, 0, 1}},
    ref = {stride = {2, 1, 2}, pad = {1, 1, 0}, opad = {1, 0, 1}}},
   {name = '3-d depthwise, dilation', x = {1, 3, 3, 3, 4}, w = {3, 1, 2, 2, 2}, opts = {groups = 3, dilation = {2, 1, 1}},
    ref = {groups = 3, dil = {2, 1, 1}}},
   {name = '2-d, a batch split over threads', x = {16, 8, 12, 12}, w = {8, 8, 3, 3}, opts = {stride = 2, padding = 1},
    ref = {stride = {2, 2}, pad = {1, 1}}},
}

describe('conv_transpose1d/2d/3d', function()
   for _, cfg in ipairs(configs) do
      it('matches the direct scatter: ' .. cfg.name, function()
         fnn.manual_seed(1)
         local x, w = fnn.randn(cfg.x), fnn.randn(cfg.w)
         local b = cfg.bias ~= false and fnn.randn(cfg.w[2] * (cfg.opts.groups or 1)) or nil
         local y = fnn[op_of(cfg)](x, w, b, cfg.opts)
         local expected, shape = ref.values(ref.conv_transpose_each, x, w, b, cfg.ref)
         assert.same(shape, y:shape())
         approx(expected, y)
      end)
   end

   it('computes the gradients of x, w and b of the adjoint loops', function()
      for _, i in ipairs{2, 3, 6, 8, 9, 11, 13, 14, 15} do
         local cfg = configs[i]
         fnn.manual_seed(2)
         local px, pw = fnn.Param(fnn.randn(cfg.x)), fnn.Param(fnn.randn(cfg.w))
         local pb = fnn.Param(fnn.randn(cfg.w[2] * (cfg.opts.groups or 1)))
         local y = fnn[op_of(cfg)](px:tensor(), pw:tensor(), pb:tensor(), cfg.opts)
         local gy = fnn.randn(y:shape())
         y:backward(gy)
         local dx, dw, db = ref.grads(ref.conv_transpose_each, px:tensor(), pw:tensor(), cfg.ref, gy)
         approx(dx, px:grad())
         approx(dw, pw:grad())
         approx(db, pb:grad())
      end
   end)

   it('is the adjoint of the convolution: <conv(x, w), y> = <x, conv_transpose(y, w)>', function()
      fnn.manual_seed(3)
      local function dot(a, b)
         local s, av, bv = 0, a:to_flat(), b:to_flat()
         for i = 1, #av do s = s + av[i] * bv[i] end
         return s
      end
      for _, c in ipairs{{nd = 1, x = {2, 4, 11}, w = {6, 2, 3}, o = {stride = 2, padding = 1, dilation = 2, groups = 2}},
                         {nd = 2, x = {2, 3, 9, 8}, w = {4, 3, 3, 2}, o = {stride = {2, 3}, padding = {1, 0}}},
                         {nd = 3, x = {1, 2, 5, 4, 6}, w = {2, 1, 2, 3, 2}, o = {stride = 2, groups = 2}}} do
         local x, w = fnn.randn(c.x), fnn.randn(c.w)
         local y = fnn['conv' .. c.nd .. 'd'](x, w, nil, c.o)
         local g = fnn.randn(y:shape())
         -- the transposed convolution of g has x's shape once output_padding restores the cropped end
         local op = {}
         for i = 1, c.nd do
            local s = type(c.o.stride) == 'table' and c.o.stride[i] or c.o.stride
            local p = type(c.o.padding) == 'table' and c.o.padding[i] or c.o.padding or 0
            local d = c.o.dilation or 1
            op[i] = c.x[2 + i] + 2 * p - d * (c.w[2 + i] - 1) - 1 - (y:shape()[2 + i] - 1) * s
         end
         local o = {stride = c.o.stride, padding = c.o.padding, dilation = c.o.dilation, groups = c.o.groups,
                    output_padding = op}
         local xt = fnn['conv_transpose' .. c.nd .. 'd'](g, w, nil, o)
         assert.same(x:shape(), xt:shape())
         local lhs, rhs = dot(y, g), dot(x, xt)
         assert.is_true(math.abs(lhs - rhs) <= 1e-4 * math.max(1, math.abs(lhs)), ('%g vs %g'):format(lhs, rhs))
      end
   end)

   it("gives input * stride with padding 'same' (Keras), and 'valid' is no padding", function()
      fnn.manual_seed(4)
      for _, c in ipairs{{n = 5, k = 3, s = 2, d = 1}, {n = 4, k = 4, s = 2, d = 1}, {n = 5, k = 2, s = 3, d = 1},
                         {n = 4, k = 3, s = 1, d = 1}, {n = 4, k = 2, s = 1, d = 1}, {n = 3, k = 2, s = 2, d = 2},
                         {n = 4, k = 1, s = 3, d = 1}} do
         local x, w, b = fnn.randn(2, 3, c.n), fnn.randn(3, 2, c.k), fnn.randn(2)
         local y = fnn.conv_transpose1d(x, w, b, {padding = 'same', stride = c.s, dilation = c.d})
         assert.same({2, 2, c.n * c.s}, y:shape())
         -- Keras's crop: total d(k-1)+1 - s (half before, the odd one after); a shortfall is output padding
         local ext = c.d * (c.k - 1) + 1
         local total = math.max(ext - c.s, 0)
         local o = {stride = {c.s}, dil = {c.d}, pad = {{math.floor(total / 2), total - math.floor(total / 2)}},
                    opad = {math.max(c.s - ext, 0)}}
         approx((ref.values(ref.conv_transpose_each, x, w, b, o)), y)
      end
      local x, w = fnn.randn(1, 2, 3, 4), fnn.randn(2, 3, 3, 2)
      assert.same({1, 3, 6, 12}, fnn.conv_transpose2d(x, w, nil, {padding = 'same', stride = {2, 3}}):shape())
      approx((ref.values(ref.conv_transpose_each, x, w, nil, {stride = {2, 1}})),
             fnn.conv_transpose2d(x, w, nil, {padding = 'valid', stride = {2, 1}}))
   end)

   it('gives PyTorch output sizes for a table of configurations', function()
      local cases = {   -- input length, kernel, options, output length: (in-1)s - 2p + d(k-1) + op + 1
         {5, 3, {}, 7}, {5, 3, {stride = 2}, 11}, {5, 3, {stride = 2, padding = 1}, 9},
         {5, 3, {stride = 2, padding = 1, output_padding = 1}, 10}, {5, 4, {stride = 2, padding = 1}, 10},
         {5, 3, {dilation = 2}, 9}, {5, 3, {dilation = 2, output_padding = 1}, 10}, {1, 1, {}, 1}, {1, 3, {padding = 1}, 1},
         {4, 2, {stride = 3, padding = {{0, 1}}}, 10}, {3, 5, {stride = 4, output_padding = 3}, 16},
      }
      for _, c in ipairs(cases) do
         assert.same({2, 3, c[4]}, fnn.conv_transpose1d(fnn.ones(2, 2, c[1]), fnn.ones(2, 3, c[2]), nil, c[3]):shape())
      end
      assert.same({3, 8, 10}, fnn.conv_transpose2d(fnn.ones(2, 4, 5), fnn.ones(2, 3, 2, 2), nil, {stride = 2}):shape())
      assert.same({1, 2, 6, 9, 3}, fnn.conv_transpose3d(fnn.ones(1, 1, 3, 4, 1), fnn.ones(1, 2, 3, 3, 3), nil,
                                                         {stride = {2, 2, 1}, padding = {1, 0, 0}, output_padding = {1, 0, 0}})
                                     :shape())
   end)

   it('takes unbatched and non-contiguous inputs, as a tensor method too', function()
      fnn.manual_seed(5)
      local x, w, b = fnn.randn(3, 4, 5), fnn.randn(3, 2, 3, 3), fnn.randn(2)
      local y = x:conv_transpose2d(w, b, {stride = 2})
      assert.same({2, 9, 11}, y:shape())
      approx((ref.values(ref.conv_transpose_each, x:reshape(1, 3, 4, 5), w, b, {stride = {2, 2}})), y)
      local xt = fnn.randn(2, 3, 5, 4):transpose(3, 4)
      local wt = fnn.randn(3, 4, 3, 3):narrow(2, 2, 2)
      assert.is_false(xt:is_contiguous())
      approx((ref.values(ref.conv_transpose_each, xt:contiguous(), wt:contiguous(), nil, {padding = {1, 1}, pad = {1, 1}})),
             fnn.conv_transpose2d(xt, wt, nil, {padding = 1}))
   end)

   it('refuses output_padding that reaches the stride and the dilation, at the caller\'s line', function()
      local x, w = fnn.ones(1, 2, 4), fnn.ones(2, 3, 3)
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = fnn.conv_transpose1d(x, w, nil, {stride = 2, output_padding = 2}) end)
      assert.equals(('spec/conv_transpose_spec.lua:%d: conv_transpose1d: output_padding 2 must be non-negative and '
                     .. 'smaller than the stride 2 or the dilation 1'):format(line), err)
      assert.matches('conv_transpose2d: output_padding 0x1 must be non%-negative and smaller than the stride 1x1 or '
                     .. 'the dilation 1x1',
                     err_of(function() local _ = fnn.conv_transpose2d(fnn.ones(1, 2, 3, 3), fnn.ones(2, 3, 3, 3), nil,
                                                                      {output_padding = {0, 1}}) end))
      assert.matches('conv_transpose1d: output_padding %-1 must be non%-negative',
                     err_of(function() local _ = fnn.conv_transpose1d(x, w, nil, {output_padding = -1, stride = 2}) end))
      assert.matches("conv_transpose1d: output_padding cannot be combined with padding 'same'",
                     err_of(function() local _ = fnn.conv_transpose1d(x, w, nil, {padding = 'same', stride = 2,
                                                                                  output_padding = 1}) end))
   end)

   it('refuses mismatched channels, groups, sizes and ranks, naming the shapes', function()
      assert.matches('conv_transpose2d: input %[1,3,4,4%] has 3 channels, weight %[2,3,3,3%] expects 2',
                     err_of(function() local _ = fnn.conv_transpose2d(fnn.ones(1, 3, 4, 4), fnn.ones(2, 3, 3, 3)) end))
      assert.matches('conv_transpose1d: input %[1,3,4%] has 3 channels, not divisible by groups 2',
                     err_of(function() local _ = fnn.conv_transpose1d(fnn.ones(1, 3, 4), fnn.ones(3, 1, 3), nil,
                                                                      {groups = 2}) end))
      assert.matches('conv_transpose1d: output size %-2 is not positive %(input %[1,2,2%], kernel 3, stride 1, '
                     .. 'padding 3, output_padding 0%)',
                     err_of(function() local _ = fnn.conv_transpose1d(fnn.ones(1, 2, 2), fnn.ones(2, 1, 3), nil,
                                                                      {padding = 3}) end))
      assert.matches('conv_transpose3d: weight %[2,3,3,3%] must be 5%-D %[in, out/groups, kd, kh, kw%]',
                     err_of(function() local _ = fnn.conv_transpose3d(fnn.ones(1, 2, 3, 3, 3), fnn.ones(2, 3, 3, 3)) end))
      assert.matches('conv_transpose2d: input %[4,4%] must be 4%-D %[N,C,H,W%] or 3%-D %[C,H,W%]',
                     err_of(function() local _ = fnn.conv_transpose2d(fnn.ones(4, 4), fnn.ones(2, 3, 3, 3)) end))
      assert.matches('conv_transpose2d: bias %[2%] does not match weight %[2,3,3,3%] %(expected %[3%]%)',
                     err_of(function() local _ = fnn.conv_transpose2d(fnn.ones(1, 2, 4, 4), fnn.ones(2, 3, 3, 3),
                                                                      fnn.ones(2)) end))
      assert.matches('conv_transpose2d: stride 0x2 must be positive',
                     err_of(function() local _ = fnn.conv_transpose2d(fnn.ones(1, 2, 4, 4), fnn.ones(2, 3, 3, 3), nil,
                                                                      {stride = {0, 2}}) end))
      assert.matches("conv_transpose1d: padding 'causal' is only for 1%-d convolutions",
                     err_of(function() local _ = fnn.conv_transpose1d(fnn.ones(1, 2, 4), fnn.ones(2, 3, 3), nil,
                                                                      {padding = 'causal'}) end))
      assert.matches('conv_transpose1d: weight is a string, expected a tensor',
                     err_of(function() local _ = fnn.conv_transpose1d(fnn.ones(1, 2, 4), 'w') end))
   end)
end)

describe('nn.ConvTranspose1d/2d/3d', function()
   it('have weight [in, out/groups, k...], bias [out], fan_in from weight dim 2 as PyTorch', function()
      fnn.manual_seed(6)
      local t = nn.ConvTranspose2d(4, 6, {3, 2}, {groups = 2})
      assert.same({4, 3, 3, 2}, t.weight:shape())
      assert.same({6}, t.bias:shape())
      local bound = 1 / math.sqrt(3 * 3 * 2)
      for _, p in ipairs{t.weight, t.bias} do
         for _, v in ipairs(p:tensor():to_flat()) do assert.is_true(v >= -bound and v <= bound) end
      end
      assert.same({2, 5, 4}, nn.ConvTranspose1d(2, 5, 4).weight:shape())
      assert.same({3, 1, 2, 2, 2}, nn.ConvTranspose3d(3, 1, 2, {bias = false}).weight:shape())
      assert.is_nil(nn.ConvTranspose3d(3, 1, 2, {bias = false}).bias)
   end)

   it('compute the transposed convolution with their options, and train through backward', function()
      fnn.manual_seed(7)
      local t = nn.ConvTranspose2d(3, 2, 4, {stride = 2, padding = 1, output_padding = {1, 0}})
      local x = fnn.randn(2, 3, 4, 5)
      local y = t(x)
      assert.same({2, 2, 9, 10}, y:shape())
      approx((ref.values(ref.conv_transpose_each, x, t.weight:tensor(), t.bias:tensor(),
                         {stride = {2, 2}, pad = {1, 1}, opad = {1, 0}})), y)
      y:sum():backward()
      assert.same({3, 2, 4, 4}, t.weight:grad():shape())
      assert.same({2}, t.bias:grad():shape())
      local t1 = nn.ConvTranspose1d(2, 4, 3, {stride = 2, padding = 'same', groups = 2})
      local x1 = fnn.randn(2, 5)   -- unbatched
      local y1 = t1(x1)
      assert.same({4, 10}, y1:shape())
      approx((ref.values(ref.conv_transpose_each, x1:reshape(1, 2, 5), t1.weight:tensor(), t1.bias:tensor(),
                         {stride = {2}, pad = {{0, 1}}, groups = 2})), y1)
      local t3 = nn.ConvTranspose3d(2, 2, 2, {stride = 2})
      assert.same({1, 2, 4, 6, 2}, t3(fnn.randn(1, 2, 2, 3, 1)):shape())
   end)

   it('print their options and refuse bad arguments at the caller\'s line', function()
      assert.equals('nn.ConvTranspose2d(64 -> 32, k=4x4, s=2x2, p=1x1)',
                    nn.ConvTranspose2d(64, 32, 4, {stride = 2, padding = 1}):short_str())
      assert.equals('nn.ConvTranspose1d(2 -> 4, k=3, s=2, p=same, g=2, no bias)',
                    tostring(nn.ConvTranspose1d(2, 4, 3, {stride = 2, padding = 'same', groups = 2, bias = false})))
      assert.equals('nn.ConvTranspose3d(1 -> 1, k=3x3x3, s=2x2x2, op=1x0x1)',
                    tostring(nn.ConvTranspose3d(1, 1, 3, {stride = 2, output_padding = {1, 0, 1}})))
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = nn.ConvTranspose2d(2, 2, 3, {stride = 2, output_padding = 2}) end)
      assert.equals(('spec/conv_transpose_spec.lua:%d: nn.ConvTranspose2d: output_padding 2x2 must be non-negative and '
                     .. 'smaller than the stride 2x2 or the dilation 1x1'):format(line), err)
      local t = nn.ConvTranspose1d(3, 2, 3)
      line = debug.getinfo(1, 'l').currentline + 1
      err = err_of(function() local _ = t(fnn.ones(1, 2, 5)) end)
      assert.equals(('spec/conv_transpose_spec.lua:%d: ConvTranspose1d(3 -> 2, k=3): input [1,2,5] has 2 channels in '
                     .. 'dim 2, expected 3'):format(line), err)
      assert.matches('ConvTranspose1d%(3 %-> 2, k=3%): output size %-2 is not positive',
                     err_of(function() local _ = nn.ConvTranspose1d(3, 2, 3, {padding = 3})(fnn.ones(1, 3, 2)) end))
      assert.matches('nn.ConvTranspose1d: in 3 and out 2 must both be divisible by groups 2',
                     err_of(function() local _ = nn.ConvTranspose1d(3, 2, 3, {groups = 2}) end))
   end)
end)
