-- Reductions and softmax against naive Lua loops: every dim, negative dims,
-- keepdim, over everything, on views (transposed, expanded, narrowed), empty
-- tensors, large (threaded) tensors, gradients at ties and zeros, and the
-- errors for bad input.
local fnn = require 'fastnn'

local function approx(expected, t, tol)
   local got = t:to_flat()
   assert.equals(#expected, #got)
   for i = 1, #expected do
      local e, g = expected[i], got[i]
      if e ~= e then assert.is_true(g ~= g, 'element ' .. i .. ' expected nan, got ' .. g)
      elseif e == math.huge or e == -math.huge then assert.equals(e, g)
      else assert.is_true(math.abs(e - g) <= (tol or 1e-5) * math.max(1, math.abs(e)),
              ('element %d: expected %.7g got %.7g'):format(i, e, g)) end
   end
end

-- the lines of a row-major array along 1-based dim d (nil: one line of everything),
-- in output order; each line is a Lua array
local function lines(values, shape, d)
   if d == nil then return {values} end
   if d < 0 then d = d + #shape + 1 end
   local outer, inner, red = 1, 1, shape[d]
   for i = 1, d - 1 do outer = outer * shape[i] end
   for i = d + 1, #shape do inner = inner * shape[i] end
   local out = {}
   for o = 0, outer - 1 do
      for i = 0, inner - 1 do
         local line = {}
         for r = 0, red - 1 do line[r + 1] = values[(o * red + r) * inner + i + 1] end
         out[#out + 1] = line
      end
   end
   return out
end

-- reference reduction: f(line) -> number for each line
local function ref(t, d, f)
   local r = {}
   for k, line in ipairs(lines(t:to_flat(), t:shape(), d)) do r[k] = f(line) end
   return r
end

local function lsum(l) local s = 0; for _, v in ipairs(l) do s = s + v end; return s end
local function lmean(l) return lsum(l) / #l end
local function lprod(l) local p = 1; for _, v in ipairs(l) do p = p * v end; return p end
local function lvar(l, ddof)
   local m, s = lmean(l), 0
   for _, v in ipairs(l) do s = s + (v - m) ^ 2 end
   return s / (#l - ddof)
end
local function lnorm(p)
   return function(l)
      if p == math.huge then local m = 0; for _, v in ipairs(l) do m = math.max(m, math.abs(v)) end; return m end
      local s = 0
      for _, v in ipairs(l) do s = s + math.abs(v) ^ p end
      return s ^ (1 / p)
   end
end
local function llse(l) local s = 0; for _, v in ipairs(l) do s = s + math.exp(v) end; return math.log(s) end
local function largmax(l) local b = 1; for i = 2, #l do if l[i] > l[b] then b = i end end; return b end
local function largmin(l) local b = 1; for i = 2, #l do if l[i] < l[b] then b = i end end; return b end

-- softmax reference: the same shape, normalised along d
local function ref_softmax(t, d, log)
   local shape, values = t:shape(), t:to_flat()
   if d < 0 then d = d + #shape + 1 end
   local out, outer, inner, red = {}, 1, 1, shape[d]
   for i = 1, d - 1 do outer = outer * shape[i] end
   for i = d + 1, #shape do inner = inner * shape[i] end
   for o = 0, outer - 1 do
      for i = 0, inner - 1 do
         local s = 0
         for r = 0, red - 1 do s = s + math.exp(values[(o * red + r) * inner + i + 1]) end
         for r = 0, red - 1 do
            local at = (o * red + r) * inner + i + 1
            out[at] = log and values[at] - math.log(s) or math.exp(values[at]) / s
         end
      end
   end
   return out
end

-- a pcall whose error must name the op and point at this file
local function err_of(f)
   local ok, err = pcall(f)
   assert.is_false(ok, 'expected an error')
   assert.matches('^spec/reduction_spec%.lua:%d+: ', err)
   return err
end

describe('reductions along a dim', function()
   fnn.manual_seed(7)
   local x = fnn.randn(3, 4, 5)
   local cases = {
      sum = lsum, mean = lmean, prod = lprod, logsumexp = llse,
      var = function(l) return lvar(l, 1) end,
      std = function(l) return math.sqrt(lvar(l, 1)) end,
      norm = lnorm(2),
   }
   for name, f in pairs(cases) do
      it(name .. ' matches a naive loop along every dim and over everything', function()
         for d = 1, 3 do
            local r = x[name](x, name == 'norm' and 2 or d, name == 'norm' and d or nil)
            local want_shape = x:shape()
            table.remove(want_shape, d)
            assert.same(want_shape, r:shape())
            approx(ref(x, d, f), r, 1e-4)
         end
         local all = name == 'norm' and x:norm() or x[name](x)
         assert.same({}, all:shape())
         approx(ref(x, nil, f), all, 1e-4)
      end)
   end

   it('negative dims count from the end; keepdim keeps a size-1 dim', function()
      assert.same({3, 4}, x:sum(-1):shape())
      approx(ref(x, 3, lsum), x:sum(-1), 1e-5)
      assert.same({3, 1, 5}, x:mean(2, true):shape())
      approx(ref(x, 2, lmean), x:mean(-2, true), 1e-5)
      assert.same({1, 4, 5}, x:var(1, true):shape())
      assert.same({1, 1, 1}, x:sum(nil, true):shape())
      approx(ref(x, nil, lsum), x:sum(nil, true), 1e-5)
   end)

   it('var and std: unbiased by default, {unbiased = false} divides by n', function()
      local t = fnn.tensor{{1, 2, 3, 4}, {2, 2, 2, 10}}
      approx({5 / 3, 16}, t:var(2))
      approx({5 / 4, 12}, t:var(2, {unbiased = false}))
      approx({5 / 4, 12}, t:var(2, false, {unbiased = false}))
      approx({math.sqrt(5 / 3), 4}, t:std(2))
      approx({math.sqrt(1.25), math.sqrt(12)}, t:std(2, {unbiased = false}))
      approx({lvar(t:to_flat(), 0)}, t:var{unbiased = false})
      approx({math.sqrt(lvar(t:to_flat(), 1))}, t:std())
      approx({0 / 0}, fnn.tensor{3}:var())        -- one value, unbiased: nan
      approx({0}, fnn.tensor{3}:var{unbiased = false})
   end)

   it('norm with p = 1, 3, inf, -inf, 0 and the names inf and fro', function()
      local t = fnn.tensor{{3, -4, 0}, {-1, 2, -2}}
      approx({7, 5}, t:norm(1, 2))
      approx({(27 + 64) ^ (1 / 3), (1 + 8 + 8) ^ (1 / 3)}, t:norm(3, 2), 1e-5)
      approx({4, 2}, t:norm(math.huge, 2))
      approx({4, 2}, t:norm('inf', 2))
      approx({0, 1}, t:norm(-math.huge, 2))
      approx({2, 3}, t:norm(0, 2))
      approx({math.sqrt(9 + 16 + 1 + 4 + 4)}, t:norm('fro'))
      approx({math.sqrt(10), math.sqrt(20), 2}, t:norm(2, 1))
   end)

   it('logsumexp is stable for large and -inf values', function()
      approx({1000 + math.log(2), -5}, fnn.tensor{{1000, 1000}, {-math.huge, -5}}:logsumexp(2))
      approx({-math.huge}, fnn.tensor{-math.huge, -math.huge}:logsumexp())
      approx({math.huge}, fnn.tensor{1, math.huge}:logsumexp())
   end)

   it('prod of values with a zero and with large magnitudes', function()
      approx({0, 24}, fnn.tensor{{1, 0, 3}, {2, 3, 4}}:prod(2))
      approx({1e20}, fnn.tensor{1e10, 1e10}:prod(), 1e-6)
   end)
end)

describe('reductions on views', function()
   fnn.manual_seed(11)
   local base = fnn.randn(4, 6)
   it('a transposed input', function()
      local t = base:t()                       -- [6, 4], strides [1, 6]
      assert.is_false(t:is_contiguous())
      for d = 1, 2 do
         approx(ref(t, d, lsum), t:sum(d), 1e-5)
         approx(ref(t, d, lprod), t:prod(d), 1e-4)
         approx(ref(t, d, function(l) return lvar(l, 1) end), t:var(d), 1e-4)
         approx(ref(t, d, llse), t:logsumexp(d), 1e-5)
         approx(ref_softmax(t, d), t:softmax(d), 1e-5)
         approx(ref_softmax(t, d, true), t:log_softmax(d), 1e-5)
         approx(ref(t, d, largmax), t:argmax(d))
      end
      approx(ref(t, nil, lsum), t:sum(), 1e-5)
      approx(ref(t, nil, lmean), t:mean(), 1e-5)
   end)
   it('a permuted 3-d input (no single inner stride)', function()
      local t = fnn.randn(2, 3, 4):permute(3, 1, 2)    -- [4, 2, 3]
      for d = 1, 3 do
         approx(ref(t, d, lsum), t:sum(d), 1e-5)
         approx(ref(t, d, lmean), t:mean(d), 1e-5)
         approx(ref(t, d, largmin), t:argmin(d))
         approx(ref_softmax(t, d), t:softmax(d), 1e-5)
      end
   end)
   it('expanded inputs (stride 0) along the reduced dim and beside it', function()
      local row = fnn.tensor{1, 2, 3}
      local e = row:expand(5, 3)               -- [5, 3], strides [0, 1]
      approx({5, 10, 15}, e:sum(1))
      approx({6, 6, 6, 6, 6}, e:sum(2))
      approx({30}, e:sum())
      approx({1, 2, 3}, e:mean(1))
      local col = fnn.tensor{{1}, {2}}:expand(2, 4)   -- [2, 4], strides [1, 0]
      approx({4, 8}, col:sum(2))
      approx({3, 3, 3, 3}, col:sum(1))
      approx({12}, col:sum())
      approx({2, 2, 2, 2}, col:argmax(1))
      local e3 = fnn.tensor{{1, 2}, {3, 4}}:reshape{2, 1, 2}:expand(2, 3, 2)   -- [2, 3, 2], strides [2, 0, 1]
      approx(ref(e3, 3, lsum), e3:sum(3))
      approx(ref(e3, 1, lsum), e3:sum(1))
      approx(ref_softmax(e3, 2), e3:softmax(2), 1e-6)
   end)
   it('a narrowed input (an offset into storage)', function()
      local t = base:narrow(2, 2, 3)           -- [4, 3] starting at column 2
      approx(ref(t, 2, lsum), t:sum(2), 1e-5)
      approx(ref(t, 1, lsum), t:sum(1), 1e-5)
      approx(ref(t, 2, largmax), t:argmax(2))
   end)
end)

describe('empty and degenerate reductions', function()
   it('sum of nothing is 0, mean nan, prod 1, logsumexp -inf', function()
      local z = fnn.zeros(0, 3)
      assert.same({3}, z:sum(1):shape())
      approx({0, 0, 0}, z:sum(1))
      approx({0 / 0, 0 / 0, 0 / 0}, z:mean(1))
      approx({1, 1, 1}, z:prod(1))
      approx({-math.huge, -math.huge, -math.huge}, z:logsumexp(1))
      approx({0}, fnn.zeros(0):sum())
      approx({0 / 0}, fnn.zeros(0):mean())
      assert.same({0}, z:sum(2):shape())
      assert.same({0}, z:max(2):shape())
      assert.same({0, 3}, z:softmax(2):shape())
   end)
   it('max and argmax of nothing are errors naming the op and shape', function()
      local err = err_of(function() local v = fnn.zeros(0, 3):max(1); return v end)
      assert.matches('max: dim 1 of %[0,3%] has size 0, nothing to reduce', err)
      err = err_of(function() local v = fnn.zeros(0):min(); return v end)
      assert.matches('min: tensor %[0%] has no elements to reduce', err)
      err = err_of(function() local v = fnn.zeros(2, 0):argmax(2); return v end)
      assert.matches('argmax: dim 2 of %[2,0%] has size 0', err)
   end)
   it('a 0-dim tensor reduces to itself', function()
      local s = fnn.tensor(3.5)
      approx({3.5}, s:sum())
      approx({3.5}, s:max())
      approx({1}, s:argmax())
      approx({1}, s:softmax())
      approx({0}, s:log_softmax())
   end)
end)

describe('max, min, argmax, argmin', function()
   local t = fnn.tensor{{3, 7, 7, 1}, {-2, -5, 0, -5}}
   it('values and 1-based indices along a dim; first occurrence on ties', function()
      local v, i = t:max(2)
      approx({7, 0}, v)
      approx({2, 3}, i)
      v, i = t:min(2)
      approx({1, -5}, v)
      approx({4, 2}, i)
      v, i = t:max(1, true)
      assert.same({1, 4}, v:shape())
      assert.same({1, 4}, i:shape())
      approx({3, 7, 7, 1}, v)
      approx({1, 1, 1, 1}, i)
      approx({2, 3}, t:argmax(2))
      approx({4, 2}, t:argmin(-1))
      approx({2, 2, 2, 2}, t:argmin(1))
   end)
   it('indices behave as a Lua array of ids', function()
      local _, i = t:max(2)
      assert.equals(2, #i)
      assert.equals(2, i[1])
      assert.equals(3, i[2])
   end)
   it('over everything: one value, and the flat 1-based index', function()
      local v = t:max()
      assert.same({}, v:shape())
      assert.equals(7, v:item())
      assert.equals(-5, t:min():item())
      assert.equals(2, t:argmax():item())
      assert.equals(6, t:argmin():item())
      assert.equals(3, t:t():argmax():item())   -- flat index in the view's own order
   end)
   it('nan wins, as in PyTorch', function()
      local n = fnn.tensor{1, 0 / 0, 5}
      assert.is_true(n:max():item() ~= n:max():item())
      assert.equals(2, n:argmax():item())
      assert.equals(2, n:argmin():item())
   end)
   it('max(other) is the elementwise maximum', function()
      approx({3, 7, 7, 1, 0, 0, 0, 0}, t:max(fnn.zeros(2, 4)))
      approx({0, 0, 0, 0, -2, -5, 0, -5}, t:min(fnn.zeros(4)))
   end)
   it('argmax has no gradient', function()
      local p = fnn.Param(fnn.tensor{1, 3, 2})
      assert.is_nil(p:tensor():argmax():grad_fn())
      assert.equals('max', p:tensor():max():grad_fn())
   end)
end)

describe('softmax and log_softmax', function()
   fnn.manual_seed(3)
   local x = fnn.randn(3, 4, 5) * 3
   it('match the formula along every dim (last by default)', function()
      for d = 1, 3 do
         approx(ref_softmax(x, d), x:softmax(d), 1e-5)
         approx(ref_softmax(x, d, true), x:log_softmax(d), 1e-5)
      end
      approx(ref_softmax(x, 3), x:softmax(), 1e-5)
      approx(ref_softmax(x, 3, true), x:log_softmax(-1), 1e-5)
   end)
   it('rows sum to one', function()
      approx(ref(x:softmax(2), 2, lsum), fnn.ones(3, 5), 1e-5)
   end)
   it('are stable for large logits and -inf entries', function()
      approx({0.5, 0.5, 0}, fnn.tensor{1000, 1000, -math.huge}:softmax(), 1e-6)
      approx({-math.log(2), -math.log(2), -math.huge}, fnn.tensor{1000, 1000, -math.huge}:log_softmax(), 1e-6)
      approx({0, 1}, fnn.tensor{-1e4, 1e4}:softmax())
      approx({-2e4, 0}, fnn.tensor{-1e4, 1e4}:log_softmax())
   end)
   it('large rows (threaded, one pass per row) match the formula', function()
      local big = fnn.randn(300, 200)
      approx(ref_softmax(big, 2), big:softmax(2), 1e-5)
      approx(ref_softmax(big, 2, true), big:log_softmax(2), 1e-5)
      approx(ref_softmax(big, 1, true), big:log_softmax(1), 1e-5)
   end)
end)

describe('large tensors', function()
   it('sum over everything of a million values is accurate (double accumulation)', function()
      local n = 1000003
      local t = fnn.full({n}, 0.1)
      local want = 0
      for _ = 1, n do want = want + 0.10000000149011612 end   -- float32(0.1), in doubles
      approx({want}, t:sum(), 1e-6)
      approx({want / n}, t:mean(), 1e-6)
      local r = fnn.arange(n)
      approx({(n - 1) * n / 2}, r:sum(), 1e-6)
   end)
   it('a long sum gives the same bits whatever the thread count', function()
      fnn.manual_seed(9)
      local t = fnn.randn(1048576)
      local before = fnn.get_num_threads()
      fnn.set_num_threads(1)
      local one = t:sum():item()
      fnn.set_num_threads(4)
      local four = t:sum():item()
      fnn.set_num_threads(before)
      assert.equals(one, four)
   end)
   it('sum along the first and last dim of a large matrix (threaded paths)', function()
      fnn.manual_seed(5)
      local m = fnn.randn(700, 300)
      approx(ref(m, 1, lsum), m:sum(1), 1e-4)
      approx(ref(m, 2, lsum), m:sum(2), 1e-4)
      approx(ref(m, 1, lmean), m:mean(1, true), 1e-4)
      approx(ref(m, 2, function(l) return lvar(l, 1) end), m:var(2), 1e-4)
      approx(ref(m, 2, largmax), m:argmax(2))
      local mt = m:t()
      approx(ref(mt, 1, lsum), mt:sum(1), 1e-4)
      approx(ref(mt, 2, lsum), mt:sum(2), 1e-4)
   end)
end)

describe('gradients', function()
   local function grad_of(value, f)
      local p = fnn.Param(value)
      f(p:tensor()):backward()
      return p:grad()
   end
   it('sum and mean spread the gradient over the reduced dim', function()
      approx({1, 1, 1, 1, 1, 1}, grad_of(fnn.ones(2, 3), function(t) return t:sum() end))
      approx({1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6}, grad_of(fnn.ones(2, 3), function(t) return t:mean() end))
      local g = grad_of(fnn.ones(2, 3), function(t) return (t:sum(2) * fnn.tensor{1, 2}):sum() end)
      approx({1, 1, 1, 2, 2, 2}, g)
      g = grad_of(fnn.ones(2, 3), function(t) return (t:mean(1, true) * fnn.tensor{{3, 6, 9}}):sum() end)
      approx({1.5, 3, 4.5, 1.5, 3, 4.5}, g)
   end)
   -- the backward fills dx [outer, red, inner] row by row, over the threads past a size (reduction.c's
   -- spread_rows: the output row counted along, one run per output where inner is 1): every element
   -- against g's value for its output, on shapes whose thread parts begin inside a run
   it('sum and mean spread a large gradient over any dim, split over the threads, as a naive loop', function()
      fnn.manual_seed(5)
      -- (past 2^18 elements the rows go over the threads, FNN_PARALLEL_MIN_WORK)
      for _, case in ipairs{{{67, 61, 67}, 3}, {{67, 61, 67}, 2}, {{67, 61, 67}, 1}, {{5, 100003}, 2},
                            {{100003, 3}, 1}, {{3, 7, 11}, 3}} do
         local shape, dim = case[1], case[2]
         for _, op in ipairs{'sum', 'mean'} do
            local p = fnn.Param(fnn.randn(shape))
            local y = p:tensor()[op](p:tensor(), dim)
            local g = fnn.randn(y:shape())
            y:backward(g)
            local gv, dx = g:to_flat(), p:grad():to_flat()
            local inner = 1
            for d = dim + 1, #shape do inner = inner * shape[d] end
            local red, scale = shape[dim], op == 'mean' and 1 / shape[dim] or 1
            local bad
            for i = 1, #dx do   -- element i: output (outer index, inner index) = ((i-1) // (red*inner), (i-1) % inner)
               local o = math.floor((i - 1) / (red * inner)) * inner + (i - 1) % inner
               local want = gv[o + 1] * scale
               if math.abs(dx[i] - want) > 1e-6 * math.max(1, math.abs(want)) then bad = i break end
            end
            assert.is_nil(bad, ('%s over dim %d of %s: element %s'):format(op, dim, fnn.shape_str(p:tensor()), bad))
         end
      end
   end)
   it('broadcasting in an elementwise op sums the gradient back (fnn_sum_to_shape)', function()
      local g = grad_of(fnn.tensor{1, 2, 3}, function(t) return (t + fnn.ones(4, 3)):sum() end)
      approx({4, 4, 4}, g)
      g = grad_of(fnn.tensor{{1}, {2}}, function(t) return (t * fnn.ones(2, 5)):sum() end)
      approx({5, 5}, g)
   end)
   it('max along a dim sends the gradient to the first of tied values', function()
      approx({0, 1, 0, 0, 0, 0, 1, 0}, grad_of(fnn.tensor{{3, 7, 7, 1}, {-2, -5, 0, -5}},
         function(t) return (t:max(2)):sum() end))
      approx({0, 0, 0, 1, 0, 1, 0, 0}, grad_of(fnn.tensor{{3, 7, 7, 1}, {-2, -5, 0, -5}},
         function(t) return (t:min(2)):sum() end))
   end)
   it('max over everything splits the gradient evenly among ties', function()
      approx({0, 1 / 3, 1 / 3, 0, 1 / 3, 0}, grad_of(fnn.tensor{{1, 4, 4}, {2, 4, 0}}, function(t) return t:max() end))
      approx({0.5, 0, 0.5}, grad_of(fnn.tensor{-1, 2, -1}, function(t) return t:min() end))
   end)
   it('prod: one zero gets the product of the others, two zeros give zeros', function()
      approx({0, 6, 0}, grad_of(fnn.tensor{2, 0, 3}, function(t) return t:prod() end))
      approx({0, 0, 0, 0}, grad_of(fnn.tensor{2, 0, 3, 0}, function(t) return t:prod() end))
      approx({12, 8, 6}, grad_of(fnn.tensor{2, 3, 4}, function(t) return t:prod() end))
   end)
   it('norm at zero and inf-norm ties have finite gradients', function()
      approx({0, 0}, grad_of(fnn.zeros(2), function(t) return t:norm() end))
      approx({-0.5, 0, 0.5}, grad_of(fnn.tensor{-3, 1, 3}, function(t) return t:norm('inf') end))
   end)
   it('softmax gradient of a sum is zero; log_softmax of a pick is onehot - softmax', function()
      approx({0, 0, 0}, grad_of(fnn.tensor{0.1, 2, -1}, function(t) return t:softmax():sum() end), 1e-6)
      local x = fnn.tensor{0.5, 1.5, -1}
      local s = ref_softmax(x, 1)
      approx({-s[1], 1 - s[2], -s[3]}, grad_of(x, function(t) return (t:log_softmax() * fnn.tensor{0, 1, 0}):sum() end))
   end)
   it('nodes are freed after backward (no leak)', function()
      collectgarbage()
      local before = fnn.live_nodes()
      do
         local p = fnn.Param(fnn.randn(3, 4))
         local t = p:tensor()
         local _, i = t:max(2)
         local loss = t:softmax(2):logsumexp(2):sum() + t:std() + t:norm(1) + t:prod(1):mean() + i:sum():float()
         loss:backward()
      end
      collectgarbage()
      assert.equals(before, fnn.live_nodes())
   end)
end)

describe('bad input', function()
   local x = fnn.ones(2, 3)
   it('a dim out of range names the op and shape at the caller\'s line', function()
      local err = err_of(function() local r = x:sum(3); return r end)
      assert.matches('sum: dim 3 out of range for %[2,3%] %(dims are 1%.%.2 or %-2%.%.%-1%)', err)
      err = err_of(function() local r = x:softmax(-3); return r end)
      assert.matches('softmax: dim %-3 out of range for %[2,3%]', err)
      err = err_of(function() local r, i = x:max(0); return r, i end)
      assert.matches('max: dim 0 out of range for %[2,3%]', err)
      err = err_of(function() local r = x:var(1.5); return r end)
      assert.matches('var: dim 1%.5 out of range', err)
   end)
   it('a bad p for norm, a non-tensor, a freed tensor', function()
      local err = err_of(function() local r = x:norm('two'); return r end)
      assert.matches('norm: p is two', err)
      err = err_of(function() local r = x:norm(0 / 0); return r end)
      assert.matches('norm: p must be a number', err)
      err = err_of(function() local r = fnn.sum({1, 2}); return r end)
      assert.matches('sum: expected a tensor, got a table', err)
      local f = fnn.ones(4, 5)
      f:free()
      err = err_of(function() local r = f:mean(); return r end)
      assert.matches('mean: tensor was freed', err)
   end)
   it('try_ forms return nil and the message', function()
      local r, err = x:try_sum(5)
      assert.is_nil(r)
      assert.matches('sum: dim 5 out of range for %[2,3%]', err)
   end)

   -- keepdim: a boolean, 0/1, or PyTorch's keyword as {keepdim = ...}; a table used to count as true
   -- whatever it held, and an argument past the last was dropped
   it('reads keepdim as given, refuses what is not one, and refuses an argument too many', function()
      local x = fnn.randn(2, 3)
      for _, name in ipairs{'sum', 'mean', 'prod', 'logsumexp', 'argmax', 'argmin'} do
         assert.same({3}, x[name](x, 1, {keepdim = false}):shape(), name)
         assert.same({1, 3}, x[name](x, 1, {keepdim = true}):shape(), name)
         assert.same({2, 1}, x[name](x, 2, true):shape(), name)
         assert.matches(name .. ": keepdim is 'yes', expected true, false or {keepdim = ...}",
                        select(2, pcall(x[name], x, 1, 'yes')), 1, true)
         assert.matches(name .. ': unexpected argument 4 (a table {})', select(2, pcall(x[name], x, 1, true, {})), 1, true)
      end
      assert.same({2}, (x:max(2, {keepdim = false})):shape())
      assert.same({1, 3}, x:norm(2, 1, {keepdim = true}):shape())
      assert.same({1, 3}, x:var(1, {keepdim = true, unbiased = false}):shape())
      assert.matches("Tensor.sum: unknown option 'keepdims'", select(2, pcall(x.sum, x, 1, {keepdims = true})), 1, true)
      assert.matches('softmax: unexpected argument 3 (a table {})', select(2, pcall(x.softmax, x, 2, {})), 1, true)
   end)
end)
