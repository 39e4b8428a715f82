-- Cases for core/ops/reduction.c, one or more per registered op, each with a
-- naive reference (`ref`, plain Lua numbers: registry_spec checks the values),
-- also run by gradcheck_spec and by cuda_parity_spec on both sides: along a first, middle and last dim, over everything, with
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

-- running log-sum-exp of a line by the definition: y[r] = log(sum of exp(line[1..r])) (double, no shift)
local function running_lse(line)
   local out, s = {}, 0
   for r = 1, #line do s = s + math.exp(line[r]); out[r] = math.log(s) end
   return out
end

-- ---- naive references: plain Lua numbers, one line at a time ----
-- the lines of contiguous x along 1-based dim d (nil: all of x as one line): f(line) -> a number
-- (a reduction) or a list (an op that keeps the shape)
local function by_lines(x, d, keep, f)
   local shape, v = x:shape(), x:to_flat()
   if d == nil then
      local r = f(v)
      if type(r) == 'table' then return fnn.tensor(r, shape) end
      if not keep then return fnn.tensor(r) end
      local ones = {}
      for i = 1, #shape do ones[i] = 1 end
      return fnn.tensor({r}, ones)
   end
   if d < 0 then d = #shape + 1 + d end
   local O, R, I = 1, shape[d], 1
   for i = 1, d - 1 do O = O * shape[i] end
   for i = d + 1, #shape do I = I * shape[i] end
   local out, oshape, same = {}, {}, false
   for o = 0, O - 1 do
      for i = 0, I - 1 do
         local line = {}
         for r = 0, R - 1 do line[r + 1] = v[(o * R + r) * I + i + 1] end
         local y = f(line)
         if type(y) == 'table' then
            same = true
            for r = 0, R - 1 do out[(o * R + r) * I + i + 1] = y[r + 1] end
         else
            out[o * I + i + 1] = y
         end
      end
   end
   if same then return fnn.tensor(out, shape) end
   for i = 1, #shape do
      if i ~= d then oshape[#oshape + 1] = shape[i] elseif keep then oshape[#oshape + 1] = 1 end
   end
   if #oshape == 0 then return fnn.tensor(out[1]) end
   return fnn.tensor(out, oshape)
end
local function sum(l) local s = 0 for _, x in ipairs(l) do s = s + x end return s end
local function mean(l) return sum(l) / #l end
local function prod(l) local p = 1 for _, x in ipairs(l) do p = p * x end return p end
local function var(ddof)
   return function(l)
      local m, ss = mean(l), 0
      for _, x in ipairs(l) do ss = ss + (x - m) ^ 2 end
      return ss / (#l - ddof)
   end
end
local function std(ddof) local v = var(ddof) return function(l) return math.sqrt(v(l)) end end
local function pnorm(p)
   return function(l)
      local s = 0
      if p == math.huge then for _, x in ipairs(l) do s = math.max(s, math.abs(x)) end return s end
      for _, x in ipairs(l) do s = s + math.abs(x) ^ p end
      return s ^ (1 / p)
   end
end
local function lse(l)
   local m = math.max(unpack(l))
   local s = 0
   for _, x in ipairs(l) do s = s + math.exp(x - m) end
   return m + math.log(s)
end
local function max(l) return math.max(unpack(l)) end
local function min(l) return math.min(unpack(l)) end
local function softmax(l)
   local m, s, out = math.max(unpack(l)), 0, {}
   for i, x in ipairs(l) do out[i] = math.exp(x - m); s = s + out[i] end
   for i = 1, #out do out[i] = out[i] / s end
   return out
end
local function log_softmax(l)
   local z, out = lse(l), {}
   for i, x in ipairs(l) do out[i] = x - z end
   return out
end
-- the view a case reads through, materialised for the naive loops
local function T(a) return a:t():contiguous() end

return {
   {op = 'sum', inputs = function() return u{2, 3, 4} end, fn = function(a) return a:sum(2) end,
    ref = function(a) return by_lines(a, 2, false, sum) end},
   {op = 'sum', inputs = function() return u{3, 4} end, fn = function(a) return a:t():sum(1, true) end,
    ref = function(a) return by_lines(T(a), 1, true, sum) end},
   {op = 'sum', inputs = function() return u{3} end, fn = function(a) return a:expand(4, 3):sum(2) end,
    ref = function(a) return by_lines(a:expand(4, 3):contiguous(), 2, false, sum) end},
   {op = 'sum', inputs = function() return u{2, 3} end, fn = function(a) return a:sum() end,
    ref = function(a) return by_lines(a, nil, false, sum) end},
   {op = 'mean', inputs = function() return u{2, 3, 4} end, fn = function(a) return a:mean(-1) end,
    ref = function(a) return by_lines(a, -1, false, mean) end},
   {op = 'mean', inputs = function() return u{3, 2} end, fn = function(a) return a:t():mean() end,
    ref = function(a) return by_lines(a, nil, false, mean) end},
   {op = 'prod', inputs = function() return nz{3, 4} end, fn = function(a) return a:prod(2) end,
    ref = function(a) return by_lines(a, 2, false, prod) end},
   {op = 'prod', inputs = function() return nz{2, 3} end, fn = function(a) return a:t():prod(1, true) end,
    ref = function(a) return by_lines(T(a), 1, true, prod) end},
   -- one zero in the first row: its gradient is the product of the others, the rest of the row gets 0
   {op = 'prod', inputs = function() return fnn.tensor{{1.5, 0, -0.7}, {0.8, 1.2, -1.1}} end,
    fn = function(a) return a:prod(2) end, ref = function(a) return by_lines(a, 2, false, prod) end},
   {op = 'var', inputs = function() return u{4, 3} end, fn = function(a) return a:var(1) end,
    ref = function(a) return by_lines(a, 1, false, var(1)) end},
   {op = 'var', inputs = function() return u{2, 5} end, fn = function(a) return a:var(2, true, {unbiased = false}) end,
    ref = function(a) return by_lines(a, 2, true, var(0)) end},
   {op = 'var', inputs = function() return u{3, 3} end, fn = function(a) return a:t():var() end,
    ref = function(a) return by_lines(a, nil, false, var(1)) end},
   {op = 'std', inputs = function() return u{3, 4} end, fn = function(a) return a:std(2) end,
    ref = function(a) return by_lines(a, 2, false, std(1)) end},
   {op = 'std', inputs = function() return u{2, 3} end, fn = function(a) return a:std{unbiased = false} end,
    ref = function(a) return by_lines(a, nil, false, std(0)) end},
   {op = 'norm', inputs = function() return u{2, 3} end, fn = function(a) return a:norm() end,
    ref = function(a) return by_lines(a, nil, false, pnorm(2)) end},
   {op = 'norm', inputs = function() return nz{3, 4} end, fn = function(a) return a:norm(1, 2) end,
    ref = function(a) return by_lines(a, 2, false, pnorm(1)) end},
   {op = 'norm', inputs = function() return nz{3, 2} end, fn = function(a) return a:norm(3, 1, true) end,
    ref = function(a) return by_lines(a, 1, true, pnorm(3)) end},
   {op = 'norm', inputs = function() return fnn.tensor{{0.5, -1.9, 1.2}, {-0.3, 0.8, 1.4}} end,
    fn = function(a) return a:norm('inf', 2) end,
    ref = function(a) return by_lines(a, 2, false, pnorm(math.huge)) end},
   {op = 'logsumexp', inputs = function() return u{3, 4} end, fn = function(a) return a:logsumexp(2) end,
    ref = function(a) return by_lines(a, 2, false, lse) end},
   {op = 'logsumexp', inputs = function() return u{2, 3} end, fn = function(a) return a:t():logsumexp() end,
    ref = function(a) return by_lines(a, nil, false, lse) end},
   {op = 'max', inputs = function() return fnn.tensor{{0.5, -1.9, 1.2}, {-0.3, 1.4, 0.8}} end,
    fn = function(a) return (a:max(2)) end,
    ref = function(a) return by_lines(a, 2, false, max) end},
   {op = 'max', inputs = function() return fnn.tensor{{0.5, -1.9, 1.2}, {-0.3, 1.4, 0.8}} end,
    fn = function(a) return (a:t():max(2, true)) end,
    ref = function(a) return by_lines(T(a), 2, true, max) end},
   -- a tie of two over everything: each gets half
   {op = 'max', inputs = function() return fnn.tensor{{1.5, -0.2}, {1.5, 0.7}} end, fn = function(a) return a:max() end,
    ref = function(a) return by_lines(a, nil, false, max) end},
   {op = 'min', inputs = function() return fnn.tensor{{0.5, -1.9, 1.2}, {-0.3, 1.4, 0.8}} end,
    fn = function(a) return (a:min(1)) end,
    ref = function(a) return by_lines(a, 1, false, min) end},
   {op = 'min', inputs = function() return fnn.tensor{{-1.5, -0.2}, {0.3, -1.5}} end, fn = function(a) return a:min() end,
    ref = function(a) return by_lines(a, nil, false, min) end},
   {op = 'softmax', inputs = function() return u{3, 4} end, fn = function(a) return a:softmax(2) end,
    ref = function(a) return by_lines(a, 2, false, softmax) end},
   {op = 'softmax', inputs = function() return u{2, 3, 2} end, fn = function(a) return a:softmax(2) end,
    ref = function(a) return by_lines(a, 2, false, softmax) end},
   {op = 'softmax', inputs = function() return u{3, 2} end, fn = function(a) return a:t():softmax(-1) end,
    ref = function(a) return by_lines(T(a), -1, false, softmax) end},
   {op = 'log_softmax', inputs = function() return u{3, 4} end, fn = function(a) return a:log_softmax(-1) end,
    ref = function(a) return by_lines(a, -1, false, log_softmax) end},
   {op = 'log_softmax', inputs = function() return u{4, 3} end, fn = function(a) return a:log_softmax(1) end,
    ref = function(a) return by_lines(a, 1, false, log_softmax) end},
   {op = 'log_softmax', inputs = function() return u{2, 3} end, fn = function(a) return a:t():log_softmax(2) end,
    ref = function(a) return by_lines(T(a), 2, false, log_softmax) end},
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
   -- logcumsumexp along the last, first and middle dim, transposed, on values whose exp overflows
   -- float32 (+90: the kernel shifts by the running max), a long line and a scalar
   {op = 'logcumsumexp', inputs = function() return u{3, 4} end, fn = function(a) return a:logcumsumexp(2) end,
    ref = function(a) return by_lines(a, 2, false, running_lse) end},
   {op = 'logcumsumexp', inputs = function() return u{3, 4} end, fn = function(a) return a:logcumsumexp(1) end,
    ref = function(a) return by_lines(a, 1, false, running_lse) end},
   {op = 'logcumsumexp', inputs = function() return u{2, 3, 4} end, fn = function(a) return a:logcumsumexp(2) end,
    ref = function(a) return by_lines(a, 2, false, running_lse) end},
   {op = 'logcumsumexp', inputs = function() return u{4, 3} end, fn = function(a) return a:t():logcumsumexp(-1) end,
    ref = function(a) return by_lines(T(a), 2, false, running_lse) end},
   {op = 'logcumsumexp', inputs = function() return u{2, 5} + 90 end, fn = function(a) return a:logcumsumexp(2) end,
    ref = function(a) return by_lines(a, 2, false, running_lse) end},
   {op = 'logcumsumexp', inputs = function() return u{2, 300} end, fn = function(a) return a:logcumsumexp(2) end,
    ref = function(a) return by_lines(a, 2, false, running_lse) end},
   {op = 'logcumsumexp', inputs = function() return fnn.tensor(1.5) end, fn = function(a) return a:logcumsumexp(1) end,
    ref = function(a) return fnn.tensor(1.5) end},
}
