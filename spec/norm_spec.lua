-- layer_norm against a naive Lua computation (in doubles, written out here), with and
-- without weight/bias, over one or two trailing dims, on non-contiguous input; its
-- gradients against the hand-derived formulas; nn.LayerNorm; and the errors, at the
-- caller's line.
local fnn = require 'fastnn'

local function close(expected, got, tol)
   assert.is_true(math.abs(expected - got) <= (tol or 1e-5) * math.max(1, math.abs(expected)),
                  ('expected %.7g got %.7g'):format(expected, got))
end

local function approx(expected, t, tol)
   local got = type(t) == 'table' and t or t:to_flat()
   assert.equals(#expected, #got)
   for i = 1, #expected do close(expected[i], got[i], tol) end
end

local err_of = require('support').err_of

-- naive layer norm over rows of n of the flat list xs: y = (x - mean) / sqrt(var + eps) * w + b
local function naive_ln(xs, n, w, b, eps)
   eps = eps or 1e-5
   local out = {}
   for r = 0, #xs / n - 1 do
      local s = 0
      for j = 1, n do s = s + xs[r * n + j] end
      local mean = s / n
      local v = 0
      for j = 1, n do v = v + (xs[r * n + j] - mean) ^ 2 end
      local rstd = 1 / math.sqrt(v / n + eps)
      for j = 1, n do
         local y = (xs[r * n + j] - mean) * rstd
         if w then y = y * w[j] end
         if b then y = y + b[j] end
         out[r * n + j] = y
      end
   end
   return out
end

-- naive gradients for the loss sum(y * gy): dx, dw, db per the textbook formulas
local function naive_grads(xs, n, w, gy, eps)
   eps = eps or 1e-5
   local dx, dw, db = {}, {}, {}
   for j = 1, n do dw[j], db[j] = 0, 0 end
   for r = 0, #xs / n - 1 do
      local s = 0
      for j = 1, n do s = s + xs[r * n + j] end
      local mean = s / n
      local v = 0
      for j = 1, n do v = v + (xs[r * n + j] - mean) ^ 2 end
      local rstd = 1 / math.sqrt(v / n + eps)
      local xhat, g, m1, m2 = {}, {}, 0, 0
      for j = 1, n do
         xhat[j] = (xs[r * n + j] - mean) * rstd
         g[j] = gy[r * n + j] * (w and w[j] or 1)
         m1, m2 = m1 + g[j] / n, m2 + g[j] * xhat[j] / n
         dw[j] = dw[j] + gy[r * n + j] * xhat[j]
         db[j] = db[j] + gy[r * n + j]
      end
      for j = 1, n do dx[r * n + j] = rstd * (g[j] - m1 - xhat[j] * m2) end
   end
   return dx, dw, db
end

describe('layer_norm', function()
   it('normalizes the last dim with weight and bias', function()
      local x, w, b = fnn.randn(5, 7) * 3 + 2, fnn.randn(7), fnn.randn(7)
      local y = fnn.layer_norm(x, w, b)
      assert.same({5, 7}, y:shape())
      approx(naive_ln(x:to_flat(), 7, w:to_flat(), b:to_flat()), y, 1e-4)
   end)

   it('works without weight, without bias, and without both', function()
      local x, w, b = fnn.randn(4, 6), fnn.randn(6), fnn.randn(6)
      local xs = x:to_flat()
      approx(naive_ln(xs, 6, nil, nil), fnn.layer_norm(x), 1e-4)
      approx(naive_ln(xs, 6, w:to_flat(), nil), fnn.layer_norm(x, w), 1e-4)
      approx(naive_ln(xs, 6, nil, b:to_flat()), fnn.layer_norm(x, nil, b), 1e-4)
      approx(naive_ln(xs, 6, nil, nil), x:layer_norm(), 1e-4)
   end)

   it('honours eps', function()
      local x = fnn.tensor{{1, 2, 3, 4}, {0, 0, 0, 1e-3}}
      approx(naive_ln(x:to_flat(), 4, nil, nil, 0.5), fnn.layer_norm(x, nil, nil, {eps = 0.5}), 1e-5)
      approx(naive_ln(x:to_flat(), 4, nil, nil, 1e-5), fnn.layer_norm(x), 1e-4)
   end)

   it('normalizes over two trailing dims when w has their product of elements', function()
      local x, w, b = fnn.randn(3, 2, 4), fnn.randn(2, 4), fnn.randn(2, 4)
      approx(naive_ln(x:to_flat(), 8, w:to_flat(), b:to_flat()), fnn.layer_norm(x, w, b), 1e-4)
   end)

   it('is stable for a large mean', function()
      local x = fnn.randn(3, 16) + 1e4
      approx(naive_ln(x:to_flat(), 16), fnn.layer_norm(x), 2e-2)   -- float inputs near 1e4: ~1e-3 steps
   end)

   it('reads non-contiguous input and weight', function()
      local xt, w = fnn.randn(6, 4), fnn.randn(6, 2)
      local x = xt:t()   -- [4,6] non-contiguous
      local wc = w:select(2, 1)   -- [6] stride 2
      approx(naive_ln(x:contiguous():to_flat(), 6, wc:contiguous():to_flat()), fnn.layer_norm(x, wc), 1e-4)
   end)

   it('handles zero rows', function()
      local y = fnn.layer_norm(fnn.zeros(0, 5), fnn.ones(5))
      assert.same({0, 5}, y:shape())
   end)

   it('has gradients matching the textbook formulas, with and without weight', function()
      for _, with_w in ipairs{true, false} do
         local px, pw, pb = fnn.Param(fnn.randn(6, 5)), fnn.Param(fnn.randn(5)), fnn.Param(fnn.randn(5))
         local gy = fnn.randn(6, 5)
         local y = fnn.layer_norm(px:tensor(), with_w and pw:tensor() or nil, pb:tensor())
         y:backward(gy)
         local dx, dw, db = naive_grads(px:tensor():to_flat(), 5, with_w and pw:tensor():to_flat() or nil,
                                        gy:to_flat())
         approx(dx, px:grad(), 1e-4)
         approx(db, pb:grad(), 1e-4)
         if with_w then approx(dw, pw:grad(), 1e-4) else assert.is_nil(pw:grad()) end
      end
   end)

   -- the backward sums dw and db in 32 fixed parts of rows, in the pass that makes dx: 1200 rows give parts
   -- of 38, over the threads from this size; the bits are the same on 1 and 2 threads; zero rows give
   -- zero dw and db
   it('sums dw and db over many rows in parts, the same at 1 and 2 threads, and zeros for zero rows', function()
      fnn.manual_seed(41)
      local x, gy = fnn.randn(1200, 48) * 3 + 1, fnn.randn(1200, 48)
      local w0, b0 = fnn.randn(48), fnn.randn(48)
      local dx, dw, db = naive_grads(x:to_flat(), 48, w0:to_flat(), gy:to_flat())
      local threads, bits = fnn.get_num_threads(), {}
      for _, t in ipairs{1, 2} do
         fnn.set_num_threads(t)
         local px, pw, pb = fnn.Param(x), fnn.Param(w0), fnn.Param(b0)
         fnn.layer_norm(px:tensor(), pw:tensor(), pb:tensor()):backward(gy)
         approx(dx, px:grad(), 1e-4)
         approx(dw, pw:grad(), 1e-4)
         approx(db, pb:grad(), 1e-4)
         bits[t] = {pw:grad():to_flat(), pb:grad():to_flat(), px:grad():to_flat()}
      end
      fnn.set_num_threads(threads)
      assert.same(bits[1], bits[2])
      local pw, pb = fnn.Param(fnn.randn(7)), fnn.Param(fnn.randn(7))
      fnn.layer_norm(fnn.zeros(0, 7), pw:tensor(), pb:tensor()):backward(fnn.zeros(0, 7))
      assert.same({0, 0, 0, 0, 0, 0, 0}, pw:grad():to_flat())
      assert.same({0, 0, 0, 0, 0, 0, 0}, pb:grad():to_flat())
   end)

   it('refuses mismatched shapes, naming op and shapes, at the caller\'s line', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = fnn.layer_norm(fnn.ones(3, 4), fnn.ones(5)) end)
      assert.equals(('spec/norm_spec.lua:%d: layer_norm: normalized size 5 is not the product of trailing dims '
                     .. 'of input [3,4]'):format(line), err)
      assert.matches('layer_norm: bias %[5%] has 5 elements, expected 4 %(the normalized size%) for input %[3,4%]',
                     err_of(function() local _ = fnn.layer_norm(fnn.ones(3, 4), fnn.ones(4), fnn.ones(5)) end))
      assert.matches('layer_norm: eps %-1 is negative',
                     err_of(function() local _ = fnn.layer_norm(fnn.ones(3, 4), nil, nil, {eps = -1}) end))
      assert.matches('layer_norm: weight is a string, expected a tensor',
                     err_of(function() local _ = fnn.layer_norm(fnn.ones(3, 4), 'w') end))
   end)
end)

describe('nn.LayerNorm', function()
   it('starts as weight ones, bias zeros and normalizes the trailing shape', function()
      local m = fnn.nn.LayerNorm(8)
      assert.equals(2, #m:parameters())
      approx({1, 1, 1, 1, 1, 1, 1, 1}, m.weight:tensor())
      approx({0, 0, 0, 0, 0, 0, 0, 0}, m.bias:tensor())
      local x = fnn.randn(2, 3, 8)
      local y = m:forward(x)
      assert.same({2, 3, 8}, y:shape())
      approx(naive_ln(x:to_flat(), 8), y, 1e-4)
   end)

   it('takes a shape, eps, and no affine', function()
      local m = fnn.nn.LayerNorm({2, 3}, {eps = 0.1, elementwise_affine = false})
      assert.equals(0, #m:parameters())
      local x = fnn.randn(4, 2, 3)
      approx(naive_ln(x:to_flat(), 6, nil, nil, 0.1), m:forward(x), 1e-4)
   end)

   it('trains its weight and bias', function()
      local m = fnn.nn.LayerNorm(4)
      local y = m:forward(fnn.randn(3, 4))
      y:sum():backward()
      approx({3, 3, 3, 3}, m.bias:grad(), 1e-6)
      assert.same({4}, m.weight:grad():shape())
   end)

   it('refuses an input that does not end in its shape, at the caller\'s line', function()
      local m = fnn.nn.LayerNorm(4)
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = m:forward(fnn.ones(4, 3)) end)
      assert.equals(('spec/norm_spec.lua:%d: LayerNorm([4]): input [4,3] does not end in [4]'):format(line), err)
      assert.matches('nn.LayerNorm: size 1 is 0', err_of(function() local _ = fnn.nn.LayerNorm(0) end))
   end)
end)
