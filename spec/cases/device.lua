-- Cases for the device family: to_device (core/ops/to_device.c), a copy to the GPU and
-- back (without a GPU the gradcheck and value specs assert instead that cuda:0 reports why it is
-- absent), and to_dtype (core/ops/to_dtype.c) between float32 and bfloat16 and between float32 and
-- int64. A bfloat16 round trip is piecewise
-- constant at bf16's spacing, so its finite differences take a step (eps 0.25) far larger than that
-- spacing (under 2^-8 for inputs below 0.5): the slope they see is 1 within 2^-8 / 0.25.
-- The int64 casts (no gradient) run on whole numbers, exact both ways (up to 2^24 in a float): their
-- parity on the GPU (cuda/cast.cu) is exact, over n in 1, 129, 1025.
local fnn = require 'fastnn'

-- f over every value of a, by a loop
local function map(a, f)
   local v, out = a:to_flat(), {}
   for k = 1, #v do out[k] = f(v[k]) end
   return fnn.tensor(out, a:shape())
end
-- whole numbers 1..size, repeats included (deterministic), of the given shape, as float32
local function whole(shape, size)
   local n, v = 1, {}
   for _, d in ipairs(shape) do n = n * d end
   for i = 1, n do v[i] = (i * 53 + 5) % size + 1 end
   return fnn.tensor(v, shape)
end
-- the transpose of a [r, c], by a loop
local tr = require('naive_nd').transposed
local function same(a) return map(a, function(x) return x end) end
local N = {1, 129, 1025}

return {
   -- to the GPU and back to the input's device (the CUDA parity's GPU side stays on the GPU)
   {op = 'to_device', requires = 'cuda', inputs = function() return fnn.randn(3, 4) end,
    fn = function(x) return (x:to('cuda:0') * 2):to(x:device()) end,
    ref = function(x) return map(x, function(v) return 2 * v end) end},
   -- float32 -> bf16 -> float32 (on the GPU too: cuda/cast.cu rounds as the CPU does, bit for bit)
   {op = 'to_dtype', inputs = function() return fnn.rand(3, 4) - 0.5 end, eps = 0.25, parity = {0, 0},
    fn = function(x) return x:bf16():float() * fnn.tensor{1, -2, 3, 0.5}:to(x:device()) end,
    ref = function(x)   -- x rounded to bf16 (to nearest, ties to even) times the weights
       return require('spec.bf16_reference').rounded(x) * fnn.tensor{1, -2, 3, 0.5}
    end},
   -- float32 -> int64 -> float32 of whole numbers in [-5000, 5000): the same values
   {op = 'to_dtype', sizes = N, gradcheck = false, parity = {0, 0},
    inputs = function(n) return whole({n, 3}, 10000) - 5000 end,
    fn = function(a) return a:long():float() end, ref = same},
   -- float32 -> int64 through a transposed view
   {op = 'to_dtype', sizes = N, gradcheck = false, parity = {0, 0},
    inputs = function(n) return whole({n, 3}, 10000) - 5000 end,
    fn = function(a) return a:t():long() end, ref = tr},
   -- int64 ids up to 1e6 -> float32
   {op = 'to_dtype', sizes = N, gradcheck = false, parity = {0, 0},
    inputs = function(n) return whole({3, n}, 1e6):long() end,
    fn = function(a) return a:float() end, ref = same},
}
