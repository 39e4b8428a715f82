-- fnn.linear(x, w, b, {activation = 'relu' | 'gelu'}) and nn.Linear(in, out, {activation = ...}):
-- the activation in linear's own node (relu inside oneDNN's GEMM kernel, gelu in a pass right after
-- it; the backward's dz and bias gradient in one pass over g). Held against the unfused composition,
-- fnn.linear(x, w, b):relu() / :gelu(), values and the gradients of x, w and b, on odd, 1-D,
-- [B,T,in], bias-free and large shapes (the large ones take oneDNN's primitive, the small ones the
-- GEMM and one pass), through both kernel sets, at one and two threads, and under bf16 precision.
local fnn = require 'fastnn'
local ffi = require 'ffi'
local nn = fnn.nn

local has_onednn = not fnn.config().onednn:match('^not built')

-- the largest |a - b| over the largest |a| (at least 1)
local rel_diff = require('support').rel_diff

local function same_bits(a, b)
   local fa, fb = a:to_flat(), b:to_flat()
   if #fa ~= #fb then return false end
   for i = 1, #fa do if fa[i] ~= fb[i] then return false end end
   return true
end

-- y and the gradients of x, w (and b) under a fixed random weighting of y (gy), fused or not
local function run(act, x, w, b, gy, fused)
   local px, pw, pb = fnn.Param(x), fnn.Param(w), b and fnn.Param(b)
   local y
   if fused then
      y = fnn.linear(px:tensor(), pw:tensor(), pb and pb:tensor(), {activation = act})
   else
      local z = fnn.linear(px:tensor(), pw:tensor(), pb and pb:tensor())
      y = z[act](z)
   end
   y:backward(gy)
   return {y = y, dx = px:grad(), dw = pw:grad(), db = pb and pb:grad()}
end

local function inputs(xshape, nout, bias)
   local x = fnn.randn(xshape)
   local w = fnn.randn(nout, xshape[#xshape]) / math.sqrt(xshape[#xshape])
   local b = bias and fnn.randn(nout) or nil
   local yshape = {unpack(xshape)}
   yshape[#yshape] = nout
   return x, w, b, fnn.randn(yshape)
end

-- fused against unfused: every result within tol of the unfused one
local function check_against_unfused(act, xshape, nout, bias, tol)
   local x, w, b, gy = inputs(xshape, nout, bias)
   local f, u = run(act, x, w, b, gy, true), run(act, x, w, b, gy, false)
   local label = ('%s %s -> %d%s'):format(act, fnn.shape_str(x), nout, bias and '' or ', no bias')
   assert.same(u.y:shape(), f.y:shape(), label)
   for _, k in ipairs{'y', 'dx', 'dw', 'db'} do
      if u[k] then
         local d = rel_diff(u[k], f[k])
         assert(d <= (tol or 1e-5), ('%s: %s differs from the unfused by %.3g'):format(label, k, d))
      else
         assert.is_nil(f[k], label .. ': a gradient for an absent bias')
      end
   end
   return f, u
end

describe('fnn.linear with an activation', function()
   local SHAPES = {
      {{5, 7}, 13, true},          -- odd sizes: in 7, out 13, M 5
      {{7}, 13, true},             -- 1-D input
      {{2, 3, 7}, 13, true},       -- [B, T, in]
      {{5, 7}, 13, false},         -- no bias
      {{300, 128}, 256, true},     -- large: oneDNN's primitive (relu as its post-op), parallel passes
      {{2, 150, 96}, 130, false},  -- large, [B, T, in], no bias
   }
   for _, act in ipairs{'relu', 'gelu'} do
      it(act .. ': the values and gradients of the unfused composition', function()
         fnn.manual_seed(11)
         for _, s in ipairs(SHAPES) do check_against_unfused(act, s[1], s[2], s[3]) end
      end)
   end

   it('relu at exact zeros of z: gradient 0 there, as x:relu() (and PyTorch)', function()
      -- x:relu()'s own convention, which the fused op must match
      local p = fnn.Param(fnn.tensor{-1, 0, 2})
      p:tensor():relu():sum():backward()
      assert.same({0, 0, 1}, p:grad():to_flat())
      fnn.manual_seed(12)
      for _, s in ipairs{{{5, 7}, 13}, {{300, 128}, 256}} do
         local x, w, b, gy = inputs(s[1], s[2], true)
         -- outputs 1 and 3: zero weights and bias, so z is exactly 0 there for every row
         local wv, bv, n_in = w:to_flat(), b:to_flat(), s[1][2]
         for _, j in ipairs{1, 3} do
            for i = 1, n_in do wv[(j - 1) * n_in + i] = 0 end
            bv[j] = 0
         end
         w, b = fnn.tensor(wv, w:shape()), fnn.tensor(bv, b:shape())
         local f, u = run('relu', x, w, b, gy, true), run('relu', x, w, b, gy, false)
         for _, k in ipairs{'y', 'dx', 'dw', 'db'} do
            assert(rel_diff(u[k], f[k]) <= 1e-5, k .. ' differs from the unfused')
         end
         local db, dw = f.db:to_flat(), f.dw:to_flat()
         for _, j in ipairs{1, 3} do
            assert.equals(0, db[j])
            for i = 1, n_in do assert.equals(0, dw[(j - 1) * n_in + i]) end
         end
      end
   end)

   it('without a gradient (no node, z not kept) gives the same values', function()
      fnn.manual_seed(13)
      for _, act in ipairs{'relu', 'gelu'} do
         for _, s in ipairs{{{5, 7}, 13}, {{300, 128}, 256}} do
            local x, w, b = inputs(s[1], s[2], true)
            local z = fnn.linear(x, w, b)
            local want = z[act](z)
            local got = fnn.linear(x, w, b, {activation = act})
            assert(rel_diff(want, got) <= 1e-6, act .. ' ' .. fnn.shape_str(x))
         end
      end
   end)

   it('takes the method form and the bias-free form x:linear(w, opts)', function()
      fnn.manual_seed(14)
      local x, w, b = inputs({4, 6}, 5, true)
      assert.is_true(same_bits(fnn.linear(x, w, b, {activation = 'gelu'}), x:linear(w, b, {activation = 'gelu'})))
      assert.is_true(same_bits(fnn.linear(x, w):relu(), x:linear(w, {activation = 'relu'})))
      assert.is_true(same_bits(fnn.linear(x, w, b), fnn.linear(x, w, b, {})))
   end)

   it('both kernel sets (oneDNN and portable) give the unfused values and gradients', function()
      if not has_onednn then
         -- a build without oneDNN runs the portable kernels only: the cases above ran them
         assert.equals('portable', fnn.get_kernels())
         return
      end
      local results = {}
      for _, kernels in ipairs{'onednn', 'portable'} do
         fnn.set_kernels(kernels)
         results[kernels] = {}
         for _, act in ipairs{'relu', 'gelu'} do
            for _, s in ipairs{{{5, 7}, 13, true}, {{300, 128}, 256, true}, {{2, 150, 96}, 130, false}} do
               fnn.manual_seed(15)
               local f = check_against_unfused(act, s[1], s[2], s[3])
               results[kernels][#results[kernels] + 1] = f
            end
         end
      end
      fnn.set_kernels('onednn')
      for i, f in ipairs(results.onednn) do
         local p = results.portable[i]
         for _, k in ipairs{'y', 'dx', 'dw', 'db'} do
            if f[k] then assert(rel_diff(f[k], p[k]) <= 1e-5, ('case %d: %s differs between the kernel sets'):format(i, k)) end
         end
      end
   end)

   it('gives the same bits with one thread and with two (where the unfused does: its GEMMs decide dx)', function()
      local saved = fnn.get_num_threads()
      for _, act in ipairs{'relu', 'gelu'} do
         fnn.manual_seed(16)
         local x, w, b, gy = inputs({1000, 64}, 300, true)   -- [1000, 300]: the passes go parallel
         local runs = {[true] = {}, [false] = {}}
         for t = 1, 2 do
            fnn.set_num_threads(t)
            for _, fused in ipairs{true, false} do runs[fused][t] = run(act, x, w, b, gy, fused) end
         end
         fnn.set_num_threads(saved)
         -- the passes (y = act(z); dz and db's per-part sums over fixed row ranges) never depend on the
         -- thread count; the GEMMs may (oneDNN splits dx's sum over 300 outputs by it, OpenBLAS z's),
         -- fused or not: so every result is the same bits wherever the unfused one is (under oneDNN: y,
         -- dw and db), and within rounding elsewhere
         local any = false
         for _, k in ipairs{'y', 'dx', 'dw', 'db'} do
            if same_bits(runs[false][1][k], runs[false][2][k]) then
               any = true
               assert.is_true(same_bits(runs[true][1][k], runs[true][2][k]),
                              ('%s: %s differs between 1 and 2 threads, the unfused does not'):format(act, k))
            else
               assert(rel_diff(runs[true][1][k], runs[true][2][k]) <= 1e-5, act .. ': ' .. k)
            end
         end
         if fnn.get_kernels() == 'onednn' then assert.is_true(any, 'no result of the same bits to hold the fused to') end
      end
   end)

   it("under set_float32_precision('bf16'): the unfused values, and float32's within bf16 rounding", function()
      fnn.manual_seed(17)
      for _, act in ipairs{'relu', 'gelu'} do
         for _, s in ipairs{{{5, 7}, 13}, {{300, 128}, 256}} do
            local x, w, b, gy = inputs(s[1], s[2], true)
            local f32 = run(act, x, w, b, gy, true)
            fnn.set_float32_precision('bf16')
            local ok, err = pcall(function()
               local f, u = run(act, x, w, b, gy, true), run(act, x, w, b, gy, false)
               for _, k in ipairs{'y', 'dx', 'dw', 'db'} do
                  assert(rel_diff(u[k], f[k]) <= 1e-5, k .. ': fused and unfused differ under bf16')
                  -- operands rounded to 8 bits of mantissa: ~2^-9 relative each (measured: under 4e-3).
                  -- relu's gradients are left out: where z is near 0 its rounding flips relu's mask
                  if k == 'y' or act == 'gelu' then
                     assert(rel_diff(f32[k], f[k]) <= 1e-2, k .. ': beyond bf16 rounding of float32')
                  end
               end
               -- and bf16 did round: the products differ from float32's
               assert(rel_diff(f32.y, f.y) > 0, 'bf16 precision left the product unrounded')
            end)
            fnn.set_float32_precision('ieee')
            assert(ok, err)
         end
      end
   end)

   it('refuses an unknown activation, naming linear and the value', function()
      local x, w = fnn.ones(2, 3), fnn.ones(4, 3)
      local ok, err = pcall(fnn.linear, x, w, nil, {activation = 'tanh'})
      assert.is_false(ok)
      assert.matches("fnn%.linear: activation 'tanh' is not one of 'relu', 'gelu'", err)
      ok, err = pcall(function() return x:linear(w, {activaton = 'relu'}) end)
      assert.is_false(ok)
      assert.matches("fnn%.linear: unknown option 'activaton'", err)
      -- the C entry point refuses it too, by the same names
      local C = require('fastnn.tensor').C
      assert.is_true(C.fnn_linear_act(require('fastnn.tensor').new(), x, w, nil, 'swish') ~= 0)
      assert.matches("linear: activation 'swish' is not one of 'relu', 'gelu'", ffi.string(C.fnn_last_error()))
   end)
end)

describe('nn.Linear with an activation', function()
   it('computes act(x w^T + b) with its own parameters, and shows the activation', function()
      fnn.manual_seed(18)
      for _, act in ipairs{'relu', 'gelu'} do
         local m = nn.Linear(7, 13, {activation = act})
         assert.equals('nn.Linear(7 -> 13, ' .. act .. ')', tostring(m))
         local x = fnn.randn(3, 2, 7)
         local y = m(x)
         local w, b = m.weight:tensor(), m.bias:tensor()
         local z = fnn.linear(x, w, b)
         assert(rel_diff(z[act](z), y) <= 1e-6)
         y:sum():backward()
         assert.same({13, 7}, m.weight:grad():shape())
         assert.same({13}, m.bias:grad():shape())
      end
      assert.equals('nn.Linear(7 -> 13, no bias, relu)', tostring(nn.Linear(7, 13, {bias = false, activation = 'relu'})))
      assert.equals('nn.Linear(7 -> 13)', tostring(nn.Linear(7, 13)))
   end)

   it('exports to ONNX with its activation (after Gemm or MatMul: Relu, or gelu through Erf), read back the same',
      function()
      fnn.manual_seed(19)
      for _, act in ipairs{'relu', 'gelu'} do
         for _, shape in ipairs{{5, 4}, {2, 3, 4}} do
            local m = nn.Sequential(nn.Linear(4, 6, {activation = act}), nn.Linear(6, 3))
            local x = fnn.randn(shape) * 2
            local path = os.tmpname()
            fnn.onnx.export(m, x, path)
            local loaded = fnn.onnx.load(path)
            os.remove(path)
            local want, got = fnn.no_grad(function() return m(x) end), fnn.no_grad(function() return loaded(x) end)
            assert(rel_diff(want, got) <= 1e-5, act .. ': the loaded model differs')
            -- and the activation is there: without it the values differ
            local plain = nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 3))
            plain[1].weight, plain[1].bias, plain[2].weight, plain[2].bias = m[1].weight, m[1].bias, m[2].weight, m[2].bias
            assert(rel_diff(want, fnn.no_grad(function() return plain(x) end)) > 1e-3)
         end
      end
   end)

   it('refuses an unknown activation by name', function()
      local ok, err = pcall(function() return nn.Linear(3, 4, {activation = 'swish'}) end)
      assert.is_false(ok)
      assert.matches("nn%.Linear: activation 'swish' is not one of 'relu', 'gelu'", err)
   end)
end)
