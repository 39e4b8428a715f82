-- Gradcheck cases for core/ops/reduction.c, one or more per registered
-- differentiable op: along a first, middle and last dim, over everything, with
-- keepdim, on transposed (non-contiguous) and expanded (stride 0) inputs.
-- Random inputs live in [-2, 2]; max/min/norm(inf) use fixed inputs with no
-- near-ties (central differences cannot see a tie, except a tie of exactly
-- two, where they give the even split the rule promises).
local fnn = require 'fastnn'

local function u(shape) return fnn.rand(shape) * 4 - 2 end
-- values with |x| in [0.3, 2] (away from 0: the kinks of |x| and the sign of norm's gradient)
local function nz(shape)
   local v = (fnn.rand(shape) * 1.7 + 0.3):to_flat()
   for i = 1, #v do if i % 2 == 0 then v[i] = -v[i] end end
   return fnn.tensor(v, shape)
end

-- the 1-based position of the first value that beats all before it in each row of a [r, c]
local function first_extreme(a, beats)
   local v, r, c = a:to_flat(), a:shape()[1], a:shape()[2]
   local out = {}
   for i = 1, r do
      local at = 1
      for j = 2, c do if beats(v[(i - 1) * c + j], v[(i - 1) * c + at]) then at = j end end
      out[i] = at
   end
   return fnn.tensor(out)
end

-- running sums along dim d of a [r, c] (d 1 or 2), by a loop
local function running(a, d)
   local v, r, c = a:to_flat(), a:shape()[1], a:shape()[2]
   local out = {}
   for i = 1, r do
      for j = 1, c do
         local k = (i - 1) * c + j
         out[k] = v[k] + (d == 2 and j > 1 and out[k - 1] or d == 1 and i > 1 and out[k - c] or 0)
      end
   end
   return fnn.tensor(out, {r, c})
end

return {
   {op = 'sum', inputs = function() return u{2, 3, 4} end, fn = function(a) return a:sum(2) end},
   {op = 'sum', inputs = function() return u{3, 4} end, fn = function(a) return a:t():sum(1, true) end},
   {op = 'sum', inputs = function() return u{3} end, fn = function(a) return a:expand(4, 3):sum(2) end},
   {op = 'sum', inputs = function() return u{2, 3} end, fn = function(a) return a:sum() end},
   {op = 'mean', inputs = function() return u{2, 3, 4} end, fn = function(a) return a:mean(-1) end},
   {op = 'mean', inputs = function() return u{3, 2} end, fn = function(a) return a:t():mean() end},
   {op = 'prod', inputs = function() return nz{3, 4} end, fn = function(a) return a:prod(2) end},
   {op = 'prod', inputs = function() return nz{2, 3} end, fn = function(a) return a:t():prod(1, true) end},
   -- one zero in the first row: its gradient is the product of the others, the rest of the row gets 0
   {op = 'prod', inputs = function() return fnn.tensor{{1.5, 0, -0.7}, {0.8, 1.2, -1.1}} end,
    fn = function(a) return a:prod(2) end},
   {op = 'var', inputs = function() return u{4, 3} end, fn = function(a) return a:var(1) end},
   {op = 'var', inputs = function() return u{2, 5} end, fn = function(a) return a:var(2, true, {unbiased = false}) end},
   {op = 'var', inputs = function() return u{3, 3} end, fn = function(a) return a:t():var() end},
   {op = 'std', inputs = function() return u{3, 4} end, fn = function(a) return a:std(2) end},
   {op = 'std', inputs = function() return u{2, 3} end, fn = function(a) return a:std{unbiased = false} end},
   {op = 'norm', inputs = function() return u{2, 3} end, fn = function(a) return a:norm() end},
   {op = 'norm', inputs = function() return nz{3, 4} end, fn = function(a) return a:norm(1, 2) end},
   {op = 'norm', inputs = function() return nz{3, 2} end, fn = function(a) return a:norm(3, 1, true) end},
   {op = 'norm', inputs = function() return fnn.tensor{{0.5, -1.9, 1.2}, {-0.3, 0.8, 1.4}} end,
    fn = function(a) return a:norm('inf', 2) end},
   {op = 'logsumexp', inputs = function() return u{3, 4} end, fn = function(a) return a:logsumexp(2) end},
   {op = 'logsumexp', inputs = function() return u{2, 3} end, fn = function(a) return a:t():logsumexp() end},
   {op = 'max', inputs = function() return fnn.tensor{{0.5, -1.9, 1.2}, {-0.3, 1.4, 0.8}} end,
    fn = function(a) return (a:max(2)) end},
   {op = 'max', inputs = function() return fnn.tensor{{0.5, -1.9, 1.2}, {-0.3, 1.4, 0.8}} end,
    fn = function(a) return (a:t():max(2, true)) end},
   -- a tie of two over everything: each gets half
   {op = 'max', inputs = function() return fnn.tensor{{1.5, -0.2}, {1.5, 0.7}} end, fn = function(a) return a:max() end},
   {op = 'min', inputs = function() return fnn.tensor{{0.5, -1.9, 1.2}, {-0.3, 1.4, 0.8}} end,
    fn = function(a) return (a:min(1)) end},
   {op = 'min', inputs = function() return fnn.tensor{{-1.5, -0.2}, {0.3, -1.5}} end, fn = function(a) return a:min() end},
   {op = 'softmax', inputs = function() return u{3, 4} end, fn = function(a) return a:softmax(2) end},
   {op = 'softmax', inputs = function() return u{2, 3, 2} end, fn = function(a) return a:softmax(2) end},
   {op = 'softmax', inputs = function() return u{3, 2} end, fn = function(a) return a:t():softmax(-1) end},
   {op = 'log_softmax', inputs = function() return u{3, 4} end, fn = function(a) return a:log_softmax(-1) end},
   {op = 'log_softmax', inputs = function() return u{4, 3} end, fn = function(a) return a:log_softmax(1) end},
   {op = 'log_softmax', inputs = function() return u{2, 3} end, fn = function(a) return a:t():log_softmax(2) end},
   -- argmax, argmin (no gradient): 1-based positions of the first extreme along dim 2, by a loop
   {op = 'argmax', inputs = function() return fnn.tensor{{0.5, 2, 2}, {-1, -3, -0.5}} end,
    fn = function(a) return a:argmax(2) end, ref = function(a) return first_extreme(a, function(x, y) return x > y end) end},
   {op = 'argmin', inputs = function() return fnn.tensor{{0.5, -2, -2}, {-1, -3, -0.5}} end,
    fn = function(a) return a:argmin(2) end, ref = function(a) return first_extreme(a, function(x, y) return x < y end) end},
   -- cumsum along each dim, on a transposed input, a long line (the sums run in double) and a scalar
   {op = 'cumsum', inputs = function() return u{3, 4} end, fn = function(a) return a:cumsum(2) end,
    ref = function(a) return running(a, 2) end},
   {op = 'cumsum', inputs = function() return u{3, 4} end, fn = function(a) return a:cumsum(1) end,
    ref = function(a) return running(a, 1) end},
   {op = 'cumsum', inputs = function() return u{4, 3} end, fn = function(a) return a:t():cumsum(-1) end,
    ref = function(a) return running(a:t():contiguous(), 2) end},
   {op = 'cumsum', inputs = function() return u{2, 300} end, fn = function(a) return a:cumsum(2) end,
    ref = function(a) return running(a, 2) end, value_tol = 1e-6},
   {op = 'cumsum', inputs = function() return fnn.tensor(1.5) end, fn = function(a) return a:cumsum(1) end,
    ref = function(a) return fnn.tensor(1.5) end},
}
