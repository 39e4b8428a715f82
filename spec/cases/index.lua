-- Gradcheck cases for core/ops/index.c, one or more per registered op. Only the
-- data inputs are differentiated; index and mask tensors are fixed in fn, with
-- repeated ids so the accumulating rules are exercised, and transposed inputs
-- so the kernels see strides. Format: see spec/cases/elementwise.lua.
local fnn = require 'fastnn'

local function u(shape) return fnn.rand(shape) * 4 - 2 end

return {
   {op = 'index_select', inputs = function() return u{4, 3} end,
    fn = function(a) return a:index_select(1, {2, 4, 2, 1}) end},
   {op = 'index_select', inputs = function() return u{4, 3} end,
    fn = function(a) return a:t():index_select(2, fnn.tensor{3, 3, 1}) end},
   {op = 'gather', inputs = function() return u{3, 4} end,
    fn = function(a) return a:gather(2, fnn.tensor{{1, 1, 4}, {2, 3, 2}, {4, 4, 4}}) end},
   {op = 'gather', inputs = function() return u{4, 3} end,
    fn = function(a) return a:t():gather(1, fnn.tensor{{1, 3}, {2, 2}}) end},
   {op = 'scatter_add', inputs = function() return u{3, 4}, u{2, 3} end,
    fn = function(x, src) return x:scatter_add(2, fnn.tensor{{1, 1, 4}, {3, 2, 3}}, src) end},
   -- index smaller than src: the src places it does not name get no gradient
   {op = 'scatter_add', inputs = function() return u{4, 3}, u{3, 3} end,
    fn = function(x, src) return x:t():scatter_add(1, fnn.tensor{{2, 2}, {1, 3}}, src:t()) end},
   {op = 'masked_fill', inputs = function() return u{2, 3} end,
    fn = function(a) return a:masked_fill(fnn.tensor{1, 0, 1}, 7) end},
   {op = 'masked_fill', inputs = function() return u{3, 2} end,
    fn = function(a) return a:t():masked_fill(fnn.tensor{{0, 1, 1}, {1, 0, 0}}, -1) end},
}
