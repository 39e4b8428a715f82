-- Cases for core/ops/attention.c (format: spec/cases/elementwise.lua), each with a naive reference
-- (softmax(scale q k^T) v one query at a time over plain numbers, with the causal and padding masks):
-- no mask, causal (square and with a cached prefix, Tq < Tk), a key padding mask alone and with
-- causal, a value width other than the key width, inputs read through strides (the [B,T,H,D] ->
-- [B,H,T,D] transpose of a projection), and sizes with more than two queries (the blocked kernel;
-- one or two run as plain loops). The sweeps after them (from the CUDA parity run) put the key count
-- on both sides of a block's edges (1, 127, 128, 129), use 4 heads of 32 and 64, q, k, v narrowed out
-- of one QKV projection, queries that see no key, and int64 and float32 padding masks with a row all
-- padding; they gradcheck at their own small sizes (n nil). The last ones take the CPU's flash path
-- (past 128 keys, no P kept) at key counts around its blocks, and gradcheck across a block's edge.
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end
local function small(...) return fnn.rand(...) - 0.5 end

-- padding masks: constants of the function, not inputs (moved to the inputs' device, for the CUDA
-- parity run of these cases)
local pad24 = fnn.tensor{{0, 0, 1, 0}, {0, 1, 1, 0}}
local pad15 = fnn.tensor{{0, 1, 0, 0, 1}}:long()

-- softmax(scale q k^T) v over q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv] by loops: query i sees key
-- j when (not causal or j <= i + Tk - Tq) and the key is not padding; a query that sees none gets 0
local function attention_ref(q, k, v, opts)
   opts = opts or {}
   local qv, kv, vv = q:to_flat(), k:to_flat(), v:to_flat()
   local qs, ks, vs = q:shape(), k:shape(), v:shape()
   local B, H, Tq, Tk, D, Dv = qs[1], qs[2], qs[3], ks[3], qs[4], vs[4]
   local pad = opts.key_padding_mask and opts.key_padding_mask:float():to_flat()
   local scale = opts.scale or 1 / math.sqrt(D)
   local out = {}
   for b = 0, B - 1 do
      for h = 0, H - 1 do
         local bh = b * H + h
         for i = 1, Tq do
            local p, m, den = {}, -math.huge, 0   -- p[j]: the seen keys' scores, then exp(score - max)
            for j = 1, Tk do
               if (not opts.causal or j <= i + Tk - Tq) and not (pad and pad[b * Tk + j] ~= 0) then
                  local dot, qo, ko = 0, (bh * Tq + i - 1) * D, (bh * Tk + j - 1) * D
                  for d = 1, D do dot = dot + qv[qo + d] * kv[ko + d] end
                  p[j] = dot * scale
                  m = math.max(m, p[j])
               end
            end
            for j = 1, Tk do if p[j] then p[j] = math.exp(p[j] - m); den = den + p[j] end end
            for e = 1, Dv do
               local num = 0
               for j = 1, Tk do if p[j] then num = num + p[j] * vv[(bh * Tk + j - 1) * Dv + e] end end
               out[#out + 1] = den > 0 and num / den or 0
            end
         end
      end
   end
   return fnn.tensor(out, {B, H, Tq, Dv})
end
-- the [B,T,H,D] -> [B,H,T,D] view of the strided case
local function heads(t) return t:transpose(2, 3) end

local cases = {
   {op = 'attention', inputs = function() return u(1, 2, 3, 4), u(1, 2, 5, 4), u(1, 2, 5, 3) end,
    fn = function(q, k, v) return fnn.attention(q, k, v) end,
    ref = function(q, k, v) return attention_ref(q, k, v) end},
   {op = 'attention', inputs = function() return u(2, 1, 4, 3), u(2, 1, 4, 3), u(2, 1, 4, 3) end,
    fn = function(q, k, v) return fnn.attention(q, k, v, {causal = true}) end,
    ref = function(q, k, v) return attention_ref(q, k, v, {causal = true}) end},
   {op = 'attention', inputs = function() return u(1, 2, 2, 3), u(1, 2, 5, 3), u(1, 2, 5, 3) end,
    fn = function(q, k, v) return fnn.attention(q, k, v, {causal = true}) end,
    ref = function(q, k, v) return attention_ref(q, k, v, {causal = true}) end},
   {op = 'attention', inputs = function() return u(2, 2, 3, 4), u(2, 2, 4, 4), u(2, 2, 4, 2) end,
    fn = function(q, k, v) return fnn.attention(q, k, v, {key_padding_mask = pad24:to(q:device())}) end,
    ref = function(q, k, v) return attention_ref(q, k, v, {key_padding_mask = pad24}) end},
   {op = 'attention', inputs = function() return u(1, 2, 5, 3), u(1, 2, 5, 3), u(1, 2, 5, 3) end,
    fn = function(q, k, v)
       return fnn.attention(q, k, v, {causal = true, key_padding_mask = pad15:to(q:device()), scale = 0.3})
    end,
    ref = function(q, k, v) return attention_ref(q, k, v, {causal = true, key_padding_mask = pad15, scale = 0.3}) end},
   -- strided inputs: [B,T,H,D] transposed to [B,H,T,D]
   {op = 'attention', inputs = function() return u(1, 3, 2, 4), u(1, 4, 2, 4), u(1, 4, 2, 4) end,
    fn = function(q, k, v)
       return fnn.attention(q:transpose(2, 3), k:transpose(2, 3), v:transpose(2, 3), {causal = true})
    end,
    ref = function(q, k, v) return attention_ref(heads(q), heads(k), heads(v), {causal = true}) end},
   -- two keys: the backward's plain loops under the forward's blocked kernel
   {op = 'attention', inputs = function() return u(1, 2, 3, 2), u(1, 2, 2, 2), u(1, 2, 2, 3) end,
    fn = function(q, k, v) return fnn.attention(q, k, v) end,
    ref = function(q, k, v) return attention_ref(q, k, v) end},
   -- the register-blocked kernel's full 4 x 16 blocks
   {op = 'attention', inputs = function() return small(1, 1, 16, 16), small(1, 1, 16, 16), small(1, 1, 16, 16) end,
    fn = function(q, k, v) return fnn.attention(q, k, v, {causal = true}) end,
    ref = function(q, k, v) return attention_ref(q, k, v, {causal = true}) end},
}

-- ---- sweeps (parity: scores and P v by cuBLAS in another summation order over D and Tk up to 129,
-- softmax exp through __expf and its sum in a block tree: atol 1e-5, rtol 1e-4, gradients 10x) ----
local ATT = {1e-5, 1e-4, 10}
local function uu(shape, lo, hi) return fnn.rand(shape) * (hi - lo) + lo end
-- q, k, v [B, T, H, D] seen as [B, H, T, D] (what a projection gives)
local function qkv(B, H, Tq, Tk, D)
   return uu({B, Tq, H, D}, -1, 1), uu({B, Tk, H, D}, -1, 1), uu({B, Tk, H, D}, -1, 1)
end
local function heads_case(causal, sizes, shape_of)
   return {op = 'attention', sizes = sizes, parity = ATT,
      inputs = function(n) return qkv(unpack(shape_of(n))) end,
      fn = function(q, k, v) return fnn.attention(heads(q), heads(k), heads(v), {causal = causal}) end,
      ref = function(q, k, v) return attention_ref(heads(q), heads(k), heads(v), {causal = causal}) end}
end
-- SHAPES[n]: {B, H, Tq, Tk, D}, causal: 4 heads of 32 and 64, two batch entries (a gemm call per entry:
-- q's batch stride is not H times its head stride), new queries after cached keys, queries that see
-- no key (zeros); and one batch entry (one strided-batched call over the heads), not causal
local SHAPES = {{2, 4, 17, 17, 32}, {2, 4, 33, 33, 64}, {2, 2, 5, 9, 32}, {2, 2, 9, 5, 8}}
for _, causal in ipairs{true, false} do
   -- the key counts on both sides of a block's edges (threads stride over a row's keys), one head of
   -- 8: self-attention at T 1 and 129 (n nil: gradcheck at 3), 4 queries over 127, 128, 129 keys
   cases[#cases + 1] = heads_case(causal, {1, 129}, function(n) return {1, 1, n or 3, n or 3, 8} end)
   cases[#cases + 1] = heads_case(causal, {127, 128, 129}, function(n) return {1, 1, 4, n or 5, 8} end)
end
-- sizes index SHAPES (n nil: gradcheck at B 1, H 2, Tq 3, Tk 4, D 3)
cases[#cases + 1] = heads_case(true, {1, 2, 3, 4}, function(n) return n and SHAPES[n] or {1, 2, 3, 4, 3} end)
cases[#cases + 1] = heads_case(false, {64}, function(n) return {1, 4, 33, 33, n or 3} end)
-- q, k, v narrowed out of one QKV projection [B, T, 3 E], causal, 4 heads of 8 (T 17; gradcheck at 3)
local function split(qkv3, i)
   local B, T = qkv3:shape()[1], qkv3:shape()[2]
   return qkv3:narrow(3, i * 32 + 1, 32):reshape(B, T, 4, 8):transpose(2, 3)
end
cases[#cases + 1] = {op = 'attention', sizes = {17}, parity = ATT,
   inputs = function(n) return uu({2, n or 3, 96}, -1, 1) end,
   fn = function(x) return fnn.attention(split(x, 0), split(x, 1), split(x, 2), {causal = true}) end,
   ref = function(x) return attention_ref(split(x, 0), split(x, 1), split(x, 2), {causal = true}) end}
-- contiguous [B, H, T, D] q, k, v, Dv != D and a scale
cases[#cases + 1] = {op = 'attention', parity = ATT,
   inputs = function() return uu({2, 3, 6, 8}, -1, 1), uu({2, 3, 7, 8}, -1, 1), uu({2, 3, 7, 5}, -1, 1) end,
   fn = function(q, k, v) return fnn.attention(q, k, v, {scale = 0.7}) end,
   ref = function(q, k, v) return attention_ref(q, k, v, {scale = 0.7}) end}
-- a key padding mask, float32 and int64, with a row all padding, causal and not
local ROWS = fnn.tensor{{0, 0, 0, 1, 1, 1}, {1, 1, 1, 1, 1, 1}}
for _, causal in ipairs{false, true} do
   for _, long in ipairs{false, true} do
      local mask = long and ROWS:long() or ROWS
      cases[#cases + 1] = {op = 'attention', parity = ATT,
         inputs = function() return uu({2, 2, 6, 8}, -1, 1), uu({2, 2, 6, 8}, -1, 1), uu({2, 2, 6, 8}, -1, 1) end,
         fn = function(q, k, v) return fnn.attention(q, k, v, {causal = causal, key_padding_mask = mask:to(q:device())}) end,
         ref = function(q, k, v) return attention_ref(q, k, v, {causal = causal, key_padding_mask = mask}) end}
   end
end

-- ---- the flash path: past one key block (attention.c's ATTN_BK, 128 keys) the CPU runs blocks of 128
-- queries x 128 keys with an online softmax and keeps each query's log-sum-exp instead of P; the CUDA
-- rows keep P, so the parity run holds one against the other. Key counts at the block's edges and past
-- two blocks, a head width of 17 and a value width of 9, 3 heads of [B,T,H,D] projections; gradcheck
-- (n nil) at 131 keys (block + 3) of width 2, causal and not: the first query already sees two blocks ----
local FLASH = {127, 128, 129, 259}
for _, causal in ipairs{false, true} do
   cases[#cases + 1] = {op = 'attention', sizes = FLASH, parity = ATT,
      inputs = function(n)
         if not n then return uu({1, 3, 1, 2}, -1, 1), uu({1, 131, 1, 2}, -1, 1), uu({1, 131, 1, 2}, -1, 1) end
         return uu({2, n, 3, 17}, -1, 1), uu({2, n, 3, 17}, -1, 1), uu({2, n, 3, 9}, -1, 1)
      end,
      fn = function(q, k, v) return fnn.attention(heads(q), heads(k), heads(v), {causal = causal}) end,
      ref = function(q, k, v) return attention_ref(heads(q), heads(k), heads(v), {causal = causal}) end}
end
-- new queries after cached keys (causal, Tq < Tk): 5 (gradcheck 3) over 129 and 259 keys
cases[#cases + 1] = {op = 'attention', sizes = {129, 259}, parity = ATT,
   inputs = function(n) return qkv(1, 2, n and 5 or 3, n or 131, n and 16 or 2) end,
   fn = function(q, k, v) return fnn.attention(heads(q), heads(k), heads(v), {causal = true}) end,
   ref = function(q, k, v) return attention_ref(heads(q), heads(k), heads(v), {causal = true}) end}
-- a key padding mask over 131 keys, float32 and int64 (causal), scattered with a padded tail, and a row
-- all padding (zeros and zero gradients)
local FROWS = {{}, {}}
for j = 1, 131 do FROWS[1][j] = (j % 7 == 0 or j > 120) and 1 or 0; FROWS[2][j] = 1 end
FROWS = fnn.tensor(FROWS)
for _, long in ipairs{false, true} do
   local mask = long and FROWS:long() or FROWS
   cases[#cases + 1] = {op = 'attention', parity = ATT,
      inputs = function() return uu({2, 2, 3, 2}, -1, 1), uu({2, 2, 131, 2}, -1, 1), uu({2, 2, 131, 2}, -1, 1) end,
      fn = function(q, k, v) return fnn.attention(q, k, v, {causal = long, key_padding_mask = mask:to(q:device())}) end,
      ref = function(q, k, v) return attention_ref(q, k, v, {causal = long, key_padding_mask = mask}) end}
end

-- a bfloat16 q (attention.c widens it on the CPU; float32 k, v: float32 out), held constant since the steps
-- of finite differences are below bf16's spacing: multiples of 1/8, exact in bf16
local Q16 = fnn.tensor{{{{0.5, -0.25, 0.125, 0}, {-0.375, 0.25, 0.5, -0.125}, {0.125, 0.375, -0.5, 0.25}},
                        {{-0.125, 0, 0.25, 0.5}, {0.375, -0.5, -0.25, 0.125}, {0, 0.125, 0.375, -0.375}}}}:bf16()
cases[#cases + 1] = {op = 'attention', inputs = function() return u(1, 2, 5, 4), u(1, 2, 5, 3) end,
   fn = function(k, v) return fnn.attention(Q16:to(k:device()), k, v, {causal = true}) end,
   ref = function(k, v) return attention_ref(Q16:float(), k, v, {causal = true}) end}

return cases
