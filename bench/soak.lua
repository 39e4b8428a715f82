-- soak: long training runs that must not grow in memory (not in CI; its result goes in README).
--
--   fastnn-lua bench/soak.lua [--steps N] [--gpt-steps M] [--every K]
--
-- 1. mlp_fmnist (784-128-ReLU-10, Adam 1e-3, batch 128, reshuffled every epoch) for N steps
--    (default 20,000) on Fashion-MNIST ($FMNIST_DIR, as the benchmarks read it).
-- 2. A char_gpt-sized model (2 pre-LN decoder blocks, vocab 65, context 64, width 128, 4 heads,
--    MLP 512, AdamW 3e-4) on random tokens for M steps (default 2,000).
-- Every K steps (default 1,000; half a phase when it is shorter than 2 K) it prints
-- `step N rss_mb X peak_mb Y` (VmRSS and VmHWM of this process). A phase fails when its RSS at
-- the end exceeds its RSS at the first report (step 1,000) by more than 5%. Prints one
-- `PASS ...` or `FAIL ...` line at the end and exits 1 on FAIL. Short run while developing:
--   fastnn-lua bench/soak.lua --steps 2000 --gpt-steps 200
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn
local nn, optim = fnn.nn, fnn.optim

local opts = {steps = 20000, ['gpt-steps'] = 2000, every = 1000}
do
   local i = 1
   while i <= #arg do
      local key = arg[i]:match('^%-%-([%w-]+)$')
      local v = tonumber(arg[i + 1])
      if not key or opts[key] == nil or not v or v < 1 or v ~= math.floor(v) then
         io.stderr:write('usage: soak.lua [--steps N] [--gpt-steps M] [--every K]\n')
         os.exit(2)
      end
      opts[key] = v
      i = i + 2
   end
end

-- VmRSS and VmHWM (peak) of this process, in MB
local function rss()
   local f = assert(io.open('/proc/self/status', 'r'))
   local text = f:read('*a')
   f:close()
   local cur, peak = text:match('VmRSS:%s*(%d+) kB'), text:match('VmHWM:%s*(%d+) kB')
   return tonumber(cur) / 1024, tonumber(peak) / 1024
end

-- runs step(i) for i = 1..steps, reporting every `every`; returns the RSS at the first report and at the end
local function soak(name, steps, step)
   local every = steps >= 2 * opts.every and opts.every or math.max(1, math.floor(steps / 2))
   print(('== %s: %d steps, RSS every %d'):format(name, steps, every))
   local first, last
   local t0 = B.now()
   for i = 1, steps do
      local loss = step(i)
      if i % every == 0 or i == steps then
         collectgarbage()   -- what is live, not what the collector has not reached yet
         local cur, peak = rss()
         first = first or cur
         last = cur
         print(('step %d rss_mb %.1f peak_mb %.1f loss %.4f  (%.1f ms/step)'):format(
            i, cur, peak, loss:item(), (B.now() - t0) * 1000 / i))
         io.stdout:flush()
      end
   end
   return first, last
end

local results = {}

-- ---- 1. mlp_fmnist ----
do
   fnn.manual_seed(0)
   local N, BATCH = 60000, 128
   local x, y = B.load_fmnist('train')
   x = x:reshape(N, 784):contiguous()
   local model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
   local opt = optim.Adam(model:parameters(), 1e-3)
   local perm, pos = nil, N
   local first, last = soak('mlp_fmnist', opts.steps, function()
      if pos >= N then perm, pos = fnn.randperm(N), 0 end
      local idx = perm:narrow(1, pos + 1, math.min(BATCH, N - pos))
      pos = pos + BATCH
      opt:zero_grad()
      local loss = nn.cross_entropy(model:forward(x:index_select(1, idx)), y:index_select(1, idx))
      loss:backward()
      opt:step()
      return loss
   end)
   results[#results + 1] = {'mlp_fmnist', first, last}
end

-- ---- 2. char_gpt-sized ----
do
   fnn.manual_seed(0)
   local V, T, C, H, L, FF, BS = 65, 64, 128, 4, 2, 512, 32
   local HD = C / H
   local params = {}
   local function own(m)
      for _, p in ipairs(m:parameters()) do params[#params + 1] = p end
      return m
   end
   local causal = {causal = true, scale = 1 / math.sqrt(HD)}
   local function block()
      local ln1, qkv, proj = own(nn.LayerNorm(C)), own(nn.Linear(C, 3 * C)), own(nn.Linear(C, C))
      local ln2, fc1, fc2 = own(nn.LayerNorm(C)), own(nn.Linear(C, FF)), own(nn.Linear(FF, C))
      return function(h)
         local b, t = h:size(1), h:size(2)
         local parts = qkv:forward(ln1:forward(h)):split(C, 3)
         local q = parts[1]:reshape(b, t, H, HD):transpose(2, 3)
         local k = parts[2]:reshape(b, t, H, HD):transpose(2, 3)
         local v = parts[3]:reshape(b, t, H, HD):transpose(2, 3)
         h = h + proj:forward(fnn.attention(q, k, v, causal):transpose(2, 3):reshape(b, t, C))
         return h + fc2:forward(fc1:forward(ln2:forward(h)):gelu())
      end
   end
   local tok, posemb = own(nn.Embedding(V, C)), own(nn.Embedding(T, C))
   local blocks = {}
   for i = 1, L do blocks[i] = block() end
   local ln_f, head = own(nn.LayerNorm(C)), own(nn.Linear(C, V))
   local ar = fnn.arange(1, T + 1):reshape(1, T)
   local opt = optim.AdamW(params, 3e-4, {weight_decay = 0.01})
   -- 16 batches of random tokens, made once and cycled: the soak is about the training step
   local POOL = 16
   math.randomseed(0)
   local flat = {}
   for i = 1, POOL * BS * (T + 1) do flat[i] = math.random(1, V) end
   local pool = fnn.tensor(flat, {POOL, BS, T + 1})
   local X, Y = pool:narrow(3, 1, T):contiguous(), pool:narrow(3, 2, T):contiguous()
   flat = nil
   local first, last = soak('char_gpt', opts['gpt-steps'], function(i)
      local ids, target = X:select(1, (i - 1) % POOL + 1), Y:select(1, (i - 1) % POOL + 1)
      opt:zero_grad()
      local h = tok:forward(ids) + posemb:forward(ar)
      for i = 1, L do h = blocks[i](h) end
      local logits = head:forward(ln_f:forward(h))
      local loss = nn.cross_entropy(logits:reshape(BS * T, V), target:reshape(BS * T))
      loss:backward()
      opt:step()
      return loss
   end)
   results[#results + 1] = {'char_gpt', first, last}
end

local failed = {}
local summary = {}
for _, r in ipairs(results) do
   local name, first, last = r[1], r[2], r[3]
   local growth = (last / first - 1) * 100
   summary[#summary + 1] = ('%s %.1f -> %.1f MB (%+.1f%%)'):format(name, first, last, growth)
   if last > first * 1.05 then failed[#failed + 1] = name end
end
local _, peak = rss()
if #failed > 0 then
   print(('FAIL: RSS grew more than 5%% in %s: %s; peak %.1f MB'):format(
      table.concat(failed, ', '), table.concat(summary, ', '), peak))
   os.exit(1)
end
print(('PASS: %s; peak %.1f MB'):format(table.concat(summary, ', '), peak))
