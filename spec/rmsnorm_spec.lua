-- rms_norm and nn.RMSNorm against y = x / sqrt(mean(x^2) + eps) * w computed here in Lua
-- doubles (one or two trailing dims, with and without weight, non-contiguous input, PyTorch's
-- default eps = float32's epsilon), gradients against the hand-derived rule; nn.UnitNormalization
-- (Keras: x / sqrt(max(sum(x^2), 1e-12)) along one axis or several) with values and gradcheck;
-- and the errors, naming the op or layer and the shapes, at the caller's line.
local fnn = require 'fastnn'
local support = require 'support'
local approx, err_of = support.approx, support.err_of
local nn = fnn.nn

local FLOAT_EPS = 1.1920928955078125e-07

local naive_rms = require('naive_nn').rms_rows   -- (xs, n, w, eps): rows of n, a flat list

local function naive_rms_grads(xs, n, w, gy, eps)
   eps = eps or FLOAT_EPS
   local dx, dw = {}, {}
   for j = 1, n do dw[j] = 0 end
   for r = 0, #xs / n - 1 do
      local ss, s = 0, 0
      for j = 1, n do ss = ss + xs[r * n + j] ^ 2 end
      local rstd = 1 / math.sqrt(ss / n + eps)
      for j = 1, n do s = s + gy[r * n + j] * (w and w[j] or 1) * xs[r * n + j] end
      for j = 1, n do
         local i = r * n + j
         dx[i] = rstd * gy[i] * (w and w[j] or 1) - rstd ^ 3 * s / n * xs[i]
         dw[j] = dw[j] + gy[i] * xs[i] * rstd
      end
   end
   return dx, dw
end

describe('rms_norm', function()
   it('divides each row by its root mean square, with and without weight', function()
      local x, w = fnn.randn(5, 7) * 2 + 1, fnn.randn(7)
      approx(naive_rms(x:to_flat(), 7, w:to_flat()), fnn.rms_norm(x, w), 1e-4)
      approx(naive_rms(x:to_flat(), 7), x:rms_norm(), 1e-4)
      approx(naive_rms(x:to_flat(), 7, nil, 0.5), fnn.rms_norm(x, nil, {eps = 0.5}), 1e-5)
   end)

   it('normalizes over several trailing dims (weight\'s count, or normalized_shape)', function()
      local x, w = fnn.randn(3, 2, 4), fnn.randn(2, 4)
      approx(naive_rms(x:to_flat(), 8, w:to_flat()), fnn.rms_norm(x, w), 1e-4)
      approx(naive_rms(x:to_flat(), 8), fnn.rms_norm(x, nil, {normalized_shape = {2, 4}}), 1e-4)
   end)

   it('defaults eps to float32\'s epsilon, which matters for tiny inputs', function()
      local x = fnn.full({2, 4}, 1e-4)
      local want = 1e-4 / math.sqrt(1e-8 + FLOAT_EPS)
      approx({want, want, want, want, want, want, want, want}, fnn.rms_norm(x), 1e-5)
   end)

   it('reads a non-contiguous input and weight', function()
      local x = fnn.randn(6, 4):t()   -- [4, 6]
      local w = fnn.randn(6, 2):select(2, 1)
      approx(naive_rms(x:contiguous():to_flat(), 6, w:contiguous():to_flat()), fnn.rms_norm(x, w), 1e-4)
   end)

   it('has gradients matching the hand-derived rule, with and without weight', function()
      for _, with_w in ipairs{true, false} do
         local px, pw = fnn.Param(fnn.randn(6, 40)), fnn.Param(fnn.randn(40))
         local gy = fnn.randn(6, 40)
         fnn.rms_norm(px:tensor(), with_w and pw:tensor() or nil):backward(gy)
         local dx, dw = naive_rms_grads(px:tensor():to_flat(), 40, with_w and pw:tensor():to_flat() or nil, gy:to_flat())
         approx(dx, px:grad(), 2e-4)
         if with_w then approx(dw, pw:grad(), 2e-4) else assert.is_nil(pw:grad()) end
      end
   end)

   it('refuses mismatched shapes, naming op and shapes, at the caller\'s line', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = fnn.rms_norm(fnn.ones(3, 4), fnn.ones(5)) end)
      assert.equals(('spec/rmsnorm_spec.lua:%d: rms_norm: normalized size 5 is not the product of trailing dims '
                     .. 'of input [3,4]'):format(line), err)
      assert.matches('rms_norm: eps %-1 is negative',
                     err_of(function() local _ = fnn.rms_norm(fnn.ones(3, 4), nil, {eps = -1}) end))
      assert.matches('rms_norm: weight is a number, expected a tensor',
                     err_of(function() local _ = fnn.rms_norm(fnn.ones(3, 4), 2) end))
      assert.matches('rms_norm: expected a float32 tensor, got an int64 tensor',
                     err_of(function() local _ = fnn.rms_norm(fnn.ones(3, 4):long()) end))
   end)
end)

describe('nn.RMSNorm', function()
   it('starts with weight ones and normalizes the trailing shape with eps = float32 epsilon', function()
      local m = nn.RMSNorm(6)
      assert.equals(1, #m:parameters())
      approx({1, 1, 1, 1, 1, 1}, m.weight:tensor())
      local x = fnn.randn(2, 3, 6)
      approx(naive_rms(x:to_flat(), 6), m(x), 1e-4)
      assert.equals('nn.RMSNorm([6], eps=nil)', m:short_str())
   end)

   it('takes a shape, eps, and no affine; trains its weight', function()
      local m = nn.RMSNorm({2, 3}, {eps = 0.1, elementwise_affine = false})
      assert.equals(0, #m:parameters())
      local x = fnn.randn(4, 2, 3)
      approx(naive_rms(x:to_flat(), 6, nil, 0.1), m(x), 1e-4)
      local t = nn.RMSNorm(4)
      local xt, gy = fnn.randn(3, 4), fnn.randn(3, 4)
      t(xt):backward(gy)
      local _, dw = naive_rms_grads(xt:to_flat(), 4, {1, 1, 1, 1}, gy:to_flat())
      approx(dw, t.weight:grad(), 1e-4)
   end)

   it('refuses an input that does not end in its shape, at the caller\'s line', function()
      local m = nn.RMSNorm(4)
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = m(fnn.ones(4, 3)) end)
      assert.equals(('spec/rmsnorm_spec.lua:%d: RMSNorm([4]): input [4,3] does not end in [4]'):format(line), err)
      assert.matches('nn.RMSNorm: size 1 is 0', err_of(function() local _ = nn.RMSNorm(0) end))
      assert.matches('nn.RMSNorm: eps is %-1', err_of(function() local _ = nn.RMSNorm(3, {eps = -1}) end))
   end)
end)

describe('nn.UnitNormalization', function()
   -- x / sqrt(max(sum of squares over the axes, 1e-12)); axes 1-based over shape
   local function naive_unit(x, shape, axes)
      local xs = x:to_flat()
      local reduce = {}
      for _, a in ipairs(axes) do reduce[a < 0 and #shape + a + 1 or a] = true end
      local function key(idx)
         local k = {}
         for d = 1, #shape do k[d] = reduce[d] and 1 or idx[d] end
         return table.concat(k, ',')
      end
      local sums = {}
      support.each_index(shape, function(idx)
         local k = key(idx)
         sums[k] = (sums[k] or 0) + xs[support.pos(shape, idx)] ^ 2
      end)
      return support.build(shape, function(idx)
         return xs[support.pos(shape, idx)] / math.sqrt(math.max(sums[key(idx)], 1e-12))
      end)
   end

   it('scales to unit L2 norm along the last axis by default, leaving a zero slice zero', function()
      local y = nn.UnitNormalization()(fnn.tensor{{3, 4}, {0, 0}, {1, 0}})
      approx({0.6, 0.8, 0, 0, 1, 0}, y, 1e-6)
      local x = fnn.randn(3, 4, 5)
      approx(naive_unit(x, {3, 4, 5}, {-1}), nn.UnitNormalization()(x), 1e-5)
   end)

   it('takes another axis or several', function()
      local x = fnn.randn(3, 4, 5)
      approx(naive_unit(x, {3, 4, 5}, {2}), nn.UnitNormalization{axis = 2}(x), 1e-5)
      approx(naive_unit(x, {3, 4, 5}, {2, 3}), nn.UnitNormalization{axis = {2, -1}}(x), 1e-5)
      assert.equals('nn.UnitNormalization(axis={2, -1})', nn.UnitNormalization{axis = {2, -1}}:short_str())
      assert.equals('nn.UnitNormalization(axis=-1)', nn.UnitNormalization():short_str())
   end)

   it('has a gradient matching finite differences', function()
      local m = nn.UnitNormalization{axis = 2}
      local ok, report = fnn.gradcheck(function(x) return m(x) end, {fnn.rand(3, 4) + 0.5})
      assert(ok, report)
   end)

   it('refuses a bad axis, at the caller\'s line', function()
      local m = nn.UnitNormalization{axis = 3}
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = m(fnn.ones(2, 3)) end)
      assert.equals(('spec/rmsnorm_spec.lua:%d: UnitNormalization: axis 3 out of range for input [2,3] '
                     .. '(dims are 1..2 or -2..-1)'):format(line), err)
      assert.matches('nn.UnitNormalization: axis 0 is not a dim',
                     err_of(function() local _ = nn.UnitNormalization{axis = 0} end))
      assert.matches('UnitNormalization: input is a string, expected a tensor',
                     err_of(function() local _ = nn.UnitNormalization()('x') end))
   end)
end)
