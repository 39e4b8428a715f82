-- char_gpt: 2-layer pre-LN decoder-only transformer (vocab 65, ctx 64, width 128,
-- 4 heads, MLP 512, exact GELU), AdamW(3e-4, wd 0.01 on every parameter), batch 32,
-- 50 timed steps on random tokens; the counterpart of reference/char_gpt.py.
-- Reports the median ms per step.
--
-- The attention is the reference's (one QKV Linear, split, 4 heads of 32,
-- q.k^T / sqrt(32), causal mask to -inf, softmax, times v, heads concatenated), as
-- one fused op (fnn.attention: scores, causal mask, softmax and times v in C, one
-- graph node, no mask tensor) where the build has it, else written out with matmul,
-- masked_fill and softmax (the '#' line says which). Embedding and LayerNorm use nn.Embedding / nn.LayerNorm when those
-- classes exist; until then they are composed from index_select and mean/rsqrt on
-- Params (the same arithmetic; the '#' line says which).
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn

local NAME, V, T, C, H, L, FF, BS, STEPS = 'char_gpt', 65, 64, 128, 4, 2, 512, 32, 50
local HD = C / H

B.main(NAME, function()
   B.setup_threads(NAME)
   local nn, optim
   B.need{
      {'fastnn.nn', function() nn = fnn.nn; return nn end},
      {'nn.Linear', function() return nn.Linear end},
      {'nn.cross_entropy', function() return nn.cross_entropy end},
      {'fastnn.optim', function() optim = fnn.optim; return optim end},
      {'optim.AdamW', function() return optim.AdamW end},
      {'Tensor:matmul', function() return fnn.Tensor.matmul end},
      {'Tensor:softmax', function() return fnn.Tensor.softmax end},
      {'Tensor:masked_fill', function() return fnn.Tensor.masked_fill end},
      {'Tensor:split', function() return fnn.Tensor.split end},
      {'Tensor:transpose', function() return fnn.Tensor.transpose end},
      {'Tensor:gelu', function() return fnn.Tensor.gelu end},
      {'Tensor:index_select', function() return fnn.Tensor.index_select end},
      {'Tensor:mean', function() return fnn.Tensor.mean end},
   }
   fnn.manual_seed(0)
   local Param = fnn.Param
   local params = {}
   local function own(m)                           -- a module whose parameters the optimizer gets
      for _, p in ipairs(m:parameters()) do params[#params + 1] = p end
      return m
   end
   local function param(t)
      local p = Param(t)
      params[#params + 1] = p
      return p
   end

   -- LayerNorm(C), eps 1e-5, weight and bias
   local has_ln = nn.LayerNorm ~= nil
   local function layer_norm()
      if has_ln then
         local m = own(nn.LayerNorm(C))
         return function(x) return m:forward(x) end
      end
      local w, b = param(fnn.ones(C)), param(fnn.zeros(C))
      return function(x)
         local xc = x - x:mean(-1, true)
         local var = (xc * xc):mean(-1, true)
         return xc * (var + 1e-5):rsqrt() * w:tensor() + b:tensor()
      end
   end
   -- Embedding(n, C): ids [BS,T] (1-based) -> [BS,T,C]
   local has_emb = nn.Embedding ~= nil
   local function embedding(n)
      if has_emb then
         local m = own(nn.Embedding(n, C))
         return function(ids) return m:forward(ids) end
      end
      local w = param(fnn.randn(n, C))
      return function(ids)
         local s = ids:shape()
         return w:tensor():index_select(1, ids:reshape(-1)):reshape(s[1], s[2], C)
      end
   end
   local function linear(i, o)
      local m = own(nn.Linear(i, o))
      return function(x) return m:forward(x) end
   end

   local mask = fnn.ones(T, T):triu(1)             -- 1 where key j > query i: masked
   local scale = 1 / math.sqrt(HD)
   local fused, causal = fnn.attention, {causal = true, scale = scale}
   local function block()
      local ln1, qkv, proj = layer_norm(), linear(C, 3 * C), linear(C, C)
      local ln2, fc1, fc2 = layer_norm(), linear(C, FF), linear(FF, C)
      return function(x)
         local b, t = x:size(1), x:size(2)
         local parts = qkv(ln1(x)):split(C, 3)
         local q = parts[1]:reshape(b, t, H, HD):transpose(2, 3)      -- [b,H,t,32]
         local k = parts[2]:reshape(b, t, H, HD):transpose(2, 3)
         local v = parts[3]:reshape(b, t, H, HD):transpose(2, 3)
         local y
         if fused then
            y = fused(q, k, v, causal):transpose(2, 3):reshape(b, t, C)   -- [b,t,H,32] storage: a view
         else
            local att = q:matmul(k:transpose(3, 4)) * scale
            att = att:masked_fill(mask, -math.huge):softmax(-1)
            y = att:matmul(v):transpose(2, 3):reshape(b, t, C)
         end
         x = x + proj(y)
         return x + fc2(fc1(ln2(x)):gelu())
      end
   end

   local tok, pos = embedding(V), embedding(T)
   local blocks = {}
   for i = 1, L do blocks[i] = block() end
   local ln_f, head = layer_norm(), linear(C, V)
   local ar = fnn.arange(1, T + 1):reshape(1, T)   -- position ids 1..T
   local function model(ids)
      local x = tok(ids) + pos(ar)
      for i = 1, L do x = blocks[i](x) end
      return head(ln_f(x))
   end
   local nparams = 0
   for _, p in ipairs(params) do nparams = nparams + p:tensor():numel() end
   local opt = optim.AdamW(params, 3e-4, {betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0.01})

   -- random token data in memory before timing: (STEPS+1) batches of 32 x 65 tokens
   math.randomseed(0)
   local flat = {}
   for i = 1, (STEPS + 1) * BS * (T + 1) do flat[i] = math.random(1, V) end
   local data = fnn.tensor(flat, {STEPS + 1, BS, T + 1})
   local X = data:narrow(3, 1, T):contiguous()
   local Y = data:narrow(3, 2, T):contiguous()
   flat = nil

   local ce = nn.cross_entropy
   local function train_step(i)
      local x, y = X:select(1, i), Y:select(1, i)
      opt:zero_grad()
      local loss = B.precision(function()
         local logits = model(x)
         return ce(logits:reshape(BS * T, V), y:reshape(BS * T))
      end)
      loss:backward()
      opt:step()
      return loss
   end

   print(('# params=%d embedding=%s layernorm=%s attention=%s'):format(nparams,
      has_emb and 'nn.Embedding' or 'index_select on a Param', has_ln and 'nn.LayerNorm' or 'composed (mean, rsqrt)',
      fused and 'fused (fnn.attention)' or 'composed (matmul, masked_fill, softmax)'))
   train_step(1)                                   -- warm-up, untimed
   local times, loss = {}, nil
   for i = 2, STEPS + 1 do
      local t0 = B.now()
      loss = train_step(i)
      times[#times + 1] = B.now() - t0
   end
   local s = B.step_summary(times)
   print(('# params=%d steps=%d last_loss=%.4f total_s=%.3f median_ms=%.3f mean_ms=%.3f min_ms=%.3f max_ms=%.3f'):format(
      nparams, STEPS, loss:item(), s.total_s, s.median, s.mean, s.min, s.max))
   B.result(NAME, {'ms_per_step', s.median, 'ms'})
end)
