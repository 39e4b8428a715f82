-- lstm_seq: 1-layer LSTM (input 64, hidden 256, 50 time steps, batch 32) + Linear(256,10)
-- on the last hidden state, cross-entropy, Adam(1e-3), 50 timed steps on random data;
-- the counterpart of reference/lstm_seq.py. Reports the median ms per step.
--
-- Uses nn.LSTM when that class exists (batch-first, so x is transposed to [B,T,I]): the
-- whole sequence is one C node (core/ops/rnn.c), backprop through time included.
-- Without it (or with LSTM_IMPL set) the cell is composed from the core's ops as PyTorch's CPU path computes
-- it: the input projection of all 50 steps as one GEMM [1600,64]x[64,1024] (+ b_ih),
-- then per step z = xp_t + h W_hh^T + b_hh, gates i, f, g, o by narrow,
-- c = f*c + i*g, h = o*tanh(c); full BPTT through the autograd graph. The pointwise part
-- is the fused fnn.lstm_cell (one node per step, as PyTorch fuses it) when the core has
-- it, else narrow/sigmoid/tanh/mul/add. LSTM_IMPL=composed forces the composed cell with
-- separate ops, LSTM_IMPL=fused the composed cell with fnn.lstm_cell.
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn

local NAME, I, HID, T, BS, K, STEPS = 'lstm_seq', 64, 256, 50, 32, 10, 50

B.main(NAME, function()
   B.setup_threads(NAME)
   local nn, optim
   B.need{
      {'fastnn.nn', function() nn = fnn.nn; return nn end},
      {'nn.Linear', function() return nn.Linear end},
      {'nn.cross_entropy', function() return nn.cross_entropy end},
      {'fastnn.optim', function() optim = fnn.optim; return optim end},
      {'optim.Adam', function() return optim.Adam end},
      {'fnn.linear', function() return fnn.linear end},
      {'Tensor:narrow', function() return fnn.Tensor.narrow end},
      {'Tensor:sigmoid', function() return fnn.Tensor.sigmoid end},
      {'Tensor:tanh', function() return fnn.Tensor.tanh end},
   }
   fnn.manual_seed(0)
   local impl = os.getenv('LSTM_IMPL')
   local use_nn = nn.LSTM ~= nil and impl ~= 'composed' and impl ~= 'fused'
   local use_fused = not use_nn and fnn.lstm_cell ~= nil and impl ~= 'composed'

   local head = nn.Linear(HID, K)
   local params = {}
   local forward
   if use_nn then
      local lstm = nn.LSTM(I, HID, {return_sequences = false})
      for _, p in ipairs(lstm:parameters()) do params[#params + 1] = p end
      forward = function(x)                        -- x [T,B,I] time-major
         local h = lstm:forward(x:transpose(1, 2))   -- [B,HID], the last hidden state
         return head:forward(h)
      end
   else
      -- PyTorch's init: U(-1/sqrt(H), 1/sqrt(H)) for every weight and bias
      local bound = 1 / math.sqrt(HID)
      local function uniform(...) return (fnn.rand(...) * 2 - 1) * bound end
      local W_ih, W_hh = fnn.Param(uniform(4 * HID, I)), fnn.Param(uniform(4 * HID, HID))
      local b_ih, b_hh = fnn.Param(uniform(4 * HID)), fnn.Param(uniform(4 * HID))
      params = {W_ih, W_hh, b_ih, b_hh}
      forward = function(x)                        -- x [T,B,I] time-major
         local w_hh, bh = W_hh:tensor(), b_hh:tensor()
         local xp = fnn.linear(x:reshape(T * BS, I), W_ih:tensor(), b_ih:tensor())   -- [T*B, 4H]
         local h = fnn.zeros(BS, HID)
         local c = fnn.zeros(BS, HID)
         for t = 1, T do
            local z = xp:narrow(1, (t - 1) * BS + 1, BS) + fnn.linear(h, w_hh, bh)  -- [B, 4H]
            if use_fused then
               h, c = fnn.lstm_cell(z, c)                     -- h, c' as views of one [B, 2H] node
            else
               local ig = z:narrow(2, 1, HID):sigmoid()
               local fg = z:narrow(2, HID + 1, HID):sigmoid()
               local gg = z:narrow(2, 2 * HID + 1, HID):tanh()
               local og = z:narrow(2, 3 * HID + 1, HID):sigmoid()
               c = fg * c + ig * gg
               h = og * c:tanh()
            end
         end
         return head:forward(h)
      end
   end
   for _, p in ipairs(head:parameters()) do params[#params + 1] = p end
   local nparams = 0
   for _, p in ipairs(params) do nparams = nparams + p:tensor():numel() end
   local opt = optim.Adam(params, 1e-3, {betas = {0.9, 0.999}, eps = 1e-8})

   -- random data in memory before timing: (STEPS+1) batches
   local X = fnn.randn(STEPS + 1, T, BS, I)
   math.randomseed(0)
   local flat = {}
   for i = 1, (STEPS + 1) * BS do flat[i] = math.random(1, K) end
   local Y = fnn.tensor(flat, {STEPS + 1, BS})

   local ce = nn.cross_entropy
   local function train_step(i)
      local x, y = X:select(1, i), Y:select(1, i)
      opt:zero_grad()
      local loss = B.precision(function() return ce(forward(x), y) end)
      loss:backward()
      opt:step()
      return loss
   end

   print(('# params=%d lstm=%s'):format(nparams, use_nn and
      'nn.LSTM (one C node: input GEMM, 50 recurrent GEMMs + fused cells, BPTT in C)' or use_fused and
      'composed with fused cell (one input GEMM, 50 recurrent linear + fnn.lstm_cell, BPTT by autograd)' or
      'composed (one input GEMM, 50 recurrent linear + gate ops, BPTT by autograd)'))
   train_step(1)                                   -- warm-up, untimed
   local times, loss = {}, nil
   for i = 2, STEPS + 1 do
      local t0 = B.now()
      loss = train_step(i)
      times[#times + 1] = B.now() - t0
   end
   local s = B.step_summary(times)
   print(('# steps=%d last_loss=%.4f total_s=%.3f median_ms=%.3f mean_ms=%.3f min_ms=%.3f max_ms=%.3f'):format(
      STEPS, loss:item(), s.total_s, s.median, s.mean, s.min, s.max))
   B.result(NAME, {'ms_per_step', s.median, 'ms'})
end)
