-- Cases for core/ops/shape.c (the copying ops, on kernel rows), at least one per registered op, each
-- with a naive reference (index arithmetic over the inputs' plain values; the references read the
-- transposes and permutes of the cases by index too, not through a copy): run by
-- gradcheck_spec and by cuda_parity_spec on both sides (every op here is exact there, so the default
-- tolerance holds). A few cases cover more than one block of 256 threads; the size sweeps over the
-- launch edges, int64 ids and the error cases are spec/cuda_parity_shape_spec.lua's.
-- Most cases feed a non-contiguous input (a transpose or a narrow first), so
-- the rules see strided gradients and views of views. Format: see
-- spec/cases/elementwise.lua.
local fnn = require 'fastnn'

local function u(shape) return fnn.rand(shape) * 4 - 2 end

-- ---- naive references: readers (get, shape) over contiguous inputs, results by index ----
local N_ = require 'naive_nd'
local function R(t, perm)
   if perm then return {N_.permuted(t, perm)} end
   return {N_.reader(t)}
end
local T2 = {2, 1}
local function cat_ref(xs, d)
   local oshape = {}
   for i, n in ipairs(xs[1][2]) do oshape[i] = n end
   oshape[d] = 0
   for _, x in ipairs(xs) do oshape[d] = oshape[d] + x[2][d] end
   return N_.build(oshape, function(idx)
      local r, at = idx[d], {}
      for _, x in ipairs(xs) do
         if r <= x[2][d] then
            for i, k in ipairs(idx) do at[i] = k end
            at[d] = r
            return x[1](at)
         end
         r = r - x[2][d]
      end
   end)
end
local function stack_ref(xs, d)
   local oshape = {}
   for i, n in ipairs(xs[1][2]) do oshape[#oshape + 1] = n end
   table.insert(oshape, d, #xs)
   return N_.build(oshape, function(idx)
      local at = {}
      for i, k in ipairs(idx) do if i ~= d then at[#at + 1] = k end end
      return xs[idx[d]][1](at)
   end)
end
-- tiles: shape padded on the left with 1s to #reps, out[i] = in[(i - 1) % s + 1]
local function repeat_ref(x, reps)
   local get, shape = x[1], x[2]
   local lead = #reps - #shape
   local oshape = {}
   for i = 1, #reps do oshape[i] = (i > lead and shape[i - lead] or 1) * reps[i] end
   return N_.build(oshape, function(idx)
      local at = {}
      for i = lead + 1, #reps do at[i - lead] = (idx[i] - 1) % shape[i - lead] + 1 end
      return get(at)
   end)
end
-- widths {left, right} of the last dim, then of the one before, ...; negative crops. Where the
-- source index j falls outside 1..s, place(j, s) maps it (a mode) or gives nil (the value)
local function pad_ref(x, widths, place, value)
   local get, shape = x[1], x[2]
   local nd, lo, oshape = #shape, {}, {}
   for d = 1, nd do
      local k = nd - d   -- widths pair k + 1 pads dim d
      local l, r = widths[2 * k + 1] or 0, widths[2 * k + 2] or 0
      lo[d] = l
      oshape[d] = shape[d] + l + r
   end
   return N_.build(oshape, function(idx)
      local at = {}
      for d = 1, nd do
         local j = idx[d] - lo[d]
         if j < 1 or j > shape[d] then j = place and place(j, shape[d]) end
         if not j then return value or 0 end
         at[d] = j
      end
      return get(at)
   end)
end
local MODES = {
   reflect = function(j, s) return j < 1 and 2 - j or 2 * s - j end,
   replicate = function(j, s) return math.min(math.max(j, 1), s) end,
   circular = function(j, s) return (j - 1) % s + 1 end,
}
-- keep(i, j) over the last two dims: tril j - i <= k, triu j - i >= k
local function tri_ref(x, keep)
   local get, shape = x[1], x[2]
   return N_.build(shape, function(idx)
      local n = #idx
      return keep(idx[n - 1], idx[n]) and get(idx) or 0
   end)
end

return {
   {op = 'contiguous', inputs = function() return u{3, 4} end, fn = function(a) return a:t():contiguous() end,
    ref = function(a) local x = R(a, T2); return N_.build(x[2], x[1]) end},
   {op = 'cat', inputs = function() return u{2, 3}, u{1, 2}, u{2, 2} end,
    fn = function(a, b, c) return fnn.cat({a, b:t(), c}, 2) end,
    ref = function(a, b, c) return cat_ref({R(a), R(b, T2), R(c)}, 2) end},
   {op = 'stack', inputs = function() return u{2, 3}, u{3, 2} end,
    fn = function(a, b) return fnn.stack({a, b:t(), a}, 2) end,
    ref = function(a, b) return stack_ref({R(a), R(b, T2), R(a)}, 2) end},
   {op = 'repeat', inputs = function() return u{2, 3} end, fn = function(a) return a:t()['repeat'](a:t(), 2, 1, 3) end,
    ref = function(a) return repeat_ref(R(a, T2), {2, 1, 3}) end},
   {op = 'pad', inputs = function() return u{3, 4} end, fn = function(a) return a:t():pad({1, 2, -1, 1}, 0.5) end,
    ref = function(a) return pad_ref(R(a, T2), {1, 2, -1, 1}, nil, 0.5) end},
   -- all 8 dims padded or cropped: 16 widths (the node once kept the 16th over its pair count)
   {op = 'pad', inputs = function() return u{1, 2, 1, 2, 1, 2, 1, 2} end,
    fn = function(a) return a:pad({1, 1, -1, 1, 0, 2, 1, -1, 1, 0, -1, 1, 1, 1, 1, -1}, 0.5) end,
    ref = function(a) return pad_ref(R(a), {1, 1, -1, 1, 0, 2, 1, -1, 1, 0, -1, 1, 1, 1, 1, -1}, nil, 0.5) end},
   -- pad_mode: each mode, asymmetric widths over one to three dims, transposed inputs
   {op = 'pad_mode', inputs = function() return u{2, 5} end, fn = function(a) return a:pad({3, 1}, {mode = 'reflect'}) end,
    ref = function(a) return pad_ref(R(a), {3, 1}, MODES.reflect) end},
   {op = 'pad_mode', inputs = function() return u{3, 4} end,
    fn = function(a) return a:t():pad({2, 1, 0, 2}, {mode = 'reflect'}) end,
    ref = function(a) return pad_ref(R(a, T2), {2, 1, 0, 2}, MODES.reflect) end},
   {op = 'pad_mode', inputs = function() return u{2, 3, 2} end,
    fn = function(a) return a:pad({2, 0, 1, 3}, {mode = 'replicate'}) end,
    ref = function(a) return pad_ref(R(a), {2, 0, 1, 3}, MODES.replicate) end},
   {op = 'pad_mode', inputs = function() return u{2, 3, 4} end,
    fn = function(a) return a:transpose(1, 3):pad({1, 2, 3, 0, 1, 1}, {mode = 'circular'}) end,
    ref = function(a) return pad_ref(R(a, {3, 2, 1}), {1, 2, 3, 0, 1, 1}, MODES.circular) end},
   {op = 'pad_mode', inputs = function() return u{1, 2, 3, 2, 3} end,
    fn = function(a) return a:pad({1, 1, 0, 1, 2, 1}, {mode = 'reflect'}) end,
    ref = function(a) return pad_ref(R(a), {1, 1, 0, 1, 2, 1}, MODES.reflect) end},
   -- larger than one block of threads, read through strides
   {op = 'contiguous', inputs = function() return u{2, 65, 3} end,
    fn = function(a) return a:permute(3, 1, 2):contiguous() end,
    ref = function(a) local x = R(a, {3, 1, 2}); return N_.build(x[2], x[1]) end},
   {op = 'cat', inputs = function() return u{130, 2}, u{2, 3} end, fn = function(a, b) return fnn.cat({a, b:t()}, 1) end,
    ref = function(a, b) return cat_ref({R(a), R(b, T2)}, 1) end},
   {op = 'stack', inputs = function() return u{2, 129} end, fn = function(a) return fnn.stack({a:t(), a:t()}, 3) end,
    ref = function(a) return stack_ref({R(a, T2), R(a, T2)}, 3) end},
   {op = 'repeat', inputs = function() return u{1, 129} end, fn = function(a) return a['repeat'](a, 3, 1) end,
    ref = function(a) return repeat_ref(R(a), {3, 1}) end},
   {op = 'pad', inputs = function() return u{2, 130} end, fn = function(a) return a:pad({2, -3, 1, 0}, -1) end,
    ref = function(a) return pad_ref(R(a), {2, -3, 1, 0}, nil, -1) end},
   {op = 'pad_mode', inputs = function() return u{130, 2} end,
    fn = function(a) return a:t():pad({3, 2}, {mode = 'reflect'}) end,
    ref = function(a) return pad_ref(R(a, T2), {3, 2}, MODES.reflect) end},
   {op = 'tril', inputs = function() return u{2, 20, 17} end, fn = function(a) return a:tril(2) end,
    ref = function(a) return tri_ref(R(a), function(i, j) return j - i <= 2 end) end},
   {op = 'tril', inputs = function() return u{2, 3, 4} end, fn = function(a) return a:transpose(2, 3):tril(-1) end,
    ref = function(a) return tri_ref(R(a, {1, 3, 2}), function(i, j) return j - i <= -1 end) end},
   {op = 'triu', inputs = function() return u{3, 4} end, fn = function(a) return a:triu(1) end,
    ref = function(a) return tri_ref(R(a), function(i, j) return j - i >= 1 end) end},
}
