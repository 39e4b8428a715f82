-- Cases for core/ops/view.c (the view family), at least one per registered op.
-- Most cases feed a non-contiguous input (a transpose or a narrow first), so
-- the rules see strided gradients and views of views. Each `ref` reads the input's values through
-- the view's shape, strides and offset written out by hand (a naive gather, no view op).
-- The sweeps (n over 1, 129, 1025) make views contiguous through the device's strided copy
-- (their CUDA parity: exact, forward and gradients). Format: see spec/cases/elementwise.lua.
local fnn = require 'fastnn'

local function u(shape) return fnn.rand(shape) * 4 - 2 end

-- the view of contiguous a with the given shape, strides (in elements) and 0-based offset, by a loop
local function gather(a, shape, strides, offset)
   local v, out = a:to_flat(), {}
   require('naive_nd').each(shape, function(idx)
      local off = offset or 0
      for d = 1, #shape do off = off + (idx[d] - 1) * strides[d] end
      out[#out + 1] = v[off + 1]
   end)
   return fnn.tensor(out, shape)
end
-- contiguous strides of a shape
local function cstrides(shape)
   local s, st = {}, 1
   for d = #shape, 1, -1 do s[d] = st; st = st * shape[d] end
   return s
end
-- the values of a with dims reordered (output dim i is a's dim perm[i]), then laid out as shape
-- (nil: the permuted shape)
local function permuted(a, perm, shape)
   local sh, st, psh, pst = a:shape(), cstrides(a:shape()), {}, {}
   for i, p in ipairs(perm) do psh[i], pst[i] = sh[p], st[p] end
   local g = gather(a, psh, pst, 0)
   return shape and fnn.tensor(g:to_flat(), shape) or g
end
local function same_values(a, shape) return fnn.tensor(a:to_flat(), shape) end

local cases = {
   {op = 'reshape', inputs = function() return u{2, 3, 4} end, fn = function(a) return a:reshape(4, -1) end,
    ref = function(a) return same_values(a, {4, 6}) end},
   -- transposed: not viewable, so reshape copies (the node is the same)
   {op = 'reshape', inputs = function() return u{3, 4} end, fn = function(a) return a:t():reshape{2, 6} end,
    ref = function(a) return permuted(a, {2, 1}, {2, 6}) end},
   {op = 'view', inputs = function() return u{2, 6} end, fn = function(a) return a:narrow(2, 2, 4):view(2, 2, 2) end,
    ref = function(a) return gather(a, {2, 2, 2}, {6, 2, 1}, 1) end},
   {op = 'transpose', inputs = function() return u{2, 3, 4} end, fn = function(a) return a:transpose(1, 3) end,
    ref = function(a) return permuted(a, {3, 2, 1}) end},
   {op = 'permute', inputs = function() return u{2, 3, 4} end,
    fn = function(a) return a:transpose(1, 2):permute(3, 1, 2) end,
    ref = function(a) return permuted(a, {3, 2, 1}) end},
   {op = 'expand', inputs = function() return u{3, 1} end, fn = function(a) return a:expand(2, 3, 4) end,
    ref = function(a) return gather(a, {2, 3, 4}, {0, 1, 0}) end},
   {op = 'expand', inputs = function() return u{1, 3} end, fn = function(a) return a:t():expand{-1, 5} end,
    ref = function(a) return gather(a, {3, 5}, {1, 0}) end},
   {op = 'narrow', inputs = function() return u{4, 5} end, fn = function(a) return a:t():narrow(2, 2, 2) end,
    ref = function(a) return gather(a, {5, 2}, {1, 5}, 5) end},
   {op = 'select', inputs = function() return u{3, 4} end, fn = function(a) return a:t():select(1, 3) end,
    ref = function(a) return gather(a, {3}, {4}, 2) end},
   {op = 'squeeze', inputs = function() return u{2, 1, 3, 1} end, fn = function(a) return a:squeeze() end,
    ref = function(a) return same_values(a, {2, 3}) end},
   {op = 'squeeze', inputs = function() return u{1, 3} end, fn = function(a) return a:t():squeeze(2) end,
    ref = function(a) return same_values(a, {3}) end},
   {op = 'unsqueeze', inputs = function() return u{2, 3} end, fn = function(a) return a:t():unsqueeze(2) end,
    ref = function(a) return gather(a, {3, 1, 2}, {1, 0, 3}) end},
   {op = 'flatten', inputs = function() return u{2, 3, 2} end, fn = function(a) return a:transpose(1, 3):flatten(2) end,
    ref = function(a) return same_values(gather(a, {2, 3, 2}, {1, 2, 6}), {2, 6}) end},
}
local function add(c) cases[#cases + 1] = c end

-- the device's strided copy (contiguous, a copying reshape) across launch edges: values only
local SIZES = {1, 127, 128, 129, 1023, 1024, 1025}
add{op = 'transpose', sizes = SIZES, gradcheck = false, parity = {0, 0},   -- contiguous of [n,3]^T
    inputs = function(n) return u{n, 3} end, fn = function(a) return a:t():contiguous() end,
    ref = function(a) return permuted(a, {2, 1}) end}
add{op = 'permute', sizes = SIZES, gradcheck = false, parity = {0, 0},   -- contiguous of a permuted [2,n,3]
    inputs = function(n) return u{2, n, 3} end, fn = function(a) return a:permute(3, 1, 2):contiguous() end,
    ref = function(a) return permuted(a, {3, 1, 2}) end}
add{op = 'reshape', sizes = SIZES, gradcheck = false, parity = {0, 0},   -- reshape of a narrowed [n,4]
    inputs = function(n) return u{n, 4} end, fn = function(a) return a:narrow(2, 2, 2):reshape(-1) end,
    ref = function(a) local n = a:shape()[1]; return same_values(gather(a, {n, 2}, {4, 1}, 1), {n * 2}) end}

-- each view made contiguous on [n, ...] shapes, forward and backward (the backward is a view or a sum
-- of the device's own ops: exact); n nil: gradcheck's size 2
local N = {1, 129, 1025}
add{op = 'expand', sizes = N, parity = {0, 1e-6}, inputs = function(n) return u{n or 2, 1, 3} end,
    fn = function(x) return x:expand(x:shape()[1], 4, 3):contiguous() end,
    ref = function(x) return gather(x, {x:shape()[1], 4, 3}, {3, 0, 1}) end}
add{op = 'squeeze', sizes = N, parity = {0, 0}, inputs = function(n) return u{n or 2, 1, 3} end,
    fn = function(x) return x:squeeze(2):t():contiguous() end,
    ref = function(x) return gather(x, {3, x:shape()[1]}, {1, 3}) end}
add{op = 'unsqueeze', sizes = N, parity = {0, 0}, inputs = function(n) return u{n or 2, 3} end,
    fn = function(x) return x:t():unsqueeze(1):contiguous() end,
    ref = function(x) return gather(x, {1, 3, x:shape()[1]}, {0, 1, 3}) end}
add{op = 'flatten', sizes = N, parity = {0, 0}, inputs = function(n) return u{2, n or 2, 3} end,
    fn = function(x) return x:permute(3, 1, 2):flatten() end,
    ref = function(x) return same_values(permuted(x, {3, 1, 2}), {x:numel()}) end}
add{op = 'select', sizes = N, parity = {0, 0}, inputs = function(n) return u{n or 2, 4, 3} end,
    fn = function(x) return x:select(2, 3):contiguous() end,
    ref = function(x) return gather(x, {x:shape()[1], 3}, {12, 1}, 6) end}
add{op = 'narrow', sizes = N, parity = {0, 0}, inputs = function(n) return u{n or 2, 4, 3} end,
    fn = function(x) return x:narrow(2, 2, 2):contiguous() end,
    ref = function(x) return gather(x, {x:shape()[1], 2, 3}, {12, 3, 1}, 3) end}
add{op = 'view', sizes = N, parity = {0, 0}, inputs = function(n) return u{n or 2, 4, 3} end,
    fn = function(x) return x:view(x:shape()[1] * 2, 6):t():contiguous() end,
    ref = function(x) return gather(x, {6, x:shape()[1] * 2}, {1, 6}) end}
add{op = 'permute', sizes = N, parity = {0, 0}, inputs = function(n) return u{2, n or 2, 3} end,
    fn = function(x) return x:permute(2, 3, 1):contiguous() end,
    ref = function(x) return permuted(x, {2, 3, 1}) end}

return cases
