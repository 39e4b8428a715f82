-- Gradcheck cases for the device family: to_device (core/ops/to_device.c), a copy to the GPU and
-- back (without a GPU the gradcheck spec asserts instead that cuda:0 reports why it is absent), and
-- to_dtype (core/ops/to_dtype.c) between float32 and bfloat16. A bfloat16 round trip is piecewise
-- constant at bf16's spacing, so its finite differences take a step (eps 0.25) far larger than that
-- spacing (under 2^-8 for inputs below 0.5): the slope they see is 1 within 2^-8 / 0.25.
local fnn = require 'fastnn'

return {
   {op = 'to_device', requires = 'cuda', inputs = function() return fnn.randn(3, 4) end,
    fn = function(x) return (x:to('cuda:0') * 2):to('cpu') end},
   {op = 'to_dtype', inputs = function() return fnn.rand(3, 4) - 0.5 end, eps = 0.25,
    fn = function(x) return x:bf16():float() * fnn.tensor{1, -2, 3, 0.5} end,
    ref = function(x)   -- x rounded to bf16 (to nearest, ties to even) times the weights
       return require('spec.bf16_reference').rounded(x) * fnn.tensor{1, -2, 3, 0.5}
    end},
}
