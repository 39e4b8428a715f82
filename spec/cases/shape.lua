-- Cases for core/ops/shape.c (the copying ops, on kernel rows), at least one per registered op, each
-- with a naive reference (index arithmetic over the inputs' plain values; the references read the
-- transposes and permutes of the cases by index too, not through a copy): run by
-- gradcheck_spec and by cuda_parity_spec on both sides. Every op here moves values and never computes
-- one, so the sweeps ask parity to be exact, gradients included (pad_mode's and repeat's backward
-- gather or sum in g's row-major order on both sides, with plain float adds). A few cases cover more
-- than one block of 256 threads; the sweeps after them go over the launch edges (the cat dim and the
-- padded line over 1, 127, 128, 129, 1023, 1024, 1025; n nil: gradcheck's small size), permuted and
-- narrowed views, int64 ids (values only), every pad mode, and tril/triu over several shapes and k.
-- The refusal of tensors on two devices stays in spec/cuda_parity_shape_spec.lua.
-- Most cases feed a non-contiguous input (a transpose or a narrow first), so
-- the rules see strided gradients and views of views. Format: see
-- spec/cases/elementwise.lua.
local fnn = require 'fastnn'

local function u(shape) return fnn.rand(shape) * 4 - 2 end
local SIZES = {1, 127, 128, 129, 1023, 1024, 1025}
local EXACT = {0, 0, 1}   -- moves of values: bit-equal on both sides, gradients too

-- ---- naive references: readers (get, shape) over contiguous inputs, results by index ----
local N_ = require 'naive_nd'
local some_ids = N_.some_ids
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
-- a reader of x narrowed along d to start at 1-based `from`
local function narrowed(x, d, from)
   local get, shape = N_.reader(x)
   local at = {}
   return {function(idx)
      for i, k in ipairs(idx) do at[i] = k end
      at[d] = idx[d] + from - 1
      return get(at)
   end, shape}
end
local function narrowed_shape(r, d, len) local s = {} for i, n in ipairs(r[2]) do s[i] = n end s[d] = len r[2] = s return r end
local function tri_ref(x, keep)
   local get, shape = x[1], x[2]
   return N_.build(shape, function(idx)
      local n = #idx
      return keep(idx[n - 1], idx[n]) and get(idx) or 0
   end)
end

local cases = {
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

-- ---- sweeps: the cat dim, the padded line, over the launch edges (n nil: gradcheck's small 2) ----
local function ab(n) n = n or 2 return u{3, n}, u{n, 3} end
local function abc(n) n = n or 2 return u{3, n}, u{n, 3}, u{3, 2} end
cases[#cases + 1] = {op = 'cat', sizes = SIZES, parity = EXACT, inputs = ab,
   fn = function(a, b) return fnn.cat({a, b:t()}, 2) end,
   ref = function(a, b) return cat_ref({R(a), R(b, T2)}, 2) end}
cases[#cases + 1] = {op = 'cat', sizes = SIZES, parity = EXACT, inputs = abc,
   fn = function(a, b, c) return fnn.cat({a, b:t(), c}, 2) end,
   ref = function(a, b, c) return cat_ref({R(a), R(b, T2), R(c)}, 2) end}
cases[#cases + 1] = {op = 'cat', sizes = SIZES, parity = EXACT, inputs = abc,
   fn = function(a, b, c) return fnn.cat({a:t(), b, c:t()}, 1) end,
   ref = function(a, b, c) return cat_ref({R(a, T2), R(b), R(c, T2)}, 1) end}
-- along each dim of a permuted and a narrowed view (n = 129; gradcheck at 4)
for d = 1, 3 do
   cases[#cases + 1] = {op = 'cat', sizes = {129}, parity = EXACT,
      inputs = function(n) n = n or 4 return u{3, n, 2}, u{2, n + 11, 3} end,
      fn = function(a, b) return fnn.cat({a:permute(3, 2, 1), b:narrow(2, 5, a:shape()[2])}, d) end,
      ref = function(a, b) return cat_ref({R(a, {3, 2, 1}), narrowed_shape(narrowed(b, 2, 5), 2, a:shape()[2])}, d) end}
end
-- int64 ids (values only: ids have no gradient)
local function ids2() return some_ids({4, 1025}, 50), some_ids({1025, 4}, 7) end
cases[#cases + 1] = {op = 'cat', gradcheck = false, parity = EXACT, inputs = ids2,
   fn = function(a, b) return fnn.cat({a, b:t()}, 1) end,
   ref = function(a, b) return cat_ref({R(a), R(b, T2)}, 1) end}
cases[#cases + 1] = {op = 'cat', gradcheck = false, parity = EXACT, inputs = ids2,
   fn = function(a, b) return fnn.cat({a, b:t(), a}, 2) end,
   ref = function(a, b) return cat_ref({R(a), R(b, T2), R(a)}, 2) end}
cases[#cases + 1] = {op = 'stack', gradcheck = false, parity = EXACT, inputs = ids2,
   fn = function(a, b) return fnn.stack({a, b:t()}, 2) end,
   ref = function(a, b) return stack_ref({R(a), R(b, T2)}, 2) end}
-- stack of 2 and 3 at each position
for d = 1, 3 do
   cases[#cases + 1] = {op = 'stack', sizes = {1, 128, 1025}, parity = EXACT, inputs = ab,
      fn = function(a, b) return fnn.stack({a, b:t()}, d) end,
      ref = function(a, b) return stack_ref({R(a), R(b, T2)}, d) end}
   cases[#cases + 1] = {op = 'stack', sizes = {1, 128, 1025}, parity = EXACT, inputs = ab,
      fn = function(a, b) return fnn.stack({a, b:t(), a}, d) end,
      ref = function(a, b) return stack_ref({R(a), R(b, T2), R(a)}, d) end}
end
-- repeat: shapes and repeats, of the transposed input too for 2-d ones
for _, c in ipairs{{{3, 4}, {2, 3}}, {{3, 4}, {1, 1}}, {{5}, {3, 2, 1}}, {{2, 1, 3}, {2, 129, 1}}, {{1, 1025}, {3, 1}}} do
   local shape, reps = c[1], c[2]
   cases[#cases + 1] = {op = 'repeat', parity = EXACT, inputs = function() return u(shape) end,
      fn = function(x) return x['repeat'](x, reps) end,
      ref = function(x) return repeat_ref(R(x), reps) end}
   if #shape == 2 then
      cases[#cases + 1] = {op = 'repeat', parity = EXACT, inputs = function() return u(shape) end,
         fn = function(x) return x:t()['repeat'](x:t(), reps) end,
         ref = function(x) return repeat_ref(R(x, T2), reps) end}
   end
end
cases[#cases + 1] = {op = 'repeat', gradcheck = false, parity = EXACT, inputs = function() return some_ids({3, 5}, 9) end,
   fn = function(x) return x['repeat'](x, 2, 1, 3) end,
   ref = function(x) return repeat_ref(R(x), {2, 1, 3}) end}
cases[#cases + 1] = {op = 'repeat', gradcheck = false, parity = EXACT, inputs = function() return some_ids({3, 5}, 9) end,
   fn = function(x) return x:t():tile{2} end,   -- tile pads its repeats on the left with 1s
   ref = function(x) return repeat_ref(R(x, T2), {1, 2}) end}
-- pad [2, n]: asymmetric with a value, two dims, of the transposed input, cropping
local function row2(n) return u{2, n or 5} end
for _, c in ipairs{{{3, 1}, -1.5}, {{0, 2, 1, 0}, 0}, {{1, 2, 2, 1}, 0.25, true}, {{-1, 2, 1, -1}, 0}} do
   local widths, value, tr = c[1], c[2], c[3]
   cases[#cases + 1] = {op = 'pad', parity = EXACT, inputs = row2,
      sizes = widths[1] < 0 and {127, 128, 129, 1023, 1024, 1025} or SIZES,   -- a crop needs n > 2
      fn = function(x) return (tr and x:t() or x):pad(widths, value) end,
      ref = function(x) return pad_ref(tr and R(x, T2) or R(x), widths, nil, value) end}
end
-- three dims of a narrowed 3-d view (n 128; gradcheck at 4), int64 ids, cropping
cases[#cases + 1] = {op = 'pad', sizes = {128}, parity = EXACT, inputs = function(n) return u{3, 5, (n or 4) + 2} end,
   fn = function(x) return x:narrow(3, 2, x:shape()[3] - 2):pad({1, 0, 0, 3, 2, 1}, 7) end,
   ref = function(x) return pad_ref(narrowed_shape(narrowed(x, 3, 2), 3, x:shape()[3] - 2), {1, 0, 0, 3, 2, 1}, nil, 7) end}
cases[#cases + 1] = {op = 'pad', gradcheck = false, parity = EXACT, inputs = function() return some_ids({4, 129}, 30) end,
   fn = function(x) return x:pad({2, 1, 1, 3}, -4) end,
   ref = function(x) return pad_ref(R(x), {2, 1, 1, 3}, nil, -4) end}
cases[#cases + 1] = {op = 'pad', gradcheck = false, parity = EXACT, inputs = function() return some_ids({4, 129}, 30) end,
   fn = function(x) return x:t():pad({-1, 1}) end,
   ref = function(x) return pad_ref(R(x, T2), {-1, 1}) end}
-- pad modes over [2, n] (reflect takes widths < n, circular <= n), then 3-d, int64 ids, and before a conv
local conv = require 'conv_reference'
for _, mode in ipairs{'reflect', 'replicate', 'circular'} do
   local o = {mode = mode}
   local function w(n) return mode == 'reflect' and math.min(3, n - 1) or mode == 'circular' and math.min(3, n) or 3 end
   local function last(x) local n = x:shape()[2] return {w(n), math.floor(w(n) / 2)} end
   local function two(x) return {0, w(x:shape()[2]), 1, 0} end
   local function tr(x) return {1, 1, w(x:shape()[2]), 0} end
   cases[#cases + 1] = {op = 'pad_mode', sizes = SIZES, parity = EXACT, inputs = row2,
      fn = function(x) return x:pad(last(x), o) end,
      ref = function(x) return pad_ref(R(x), last(x), MODES[mode]) end}
   cases[#cases + 1] = {op = 'pad_mode', sizes = SIZES, parity = EXACT, inputs = row2,
      fn = function(x) return x:pad(two(x), o) end,
      ref = function(x) return pad_ref(R(x), two(x), MODES[mode]) end}
   cases[#cases + 1] = {op = 'pad_mode', sizes = SIZES, parity = EXACT, inputs = row2,
      fn = function(x) return x:t():pad(tr(x), o) end,
      ref = function(x) return pad_ref(R(x, T2), tr(x), MODES[mode]) end}
   cases[#cases + 1] = {op = 'pad_mode', sizes = {128}, parity = EXACT, inputs = function(n) return u{3, 5, (n or 4) + 2} end,
      fn = function(x) return x:narrow(3, 2, x:shape()[3] - 2):pad({1, 0, 0, 3, 2, 1}, o) end,
      ref = function(x)
         return pad_ref(narrowed_shape(narrowed(x, 3, 2), 3, x:shape()[3] - 2), {1, 0, 0, 3, 2, 1}, MODES[mode])
      end}
   cases[#cases + 1] = {op = 'pad_mode', gradcheck = false, parity = EXACT, inputs = function() return some_ids({4, 129}, 30) end,
      fn = function(x) return x:pad({2, 1, 1, 3}, o) end,
      ref = function(x) return pad_ref(R(x), {2, 1, 1, 3}, MODES[mode]) end}
   -- then a 3x3 conv2d (naive loops of spec/conv_reference.lua); cuDNN/cuBLAS sum in another order: 1e-4
   cases[#cases + 1] = {op = 'pad_mode', parity = {1e-4, 1e-4}, inputs = function() return u{2, 3, 9, 8}, u{4, 3, 3, 3} end,
      fn = function(x, k) return fnn.conv2d(x:pad({1, 1, 2, 0}, o), k) end,
      ref = function(x, k)
         local p = pad_ref(R(x), {1, 1, 2, 0}, MODES[mode])
         local y, ys = conv.values(conv.conv_each, p, k, nil, {})
         return fnn.tensor(y, ys)
      end}
end
-- tril and triu with k = -1, 0, 2, and tril of the transposed input, over [2, r, m] for each shape of
-- TRI (sizes index it; gradcheck at [2, 3, 4])
local TRI = {{5, 7}, {7, 5}, {1, 1}, {3, 129}}
local function tri_in(n) local c = n and TRI[n] or {3, 4} return u{2, c[1], c[2]} end
for _, k in ipairs{-1, 0, 2} do
   local function lower(i, j) return j - i <= k end
   local function upper(i, j) return j - i >= k end
   cases[#cases + 1] = {op = 'tril', sizes = {1, 2, 3, 4}, parity = EXACT, inputs = tri_in,
      fn = function(x) return x:tril(k) end, ref = function(x) return tri_ref(R(x), lower) end}
   cases[#cases + 1] = {op = 'triu', sizes = {1, 2, 3, 4}, parity = EXACT, inputs = tri_in,
      fn = function(x) return x:triu(k) end, ref = function(x) return tri_ref(R(x), upper) end}
   cases[#cases + 1] = {op = 'tril', sizes = {1, 2, 3, 4}, parity = EXACT, inputs = tri_in,
      fn = function(x) return x:transpose(2, 3):tril(k) end, ref = function(x) return tri_ref(R(x, {1, 3, 2}), lower) end}
end
cases[#cases + 1] = {op = 'tril', gradcheck = false, parity = EXACT, inputs = function() return some_ids({2, 6, 4}, 11) end,
   fn = function(x) return x:tril(1) end, ref = function(x) return tri_ref(R(x), function(i, j) return j - i <= 1 end) end}
cases[#cases + 1] = {op = 'triu', gradcheck = false, parity = EXACT, inputs = function() return some_ids({2, 6, 4}, 11) end,
   fn = function(x) return x:transpose(2, 3):triu(-1) end,
   ref = function(x) return tri_ref(R(x, {1, 3, 2}), function(i, j) return j - i >= -1 end) end}
cases[#cases + 1] = {op = 'triu', parity = EXACT, inputs = function() return fnn.ones(9, 9) end,   -- a causal mask
   fn = function(x) return x:triu(1) end, ref = function(x) return tri_ref(R(x), function(i, j) return j - i >= 1 end) end}

return cases
