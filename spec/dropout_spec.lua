-- Regularization layers: Dropout (noise_shape), SpatialDropout1d/2d/3d, AlphaDropout, GaussianNoise,
-- GaussianDropout. Statistics over large tensors (tolerances many standard errors wide), exact
-- values of what is kept, eval-mode identity, reproducibility under fnn.manual_seed, gradients.
local fnn = require 'fastnn'
local nn = fnn.nn
local support = require 'support'
local approx, err_of = support.approx, support.err_of

-- mean and (biased) variance of a tensor, in C
local function stats(t)
   local m = t:mean():item()
   return m, ((t - m) * (t - m)):mean():item()
end
local function fraction_zero(t) return t:eq(0):sum():item() / t:numel() end

describe('nn.Dropout', function()
   it('drops a fraction p and scales what it keeps by exactly 1/(1-p)', function()
      fnn.manual_seed(1)
      for _, p in ipairs{0.25, 0.5, 0.75} do           -- 1/(1-p) exact in float32: kept values compare exactly
         local x = fnn.rand(200, 500) + 0.5            -- no zeros of its own
         local y = nn.Dropout(p)(x)
         assert.same({200, 500}, y:shape())
         assert.is_true(math.abs(fraction_zero(y) - p) < 0.01, 'dropped fraction ' .. fraction_zero(y))
         local kept = y:ne(0)
         assert.equals(0, ((y - x * (1 / (1 - p))) * kept):abs():max():item())
      end
      -- any other rate: the kept values are x / (1 - p) up to float rounding
      local x = fnn.randn(40, 50)
      local y = nn.Dropout(0.3)(x):to_flat()
      local xs = x:to_flat()
      for i = 1, #y do
         if y[i] ~= 0 then
            assert.is_true(math.abs(y[i] - xs[i] / 0.7) <= 1e-6 * math.max(1, math.abs(xs[i] / 0.7)))
         end
      end
   end)

   it('defaults to p = 0.5 and takes {p = ...}', function()
      fnn.manual_seed(2)
      local m = nn.Dropout()
      assert.equals(0.5, m.p)
      assert.equals('nn.Dropout(p=0.5)', tostring(m))
      assert.is_true(math.abs(fraction_zero(m(fnn.ones(100, 100))) - 0.5) < 0.02)
      assert.equals(0.2, nn.Dropout{p = 0.2}.p)
   end)

   it('is the identity in eval mode and at p = 0', function()
      local x = fnn.randn(30, 30)
      local m = nn.Dropout(0.5)
      m:eval()
      assert.is_true(rawequal(x, m(x)))
      m:train()
      assert.is_false(rawequal(x, m(x)))
      assert.is_true(rawequal(x, nn.Dropout(0)(x)))
      -- eval reaches it inside a container
      local seq = nn.Sequential(nn.Identity(), nn.Dropout(0.9))
      seq:eval()
      assert.same(x:to_flat(), seq(x):to_flat())
   end)

   it('is reproducible under fnn.manual_seed', function()
      local x = fnn.ones(64, 64)
      local m = nn.Dropout(0.5)
      fnn.manual_seed(42)
      local a = m(x):to_flat()
      fnn.manual_seed(42)
      local b = m(x):to_flat()
      assert.same(a, b)
      fnn.manual_seed(43)
      assert.are_not.same(a, m(x):to_flat())
   end)

   it('gives the gradient mask / (1 - p)', function()
      fnn.manual_seed(3)
      local p = nn.Param(fnn.randn(20, 30))
      local y = nn.Dropout(0.4)(p:tensor())
      local w = fnn.randn(20, 30)
      local loss = (y * w):sum()
      loss:backward()
      local mask = y:ne(0)
      approx((mask * w * (1 / 0.6)):to_flat(), p:grad(), 1e-6)
   end)

   it('shares one draw along the axes where noise_shape is 1', function()
      fnn.manual_seed(4)
      local m = nn.Dropout(0.5, {noise_shape = {4, 1, 6}})
      assert.equals('nn.Dropout(p=0.5, noise_shape=[4,1,6])', tostring(m))
      local y = m(fnn.ones(4, 5, 6)):to_table()
      local distinct = {}
      for n = 1, 4 do
         for f = 1, 6 do
            for t = 2, 5 do assert.equals(y[n][1][f], y[n][t][f]) end
            distinct[y[n][1][f]] = true
         end
      end
      assert.is_true(distinct[0] and distinct[2])   -- 24 draws, not one
      -- -1 takes the input's size; a draw per (n, t), shared over the features
      local y2 = nn.Dropout{p = 0.5, noise_shape = {-1, -1, 1}}(fnn.ones(8, 5, 6)):to_table()
      for n = 1, 8 do
         for t = 1, 5 do
            for f = 2, 6 do assert.equals(y2[n][t][1], y2[n][t][f]) end
         end
      end
   end)

   it('refuses a rate outside [0, 1) and a noise_shape that does not fit, naming the layer', function()
      assert.matches('dropout_spec%.lua:%d+: nn%.Dropout: rate p is 1, expected a number in %[0, 1%)',
                     err_of(function() nn.Dropout(1) end))
      assert.matches('nn%.Dropout: rate p is %-0%.1', err_of(function() nn.Dropout(-0.1) end))
      assert.matches('nn%.Dropout: rate p is half', err_of(function() nn.Dropout('half') end))
      assert.matches('nn%.Dropout: noise_shape size 2 is 0', err_of(function() nn.Dropout(0.5, {noise_shape = {2, 0}}) end))
      local m = nn.Dropout(0.5, {noise_shape = {4, 2, 6}})
      assert.matches('dropout_spec%.lua:%d+: nn%.Dropout%(p=0%.5, noise_shape=%[4,2,6%]%): noise_shape %[4,2,6%] '
                     .. 'does not fit input %[4,5,6%]', err_of(function() m(fnn.ones(4, 5, 6)) end))
      assert.matches('noise_shape %[4,2,6%] does not fit input %[4,2%]', err_of(function() m(fnn.ones(4, 2)) end))
      assert.matches('nn%.Dropout%(p=0%.5%): input is a number, expected a tensor', err_of(function() nn.Dropout()(1) end))
   end)
end)

describe('nn.SpatialDropout1d/2d/3d', function()
   local shapes = {{40, 25, 6}, {40, 25, 3, 4}, {40, 25, 2, 3, 2}}
   for k = 1, 3 do
      it(('SpatialDropout%dd zeroes whole channels, a fraction p of them'):format(k), function()
         fnn.manual_seed(10 + k)
         local m = nn['SpatialDropout' .. k .. 'd'](0.3)
         assert.equals(('nn.SpatialDropout%dd(p=0.3)'):format(k), tostring(m))
         local x = fnn.rand(shapes[k]) + 1
         local y = m(x)
         assert.same(shapes[k], y:shape())
         -- per channel: all kept (x / 0.7) or all zero
         local per = y:numel() / (40 * 25)
         local yc = y:reshape(40 * 25, per)
         local zeros = yc:eq(0):sum(2):to_flat()
         local dropped = 0
         for _, z in ipairs(zeros) do
            assert.is_true(z == 0 or z == per, 'a channel partly dropped')
            if z == per then dropped = dropped + 1 end
         end
         assert.is_true(math.abs(dropped / 1000 - 0.3) < 0.06, 'dropped channels ' .. dropped)
         local kept = y:ne(0)
         assert.is_true(((y - x / 0.7) * kept):abs():max():item() <= 1e-6)
         -- identity in eval mode; refuses another layout
         m:eval()
         assert.is_true(rawequal(x, m(x)))
         m:train()
         local bad = k == 1 and {4, 5} or {4, 5, 6}
         assert.matches(('dropout_spec%%.lua:%%d+: nn%%.SpatialDropout%dd%%(p=0%%.3%%): input %%[%s%%] is not %%[N, C'):format(
                           k, table.concat(bad, ',')), err_of(function() m(fnn.ones(bad)) end))
      end)
   end

   it('refuses a bad rate naming the layer', function()
      assert.matches('dropout_spec%.lua:%d+: nn%.SpatialDropout2d: rate p is 1%.5', err_of(function() nn.SpatialDropout2d(1.5) end))
   end)

   it('gives the gradient of the channel mask', function()
      fnn.manual_seed(14)
      local p = nn.Param(fnn.rand(6, 8, 3, 3) + 1)
      local y = nn.SpatialDropout2d(0.5)(p:tensor())
      y:sum():backward()
      approx((y:ne(0) * 2):to_flat(), p:grad())
   end)
end)

describe('nn.AlphaDropout', function()
   local ALPHA_P = -1.7580993408473766
   it('keeps mean 0 and variance 1 of a standard normal (SELU-normal) input', function()
      fnn.manual_seed(20)
      for _, p in ipairs{0.1, 0.3, 0.5} do
         local x = fnn.randn(300, 400)
         local y = nn.AlphaDropout(p)(x)
         local m, v = stats(y)
         assert.is_true(math.abs(m) < 0.02, ('p=%g mean %g'):format(p, m))
         assert.is_true(math.abs(v - 1) < 0.03, ('p=%g var %g'):format(p, v))
         -- as a check that it did something: a fraction p sits at the saturation value
         local a = ((1 - p) * (1 + p * ALPHA_P ^ 2)) ^ -0.5
         local sat = a * ALPHA_P - a * ALPHA_P * p
         local at_sat = (y - sat):abs():lt(1e-5):sum():item() / y:numel()
         assert.is_true(math.abs(at_sat - p) < 0.01, 'saturated fraction ' .. at_sat)
      end
   end)

   it('maps each element to a x + b (kept) or a alpha\' + b (dropped), with gradient a * mask', function()
      fnn.manual_seed(21)
      local p = 0.4
      local a = ((1 - p) * (1 + p * ALPHA_P ^ 2)) ^ -0.5
      local b = -a * ALPHA_P * p
      local param = nn.Param(fnn.randn(10, 12))
      local x = param:tensor()
      local y = nn.AlphaDropout(p)(x)
      y:sum():backward()
      local xs, ys, gs = x:to_flat(), y:to_flat(), param:grad():to_flat()
      local dropped = 0
      for i = 1, #xs do
         local kept = math.abs(ys[i] - (a * xs[i] + b)) < 1e-5
         local drop = math.abs(ys[i] - (a * ALPHA_P + b)) < 1e-5
         assert.is_true(kept or drop, 'element ' .. i)
         assert.is_true(math.abs(gs[i] - (kept and a or 0)) < 1e-6)
         if drop then dropped = dropped + 1 end
      end
      assert.is_true(dropped > 20 and dropped < 80)
   end)

   it('is the identity in eval mode and refuses a bad rate', function()
      local m = nn.AlphaDropout(0.2)
      assert.equals('nn.AlphaDropout(p=0.2)', tostring(m))
      local x = fnn.randn(5, 5)
      m:eval()
      assert.is_true(rawequal(x, m(x)))
      assert.matches('dropout_spec%.lua:%d+: nn%.AlphaDropout: rate p is 1', err_of(function() nn.AlphaDropout(1) end))
   end)
end)

describe('nn.GaussianNoise', function()
   it('adds N(0, stddev^2) noise in training mode', function()
      fnn.manual_seed(30)
      local x = fnn.full({300, 400}, 2)
      local y = nn.GaussianNoise(0.5)(x)
      local m, v = stats(y)
      assert.is_true(math.abs(m - 2) < 0.005, 'mean ' .. m)
      assert.is_true(math.abs(v - 0.25) < 0.005, 'var ' .. v)
   end)

   it('passes the gradient unchanged, is the identity in eval mode, is reproducible', function()
      local p = nn.Param(fnn.randn(4, 5))
      local m = nn.GaussianNoise(0.1)
      m(p:tensor()):sum():backward()
      assert.same(fnn.ones(4, 5):to_flat(), p:grad():to_flat())
      fnn.manual_seed(31)
      local a = m(p:tensor()):to_flat()
      fnn.manual_seed(31)
      assert.same(a, m(p:tensor()):to_flat())
      m:eval()
      local x = fnn.randn(3)
      assert.is_true(rawequal(x, m(x)))
      assert.equals('nn.GaussianNoise(stddev=0.1)', tostring(m))
   end)

   it('refuses a negative or missing stddev', function()
      assert.matches('dropout_spec%.lua:%d+: nn%.GaussianNoise: stddev is %-1, expected a non%-negative number',
                     err_of(function() nn.GaussianNoise(-1) end))
      assert.matches('nn%.GaussianNoise: stddev is nil', err_of(function() nn.GaussianNoise() end))
   end)
end)

describe('nn.GaussianDropout', function()
   it('multiplies by N(1, rate / (1 - rate)) noise in training mode', function()
      fnn.manual_seed(40)
      local x = fnn.full({300, 400}, 3)
      local y = nn.GaussianDropout(0.2)(x)
      local m, v = stats(y / 3)
      assert.is_true(math.abs(m - 1) < 0.005, 'mean ' .. m)
      assert.is_true(math.abs(v - 0.25) < 0.005, 'var ' .. v)    -- 0.2 / 0.8
   end)

   it('has the noise as its gradient and is the identity in eval mode', function()
      fnn.manual_seed(41)
      local p = nn.Param(fnn.rand(6, 7) + 0.5)
      local x = p:tensor()
      local m = nn.GaussianDropout(0.5)
      local y = m(x)
      y:sum():backward()
      approx((y / x):to_flat(), p:grad(), 1e-5)
      m:eval()
      assert.is_true(rawequal(x, m(x)))
      assert.equals('nn.GaussianDropout(rate=0.5)', tostring(m))
      assert.matches('dropout_spec%.lua:%d+: nn%.GaussianDropout: rate is 1, expected a number in %[0, 1%)',
                     err_of(function() nn.GaussianDropout(1) end))
   end)
end)
