-- Dense layers: nn.Bilinear (against a Lua triple loop, gradients by finite differences and by
-- hand), nn.Reshape (a table of shapes, -1 inference, errors), nn.Rescaling (values, errors).
local fnn = require 'fastnn'
local nn = fnn.nn
local support = require 'support'
local approx, err_of = support.approx, support.err_of

-- y[r][o] = sum_ij x1[r][i] w[o][i][j] x2[r][j] + b[o], rows taken flat over the leading dims
local function naive_bilinear(x1, x2, w, b)
   local a, c, ws, bs = x1:to_flat(), x2:to_flat(), w:to_table(), b and b:to_flat()
   local outs, in1, in2 = #ws, #ws[1], #ws[1][1]
   local y = {}
   for r = 0, #a / in1 - 1 do
      for o = 1, outs do
         local s = bs and bs[o] or 0
         for i = 1, in1 do
            for j = 1, in2 do s = s + a[r * in1 + i] * ws[o][i][j] * c[r * in2 + j] end
         end
         y[#y + 1] = s
      end
   end
   return y
end

describe('nn.Bilinear', function()
   it('computes x1 W x2 + b like a naive triple loop', function()
      fnn.manual_seed(1)
      for _, cfg in ipairs{{3, 4, 5, 2}, {1, 1, 1, 3}, {6, 2, 3, 7}, {5, 5, 8, 1}} do
         local in1, in2, out, n = unpack(cfg)
         local m = nn.Bilinear(in1, in2, out)
         local x1, x2 = fnn.randn(n, in1), fnn.randn(n, in2)
         local y = m(x1, x2)
         assert.same({n, out}, y:shape())
         approx(naive_bilinear(x1, x2, m.weight:tensor(), m.bias:tensor()), y, 1e-5)
      end
   end)

   it('takes leading dims and works without a bias', function()
      fnn.manual_seed(2)
      local m = nn.Bilinear(3, 2, 4, {bias = false})
      assert.is_nil(m.bias)
      assert.equals('nn.Bilinear(3, 2 -> 4, no bias)', tostring(m))
      local x1, x2 = fnn.randn(2, 5, 3), fnn.randn(2, 5, 2)
      local y = m(x1, x2)
      assert.same({2, 5, 4}, y:shape())
      approx(naive_bilinear(x1, x2, m.weight:tensor()), y, 1e-5)
      -- non-contiguous inputs
      local t1 = fnn.randn(3, 4):t()
      approx(naive_bilinear(t1, fnn.ones(4, 2), m.weight:tensor()), m(t1, fnn.ones(4, 2)), 1e-5)
   end)

   it('has weight [out, in1, in2], bias [out] from U(-1/sqrt(in1), 1/sqrt(in1))', function()
      fnn.manual_seed(3)
      local m = nn.Bilinear(16, 9, 40)
      assert.same({40, 16, 9}, m.weight:shape())
      assert.same({40}, m.bias:shape())
      local names = {}
      for i, pair in ipairs(m:named_parameters()) do names[i] = pair[1] end
      assert.same({'weight', 'bias'}, names)
      local bound = 1 / math.sqrt(16)
      local w = m.weight:tensor()
      assert.is_true(w:abs():max():item() <= bound)
      assert.is_true(w:max():item() > 0.95 * bound and w:min():item() < -0.95 * bound)
      assert.is_true(m.bias:tensor():abs():max():item() <= bound)
      assert.equals(40 * 16 * 9 + 40, m:num_parameters())
   end)

   it('has gradients for both inputs matching finite differences', function()
      fnn.manual_seed(4)
      local m = nn.Bilinear(3, 4, 2)
      local ok, report = fnn.gradcheck(function(a, b) return m(a, b) end, {fnn.randn(5, 3), fnn.randn(5, 4)})
      assert(ok, report)
   end)

   it('accumulates dW[o,i,j] = sum_n g[n,o] x1[n,i] x2[n,j] and db[o] = sum_n g[n,o]', function()
      fnn.manual_seed(5)
      local m = nn.Bilinear(3, 2, 4)
      local x1, x2, g = fnn.randn(6, 3), fnn.randn(6, 2), fnn.randn(6, 4)
      m(x1, x2):backward(g)
      local a, c, gs = x1:to_table(), x2:to_table(), g:to_table()
      approx(support.build({4, 3, 2}, function(idx)
         local s = 0
         for n = 1, 6 do s = s + gs[n][idx[1]] * a[n][idx[2]] * c[n][idx[3]] end
         return s
      end), m.weight:grad(), 1e-5)
      approx(support.build({4}, function(idx)
         local s = 0
         for n = 1, 6 do s = s + gs[n][idx[1]] end
         return s
      end), m.bias:grad(), 1e-5)
   end)

   it('refuses inputs whose widths or leading dims do not agree, naming both', function()
      local m = nn.Bilinear(3, 4, 5)
      assert.matches('dense_spec%.lua:%d+: Bilinear%(3, 4 %-> 5%): input 1 %[2,7%] has 7 features in its last dim, '
                     .. 'expected 3', err_of(function() m(fnn.randn(2, 7), fnn.randn(2, 4)) end))
      assert.matches('Bilinear%(3, 4 %-> 5%): input 2 %[2,3%] has 3 features in its last dim, expected 4',
                     err_of(function() m(fnn.randn(2, 3), fnn.randn(2, 3)) end))
      assert.matches('Bilinear%(3, 4 %-> 5%): inputs %[2,3%] and %[3,4%] do not agree in their leading dims',
                     err_of(function() m(fnn.randn(2, 3), fnn.randn(3, 4)) end))
      assert.matches('Bilinear%(3, 4 %-> 5%): input 2 is a nil, expected a tensor',
                     err_of(function() m(fnn.randn(2, 3)) end))
      assert.matches('dense_spec%.lua:%d+: nn%.Bilinear: size 3 is 0, expected a positive integer',
                     err_of(function() nn.Bilinear(3, 4, 0) end))
   end)
end)

describe('nn.Reshape', function()
   it('reshapes each sample and keeps the batch dim', function()
      fnn.manual_seed(6)
      local cases = {
         {{6, 4}, {2, 2}, {6, 2, 2}},
         {{2, 12}, {3, 4}, {2, 3, 4}},
         {{6, 4}, {-1, 2}, {6, 2, 2}},
         {{3, 2, 5}, {10}, {3, 10}},
         {{3, 2, 5}, {-1}, {3, 10}},
         {{2, 12}, {3, -1, 2}, {2, 3, 2, 2}},
         {{0, 4}, {2, 2}, {0, 2, 2}},
         {{5, 1}, {1, 1, 1}, {5, 1, 1, 1}},
      }
      for _, c in ipairs(cases) do
         local x = fnn.randn(c[1])
         local y = nn.Reshape(c[2])(x)
         assert.same(c[3], y:shape())
         assert.same(x:to_flat(), y:to_flat())
      end
      -- varargs form, a non-contiguous input
      local xt = fnn.randn(4, 6):t()
      local y = nn.Reshape(2, 2)(xt)
      assert.same({6, 2, 2}, y:shape())
      assert.same(xt:contiguous():to_flat(), y:to_flat())
      assert.equals('nn.Reshape(3, -1, 2)', tostring(nn.Reshape{3, -1, 2}))
   end)

   it('passes gradients back in the input shape', function()
      local p = nn.Param(fnn.randn(2, 6))
      local w = fnn.randn(2, 3, 2)
      local loss = (nn.Reshape(3, 2)(p:tensor()) * w):sum()
      loss:backward()
      assert.same({2, 6}, p:grad():shape())
      approx(w:to_flat(), p:grad())
   end)

   it('refuses sizes that do not fit and bad shapes, naming the layer', function()
      assert.matches('dense_spec%.lua:%d+: nn%.Reshape%(3, %-1%): input %[2,7%] has 7 values per sample, '
                     .. 'which do not fit %[3,%-1%]', err_of(function() nn.Reshape(3, -1)(fnn.randn(2, 7)) end))
      assert.matches('nn%.Reshape%(4, 2%): input %[5,3,3%] has 9 values per sample, which do not fit %[4,2%]',
                     err_of(function() nn.Reshape{4, 2}(fnn.randn(5, 3, 3)) end))
      assert.matches('nn%.Reshape%(4%): input %[%] has no batch dim', err_of(function() nn.Reshape(4)(fnn.tensor(1)) end))
      assert.matches('dense_spec%.lua:%d+: nn%.Reshape: only one size may be %-1', err_of(function() nn.Reshape(-1, -1) end))
      assert.matches('nn%.Reshape: size 2 is 0, expected a positive integer or %-1', err_of(function() nn.Reshape(3, 0) end))
      assert.matches('nn%.Reshape: expected 1 to 7 sizes', err_of(function() nn.Reshape{} end))
   end)
end)

describe('nn.Rescaling', function()
   it('computes x * scale + offset', function()
      fnn.manual_seed(7)
      local x = fnn.rand(3, 4) * 255
      local xs = x:to_flat()
      local function ref(s, o)
         local r = {}
         for i, v in ipairs(xs) do r[i] = v * s + o end
         return r
      end
      approx(ref(1 / 255, 0), nn.Rescaling(1 / 255)(x))
      approx(ref(1 / 127.5, -1), nn.Rescaling(1 / 127.5, -1)(x))
      approx(ref(2, 3), nn.Rescaling{scale = 2, offset = 3}(x))
      assert.equals('nn.Rescaling(scale=2, offset=-1)', tostring(nn.Rescaling(2, -1)))
   end)

   it('takes per-channel tensors that broadcast, and passes gradients', function()
      local x = fnn.ones(2, 3, 2, 2)
      local scale = fnn.tensor{1, 2, 3}:reshape(3, 1, 1)
      local y = nn.Rescaling(scale, 0.5)(x)
      approx(support.build({2, 3, 2, 2}, function(idx) return idx[2] + 0.5 end), y)
      assert.equals('nn.Rescaling(scale=[3,1,1], offset=0.5)', tostring(nn.Rescaling(scale, 0.5)))
      local p = nn.Param(fnn.randn(4))
      nn.Rescaling(3, 1)(p:tensor()):sum():backward()
      approx({3, 3, 3, 3}, p:grad())
   end)

   it('refuses a scale or offset that is not a number or a tensor', function()
      assert.matches('dense_spec%.lua:%d+: nn%.Rescaling: scale is a string, expected a number or a tensor',
                     err_of(function() nn.Rescaling('1/255') end))
      assert.matches('nn%.Rescaling: offset is a boolean', err_of(function() nn.Rescaling(1, true) end))
      assert.matches('nn%.Rescaling%(scale=2, offset=0%): input is a table, expected a tensor',
                     err_of(function() nn.Rescaling(2)({1}) end))
   end)
end)
