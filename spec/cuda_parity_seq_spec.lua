-- CUDA parity of the sequence models' device mechanics (cuda/rnn.cu, cuda/attention.cu and the device
-- paths of core/ops/rnn.c and core/ops/attention.c): the refusal of tensors on two devices,
-- attention_cache_append (exact: a copy) and a cached GPT decode against the CPU, then two 20-step
-- training runs, a small GPT and an LSTM, from the same seed and data on both sides. The values and
-- gradients of lstm_cell, rnn_tanh, lstm, gru and attention (the launch edges, strided views, masks)
-- are cases of spec/cases/rnn.lua and spec/cases/attention.lua, run on both sides by
-- cuda_parity_spec with their tolerances.
--
-- Tolerances, |gpu - cpu| <= atol + rtol |cpu| (the CUDA build uses --use_fast_math):
--   attention_cache_append: exact (a copy); forward_cached: atol 1e-4, rtol 1e-3 (a stack of
--     layers, each as the attention cases' 1e-5, 1e-4);
--   the GPT run (embeddings, pre-LN transformer stack with fused attention, GELU MLP, AdamW,
--     cross_entropy) and the LSTM run (nn.LSTM + Linear, Adam, mse): every step's loss within
--     atol 1e-5, rtol 2e-4 (each step's differences feed the next step's weights), the final
--     parameters within atol 1e-3, rtol 1e-3: Adam's normalised step m / sqrt(v) turns the rounding
--     of a gradient near zero into a step of up to lr (3e-3 and 1e-2 here), so a parameter can
--     differ by a fraction of lr while every loss agrees.
-- Under spec/gpu/emulate.sh the GPT run takes 3 steps, not 20: every emulated __syncthreads and
-- warp shuffle is a host-thread barrier, and 20 steps of its layer_norm, softmax and attention
-- rows cost minutes there; on a GPU (spec/gpu/check.sh) it runs all 20.
-- Without a usable GPU every case prints "<case>: skipped: no CUDA device" and checks the reason
-- instead. spec/gpu/emulate.sh runs this file against the kernels emulated on the host.
local fnn = require 'fastnn'
local S = require 'cuda_support'
local Device = fnn.Device
local gpu, case, skip, uniform = S.gpu, S.case, S.skip, S.uniform
local parity, assert_close = S.parity, S.assert_close

local ATT = {1e-5, 1e-4, 10}   -- the attention cases' tolerance (spec/cases/attention.lua)

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

describe('cuda: the recurrent and attention ops refuse tensors on two devices', function()
   case('lstm_cell refuses tensors on two devices, naming both', function()
      local z, c = uniform({2, 8}, -1, 1), uniform({2, 2}, -1, 1)
      if not gpu then return skip('lstm_cell', {z, c}) end
      assert.error_matches(function() return fnn.lstm_cell(z:to(gpu), c) end,
                           'lstm_cell: tensors on different devices %(.*cuda:0 and .*cpu%)')
   end)
   case('lstm refuses a state on another device, naming both', function()
      local x, wi, wh, h0 = uniform({2, 3, 4}, -1, 1), uniform({8, 4}, -1, 1), uniform({8, 2}, -1, 1), uniform({2, 2}, -1, 1)
      if not gpu then return skip('lstm', {x, wi, wh, h0}) end
      assert.error_matches(function() return fnn.lstm(x:to(gpu), wi:to(gpu), wh:to(gpu), nil, nil, {h0 = h0}) end,
                           'lstm: tensors on different devices %(.*cuda:0 and .*cpu%)')
      assert.error_matches(function() return fnn.gru(x:to(gpu), uniform({6, 4}, -1, 1), uniform({6, 2}, -1, 1)) end,
                           'gru: tensors on different devices')
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
         local xd, yd, pd = x:to(dev), y:to(dev), positions:to(dev)
         local losses = S.train_steps(dev, STEPS, opt, function()
            local h = tok:forward(xd) + posemb:forward(pd)
            return fnn.nn.cross_entropy(head:forward(stack:forward(h)):reshape(BS * T, V), yd)
         end)
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
         local xd, yd = x:to(dev), y:to(dev)
         local losses = S.train_steps(dev, 20, opt, function() return fnn.nn.mse(model(xd), yd) end)
         return losses, params_of(model, dev)
      end
      local want, wws = train(Device.cpu())
      local got, gws = train(gpu)
      same_run('lstm', want, got, wws, gws)
   end)
end)
