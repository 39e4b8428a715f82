-- sort and topk against a naive Lua reference (table.sort with an index
-- tie-break, nan largest): 1-D to 3-D along every dim, strided inputs
-- (transposed, permuted, narrowed, expanded), both directions, ties, nan,
-- -0.0, topk on both kernel paths, k = 0 and k = size, 0-dim and empty
-- tensors, the int64 indices, gradients, the errors, and large inputs.
local fnn = require 'fastnn'

local nan = 0 / 0

-- the order of two values: nan above everything, -0.0 equal to 0.0
local function less(a, b)
   if a ~= a then return false end
   if b ~= b then return true end
   return a < b
end

-- the stable order of a Lua array: {values}, {1-based positions}
local function ref_line(line, descending)
   local at = {}
   for i = 1, #line do at[i] = i end
   table.sort(at, function(i, j)
      local a, b = line[i], line[j]
      if descending then a, b = b, a end
      if less(a, b) then return true end
      if less(b, a) then return false end
      return i < j
   end)
   local v = {}
   for r, i in ipairs(at) do v[r] = line[i] end
   return v, at
end

-- the reference of x:sort(d, {descending}) (k nil) or of the first k (topk): flat values and
-- indices in the output's row-major order, and the output's shape
local function ref(x, d, descending, k)
   local shape, flat = x:shape(), x:to_flat()
   if d < 0 then d = d + #shape + 1 end
   local outer, inner, n = 1, 1, shape[d]
   for i = 1, d - 1 do outer = outer * shape[i] end
   for i = d + 1, #shape do inner = inner * shape[i] end
   local m = k or n
   local values, indices = {}, {}
   for o = 0, outer - 1 do
      for i = 0, inner - 1 do
         local line = {}
         for r = 0, n - 1 do line[r + 1] = flat[(o * n + r) * inner + i + 1] end
         local v, at = ref_line(line, descending)
         for r = 0, m - 1 do
            values[(o * m + r) * inner + i + 1] = v[r + 1]
            indices[(o * m + r) * inner + i + 1] = at[r + 1]
         end
      end
   end
   local oshape = {}
   for i = 1, #shape do oshape[i] = i == d and m or shape[i] end
   return values, indices, oshape
end

-- exact equality, element by element (sorting moves values, never changes them); nan matches nan.
-- Plain comparisons, one assertion: luassert costs microseconds a call, and some lines are long
local function same_values(expected, got, what)
   assert.equals(#expected, #got, what .. ': element count')
   for i = 1, #expected do
      local e, g = expected[i], got[i]
      if not (e == g or (e ~= e and g ~= g)) then
         assert.is_true(false, ('%s element %d: expected %.9g, got %.9g'):format(what, i, e, g))
      end
   end
end

-- x:sort / x:topk against the reference
local function check_sort(x, d, descending)
   local v, i = x:sort(d, {descending = descending})
   local ev, ei, shape = ref(x, d, descending)
   assert.same(shape, v:shape())
   assert.same(shape, i:shape())
   same_values(ev, v:to_flat(), 'values')
   same_values(ei, i:to_flat(), 'indices')
end
local function check_topk(x, k, d, largest)
   local v, i = x:topk(k, d, {largest = largest})
   local ev, ei, shape = ref(x, d, largest, k)
   assert.same(shape, v:shape())
   assert.same(shape, i:shape())
   same_values(ev, v:to_flat(), 'values')
   same_values(ei, i:to_flat(), 'indices')
end

-- a pcall whose error must point at this file
local function err_of(f)
   local ok, err = pcall(f)
   assert.is_false(ok, 'expected an error')
   assert.matches('^spec/sort_spec%.lua:%d+: ', err)
   return err
end

-- shape's elements drawn from `levels` whole numbers: ties everywhere
local function ties(shape, levels)
   local r = fnn.rand(shape):to_flat()
   for k = 1, #r do r[k] = math.floor(r[k] * levels) end
   return fnn.tensor(r, shape)
end

-- an int64 tensor, through whichever constructor the core offers
local function int64_tensor(values)
   if fnn.long then return fnn.long(values) end
   return fnn.tensor(values, {dtype = 'int64'})
end

describe('sort', function()
   fnn.manual_seed(21)
   it('a 1-D tensor, ascending by default and descending on request', function()
      for _, n in ipairs{1, 2, 10, 48, 49, 300} do    -- both sides of the insertion-sort limit
         local x = fnn.randn(n)
         check_sort(x, 1, false)
         check_sort(x, -1, true)
      end
      local v, i = fnn.tensor{3, 1, 2}:sort()
      same_values({1, 2, 3}, v:to_flat(), 'values')
      same_values({2, 3, 1}, i:to_flat(), 'indices')
      v, i = fnn.tensor{3, 1, 2}:sort{descending = true}
      same_values({3, 2, 1}, v:to_flat(), 'values')
      same_values({1, 3, 2}, i:to_flat(), 'indices')
   end)

   it('a 2-D tensor along each dim; the last by default', function()
      local x = fnn.randn(5, 7)
      for _, d in ipairs{1, 2, -1, -2} do
         check_sort(x, d, false)
         check_sort(x, d, true)
      end
      local v, i = x:sort()
      local ev, ei = ref(x, 2, false)
      same_values(ev, v:to_flat(), 'values')
      same_values(ei, i:to_flat(), 'indices')
   end)

   it('a 3-D tensor along each dim, with lines long enough for the radix sort', function()
      local x = fnn.randn(3, 60, 4)
      for d = 1, 3 do
         check_sort(x, d, false)
         check_sort(x, d, true)
      end
   end)

   it('strided inputs: transposed, permuted, narrowed and expanded', function()
      local t = fnn.randn(6, 70):t()                 -- [70, 6], strides [1, 70]
      assert.is_false(t:is_contiguous())
      for d = 1, 2 do check_sort(t, d, false); check_sort(t, d, true) end
      local p = fnn.randn(2, 3, 5):permute(3, 1, 2)  -- [5, 2, 3]
      for d = 1, 3 do check_sort(p, d, true) end
      local n = fnn.randn(4, 9):narrow(2, 3, 5)      -- an offset into storage
      check_sort(n, 2, false)
      check_sort(n, 1, true)
      local e = fnn.tensor{{3}, {1}, {2}}:expand(3, 4)   -- stride 0 along dim 2: every line all ties
      check_sort(e, 1, false)
      check_sort(e, 2, true)
      local v, i = e:sort(2)
      same_values({1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}, i:to_flat(), 'indices')
      same_values({3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2}, v:to_flat(), 'values')
   end)

   it('is stable: equal values keep their order in both directions', function()
      local x = fnn.tensor{2, 1, 2, 1, 2}
      local v, i = x:sort()
      same_values({1, 1, 2, 2, 2}, v:to_flat(), 'values')
      same_values({2, 4, 1, 3, 5}, i:to_flat(), 'indices')
      v, i = x:sort{descending = true}
      same_values({2, 2, 2, 1, 1}, v:to_flat(), 'values')
      same_values({1, 3, 5, 2, 4}, i:to_flat(), 'indices')
      -- long lines of few distinct values (the radix path), along a leading dim too
      local few = ties({500, 3}, 4)
      check_sort(few, 1, false)
      check_sort(few, 1, true)
      check_sort(few:t(), 2, false)
   end)

   it('puts nan last ascending and first descending, keeping nans in order; -0.0 equals 0.0', function()
      local x = fnn.tensor{1, nan, -math.huge, 0, nan, math.huge, -0.0, -1}
      local v, i = x:sort()
      same_values({-math.huge, -1, 0, 0, 1, math.huge, nan, nan}, v:to_flat(), 'values')
      same_values({3, 8, 4, 7, 1, 6, 2, 5}, i:to_flat(), 'indices')
      v, i = x:sort{descending = true}
      same_values({nan, nan, math.huge, 1, 0, 0, -1, -math.huge}, v:to_flat(), 'values')
      same_values({2, 5, 6, 1, 4, 7, 8, 3}, i:to_flat(), 'indices')
      -- the -0.0 keeps its sign: it moved, it was not rewritten
      assert.equals(-math.huge, 1 / v:to_flat()[6])
      check_sort(x, 1, false)
      check_sort(x, 1, true)
      -- nan among many (radix path)
      local t = fnn.randn(200):to_flat()
      for j = 1, 200, 7 do t[j] = nan end
      local big = fnn.tensor(t)
      check_sort(big, 1, false)
      check_sort(big, 1, true)
   end)

   it('returns float32 values and int64 indices', function()
      local v, i = fnn.randn(3, 4):sort(1)
      assert.equals('int64', i:dtype())
      assert.equals('float32', v:dtype())
      local tv, ti = fnn.randn(3, 40):topk(2)
      assert.equals('int64', ti:dtype())
      assert.equals('float32', tv:dtype())
   end)

   it('a 0-dim tensor is its own sort, at index 1', function()
      local s = fnn.tensor(3.5)
      for _, d in ipairs{nil, 1, -1} do
         local v, i = s:sort(d)
         assert.same({}, v:shape())
         assert.same({}, i:shape())
         assert.equals(3.5, v:item())
         assert.equals(1, i:item())
      end
      local v, i = s:sort{descending = true}
      assert.equals(3.5, v:item())
      assert.equals(1, i:item())
   end)

   it('empty tensors give empty results of the same shape', function()
      local v, i = fnn.zeros(0, 3):sort(1)
      assert.same({0, 3}, v:shape())
      assert.same({0, 3}, i:shape())
      v, i = fnn.zeros(2, 0):sort(1)
      assert.same({2, 0}, v:shape())
      assert.same({2, 0}, i:shape())
   end)

   it('is also fnn.sort, with a try_ form', function()
      local x = fnn.randn(4, 5)
      local v, i = fnn.sort(x, 1, {descending = true})
      local ev, ei = ref(x, 1, true)
      same_values(ev, v:to_flat(), 'values')
      same_values(ei, i:to_flat(), 'indices')
      local r, msg = fnn.try_sort(x, 3)
      assert.is_nil(r)
      assert.matches('sort: dim 3 out of range for %[4,5%]', msg)
   end)
end)

describe('topk', function()
   fnn.manual_seed(22)
   it('the k largest, best first, and the k smallest with {largest = false}', function()
      local x = fnn.randn(4, 30)
      for _, k in ipairs{1, 2, 5, 29} do
         check_topk(x, k, 2, true)
         check_topk(x, k, 2, false)
         check_topk(x, math.min(k, 4), 1, true)
      end
      local v, i = fnn.tensor{1, 5, 3, 4}:topk(2)
      same_values({5, 4}, v:to_flat(), 'values')
      same_values({2, 4}, i:to_flat(), 'indices')
      v, i = fnn.tensor{1, 5, 3, 4}:topk(2, {largest = false})
      same_values({1, 3}, v:to_flat(), 'values')
      same_values({1, 3}, i:to_flat(), 'indices')
   end)

   it('small k of long lines (the heap path) equals the first k of the stable sort, ties and nan included', function()
      local x = fnn.randn(3, 500, 2)
      for _, k in ipairs{1, 3, 31} do
         check_topk(x, k, 2, true)
         check_topk(x, k, 2, false)
      end
      local few = ties({4, 640}, 3)     -- many ties per line
      check_topk(few, 10, 2, true)
      check_topk(few, 40, 2, false)
      check_topk(few:t(), 20, 1, true)
      local t = fnn.randn(400):to_flat()
      t[17], t[300], t[5] = nan, nan, math.huge
      local withnan = fnn.tensor(t)
      local v, i = withnan:topk(3)
      same_values({nan, nan, math.huge}, v:to_flat(), 'values')
      same_values({17, 300, 5}, i:to_flat(), 'indices')
      check_topk(withnan, 20, 1, false)
   end)

   it('k = 0 gives empty results; k = size equals the sort', function()
      local x = fnn.randn(3, 5)
      local v, i = x:topk(0)
      assert.same({3, 0}, v:shape())
      assert.same({3, 0}, i:shape())
      v, i = x:topk(0, 1)
      assert.same({0, 5}, v:shape())
      local sv, si = x:sort(2, {descending = true})
      v, i = x:topk(5)
      same_values(sv:to_flat(), v:to_flat(), 'values')
      same_values(si:to_flat(), i:to_flat(), 'indices')
      sv, si = x:sort(1)
      v, i = x:topk(3, 1, {largest = false})
      same_values(sv:to_flat(), v:to_flat(), 'values')
      same_values(si:to_flat(), i:to_flat(), 'indices')
      v, i = fnn.zeros(2, 0):topk(0)
      assert.same({2, 0}, v:shape())
   end)

   it('on strided inputs', function()
      local t = fnn.randn(5, 90):t()            -- [90, 5]
      check_topk(t, 4, 1, true)
      check_topk(t, 60, 1, false)
      check_topk(t, 2, 2, false)
      local p = fnn.randn(3, 4, 40):permute(3, 1, 2)   -- [40, 3, 4]
      check_topk(p, 2, 1, true)
   end)

   it('a 0-dim tensor: k = 1 is the tensor, k = 0 is empty', function()
      local s = fnn.tensor(-2)
      local v, i = s:topk(1)
      assert.same({}, v:shape())
      assert.equals(-2, v:item())
      assert.equals(1, i:item())
      v, i = s:topk(1, 1, {largest = false})
      assert.equals(-2, v:item())
      v, i = s:topk(0)
      assert.equals(0, v:numel())
      assert.equals(0, i:numel())
   end)

   it('is also fnn.topk', function()
      local x = fnn.randn(6, 3)
      local v, i = fnn.topk(x, 2, 1)
      local ev, ei = ref(x, 1, true, 2)
      same_values(ev, v:to_flat(), 'values')
      same_values(ei, i:to_flat(), 'indices')
   end)
end)

describe('sort and topk gradients', function()
   fnn.manual_seed(23)
   -- dx of (values * w):sum() computed in Lua: w scattered back to the indices along d
   local function ref_grad(xshape, d, idx, w, oshape)
      if d < 0 then d = d + #xshape + 1 end
      local outer, inner, n, m = 1, 1, xshape[d], oshape[d]
      for k = 1, d - 1 do outer = outer * xshape[k] end
      for k = d + 1, #xshape do inner = inner * xshape[k] end
      local dx = {}
      for k = 1, outer * n * inner do dx[k] = 0 end
      for o = 0, outer - 1 do
         for i = 0, inner - 1 do
            for r = 0, m - 1 do
               local at = (o * m + r) * inner + i + 1
               local pos = (o * n + idx[at] - 1) * inner + i + 1
               dx[pos] = dx[pos] + w[at]
            end
         end
      end
      return dx
   end
   local function check_grad(value, view, d, f)
      local p = fnn.Param(value)
      local x = view(p:tensor())
      local v, i = f(x)
      assert.is_nil(i:grad_fn())
      local w = fnn.randn(v:shape())
      ;(v * w):sum():backward()
      local xg = view(p:grad())          -- the gradient seen through the same view as x
      local want = ref_grad(x:shape(), d, i:to_flat(), w:to_flat(), v:shape())
      local got = xg:to_flat()
      assert.equals(#want, #got)
      for k = 1, #want do
         assert.is_true(math.abs(want[k] - got[k]) <= 1e-6,
                        ('element %d: expected %.7g got %.7g'):format(k, want[k], got[k]))
      end
   end
   local id = function(t) return t end
   local tr = function(t) return t:t() end

   it('sort sends each gradient back to the position its value came from', function()
      check_grad(fnn.randn(4, 6), id, 2, function(x) return x:sort(2) end)
      check_grad(fnn.randn(4, 6), id, 1, function(x) return x:sort(1, {descending = true}) end)
      check_grad(fnn.randn(5, 60), tr, 1, function(x) return x:sort(1) end)
      check_grad(fnn.randn(2, 3, 4), id, 2, function(x) return x:sort(2, {descending = true}) end)
      check_grad(fnn.tensor{2, 1, 2, 1, 2}, id, 1, function(x) return x:sort() end)   -- ties
   end)

   it('topk sends gradients to the k chosen positions and zeros elsewhere', function()
      check_grad(fnn.randn(3, 7), id, 2, function(x) return x:topk(3) end)
      check_grad(fnn.randn(3, 200), id, 2, function(x) return x:topk(4, 2, {largest = false}) end)
      check_grad(fnn.randn(6, 40), tr, 2, function(x) return x:topk(2, 2) end)
      check_grad(fnn.randn(3, 5), id, 1, function(x) return x:topk(0, 1) end)
      local p = fnn.Param(fnn.tensor{1, 5, 3, 4})
      local v = p:tensor():topk(2)
      v:sum():backward()
      same_values({0, 1, 0, 1}, p:grad():to_flat(), 'gradient')
   end)

   it('a 0-dim tensor passes its gradient through', function()
      local p = fnn.Param(fnn.tensor(2))
      local v = p:tensor():sort()
      ;(v * 3):backward()
      assert.equals(3, p:grad():item())
   end)

   it('values name their op; indices and no_grad results carry no node', function()
      local p = fnn.Param(fnn.randn(3, 4))
      local v, i = p:tensor():sort()
      assert.equals('sort', v:grad_fn())
      assert.is_nil(i:grad_fn())
      v, i = p:tensor():topk(2)
      assert.equals('topk', v:grad_fn())
      assert.is_nil(i:grad_fn())
      v = fnn.no_grad(function() return (p:tensor():sort()) end)
      assert.is_nil(v:grad_fn())
      assert.is_nil((fnn.randn(3):sort()):grad_fn())
   end)
end)

describe('sort and topk errors', function()
   local x = fnn.randn(2, 4)
   it('a dim out of range names the op and the shape', function()
      local err = err_of(function() local v = x:sort(3); return v end)
      assert.matches('sort: dim 3 out of range for %[2,4%]', err)
      err = err_of(function() local v = x:sort(0); return v end)
      assert.matches('sort: dim 0 out of range for %[2,4%]', err)
      err = err_of(function() local v = x:topk(1, -3); return v end)
      assert.matches('topk: dim %-3 out of range for %[2,4%]', err)
      err = err_of(function() local v = fnn.tensor(1):sort(2); return v end)
      assert.matches('sort: dim 2 out of range for %[%]', err)
   end)

   it('k out of range or not a whole number', function()
      local err = err_of(function() local v = fnn.randn(3, 5):topk(7, 2); return v end)
      assert.matches('topk: k = 7 out of range for dim 2 of %[3,5%] %(0%.%.5%)', err)
      err = err_of(function() local v = fnn.randn(3, 5):topk(-1, 1); return v end)
      assert.matches('topk: k = %-1 out of range for dim 1 of %[3,5%] %(0%.%.3%)', err)
      err = err_of(function() local v = fnn.tensor(1):topk(2); return v end)
      assert.matches('topk: k = 2 out of range for %[%] %(0%.%.1%)', err)
      err = err_of(function() local v = x:topk(1.5); return v end)
      assert.matches('topk: k is 1%.5, expected a whole number from 0 to 4 %(the size of dim 2 of %[2,4%]%)', err)
      err = err_of(function() local v = x:topk('2'); return v end)
      assert.matches('topk: k is 2, expected a whole number', err)
      err = err_of(function() local v = x:topk(nil); return v end)
      assert.matches('topk: k is nil, expected a whole number', err)
      err = err_of(function() local v = x:topk(math.huge); return v end)
      assert.matches('topk: k is inf, expected a whole number', err)
   end)

   it('refuses an int64 input, naming the op and the dtype', function()
      local err = err_of(function() local v = fnn.sort(int64_tensor{3, 1, 2}); return v end)
      assert.matches('sort', err)
      assert.matches('int64', err)
      err = err_of(function() local v = int64_tensor{3, 1, 2}:topk(1); return v end)
      assert.matches('topk', err)
      assert.matches('int64', err)
   end)

   it('refuses a non-tensor and options that are not a table', function()
      local err = err_of(function() local v = fnn.sort({3, 1}); return v end)
      assert.matches('sort: expected a tensor, got a table', err)
      err = err_of(function() local v = x:sort(1, true); return v end)
      assert.matches('Tensor.sort: options must be a table like {descending = ...}, got a boolean (true)', err, 1, true)
      err = err_of(function() local v = x:topk(1, 1, 'smallest'); return v end)
      assert.matches("Tensor.topk: options must be a table like {largest = ...}, got a string (smallest)", err, 1, true)
   end)

   it('a freed tensor', function()
      local t = fnn.randn(40)
      t:free()
      local err = err_of(function() local v = t:sort(); return v end)
      assert.matches('sort: tensor was freed', err)
   end)
end)

describe('large inputs', function()
   -- values ascending (descending) along the line, and indices a permutation that maps back to x
   local function check_line(xf, vf, idf, descending)
      local n = #xf
      assert.equals(n, #vf)
      assert.equals(n, #idf)
      local seen, bad = {}, nil
      for r = 1, n do
         local p = idf[r]
         if not (p >= 1 and p <= n and p == math.floor(p)) or seen[p] then bad = 'not a permutation'
         elseif vf[r] ~= xf[p] then bad = 'a value that is not x at its index'
         elseif r > 1 then
            local a, b = vf[r - 1], vf[r]
            if descending then a, b = b, a end
            if not (a <= b) then bad = 'out of order'
            elseif a == b and not (idf[r - 1] < idf[r]) then bad = 'ties out of order' end
         end
         if bad then assert.is_true(false, ('element %d: %s'):format(r, bad)) end
         seen[p] = true
      end
   end

   it('200000 elements along one dim: sorted, and the indices a permutation', function()
      fnn.manual_seed(31)
      local x = fnn.randn(200000)
      local xf = x:to_flat()
      local v, i = x:sort()
      check_line(xf, v:to_flat(), i:to_flat(), false)
      local dv, di = x:sort{descending = true}
      check_line(xf, dv:to_flat(), di:to_flat(), true)
      local few = ties({200000}, 50)                -- ties everywhere: stability at scale
      v, i = few:sort()
      check_line(few:to_flat(), v:to_flat(), i:to_flat(), false)
      -- topk of the long line (the heap path): the first 100 of the descending sort
      local tv, ti = x:topk(100)
      local tvf, tif, dvf, dif = tv:to_flat(), ti:to_flat(), dv:to_flat(), di:to_flat()
      assert.equals(100, #tvf)
      for r = 1, 100 do
         assert.equals(dvf[r], tvf[r])
         assert.equals(dif[r], tif[r])
      end
   end)

   it('many lines (threaded) match the reference and do not depend on the thread count', function()
      fnn.manual_seed(32)
      local x = fnn.randn(4096, 64)          -- 262144 elements, sorted along the leading dim: strided lines
      local before = fnn.get_num_threads()
      fnn.set_num_threads(1)
      local v1, i1 = x:sort(1)
      local t1v, t1i = x:topk(3, 2)   -- 3 <= 64 / 16: the heap path
      fnn.set_num_threads(4)
      local v4, i4 = x:sort(1)
      local t4v, t4i = x:topk(3, 2)   -- 3 <= 64 / 16: the heap path
      fnn.set_num_threads(before)
      same_values(v1:to_flat(), v4:to_flat(), 'values')
      same_values(i1:to_flat(), i4:to_flat(), 'indices')
      same_values(t1v:to_flat(), t4v:to_flat(), 'topk values')
      same_values(t1i:to_flat(), t4i:to_flat(), 'topk indices')
      local ev, ei = ref(x, 1, false)
      same_values(ev, v4:to_flat(), 'values')
      same_values(ei, i4:to_flat(), 'indices')
      ev, ei = ref(x, 2, true, 3)
      same_values(ev, t4v:to_flat(), 'topk values')
      same_values(ei, t4i:to_flat(), 'topk indices')
   end)
end)
