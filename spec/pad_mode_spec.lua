-- Tensor.pad's modes (core/ops/shape.c fnn_pad_mode: reflect, replicate, circular) against a naive
-- Lua reference (a loop over output places, the source index per dim by the mode's arithmetic), the
-- backward against the reference's scatter of a fixed output gradient, the conv layers' padding_mode
-- against the reference pad then a convolution with padding 0 (PyTorch's _conv_forward), errors, and
-- both against PyTorch's numbers (spec/fixtures/torch/pad_modes.lua, made by make_pad_modes.py).
local fnn = require 'fastnn'
local nn = fnn.nn
local support = require 'support'
local each_index, pos, approx, err_of = support.each_index, support.pos, support.approx_abs, support.err_of

-- the 1-based x place that output place j (1-based) reads along a dim of size n with `before` in front
local function src(mode, j, n, before)
   local p = j - 1 - before                    -- 0-based place in x
   if p < 0 then
      if mode == 'reflect' then p = -p elseif mode == 'replicate' then p = 0 else p = p + n end
   elseif p >= n then
      if mode == 'reflect' then p = 2 * (n - 1) - p elseif mode == 'replicate' then p = n - 1 else p = p - n end
   end
   return p + 1
end

-- the output shape and, for each output place, the flat x place it reads (pads in F.pad order)
local function reference(shape, pads, mode)
   local nd, before, out = #shape, {}, {}
   for d = 1, nd do before[d], out[d] = 0, shape[d] end
   for i = 1, #pads / 2 do
      local d = nd + 1 - i
      before[d], out[d] = pads[2 * i - 1], shape[d] + pads[2 * i - 1] + pads[2 * i]
   end
   local from = {}
   each_index(out, function(idx)
      local q = {}
      for d = 1, nd do q[d] = src(mode, idx[d], shape[d], before[d]) end
      from[#from + 1] = pos(shape, q)
   end)
   return out, from
end

local function check(shape, pads, mode, view)
   local x = fnn.randn(shape)
   local xv = view and view(x) or x
   local xs, xshape = xv:to_flat(), xv:shape()
   local oshape, from = reference(xshape, pads, mode)
   local px = fnn.Param(x)
   local y = (view and view(px:tensor()) or px:tensor()):pad(pads, {mode = mode})
   assert.same(oshape, y:shape())
   local want = {}
   for i, f in ipairs(from) do want[i] = xs[f] end
   approx(want, y, 0)
   -- backward: dx[q] = the sum of w over the places that read q
   local w = fnn.randn(oshape)
   y:backward(w)
   local ws, dx = w:to_flat(), {}
   for i = 1, #xs do dx[i] = 0 end
   for i, f in ipairs(from) do dx[f] = dx[f] + ws[i] end
   local g = view and view(px:grad()) or px:grad()
   approx(dx, g, 1e-5)
end

describe('pad modes: values and gradients against a naive reference', function()
   for _, mode in ipairs{'reflect', 'replicate', 'circular'} do
      it(mode .. ' on 1-d, 2-d and 3-d widths, asymmetric, and a transposed input', function()
         check({2, 5}, {2, 1}, mode)
         check({3, 7}, {0, 3}, mode)
         check({2, 4, 5}, {1, 3, 3, 2}, mode)
         check({2, 3, 4, 5}, {2, 1, 0, 3, 2, 2}, mode)
         check({1, 2, 3, 4, 5}, {1, 2, 2, 0, 1, 1}, mode)
         check({4, 3}, {1, 2, 2, 1}, mode, function(t) return t:t() end)
         check({6}, {3, 3}, mode)
         check({2, 3}, {}, mode)
      end)
   end
   it('pads at the limits: reflect width size - 1, circular width size', function()
      check({2, 4}, {3, 3}, 'reflect')
      check({2, 4}, {4, 4, 2, 2}, 'circular')
      check({1, 3}, {5, 7}, 'replicate')
   end)
   it('pads int64 ids (no gradient)', function()
      local ids = fnn.tensor({1, 2, 3, 4}, {1, 4}, {dtype = 'int64'})
      assert.same({3, 2, 1, 2, 3, 4, 3}, ids:pad({2, 1}, {mode = 'reflect'}):to_flat())
      assert.same({1, 1, 2, 3, 4, 4, 4}, ids:pad({1, 2}, {mode = 'replicate'}):to_flat())
      assert.same({4, 1, 2, 3, 4, 1}, ids:pad({1, 1}, {mode = 'circular'}):to_flat())
   end)
   it("takes mode 'constant' with a value, as the number argument", function()
      local x = fnn.randn(2, 3)
      approx(x:pad({1, 2}, 0.5):to_flat(), x:pad({1, 2}, {mode = 'constant', value = 0.5}), 0)
      approx(x:pad({1, -1}):to_flat(), x:pad({1, -1}, {mode = 'constant'}), 0)
   end)
end)

describe('pad modes: errors', function()
   local x = fnn.randn(2, 3)
   it('refuse widths too wide for the mode, negative widths, and a value', function()
      assert.matches("pad %(reflect%): padding %(3, 0%) for dim 2 of %[2,3%]: each width must be smaller than the dim's size 3",
                     err_of(function() return x:pad({3, 0}, {mode = 'reflect'}) end))
      assert.matches("pad %(circular%): padding %(0, 4%) for dim 2 of %[2,3%]: each width must be at most the dim's size 3",
                     err_of(function() return x:pad({0, 4}, {mode = 'circular'}) end))
      assert.matches("pad %(replicate%): padding %(%-1, 1%) for dim 2 of %[2,3%]: widths must be >= 0",
                     err_of(function() return x:pad({-1, 1}, {mode = 'replicate'}) end))
      assert.matches("pad %(replicate%): padding %(1, 0%) for dim 2 of %[2,0%]: an empty dim has no edge",
                     err_of(function() return fnn.zeros(2, 0):pad({1, 0}, {mode = 'replicate'}) end))
      assert.matches("pad: mode 'reflect' takes no value %(got 1%)",
                     err_of(function() return x:pad({1, 1}, {mode = 'reflect', value = 1}) end))
      assert.matches("Tensor.pad: mode 'mirror' is not one of 'constant', 'reflect', 'replicate', 'circular'",
                     err_of(function() return x:pad({1, 1}, {mode = 'mirror'}) end))
      assert.matches("pad %(reflect%): 3 %(before, after%) pairs for %[2,3%], which has 2 dims",
                     err_of(function() return x:pad({1, 1, 1, 1, 1, 1}, {mode = 'reflect'}) end))
   end)
end)

-- the reference pad of x (values only) as a tensor
local function ref_pad(x, pads, mode)
   local xs = x:to_flat()
   local oshape, from = reference(x:shape(), pads, mode)
   local v = {}
   for i, f in ipairs(from) do v[i] = xs[f] end
   return fnn.tensor(v, oshape)
end

describe('conv layers with padding_mode', function()
   local cases = {
      {nn.Conv1d, fnn.conv1d, {2, 3, 9}, 3, {padding = 2}, {2, 2}},
      {nn.Conv1d, fnn.conv1d, {2, 3, 8}, 4, {padding = 'same'}, {1, 2}},   -- odd total: the extra one after
      {nn.Conv2d, fnn.conv2d, {1, 3, 6, 7}, 3, {padding = {1, 2}, stride = 2}, {2, 2, 1, 1}},
      {nn.Conv2d, fnn.conv2d, {3, 5, 6}, {3, 2}, {padding = {{2, 0}, {1, 1}}}, {1, 1, 2, 0}},   -- unbatched
      {nn.Conv3d, fnn.conv3d, {1, 2, 4, 5, 4}, 3, {padding = 1, dilation = {1, 2, 1}}, {1, 1, 1, 1, 1, 1}},
   }
   for _, mode in ipairs{'reflect', 'replicate', 'circular'} do
      it(mode .. ': pad then convolve with padding 0, and the gradient flows to the input', function()
         for _, c in ipairs(cases) do
            local cls, f, shape, k, opts, pads = c[1], c[2], c[3], c[4], c[5], c[6]
            local o = {padding_mode = mode}
            for key, v in pairs(opts) do o[key] = v end
            local cin = shape[#shape - (cls == nn.Conv1d and 1 or cls == nn.Conv2d and 2 or 3)]
            local m = cls(cin, 4, k, o)
            local x = fnn.randn(shape)
            local ref = f(ref_pad(x, pads, mode), m.weight:tensor(), m.bias:tensor(),
                          {stride = opts.stride, dilation = opts.dilation})
            local px = fnn.Param(x)
            local y = m(px:tensor())
            approx(ref:to_flat(), y, 1e-4)
            y:backward(fnn.ones(y:shape()))
            assert.same(shape, px:grad():shape())
         end
      end)
   end
   it('depthwise and separable layers take it too', function()
      local d = nn.DepthwiseConv1d(3, 3, {padding = 1, padding_mode = 'reflect'})
      local x = fnn.randn(2, 3, 6)
      approx(fnn.conv1d(ref_pad(x, {1, 1}, 'reflect'), d.weight:tensor(), d.bias:tensor(), {groups = 3}):to_flat(),
             d(x), 1e-4)
      local s = nn.SeparableConv1d(3, 5, 3, {padding = 1, padding_mode = 'circular'})
      assert.same({2, 5, 6}, s(x):shape())
   end)
   it('the Keras-style convolutions pass it to their inner layer', function()
      local k = nn.Conv2D(4, 3, {padding = 'same', padding_mode = 'replicate'})
      local x = fnn.randn(2, 3, 5, 6)
      local y = k(x)
      local inner = k.inner
      approx(fnn.conv2d(ref_pad(x, {1, 1, 1, 1}, 'replicate'), inner.weight:tensor(), inner.bias:tensor()):to_flat(),
             y, 1e-4)
   end)
   it('names the layer when the input is too small for reflect', function()
      local m = nn.Conv1d(2, 3, 5, {padding = 3, padding_mode = 'reflect'})
      assert.matches("Conv1d%(2 %-> 3, k=5%): pad %(reflect%): padding %(3, 3%) for dim 3 of %[2,2,3%]",
                     err_of(function() return m(fnn.randn(2, 2, 3)) end))
      assert.matches('reflect', tostring(m))
   end)
end)

describe('pad modes and conv padding_mode against PyTorch (spec/fixtures/torch/pad_modes.lua)', function()
   local fx = dofile('spec/fixtures/torch/pad_modes.lua')
   it("F.pad's values, bit for bit", function()
      for _, c in ipairs(fx.pad) do
         local y = fnn.arange(0, 120):float():reshape(c.x):pad(c.pads, {mode = c.mode})
         assert.same(c.shape, y:shape())
         approx(c.y, y, 0)
      end
   end)
   it('nn.Conv1d/2d/3d with each padding_mode', function()
      local cls = {nn.Conv1d, nn.Conv2d, nn.Conv3d}
      for _, c in ipairs(fx.conv) do
         local m = cls[c.nd](3, 2, c.k, {padding = c.padding, padding_mode = c.mode})
         local wv = {}
         for i = 0, m.weight:numel() - 1 do wv[i + 1] = ((i * 7) % 11 - 5) / 10 end
         m.weight:set(fnn.tensor(wv, m.weight:shape()))
         m.bias:set(fnn.tensor({0, 0.1}))
         local n = 1
         for _, s in ipairs(c.x) do n = n * s end
         local y = m(fnn.arange(0, n):float():reshape(c.x) / 10)
         assert.same(c.shape, y:shape())
         approx(c.y, y, 1e-4)
      end
   end)
end)
