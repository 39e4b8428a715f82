-- The fused attention op (core/ops/attention.c), its cache append, and nn.MultiheadAttention,
-- against direct loops written here.
local fnn = require 'fastnn'
local nn = fnn.nn
local S = require 'support'

local huge = math.huge

-- softmax(scale q k^T) v by loops over flat row-major arrays; mask: Lua rows [B][Tk] of 0/1
local function naive_attention(qf, kf, vf, B, H, Tq, Tk, D, Dv, causal, mask, scale)
   scale = scale or 1 / math.sqrt(D)
   local out = {}
   for b = 1, B do
      for h = 1, H do
         local bh = (b - 1) * H + (h - 1)
         for i = 1, Tq do
            local s, mx = {}, -huge
            for j = 1, Tk do
               local visible = (not causal or j <= i + Tk - Tq) and not (mask and mask[b][j] ~= 0)
               if visible then
                  local acc = 0
                  for d = 1, D do
                     acc = acc + qf[(bh * Tq + i - 1) * D + d] * kf[(bh * Tk + j - 1) * D + d]
                  end
                  s[j] = acc * scale
                  if s[j] > mx then mx = s[j] end
               end
            end
            local total = 0
            for j = 1, Tk do
               if s[j] then s[j] = math.exp(s[j] - mx); total = total + s[j] end
            end
            for e = 1, Dv do
               local acc = 0
               for j = 1, Tk do
                  if s[j] then acc = acc + s[j] / total * vf[(bh * Tk + j - 1) * Dv + e] end
               end
               out[#out + 1] = acc
            end
         end
      end
   end
   return out
end

local function rnd(...) return fnn.randn(...) end

describe('fnn.attention', function()
   local configs = {
      {B = 1, H = 1, Tq = 3, Tk = 3, D = 4, Dv = 4},
      {B = 2, H = 3, Tq = 4, Tk = 6, D = 5, Dv = 3},
      {B = 2, H = 2, Tq = 5, Tk = 5, D = 4, Dv = 4, causal = true},
      {B = 1, H = 2, Tq = 2, Tk = 7, D = 3, Dv = 3, causal = true},          -- a cached step's offset
      {B = 1, H = 1, Tq = 1, Tk = 9, D = 8, Dv = 8, causal = true},          -- a decode step
      {B = 2, H = 2, Tq = 3, Tk = 4, D = 4, Dv = 2, mask = {{0, 0, 1, 0}, {1, 0, 0, 1}}},
      {B = 2, H = 1, Tq = 4, Tk = 4, D = 3, Dv = 3, causal = true, mask = {{0, 1, 0, 0}, {0, 0, 0, 1}}},
      {B = 1, H = 2, Tq = 32, Tk = 32, D = 16, Dv = 16, causal = true},      -- the blocked kernel
      {B = 1, H = 1, Tq = 520, Tk = 520, D = 16, Dv = 16, causal = true},    -- cblas (2^22 and more)
      {B = 2, H = 2, Tq = 24, Tk = 40, D = 8, Dv = 12},
   }
   for n, c in ipairs(configs) do
      it(('matches direct loops: config %d (B=%d H=%d Tq=%d Tk=%d D=%d Dv=%d%s%s)'):format(n, c.B, c.H, c.Tq,
            c.Tk, c.D, c.Dv, c.causal and ' causal' or '', c.mask and ' padding' or ''), function()
         fnn.manual_seed(n)
         local q, k, v = rnd(c.B, c.H, c.Tq, c.D), rnd(c.B, c.H, c.Tk, c.D), rnd(c.B, c.H, c.Tk, c.Dv)
         local opts = {causal = c.causal}
         if c.mask then opts.key_padding_mask = fnn.tensor(c.mask) end
         local y = fnn.attention(q, k, v, opts)
         assert.same({c.B, c.H, c.Tq, c.Dv}, y:shape())
         local want = naive_attention(q:to_flat(), k:to_flat(), v:to_flat(), c.B, c.H, c.Tq, c.Tk, c.D, c.Dv,
                                      c.causal, c.mask)
         S.approx_abs(want, y, 2e-5)
      end)
   end

   it('reads strided inputs and an int64 mask, and takes a scale', function()
      fnn.manual_seed(7)
      -- [B,T,H,D] projections seen as [B,H,T,D]
      local q4, k4, v4 = rnd(2, 3, 2, 4), rnd(2, 5, 2, 4), rnd(2, 5, 2, 4)
      local q, k, v = q4:transpose(2, 3), k4:transpose(2, 3), v4:transpose(2, 3)
      local mask = {{0, 0, 0, 1, 1}, {0, 1, 0, 0, 0}}
      local y = fnn.attention(q, k, v, {key_padding_mask = fnn.tensor(mask):long(), scale = 0.7})
      local want = naive_attention(q:contiguous():to_flat(), k:contiguous():to_flat(), v:contiguous():to_flat(),
                                   2, 2, 3, 5, 4, 4, false, mask, 0.7)
      S.approx_abs(want, y, 2e-5)
      -- the result transposes back to contiguous [B,T,H*D]
      assert.is_true(y:transpose(2, 3):is_contiguous())
   end)

   it('gives zeros to a query that sees no key', function()
      local q, k, v = rnd(1, 1, 2, 3), rnd(1, 1, 3, 3), rnd(1, 1, 3, 3)
      local y = fnn.attention(q, k, v, {key_padding_mask = fnn.tensor{{1, 1, 1}}})
      S.approx_abs({0, 0, 0, 0, 0, 0}, y, 0)
      -- causal with fewer keys than queries: the first query sees none
      local y2 = fnn.attention(rnd(1, 1, 3, 2), rnd(1, 1, 2, 2), fnn.ones(1, 1, 2, 2), {causal = true})
      S.approx_abs({0, 0, 1, 1, 1, 1}, y2, 1e-6)
   end)

   -- the softmax rows take exps in whole vectors past a query's last visible key (attention.c's
   -- attn_exp_end): hidden keys whose scores overflow exp must still weigh nothing, in the whole-matrix
   -- rows (T 19) and in the flash blocks (T 150, past one key block), forward and backward
   for _, T in ipairs{19, 150} do
      it(('ignores hidden keys whose scores overflow exp: causal, T %d'):format(T), function()
         -- score(i, j) = 40 j for every query: key j > i would give exp(40 (j - i)) = inf
         local kf, vf, qf = {}, {}, {}
         for j = 1, T do
            for d = 1, 4 do kf[#kf + 1], qf[#qf + 1], vf[#vf + 1] = 10 * j, 1, math.sin(j + d) end
         end
         local q0, k0, v0 = fnn.tensor(qf, {1, 1, T, 4}), fnn.tensor(kf, {1, 1, T, 4}), fnn.tensor(vf, {1, 1, T, 4})
         local P = {fnn.Param(q0), fnn.Param(k0), fnn.Param(v0)}
         local y = fnn.attention(P[1]:tensor(), P[2]:tensor(), P[3]:tensor(), {causal = true, scale = 1})
         S.approx_abs(naive_attention(qf, kf, vf, 1, 1, T, T, 4, 4, true, nil, 1), y, 1e-5)
         -- each query's weight is on its own key: y_i = v_i, so d(sum y w)/dv_i = w_i, and q, k get finite gradients
         local w = fnn.randn(1, 1, T, 4)
         ;(y * w):sum():backward()
         S.approx_abs(w:to_flat(), P[3]:grad(), 1e-5)
         for i = 1, 2 do assert.is_true(P[i]:grad():abs():max():item() < huge) end
      end)
   end

   -- fused against composed gradients: the plain-loop rows (Tq <= 2), the register-blocked kernel,
   -- and cblas (products above 2^22 multiply-adds), causal with a cached prefix (Tq < Tk)
   for _, c in ipairs{{2, 2, 2, 6, 3}, {2, 2, 12, 12, 8}, {1, 1, 40, 52, 16}, {1, 1, 520, 530, 16}} do
      it(('has a gradient that matches the composed ops: [%d,%d,%d,%d] keys %d'):format(c[1], c[2], c[3], c[5], c[4]),
         function()
         fnn.manual_seed(3)
         local B, H, Tq, Tk, D = c[1], c[2], c[3], c[4], c[5]
         local q0, k0, v0 = rnd(B, H, Tq, D) * 0.5, rnd(B, H, Tk, D) * 0.5, rnd(B, H, Tk, D)
         local w = rnd(B, H, Tq, D)
         local mask = fnn.ones(Tq, Tk):triu(Tk - Tq + 1)
         local function grads(fused)
            local P = {fnn.Param(q0), fnn.Param(k0), fnn.Param(v0)}
            local q, k, v = P[1]:tensor(), P[2]:tensor(), P[3]:tensor()
            local y
            if fused then y = fnn.attention(q, k, v, {causal = true})
            else
               local s = q:matmul(k:transpose(3, 4)) * (1 / math.sqrt(D))
               y = s:masked_fill(mask, -huge):softmax(-1):matmul(v)
            end
            ;(y * w):sum():backward()
            return {y:to_flat(), P[1]:grad():to_flat(), P[2]:grad():to_flat(), P[3]:grad():to_flat()}
         end
         local a, b = grads(true), grads(false)
         for i = 1, 4 do S.approx_abs(b[i], a[i], 1e-4) end
      end)
   end

   it('frees its graph and buffers after backward (no leak over many calls)', function()
      local q, k, v = fnn.Param(rnd(2, 2, 8, 4)), fnn.Param(rnd(2, 2, 8, 4)), fnn.Param(rnd(2, 2, 8, 4))
      local mask = fnn.tensor{{0, 0, 0, 0, 0, 0, 1, 1}, {0, 0, 0, 0, 0, 0, 0, 0}}
      local function step()
         fnn.attention(q:tensor(), k:tensor(), v:tensor(), {causal = true, key_padding_mask = mask}):sum():backward()
      end
      step()
      collectgarbage(); collectgarbage()
      local nodes, bytes = fnn.live_nodes(), fnn.live_bytes()
      for _ = 1, 200 do step() end
      collectgarbage(); collectgarbage()
      assert.equals(nodes, fnn.live_nodes())
      assert.equals(bytes, fnn.live_bytes())
   end)

   it('refuses shapes that do not agree, naming them', function()
      local q, k, v = rnd(1, 2, 3, 4), rnd(1, 2, 5, 4), rnd(1, 2, 5, 4)
      assert.matches('attention: q %[1,2,3,4%], k %[1,2,5,3%] and v %[1,2,5,4%] do not agree',
                     S.err_of(function() fnn.attention(q, rnd(1, 2, 5, 3), v) end))
      assert.matches('attention: q %[2,3,4%]', S.err_of(function() fnn.attention(rnd(2, 3, 4), k, v) end))
      assert.matches('v %[1,2,4,4%] do not agree', S.err_of(function() fnn.attention(q, k, rnd(1, 2, 4, 4)) end))
      assert.matches('attention: key_padding_mask %[1,4%] does not match keys %[1,2,5,4%] %(expected %[1,5%]%)',
                     S.err_of(function() fnn.attention(q, k, v, {key_padding_mask = fnn.zeros(1, 4)}) end))
      assert.matches('attention: k is a nil', S.err_of(function() fnn.attention(q) end))
      -- raised at the caller's line
      assert.matches('attention_spec%.lua:%d+:', S.err_of(function() fnn.attention(q, rnd(1, 1, 5, 4), v) end))
   end)
end)

describe('fnn.attention_cache_append', function()
   it('writes rows in place at a 1-based position and leaves the others', function()
      local kc, vc = fnn.zeros(1, 2, 6, 3), fnn.zeros(1, 2, 6, 3)
      local k, v = S.seq{1, 2, 2, 3}, S.seq{1, 2, 2, 3} * -1
      fnn.attention_cache_append(kc, vc, k, v, 3)
      local got = kc:to_flat()
      local want = S.build({1, 2, 6, 3}, function(idx)
         local t = idx[3]
         if t < 3 or t > 4 then return 0 end
         return ((idx[2] - 1) * 2 + (t - 3)) * 3 + idx[4]
      end)
      S.approx_abs(want, got, 0)
      S.approx_abs(want, vc * -1, 0)
      -- strided keys (a transposed projection)
      fnn.attention_cache_append(kc, vc, S.seq{1, 1, 2, 3}:transpose(2, 3), S.seq{1, 1, 2, 3}:transpose(2, 3), 5)
      assert.same({1, 2, 3}, kc:narrow(3, 5, 1):reshape(6):narrow(1, 1, 3):to_flat())
   end)

   it('refuses positions outside the buffer and rows of another shape', function()
      local kc, vc = fnn.zeros(1, 2, 4, 3), fnn.zeros(1, 2, 4, 3)
      assert.matches('attention_cache_append: positions 4..5 of keys %[1,2,2,3%] are outside the buffer %[1,2,4,3%]',
                     S.err_of(function() fnn.attention_cache_append(kc, vc, fnn.ones(1, 2, 2, 3), fnn.ones(1, 2, 2, 3), 4) end))
      assert.matches('attention_cache_append: keys %[1,3,1,3%] does not fit the buffer %[1,2,4,3%]',
                     S.err_of(function() fnn.attention_cache_append(kc, vc, fnn.ones(1, 3, 1, 3), fnn.ones(1, 2, 1, 3), 1) end))
   end)
end)

-- nn.MultiheadAttention by loops: x [N,T,E] flat; rows r0 .. r0+E-1 of W [3E,E] and b
local function project(xf, N, T, E, W, b, r0)
   local out = {}
   for n = 1, N do
      for t = 1, T do
         for e = 1, E do
            local acc = b and b[r0 + e] or 0
            for c = 1, E do acc = acc + xf[((n - 1) * T + t - 1) * E + c] * W[(r0 + e - 1) * E + c] end
            out[#out + 1] = acc
         end
      end
   end
   return out
end
-- [N,T,H*D] flat -> [N,H,T,D] flat
local function heads(f, N, T, H, D)
   local out = {}
   for n = 1, N do for h = 1, H do for t = 1, T do for d = 1, D do
      out[#out + 1] = f[((n - 1) * T + t - 1) * H * D + (h - 1) * D + d]
   end end end end
   return out
end
local function unheads(f, N, T, H, D)
   local out = {}
   for n = 1, N do for t = 1, T do for h = 1, H do for d = 1, D do
      out[#out + 1] = f[(((n - 1) * H + h - 1) * T + t - 1) * D + d]
   end end end end
   return out
end
local function naive_mha(m, q, k, v, causal, mask)
   local E, H = m.embed_dim, m.num_heads
   local D = E / H
   local N, Tq, Tk = q:size(1), q:size(2), k:size(2)
   local W, b = m.in_proj_weight:tensor():to_flat(), m.in_proj_bias and m.in_proj_bias:tensor():to_flat()
   local Q = heads(project(q:to_flat(), N, Tq, E, W, b, 0), N, Tq, H, D)
   local K = heads(project(k:to_flat(), N, Tk, E, W, b, E), N, Tk, H, D)
   local V = heads(project(v:to_flat(), N, Tk, E, W, b, 2 * E), N, Tk, H, D)
   local O = unheads(naive_attention(Q, K, V, N, H, Tq, Tk, D, D, causal, mask), N, Tq, H, D)
   local Wo, bo = m.out_proj.weight:tensor():to_flat(), m.out_proj.bias and m.out_proj.bias:tensor():to_flat()
   return project(O, N, Tq, E, Wo, bo, 0)
end

describe('nn.MultiheadAttention', function()
   it('has PyTorch\'s parameters, names and initial biases', function()
      fnn.manual_seed(1)
      local m = nn.MultiheadAttention(8, 2)
      local names, shapes = {}, {}
      for i, pair in ipairs(m:named_parameters()) do names[i], shapes[i] = pair[1], pair[2]:shape() end
      assert.same({'in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias'}, names)
      assert.same({{24, 8}, {24}, {8, 8}, {8}}, shapes)
      S.approx_abs(fnn.zeros(24):to_flat(), m.in_proj_bias:tensor(), 0)
      S.approx_abs(fnn.zeros(8):to_flat(), m.out_proj.bias:tensor(), 0)
      -- xavier uniform: |w| <= sqrt(6 / (24 + 8))
      assert.is_true(m.in_proj_weight:tensor():abs():max():item() <= math.sqrt(6 / 32) + 1e-6)
      assert.equals(2, #nn.MultiheadAttention(8, 2, {bias = false}):parameters())
   end)

   local function randomize(m)
      for _, p in ipairs(m:parameters()) do p:set(fnn.randn(p:shape()) * 0.5) end
      return m
   end

   it('matches loops for self-attention, causal and not', function()
      fnn.manual_seed(2)
      local m = randomize(nn.MultiheadAttention(6, 3))
      local x = rnd(2, 4, 6)
      S.approx_abs(naive_mha(m, x, x, x, false), m:forward(x), 2e-5)
      S.approx_abs(naive_mha(m, x, x, x, true), m(x, {causal = true}), 2e-5)
      S.approx_abs(naive_mha(m, x, x, x, true), m:forward(x, x, x, {causal = true}), 2e-5)
   end)

   it('matches loops for keys and values of another length with a padding mask', function()
      fnn.manual_seed(3)
      local m = randomize(nn.MultiheadAttention(8, 2))
      local q, kv, v = rnd(2, 3, 8), rnd(2, 5, 8), rnd(2, 5, 8)
      local mask = {{0, 0, 0, 1, 1}, {0, 1, 0, 0, 0}}
      local y = m:forward(q, kv, kv, {key_padding_mask = fnn.tensor(mask)})
      assert.same({2, 3, 8}, y:shape())
      S.approx_abs(naive_mha(m, q, kv, kv, false, mask), y, 2e-5)
      S.approx_abs(naive_mha(m, q, kv, v, false, mask), m:forward(q, kv, v, {key_padding_mask = fnn.tensor(mask)}), 2e-5)
   end)

   it('composes the same attention when dropout is on in training (p tiny)', function()
      fnn.manual_seed(4)
      local m = randomize(nn.MultiheadAttention(4, 2, {dropout = 1e-9}))
      local x, mem = rnd(2, 3, 4), rnd(2, 4, 4)
      local mask = {{0, 1, 0, 0}, {0, 0, 1, 1}}
      S.approx_abs(naive_mha(m, x, x, x, true), m(x, {causal = true}), 2e-5)
      S.approx_abs(naive_mha(m, x, mem, mem, false, mask), m(x, mem, mem, {key_padding_mask = fnn.tensor(mask)}), 2e-5)
      -- a batch whose keys are all padding: zeros (before out_proj's bias), as the fused op
      local all = fnn.tensor{{1, 1, 1, 1}, {0, 0, 1, 1}}
      local composed = m(x, mem, mem, {key_padding_mask = all})
      m:eval()
      S.approx_abs(m(x, mem, mem, {key_padding_mask = all}):to_flat(), composed, 2e-5)
      S.approx_abs(naive_mha(m, x, x, x, true), m(x, {causal = true}), 2e-5)
   end)

   it('passes gradients to its input and every parameter', function()
      fnn.manual_seed(5)
      local m = randomize(nn.MultiheadAttention(4, 2))
      local ok, report = fnn.gradcheck(function(x) return m(x, {causal = true}) end, {rnd(1, 3, 4)})
      assert(ok, report)
      m(rnd(2, 3, 4)):sum():backward()
      for _, pair in ipairs(m:named_parameters()) do assert.truthy(pair[2]:grad(), pair[1]) end
   end)

   it('refuses heads that do not divide the width, wrong widths and masks', function()
      assert.matches('nn.MultiheadAttention: embed_dim 10 is not divisible by num_heads 3',
                     S.err_of(function() nn.MultiheadAttention(10, 3) end))
      assert.matches('attention_spec%.lua:%d+:', S.err_of(function() nn.MultiheadAttention(10, 3) end))
      local m = nn.MultiheadAttention(8, 2)
      assert.matches('nn.MultiheadAttention%(E=8, heads=2%): query %[2,3,6%] does not match %[N, T, 8%]',
                     S.err_of(function() m(rnd(2, 3, 6)) end))
      assert.matches('key %[3,4,8%] does not match %[N, T, 8%] with N = 2',
                     S.err_of(function() m(rnd(2, 3, 8), rnd(3, 4, 8), rnd(3, 4, 8)) end))
      assert.matches('key %[2,4,8%] and value %[2,5,8%] have different lengths',
                     S.err_of(function() m(rnd(2, 3, 8), rnd(2, 4, 8), rnd(2, 5, 8)) end))
      assert.matches('key_padding_mask %[2,3%] does not match the keys %(expected %[2,4%]%)',
                     S.err_of(function() m(rnd(2, 3, 8), rnd(2, 4, 8), rnd(2, 4, 8), {key_padding_mask = fnn.zeros(2, 3)}) end))
      assert.matches('attention_spec%.lua:%d+:', S.err_of(function() m(rnd(2, 3, 6)) end))
   end)
end)
