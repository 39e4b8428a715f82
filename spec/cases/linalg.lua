-- Gradcheck cases for core/ops/linalg.c: every promotion rule, broadcast
-- batches (the gradient summed over the batch), transposed views. They drive CUDA parity too
-- (core/ops/linalg.h's rows; cuBLAS there): the broadcast [2,1,2,3] @ [3,3,2] sums a's gradient
-- over a batch one product at a time on the GPU.
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end

return {
   {op = 'matmul', inputs = function() return u(3, 4), u(4, 2) end, fn = function(a, b) return a:matmul(b) end},
   {op = 'matmul', inputs = function() return u(4), u(4) end, fn = function(a, b) return a:matmul(b) end},
   {op = 'matmul', inputs = function() return u(3), u(2, 3, 2) end, fn = function(a, b) return a:matmul(b) end},
   {op = 'matmul', inputs = function() return u(2, 2, 3), u(3) end, fn = function(a, b) return a:matmul(b) end},
   {op = 'matmul', inputs = function() return u(2, 1, 2, 3), u(3, 3, 2) end,
    fn = function(a, b) return a:matmul(b) end},
   {op = 'matmul', inputs = function() return u(2, 3, 4), u(2, 4) end,
    fn = function(a, b) return a:matmul(b:t()) end},
   {op = 'matmul', inputs = function() return u(1, 3, 4), u(2, 4, 2) end,   -- an expanded operand
    fn = function(a, b) return a:expand(2, 3, 4):matmul(b) end},
   {op = 'bmm', inputs = function() return u(2, 3, 4), u(2, 4, 2) end, fn = function(a, b) return a:bmm(b) end},
   {op = 'bmm', inputs = function() return u(2, 4, 3), u(2, 4, 2) end,
    fn = function(a, b) return a:transpose(2, 3):bmm(b) end},
   {op = 'outer', inputs = function() return u(3), u(4) end, fn = function(a, b) return a:outer(b) end},
   {op = 'linear', inputs = function() return u(2, 3, 4), u(5, 4), u(5) end,
    fn = function(x, w, b) return fnn.linear(x, w, b) end},
   {op = 'linear', inputs = function() return u(4, 3), u(2, 4) end,
    fn = function(x, w) return fnn.linear(x:t(), w) end},
   -- one output (W^T a single column), and a bias read at stride 2 (a column of [2,2])
   {op = 'linear', inputs = function() return u(3, 4), u(1, 4), u(1) end,
    fn = function(x, w, b) return fnn.linear(x, w, b) end},
   {op = 'linear', inputs = function() return u(3, 4), u(2, 4), u(2, 2) end,
    fn = function(x, w, b) return fnn.linear(x, w, b:select(2, 1)) end},
}
