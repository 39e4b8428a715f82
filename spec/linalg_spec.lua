-- matmul, bmm, outer and linear against naive Lua loops (torch7 `mm`): every
-- 1-D/N-D promotion rule, batch broadcasting, transposed, strided, expanded
-- and empty operands, gradients of broadcast operands, and the errors.
local fnn = require 'fastnn'

local function approx(expected, t, tol)
   local got = t:to_flat()
   assert.equals(#expected, #got)
   for i = 1, #expected do
      local e, g = expected[i], got[i]
      assert.is_true(math.abs(e - g) <= (tol or 1e-4) * math.max(1, math.abs(e)),
                     ('element %d: expected %.7g got %.7g'):format(i, e, g))
   end
end

local function same_shape(expected, t)
   assert.are.same(expected, t:shape())
end

-- naive matrix product of two nested 2-D tables -> flat row-major list
local function mm(a, b)
   local n, k, m = #a, #b, #b[1] or 0
   local out = {}
   for i = 1, n do
      for j = 1, m do
         local s = 0
         for l = 1, k do s = s + a[i][l] * b[l][j] end
         out[#out + 1] = s
      end
   end
   return out
end

local function transpose(a)
   local r = {}
   for j = 1, #a[1] do
      r[j] = {}
      for i = 1, #a do r[j][i] = a[i][j] end
   end
   return r
end

local function concat(lists)
   local r = {}
   for _, l in ipairs(lists) do for _, v in ipairs(l) do r[#r + 1] = v end end
   return r
end

describe('matmul', function()
   it('2-D x 2-D matches the naive product', function()
      local a, b = fnn.randn(5, 7), fnn.randn(7, 3)
      local c = a:matmul(b)
      same_shape({5, 3}, c)
      approx(mm(a:to_table(), b:to_table()), c)
   end)

   it('is also fnn.matmul, and bigger sizes agree too', function()
      local a, b = fnn.randn(70, 33), fnn.randn(33, 81)
      approx(mm(a:to_table(), b:to_table()), fnn.matmul(a, b), 1e-3)
   end)

   it('1-D . 1-D is the dot product, a 0-dim tensor', function()
      local a, b = fnn.tensor{1, 2, 3}, fnn.tensor{4, -5, 6}
      local c = a:matmul(b)
      same_shape({}, c)
      assert.equals(4 - 10 + 18, c:item())
   end)

   it('1-D x 2-D treats the vector as a row and drops that dim', function()
      local v, b = fnn.tensor{1, 2}, fnn.tensor{{1, 2, 3}, {4, 5, 6}}
      local c = v:matmul(b)
      same_shape({3}, c)
      approx({9, 12, 15}, c)
   end)

   it('2-D x 1-D treats the vector as a column and drops that dim', function()
      local a, v = fnn.tensor{{1, 2, 3}, {4, 5, 6}}, fnn.tensor{1, 0, -1}
      local c = a:matmul(v)
      same_shape({2}, c)
      approx({-2, -2}, c)
   end)

   it('N-D x 1-D and 1-D x N-D', function()
      local a, v = fnn.randn(2, 3, 4), fnn.randn(4)
      local c = a:matmul(v)
      same_shape({2, 3}, c)
      local vt = {}
      for i, x in ipairs(v:to_flat()) do vt[i] = {x} end
      approx(concat{mm(a:select(1, 1):to_table(), vt), mm(a:select(1, 2):to_table(), vt)}, c)

      local w, b = fnn.randn(3), fnn.randn(2, 3, 4)
      local d = w:matmul(b)
      same_shape({2, 4}, d)
      local wt = {w:to_flat()}
      approx(concat{mm(wt, b:select(1, 1):to_table()), mm(wt, b:select(1, 2):to_table())}, d)
   end)

   it('broadcasts batch dims: [2,1,3,4] x [5,4,2] -> [2,5,3,2]', function()
      local a, b = fnn.randn(2, 1, 3, 4), fnn.randn(5, 4, 2)
      local c = a:matmul(b)
      same_shape({2, 5, 3, 2}, c)
      local expected = {}
      for i = 1, 2 do
         for j = 1, 5 do
            expected[#expected + 1] = mm(a:select(1, i):select(1, 1):to_table(), b:select(1, j):to_table())
         end
      end
      approx(concat(expected), c)
   end)

   it('N-D x 2-D shares the matrix across the batch', function()
      local a, b = fnn.randn(3, 4, 5), fnn.randn(5, 6)
      local c = a:matmul(b)
      same_shape({3, 4, 6}, c)
      local bt = b:to_table()
      approx(concat{mm(a:select(1, 1):to_table(), bt), mm(a:select(1, 2):to_table(), bt),
                    mm(a:select(1, 3):to_table(), bt)}, c)
   end)

   it('reads transposed operands without changing the result', function()
      local a, b = fnn.randn(6, 4), fnn.randn(5, 6)
      local c = a:t():matmul(b:t())           -- [4,6] x [6,5], both column-major views
      same_shape({4, 5}, c)
      approx(mm(transpose(a:to_table()), transpose(b:to_table())), c)
   end)

   -- blas.c copies a transposed A whose rows are a power of two >= 512 floats apart at a padded
   -- stride first (oneDNN's sgemm halves its speed there): [1024, 600]^T x [600, 16] and
   -- [512, 600]^T x [600, 256] take that path
   it('gives the naive product for a transposed operand with a power-of-two stride (the padded copy)', function()
      fnn.manual_seed(7)
      for _, shape in ipairs{{512, 256}, {1024, 16}} do
         local lda, n = shape[1], shape[2]
         local at = fnn.randn(600, lda)                     -- A^T stored [k, lda]: A = at:t(), lda apart
         local b = fnn.randn(600, n)
         local a_rows = at:t():to_table()                   -- [lda, 600]
         approx(mm(a_rows, b:to_table()), fnn.matmul(at:t(), b), 1e-4)
         -- and as a weight gradient reads it: dW = G^T X through linear's backward
         local x, w = fnn.randn(600, n), fnn.Param(fnn.randn(lda, n))
         local g = fnn.randn(600, lda)
         fnn.linear(x, w:tensor()):backward(g)
         approx(mm(transpose(g:to_table()), x:to_table()), w:grad(), 1e-4)
      end
   end)

   -- a transposed right operand of a large enough product runs in oneDNN's matmul primitive (blas.c's
   -- fnn_gemm_fused, as linear's forward) rather than the GEMM: as a plain product, batched, and summed
   -- into one gradient over a broadcast batch (the primitive's sum post-op)
   it('gives the naive product for x w^T above the primitive threshold, batched and summed over a batch', function()
      fnn.manual_seed(9)
      local a, w = fnn.randn(96, 80), fnn.randn(72, 80)
      approx(mm(a:to_table(), transpose(w:to_table())), a:matmul(w:t()), 1e-4)
      local ab, wb = fnn.randn(2, 70, 60), fnn.randn(2, 80, 60)
      local c = fnn.bmm(ab, wb:transpose(2, 3))
      local at, wt = ab:to_table(), wb:to_table()
      approx(concat{mm(at[1], transpose(wt[1])), mm(at[2], transpose(wt[2]))}, c, 1e-4)
      -- d/da of a [70, 60] times a broadcast batch b [3, 60, 80]: sum over i of g_i b_i^T
      local pa, pb = fnn.Param(fnn.randn(70, 60)), fnn.Param(fnn.randn(3, 60, 80))
      local g = fnn.randn(3, 70, 80)
      pa:tensor():matmul(pb:tensor()):backward(g)
      local gt, bt = g:to_table(), pb:tensor():to_table()
      local want = mm(gt[1], transpose(bt[1]))
      for i = 2, 3 do
         local more = mm(gt[i], transpose(bt[i]))
         for j = 1, #want do want[j] = want[j] + more[j] end
      end
      approx(want, pa:grad(), 1e-4)
   end)

   it('reads truly strided and expanded operands', function()
      local x = fnn.randn(3, 4, 5)
      local a = x:select(3, 2)                -- [3,4], strides [20,5]: neither row- nor column-major
      assert.is_false(a:is_contiguous())
      local b = fnn.tensor{{1, 2}, {3, 4}, {5, 6}, {7, 8}}
      approx(mm(a:to_table(), b:to_table()), a:matmul(b))
      local e = fnn.tensor{{1, -1, 2, 0.5}}:expand(3, 4)   -- stride 0 rows
      approx(mm(e:to_table(), b:to_table()), e:matmul(b))
      local v = fnn.tensor{2}:expand(4)                      -- a 1-D vector of stride 0
      approx(mm(b:t():to_table(), {{2}, {2}, {2}, {2}}), b:t():matmul(v))
   end)

   it('handles empty operands: no rows, and an empty inner dim (zeros)', function()
      local c = fnn.zeros(0, 3):matmul(fnn.randn(3, 4))
      same_shape({0, 4}, c)
      local d = fnn.zeros(2, 0):matmul(fnn.zeros(0, 3))
      same_shape({2, 3}, d)
      approx({0, 0, 0, 0, 0, 0}, d)
      local e = fnn.zeros(0, 2, 3):matmul(fnn.randn(3, 4))
      same_shape({0, 2, 4}, e)
   end)

   it('gives the gradient of a broadcast operand summed over the batch', function()
      local pa, pb = fnn.Param(fnn.randn(3, 4)), fnn.Param(fnn.randn(2, 4, 5))
      local y = pa:tensor():matmul(pb:tensor())  -- [2,3,5]
      y:sum():backward()
      -- d/da sum(a b_i) = sum_i 1[3,5] b_i^T: every row of da is sum over i, j of b_i[k, j]
      local bt = pb:tensor():to_table()
      local row = {}
      for k = 1, 4 do
         local s = 0
         for i = 1, 2 do for j = 1, 5 do s = s + bt[i][k][j] end end
         row[k] = s
      end
      approx(concat{row, row, row}, pa:grad())
      -- d/db_i = a^T 1[3,5]: entry (k, j) = sum over rows of a[:, k], the same for every i
      local at = pa:tensor():to_table()
      local db = {}
      for _ = 1, 2 do
         for k = 1, 4 do
            local s = at[1][k] + at[2][k] + at[3][k]
            for _ = 1, 5 do db[#db + 1] = s end
         end
      end
      approx(db, pb:grad())
   end)

   it('refuses inner dims that do not agree, naming both shapes, at the caller\'s line', function()
      local ok, err = pcall(function()
         local c = fnn.ones(2, 3):matmul(fnn.ones(4, 4))   -- not a tail call: keeps this line
         return c
      end)
      assert.is_false(ok)
      assert.matches('linalg_spec.lua:%d+: matmul: shapes %[2,3%] and %[4,4%] do not agree', err)
      local _, e2 = pcall(function() return fnn.ones(3):matmul(fnn.ones(4)) end)
      assert.matches('matmul: shapes %[3%] and %[4%] do not agree', e2)
      local _, e3 = pcall(function() return fnn.ones(2, 3, 4):matmul(fnn.ones(5, 3)) end)
      assert.matches('matmul: shapes %[2,3,4%] and %[5,3%] do not agree', e3)
   end)

   it('refuses batch dims that do not broadcast and 0-dim operands', function()
      local _, err = pcall(function() return fnn.ones(2, 3, 4):matmul(fnn.ones(3, 4, 5)) end)
      assert.matches('matmul: batch dims of %[2,3,4%] and %[3,4,5%] do not broadcast', err)
      local _, e2 = pcall(function() return fnn.tensor(2):matmul(fnn.ones(3)) end)
      assert.matches('matmul: shapes %[%] and %[3%]: both need at least 1 dim', e2)
      local _, e3 = pcall(function() return fnn.ones(2, 2):matmul(3) end)
      assert.matches('matmul: argument 2 is a number, expected a tensor', e3)
   end)
end)

-- PyTorch's matmul rules in plain Lua over row-major value lists: the reference for the random sweep
local function ref_matmul(av, ash, bv, bsh)
   local a1, b1 = #ash == 1, #bsh == 1
   local as = a1 and {1, ash[1]} or ash
   local bs = b1 and {bsh[1], 1} or bsh
   local n, k, m = as[#as - 1], as[#as], bs[#bs]
   local abatch, bbatch = {}, {}
   for i = 1, #as - 2 do abatch[i] = as[i] end
   for i = 1, #bs - 2 do bbatch[i] = bs[i] end
   local nb = math.max(#abatch, #bbatch)
   local batch = {}
   for i = 1, nb do
      local x = abatch[i - (nb - #abatch)] or 1
      local y = bbatch[i - (nb - #bbatch)] or 1
      batch[i] = x == 1 and y or x
   end
   local function offset(bb, idx)   -- batch index -> matrix number in an operand with batch dims bb
      local off, mult = 0, 1
      for i = #bb, 1, -1 do
         local j = idx[i + (nb - #bb)]
         off = off + (bb[i] == 1 and 0 or j - 1) * mult
         mult = mult * bb[i]
      end
      return off
   end
   local total = 1
   for i = 1, nb do total = total * batch[i] end
   local out, idx = {}, {}
   for i = 1, nb do idx[i] = 1 end
   for _ = 1, total do
      local ao, bo = offset(abatch, idx) * n * k, offset(bbatch, idx) * k * m
      for i = 1, n do
         for j = 1, m do
            local s = 0
            for l = 1, k do s = s + av[ao + (i - 1) * k + l] * bv[bo + (l - 1) * m + j] end
            out[#out + 1] = s
         end
      end
      for d = nb, 1, -1 do
         idx[d] = idx[d] + 1
         if idx[d] <= batch[d] then break end
         idx[d] = 1
      end
   end
   local shape = {}
   for i = 1, nb do shape[i] = batch[i] end
   if not a1 then shape[#shape + 1] = n end
   if not b1 then shape[#shape + 1] = m end
   return out, shape
end

describe('matmul on random shapes and layouts', function()
   it('agrees with the reference rules on 300 combinations (transposed, expanded, strided, broadcast)', function()
      fnn.manual_seed(7)
      local rnd = fnn.rand(4000):to_flat()
      local r = 0
      local function pick(lo, hi)
         r = r + 1
         return lo + math.floor(rnd[r] * (hi - lo + 1))
      end
      -- a tensor of logical shape `shape` laid out one of four ways
      local function make(shape)
         local kind = pick(1, 4)
         if #shape >= 2 and kind == 2 then          -- a transposed view of the last two dims
            local s = {}
            for i, v in ipairs(shape) do s[i] = v end
            s[#s - 1], s[#s] = shape[#shape], shape[#shape - 1]
            return fnn.randn(s):transpose(-1, -2)
         elseif kind == 3 then                       -- every element strided (select of a wider tensor)
            local s = {}
            for i, v in ipairs(shape) do s[i] = v end
            s[#s + 1] = 2
            return fnn.randn(s):select(#s, 2)
         elseif kind == 4 then                       -- the first dim expanded from 1
            local s = {}
            for i, v in ipairs(shape) do s[i] = v end
            s[1] = 1
            return fnn.randn(s):expand(shape)
         end
         return fnn.randn(shape)
      end
      for _ = 1, 300 do
         local n, k, m = pick(1, 4), pick(0, 4), pick(1, 4)
         local ra, rb = pick(1, 4), pick(1, 4)
         local ash, bsh = {}, {}
         local nba = ra >= 3 and ra - 2 or 0
         local nbb = rb >= 3 and rb - 2 or 0
         local batch = {}
         for i = 1, math.max(nba, nbb) do batch[i] = pick(1, 3) end
         for i = 1, nba do ash[i] = pick(0, 1) == 1 and batch[i + #batch - nba] or 1 end
         for i = 1, nbb do bsh[i] = pick(0, 1) == 1 and batch[i + #batch - nbb] or 1 end
         if ra == 1 then ash = {k} else ash[#ash + 1] = n; ash[#ash + 1] = k end
         if rb == 1 then bsh = {k} else bsh[#bsh + 1] = k; bsh[#bsh + 1] = m end
         local a, b = make(ash), make(bsh)
         local want, wshape = ref_matmul(a:to_flat(), ash, b:to_flat(), bsh)
         local c = a:matmul(b)
         assert.are.same(wshape, c:shape())
         approx(want, c)
      end
   end)
end)

describe('bmm', function()
   it('multiplies batch by batch', function()
      local a, b = fnn.randn(3, 2, 4), fnn.randn(3, 4, 5)
      local c = a:bmm(b)
      same_shape({3, 2, 5}, c)
      local expected = {}
      for i = 1, 3 do expected[i] = mm(a:select(1, i):to_table(), b:select(1, i):to_table()) end
      approx(concat(expected), c)
      approx(concat(expected), fnn.bmm(a, b))
   end)

   it('accepts transposed batches', function()
      local a, b = fnn.randn(2, 4, 3), fnn.randn(2, 5, 4)
      local c = a:transpose(2, 3):bmm(b:transpose(2, 3))   -- [2,3,4] x [2,4,5]
      local expected = {}
      for i = 1, 2 do
         expected[i] = mm(transpose(a:select(1, i):to_table()), transpose(b:select(1, i):to_table()))
      end
      approx(concat(expected), c)
   end)

   it('refuses anything but [B,n,k] x [B,k,m]', function()
      local _, err = pcall(function() return fnn.ones(2, 3, 4):bmm(fnn.ones(3, 4, 5)) end)
      assert.matches('bmm: shapes %[2,3,4%] and %[3,4,5%] do not agree %(expected %[B,n,k%] and %[B,k,m%]%)', err)
      local _, e2 = pcall(function() return fnn.ones(3, 4):bmm(fnn.ones(4, 5)) end)
      assert.matches('bmm: shapes %[3,4%] and %[4,5%] do not agree', e2)
      local _, e3 = pcall(function() return fnn.ones(2, 3, 4):bmm(fnn.ones(2, 5, 4)) end)
      assert.matches('bmm: shapes %[2,3,4%] and %[2,5,4%] do not agree', e3)
   end)
end)

describe('outer', function()
   it('is the column times the row', function()
      local a, b = fnn.tensor{1, 2, 3}, fnn.tensor{4, 5}
      local c = a:outer(b)
      same_shape({3, 2}, c)
      approx({4, 5, 8, 10, 12, 15}, c)
      approx({4, 5, 8, 10, 12, 15}, fnn.outer(a, b))
   end)

   it('refuses tensors that are not 1-D', function()
      local _, err = pcall(function() return fnn.ones(2, 2):outer(fnn.ones(3)) end)
      assert.matches('outer: shapes %[2,2%] and %[3%]: expected two 1%-D tensors', err)
   end)
end)

describe('linear', function()
   -- naive x w^T + b over the rows of x (flat list of rows)
   local function lin(rows, w, b)
      local out = {}
      for _, x in ipairs(rows) do
         for o = 1, #w do
            local s = b and b[o] or 0
            for i = 1, #x do s = s + x[i] * w[o][i] end
            out[#out + 1] = s
         end
      end
      return out
   end

   it('computes x w^T + b for 2-D input', function()
      local x, w, b = fnn.randn(4, 5), fnn.randn(3, 5), fnn.randn(3)
      local y = fnn.linear(x, w, b)
      same_shape({4, 3}, y)
      approx(lin(x:to_table(), w:to_table(), b:to_flat()), y)
   end)

   it('keeps leading dims, works without a bias and on 1-D input', function()
      local x, w = fnn.randn(2, 3, 5), fnn.randn(4, 5)
      local y = fnn.linear(x, w)
      same_shape({2, 3, 4}, y)
      local rows = {}
      for _, m in ipairs(x:to_table()) do for _, r in ipairs(m) do rows[#rows + 1] = r end end
      approx(lin(rows, w:to_table()), y)
      local v = fnn.randn(5)
      local z = fnn.linear(v, w, fnn.ones(4))
      same_shape({4}, z)
      approx(lin({v:to_flat()}, w:to_table(), {1, 1, 1, 1}), z)
   end)

   it('reads non-contiguous input, weight and bias', function()
      local x = fnn.randn(5, 4):t()            -- [4,5] column-major
      local w = fnn.randn(3, 5, 2):select(3, 1) -- [3,5] strided
      local b = fnn.randn(3, 2):select(2, 2)    -- [3] stride 2
      approx(lin(x:to_table(), w:to_table(), b:to_flat()), fnn.linear(x, w, b))
   end)

   it('has gradients dx = g w, dw = g^T x, db = column sums of g', function()
      local x = fnn.Param(fnn.randn(2, 3, 4))
      local w, b = fnn.Param(fnn.randn(5, 4)), fnn.Param(fnn.randn(5))
      local y = fnn.linear(x:tensor(), w:tensor(), b:tensor())   -- [2,3,5]
      local g = fnn.randn(2, 3, 5)
      y:backward(g)
      local gt, xt, wt = g:to_table(), x:tensor():to_table(), w:tensor():to_table()
      local grows, xrows = {}, {}
      for i = 1, 2 do for j = 1, 3 do grows[#grows + 1] = gt[i][j]; xrows[#xrows + 1] = xt[i][j] end end
      approx(mm(grows, wt), x:grad())
      approx(mm(transpose(grows), xrows), w:grad())
      local db = {}
      for o = 1, 5 do
         local s = 0
         for r = 1, #grows do s = s + grows[r][o] end
         db[o] = s
      end
      approx(db, b:grad())
      assert.equals('linear', y:grad_fn())
   end)

   -- db is summed in 32 fixed parts of rows over the threads: 150 rows make parts of 5, and a transposed
   -- gradient is read through its strides; 1 and 2 threads give the same bits
   it('sums db over many rows in parts, from a strided gradient, the same at 1 and 2 threads', function()
      fnn.manual_seed(31)
      local x, w, b = fnn.randn(3, 50, 7), fnn.randn(9, 7), fnn.Param(fnn.randn(9))
      local g = fnn.randn(9, 50, 3):permute(3, 2, 1)   -- [3, 50, 9], not contiguous
      assert.is_false(g:is_contiguous())
      local gt = g:to_table()
      local want = {}
      for o = 1, 9 do
         local s = 0
         for i = 1, 3 do for j = 1, 50 do s = s + gt[i][j][o] end end
         want[o] = s
      end
      local threads, got = fnn.get_num_threads(), {}
      for _, t in ipairs{1, 2} do
         fnn.set_num_threads(t)
         b:zero_grad()
         fnn.linear(x, w, b:tensor()):backward(g)
         got[t] = b:grad():to_flat()
         approx(want, b:grad(), 1e-5)
      end
      fnn.set_num_threads(threads)
      assert.same(got[1], got[2])
   end)

   it('refuses mismatched input, weight and bias, naming the shapes', function()
      local _, err = pcall(function() return fnn.linear(fnn.ones(2, 3), fnn.ones(4, 5)) end)
      assert.matches('linear: input %[2,3%] and weight %[4,5%] do not agree', err)
      local _, e2 = pcall(function() return fnn.linear(fnn.ones(2, 5), fnn.ones(4, 5), fnn.ones(3)) end)
      assert.matches('linear: bias %[3%] does not match weight %[4,5%]', e2)
      local _, e3 = pcall(function() return fnn.linear(fnn.ones(2, 5), fnn.ones(5)) end)
      assert.matches('linear: weight %[5%] must be 2%-D', e3)
      local _, e4 = pcall(function() return fnn.linear(fnn.ones(2, 5), 'w') end)
      assert.matches('linear: weight is a string, expected a tensor', e4)
   end)
end)
