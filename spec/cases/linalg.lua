-- Cases for core/ops/linalg.c: every promotion rule, broadcast
-- batches (the gradient summed over the batch), transposed views. They drive CUDA parity too
-- (core/ops/linalg.h's rows; cuBLAS there): the broadcast [2,1,2,3] @ [3,3,2] sums a's gradient
-- over a batch one product at a time on the GPU. Each `ref` is the triple loop of PyTorch's
-- matmul semantics (1-D operands promoted, batch dims broadcast) over plain Lua numbers.
-- The sweeps after the table are the parity shapes (square sizes across launch edges, odd and
-- degenerate shapes, long inner sizes); cuBLAS sums k products in another order than the CPU's
-- GEMM, so their parity tolerance is atol 1e-5 sqrt(k). In the sweeps with gradients n is one
-- dimension of a large shape (gradcheck, n nil, takes a small one).
local ffi = require 'ffi'
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end

-- a @ b by the definition, for contiguous a and b of any rank (PyTorch's torch.matmul rules)
local function mm(a, b)
   local as, bs, av, bv = a:shape(), b:shape(), a:to_flat(), b:to_flat()
   local drop_m, drop_p = #as == 1, #bs == 1
   if drop_m then as = {1, as[1]} end
   if drop_p then bs = {bs[1], 1} end
   local m, k, p = as[#as - 1], as[#as], bs[#bs]
   assert(bs[#bs - 1] == k, 'mm: inner sizes differ')
   -- the broadcast batch shape, and each operand's batch stride (in matrices) along it
   local na, nb = #as - 2, #bs - 2
   local nd = math.max(na, nb)
   local batch, sa, sb = {}, {}, {}
   for d = 1, nd do
      local x, y = as[d - nd + na] or 1, bs[d - nd + nb] or 1
      batch[d] = x == 1 and y or x
   end
   local ta, tb = 1, 1
   for d = nd, 1, -1 do
      local x, y = as[d - nd + na] or 1, bs[d - nd + nb] or 1
      sa[d], sb[d] = x == 1 and 0 or ta, y == 1 and 0 or tb
      ta, tb = ta * x, tb * y
   end
   local total = 1
   for d = 1, nd do total = total * batch[d] end
   local out, idx = {}, {}
   for d = 1, nd do idx[d] = 0 end
   for t = 0, total - 1 do
      local oa, ob = 0, 0
      for d = 1, nd do oa, ob = oa + idx[d] * sa[d], ob + idx[d] * sb[d] end
      oa, ob = oa * m * k, ob * k * p
      -- b's matrix transposed into a C array first (the n^3 loop of the square sweeps runs in seconds)
      local bt = ffi.new('double[?]', k * p)
      for r = 0, k - 1 do for j = 0, p - 1 do bt[j * k + r] = bv[ob + r * p + j + 1] end end
      local ar = ffi.new('double[?]', k)
      for i = 0, m - 1 do
         for r = 0, k - 1 do ar[r] = av[oa + i * k + r + 1] end
         for j = 0, p - 1 do
            local s, base = 0, j * k
            for r = 0, k - 1 do s = s + ar[r] * bt[base + r] end
            out[t * m * p + i * p + j + 1] = s
         end
      end
      for d = nd, 1, -1 do
         idx[d] = idx[d] + 1
         if idx[d] < batch[d] then break end
         idx[d] = 0
      end
   end
   local shape = {}
   for d = 1, nd do shape[d] = batch[d] end
   if not drop_m then shape[#shape + 1] = m end
   if not drop_p then shape[#shape + 1] = p end
   if #shape == 0 then return fnn.tensor(out[1]) end
   return fnn.tensor(out, shape)
end
-- x with its last two dims swapped, by a loop
local function tlast(x)
   local s, v = x:shape(), x:to_flat()
   local r, c = s[#s - 1], s[#s]
   local out, shape = {}, {}
   for d = 1, #s - 2 do shape[d] = s[d] end
   shape[#s - 1], shape[#s] = c, r
   for b = 0, #v / (r * c) - 1 do
      for i = 0, r - 1 do for j = 0, c - 1 do out[b * r * c + j * r + i + 1] = v[b * r * c + i * c + j + 1] end end
   end
   return fnn.tensor(out, shape)
end
-- linear: x @ w^T, plus bias (a list of numbers) along the last dim
local function lin(x, w, bias)
   local y = mm(x, tlast(w))
   if not bias then return y end
   local v, o = y:to_flat(), #bias
   for i = 1, #v do v[i] = v[i] + bias[(i - 1) % o + 1] end
   return fnn.tensor(v, y:shape())
end
local function matmul(a, b) return a:matmul(b) end

local cases = {
   {op = 'matmul', inputs = function() return u(3, 4), u(4, 2) end, fn = matmul, ref = mm},
   {op = 'matmul', inputs = function() return u(4), u(4) end, fn = matmul, ref = mm},
   {op = 'matmul', inputs = function() return u(3), u(2, 3, 2) end, fn = matmul, ref = mm},
   {op = 'matmul', inputs = function() return u(2, 2, 3), u(3) end, fn = matmul, ref = mm},
   {op = 'matmul', inputs = function() return u(2, 1, 2, 3), u(3, 3, 2) end, fn = matmul, ref = mm},
   {op = 'matmul', inputs = function() return u(2, 3, 4), u(2, 4) end,
    fn = function(a, b) return a:matmul(b:t()) end, ref = function(a, b) return mm(a, tlast(b)) end},
   -- an expanded operand (the batch broadcast of [1,3,4] is the same product)
   {op = 'matmul', inputs = function() return u(1, 3, 4), u(2, 4, 2) end,
    fn = function(a, b) return a:expand(2, 3, 4):matmul(b) end, ref = mm},
   {op = 'bmm', inputs = function() return u(2, 3, 4), u(2, 4, 2) end, fn = function(a, b) return a:bmm(b) end, ref = mm},
   {op = 'bmm', inputs = function() return u(2, 4, 3), u(2, 4, 2) end,
    fn = function(a, b) return a:transpose(2, 3):bmm(b) end, ref = function(a, b) return mm(tlast(a), b) end},
   -- outer: the [m,1] @ [1,p] product
   {op = 'outer', inputs = function() return u(3), u(4) end, fn = function(a, b) return a:outer(b) end,
    ref = function(a, b) return mm(fnn.tensor(a:to_flat(), {3, 1}), fnn.tensor(b:to_flat(), {1, 4})) end},
   {op = 'linear', inputs = function() return u(2, 3, 4), u(5, 4), u(5) end,
    fn = function(x, w, b) return fnn.linear(x, w, b) end, ref = function(x, w, b) return lin(x, w, b:to_flat()) end},
   {op = 'linear', inputs = function() return u(4, 3), u(2, 4) end,
    fn = function(x, w) return fnn.linear(x:t(), w) end, ref = function(x, w) return lin(tlast(x), w) end},
   -- one output (W^T a single column), and a bias read at stride 2 (a column of [2,2])
   {op = 'linear', inputs = function() return u(3, 4), u(1, 4), u(1) end,
    fn = function(x, w, b) return fnn.linear(x, w, b) end, ref = function(x, w, b) return lin(x, w, b:to_flat()) end},
   {op = 'linear', inputs = function() return u(3, 4), u(2, 4), u(2, 2) end,
    fn = function(x, w, b) return fnn.linear(x, w, b:select(2, 1)) end,
    ref = function(x, w, b) local v = b:to_flat(); return lin(x, w, {v[1], v[3]}) end},
}
local function add(c) cases[#cases + 1] = c end
local function tol(k) return {1e-5 * math.sqrt(k), 1e-5} end
-- the CPU's float32 sums of k products against the double loop: rounding grows as sqrt(k), ~1e-5 at k ~ 1000
local KTOL = 5e-5
local function r1(...) return fnn.rand(...) * 2 - 1 end   -- the sweeps' inputs, in [-1, 1]

-- square n x n across launch edges, values only
add{op = 'matmul', sizes = {1, 127, 128, 129, 1023, 1024, 1025}, gradcheck = false, parity = tol, value_tol = KTOL,
    inputs = function(n) return r1(n, n), r1(n, n) end, fn = matmul, ref = mm}
-- odd sizes, outer and inner products, batches, values only
for _, s in ipairs{
   {{1, 1025}, {1025, 1}}, {{1025, 1}, {1, 127}}, {{127, 129}, {129, 1023}}, {{3, 5}, {5, 7}},
   {{4, 33, 17}, {4, 17, 65}}, {{2, 129, 127}, {127, 1}}, {{1023}, {1023, 3}}, {{5, 128}, {128}},
} do
   local a, b = s[1], s[2]
   add{op = 'matmul', gradcheck = false, parity = tol(a[#a]), value_tol = KTOL, inputs = function() return r1(a), r1(b) end,
       fn = matmul, ref = mm}
end
add{op = 'matmul', gradcheck = false, parity = tol(129), value_tol = KTOL,   -- transposed operand [129,127]^T x [129,33]
    inputs = function() return r1(129, 127), r1(129, 33) end,
    fn = function(a, b) return a:t():matmul(b) end, ref = function(a, b) return mm(tlast(a), b) end}
-- with gradients: da = g b^T and db = a^T g are gemms of the same kind (k = the other side's size)
local G = tol(1025)
add{op = 'matmul', parity = G, inputs = function() return r1(3, 5), r1(5, 7) end, fn = matmul, ref = mm}
add{op = 'matmul', sizes = {127}, parity = G, value_tol = KTOL,   -- [129,n] x [n,33]
    inputs = function(n) return r1(129, n or 2), r1(n or 2, 33) end, fn = matmul, ref = mm}
add{op = 'matmul', sizes = {1025}, parity = G, value_tol = KTOL,   -- [n,2] x [2,3]
    inputs = function(n) return r1(n or 4, 2), r1(2, 3) end, fn = matmul, ref = mm}
add{op = 'matmul', sizes = {128}, parity = G, value_tol = KTOL,   -- [5,n] x [n]
    inputs = function(n) return r1(5, n or 4), r1(n or 4) end, fn = matmul, ref = mm}
add{op = 'matmul', sizes = {1023}, parity = G, value_tol = KTOL,   -- [n] x [n,3]
    inputs = function(n) return r1(n or 4), r1(n or 4, 3) end, fn = matmul, ref = mm}
add{op = 'bmm', sizes = {17}, parity = tol(65),   -- [4,33,n] x [4,n,65]; gradcheck: [2,3,2] x [2,2,4]
    inputs = function(n)
       if n then return r1(4, 33, n), r1(4, n, 65) end
       return r1(2, 3, 2), r1(2, 2, 4)
    end,
    fn = function(a, b) return a:bmm(b) end, ref = mm}
add{op = 'outer', sizes = {129}, parity = {1e-6, 1e-6},   -- [n] x [127]; gradcheck: [3] x [4]
    inputs = function(n) return r1(n or 3), r1(n and 127 or 4) end,
    fn = function(a, b) return a:outer(b) end,
    ref = function(a, b) return mm(fnn.tensor(a:to_flat(), {a:numel(), 1}), fnn.tensor(b:to_flat(), {1, b:numel()})) end}
add{op = 'linear', sizes = {1, 129, 1025}, parity = function(n) return tol(n or 1) end, value_tol = KTOL,   -- [n,33] x [17,33]^T + [17]
    inputs = function(n) return r1(n or 2, 33), r1(17, 33), r1(17) end,
    fn = function(x, w, b) return x:linear(w, b) end, ref = function(x, w, b) return lin(x, w, b:to_flat()) end}
add{op = 'linear', sizes = {1, 129, 1025}, parity = function(n) return tol(n or 1) end,   -- [2,n,5] x [3,5]^T, no bias
    inputs = function(n) return r1(2, n or 2, 5), r1(3, 5) end,
    fn = function(x, w) return x:linear(w) end, ref = function(x, w) return lin(x, w) end}

-- bfloat16 operands (core/ops/linalg.c widens them on the CPU and its row rounds the output): operands
-- multiples of 1/8 in [-1/2, 1/2], exact in bf16 with every sum of 4 products, so the steps of 1/4 keep
-- the difference quotients exact and the reference is the plain loop
local eighths = require('support').eighths
add{op = 'linear', eps = 0.25, inputs = function() return eighths(2, 3, 4), eighths(5, 4), eighths(5) end,
    fn = function(x, w, b) return fnn.linear(x:bf16(), w:bf16(), b:bf16()):float() end,
    ref = function(x, w, b) return lin(x, w, b:to_flat()) end}
add{op = 'linear', eps = 0.25, inputs = function() return eighths(3, 4), eighths(5, 4) end,   -- bf16 x, float32 out
    fn = function(x, w) return fnn.linear(x:bf16(), w) end, ref = function(x, w) return lin(x, w) end}
-- matmul, bmm and outer the same way (linalg.c's products take bf16 on the CPU): batch broadcasting with
-- both operands bf16 (bf16 out), a 1-D bf16 a with a float32 b (float32 out), bmm, outer
add{op = 'matmul', eps = 0.25, inputs = function() return eighths(2, 1, 3, 4), eighths(3, 4, 2) end,
    fn = function(a, b) return fnn.matmul(a:bf16(), b:bf16()):float() end, ref = mm}
add{op = 'matmul', eps = 0.25, inputs = function() return eighths(4), eighths(2, 4, 3) end,
    fn = function(a, b) return fnn.matmul(a:bf16(), b) end, ref = mm}
add{op = 'bmm', eps = 0.25, inputs = function() return eighths(2, 3, 4), eighths(2, 4, 5) end,
    fn = function(a, b) return fnn.bmm(a:bf16(), b:bf16()):float() end, ref = mm}
add{op = 'outer', eps = 0.25, inputs = function() return eighths(3), eighths(4) end,
    fn = function(a, b) return fnn.outer(a:bf16(), b:bf16()):float() end,
    ref = function(a, b) return mm(fnn.tensor(a:to_flat(), {3, 1}), fnn.tensor(b:to_flat(), {1, 4})) end}

-- linear with its activation option (one node: relu inside oneDNN's kernel from about 2^18
-- multiply-adds on, gelu in the pass after the GEMM; the small sizes take the GEMM and one pass):
-- the naive product, then the activation by its definition (gelu through erf's power series, which
-- is exact to float32 for |t| < 3.5; past that erf(t) is +-1 within 1e-6)
local erf = require('support').erf   -- power series, to 1e-13 (|x| < 3.5 here)
local ACT = {
   relu = function(v) return v > 0 and v or 0 end,
   gelu = function(v)
      local t = v / math.sqrt(2)
      return 0.5 * v * (1 + (math.abs(t) < 3.5 and erf(t) or (t > 0 and 1 or -1)))
   end,
}
local function activated(y, act)
   local v = y:to_flat()
   for i = 1, #v do v[i] = ACT[act](v[i]) end
   return fnn.tensor(v, y:shape())
end
for _, act in ipairs{'relu', 'gelu'} do
   local o = {activation = act}
   add{op = 'linear', inputs = function() return u(2, 3, 4), u(5, 4), u(5) end,   -- [B,T,in]
       fn = function(x, w, b) return fnn.linear(x, w, b, o) end,
       ref = function(x, w, b) return activated(lin(x, w, b:to_flat()), act) end}
   add{op = 'linear', inputs = function() return u(4), u(3, 4) end,               -- 1-D input, no bias
       fn = function(x, w) return x:linear(w, o) end, ref = function(x, w) return activated(lin(x, w), act) end}
   add{op = 'linear', inputs = function() return u(4, 3), u(2, 4), u(2, 2) end,   -- transposed x, bias at stride 2
       fn = function(x, w, b) return x:t():linear(w, b:select(2, 1), o) end,
       ref = function(x, w, b) local v = b:to_flat(); return activated(lin(tlast(x), w, {v[1], v[3]}), act) end}
   -- [n,33] x [17,33]^T + [17]: at 1025 rows the product is large enough for oneDNN's primitive
   add{op = 'linear', sizes = {1, 129, 1025}, parity = function(n) return tol(n or 1) end, value_tol = KTOL,
       inputs = function(n) return r1(n or 2, 33), r1(17, 33), r1(17) end,
       fn = function(x, w, b) return x:linear(w, b, o) end,
       ref = function(x, w, b) return activated(lin(x, w, b:to_flat()), act) end}
end

return cases
