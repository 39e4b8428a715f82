-- matmul, bmm, outer and the fused attention on bfloat16 in C (core/ops/linalg.c's and attention.c's
-- entries and CPU rows): a bfloat16 operand is widened exactly, the products are the float32 op's
-- (rounded operands under bf16 precision or autocast), and the row rounds its float32 result into a
-- bfloat16 output where precision.lua's rule says so (inside fnn.autocast, or every float input
-- bfloat16). Held BIT FOR BIT to the composition that ran before it, the wrapper's: the op on the
-- widened operands (:float() of what the op is handed, views included), then :bf16() where the rule
-- narrows (autocast's rounded products are set_float32_precision('bf16')'s: one GEMM path), forward
-- and gradients, over shapes (batch broadcasting, 1-D operands, transposed views, attention's flash
-- path and masks), both kernel sets and 1 and 2 threads. As spec/linear_bf16_spec.lua for linear.
local fnn = require 'fastnn'
local nn = fnn.nn

local KERNELS = require('support').bf16_kernels(after_each)   -- which puts the defaults back after each case

local same = require('support').same_tensor

-- the ways an op meets bfloat16: its operands (conv[i]: operand i converted from its float32 leaf),
-- inside autocast or under bf16 precision, and the output dtype precision.lua's rule gives
local function modes(n)
   local all, first = {}, {true}
   for i = 1, n do all[i] = true end
   local last = {}
   last[n] = true
   return {
      {name = 'a bf16 first operand: float32 out', conv = first, out = 'float32'},
      {name = 'a bf16 last operand: float32 out', conv = last, out = 'float32'},
      {name = 'every operand bf16: bf16 out', conv = all, out = 'bfloat16'},
      {name = 'autocast, float32 operands: bf16 out', autocast = true, conv = {}, out = 'bfloat16'},
      {name = 'autocast, a bf16 first operand: bf16 out', autocast = true, conv = first, out = 'bfloat16'},
      {name = 'autocast, every operand bf16: bf16 out', autocast = true, conv = all, out = 'bfloat16'},
      {name = "set_float32_precision('bf16'), a bf16 first operand: float32 out", prec = true, conv = first,
       out = 'float32'},
      {name = "set_float32_precision('bf16'), every operand bf16: bf16 out", prec = true, conv = all,
       out = 'bfloat16'},
   }
end

-- the op's output, and the gradients of its float32 leaves, of loss = sum(out r): native, the op as
-- users call it on the bfloat16 tensors; else the composition (each operand the op is handed widened,
-- the float32 op, :bf16() where the rule narrows). case.fn(op, ...) hands op its operands (views of the
-- converted leaves, for the transposed cases)
local function run(case, mode, native, leaves, r)
   local params = {}
   for i, t in ipairs(leaves) do params[i] = nn.Param(t) end
   local raw = case.op
   local op = native and raw or function(...)
      local args = {...}
      for i = 1, select('#', ...) do
         if fnn.is_tensor(args[i]) and args[i]:dtype() == 'bfloat16' then args[i] = args[i]:float() end
      end
      local y = raw(unpack(args, 1, select('#', ...)))
      if mode.out == 'bfloat16' then y = y:bf16() end
      return y
   end
   local out
   local function step()
      local xs = {}
      for i, p in ipairs(params) do xs[i] = mode.conv[i] and p:tensor():bf16() or p:tensor() end
      out = case.fn(op, unpack(xs, 1, #params))
      ;(out * r):sum():backward()
   end
   require('support').bf16_run(native, mode, step)
   local grads = {}
   for i, p in ipairs(params) do grads[i] = p:grad() end
   return out, grads
end

local function mm(op, ...) return op(...) end
local matmul = function(a, b) return fnn.matmul(a, b) end
local function attention(opts) return function(q, k, v) return fnn.attention(q, k, v, opts) end end
local function heads(t) return t:transpose(2, 3) end   -- [B,T,H,D] seen as [B,H,T,D]

-- shapes: the operands' (leaves) and the output's. matmul: batch broadcasting ([2,1,3,5] @ [4,5,7]), 1-D
-- operands on either side and both (a 0-dim dot), a transposed view, and [3,50,67] @ [67,129] (past 2^18
-- multiply-adds: oneDNN's primitive); attention: causal and not, [B,T,H,D] views, Dv != D, a float32 and
-- an int64 padding mask, and 131 keys (past one key block: the flash path, lse kept)
local pad = fnn.tensor{{0, 0, 1, 0, 0}, {0, 1, 1, 0, 1}}
local FPAD = {}
for j = 1, 131 do FPAD[j] = (j % 7 == 0) and 1 or 0 end
FPAD = fnn.tensor{FPAD}
local CASES = {
   {name = 'matmul [2,1,3,5] @ [4,5,7]', op = matmul, n = 2, fn = mm, shapes = {{2, 1, 3, 5}, {4, 5, 7}},
    out = {2, 4, 3, 7}},
   {name = 'matmul [5] @ [5]', op = matmul, n = 2, fn = mm, shapes = {{5}, {5}}, out = {}},
   {name = 'matmul [5] @ [2,5,3]', op = matmul, n = 2, fn = mm, shapes = {{5}, {2, 5, 3}}, out = {2, 3}},
   {name = 'matmul [2,3,5] @ [5]', op = matmul, n = 2, fn = mm, shapes = {{2, 3, 5}, {5}}, out = {2, 3}},
   {name = 'matmul [5,3]^T @ [7,5]^T', op = matmul, n = 2, fn = function(op, a, b) return op(a:t(), b:t()) end,
    shapes = {{5, 3}, {7, 5}}, out = {3, 7}},
   {name = 'matmul [3,50,67] @ [67,129]', op = matmul, n = 2, fn = mm, shapes = {{3, 50, 67}, {67, 129}},
    out = {3, 50, 129}},
   {name = 'bmm [3,4,5] @ [3,5,6]', op = fnn.bmm, n = 2, fn = mm, shapes = {{3, 4, 5}, {3, 5, 6}}, out = {3, 4, 6}},
   {name = 'bmm [2,5,4]^T @ [2,5,3]', op = fnn.bmm, n = 2, fn = function(op, a, b) return op(a:transpose(2, 3), b) end,
    shapes = {{2, 5, 4}, {2, 5, 3}}, out = {2, 4, 3}},
   {name = 'outer [7] x [5]', op = fnn.outer, n = 2, fn = mm, shapes = {{7}, {5}}, out = {7, 5}},
   {name = 'attention causal [1,2,6,4]', op = attention{causal = true}, n = 3, fn = mm,
    shapes = {{1, 2, 6, 4}, {1, 2, 6, 4}, {1, 2, 6, 4}}, out = {1, 2, 6, 4}},
   {name = 'attention, [B,T,H,D] views, Dv 3, padded (float32 mask)', op = attention{key_padding_mask = pad}, n = 3,
    fn = function(op, q, k, v) return op(heads(q), heads(k), heads(v)) end,
    shapes = {{2, 3, 2, 4}, {2, 5, 2, 4}, {2, 5, 2, 3}}, out = {2, 2, 3, 3}},
   {name = 'attention causal, Tq < Tk, padded (int64 mask), scale 0.3',
    op = attention{causal = true, key_padding_mask = pad:long(), scale = 0.3}, n = 3, fn = mm,
    shapes = {{2, 2, 3, 4}, {2, 2, 5, 4}, {2, 2, 5, 4}}, out = {2, 2, 3, 4}},
   {name = 'attention, 131 keys (the flash path), causal, padded', op = attention{causal = true,
    key_padding_mask = FPAD}, n = 3, fn = function(op, q, k, v) return op(heads(q), heads(k), heads(v)) end,
    shapes = {{1, 131, 2, 8}, {1, 131, 2, 8}, {1, 131, 2, 8}}, out = {1, 2, 131, 8}},
}

describe('matmul, bmm, outer and attention on bfloat16', function()
   for _, kernels in ipairs(KERNELS) do
      for _, threads in ipairs{1, 2} do
         for ci, case in ipairs(CASES) do
            it(('%s, %s kernels, %d thread(s): the composition\'s bits in every mode, forward and gradients'):format(
               case.name, kernels, threads), function()
               fnn.set_kernels(kernels)
               fnn.set_num_threads(threads)
               for mi, mode in ipairs(modes(case.n)) do
                  fnn.manual_seed(ci * 100 + mi)
                  local leaves = {}
                  for i, s in ipairs(case.shapes) do leaves[i] = fnn.randn(table.unpack(s)) end
                  -- a float32 gradient with more bits than bf16
                  local r = #case.out > 0 and fnn.randn(table.unpack(case.out)) or fnn.tensor(1.7)
                  local what = mode.name
                  local y, g = run(case, mode, true, leaves, r)
                  local ry, rg = run(case, mode, false, leaves, r)
                  assert.equals(mode.out, y:dtype(), what)
                  -- one node, the op's own: no widening or narrowing node around it
                  assert.equals(case.name:match('^%a+'), y:grad_fn(), what)
                  same(y, ry, what .. ': output')
                  for i = 1, case.n do
                     assert.equals('float32', g[i]:dtype(), what)
                     same(g[i], rg[i], ('%s: gradient %d'):format(what, i))
                  end
               end
            end)
         end
      end
   end

   it('saves the operands as given: the node holds the bf16 a, not a float32 copy of it', function()
      require('support').holds_bf16_as_given(function(x, w) return x:matmul(w) end, {64, 32})
   end)

   it('attention saves q, k, v as given: bf16 in, the float32 copies gone after the forward', function()
      fnn.manual_seed(5)
      local q0 = nn.Param(fnn.randn(1, 4, 64, 32))
      collectgarbage(); collectgarbage()
      local base = fnn.live_bytes()
      local q = q0:tensor():bf16()   -- 16 KiB, saved by its conversion node and attention's
      local y = fnn.attention(q, q, q, {causal = true})
      assert.equals('bfloat16', y:dtype())
      q = nil
      collectgarbage(); collectgarbage()
      -- y (bf16, 16 KiB), the saved q (16 KiB) and P [1,4,64,64] (64 KiB); a float32 q saved three
      -- times over (the composition's widened copies) would add 3 x 32 KiB
      local held = fnn.live_bytes() - base
      assert.is_true(held <= 16384 * 2 + 65536 + 4096, ('%d bytes held'):format(held))
      y:float():sum():backward()
      assert.same({1, 4, 64, 32}, q0:grad():shape())
   end)

   it('makes empty outputs and an empty inner dim (zeros, rounded)', function()
      local y = fnn.matmul(fnn.zeros(0, 7):bf16(), fnn.randn(7, 3):bf16())
      assert.same({0, 3}, y:shape())
      assert.equals('bfloat16', y:dtype())
      y = fnn.matmul(fnn.zeros(2, 0):bf16(), fnn.zeros(0, 3):bf16())
      same(y, fnn.zeros(2, 3):bf16(), 'empty inner dim')
   end)

   it('reads a bf16 padding mask as its values', function()
      fnn.manual_seed(6)
      local q, k, v = fnn.randn(2, 2, 3, 4):bf16(), fnn.randn(2, 2, 5, 4):bf16(), fnn.randn(2, 2, 5, 4):bf16()
      same(fnn.attention(q, k, v, {key_padding_mask = pad:bf16()}), fnn.attention(q, k, v, {key_padding_mask = pad}),
           'bf16 mask')
   end)

   it('passes finite differences on the bf16 path (values exact in bf16, steps of 1/4)', function()
      -- operands multiples of 1/8 in [-1/2, 1/2] and steps of 1/4: every operand and every sum of up to 5
      -- products is exact in bf16, so the difference quotients are exact and bf16's tolerances hold
      local eighths = require('support').eighths
      fnn.manual_seed(7)
      local opts = {eps = 0.25, atol = 2e-2, rtol = 2e-2}
      for _, c in ipairs{
         {function(a, b) return fnn.matmul(a:bf16(), b:bf16()):float() end, {eighths(2, 1, 3, 4), eighths(4, 4, 2)}},
         {function(a, b) return fnn.matmul(a:bf16(), b):float() end, {eighths(4), eighths(2, 4, 3)}},
         {function(a, b) return fnn.bmm(a:bf16(), b:bf16()):float() end, {eighths(2, 3, 4), eighths(2, 4, 5)}},
         {function(a, b) return fnn.outer(a:bf16(), b:bf16()):float() end, {eighths(3), eighths(4)}},
         {function(a, b)
            return fnn.autocast('bf16', function() return fnn.matmul(a:bf16(), b):float() end)
         end, {eighths(3, 5), eighths(5, 2)}},
      } do
         local ok, report = fnn.gradcheck(c[1], c[2], opts)
         assert(ok, tostring(report))
      end
      -- attention (exp is not exact in bf16): a bf16 q, exact, held constant; k and v float32, by the usual steps
      local q = eighths(1, 2, 3, 4):bf16()
      local ok, report = fnn.gradcheck(function(k, v) return fnn.attention(q, k, v, {causal = true}) end,
                                       {fnn.randn(1, 2, 3, 4), fnn.randn(1, 2, 3, 2)})
      assert(ok, tostring(report))
   end)
end)

describe('matmul and attention under autocast', function()
   it('run with no float/bf16 conversion node in the forward or the backward (fnn.profile)', function()
      fnn.manual_seed(9)
      local wq, wo = nn.Param(fnn.randn(16, 16)), nn.Param(fnn.randn(16, 8))
      local x, r = fnn.randn(2, 6, 16), fnn.randn(2, 6, 8)
      local report = fnn.profile(function()
         fnn.autocast('bf16', function()
            local h = x:matmul(wq:tensor())                                       -- float32 operands: bf16 out
            local q = h:reshape(2, 6, 2, 8):transpose(2, 3)                      -- bf16 views
            local a = fnn.attention(q, q, q, {causal = true})                    -- bf16 in, bf16 out
            local y = fnn.bmm(a:transpose(2, 3):reshape(2, 6, 16), wo:tensor():expand(2, 16, 8))   -- bf16 x float32
            assert.equals('bfloat16', y:dtype())
            ;(y * r):sum():backward()
         end)
      end)
      local all = require('support').ops_without_casts(report)
      for _, op in ipairs{'matmul', 'attention', 'bmm'} do assert.matches(op .. '/forward', all, 1, true) end
      assert.equals('float32', wq:grad():dtype())
   end)

   it('MultiheadAttention under autocast still gives its C attention float32 (held) and returns bf16', function()
      fnn.manual_seed(8)
      local m = nn.MultiheadAttention(8, 2)
      local x = fnn.randn(2, 5, 8)
      local y = fnn.autocast('bf16', function() return m:forward(x, {causal = true}) end)
      assert.equals('bfloat16', y:dtype())
      local want = fnn.autocast('bf16', function() return m:forward(x:bf16(), {causal = true}) end)
      assert.equals('bfloat16', want:dtype())
   end)
end)

-- The row rounds each head's operands itself under bf16 precision (P, the incoming gradient and dS
-- once each into scratch, a widened bf16 q, k or v not at all): held to the same arithmetic written
-- with matmul and softmax under set_float32_precision('bf16'), where every product rounds its own
-- operands. The scale is a power of two (D 16), so rounding dS before or after scaling is the same;
-- only the order of the float32 sums differs, hence a tolerance far below bf16's step (2^-8): an operand
-- left unrounded, or rounded when it held bf16 values already, moves the numbers by about that step.
describe('attention under bf16 precision against matmul and softmax under it', function()
   local function composed(q, k, v, causal)
      local s = q:matmul(k:transpose(3, 4)) * 0.25
      if causal then s = s:masked_fill(fnn.ones(q:size(3), k:size(3)):triu(1 + k:size(3) - q:size(3)), -math.huge) end
      return s:softmax(-1):matmul(v)
   end
   local function close(got, want, what, tol)
      local g, w = got:to_flat(), want:to_flat()
      local big = 0
      for i = 1, #w do big = math.max(big, math.abs(w[i])) end
      for i = 1, #w do
         assert(math.abs(g[i] - w[i]) <= (tol or 2e-5) * big, ('%s element %d: got %.9g, want %.9g (largest %.3g)'):format(
            what, i, g[i], w[i], big))
      end
   end
   local CASES = {
      {name = 'causal, char_gpt\'s head [2,2,64,16]', q = {2, 2, 64, 16}, tk = 64, causal = true},
      {name = 'not causal, Tq 5 < Tk 9', q = {1, 3, 5, 16}, tk = 9},
      -- the flash path's dS takes rowsum(dO o) for rowsum(P dP) (FlashAttention-2): equal in exact arithmetic,
      -- but o was made from rounded P, so dq and dk differ by about bf16's step; o and dv do not
      {name = 'causal, 131 keys (the flash path)', q = {1, 2, 131, 16}, tk = 131, causal = true, dqdk_tol = 1e-2},
   }
   for _, kernels in ipairs(KERNELS) do
      for _, threads in ipairs{1, 2} do
         for ci, case in ipairs(CASES) do
            for _, dtype in ipairs{'float32', 'bfloat16'} do
               it(('%s, %s q/k/v, %s kernels, %d thread(s): output and gradients'):format(case.name, dtype, kernels,
                  threads), function()
                  fnn.set_kernels(kernels)
                  fnn.set_num_threads(threads)
                  fnn.set_float32_precision('bf16')
                  fnn.manual_seed(40 + ci)
                  local B, H, T, D = table.unpack(case.q)
                  local leaves = {fnn.randn(B, H, T, D), fnn.randn(B, H, case.tk, D), fnn.randn(B, H, case.tk, D)}
                  local r = fnn.randn(B, H, T, D)
                  local function run(fused)
                     local ps, xs = {}, {}
                     for i, t in ipairs(leaves) do
                        ps[i] = nn.Param(t)
                        xs[i] = dtype == 'bfloat16' and ps[i]:tensor():bf16() or ps[i]:tensor()
                     end
                     local y
                     if fused then
                        y = fnn.attention(xs[1], xs[2], xs[3], {causal = case.causal}):float()
                     else
                        y = composed(xs[1]:float(), xs[2]:float(), xs[3]:float(), case.causal)
                        if dtype == 'bfloat16' then y = y:bf16():float() end   -- the rule: bf16 in, bf16 out
                     end
                     ;(y * r):sum():backward()
                     return y, {ps[1]:grad(), ps[2]:grad(), ps[3]:grad()}
                  end
                  local y, g = run(true)
                  local ry, rg = run(false)
                  close(y, ry, 'output')
                  close(g[3], rg[3], 'dv')
                  close(g[1], rg[1], 'dq', case.dqdk_tol)
                  close(g[2], rg[2], 'dk', case.dqdk_tol)
               end)
            end
         end
      end
   end
end)
