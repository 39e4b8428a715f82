-- Cases for core/ops/reduction.c, one or more per registered op, each with a
-- naive reference (`ref`, plain Lua numbers: registry_spec checks the values),
-- also run by gradcheck_spec and by cuda_parity_spec on both sides: along a first, middle and last dim, over everything, with
-- keepdim, on transposed (non-contiguous) and expanded (stride 0) inputs.
-- Random inputs live in [-2, 2]; max/min/norm(inf) use fixed inputs with no
-- near-ties (central differences cannot see a tie, except a tie of exactly
-- two, where they give the even split the rule promises).
-- After the table, the sweeps (the CUDA parity of the family): each reduction and softmax along rows,
-- columns, a middle dim, a transposed input and over everything for n across launch edges, and
-- along 3000 lines of 20; their parity tolerance grows as sqrt(numel) for the sums.
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

local cases = {
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
   -- over everything with keepdim: every dim kept at size 1, as sum's (the keepdim was dropped)
   {op = 'max', inputs = function() return fnn.tensor{{1.5, -0.2}, {1.5, 0.7}} end,
    fn = function(a) return a:max(nil, true) end, ref = function(a) return by_lines(a, nil, true, max) end},
   {op = 'min', inputs = function() return fnn.tensor{{-1.5, -0.2}, {0.3, -1.2}} end,
    fn = function(a) return a:min(nil, true) end, ref = function(a) return by_lines(a, nil, true, min) end},
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
local function add(c) cases[#cases + 1] = c end

-- ---- the sweeps: each reduction along rows, columns, a middle dim, a transposed input and over
-- everything, for n across launch edges, and 3000 lines of 20 (a GPU thread each) ----
local SIZES = {1, 127, 128, 129, 1023, 1024, 1025}
local function range(lo, hi) return function(shape) return fnn.rand(shape) * (hi - lo) + lo end end
-- the 1-based position of the first largest (smallest) value of a line
local function first(beats)
   return function(l)
      local at = 1
      for j = 2, #l do if beats(l[j], l[at]) then at = j end end
      return at
   end
end
local EXACT = {0, 1e-6}
-- gradcheck's inputs for the ops with kinks (|x| at 0, ties of max, min, norm inf): |x| distinct by
-- 1.7 / numel (well over twice gradcheck's step), in [0.3, 2], signs alternating
local function spread(shape)
   local m = 1
   for _, d in ipairs(shape) do m = m * d end
   local v = {}
   for i = 1, m do v[i] = (i % 2 == 0 and -1 or 1) * (0.3 + 1.7 * ((i * 7) % m + 0.5) / m) end
   return fnn.tensor(v, shape)
end
-- {name, op, fn(x, dim) (dim nil: everything), the ref's line function and keepdim for dim (and
-- for everything), the sweeps' input range (kinky: gradcheck's is spread), CUDA parity tolerance}
local RED = {
   {'sum', 'sum', function(a, d) return d and a:sum(d) or a:sum() end, sum, false, range(-2, 2), {1e-6, 1e-5}},
   {'mean', 'mean', function(a, d) return d and a:mean(d, true) or a:mean() end, mean, true, range(-2, 2), {1e-6, 1e-5}},
   {'var', 'var', function(a, d) return d and a:var(d) or a:var() end, var(1), false, range(-2, 2), {1e-6, 1e-5}},
   {'std', 'std', function(a, d) return d and a:std(d, false, {unbiased = false}) or a:std() end,
    {std(0), std(1)}, false, range(-2, 2), {1e-6, 1e-5}},
   {'prod', 'prod', function(a, d) return d and a:prod(d) or a:prod() end, prod, false, range(0.95, 1.05),
    {1e-6, 1e-5}},
   {'norm2', 'norm', function(a, d) return d and a:norm(2, d) or a:norm() end, pnorm(2), false, range(-2, 2), {1e-6, 1e-5}},
   {'norm1', 'norm', function(a, d) return a:norm(1, d or nil) end,
    pnorm(1), false, range(-2, 2), {1e-6, 1e-5}, kinky = true},
   {'norm3', 'norm', function(a, d) return a:norm(3, d or nil) end,
    pnorm(3), false, range(-2, 2), {1e-6, 1e-5}, kinky = true},
   {'norm_inf', 'norm', function(a, d) return a:norm('inf', d or nil) end,
    pnorm(math.huge), false, range(-2, 2), EXACT, kinky = true},
   {'logsumexp', 'logsumexp', function(a, d) return d and a:logsumexp(d) or a:logsumexp() end, lse, false,
    range(-3, 3), {1e-6, 1e-5}},
   {'max', 'max', function(a, d) return d and (a:max(d)) or a:max() end,
    max, false, range(-2, 2), EXACT, kinky = true},
   {'min', 'min', function(a, d) return d and (a:min(d, true)) or a:min() end,
    min, {true, false}, range(-2, 2), EXACT, kinky = true},
   {'argmax', 'argmax', function(a, d) return a:argmax(d) end, first(function(x, y) return x > y end), false,
    range(-2, 2), EXACT},
   {'argmin', 'argmin', function(a, d) return a:argmin(d) end, first(function(x, y) return x < y end), false,
    range(-2, 2), EXACT},
   {'softmax', 'softmax', function(a, d) return a:softmax(d or -1) end, softmax, false, range(-3, 3), {1e-6, 2e-5}},
   {'log_softmax', 'log_softmax', function(a, d) return a:log_softmax(d or -1) end, log_softmax, false,
    range(-3, 3), {1e-6, 2e-5}},
}
for _, r in ipairs(RED) do
   local name, op, f, line, keep, draw, tol = unpack(r)
   local line_d, line_all = line, line
   if type(line) == 'table' then line_d, line_all = line[1], line[2] end
   local keep_d, keep_all = keep, false
   if type(keep) == 'table' then keep_d, keep_all = keep[1], keep[2] end
   local arg, soft = name:find('^arg') ~= nil, name:find('softmax') ~= nil
   -- the CPU adds runs in 16 float lanes before its double sum: a cancelling sum of `numel` values
   -- in [-2, 2] keeps ~1e-7 sqrt(numel) of float rounding (gradients: 10x the forward's tolerance)
   local function parity(numel)
      return function(n)
         local m = numel(n or 2)
         local atol = (tol[1] > 0 and not soft) and tol[1] * math.max(1, math.sqrt(m) / 4) or tol[1]
         return {arg and tol[1] or atol, tol[2], 10}
      end
   end
   local function sweep(shape_of, numel, fn, ref, sizes)
      add{op = op, sizes = sizes or SIZES, parity = parity(numel), fn = fn, ref = ref,
          inputs = function(n) return (n == nil and r.kinky and spread or draw)(shape_of(n or 2)) end}
   end
   local function by(d) return function(x) return by_lines(x, d, keep_d, line_d) end end
   sweep(function(n) return {3, n} end, function(n) return 3 * n end,   -- [3,n] along dim 2 (rows)
         function(a) return f(a, 2) end, by(2))
   sweep(function(n) return {n, 3} end, function(n) return 3 * n end,   -- [n,3] along dim 1 (columns)
         function(a) return f(a, 1) end, by(1))
   sweep(function(n) return {2, n, 5} end, function(n) return 10 * n end,   -- [2,n,5] along dim 2
         function(a) return f(a, 2) end, by(2))
   sweep(function(n) return {n, 3} end, function(n) return 3 * n end,   -- [n,3]^T along dim 2
         function(a) return f(a:t(), 2) end, function(a) return by_lines(T(a), 2, keep_d, line_d) end)
   if not arg and not soft then   -- [n,3]^T over everything
      sweep(function(n) return {n, 3} end, function(n) return 3 * n end,
            function(a) return f(a:t(), nil) end, function(a) return by_lines(T(a), nil, keep_all, line_all) end)
   end
   -- [20,n] along dim 1 (n = 3000 lines: a thread each)
   sweep(function(n) return {20, n} end, function(n) return 20 * n end, function(a) return f(a, 1) end, by(1), {3000})
end

-- accuracy on the device: logits:argmax(2):eq(ids):float():mean() (the ids int64, 1..5)
add{op = 'argmax', gradcheck = false, parity = {0, 1e-6},
    inputs = function()
       local v = {}
       for i = 1, 129 do v[i] = (i * 37 + 11) % 5 + 1 end
       return fnn.rand(129, 5) * 2 - 1, fnn.tensor(v, {129}):long()
    end,
    fn = function(x, t) return x:argmax(2):eq(t):float():mean() end,
    ref = function(x, t)
       local at, ids, hits = by_lines(x, 2, false, first(function(a, b) return a > b end)):to_flat(), t:to_flat(), 0
       for i = 1, #ids do if at[i] == ids[i] then hits = hits + 1 end end
       return fnn.tensor(hits / #ids)
    end}

return cases

