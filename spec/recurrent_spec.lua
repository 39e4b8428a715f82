-- nn.SimpleRNN, nn.LSTM, nn.GRU (one C node per layer over the whole sequence), nn.Reverse and
-- nn.Bidirectional: values against a step-by-step implementation of PyTorch's formulas in plain
-- Lua (doubles), over several layers, with initial states, go_backwards and return_sequences;
-- gradients through time into the input and the initial states by finite differences (the
-- weights' are in spec/cases/rnn.lua); shapes for a table of configurations; Bidirectional
-- against its two layers run by the naive code; dropout between layers; the errors.
local fnn = require 'fastnn'
local nn = fnn.nn
local S = require 'support'
local approx, err_of = S.approx, S.err_of

local function sig(x) return 1 / (1 + math.exp(-x)) end
local function tanh(x)
   if x > 20 then return 1 elseif x < -20 then return -1 end
   local e = math.exp(2 * x)
   return (e - 1) / (e + 1)
end

-- w[row] . v + b[row]
local function lin(w, b, v, row)
   local acc = b and b[row] or 0
   local wr = w[row]
   for k = 1, #v do acc = acc + wr[k] * v[k] end
   return acc
end

-- one layer step by step: xs[n][t] feature rows; p = {wi, wh, bi, bh} as tables (b may be nil);
-- h0[n], c0[n] rows or nil. Returns outs[n][s] (processing order), h[n], c[n]
local function naive_layer(kind, xs, p, h0, c0, reverse)
   local N, T, H = #xs, #xs[1], #p.wh[1]
   local outs, hN, cN = {}, {}, {}
   for n = 1, N do
      local h, c = {}, {}
      for j = 1, H do h[j] = h0 and h0[n][j] or 0; c[j] = c0 and c0[n][j] or 0 end
      outs[n] = {}
      for s = 1, T do
         local x = xs[n][reverse and T + 1 - s or s]
         local hn, cn = {}, {}
         for j = 1, H do
            if kind == 'lstm' then
               local function gate(q) return lin(p.wi, p.bi, x, q * H + j) + lin(p.wh, p.bh, h, q * H + j) end
               local i, f, g, o = sig(gate(0)), sig(gate(1)), tanh(gate(2)), sig(gate(3))
               cn[j] = f * c[j] + i * g
               hn[j] = o * tanh(cn[j])
            elseif kind == 'gru' then
               local r = sig(lin(p.wi, p.bi, x, j) + lin(p.wh, p.bh, h, j))
               local z = sig(lin(p.wi, p.bi, x, H + j) + lin(p.wh, p.bh, h, H + j))
               local nv = tanh(lin(p.wi, p.bi, x, 2 * H + j) + r * lin(p.wh, p.bh, h, 2 * H + j))
               hn[j] = (1 - z) * nv + z * h[j]
            else
               hn[j] = tanh(lin(p.wi, p.bi, x, j) + lin(p.wh, p.bh, h, j))
            end
         end
         h, c = hn, kind == 'lstm' and cn or c
         outs[n][s] = h
      end
      hN[n], cN[n] = h, c
   end
   return outs, hN, cN
end

local KIND = {LSTM = 'lstm', GRU = 'gru', SimpleRNN = 'rnn_tanh'}

local has_onednn = not fnn.config().onednn:match('^not built')
-- fn(), then the kernels (oneDNN's where built) and the thread count put back, whatever fn set; its
-- failure raised after
local function restoring_kernels(fn)
   local threads = fnn.get_num_threads()
   local ok, err = pcall(fn)
   if has_onednn then fnn.set_kernels('onednn') end
   fnn.set_num_threads(threads)
   assert(ok, err)
end

-- the whole stack of module m on x (a tensor), naive; h0s/c0s tensors [L, N, H] or nil.
-- Returns outs (nested [N][T][H]), hs[l][n], cs[l][n]
local function naive_stack(m, x, h0s, c0s)
   local kind = KIND[m._name]
   local input = x:to_table()
   local hs, cs = {}, {}
   local h0t, c0t = h0s and h0s:to_table(), c0s and c0s:to_table()
   for k = 0, m.num_layers - 1 do
      local b1, b2 = m['bias_ih_l' .. k], m['bias_hh_l' .. k]
      local p = {wi = m['weight_ih_l' .. k]:tensor():to_table(), wh = m['weight_hh_l' .. k]:tensor():to_table(),
                 bi = b1 and b1:tensor():to_table(), bh = b2 and b2:tensor():to_table()}
      local outs, h, c = naive_layer(kind, input, p, h0t and h0t[k + 1], c0t and c0t[k + 1],
                                     k == 0 and m.go_backwards)
      hs[k + 1], cs[k + 1] = h, c
      input = outs
   end
   return input, hs, cs
end

local function flat(t, acc)
   acc = acc or {}
   for _, v in ipairs(t) do
      if type(v) == 'table' then flat(v, acc) else acc[#acc + 1] = v end
   end
   return acc
end

-- time-reversed copy of nested [N][T][...]
local function reversed(outs)
   local r = {}
   for n, row in ipairs(outs) do
      r[n] = {}
      for s = 1, #row do r[n][s] = row[#row + 1 - s] end
   end
   return r
end

describe('nn.LSTM, nn.GRU, nn.SimpleRNN', function()
   for _, name in ipairs{'LSTM', 'GRU', 'SimpleRNN'} do
      local is_lstm = name == 'LSTM'

      it(name .. ' matches the step-by-step formulas over two layers with initial states', function()
         fnn.manual_seed(1)
         local m = nn[name](3, 4, {num_layers = 2})
         local x, h0 = fnn.randn(2, 5, 3), fnn.randn(2, 2, 4) * 0.5
         local c0 = is_lstm and fnn.randn(2, 2, 4) * 0.5 or nil
         local y, st = m:forward(x, is_lstm and {h0, c0} or h0)
         local outs, hs, cs = naive_stack(m, x, h0, c0)
         assert.same({2, 5, 4}, y:shape())
         approx(flat(outs), y, 1e-5)
         local h = is_lstm and st[1] or st
         assert.same({2, 2, 4}, h:shape())
         approx(flat(hs), h, 1e-5)
         if is_lstm then approx(flat(cs), st[2], 1e-5) end
      end)

      it(name .. ' reads backwards with go_backwards and returns outputs in processing order', function()
         fnn.manual_seed(2)
         local m = nn[name](2, 3, {go_backwards = true, num_layers = 2})
         local x = fnn.randn(3, 4, 2)
         local y, st = m(x)
         local outs, hs = naive_stack(m, x)
         approx(flat(outs), y, 1e-5)
         approx(flat(hs), is_lstm and st[1] or st, 1e-5)
         -- processing order: the first output has seen only the last step of x
         local one = m(x:narrow(2, 4, 1))
         approx(one:select(2, 1):to_flat(), y:select(2, 1), 1e-5)
      end)

      it(name .. ' without biases, zero states, and return_sequences = false', function()
         fnn.manual_seed(3)
         local m = nn[name](3, 2, {bias = false, return_sequences = false})
         assert.is_nil(m.bias_ih_l0)
         local x = fnn.randn(4, 6, 3)
         local y, st = m(x)
         assert.same({4, 2}, y:shape())
         local outs, hs = naive_stack(m, x)
         local last = {}
         for n = 1, 4 do last[n] = outs[n][6] end
         approx(flat(last), y, 1e-5)
         approx(flat(hs), is_lstm and st[1] or st, 1e-5)
      end)

      it(name .. ' matches the formulas at 16 and 32 hidden units and 5 rows', function()
         for _, H in ipairs{16, 32} do
            fnn.manual_seed(10 + H)
            local m = nn[name](3, H, {num_layers = 2, go_backwards = H == 32})
            local x, h0 = fnn.randn(5, 3, 3), fnn.randn(2, 5, H) * 0.5
            local c0 = is_lstm and fnn.randn(2, 5, H) * 0.5 or nil
            local y, st = m(x, is_lstm and {h0, c0} or h0)
            local outs, hs, cs = naive_stack(m, x, h0, c0)
            approx(flat(outs), y, 1e-5)
            approx(flat(hs), is_lstm and st[1] or st, 1e-5)
            if is_lstm then approx(flat(cs), st[2], 1e-5) end
         end
      end)

      it(name .. ' reads a non-contiguous input', function()
         fnn.manual_seed(4)
         local m = nn[name](3, 2)
         local xt = fnn.randn(5, 2, 3)                      -- time-major, seen batch first
         local x = xt:transpose(1, 2)
         assert.is_false(x:is_contiguous())
         approx(flat((naive_stack(m, x))), m(x), 1e-5)
      end)

      it(name .. ' backpropagates through time into the input and the initial states', function()
         fnn.manual_seed(5)
         local m = nn[name](2, 3, {num_layers = 2})
         local fn
         if is_lstm then
            fn = function(x, h0, c0) local y, st = m(x, {h0, c0}); return y + st[2]:sum() * 0.3 end
         else
            fn = function(x, h0) local y, st = m(x, h0); return y + st:sum() * 0.3 end
         end
         local inputs = {fnn.randn(2, 4, 2), fnn.randn(2, 2, 3) * 0.5}
         if is_lstm then inputs[3] = fnn.randn(2, 2, 3) * 0.5 end
         local ok, report = fnn.gradcheck(fn, inputs, {atol = 2e-2, rtol = 2e-2})
         assert(ok, report)
         -- and with go_backwards
         local mb = nn[name](2, 3, {go_backwards = true, return_sequences = false})
         local ok2, report2 = fnn.gradcheck(function(x, h0)
            local y = mb(x, is_lstm and {h0, h0 * 0.5} or h0); return y end,
            {fnn.randn(3, 3, 2), fnn.randn(1, 3, 3)}, {atol = 2e-2, rtol = 2e-2})
         assert(ok2, report2)
      end)

      it(name .. ' gives every weight and bias a gradient equal to the step-by-step chain rule', function()
         fnn.manual_seed(6)
         local m = nn[name](2, 2)
         local x = fnn.randn(2, 3, 2)
         m(x):sum():backward()
         -- finite differences of the naive forward on one weight entry of each parameter
         for _, pair in ipairs(m:named_parameters()) do
            local pname, p = pair[1], pair[2]
            local base = p:tensor()
            local vals = base:to_flat()
            local eps, j = 1e-3, 2
            local analytic = p:grad():to_flat()[j]
            -- the loss at weight entry j = v, and the float32 value that entry really took
            local function loss_with(v)
               vals[j] = v
               p:set(fnn.tensor(vals, base:shape()))
               local s = 0
               for _, e in ipairs(flat((naive_stack(m, x)))) do s = s + e end
               return s, p:tensor():to_flat()[j]
            end
            local v0 = vals[j]
            local lp, vp = loss_with(v0 + eps)
            local lm, vm = loss_with(v0 - eps)
            local numeric = (lp - lm) / (vp - vm)
            loss_with(v0)
            assert.is_true(math.abs(numeric - analytic) < 1e-3 * math.max(1, math.abs(numeric)),
                           ('%s: analytic %.6g numeric %.6g'):format(pname, analytic, numeric))
         end
      end)

      -- wide enough that each step's product with W_hh runs on weights prepared once per sequence (oneDNN's
      -- layout, core/blas.c's fnn_gemm_pack_b): 32 rows, 128 units, 6 steps, with initial states so that
      -- every step multiplies; on 2 threads the rows run as two blocks of 16, each block's steps on its
      -- thread (rnn.c's run_blocks). Forward against the formulas on 1 and 2 threads, gradients on both
      -- against the portable kernels (OpenBLAS at every step) where oneDNN is built, and W_hh's against
      -- finite differences of the formulas
      it(name .. ' at 128 units and 32 rows (weights prepared once, blocks of rows) as the formulas and the portable kernels', function()
         fnn.manual_seed(12)
         local N, T, H = 32, 6, 128
         local m = nn[name](5, H)
         local x, h0 = fnn.randn(N, T, 5), fnn.randn(1, N, H) * 0.5
         local c0 = is_lstm and fnn.randn(1, N, H) * 0.5 or nil
         local state = is_lstm and {h0, c0} or h0
         local outs = naive_stack(m, x, h0, c0)
         local weights = fnn.randn(N, T, H)
         local function run(kernels, nthreads)
            fnn.set_kernels(kernels)
            fnn.set_num_threads(nthreads)
            local xp, hp = fnn.Param(x), fnn.Param(h0)
            local cp = c0 and fnn.Param(c0)
            m:zero_grad()
            local y = m(xp:tensor(), is_lstm and {hp:tensor(), cp:tensor()} or hp:tensor())
            ;(y * weights):sum():backward()
            local grads = {xp:grad():to_flat(), hp:grad():to_flat(), cp and cp:grad():to_flat()}
            for _, pair in ipairs(m:named_parameters()) do grads[#grads + 1] = pair[2]:grad():to_flat() end
            return y, grads
         end
         restoring_kernels(function()
            local y2, g2 = run(has_onednn and 'onednn' or 'portable', 2)
            approx(flat(outs), y2, 2e-5)
            local y1, g1 = run(has_onednn and 'onednn' or 'portable', 1)
            approx(flat(outs), y1, 2e-5)
            if has_onednn then
               local _, gp = run('portable', 1)
               for k = 1, #gp do approx(gp[k], g1[k], 1e-4); approx(gp[k], g2[k], 1e-4) end
            end
            -- W_hh's gradient at two entries against the formulas' finite differences
            local p = m.weight_hh_l0
            local base = p:tensor()
            local vals, analytic = base:to_flat(), p:grad():to_flat()
            local wv = weights:to_flat()
            local function loss_with(j, v)
               vals[j] = v
               p:set(fnn.tensor(vals, base:shape()))
               local s, o = 0, flat((naive_stack(m, x, h0, c0)))
               for i = 1, #o do s = s + o[i] * wv[i] end
               return s, p:tensor():to_flat()[j]
            end
            for _, j in ipairs{7, #vals - 300} do
               local v0 = vals[j]
               local lp, vp = loss_with(j, v0 + 1e-2)
               local lm, vm = loss_with(j, v0 - 1e-2)
               loss_with(j, v0)
               local numeric = (lp - lm) / (vp - vm)
               assert.is_true(math.abs(numeric - analytic[j]) < 2e-3 * math.max(1, math.abs(numeric)),
                              ('weight_hh[%d]: analytic %.6g numeric %.6g'):format(j, analytic[j], numeric))
            end
         end)
      end)

      -- rows that do not split evenly: 33 on 2 threads run as blocks of 16 and 17, each block size with its
      -- own packed product; outputs and every gradient as the portable kernels on one thread give them
      it(name .. ' in uneven blocks of rows (33 on 2 threads) as the portable kernels', function()
         fnn.manual_seed(33)
         local m = nn[name](5, 128)
         local x, h0, w = fnn.randn(33, 7, 5), fnn.randn(1, 33, 128) * 0.5, fnn.randn(33, 7, 128)
         local function run(kernels, nthreads)
            fnn.set_kernels(kernels)
            fnn.set_num_threads(nthreads)
            m:zero_grad()
            local xp, hp = fnn.Param(x), fnn.Param(h0)
            local y = m(xp:tensor(), is_lstm and {hp:tensor(), hp:tensor() * 0.5} or hp:tensor())
            ;(y * w):sum():backward()
            local r = {y:to_flat(), xp:grad():to_flat(), hp:grad():to_flat()}
            for _, p in ipairs(m:parameters()) do r[#r + 1] = p:grad():to_flat() end
            return r
         end
         restoring_kernels(function()
            local blocks, want = run(has_onednn and 'onednn' or 'portable', 2), run('portable', 1)
            for k = 1, #want do approx(want[k], blocks[k], 1e-4) end
         end)
      end)

      it(name .. ' makes one graph node per layer, not per step', function()
         local m = nn[name](4, 8, {num_layers = 2})
         local x = fnn.Param(fnn.randn(2, 40, 4))
         local before = fnn.live_nodes()
         local y, st = m(x:tensor())
         local made = fnn.live_nodes() - before
         assert.is_true(made <= 12, ('%d nodes for 2 layers of 40 steps'):format(made))
         assert.truthy(y:grad_fn())
         y, st = nil, nil
      end)
   end

   it('returns the shapes of a table of configurations', function()
      local N, T, I, H = 3, 5, 4, 6
      for _, name in ipairs{'LSTM', 'GRU', 'SimpleRNN'} do
         for _, cfg in ipairs{
            {num_layers = 1, return_sequences = true, go_backwards = false},
            {num_layers = 1, return_sequences = false, go_backwards = false},
            {num_layers = 3, return_sequences = true, go_backwards = true},
            {num_layers = 2, return_sequences = false, go_backwards = true},
         } do
            local m = nn[name](I, H, cfg)
            local y, st = m(fnn.randn(N, T, I))
            local want = cfg.return_sequences and {N, T, H} or {N, H}
            assert.same(want, y:shape())
            assert.same(want, m:output_shape{N, T, I})
            local states = name == 'LSTM' and st or {st}
            for _, s in ipairs(states) do assert.same({cfg.num_layers, N, H}, s:shape()) end
         end
      end
   end)

   it('names parameters as PyTorch, with its layouts and init bound', function()
      local m = nn.LSTM(3, 5, {num_layers = 2})
      local names, shapes = {}, {}
      for i, pair in ipairs(m:named_parameters()) do names[i], shapes[i] = pair[1], pair[2]:tensor():shape() end
      assert.same({'weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0',
                   'weight_ih_l1', 'weight_hh_l1', 'bias_ih_l1', 'bias_hh_l1'}, names)
      assert.same({{20, 3}, {20, 5}, {20}, {20}, {20, 5}, {20, 5}, {20}, {20}}, shapes)
      assert.same({15, 4}, nn.GRU(4, 5).weight_ih_l0:tensor():shape())
      assert.same({5, 5}, nn.SimpleRNN(4, 5).weight_hh_l0:tensor():shape())
      local bound = 1 / math.sqrt(5)
      for _, p in ipairs(m:parameters()) do
         for _, v in ipairs(p:tensor():to_flat()) do assert.is_true(math.abs(v) <= bound) end
      end
   end)

   it('builds lazily from {units = H} (Keras)', function()
      local m = nn.GRU{units = 4, return_sequences = false}
      assert.equals(0, #m:parameters())
      assert.same({2, 4}, m:build{2, 7, 3})
      assert.same({12, 3}, m.weight_ih_l0:tensor():shape())
      local m2 = nn.LSTM{units = 2}
      local y = m2(fnn.randn(1, 3, 5))
      assert.same({1, 3, 2}, y:shape())
      assert.same({8, 5}, m2.weight_ih_l0:tensor():shape())
   end)

   it('drops out between layers in training only, reproducibly', function()
      local m = nn.LSTM(3, 4, {num_layers = 2, dropout = 0.5})
      local x = fnn.randn(2, 4, 3)
      fnn.manual_seed(7)
      local a = m(x):to_flat()
      fnn.manual_seed(7)
      local b = m(x):to_flat()
      approx(a, b, 0)
      m:eval()
      local e = m(x)
      approx(flat((naive_stack(m, x))), e, 1e-5)
      local differs = false
      for i, v in ipairs(e:to_flat()) do differs = differs or math.abs(v - a[i]) > 1e-6 end
      assert.is_true(differs)
   end)

   it('refuses an input of the wrong width or rank and states of the wrong shape', function()
      local m = nn.LSTM(3, 4, {num_layers = 2})
      assert.matches('recurrent_spec.lua:%d+: nn%.LSTM%(3 %-> 4, num_layers=2%): input %[2,5,2%] has 2 features, expected 3',
                     err_of(function() local _ = m(fnn.zeros(2, 5, 2)) end))
      assert.matches('recurrent_spec.lua:%d+: nn%.LSTM%(3 %-> 4, num_layers=2%): input %[5,3%] is not %[N, T, features%]',
                     err_of(function() local _ = m(fnn.zeros(5, 3)) end))
      assert.matches('recurrent_spec.lua:%d+: nn%.LSTM%(3 %-> 4, num_layers=2%): state h %[1,2,4%] is not %[num_layers, N, H%] = %[2,2,4%]',
                     err_of(function() local _ = m(fnn.zeros(2, 5, 3), {fnn.zeros(1, 2, 4), fnn.zeros(2, 2, 4)}) end))
      assert.matches('recurrent_spec.lua:%d+: nn%.LSTM%(3 %-> 4, num_layers=2%): state c %[2,3,4%] is not',
                     err_of(function() local _ = m(fnn.zeros(2, 5, 3), {fnn.zeros(2, 2, 4), fnn.zeros(2, 3, 4)}) end))
      assert.matches('recurrent_spec.lua:%d+: nn%.LSTM%(3 %-> 4, num_layers=2%): state is a tensor, expected {h, c}',
                     err_of(function() local _ = m(fnn.zeros(2, 5, 3), fnn.zeros(2, 2, 4)) end))
      local g = nn.GRU(3, 4)
      assert.matches('recurrent_spec.lua:%d+: nn%.GRU%(3 %-> 4%): state h %[1,2,5%] is not %[num_layers, N, H%] = %[1,2,4%]',
                     err_of(function() local _ = g(fnn.zeros(2, 5, 3), fnn.zeros(1, 2, 5)) end))
      assert.matches('recurrent_spec.lua:%d+: nn%.SimpleRNN: hidden_size is nil',
                     err_of(function() local _ = nn.SimpleRNN(3) end))
      assert.matches('recurrent_spec.lua:%d+: nn%.LSTM: num_layers is 0',
                     err_of(function() local _ = nn.LSTM(3, 4, {num_layers = 0}) end))
      assert.matches('recurrent_spec.lua:%d+: nn%.GRU: dropout is 1',
                     err_of(function() local _ = nn.GRU(3, 4, {dropout = 1}) end))
      assert.matches("recurrent_spec.lua:%d+: nn%.GRU: unknown option 'hiden' %(options: hidden_size, ",
                     err_of(function() local _ = nn.GRU(3, 4, {hiden = 2}) end))
   end)

   it('fnn.lstm / fnn.gru / fnn.rnn_tanh name the op and the shapes', function()
      local x = fnn.zeros(2, 3, 4)
      assert.matches('recurrent_spec.lua:%d+: lstm: input %[2,3,4%] has 4 features, weight_ih %[8,5%] expects 5',
                     err_of(function() local _ = fnn.lstm(x, fnn.zeros(8, 5), fnn.zeros(8, 2)) end))
      assert.matches('recurrent_spec.lua:%d+: gru: h0 %[2,3%] does not match input %[2,3,4%] and hidden size 2 %(expected %[2,2%]%)',
                     err_of(function() local _ = fnn.gru(x, fnn.zeros(6, 4), fnn.zeros(6, 2), nil, nil, {h0 = fnn.zeros(2, 3)}) end))
      assert.matches('recurrent_spec.lua:%d+: rnn_tanh: weight_hh %[3,2%] is not %[1H,H%]',
                     err_of(function() local _ = fnn.rnn_tanh(x, fnn.zeros(3, 4), fnn.zeros(3, 2)) end))
      assert.matches('recurrent_spec.lua:%d+: lstm: bias_ih %[7%] is not %[8%]',
                     err_of(function() local _ = fnn.lstm(x, fnn.zeros(8, 4), fnn.zeros(8, 2), fnn.zeros(7)) end))
      assert.matches('recurrent_spec.lua:%d+: gru: input %[2,0,4%] has no time steps',
                     err_of(function() local _ = fnn.gru(fnn.zeros(2, 0, 4), fnn.zeros(6, 4), fnn.zeros(6, 2)) end))
   end)
end)

describe('nn.Reverse', function()
   it('flips along time (or another dim) and flips the gradient back', function()
      local x = S.seq{2, 3, 2}
      local y = nn.Reverse()(x)
      assert.same({{{5, 6}, {3, 4}, {1, 2}}, {{11, 12}, {9, 10}, {7, 8}}}, y:to_table())
      assert.same({{{2, 1}, {4, 3}, {6, 5}}, {{8, 7}, {10, 9}, {12, 11}}}, nn.Reverse(-1)(x):to_table())
      local ok, report = fnn.gradcheck(function(t) return nn.Reverse(2)(t) * fnn.tensor{1, 2} end, {fnn.randn(2, 3, 2)})
      assert(ok, report)
      assert.matches('recurrent_spec.lua:%d+: nn%.Reverse%(dim=4%): input %[2,3,2%] has no dim 4',
                     err_of(function() local _ = nn.Reverse(4)(x) end))
   end)
end)

describe('nn.Bidirectional', function()
   for _, name in ipairs{'LSTM', 'GRU', 'SimpleRNN'} do
      it(name .. ' equals its two layers run by hand, in every merge mode', function()
         fnn.manual_seed(8)
         local x = fnn.randn(2, 4, 3)
         for _, merge in ipairs{'concat', 'sum', 'mul', 'ave'} do
            local bi = nn.Bidirectional(nn[name](3, 2), {merge = merge})
            assert.is_true(bi.backward_layer.go_backwards)
            local y, st = bi(x)
            local f = naive_stack(bi.forward_layer, x)
            local b = reversed((naive_stack(bi.backward_layer, x)))   -- back into time order
            local want = {}
            for n = 1, 2 do
               for t = 1, 4 do
                  local fr, br = f[n][t], b[n][t]
                  if merge == 'concat' then
                     for _, v in ipairs(fr) do want[#want + 1] = v end
                     for _, v in ipairs(br) do want[#want + 1] = v end
                  else
                     for j = 1, 2 do
                        local a, c = fr[j], br[j]
                        want[#want + 1] = merge == 'sum' and a + c or merge == 'mul' and a * c or (a + c) / 2
                     end
                  end
               end
            end
            assert.same(merge == 'concat' and {2, 4, 4} or {2, 4, 2}, y:shape())
            approx(want, y, 1e-5)
            assert.equals(2, #st)
         end
      end)
   end

   it('merges the last outputs without return_sequences, and names both directions\' parameters', function()
      fnn.manual_seed(9)
      local bi = nn.Bidirectional(nn.GRU(3, 2, {return_sequences = false}))
      local x = fnn.randn(2, 5, 3)
      local y = bi(x)
      assert.same({2, 4}, y:shape())
      local f = naive_stack(bi.forward_layer, x)
      local b = naive_stack(bi.backward_layer, x)   -- processing order: its last output saw x[:, 1]
      local want = {}
      for n = 1, 2 do
         for _, v in ipairs(f[n][5]) do want[#want + 1] = v end
         for _, v in ipairs(b[n][5]) do want[#want + 1] = v end
      end
      approx(want, y, 1e-5)
      assert.same({2, 4}, bi:output_shape{2, 5, 3})
      local names = {}
      for i, pair in ipairs(bi:named_parameters()) do names[i] = pair[1] end
      assert.equals('forward_layer.weight_ih_l0', names[1])
      assert.equals('backward_layer.weight_ih_l0', names[5])
      assert.equals(8, #names)
   end)

   it('refuses a layer that is not recurrent and an unknown merge', function()
      assert.matches('recurrent_spec.lua:%d+: nn%.Bidirectional: layer is nn%.Linear%(3 %-> 2%), expected',
                     err_of(function() local _ = nn.Bidirectional(nn.Linear(3, 2)) end))
      assert.matches("recurrent_spec.lua:%d+: nn%.Bidirectional: merge 'max' is not one of 'concat'",
                     err_of(function() local _ = nn.Bidirectional(nn.LSTM(3, 2), {merge = 'max'}) end))
      local bi = nn.Bidirectional(nn.LSTM(3, 2))
      assert.matches('recurrent_spec.lua:%d+: Bidirectional%[forward%] nn%.LSTM%(3 %-> 2%): input %[1,2,4%] has 4 features, expected 3',
                     err_of(function() local _ = bi(fnn.zeros(1, 2, 4)) end))
   end)
end)

describe('bidirectional = true (PyTorch\'s form)', function()
   -- each layer: the forward pass, and the backward pass put back in the input's step order,
   -- concatenated per step; layer k + 1 reads both (the naive layer above, twice per layer)
   local function naive_bi(m, x)
      local kind = KIND[m._name]
      local input = x:to_table()
      local hs, cs = {}, {}
      for k = 0, m.num_layers - 1 do
         local halves = {}
         for d, sfx in ipairs{'', '_reverse'} do
            local b1, b2 = m['bias_ih_l' .. k .. sfx], m['bias_hh_l' .. k .. sfx]
            local p = {wi = m['weight_ih_l' .. k .. sfx]:tensor():to_table(),
                       wh = m['weight_hh_l' .. k .. sfx]:tensor():to_table(),
                       bi = b1 and b1:tensor():to_table(), bh = b2 and b2:tensor():to_table()}
            local outs, h, c = naive_layer(kind, input, p, nil, nil, d == 2)
            halves[d] = d == 2 and reversed(outs) or outs
            hs[#hs + 1], cs[#cs + 1] = h, c
         end
         local joined = {}
         for n = 1, #halves[1] do
            joined[n] = {}
            for s = 1, #halves[1][n] do
               local row = {}
               for _, v in ipairs(halves[1][n][s]) do row[#row + 1] = v end
               for _, v in ipairs(halves[2][n][s]) do row[#row + 1] = v end
               joined[n][s] = row
            end
         end
         input = joined
      end
      return input, hs, cs
   end

   for _, name in ipairs{'LSTM', 'GRU', 'SimpleRNN'} do
      it(name .. ': outputs [N, T, 2H] and states [2L, N, H] as a naive pass in both directions', function()
         fnn.manual_seed(23)
         local m = nn[name](3, 4, {num_layers = 2, bidirectional = true})
         local x = fnn.randn(2, 5, 3)
         local y, state = m(x)
         assert.same({2, 5, 8}, y:shape())
         local outs, hs, cs = naive_bi(m, x)
         approx(flat(outs), y, 1e-5)
         local h = name == 'LSTM' and state[1] or state
         assert.same({4, 2, 4}, h:shape())
         approx(flat(hs), h, 1e-5)
         if name == 'LSTM' then approx(flat(cs), state[2], 1e-5) end
         -- the last layer's two final states without return_sequences; gradients reach both directions
         local last = nn[name](3, 4, {num_layers = 2, bidirectional = true, return_sequences = false})
         for _, pair in ipairs(m:named_parameters()) do last[pair[1]]:set(pair[2]:tensor()) end
         local z = last(x)
         assert.same({2, 8}, z:shape())
         approx(flat(fnn.cat({h:select(1, 3), h:select(1, 4)}, 2):to_table()), z, 1e-6)
         z:sum():backward()
         assert.is_not_nil(last.weight_hh_l1_reverse:grad())
      end)
   end

   it('names its parameters as PyTorch and refuses go_backwards with it and nn.Bidirectional around it', function()
      local m = nn.GRU(3, 2, {bidirectional = true})
      local names = {}
      for _, p in ipairs(m:named_parameters()) do names[#names + 1] = p[1] end
      assert.same({'weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0', 'weight_ih_l0_reverse',
                   'weight_hh_l0_reverse', 'bias_ih_l0_reverse', 'bias_hh_l0_reverse'}, names)
      assert.equals('nn.GRU(3 -> 2, bidirectional)', tostring(m))
      assert.matches('recurrent_spec.lua:%d+: nn%.GRU: go_backwards and bidirectional together',
                     err_of(function() local _ = nn.GRU(3, 2, {bidirectional = true, go_backwards = true}) end))
      assert.matches('nn%.Bidirectional wraps a one%-way layer',
                     err_of(function() local _ = nn.Bidirectional(m) end))
   end)
end)
