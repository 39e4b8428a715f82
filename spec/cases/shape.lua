-- Cases for core/ops/shape.c (the copying ops, on kernel rows), at least one per registered op: run by
-- gradcheck_spec and by cuda_parity_spec on both sides (every op here is exact there, so the default
-- tolerance holds). A few cases cover more than one block of 256 threads; the size sweeps over the
-- launch edges, int64 ids and the error cases are spec/cuda_parity_shape_spec.lua's.
-- Most cases feed a non-contiguous input (a transpose or a narrow first), so
-- the rules see strided gradients and views of views. Format: see
-- spec/cases/elementwise.lua.
local fnn = require 'fastnn'

local function u(shape) return fnn.rand(shape) * 4 - 2 end

return {
   {op = 'contiguous', inputs = function() return u{3, 4} end, fn = function(a) return a:t():contiguous() end},
   {op = 'cat', inputs = function() return u{2, 3}, u{1, 2}, u{2, 2} end,
    fn = function(a, b, c) return fnn.cat({a, b:t(), c}, 2) end},
   {op = 'stack', inputs = function() return u{2, 3}, u{3, 2} end,
    fn = function(a, b) return fnn.stack({a, b:t(), a}, 2) end},
   {op = 'repeat', inputs = function() return u{2, 3} end, fn = function(a) return a:t()['repeat'](a:t(), 2, 1, 3) end},
   {op = 'pad', inputs = function() return u{3, 4} end, fn = function(a) return a:t():pad({1, 2, -1, 1}, 0.5) end},
   -- all 8 dims padded or cropped: 16 widths (the node once kept the 16th over its pair count)
   {op = 'pad', inputs = function() return u{1, 2, 1, 2, 1, 2, 1, 2} end,
    fn = function(a) return a:pad({1, 1, -1, 1, 0, 2, 1, -1, 1, 0, -1, 1, 1, 1, 1, -1}, 0.5) end},
   -- pad_mode: each mode, asymmetric widths over one to three dims, transposed inputs
   {op = 'pad_mode', inputs = function() return u{2, 5} end, fn = function(a) return a:pad({3, 1}, {mode = 'reflect'}) end},
   {op = 'pad_mode', inputs = function() return u{3, 4} end,
    fn = function(a) return a:t():pad({2, 1, 0, 2}, {mode = 'reflect'}) end},
   {op = 'pad_mode', inputs = function() return u{2, 3, 2} end,
    fn = function(a) return a:pad({2, 0, 1, 3}, {mode = 'replicate'}) end},
   {op = 'pad_mode', inputs = function() return u{2, 3, 4} end,
    fn = function(a) return a:transpose(1, 3):pad({1, 2, 3, 0, 1, 1}, {mode = 'circular'}) end},
   {op = 'pad_mode', inputs = function() return u{1, 2, 3, 2, 3} end,
    fn = function(a) return a:pad({1, 1, 0, 1, 2, 1}, {mode = 'reflect'}) end},
   -- larger than one block of threads, read through strides
   {op = 'contiguous', inputs = function() return u{2, 65, 3} end,
    fn = function(a) return a:permute(3, 1, 2):contiguous() end},
   {op = 'cat', inputs = function() return u{130, 2}, u{2, 3} end, fn = function(a, b) return fnn.cat({a, b:t()}, 1) end},
   {op = 'stack', inputs = function() return u{2, 129} end, fn = function(a) return fnn.stack({a:t(), a:t()}, 3) end},
   {op = 'repeat', inputs = function() return u{1, 129} end, fn = function(a) return a['repeat'](a, 3, 1) end},
   {op = 'pad', inputs = function() return u{2, 130} end, fn = function(a) return a:pad({2, -3, 1, 0}, -1) end},
   {op = 'pad_mode', inputs = function() return u{130, 2} end,
    fn = function(a) return a:t():pad({3, 2}, {mode = 'reflect'}) end},
   {op = 'tril', inputs = function() return u{2, 20, 17} end, fn = function(a) return a:tril(2) end},
   {op = 'tril', inputs = function() return u{2, 3, 4} end, fn = function(a) return a:transpose(2, 3):tril(-1) end},
   {op = 'triu', inputs = function() return u{3, 4} end, fn = function(a) return a:triu(1) end},
}
