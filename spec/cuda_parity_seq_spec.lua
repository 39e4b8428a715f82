-- CUDA parity of the recurrent layers and fused attention (cuda/rnn.cu, cuda/attention.cu and the
-- device paths of core/ops/rnn.c and core/ops/attention.c): each case runs on the CPU and on GPU 0,
-- forward values and the gradient of every input must agree (spec/cuda_support.lua). Then two
-- 20-step training runs, a small GPT and an LSTM, from the same seed and data on both sides.
--
-- Tolerances, |gpu - cpu| <= atol + rtol |cpu| (the CUDA build uses --use_fast_math):
--   lstm_cell: atol 2e-6, rtol 2e-5, gradients 5x (sigmoid through __expf, tanh in double (fast math would make tanhf tanh.approx)
--     against fastmath.h's polynomials: a few ulp per activation, products of five of them);
--   rnn_tanh, lstm, gru over a sequence: atol 1e-5, rtol 1e-4, gradients 10x (the cells' fast
--     math as lstm_cell, and the per-step cuBLAS products in another summation order, both fed back
--     through T steps; the weight and bias gradients sum over every step);
--   attention: atol 1e-5, rtol 1e-4, gradients 10x (scores and P v by cuBLAS in another summation
--     order over D and Tk up to 129, softmax exp through __expf and its sum in a block tree);
--   attention_cache_append: exact (a copy).
--   the GPT run (embeddings, pre-LN transformer stack with fused attention, GELU MLP, AdamW,
--     cross_entropy) and the LSTM run (nn.LSTM + Linear, Adam, mse): every step's loss within
--     atol 1e-5, rtol 2e-4 (each step's differences feed the next step's weights), the final
--     parameters within atol 1e-3, rtol 1e-3: Adam's normalised step m / sqrt(v) turns the rounding
--     of a gradient near zero into a step of up to lr (3e-3 and 1e-2 here), so a parameter can
--     differ by a fraction of lr while every loss agrees.
-- Under spec/gpu/emulate.sh the GPT run takes 3 steps, not 20: every emulated __syncthreads and
-- warp shuffle is a host-thread barrier, and 20 steps of its layer_norm, softmax and attention
-- rows cost minutes there; on a GPU (spec/gpu/check.sh) it runs all 20.
-- On the GPU nothing is read back to the host in these ops: the sequence loops over time on the
-- host only launch (gemm + a fused cell per step), the attention's masks are applied inside the
-- softmax kernel (no mask tensor).
-- Sizes sit on both sides of the launch edges: batch * hidden 127/128/129/1025 for the cells
-- (a thread per unit), key counts 1/127/128/129 for the attention rows (a block per row, threads
-- over the keys). Inputs are non-contiguous views (transposes, q/k/v narrowed out of one QKV
-- projection, as the models do).
-- Without a usable GPU every case prints "<case>: skipped: no CUDA device" and checks the reason
-- instead. spec/gpu/emulate.sh runs this file against the kernels emulated on the host.
local fnn = require 'fastnn'
local S = require 'cuda_support'
local Device = fnn.Device
local gpu, case, skip, uniform = S.gpu, S.case, S.skip, S.uniform
local parity, parity_grad, assert_close = S.parity, S.parity_grad, S.assert_close

local CELL = {2e-6, 2e-5, 5}
local SEQ = {1e-5, 1e-4, 10}
local ATT = {1e-5, 1e-4, 10}

-- the loss of a training run (and its parameters) must agree step by step
local function same_run(label, want, got, wws, gws)
   for step = 1, #want do
      assert.is_true(math.abs(got[step] - want[step]) <= 1e-5 + 2e-4 * math.abs(want[step]),
                     ('%s: step %d: cpu loss %.9g, cuda %.9g'):format(label, step, want[step], got[step]))
   end
   assert.is_true(want[#want] < want[1] * (#want > 5 and 0.9 or 0.99), label .. ': the run did not learn')
   for i = 1, #wws do
      assert_close(wws[i], gws[i], 1e-3, 1e-3, ('%s: parameter %d after %d steps'):format(label, i, #want))
   end
end

local function params_of(model, dev)
   local ws = {}
   for i, p in ipairs(model:parameters()) do
      assert.equals(dev, p:tensor():device())
      ws[i] = fnn.tensor(p:tensor():to('cpu'):to_flat(), p:tensor():shape())
   end
   return ws
end

describe('cuda parity: lstm_cell, forward and backward', function()
   -- N * H on both sides of the launch edges (256 threads a block)
   for _, nh in ipairs({{1, 127}, {1, 128}, {1, 129}, {5, 205}}) do
      local N, H = nh[1], nh[2]
      case(('lstm_cell N %d, H %d (N H = %d)'):format(N, H, N * H), function()
         parity_grad('lstm_cell', {uniform({N, 4 * H}, -3, 3), uniform({N, H}, -2, 2)}, function(z, c)
            local h, cn = fnn.lstm_cell(z, c)
            return h + cn * 0.5
         end, CELL[1], CELL[2], CELL[3])
      end)
   end
   case('lstm_cell on transposed gates and cell', function()
      parity_grad('lstm_cell', {uniform({4 * 9, 6}, -3, 3), uniform({9, 6}, -2, 2)}, function(z, c)
         local h, cn = z:t():lstm_cell(c:t())
         return h * cn
      end, CELL[1], CELL[2], CELL[3])
   end)
   case('lstm_cell refuses tensors on two devices, naming both', function()
      local z, c = uniform({2, 8}, -1, 1), uniform({2, 2}, -1, 1)
      if not gpu then return skip('lstm_cell', {z, c}) end
      assert.error_matches(function() return fnn.lstm_cell(z:to(gpu), c) end,
                           'lstm_cell: tensors on different devices %(.*cuda:0 and .*cpu%)')
   end)
end)

describe('cuda parity: rnn_tanh, lstm, gru over a sequence, every gradient', function()
   local G = {rnn_tanh = 1, lstm = 4, gru = 3}
   -- out (+ the final cell for lstm) as one tensor, so every output reaches the gradients
   local function run(kind, x, wi, wh, bi, bh, h0, c0, reverse)
      local opts = {h0 = h0, c0 = c0, reverse = reverse}
      if kind == 'lstm' then
         local out, _, cn = fnn.lstm(x, wi, wh, bi, bh, opts)
         local N, H = cn:size(1), cn:size(2)
         return out + cn:reshape(N, 1, H) * 0.5
      end
      return (fnn[kind](x, wi, wh, bi, bh, opts))
   end
   for _, kind in ipairs({'rnn_tanh', 'lstm', 'gru'}) do
      for _, T in ipairs({1, 5}) do
         for _, with_state in ipairs({false, true}) do
            local N, I, H = 3, 4, 7
            local GH = G[kind] * H
            case(('%s T %d, N %d, I %d, H %d, %s'):format(kind, T, N, I, H, with_state and 'h0/c0 given' or 'zero state'),
                 function()
               local ins = {uniform({N, T, I}, -1, 1), uniform({GH, I}, -0.5, 0.5), uniform({GH, H}, -0.5, 0.5),
                            uniform({GH}, -0.5, 0.5), uniform({GH}, -0.5, 0.5)}
               if with_state then
                  ins[6] = uniform({N, H}, -1, 1)
                  if kind == 'lstm' then ins[7] = uniform({N, H}, -1, 1) end
               end
               parity_grad(kind, ins, function(x, wi, wh, bi, bh, h0, c0)
                  return run(kind, x, wi, wh, bi, bh, h0, c0, false)
               end, SEQ[1], SEQ[2], SEQ[3])
            end)
         end
      end
      case(('%s reversed (go_backwards), no biases, x a transposed view, N H = 129'):format(kind), function()
         local N, T, I, H = 3, 4, 5, 43
         local GH = G[kind] * H
         local ins = {uniform({T, N, I}, -1, 1), uniform({GH, I}, -0.3, 0.3), uniform({GH, H}, -0.3, 0.3),
                      uniform({N, H}, -1, 1)}
         if kind == 'lstm' then ins[5] = uniform({N, H}, -1, 1) end
         parity_grad(kind, ins, function(x, wi, wh, h0, c0)
            return run(kind, x:transpose(1, 2), wi, wh, nil, nil, h0, c0, true)
         end, SEQ[1], SEQ[2], SEQ[3])
      end)
   end
   case('gru with only bias_hh, lstm with only bias_ih (the bias broadcasts alone)', function()
      local N, T, I, H = 2, 3, 4, 5
      parity_grad('gru', {uniform({N, T, I}, -1, 1), uniform({3 * H, I}, -0.5, 0.5), uniform({3 * H, H}, -0.5, 0.5),
                          uniform({3 * H}, -0.5, 0.5)},
                  function(x, wi, wh, bh) return (fnn.gru(x, wi, wh, nil, bh)) end, SEQ[1], SEQ[2], SEQ[3])
      parity_grad('lstm', {uniform({N, T, I}, -1, 1), uniform({4 * H, I}, -0.5, 0.5), uniform({4 * H, H}, -0.5, 0.5),
                           uniform({4 * H}, -0.5, 0.5)},
                  function(x, wi, wh, bi) return (fnn.lstm(x, wi, wh, bi)) end, SEQ[1], SEQ[2], SEQ[3])
   end)
   case('lstm refuses a state on another device, naming both', function()
      local x, wi, wh, h0 = uniform({2, 3, 4}, -1, 1), uniform({8, 4}, -1, 1), uniform({8, 2}, -1, 1), uniform({2, 2}, -1, 1)
      if not gpu then return skip('lstm', {x, wi, wh, h0}) end
      assert.error_matches(function() return fnn.lstm(x:to(gpu), wi:to(gpu), wh:to(gpu), nil, nil, {h0 = h0}) end,
                           'lstm: tensors on different devices %(.*cuda:0 and .*cpu%)')
      assert.error_matches(function() return fnn.gru(x:to(gpu), uniform({6, 4}, -1, 1), uniform({6, 2}, -1, 1)) end,
                           'gru: tensors on different devices')
   end)
end)

describe('cuda parity: fused attention, forward and backward of q, k, v', function()
   -- q, k, v [B, H, T, D] as transposed views of [B, T, H, D] (what a projection gives)
   local function heads(t) return t:transpose(2, 3) end
   local function qkv_case(B, H, Tq, Tk, D, causal, label)
      case(('attention B %d, H %d, Tq %d, Tk %d, D %d, %s%s'):format(B, H, Tq, Tk, D, causal and 'causal' or 'full',
                                                                     label or ''), function()
         parity_grad('attention', {uniform({B, Tq, H, D}, -1, 1), uniform({B, Tk, H, D}, -1, 1),
                                   uniform({B, Tk, H, D}, -1, 1)}, function(q, k, v)
            return fnn.attention(heads(q), heads(k), heads(v), {causal = causal})
         end, ATT[1], ATT[2], ATT[3])
      end)
   end
   -- the key counts on both sides of a block's edges (threads stride over a row's keys), one head of
   -- 8: self-attention at 1 and 129, and 4 queries over 127, 128, 129 keys (the rows are the
   -- emulation's cost, the keys the edges)
   for _, T in ipairs({1, 129}) do
      qkv_case(1, 1, T, T, 8, true)
      qkv_case(1, 1, T, T, 8, false)
   end
   for _, T in ipairs({127, 128, 129}) do
      qkv_case(1, 1, 4, T, 8, true)
      qkv_case(1, 1, 4, T, 8, false)
   end
   -- 4 heads of 32 and 64, two batch entries (a gemm call per entry: q's batch stride is not H times
   -- its head stride), one (a single strided-batched call over the heads)
   qkv_case(2, 4, 17, 17, 32, true)
   qkv_case(1, 4, 33, 33, 64, false)
   qkv_case(2, 4, 33, 33, 64, true)
   qkv_case(2, 2, 5, 9, 32, true, ' (new queries after cached keys)')
   qkv_case(2, 2, 9, 5, 8, true, ' (queries that see no key: zeros)')

   case('attention on q, k, v narrowed out of one QKV projection [B, T, 3 E], causal, 4 heads of 8', function()
      local B, T, H, D = 2, 17, 4, 8
      local E = H * D
      parity_grad('attention', {uniform({B, T, 3 * E}, -1, 1)}, function(qkv)
         local function split(i) return qkv:narrow(3, i * E + 1, E):reshape(B, T, H, D):transpose(2, 3) end
         return fnn.attention(split(0), split(1), split(2), {causal = true})
      end, ATT[1], ATT[2], ATT[3])
   end)

   case('attention with a contiguous [B, H, T, D] q, k, v, Dv != D and a scale', function()
      parity_grad('attention', {uniform({2, 3, 6, 8}, -1, 1), uniform({2, 3, 7, 8}, -1, 1), uniform({2, 3, 7, 5}, -1, 1)},
                  function(q, k, v) return fnn.attention(q, k, v, {scale = 0.7}) end, ATT[1], ATT[2], ATT[3])
   end)

   case('attention with a key padding mask (float32 and int64, a row all padding), causal and not', function()
      local B, H, T, D = 2, 2, 6, 8
      local rows = {{0, 0, 0, 1, 1, 1}, {1, 1, 1, 1, 1, 1}}
      for _, causal in ipairs({false, true}) do
         for _, long in ipairs({false, true}) do
            local mask = fnn.tensor(rows)
            if long then mask = mask:long() end
            parity_grad('attention', {uniform({B, H, T, D}, -1, 1), uniform({B, H, T, D}, -1, 1),
                                      uniform({B, H, T, D}, -1, 1)}, function(q, k, v)
               return fnn.attention(q, k, v, {causal = causal, key_padding_mask = mask:to(q:device())})
            end, ATT[1], ATT[2], ATT[3])
         end
      end
   end)

   case('attention refuses q, k, v on two devices, naming both', function()
      local q = uniform({1, 2, 3, 4}, -1, 1)
      if not gpu then return skip('attention', {q}) end
      assert.error_matches(function() return fnn.attention(q:to(gpu), q, q:to(gpu)) end,
                           'attention: tensors on different devices %(.*cuda:0 and .*cpu%)')
      assert.error_matches(function()
         return fnn.attention(q:to(gpu), q:to(gpu), q:to(gpu), {key_padding_mask = fnn.zeros(1, 3)})
      end, 'attention: tensors on different devices')
   end)
end)

describe('cuda parity: attention_cache_append', function()
   case('appends strided keys and values over a few steps into [B, H, cap, D] buffers', function()
      local B, H, cap, D = 2, 3, 9, 5
      parity('attention_cache_append', {uniform({B, 2, H, D}, -1, 1), uniform({B, 1, H, D}, -1, 1),
                                        uniform({B, 4, H, D}, -1, 1)}, function(a, b, c)
         local kc, vc = fnn.zeros(B, H, cap, D):to(a:device()), fnn.zeros(B, H, cap, D):to(a:device())
         local pos = 1
         for _, x in ipairs({a, b, c}) do   -- steps of 2, 1 and 4 positions, read transposed
            local t = x:size(2)
            fnn.attention_cache_append(kc, vc, x:transpose(2, 3), x:transpose(2, 3) * -2, pos)
            pos = pos + t
         end
         return kc + vc * 10   -- both buffers, exactly: vc = -2 kc where written, 0 elsewhere
      end, 0, 1e-6)
   end)
   case('a cached GPT decode (nn.TransformerStack.causal:forward_cached) gives the same outputs', function()
      fnn.manual_seed(3)
      local x = uniform({2, 6, 16}, -1, 1)
      if not gpu then return skip('forward_cached', {x}) end
      local function decode(dev)
         fnn.manual_seed(11)
         local stack = fnn.nn.TransformerStack.causal(16, 2, 32, 2)
         stack:to_device(dev)
         stack:eval()
         local cache, outs = stack:new_cache({capacity = 6}), {}
         local xd = x:to(dev)
         for _, span in ipairs({{1, 3}, {4, 1}, {5, 2}}) do   -- a prompt of 3, then 1, then 2 positions
            outs[#outs + 1] = stack:forward_cached(xd:narrow(2, span[1], span[2]), cache):to('cpu')
         end
         return outs
      end
      local want, got = decode(Device.cpu()), decode(gpu)
      for i = 1, #want do assert_close(want[i], got[i], ATT[1] * 10, ATT[2] * 10, ('forward_cached: chunk %d'):format(i)) end
   end)
end)

describe('cuda parity: training runs of the sequence models', function()
   case('small GPT (vocab 65, context 16, width 32, 2 heads, 2 pre-LN layers, AdamW): 20 steps, same losses', function()
      local V, T, W, NH, L, BS = 65, 16, 32, 2, 2, 2
      local STEPS = os.getenv('FASTNN_EMULATED_GPU') and 3 or 20
      fnn.manual_seed(5)
      local ids, pos = {}, {}
      for i = 1, BS * (T + 1) do ids[i] = (i * 37 + (i * i) % 11) % V + 1 end
      for t = 1, T do pos[t] = t end
      local seq = fnn.tensor(ids, {BS, T + 1}):long()
      local x, y = seq:narrow(2, 1, T):contiguous(), seq:narrow(2, 2, T):contiguous():reshape(BS * T)
      local positions = fnn.tensor(pos, {1, T}):long()
      if not gpu then return skip('gpt', {x, y}) end
      local function train(dev)
         fnn.manual_seed(42)
         local nn = fnn.nn
         local model = nn.Sequential()   -- a holder of every parameter, for to_device and the optimizer
         local tok, posemb = nn.Embedding(V, W), nn.Embedding(T, W)
         local stack, head = nn.TransformerStack.causal(W, NH, 4 * W, L, 0), nn.Linear(W, V)
         for _, m in ipairs({tok, posemb, stack, head}) do model:add(m) end
         model:to_device(dev)
         model:train()
         local opt = fnn.optim.AdamW(model:parameters(), 3e-3, {weight_decay = 0.01})
         local xd, yd, pd, losses = x:to(dev), y:to(dev), positions:to(dev), {}
         for step = 1, STEPS do
            local h = tok:forward(xd) + posemb:forward(pd)
            local logits = head:forward(stack:forward(h)):reshape(BS * T, V)
            local loss = fnn.nn.cross_entropy(logits, yd)
            assert.equals(dev, loss:device())
            opt:zero_grad()
            loss:backward()
            opt:step()
            losses[step] = loss:to('cpu'):item()
         end
         return losses, params_of(model, dev)
      end
      local want, wws = train(Device.cpu())
      local got, gws = train(gpu)
      same_run('gpt', want, got, wws, gws)
   end)

   case('LSTM (nn.LSTM 2 layers + Linear, Adam, mse): 20 steps, same losses', function()
      fnn.manual_seed(9)
      local x, y = uniform({8, 6, 5}, -1, 1), uniform({8, 3}, -1, 1)
      if not gpu then return skip('lstm run', {x, y}) end
      local function train(dev)
         fnn.manual_seed(42)
         local lstm = fnn.nn.LSTM(5, 12, {num_layers = 2, return_sequences = false})
         local head = fnn.nn.Linear(12, 3)
         local model = fnn.nn.Sequential(lstm, head)
         model:to_device(dev)
         local opt = fnn.optim.Adam(model:parameters(), 1e-2)
         local xd, yd, losses = x:to(dev), y:to(dev), {}
         for step = 1, 20 do
            local loss = fnn.nn.mse(model(xd), yd)
            assert.equals(dev, loss:device())
            opt:zero_grad()
            loss:backward()
            opt:step()
            losses[step] = loss:to('cpu'):item()
         end
         return losses, params_of(model, dev)
      end
      local want, wws = train(Device.cpu())
      local got, gws = train(gpu)
      same_run('lstm', want, got, wws, gws)
   end)
end)
