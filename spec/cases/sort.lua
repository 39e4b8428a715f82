-- Cases for core/ops/sort.c, each with a naive reference (table.sort of each line; topk: its first
-- k). Finite differences of a sort only make
-- sense away from ties: a step of eps must not reorder a line, so the inputs
-- are distinct values at least 0.15 apart (in [-2, 2], in the random order
-- fnn.rand gives), never merely distinct. Cases cover the last and a leading
-- dim, descending order, a transposed (strided) input, 3-D, and topk on both
-- its paths (a heap when k is small against the line, a full sort otherwise),
-- and lines over 128 (CUDA pads them to 256 keys, 128 threads a block). They
-- drive CUDA parity too; spec/cuda_parity_shape_spec.lua adds ties, nan/inf
-- and lines past the GPU's shared-memory sort (too long for a gradcheck).
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
}
