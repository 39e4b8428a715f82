-- Cases for core/ops/sort.c, each with a naive reference (table.sort of each line; topk: its first
-- k). Finite differences of a sort only make
-- sense away from ties: a step of eps must not reorder a line, so the inputs
-- are distinct values at least 0.15 apart (in [-2, 2], in the random order
-- fnn.rand gives), never merely distinct. Cases cover the last and a leading
-- dim, descending order, a transposed (strided) input, 3-D, and topk on both
-- its paths (a heap when k is small against the line, a full sort otherwise),
-- and lines over 128 (CUDA pads them to 256 keys, 128 threads a block). They
-- drive CUDA parity too, at the default tolerance.
-- The sweeps after them ask parity to be exact (both sides order the same distinct
-- (value, position) keys, and the backward stores g at distinct saved positions:
-- no atomics) and check values and 1-based indices together (both()) on
-- lines with ties, over the launch edges (a sort block has up to 1024 threads over
-- a power-of-two line in shared memory up to 2048 keys; 2049 and 5000 take the
-- global-scratch path), nan, +-inf and -0.0: ties keep their positions' order in
-- both directions, nan sorts above +inf, -0.0 equals 0.0. They gradcheck at their
-- own small distinct values (n nil) and sweep n over tied lines.
-- Format: see spec/cases/elementwise.lua.
local fnn = require 'fastnn'

-- shape's elements as distinct values spaced evenly over [-2, 2], shuffled by fnn.rand
local function spaced(shape)
   local r = fnn.rand(shape):to_flat()
   local order = {}
   for i = 1, #r do order[i] = i end
   table.sort(order, function(a, b) return r[a] < r[b] end)
   local v, step = {}, 4 / math.max(#r - 1, 1)
   for rank, at in ipairs(order) do v[at] = -2 + (rank - 1) * step end
   return fnn.tensor(v, shape)
end

local SIZES = {1, 127, 128, 129, 1023, 1024, 1025}
local EXACT = {0, 0, 1}
-- values with many ties (whole numbers in [-3, 3], in no order), deterministic
local function tied(shape)
   local n, v = 1, {}
   for _, d in ipairs(shape) do n = n * d end
   for i = 1, n do v[i] = (i * 37 + (i * i) % 11) % 7 - 3 end
   return fnn.tensor(v, shape)
end
-- values and indices (as float32: exact below 2^24) in one result, along dim 1
local function both(v, i) return fnn.cat({v, i:float()}, 1) end

-- ---- naive references: each line along dim d (negative: from the end) through table.sort ----
local N_ = require 'naive_nd'
local function lines(a, d, f)
   local get, shape = N_.reader(a)
   if d < 0 then d = #shape + 1 + d end
   return N_.along(get, shape, d, f)
end
local function sorted(line, desc)
   local s = {}
   for i, x in ipairs(line) do s[i] = x end
   table.sort(s, desc and function(x, y) return x > y end or nil)
   return s
end
-- the stable order of a line: (rank, position), nan above +inf, -0.0 equal to 0.0; desc flips the
-- rank only. The first k of it (all: k nil) as values and as 1-based positions.
local function order(line, desc, k)
   local p = {}
   for i = 1, #line do p[i] = i end
   table.sort(p, function(i, j)
      local a, b = line[i], line[j]
      local na, nb = a ~= a, b ~= b
      if na ~= nb then if desc then return na else return nb end end
      if not na and a ~= b then if desc then return a > b else return a < b end end
      return i < j
   end)
   local vals, pos = {}, {}
   for r = 1, k or #line do vals[r], pos[r] = line[p[r]], p[r] end
   return vals, pos
end
-- both(sort or topk) naively: the values then the positions, concatenated along dim 1
local function both_ref(a, d, desc, k)
   local v = lines(a, d, function(l) return (order(l, desc, k)) end)
   local i = lines(a, d, function(l) return select(2, order(l, desc, k)) end)
   local vs, is = v:to_flat(), i:to_flat()
   for r = 1, #is do vs[#vs + 1] = is[r] end
   local shape = v:shape()
   shape[1] = shape[1] * 2
   return fnn.tensor(vs, shape)
end
-- results concatenated along dim 1 (fn's cat of several sorts), naively: row-major, the flat lists
-- one after the other
local function joined(ts)
   local out, shape = {}, ts[1]:shape()
   shape[1] = 0
   for _, t in ipairs(ts) do
      for _, x in ipairs(t:to_flat()) do out[#out + 1] = x end
      shape[1] = shape[1] + t:shape()[1]
   end
   return fnn.tensor(out, shape)
end
-- the topk variants of a sweep: short lines several k both ways, long ones (slow under emulation) two
local function ks(n)
   if n < 1000 then return {{1, true}, {1, false}, {math.min(5, n), true}, {n, false}} end
   return {{5, true}, {n, false}}
end
local function sort_ref(a, d, desc) return lines(a, d, function(l) return sorted(l, desc) end) end
local function topk_ref(a, k, d, largest)
   return lines(a, d, function(l)
      local s, out = sorted(l, largest ~= false), {}
      for i = 1, k do out[i] = s[i] end
      return out
   end)
end

return {
   {op = 'sort', inputs = function() return spaced{7} end,
    fn = function(a) return (a:sort()) end,
    ref = function(a) return sort_ref(a, -1) end},
   {op = 'sort', inputs = function() return spaced{3, 5} end,
    fn = function(a) return (a:sort(2, {descending = true})) end,
    ref = function(a) return sort_ref(a, 2, true) end},
   {op = 'sort', inputs = function() return spaced{4, 3} end,
    fn = function(a) return (a:t():sort(1)) end,
    ref = function(a) return sort_ref(a:t(), 1) end},
   {op = 'sort', inputs = function() return spaced{2, 3, 4} end,
    fn = function(a) return (a:sort{descending = true}) * (a:sort(2)) end,
    ref = function(a)
       return N_.zip(function(x, y) return x * y end, sort_ref(a, -1, true), sort_ref(a, 2))
    end},
   {op = 'topk', inputs = function() return spaced{3, 6} end,
    fn = function(a) return (a:topk(2)) end,
    ref = function(a) return topk_ref(a, 2, -1) end},
   {op = 'topk', inputs = function() return spaced{4, 5} end,
    fn = function(a) return (a:t():topk(3, 2, {largest = false})) end,
    ref = function(a) return topk_ref(a:t(), 3, 2, false) end},
   -- k <= size / 16: the heap path
   {op = 'topk', inputs = function() return spaced{2, 20} end,
    fn = function(a) return (a:topk(1, 2)) end,
    ref = function(a) return topk_ref(a, 1, 2) end},
   {op = 'topk', inputs = function() return spaced{40, 2} end,
    fn = function(a) return (a:topk(2, 1, {largest = false})) end,
    ref = function(a) return topk_ref(a, 2, 1, false) end},
   -- lines of 129 and 130: past a GPU block's 128 threads
   {op = 'sort', inputs = function() return spaced{129, 2} end,
    fn = function(a) return (a:sort(1, {descending = true})) end,
    ref = function(a) return sort_ref(a, 1, true) end},
   {op = 'topk', inputs = function() return spaced{2, 130} end,
    fn = function(a) return (a:topk(3, 2)) end,
    ref = function(a) return topk_ref(a, 3, 2) end},

   -- ties, over the launch edges: the last dim of [2, n] and the middle dim of a transposed [2, 2, n]
   {op = 'sort', sizes = SIZES, parity = EXACT,
    inputs = function(n) return n and tied{2, n} or spaced{2, 5} end,
    fn = function(x) return fnn.cat({both(x:sort(2)), both(x:sort(2, {descending = true}))}, 1) end,
    ref = function(x) return joined{both_ref(x, 2, false), both_ref(x, 2, true)} end},
   {op = 'sort', sizes = SIZES, parity = EXACT,
    inputs = function(n) return n and tied{2, 2, n} or spaced{2, 2, 5} end,
    fn = function(x)
       local y = x:transpose(2, 3)
       return fnn.cat({both(y:sort(2)), both(y:sort(2, {descending = true}))}, 1)
    end,
    ref = function(x)
       local y = x:transpose(2, 3)
       return joined{both_ref(y, 2, false), both_ref(y, 2, true)}
    end},
   {op = 'topk', sizes = SIZES, parity = EXACT,
    inputs = function(n) return n and tied{2, n} or spaced{2, 5} end,
    fn = function(x)
       local out = {}
       for _, c in ipairs(ks(x:shape()[2])) do out[#out + 1] = both(x:topk(c[1], 2, {largest = c[2]})):reshape(-1) end
       return fnn.cat(out, 1)
    end,
    ref = function(x)
       local out = {}
       for _, c in ipairs(ks(x:shape()[2])) do out[#out + 1] = fnn.tensor(both_ref(x, 2, c[2], c[1]):to_flat()) end
       return joined(out)
    end},
   {op = 'topk', sizes = SIZES, parity = EXACT,
    inputs = function(n) return n and tied{2, 2, n} or spaced{2, 2, 5} end,
    fn = function(x)
       local y, out = x:transpose(2, 3), {}
       for _, c in ipairs(ks(y:shape()[2])) do out[#out + 1] = both(y:topk(c[1], 2, {largest = c[2]})):reshape(-1) end
       return fnn.cat(out, 1)
    end,
    ref = function(x)
       local y, out = x:transpose(2, 3), {}
       for _, c in ipairs(ks(y:shape()[2])) do out[#out + 1] = fnn.tensor(both_ref(y, 2, c[2], c[1]):to_flat()) end
       return joined(out)
    end},
   -- lines past the shared-memory sort (global scratch), with ties
   {op = 'sort', sizes = {2049, 5000}, parity = EXACT,
    inputs = function(n) return n and tied{1, n} or spaced{1, 9} end,
    fn = function(x) return both(x:sort(2, {descending = true})) end,
    ref = function(x) return both_ref(x, 2, true) end},
   {op = 'topk', sizes = {2049, 5000}, parity = EXACT,
    inputs = function(n) return n and tied{1, n} or spaced{1, 9} end,
    fn = function(x) return both(x:topk(7, 2, {largest = false})) end,
    ref = function(x) return both_ref(x, 2, false, 7) end},
   -- many short lines with ties; topk along dim 1
   {op = 'sort', sizes = {300}, parity = EXACT,
    inputs = function(n) return n and tied{n, 6} or spaced{4, 6} end,
    fn = function(x) return both(x:sort(2)) end,
    ref = function(x) return both_ref(x, 2, false) end},
   {op = 'topk', sizes = {40}, parity = EXACT,
    inputs = function(n) return n and tied{n, 3} or spaced{5, 3} end,
    fn = function(x) return both(x:topk(3, 1)) end,
    ref = function(x) return both_ref(x, 1, true, 3) end},
   -- nan, +-inf, -0.0 and 0.0 (values-only: no finite differences at nan), both directions; and 1 / the
   -- sorted values, whose infinities tell -0.0 from 0.0
   {op = 'sort', gradcheck = false, parity = EXACT,
    inputs = function() return fnn.tensor{{0, -0.0, 0 / 0, 1, -1 / 0, 1 / 0, 0 / 0, -0.0, 2, -1}} end,
    fn = function(x)
       return fnn.cat({both(x:sort(2)), both(x:sort(2, {descending = true})), 1 / (x:sort(2))}, 1)
    end,
    ref = function(x)
       local inv = N_.zip(function(v) return 1 / v end, lines(x, 2, function(l) return (order(l, false)) end))
       return joined{both_ref(x, 2, false), both_ref(x, 2, true), inv}
    end},
   -- a 0-dim tensor: one line of one value
   {op = 'sort', parity = EXACT, inputs = function() return fnn.tensor(3.5) end,
    fn = function(x) return (x:sort()) end,
    ref = function(x) return fnn.tensor(x:item()) end},
}
