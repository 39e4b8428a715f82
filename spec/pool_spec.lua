-- max_pool1d/3d, avg_pool1d/3d and adaptive_avg_pool2d (core/ops/pool.c) against naive loops
-- written here: odd sizes, stride > 1, padding, ceil_mode with PyTorch's last-window rule,
-- count_include_pad both ways, unbatched and non-contiguous inputs, ties and nan; gradients
-- against the naive adjoints; output shapes against PyTorch's for a table of configurations; the
-- layers nn.MaxPool1d/2d/3d, nn.AvgPool1d/2d/3d, nn.GlobalMaxPool1d/2d/3d,
-- nn.GlobalAvgPool1d/2d/3d, nn.AdaptiveAvgPool2d; and the errors, at the caller's line.
local fnn = require 'fastnn'
local nn = fnn.nn
local support = require 'support'
local floor, ceil, min, max = math.floor, math.ceil, math.min, math.max
local err_of, each_index = support.err_of, support.each_index

local function approx(expected, t, tol) return support.approx(expected, t, tol or 1e-5) end

local function prod(t, i, j)
   local n = 1
   for a = i or 1, j or #t do n = n * t[a] end
   return n
end

-- every 1-based tuple with lo[a] <= idx[a] <= hi[a], in row-major order (nothing when a range is empty)
local function each_box(lo, hi, f)
   local idx = {}
   for a = 1, #lo do
      if hi[a] < lo[a] then return end
      idx[a] = lo[a]
   end
   while true do
      f(idx)
      local a = #lo
      while a >= 1 do
         idx[a] = idx[a] + 1
         if idx[a] <= hi[a] then break end
         idx[a] = lo[a]
         a = a - 1
      end
      if a < 1 then return end
   end
end

-- ---------------------------------------------------------------------------
-- naive references

-- PyTorch's output size: floor((n + 2p - k) / s) + 1, or ceil in ceil_mode, where the last window
-- must start inside the input or the left padding
local function out_size(n, k, s, p, ceil_mode)
   local o = (ceil_mode and ceil((n + 2 * p - k) / s) or floor((n + 2 * p - k) / s)) + 1
   if ceil_mode and (o - 1) * s >= n + p then o = o - 1 end
   return o
end

-- the geometry of pooling x's last `dims` dims with o = {k = {..}, s = {..}, p = {..}, ceil}
local function geometry(xs, dims, o)
   local lead = #xs - dims
   local ins, outs = {}, {}
   for a = 1, dims do
      ins[a] = xs[lead + a]
      outs[a] = out_size(ins[a], o.k[a], o.s and o.s[a] or o.k[a], o.p and o.p[a] or 0, o.ceil)
   end
   local shape = {}
   for i = 1, lead do shape[i] = xs[i] end
   for a = 1, dims do shape[lead + a] = outs[a] end
   return prod(xs, 1, lead), ins, outs, shape
end

-- visit each window of a pooling: f(plane, out_pos, in_positions, padded_count), positions 1-based
-- flat within their plane; in_positions lists the window's elements inside the input, row-major
local function each_window(xs, dims, o, f)
   local planes, ins, outs, shape = geometry(xs, dims, o)
   for pl = 0, planes - 1 do
      each_index(outs, function(oi)
         local lo, hi, padded = {}, {}, 1
         for a = 1, dims do
            local s, p = o.s and o.s[a] or o.k[a], o.p and o.p[a] or 0
            local first = (oi[a] - 1) * s - p + 1            -- 1-based, may be in the padding
            local last = first + o.k[a] - 1
            padded = padded * (min(last, ins[a] + p) - first + 1)
            lo[a], hi[a] = max(first, 1), min(last, ins[a])
         end
         local list = {}
         each_box(lo, hi, function(ii) list[#list + 1] = support.pos(ins, ii) end)
         f(pl, support.pos(outs, oi), list, padded)
      end)
   end
   return shape, prod(ins), prod(outs)
end

-- max pooling: values, and the flat 1-based input position of each window's first maximum
local function naive_max(x, dims, o)
   local v, y, arg = x:to_flat(), {}, {}
   local pin = x:numel() / prod(x:shape(), 1, #x:shape() - dims)
   local shape, _, pout = each_window(x:shape(), dims, o, function(pl, _, list)
      local m, at, nan = -math.huge, list[1], false
      for _, ip in ipairs(list) do
         local val = v[pl * pin + ip]
         if val ~= val then nan = true end
         if val > m then m, at = val, ip end
      end
      y[#y + 1] = nan and 0 / 0 or m
      arg[#arg + 1] = at
   end)
   return y, shape, arg, pin, pout
end

-- avg pooling (o.include: count the padding in the divisor, PyTorch's default)
local function naive_avg(x, dims, o)
   local v, y = x:to_flat(), {}
   local include = o.include == nil or o.include
   local pin = x:numel() / prod(x:shape(), 1, #x:shape() - dims)
   local shape = each_window(x:shape(), dims, o, function(pl, _, list, padded)
      local s = 0
      for _, ip in ipairs(list) do s = s + v[pl * pin + ip] end
      y[#y + 1] = s / (include and padded or #list)
   end)
   return y, shape
end

-- the adjoint of avg pooling: dx for output gradient g (a flat array)
local function naive_avg_grad(x, dims, o, g)
   local include = o.include == nil or o.include
   local pin = x:numel() / prod(x:shape(), 1, #x:shape() - dims)
   local dx = {}
   for i = 1, x:numel() do dx[i] = 0 end
   local k = 0
   each_window(x:shape(), dims, o, function(pl, _, list, padded)
      k = k + 1
      for _, ip in ipairs(list) do dx[pl * pin + ip] = dx[pl * pin + ip] + g[k] / (include and padded or #list) end
   end)
   return dx
end

-- adaptive average pooling of the last two dims to {oh, ow}: window i is
-- floor((i-1) n / o) + 1 .. ceil(i n / o) (1-based)
local function naive_adaptive(x, size, g)
   local xs, v = x:shape(), x:to_flat()
   local nd = #xs
   local H, W = xs[nd - 1], xs[nd]
   local planes = prod(xs, 1, nd - 2)
   local y, dx = {}, {}
   for i = 1, #v do dx[i] = 0 end
   local k = 0
   for pl = 0, planes - 1 do
      for i = 1, size[1] do
         local h0, h1 = floor((i - 1) * H / size[1]) + 1, ceil(i * H / size[1])
         for j = 1, size[2] do
            local w0, w1 = floor((j - 1) * W / size[2]) + 1, ceil(j * W / size[2])
            local s, n = 0, (h1 - h0 + 1) * (w1 - w0 + 1)
            k = k + 1
            for a = h0, h1 do
               for b = w0, w1 do
                  local at = pl * H * W + (a - 1) * W + b
                  s = s + v[at]
                  if g then dx[at] = dx[at] + g[k] / n end
               end
            end
            y[k] = s / n
         end
      end
   end
   local shape = {}
   for i = 1, nd - 2 do shape[i] = xs[i] end
   shape[nd - 1], shape[nd] = size[1], size[2]
   return y, shape, dx
end

local function opts_of(o)
   return {stride = o.s and (#o.s == 1 and o.s[1] or o.s), padding = o.p and (#o.p == 1 and o.p[1] or o.p),
           ceil_mode = o.ceil, count_include_pad = o.include}
end
local function kernel_of(o) return #o.k == 1 and o.k[1] or o.k end

-- ---------------------------------------------------------------------------

local CASES_1D = {
   {x = {2, 3, 7}, k = {3}, s = {2}, p = {1}},
   {x = {2, 3, 7}, k = {3}, s = {2}, p = {1}, ceil = true},
   {x = {2, 3, 8}, k = {3}, s = {2}, ceil = true},              -- ceil adds a last partial window
   {x = {1, 2, 5}, k = {2}, s = {4}, p = {1}, ceil = true},     -- the last-window rule drops one
   {x = {3, 9}, k = {4}, s = {3}, p = {2}, ceil = true},        -- unbatched
   {x = {2, 2, 6}, k = {1}},
   {x = {1, 1, 5}, k = {5}, p = {2}},
}
local CASES_3D = {
   {x = {1, 2, 5, 6, 7}, k = {3, 2, 3}, s = {2, 2, 1}, p = {1, 1, 1}, ceil = true},
   {x = {1, 2, 5, 6, 7}, k = {3, 2, 3}, s = {2, 2, 1}, p = {1, 1, 1}},
   {x = {2, 5, 4, 3}, k = {2, 2, 2}},                          -- unbatched, odd sizes
   {x = {1, 1, 3, 5, 4}, k = {2, 3, 2}, s = {3, 1, 3}, p = {1, 0, 1}, ceil = true},
   {x = {2, 1, 4, 4, 4}, k = {3, 3, 3}, s = {2, 2, 2}, p = {1, 1, 1}},
}

describe('max_pool1d and max_pool3d', function()
   for _, group in ipairs{{1, CASES_1D}, {3, CASES_3D}} do
      local dims, cases = group[1], group[2]
      local fn = dims == 1 and fnn.max_pool1d or fnn.max_pool3d
      it(('match the naive %d-d loops (stride, padding, ceil_mode, unbatched)'):format(dims), function()
         for i, c in ipairs(cases) do
            fnn.manual_seed(i)
            local x = fnn.randn(c.x)
            local y = fn(x, kernel_of(c), opts_of(c))
            local ref, shape = naive_max(x, dims, c)
            assert.same(shape, y:shape())
            approx(ref, y)
         end
      end)
   end

   it('read non-contiguous inputs', function()
      fnn.manual_seed(3)
      local x = fnn.randn(2, 7, 3):transpose(2, 3)   -- [2, 3, 7]
      local c = {k = {3}, s = {2}, p = {1}, ceil = true}
      approx((naive_max(x:contiguous(), 1, c)), fnn.max_pool1d(x, 3, opts_of(c)))
      local x3 = fnn.randn(1, 2, 5, 4, 6):permute(1, 2, 5, 3, 4)   -- [1, 2, 6, 5, 4]
      local c3 = {k = {2, 3, 2}, s = {2, 1, 2}, p = {1, 1, 0}}
      approx((naive_max(x3:contiguous(), 3, c3)), fnn.max_pool3d(x3, c3.k, opts_of(c3)))
   end)

   it('route the gradient to each window\'s first maximum and sum overlapping windows', function()
      for i, c in ipairs{CASES_1D[2], CASES_1D[5], CASES_3D[1], CASES_3D[4]} do
         local dims = #c.k
         fnn.manual_seed(20 + i)
         local px = fnn.Param(fnn.randn(c.x))
         local y = (dims == 1 and fnn.max_pool1d or fnn.max_pool3d)(px:tensor(), kernel_of(c), opts_of(c))
         local g = fnn.randn(y:shape())
         y:backward(g)
         local _, _, arg, pin, pout = naive_max(px:tensor():detach(), dims, c)
         local dx, gv = {}, g:to_flat()
         for j = 1, px:numel() do dx[j] = 0 end
         for o, at in ipairs(arg) do
            local pl = floor((o - 1) / pout)
            dx[pl * pin + at] = dx[pl * pin + at] + gv[o]
         end
         approx(dx, px:grad())
      end
      -- ties: all ones, the first element of each window wins
      local px = fnn.Param(fnn.ones(1, 1, 6))
      fnn.max_pool1d(px:tensor(), 2):sum():backward()
      approx({1, 0, 1, 0, 1, 0}, px:grad())
      local p3 = fnn.Param(fnn.ones(1, 2, 2, 2))
      fnn.max_pool3d(p3:tensor(), 2):sum():backward()
      approx({1, 0, 0, 0, 0, 0, 0, 0}, p3:grad())
   end)

   it('propagate nan and keep -inf', function()
      local x = fnn.tensor({1, 0 / 0, 3, 4, -math.huge, -math.huge}, {1, 1, 6})
      local y = fnn.max_pool1d(x, 2):to_flat()
      assert.is_true(y[1] ~= y[1])
      assert.equals(4, y[2])
      assert.equals(-math.huge, y[3])
      local v = {}
      for i = 1, 8 do v[i] = i end
      v[8] = 0 / 0
      local y3 = fnn.max_pool3d(fnn.tensor(v, {1, 1, 2, 2, 2}), 2):to_flat()
      assert.is_true(y3[1] ~= y3[1])
   end)
end)

describe('avg_pool1d and avg_pool3d', function()
   for _, group in ipairs{{1, CASES_1D}, {3, CASES_3D}} do
      local dims, cases = group[1], group[2]
      local fn = dims == 1 and fnn.avg_pool1d or fnn.avg_pool3d
      it(('match the naive %d-d loops, counting the padding or not'):format(dims), function()
         for i, c0 in ipairs(cases) do
            for _, include in ipairs{true, false} do
               local c = {x = c0.x, k = c0.k, s = c0.s, p = c0.p, ceil = c0.ceil, include = include}
               fnn.manual_seed(i)
               local x = fnn.randn(c.x)
               local y = fn(x, kernel_of(c), opts_of(c))
               local ref, shape = naive_avg(x, dims, c)
               assert.same(shape, y:shape())
               approx(ref, y)
            end
         end
      end)
   end

   it('count the padding by default, as PyTorch', function()
      local x = fnn.tensor({1, 2, 3, 4, 5}, {1, 1, 5})
      approx((naive_avg(x, 1, {k = {3}, s = {2}, p = {1}, include = true})), fnn.avg_pool1d(x, 3, {stride = 2, padding = 1}))
      -- a window over the left padding and the first two elements: (0 + 1 + 2) / 3
      approx({1}, fnn.avg_pool1d(x, 3, {stride = 2, padding = 1}):narrow(3, 1, 1))
      approx({1.5}, fnn.avg_pool1d(x, 3, {stride = 2, padding = 1, count_include_pad = false}):narrow(3, 1, 1))
   end)

   it('spread the gradient over each window by its divisor', function()
      for i, c0 in ipairs{CASES_1D[2], CASES_1D[5], CASES_3D[1], CASES_3D[5]} do
         for _, include in ipairs{true, false} do
            local c = {x = c0.x, k = c0.k, s = c0.s, p = c0.p, ceil = c0.ceil, include = include}
            local dims = #c.k
            fnn.manual_seed(40 + i)
            local px = fnn.Param(fnn.randn(c.x):transpose(1, 2))   -- non-contiguous
            local x = px:tensor()
            local y = (dims == 1 and fnn.avg_pool1d or fnn.avg_pool3d)(x, kernel_of(c), opts_of(c))
            local g = fnn.randn(y:shape())
            y:backward(g)
            approx(naive_avg_grad(x:contiguous(), dims, c, g:to_flat()), px:grad())
         end
      end
   end)
end)

describe('pooling output shapes', function()
   -- {function, input shape, kernel, options, PyTorch's output shape}
   local TABLE = {
      {'max_pool1d', {2, 3, 7}, 3, {stride = 2, padding = 1}, {2, 3, 4}},
      {'max_pool1d', {2, 3, 7}, 3, {stride = 2, padding = 1, ceil_mode = true}, {2, 3, 4}},
      {'max_pool1d', {2, 3, 8}, 3, {stride = 2, ceil_mode = true}, {2, 3, 4}},
      {'max_pool1d', {2, 3, 8}, 3, {stride = 2}, {2, 3, 3}},
      {'max_pool1d', {1, 2, 5}, 2, {stride = 4, padding = 1, ceil_mode = true}, {1, 2, 2}},
      {'avg_pool1d', {3, 8}, 2, nil, {3, 4}},
      {'avg_pool1d', {1, 1, 9}, 4, {stride = 3, padding = 2, ceil_mode = true}, {1, 1, 4}},
      {'avg_pool1d', {2, 1, 1}, 1, nil, {2, 1, 1}},
      {'max_pool3d', {1, 2, 5, 6, 7}, {3, 2, 3}, {stride = {2, 2, 1}, padding = 1, ceil_mode = true}, {1, 2, 3, 4, 7}},
      {'max_pool3d', {2, 4, 4, 4}, 2, nil, {2, 2, 2, 2}},
      {'avg_pool3d', {1, 1, 3, 5, 4}, {2, 3, 2}, {stride = {3, 1, 3}, padding = {1, 0, 1}, ceil_mode = true},
       {1, 1, 2, 3, 2}},
      {'avg_pool3d', {0, 2, 4, 4, 4}, 2, nil, {0, 2, 2, 2, 2}},   -- an empty batch stays empty
   }
   it('agree with PyTorch for a table of configurations', function()
      for _, row in ipairs(TABLE) do
         local y = fnn[row[1]](fnn.zeros(row[2]), row[3], row[4])
         assert.same(row[5], y:shape())
      end
   end)
end)

describe('adaptive_avg_pool2d', function()
   it('averages PyTorch\'s windows, overlapping or not', function()
      for i, c in ipairs{{{2, 2, 5, 7}, {3, 4}}, {{1, 2, 3, 5}, {5, 7}}, {{2, 4, 6}, {2, 3}}, {{1, 1, 4, 4}, {4, 4}},
                         {{2, 3, 7, 5}, {1, 1}}} do
         fnn.manual_seed(60 + i)
         local x = fnn.randn(c[1])
         local y = fnn.adaptive_avg_pool2d(x, c[2])
         local ref, shape = naive_adaptive(x, c[2])
         assert.same(shape, y:shape())
         approx(ref, y)
      end
      local x = fnn.randn(1, 2, 6, 6)
      assert.same({1, 2, 3, 3}, fnn.adaptive_avg_pool2d(x, 3):shape())
   end)

   it('has the adjoint of the windows as gradient, on a non-contiguous input', function()
      fnn.manual_seed(70)
      local px = fnn.Param(fnn.randn(2, 7, 5):transpose(2, 3))   -- [2, 5, 7], unbatched
      local y = fnn.adaptive_avg_pool2d(px:tensor(), {3, 4})
      local g = fnn.randn(y:shape())
      y:backward(g)
      local ref, _, dx = naive_adaptive(px:tensor():detach():contiguous(), {3, 4}, g:to_flat())
      approx(ref, y)
      approx(dx, px:grad())
   end)
end)

describe('pooling layers', function()
   it('MaxPool1d/2d/3d and AvgPool1d/2d/3d pass their options and default the stride to the kernel', function()
      fnn.manual_seed(80)
      local x1, x2, x3 = fnn.randn(2, 3, 9), fnn.randn(2, 3, 7, 6), fnn.randn(1, 2, 5, 6, 7)
      approx((naive_max(x1, 1, {k = {3}})), nn.MaxPool1d(3)(x1))
      approx((naive_max(x1, 1, {k = {3}, s = {2}, p = {1}, ceil = true})),
             nn.MaxPool1d(3, {stride = 2, padding = 1, ceil_mode = true})(x1))
      approx((naive_max(x2, 2, {k = {3, 2}, s = {2, 2}, p = {1, 1}})), nn.MaxPool2d({3, 2}, {stride = 2, padding = 1})(x2))
      approx((naive_max(x3, 3, {k = {3, 2, 3}, s = {2, 2, 1}, p = {1, 1, 1}, ceil = true})),
             nn.MaxPool3d({3, 2, 3}, {stride = {2, 2, 1}, padding = 1, ceil_mode = true})(x3))
      approx((naive_avg(x1, 1, {k = {4}, s = {3}, p = {2}, ceil = true})),
             nn.AvgPool1d(4, {stride = 3, padding = 2, ceil_mode = true})(x1))
      approx((naive_avg(x2, 2, {k = {3, 3}, s = {2, 2}, p = {1, 1}, include = false})),
             nn.AvgPool2d(3, {stride = 2, padding = 1, count_include_pad = false})(x2))
      approx((naive_avg(x3, 3, {k = {2, 2, 2}})), nn.AvgPool3d(2)(x3))
      approx((naive_avg(x3:select(1, 1), 3, {k = {3, 3, 3}, s = {2, 2, 2}, p = {1, 1, 1}})),
             nn.AvgPool3d(3, {stride = 2, padding = 1})(x3:select(1, 1)))   -- unbatched
   end)

   it('name themselves in the module tree and hold no parameters', function()
      assert.equals('nn.MaxPool1d(3)', tostring(nn.MaxPool1d(3)))
      assert.equals('nn.MaxPool1d(3, stride 2, padding 1, ceil_mode)',
                    tostring(nn.MaxPool1d(3, {stride = 2, padding = 1, ceil_mode = true})))
      assert.equals('nn.MaxPool2d(2x2)', tostring(nn.MaxPool2d(2)))
      assert.equals('nn.MaxPool3d(2x2x2, stride 1x1x1)', tostring(nn.MaxPool3d(2, {stride = 1})))
      assert.equals('nn.AvgPool1d(2, count_include_pad = false)', tostring(nn.AvgPool1d(2, {count_include_pad = false})))
      assert.equals('nn.AvgPool2d(3x2, padding 1x1)', tostring(nn.AvgPool2d({3, 2}, {padding = 1})))
      assert.equals('nn.AvgPool3d(3x3x3, padding 1x0x1)', tostring(nn.AvgPool3d(3, {padding = {1, 0, 1}})))
      assert.equals('nn.AdaptiveAvgPool2d(3x4)', tostring(nn.AdaptiveAvgPool2d{3, 4}))
      assert.equals('nn.GlobalAvgPool2d', tostring(nn.GlobalAvgPool2d()))
      assert.equals('nn.GlobalMaxPool3d(keepdims)', tostring(nn.GlobalMaxPool3d{keepdims = true}))
      local model = nn.Sequential(nn.MaxPool1d(2), nn.GlobalAvgPool1d())
      assert.matches('nn.MaxPool1d%(2%)', tostring(model))
      assert.equals('nn.MaxPool1d(2)', nn.MaxPool1d(2):short_str())
      for _, m in ipairs{nn.MaxPool3d(2), nn.AvgPool1d(2), nn.GlobalMaxPool2d(), nn.AdaptiveAvgPool2d(2)} do
         assert.equals(0, #m:parameters())
      end
   end)

   it('train inside a model: gradients reach the layer below', function()
      fnn.manual_seed(81)
      local lin = nn.Linear(6, 6)
      local x = fnn.randn(4, 2, 6)
      local y = nn.AvgPool1d(2)(nn.MaxPool1d(3, {stride = 1, padding = 1})(lin(x)))
      nn.GlobalMaxPool1d()(y):sum():backward()
      assert.same({6, 6}, lin.weight:grad():shape())
      assert.is_true(lin.weight:grad():abs():sum():item() > 0)
   end)

   it('AdaptiveAvgPool2d matches the naive windows', function()
      fnn.manual_seed(82)
      local x = fnn.randn(2, 3, 7, 5)
      approx((naive_adaptive(x, {3, 2})), nn.AdaptiveAvgPool2d({3, 2})(x))
      approx((naive_adaptive(x, {4, 4})), nn.AdaptiveAvgPool2d(4)(x))
   end)
end)

describe('global pools', function()
   -- the max or mean over the trailing `dims` of each [..] plane, by loops
   local function naive_global(x, dims, kind)
      local xs, v = x:shape(), x:to_flat()
      local planes, size = prod(xs, 1, #xs - dims), prod(xs, #xs - dims + 1)
      local out = {}
      for pl = 0, planes - 1 do
         local acc = kind == 'max' and -math.huge or 0
         for i = 1, size do
            local e = v[pl * size + i]
            if kind == 'max' then acc = max(acc, e) else acc = acc + e end
         end
         out[pl + 1] = kind == 'max' and acc or acc / size
      end
      return out
   end

   it('give [N, C] (Keras), or keep size-1 spatial dims with keepdims, batched or not', function()
      fnn.manual_seed(90)
      for dims, shape in ipairs{{2, 3, 7}, {2, 3, 5, 4}, {2, 3, 3, 4, 5}} do
         local x = fnn.randn(shape)
         for _, kind in ipairs{'max', 'avg'} do
            local cls = nn[('Global%sPool%dd'):format(kind == 'max' and 'Max' or 'Avg', dims)]
            local ref = naive_global(x, dims, kind)
            local y = cls()(x)
            assert.same({2, 3}, y:shape())
            approx(ref, y)
            local keep = cls{keepdims = true}(x)
            local kshape = {2, 3}
            for _ = 1, dims do kshape[#kshape + 1] = 1 end
            assert.same(kshape, keep:shape())
            approx(ref, keep)
            local un = cls()(x:select(1, 2))
            assert.same({3}, un:shape())
            approx({ref[4], ref[5], ref[6]}, un)
         end
      end
   end)

   it('pass the gradient: evenly for the mean, to the maximum for the max', function()
      fnn.manual_seed(91)
      local px = fnn.Param(fnn.randn(2, 2, 3, 2):transpose(3, 4))   -- [2, 2, 2, 3], non-contiguous
      nn.GlobalAvgPool2d()(px:tensor()):sum():backward()
      local sixth = {}
      for i = 1, 24 do sixth[i] = 1 / 6 end
      approx(sixth, px:grad())
      local x = fnn.tensor({1, 5, 2, 0, -1, -3, 7, 4}, {1, 2, 4})
      local pm = fnn.Param(x)
      nn.GlobalMaxPool1d()(pm:tensor()):sum():backward()
      approx({0, 1, 0, 0, 0, 0, 1, 0}, pm:grad())
   end)
end)

describe('pooling errors', function()
   local here = 'pool_spec%.lua:%d+: '
   it('name the op and the shapes, at the caller\'s line', function()
      assert.matches(here .. 'max_pool1d: kernel 5 is larger than the padded input 4 %(input %[1,2,2%], padding 1%)',
                     err_of(function() local _ = fnn.max_pool1d(fnn.ones(1, 2, 2), 5, {padding = 1}) end))
      assert.matches(here .. 'max_pool3d: kernel 3x3x3 is larger than the padded input 2x4x4 %(input %[1,1,2,4,4%], padding 0x0x0%)',
                     err_of(function() local _ = fnn.max_pool3d(fnn.ones(1, 1, 2, 4, 4), 3) end))
      assert.matches(here .. 'avg_pool1d: padding 2 must be between 0 and half the kernel 3',
                     err_of(function() local _ = fnn.avg_pool1d(fnn.ones(1, 2, 8), 3, {padding = 2}) end))
      assert.matches(here .. 'avg_pool3d: padding 1x2x1 must be between 0 and half the kernel 3x3x3',
                     err_of(function() local _ = fnn.avg_pool3d(fnn.ones(1, 1, 6, 6, 6), 3, {padding = {1, 2, 1}}) end))
      assert.matches(here .. 'max_pool1d: input %[2,3,4,5%] must be 3%-D %[N,C,L%] or 2%-D %[C,L%]',
                     err_of(function() local _ = fnn.max_pool1d(fnn.ones(2, 3, 4, 5), 2) end))
      assert.matches(here .. 'avg_pool3d: input %[2,3,4%] must be 5%-D %[N,C,D,H,W%] or 4%-D %[C,D,H,W%]',
                     err_of(function() local _ = fnn.avg_pool3d(fnn.ones(2, 3, 4), 2) end))
      assert.matches(here .. 'max_pool1d: stride 0 must be positive',
                     err_of(function() local _ = fnn.max_pool1d(fnn.ones(1, 2, 8), 2, {stride = 0}) end))
      assert.matches(here .. 'max_pool1d: input %[1,2,0%] has an empty 0 plane',
                     err_of(function() local _ = fnn.max_pool1d(fnn.ones(1, 2, 0), 1) end))
      assert.matches(here .. 'max_pool3d: kernel is a table of 2 values, expected an integer or a table {d, h, w}',
                     err_of(function() local _ = fnn.max_pool3d(fnn.ones(1, 1, 4, 4, 4), {2, 2}) end))
      assert.matches(here .. 'avg_pool1d: kernel size missing',
                     err_of(function() local _ = fnn.avg_pool1d(fnn.ones(1, 2, 8)) end))
      assert.matches(here .. 'max_pool1d: expected a float32 tensor, got an int64',
                     err_of(function() local _ = fnn.max_pool1d(fnn.ones(1, 2, 8):long(), 2) end))
   end)

   it('name the output size of adaptive_avg_pool2d', function()
      assert.matches(here .. 'adaptive_avg_pool2d: output size 0x3 must be positive %(input %[1,2,4,4%]%)',
                     err_of(function() local _ = fnn.adaptive_avg_pool2d(fnn.ones(1, 2, 4, 4), {0, 3}) end))
      assert.matches(here .. 'adaptive_avg_pool2d: input %[4,4%] must be 4%-D %[N,C,H,W%] or 3%-D %[C,H,W%]',
                     err_of(function() local _ = fnn.adaptive_avg_pool2d(fnn.ones(4, 4), 2) end))
      assert.matches(here .. 'adaptive_avg_pool2d: input %[1,2,0,4%] has an empty 0x4 plane',
                     err_of(function() local _ = fnn.adaptive_avg_pool2d(fnn.ones(1, 2, 0, 4), 2) end))
   end)

   it('come from the layers at the caller\'s line, naming them', function()
      assert.matches(here .. 'max_pool3d: input %[2,3,4%] must be 5%-D',
                     err_of(function() local _ = nn.MaxPool3d(2)(fnn.ones(2, 3, 4)) end))
      assert.matches(here .. 'avg_pool1d: kernel 4 is larger than the padded input 3',
                     err_of(function() local _ = nn.AvgPool1d(4):forward(fnn.ones(1, 1, 3)) end))
      assert.matches(here .. 'nn%.MaxPool1d: stride is a table of 2 values, expected an integer',
                     err_of(function() local _ = nn.MaxPool1d(2, {stride = {1, 2}}) end))
      assert.matches(here .. 'nn%.AvgPool3d: options must be a table like {stride = ...}, got a number %(3%)',
                     err_of(function() local _ = nn.AvgPool3d(2, 3) end))
      assert.matches(here .. 'nn%.MaxPool2d: kernel size missing', err_of(function() local _ = nn.MaxPool2d() end))
      assert.matches(here .. 'MaxPool1d: input is a string, expected a tensor',
                     err_of(function() local _ = nn.MaxPool1d(2)('x') end))
      assert.matches(here .. 'GlobalAvgPool2d: input %[2,3,4,5,6%] must be %[N, C, H, W%] or %[C, H, W%]',
                     err_of(function() local _ = nn.GlobalAvgPool2d()(fnn.ones(2, 3, 4, 5, 6)) end))
      assert.matches(here .. 'GlobalMaxPool1d: input %[2,3,0%] has an empty spatial extent',
                     err_of(function() local _ = nn.GlobalMaxPool1d()(fnn.ones(2, 3, 0)) end))
      assert.matches(here .. 'nn%.AdaptiveAvgPool2d: output size 0x2 must be positive',
                     err_of(function() local _ = nn.AdaptiveAvgPool2d{0, 2} end))
      assert.matches(here .. 'adaptive_avg_pool2d: input %[5%] must be 4%-D',
                     err_of(function() local _ = nn.AdaptiveAvgPool2d(2)(fnn.ones(5)) end))
   end)
end)
