-- bench/gpu/gpu_char_gpt.lua: bench/char_gpt.lua's model on the GPU (a copy: that script has no device
-- option, and builds its parameters outside a Module): 2-layer pre-LN decoder-only transformer (vocab
-- 65, ctx 64, width 128, 4 heads, MLP 512, exact GELU), fused attention (fnn.attention, causal),
-- AdamW(3e-4, wd 0.01), random tokens. Two configurations, 30 timed steps each, each step timed
-- between fnn.cuda.synchronize calls (median reported):
--   cpu_config: batch 32, exactly the CPU bench's step (check.sh divides this machine's CPU figure
--               by it: the target is >= 5x);
--   gpu_config: batch 256 (8x the tokens per step), the GPU-sized figure.
-- Needs layer_norm, embedding, attention and their backward on cuda: until they land it prints
-- "skipped: <op> not on cuda in this build".
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. (arg[0]:match('^(.*)/gpu/[^/]*$') or '..') ..
   '/?.lua;' .. package.path
local G = require 'gpu_util'
local B, fnn = G.B, G.fnn
local NAME = 'gpu_char_gpt'
local V, T, C, H, L, FF, STEPS = 65, 64, 128, 4, 2, 512, 30
local CONFIGS = {{'cpu_config', 32}, {'gpu_config', 256}}
if G.smoke then
   T, C, H, FF, STEPS = 8, 16, 2, 32, 2
   CONFIGS = {{'cpu_config', 2}, {'gpu_config', 4}}
end
local HD = C / H

local function run(gpu, label, BS)
   local nn, optim = fnn.nn, fnn.optim
   fnn.manual_seed(0)
   local holder = nn.Sequential()   -- every module, for to_device and the optimizer
   local function own(m) holder:add(m); return m end
   local scale = 1 / math.sqrt(HD)
   local causal = {causal = true, scale = scale}
   local function block()
      local ln1, qkv, proj = own(nn.LayerNorm(C)), own(nn.Linear(C, 3 * C)), own(nn.Linear(C, C))
      local ln2, fc1, fc2 = own(nn.LayerNorm(C)), own(nn.Linear(C, FF)), own(nn.Linear(FF, C))
      return function(x)
         local b, t = x:size(1), x:size(2)
         local parts = qkv:forward(ln1:forward(x)):split(C, 3)
         local q = parts[1]:reshape(b, t, H, HD):transpose(2, 3)
         local k = parts[2]:reshape(b, t, H, HD):transpose(2, 3)
         local v = parts[3]:reshape(b, t, H, HD):transpose(2, 3)
         local y = fnn.attention(q, k, v, causal):transpose(2, 3):reshape(b, t, C)
         x = x + proj:forward(y)
         return x + fc2:forward(fc1:forward(ln2:forward(x)):gelu())
      end
   end
   local tok, pos = own(nn.Embedding(V, C)), own(nn.Embedding(T, C))
   local blocks = {}
   for i = 1, L do blocks[i] = block() end
   local ln_f, head = own(nn.LayerNorm(C)), own(nn.Linear(C, V))
   holder:to_device(gpu)
   local ar = fnn.arange(1, T + 1):reshape(1, T):long():to(gpu)
   local function model(ids)
      local x = tok:forward(ids) + pos:forward(ar)
      for i = 1, L do x = blocks[i](x) end
      return head:forward(ln_f:forward(x))
   end
   local opt = optim.AdamW(holder:parameters(), 3e-4, {betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0.01})
   math.randomseed(0)
   local flat = {}
   for i = 1, (STEPS + 1) * BS * (T + 1) do flat[i] = math.random(1, V) end
   local data = fnn.tensor(flat, {STEPS + 1, BS, T + 1}):long()
   local X = data:narrow(3, 1, T):contiguous():to(gpu)
   local Y = data:narrow(3, 2, T):contiguous():to(gpu)
   local ce = nn.cross_entropy
   local function train_step(i)
      local x, y = X:select(1, i), Y:select(1, i)
      opt:zero_grad()
      local loss = ce(model(x):reshape(BS * T, V), y:reshape(BS * T))
      loss:backward()
      opt:step()
      return loss
   end
   train_step(1)   -- warm-up
   local times, loss = {}, nil
   for i = 2, STEPS + 1 do times[#times + 1] = G.timed(1, function() loss = train_step(i) end) end
   local s = B.step_summary(times)
   print(('# %s: batch=%d steps=%d last_loss=%.4f median_ms=%.3f min_ms=%.3f tokens_per_s=%.0f'):format(
      label, BS, STEPS, loss:to('cpu'):item(), s.median, s.min, BS * T * STEPS / s.total_s))
   return s.median
end

B.main(NAME, function()
   local gpu = G.device(NAME)
   G.run_or_skip(NAME, function()
      local figures = {}
      for _, c in ipairs(CONFIGS) do
         figures[#figures + 1] = {c[1] .. '_ms_per_step', run(gpu, c[1], c[2]), 'ms'}
      end
      figures[#figures + 1] = {'gpu_config_batch', CONFIGS[2][2], 'sequences'}
      B.result(NAME, unpack(figures))
   end)
end)
