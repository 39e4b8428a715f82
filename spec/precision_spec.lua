-- fnn.set_float32_precision (core/precision.c): PyTorch's mkldnn fp32_precision per family. Under
-- 'bf16' the GEMM-bound ops round their operands to bfloat16 (round to nearest, ties to even) and sum
-- in float32; tensors stay float32. Checked against references computed here: a bit-exact rounding
-- in Lua, and the float32 op on operands rounded by it (a product of two bf16 values is exact in
-- float32, so only the order of the sums may differ). Both kernel paths are held to them: oneDNN's
-- bf16 primitives where the CPU has bf16 units, and the emulated path (rounded float32 operands) that
-- the portable kernels and CPUs without bf16 units run.
local fnn = require 'fastnn'
local nn = fnn.nn

local has_onednn = not fnn.config().onednn:match('^not built')
local PATHS = has_onednn and {'onednn', 'portable'} or {'portable'}

-- the bfloat16 rounding reference (spec/bf16_reference.lua: round to nearest even, in doubles)
local ref = require 'spec.bf16_reference'
local bf16, rounded = ref.round, ref.rounded

-- the largest |a - b| - tol * scale over the elements (<= 0: within tolerance), scale an elementwise
-- bound of the sum's size (the same op on |operands|)
local function excess(a, b, scale, tol)
   local fa, fb, fs = a:to_flat(), b:to_flat(), scale:to_flat()
   assert.equals(#fa, #fb)
   local worst = -math.huge
   for i = 1, #fa do worst = math.max(worst, math.abs(fa[i] - fb[i]) - tol * fs[i] - 1e-30) end
   return worst
end
local function max_abs_diff(a, b)
   return (a - b):abs():max():item()
end

local function with_precision(mode, fn)
   fnn.set_float32_precision(mode)
   local ok, r1, r2, r3 = pcall(fn)
   fnn.set_float32_precision('ieee')
   if not ok then error(r1, 0) end
   return r1, r2, r3
end

-- out weighted by r, a bf16-exact random tensor, so the incoming gradient is exact in bf16 too
local function grads(fn, inputs, r)
   local params = {}
   for i, x in ipairs(inputs) do params[i] = nn.Param(x) end
   local ts = {}
   for i, p in ipairs(params) do ts[i] = p:tensor() end
   local out = fn(table.unpack(ts))
   ;(out * r):sum():backward()
   local gs = {out}
   for i, p in ipairs(params) do gs[i + 1] = p:grad() end
   return gs
end

after_each(function()
   fnn.set_float32_precision('ieee')
   if has_onednn then fnn.set_kernels('onednn') end
end)

describe('fnn.set_float32_precision', function()
   it('starts at ieee for every family, sets one mode or a table of families, and get returns the table', function()
      assert.same({matmul = 'ieee', conv = 'ieee', rnn = 'ieee'}, fnn.get_float32_precision())
      fnn.set_float32_precision('bf16')
      assert.same({matmul = 'bf16', conv = 'bf16', rnn = 'bf16'}, fnn.get_float32_precision())
      fnn.set_float32_precision{conv = 'ieee'}
      assert.same({matmul = 'bf16', conv = 'ieee', rnn = 'bf16'}, fnn.get_float32_precision())
      fnn.set_float32_precision{matmul = 'ieee', rnn = 'ieee'}
      assert.same({matmul = 'ieee', conv = 'ieee', rnn = 'ieee'}, fnn.get_float32_precision())
   end)

   it('refuses an unknown mode or family at the caller\'s line, naming it and what is known', function()
      local ok, err = pcall(fnn.set_float32_precision, 'bf61')
      assert.is_false(ok)
      assert.matches("fnn.set_float32_precision: precision 'bf61' is not one of 'ieee', 'bf16'", err, 1, true)
      ok, err = pcall(fnn.set_float32_precision, {matmull = 'bf16'})
      assert.is_false(ok)
      assert.matches("unknown option 'matmull' (options: matmul", err, 1, true)
      ok, err = pcall(fnn.set_float32_precision, {conv = 'tf32'})
      assert.is_false(ok)
      assert.matches("conv 'tf32' is not one of 'ieee', 'bf16'", err, 1, true)
      local line = debug.getinfo(1, 'l').currentline + 1
      ok, err = pcall(function() fnn.set_float32_precision(42) end)
      assert.matches('precision_spec.lua:' .. line .. ':', err, 1, true)
      assert.same({matmul = 'ieee', conv = 'ieee', rnn = 'ieee'}, fnn.get_float32_precision())
   end)

   it('shows in fnn.config(): the modes and the path that runs bf16 (oneDNN on bf16 units, or emulated)', function()
      local c = fnn.config()
      assert.equals('matmul=ieee conv=ieee rnn=ieee', c.float32_precision)
      assert.truthy(c.bf16_path:match('^onednn bf16') or c.bf16_path:match('^emulated'))
      if c.bf16_path:match('^onednn') then assert.matches('BF16', c.bf16_path) end
      fnn.set_float32_precision{rnn = 'bf16'}
      assert.equals('matmul=ieee conv=ieee rnn=bf16', fnn.config().float32_precision)
      assert.matches('float32_precision', tostring(fnn.config()))
   end)
end)

describe('fnn.set_bf16_path', function()
   -- oneDNN's bf16 kernels run bf16 precision only where the CPU's bf16 unit beats its float32 FMA
   -- ('auto'); 'native' takes them wherever the CPU has bf16 units, 'emulated' never
   local c0 = fnn.config()
   local units = has_onednn and (c0.onednn_isa:match('BF16') or c0.onednn_isa:match('AMX')) ~= nil
   local start = os.getenv('FASTNN_BF16_PATH') or 'auto'
   after_each(function() fnn.set_bf16_path(start) end)

   it('starts at auto (or FASTNN_BF16_PATH), sets and gets each path, and refuses another at the caller\'s line',
      function()
      assert.equals(start, fnn.get_bf16_path())
      for _, p in ipairs{'native', 'emulated', 'auto'} do
         fnn.set_bf16_path(p)
         assert.equals(p, fnn.get_bf16_path())
      end
      local line = debug.getinfo(1, 'l').currentline + 1
      local ok, err = pcall(function() fnn.set_bf16_path('amx') end)
      assert.is_false(ok)
      assert.matches('precision_spec.lua:' .. line .. ": fnn.set_bf16_path: path 'amx' is not one of 'auto', "
                     .. "'native', 'emulated'", err, 1, true)
      ok, err = pcall(fnn.set_bf16_path, 'native', 'extra')
      assert.is_false(ok)
      assert.matches('set_bf16_path', err, 1, true)
      assert.equals('auto', fnn.get_bf16_path())
   end)

   it('decides what fnn.config() names: the bf16 kernels where asked and present, by the measured rate on auto',
      function()
      fnn.set_bf16_path('emulated')
      assert.matches('^emulated', fnn.config().bf16_path)
      fnn.set_bf16_path('native')
      local native = fnn.config().bf16_path
      if units then
         assert.matches('^onednn bf16', native)
      else
         assert.matches('^emulated.*no bf16 units', native)
      end
      fnn.set_bf16_path('auto')
      local auto = fnn.config().bf16_path
      if units and not c0.onednn_isa:match('AMX') then
         -- AVX512-BF16: the dot product's rate over the FMA's, measured once and named; 1.25 decides
         local ratio = tonumber(auto:match('retires (%d+%.%d+)x the float32 FMA'))
         assert.is_number(ratio)
         assert.is_true(ratio > 0.1 and ratio < 10, auto)
         assert.equals(ratio >= 1.25, auto:match('^onednn bf16') ~= nil, auto)
         assert.equals(ratio >= 1.25, auto:match('^emulated.*no faster') == nil, auto)
      elseif not units then
         assert.matches('^emulated.*no bf16 units', auto)
      end
   end)

   it('gives the same values either way: the emulated path bit for bit the float32 op on rounded operands, '
      .. 'the bf16 kernels those up to the order of the sums', function()
      fnn.manual_seed(11)
      local a, b = fnn.randn(37, 129), fnn.randn(129, 65)
      local want = a:bf16():float():matmul(b:bf16():float())
      local scale = a:abs():bf16():float():matmul(b:abs():bf16():float())
      local got = {}
      for _, p in ipairs{'emulated', 'native'} do
         fnn.set_bf16_path(p)
         got[p] = with_precision('bf16', function() return a:matmul(b) end)
         assert.equals('float32', got[p]:dtype())
      end
      assert.equals(0, max_abs_diff(got.emulated, want))
      assert.is_true(excess(got.native, want, scale, 1e-6) <= 0)
      if not units then assert.equals(0, max_abs_diff(got.native, want)) end
   end)

   it('runs linear\'s bias and activation inside the float32 kernel on the emulated path: the ieee op on '
      .. 'rounded operands, bit for bit', function()
      fnn.set_bf16_path('emulated')
      for _, kernels in ipairs(PATHS) do
         fnn.set_kernels(kernels)
         for _, act in ipairs{false, 'relu', 'gelu'} do
            for _, bias in ipairs{true, false} do
               fnn.manual_seed(17)
               local x, w, b = fnn.randn(96, 80), fnn.randn(48, 80), bias and fnn.randn(48) or nil
               local r = rounded(fnn.randn(96, 48))
               local opts = act and {activation = act} or nil
               local function f(xx, ww, bb) return fnn.linear(xx, ww, bb, opts) end
               local got = with_precision('bf16', function() return grads(f, {x, w, b}, r) end)
               local want = grads(f, {rounded(x), rounded(w), b}, r)
               local what = ('%s kernels, %s, %s'):format(kernels, act or 'no activation', bias and 'bias' or 'no bias')
               -- gelu's gradient dz = g gelu'(z) has more bits than bf16, which bf16 precision rounds
               -- for the products and ieee does not: its value only
               for i = 1, act == 'gelu' and 1 or #want do
                  assert.equals(0, max_abs_diff(got[i], want[i]), what .. ' ' .. i)
               end
            end
         end
      end
   end)
end)

describe('bf16 rounding', function()
   -- k = 1: each output is one product x * 1, exact in float32, so the output is x rounded to bf16
   local one = fnn.ones(1, 1)
   local function round_through_matmul(values)
      local x = fnn.tensor(values, {#values, 1})
      return with_precision('bf16', function() return x:matmul(one):to_flat() end)
   end

   for _, path in ipairs(PATHS) do
      it('is to nearest, ties to even, bit for bit, with NaN and Inf kept (' .. path .. ' kernels)', function()
         fnn.set_kernels(path)
         local ulp = 2 ^ -7                  -- bf16's spacing in [1, 2)
         local values = {1 + ulp / 2,        -- a tie between 1 (even) and 1 + ulp: 1
                         1 + 3 * ulp / 2,    -- a tie between 1 + ulp and 1 + 2 ulp (even): 1 + 2 ulp
                         -(1 + 3 * ulp / 2), 1 + ulp / 2 + 2 ^ -20, 1 + ulp / 2 - 2 ^ -20,
                         0, -0.0, 1 / 0, -1 / 0, 3.4e38}   -- past bf16's largest finite: inf
         local expect = {1, 1 + 2 * ulp, -(1 + 2 * ulp), 1 + ulp, 1, 0, 0, 1 / 0, -1 / 0, 1 / 0}
         local got = round_through_matmul(values)
         for i = 1, #expect do assert.equals(expect[i], got[i]) end
         for i = 1, #values do assert.equals(bf16(values[i]), got[i]) end
         -- subnormals round like the rest, but the bf16 units' dot product reads them as zero (the
         -- instruction's denormals-are-zero, as in PyTorch's bf16 products)
         local tiny = {1e-40, -2 ^ -130, 3e-39}
         got = round_through_matmul(tiny)
         local native = path == 'onednn' and fnn.config().bf16_path:match('^onednn')
         for i = 1, #tiny do assert.equals(native and 0 or bf16(tiny[i]), got[i]) end
         local nan = round_through_matmul({0 / 0})[1]
         assert.is_true(nan ~= nan)
         -- many values over many magnitudes against the reference
         fnn.manual_seed(3)
         local x = (fnn.randn(4096) * fnn.exp(fnn.randn(4096) * 8)):to_flat()
         got = round_through_matmul(x)
         local wrong = 0
         for i = 1, #x do if got[i] ~= bf16(x[i]) then wrong = wrong + 1 end end
         assert.equals(0, wrong)
      end)
   end
end)

describe('matmul family under bf16', function()
   -- each case: inputs, the op, and the op on |inputs| (the bound of its sums' size)
   local CASES = {
      {'matmul', {{37, 129}, {129, 65}}, function(a, b) return a:matmul(b) end},
      {'matmul of a transposed operand', {{129, 37}, {65, 129}},
       function(a, b) return a:t():matmul(b:t()) end},
      {'bmm', {{3, 17, 33}, {3, 33, 9}}, function(a, b) return fnn.bmm(a, b) end},
      {'linear with a bias', {{40, 70}, {30, 70}, {30}}, function(x, w, b) return fnn.linear(x, w, b) end},
      {'linear without a bias', {{256, 128}, {64, 128}}, function(x, w) return fnn.linear(x, w) end},
   }
   for _, path in ipairs(PATHS) do
      for _, case in ipairs(CASES) do
         it(case[1] .. ': the float32 op on bf16-rounded operands, values and gradients (' .. path .. ')', function()
            fnn.set_kernels(path)
            fnn.manual_seed(11)
            local inputs = {}
            for i, s in ipairs(case[2]) do inputs[i] = fnn.randn(table.unpack(s)) end
            local out_shape = case[3](table.unpack(inputs)):shape()
            local r = rounded(fnn.randn(table.unpack(out_shape)))
            local got = with_precision('bf16', function() return grads(case[3], inputs, r) end)
            -- the reference: rounded operands (the bias is added in float32, not a product operand)
            local ref_inputs = {}
            for i, x in ipairs(inputs) do ref_inputs[i] = (i <= 2) and rounded(x) or x end
            local want = grads(case[3], ref_inputs, r)
            local abs_inputs = {}
            for i, x in ipairs(inputs) do abs_inputs[i] = x:abs() end
            local scale = case[3](table.unpack(abs_inputs)) + 1
            assert.equals('float32', got[1]:dtype())
            assert.is_true(excess(got[1], want[1], scale, 1e-5) <= 0)
            -- gradients of the product operands: against the reference's, to float32 sums' accuracy
            for i = 2, 3 do
               local g_scale = want[i]:abs() + want[i]:abs():max() * 1e-3 + 1
               assert.is_true(excess(got[i], want[i], g_scale, 1e-4) <= 0, case[1] .. ' gradient ' .. (i - 1))
            end
            -- and bf16 did change the result: the exact float32 op differs
            local exact = case[3](table.unpack(inputs))
            assert.is_true(max_abs_diff(exact, got[1]) > 0)
         end)
      end
   end

   -- the float32 composition on rounded operands: S = round(q) round(k)^T scale, causal softmax in float32,
   -- o = round(P) round(v), under either kernels and at any size (the small products and the portable
   -- kernels' own attention kernel take the rounded GEMM too)
   for _, T in ipairs{3, 64} do
      it(('attention\'s products run on rounded operands, T = %d (every kernel path)'):format(T), function()
         fnn.manual_seed(5)
         local q, k, v = fnn.randn(1, 2, T, 32), fnn.randn(1, 2, T, 32), fnn.randn(1, 2, T, 32)
         local scale = 1 / math.sqrt(32)
         local mask = fnn.ones(T, T):triu(1) * -1e30
         local p = (rounded(q):matmul(rounded(k):transpose(3, 4)) * scale + mask):softmax(4)
         local want = rounded(p):matmul(rounded(v))
         for _, path in ipairs(PATHS) do
            fnn.set_kernels(path)
            local got = with_precision('bf16', function() return fnn.attention(q, k, v, {causal = true}) end)
            local diff = max_abs_diff(want, got)
            assert.is_true(diff < 2e-5, ('%s kernels: off the rounded reference by %g'):format(path, diff))
            assert.is_true(max_abs_diff(fnn.attention(q, k, v, {causal = true}), got) > 1e-4, path)
         end
      end)
   end

   it('leaves the other families exact: matmul in bf16 does not touch the convolutions', function()
      fnn.manual_seed(2)
      local x, w = fnn.randn(2, 8, 12, 12), fnn.randn(16, 8, 3, 3)
      local exact = fnn.conv2d(x, w, nil, {padding = 1})
      local got = with_precision({matmul = 'bf16'}, function() return fnn.conv2d(x, w, nil, {padding = 1}) end)
      assert.equals(0, max_abs_diff(exact, got))
      local a, b = fnn.randn(20, 30), fnn.randn(30, 10)
      got = with_precision({conv = 'bf16', rnn = 'bf16'}, function() return a:matmul(b) end)
      assert.equals(0, max_abs_diff(a:matmul(b), got))
   end)
end)

describe('convolutions under bf16', function()
   -- the float32 convolution on rounded operands, up to the order of the float32 sums: each result
   -- is held to 1e-5 of the size of its sum (the same op on |x|, |w| and |incoming gradient|)
   local CASES = {
      {'conv2d', {{2, 8, 12, 12}, {16, 8, 3, 3}}, function(x, w) return fnn.conv2d(x, w, nil, {padding = 1}) end},
      {'conv2d, strided and grouped', {{2, 8, 11, 11}, {12, 4, 3, 3}},
       function(x, w) return fnn.conv2d(x, w, nil, {stride = 2, groups = 2}) end},
      {'conv1d', {{3, 6, 40}, {10, 6, 5}}, function(x, w) return fnn.conv1d(x, w, nil, {padding = 2}) end},
      {'conv3d', {{1, 4, 6, 6, 6}, {8, 4, 3, 3, 3}}, function(x, w) return fnn.conv3d(x, w) end},
      {'conv_transpose2d', {{2, 8, 7, 7}, {8, 6, 3, 3}},
       function(x, w) return fnn.conv_transpose2d(x, w, nil, {stride = 2}) end},
   }
   for _, path in ipairs(PATHS) do
      for _, case in ipairs(CASES) do
         it(case[1] .. ': the float32 op on rounded operands, values and gradients (' .. path .. ')', function()
            fnn.set_kernels(path)
            fnn.manual_seed(13)
            local x, w = fnn.randn(table.unpack(case[2][1])), fnn.randn(table.unpack(case[2][2]))
            local r = rounded(fnn.randn(table.unpack(case[3](x, w):shape())))
            local got = with_precision({conv = 'bf16'}, function() return grads(case[3], {x, w}, r) end)
            local want = grads(case[3], {rounded(x), rounded(w)}, r)
            local bound = grads(case[3], {x:abs(), w:abs()}, r:abs())
            assert.equals('float32', got[1]:dtype())
            for i = 1, 3 do
               assert.is_true(excess(got[i], want[i], bound[i] + 1e-6, 1e-5) <= 0,
                              case[1] .. (i == 1 and ' output' or ' gradient ' .. (i - 1)))
            end
            assert.is_true(max_abs_diff(case[3](x, w), got[1]) > 0)
         end)
      end
   end
end)

describe('recurrent layers under bf16', function()
   for _, kind in ipairs{'LSTM', 'GRU', 'SimpleRNN'} do
      it(kind .. ': outputs and gradients within bf16 tolerance of float32, float32 out', function()
         fnn.manual_seed(17)
         local layer = nn[kind](24, 32, {batch_first = true})
         local x = fnn.randn(4, 9, 24)
         local function run()
            layer:zero_grad()
            local xp = nn.Param(x)
            local y = layer:forward(xp:tensor())
            if type(y) == 'table' then y = y[1] end
            y:sum():backward()
            local g = {y, xp:grad()}
            for _, p in ipairs(layer:parameters()) do g[#g + 1] = p:grad() end
            return g
         end
         local exact = run()
         local got = with_precision({rnn = 'bf16'}, run)
         assert.equals('float32', got[1]:dtype())
         assert.is_true(max_abs_diff(exact[1], got[1]) > 0, 'bf16 left the outputs exact')
         for i = 1, #exact do
            local scale = exact[i]:abs():max():item() + 1
            -- 9 steps of products with 8-bit operands: a few bf16 units of each value's scale
            assert.is_true(max_abs_diff(exact[i], got[i]) <= 2 ^ -5 * scale, kind .. ' result ' .. i)
         end
      end)
   end
end)

describe('recurrent layers under bf16, wide enough for W_hh prepared once (16 rows, 128 units)', function()
   -- oneDNN's path rounds W_hh once and each step's rows (core/blas.c's fnn_gemm_pack_b); the portable
   -- kernels round both at every product: the same numbers up to the order of the float32 sums
   for _, kind in ipairs{'LSTM', 'GRU', 'SimpleRNN'} do
      it(kind .. ': outputs and gradients as the portable kernels give them, rounded (not float32)', function()
         fnn.manual_seed(23)
         local layer = nn[kind](5, 128, {batch_first = true})
         local x, h0 = fnn.randn(16, 6, 5), fnn.randn(1, 16, 128) * 0.5
         local function run(path)
            fnn.set_kernels(path)
            layer:zero_grad()
            local xp, hp = nn.Param(x), nn.Param(h0)
            local state = kind == 'LSTM' and {hp:tensor(), hp:tensor() * 0.5} or hp:tensor()
            local y = layer:forward(xp:tensor(), state)
            ;(y * y):sum():backward()
            local g = {y, xp:grad(), hp:grad()}
            for _, p in ipairs(layer:parameters()) do g[#g + 1] = p:grad() end
            return g
         end
         local exact = run(PATHS[1])
         local got = with_precision({rnn = 'bf16'}, function() return run(PATHS[1]) end)
         local portable = with_precision({rnn = 'bf16'}, function() return run('portable') end)
         -- on 2 threads, two blocks of 8 rows, each block's steps on its thread (rnn.c's run_blocks)
         fnn.set_num_threads(2)
         local blocks = with_precision({rnn = 'bf16'}, function() return run(PATHS[1]) end)
         fnn.set_num_threads(1)
         assert.equals('float32', got[1]:dtype())
         for i = 1, #exact do
            local scale = exact[i]:abs():max():item() + 1
            assert.is_true(max_abs_diff(exact[i], got[i]) <= 2 ^ -5 * scale, kind .. ' result ' .. i)
            assert.is_true(max_abs_diff(portable[i], got[i]) <= 2e-5 * scale, kind .. ' result ' .. i .. ' (portable)')
            assert.is_true(max_abs_diff(portable[i], blocks[i]) <= 2e-5 * scale, kind .. ' result ' .. i .. ' (blocks)')
         end
         assert.is_true(max_abs_diff(exact[1], got[1]) > 2e-4, 'bf16 left the outputs float32')
      end)
   end
end)

describe('LSTM under bf16: the backward\'s dZ', function()
   -- dZ (the gates' pre-activation gradients) feeds three products (dW_ih, dW_hh, dx), which take it rounded
   -- to bfloat16 (rounded once, in place, off the bf16 units: core/ops/rnn.c), and the two bias gradients,
   -- which sum it in float32 as it was: checked against the step written out in double precision
   for _, path in ipairs(PATHS) do
      it('the bias gradients sum it in float32, not its rounding for the weight products (' .. path .. ' kernels)', function()
         fnn.manual_seed(29)
         local N, I, H = 6, 8, 16
         local layer = nn.LSTM(I, H, {batch_first = true})
         local x, r = fnn.randn(N, 1, I), fnn.randn(N, 1, H)
         local got = with_precision({rnn = 'bf16'}, function()
            fnn.set_kernels(path)
            layer:zero_grad()
            local xp = nn.Param(x)   -- dx wanted too: dZ is then an operand of three products
            ;(layer:forward(xp:tensor()) * r):sum():backward()
            return {layer.bias_ih_l0:grad():to_flat(), layer.bias_hh_l0:grad():to_flat()}
         end)
         fnn.set_kernels(PATHS[1])
         -- one step from zero states: z = round(x) round(W_ih)^T + b_ih + b_hh, gates i, f, g, o
         local xs, w = rounded(x):to_flat(), rounded(layer.weight_ih_l0:tensor()):to_flat()
         local bi, bh, rr = layer.bias_ih_l0:tensor():to_flat(), layer.bias_hh_l0:tensor():to_flat(), r:to_flat()
         local function sig(v) return 1 / (1 + math.exp(-v)) end
         local want, scale = {}, 0
         for j = 1, 4 * H do want[j] = 0 end
         for n = 0, N - 1 do
            local z = {}
            for j = 0, 4 * H - 1 do
               local acc = bi[j + 1] + bh[j + 1]
               for p = 0, I - 1 do acc = acc + xs[n * I + p + 1] * w[j * I + p + 1] end
               z[j] = acc
            end
            for u = 0, H - 1 do
               local i, g, o = sig(z[u]), math.tanh(z[2 * H + u]), sig(z[3 * H + u])
               local c = i * g
               local tc, dh = math.tanh(c), rr[n * H + u + 1]
               local dc = dh * o * (1 - tc * tc)
               local dz = {dc * g * i * (1 - i), 0, dc * i * (1 - g * g), dh * tc * o * (1 - o)}   -- df: c0 = 0
               for q = 0, 3 do want[q * H + u + 1] = want[q * H + u + 1] + dz[q + 1] end
            end
         end
         for j = 1, 4 * H do scale = math.max(scale, math.abs(want[j])) end
         for b = 1, 2 do
            local worst = 0
            for j = 1, 4 * H do worst = math.max(worst, math.abs(got[b][j] - want[j])) end
            -- float32 sums of exact operands: ~1e-7 of the scale; dZ rounded to bf16 first: ~1e-3
            assert.is_true(worst <= 1e-5 * scale, ('bias %d: off by %.3g of %.3g'):format(b, worst, scale))
         end
      end)

      it('dW_ih and dx take it rounded: one row, whose dZ is its bias gradient (' .. path .. ' kernels)', function()
         fnn.manual_seed(31)
         local I, H = 8, 16
         local layer = nn.LSTM(I, H, {batch_first = true})
         local x, r = fnn.randn(1, 1, I), fnn.randn(1, 1, H)
         local dz, dw, dx = unpack(with_precision({rnn = 'bf16'}, function()
            fnn.set_kernels(path)
            layer:zero_grad()
            local xp = nn.Param(x)
            ;(layer:forward(xp:tensor()) * r):sum():backward()
            return {layer.bias_ih_l0:grad():to_flat(), layer.weight_ih_l0:grad():to_flat(), xp:grad():to_flat()}
         end))
         fnn.set_kernels(PATHS[1])
         local xs, w = x:to_flat(), layer.weight_ih_l0:tensor():to_flat()
         local scale = 0
         for j = 1, 4 * H do
            for p = 1, I do   -- one product of two bf16 values: exact in float32
               assert.equals(bf16(dz[j]) * bf16(xs[p]), dw[(j - 1) * I + p], ('dW_ih[%d,%d]'):format(j, p))
            end
            scale = math.max(scale, math.abs(dz[j]))
         end
         for p = 1, I do
            local want = 0
            for j = 1, 4 * H do want = want + bf16(dz[j]) * bf16(w[(j - 1) * I + p]) end
            assert.is_true(math.abs(dx[p] - want) <= 1e-6 * scale, ('dx[%d]: %.9g against %.9g'):format(p, dx[p], want))
         end
      end)
   end
end)

describe('the ops that take bfloat16 in C on the CPU and narrow their own output (NATIVE_HOST)', function()
   local precision = require 'fastnn.precision'
   it('names only ops and layers that exist, the convolutions and their layers among them', function()
      for name in pairs(precision.NATIVE_HOST) do
         assert(type(fnn[name]) == 'function' or nn[name] ~= nil, ('NATIVE_HOST names unknown %s'):format(name))
      end
      for _, name in ipairs{'conv1d', 'conv2d', 'conv3d', 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d',
                            'Conv2d', 'ConvTranspose3d', 'DepthwiseConv1d', 'SeparableConv2d', 'Conv2D',
                            'Conv1DTranspose', 'DepthwiseConv2D', 'SeparableConv1D'} do
         assert.is_true(precision.NATIVE_HOST[name], name)
      end
   end)

   it('held (fnn_autocast_hold: inside a wrapped op), a convolution in an autocast region returns float32',
      function()
      -- the wrapper holds C's narrowing while a wrapped op runs on widened inputs, since it narrows the
      -- results itself: a convolution called inside (a layer's forward) gives that op float32, as linear does
      local C = require('fastnn.tensor').C
      fnn.manual_seed(6)
      local x, w = fnn.randn(1, 2, 5), fnn.randn(3, 2, 3)
      local y, z = fnn.autocast('bf16', function()
         C.fnn_autocast_hold(1)
         local ok, r = pcall(fnn.conv1d, x, w)
         C.fnn_autocast_hold(-1)
         assert(ok, r)
         return r, fnn.conv1d(x, w)
      end)
      assert.equals('float32', y:dtype())
      assert.equals('bfloat16', z:dtype())
   end)
end)
