-- conv2d, max_pool2d and avg_pool2d (core/ops/conv.c, core/ops/pool.c) against naive nested loops
-- written here: stride, padding, dilation, groups, bias, 1x1, 'same'/'valid',
-- non-contiguous and unbatched inputs, ceil_mode (with PyTorch's last-window
-- rule), ties and nan in max pooling, count_include_pad; gradients against the
-- naive adjoint loops; the layers nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d; and the
-- errors, at the caller's line.
local fnn = require 'fastnn'
local nn = fnn.nn
local floor, ceil = math.floor, math.ceil

-- float32 sums of up to a few hundred products: 1e-4 relative (absolute below 1)
local function approx(expected, t, tol) return require('support').approx(expected, t, tol or 1e-4) end
local err_of = require('support').err_of

local function zeros_list(n)
   local t = {}
   for i = 1, n do t[i] = 0 end
   return t
end

-- ---------------------------------------------------------------------------
-- naive references over flat row-major Lua arrays

-- PyTorch's output size: floor((in + 2p - d(k-1) - 1) / s) + 1, or ceil in ceil_mode where the
-- last window must start inside the input or the left padding
local function out_size(n, k, s, p, d, ceil_mode)
   local span = n + 2 * p - d * (k - 1) - 1
   local o = (ceil_mode and ceil(span / s) or floor(span / s)) + 1
   if ceil_mode and (o - 1) * s >= n + p then o = o - 1 end
   return o
end

-- o = {stride = {sh, sw}, pad = {ph, pw}, dil = {dh, dw}, groups = g}; x [N,C,H,W], w [O,C/g,kh,kw]
local function conv_geometry(xs, ws, o)
   local N, C, H, W = xs[1], xs[2], xs[3], xs[4]
   local O, Cg, kh, kw = ws[1], ws[2], ws[3], ws[4]
   local sh, sw = o.stride[1], o.stride[2]
   local ph, pw = o.pad[1], o.pad[2]
   local dh, dw = o.dil[1], o.dil[2]
   local Ho, Wo = out_size(H, kh, sh, ph, dh), out_size(W, kw, sw, pw, dw)
   return N, C, H, W, O, Cg, kh, kw, sh, sw, ph, pw, dh, dw, Ho, Wo, O / o.groups
end

-- visit every (output, input, weight) triple of a convolution: f(yi, xi, wi, oc), 1-based flat indices
local function conv_each(xs, ws, o, f)
   local N, C, H, W, O, Cg, kh, kw, sh, sw, ph, pw, dh, dw, Ho, Wo, Og = conv_geometry(xs, ws, o)
   for n = 0, N - 1 do
      for oc = 0, O - 1 do
         local grp = floor(oc / Og)
         for oy = 0, Ho - 1 do
            for ox = 0, Wo - 1 do
               local yi = ((n * O + oc) * Ho + oy) * Wo + ox + 1
               for c = 0, Cg - 1 do
                  local ic = grp * Cg + c
                  for ki = 0, kh - 1 do
                     local iy = oy * sh - ph + ki * dh
                     if iy >= 0 and iy < H then
                        for kj = 0, kw - 1 do
                           local ix = ox * sw - pw + kj * dw
                           if ix >= 0 and ix < W then
                              f(yi, ((n * C + ic) * H + iy) * W + ix + 1, ((oc * Cg + c) * kh + ki) * kw + kj + 1, oc)
                           end
                        end
                     end
                  end
               end
            end
         end
      end
   end
   return {N, O, Ho, Wo}
end

local function naive_conv(x, w, b, o)
   local xv, wv, bv = x:to_flat(), w:to_flat(), b and b:to_flat()
   local y = {}
   local shape = conv_each(x:shape(), w:shape(), o, function(yi, xi, wi)
      y[yi] = (y[yi] or 0) + xv[xi] * wv[wi]
   end)
   local L = shape[3] * shape[4]
   for i = 1, shape[1] * shape[2] * L do
      local oc = floor((i - 1) / L) % shape[2]
      y[i] = (y[i] or 0) + (bv and bv[oc + 1] or 0)
   end
   return y, shape
end

-- gradients of sum(gy * conv(x, w, b)) by the adjoint loops
local function naive_conv_grads(x, w, o, gy)
   local xv, wv, gv = x:to_flat(), w:to_flat(), gy:to_flat()
   local dx, dw = zeros_list(#xv), zeros_list(#wv)
   local db = zeros_list(w:shape()[1])
   local shape = conv_each(x:shape(), w:shape(), o, function(yi, xi, wi)
      dx[xi] = dx[xi] + gv[yi] * wv[wi]
      dw[wi] = dw[wi] + gv[yi] * xv[xi]
   end)
   local L = shape[3] * shape[4]
   for i = 1, #gv do
      local oc = floor((i - 1) / L) % shape[2]
      db[oc + 1] = db[oc + 1] + gv[i]
   end
   return dx, dw, db
end

local function opts_of(o)
   return {stride = o.stride, padding = o.pad, dilation = o.dil, groups = o.groups}
end

-- pooling: windows of x [N,C,H,W]; f(oi, {input indices in row-major window order}, padded count)
local function pool_each(xs, k, s, p, ceil_mode, f)
   local N, C, H, W = xs[1], xs[2], xs[3], xs[4]
   local Ho, Wo = out_size(H, k[1], s[1], p[1], 1, ceil_mode), out_size(W, k[2], s[2], p[2], 1, ceil_mode)
   for plane = 0, N * C - 1 do
      for oy = 0, Ho - 1 do
         for ox = 0, Wo - 1 do
            local idx = {}
            local y0, x0 = oy * s[1] - p[1], ox * s[2] - p[2]
            for iy = y0, y0 + k[1] - 1 do
               for ix = x0, x0 + k[2] - 1 do
                  if iy >= 0 and iy < H and ix >= 0 and ix < W then idx[#idx + 1] = (plane * H + iy) * W + ix + 1 end
               end
            end
            -- the window clipped to the padded input (count_include_pad's divisor)
            local hy = math.min(y0 + k[1], H + p[1]) - y0
            local hx = math.min(x0 + k[2], W + p[2]) - x0
            f((plane * Ho + oy) * Wo + ox + 1, idx, hy * hx)
         end
      end
   end
   return {N, C, Ho, Wo}
end

local function pool_args(o)
   return o.k, o.s or o.k, o.p or {0, 0}
end

-- max pooling: values and, for gradient gy, the gradient (first maximum of each window wins)
local function naive_max_pool(x, o, gy)
   local xv = x:to_flat()
   local gv = gy and gy:to_flat()
   local y, dx = {}, zeros_list(#xv)
   local k, s, p = pool_args(o)
   local shape = pool_each(x:shape(), k, s, p, o.ceil, function(oi, idx)
      local m, at = -math.huge, idx[1]
      for _, i in ipairs(idx) do
         if xv[i] > m or xv[i] ~= xv[i] then m, at = xv[i], i end
      end
      y[oi] = m
      if gv then dx[at] = dx[at] + gv[oi] end
   end)
   return y, shape, dx
end

local function naive_avg_pool(x, o, gy)
   local xv = x:to_flat()
   local gv = gy and gy:to_flat()
   local y, dx = {}, zeros_list(#xv)
   local k, s, p = pool_args(o)
   local include = o.include ~= false
   local shape = pool_each(x:shape(), k, s, p, o.ceil, function(oi, idx, padded)
      local sum = 0
      for _, i in ipairs(idx) do sum = sum + xv[i] end
      local div = include and padded or #idx
      y[oi] = sum / div
      if gv then for _, i in ipairs(idx) do dx[i] = dx[i] + gv[oi] / div end end
   end)
   return y, shape, dx
end

-- ---------------------------------------------------------------------------

describe('conv2d', function()
   local configs = {
      {name = 'plain 3x3', x = {2, 3, 6, 5}, w = {4, 3, 3, 3}, stride = {1, 1}, pad = {0, 0}, dil = {1, 1}, groups = 1, bias = true},
      {name = 'stride 2, padding 1', x = {2, 3, 7, 6}, w = {4, 3, 3, 3}, stride = {2, 2}, pad = {1, 1}, dil = {1, 1}, groups = 1, bias = true},
      {name = 'dilation 2, padding 2', x = {1, 2, 7, 8}, w = {3, 2, 3, 3}, stride = {1, 1}, pad = {2, 2}, dil = {2, 2}, groups = 1, bias = false},
      {name = 'groups 2', x = {2, 4, 5, 5}, w = {6, 2, 3, 3}, stride = {1, 1}, pad = {1, 1}, dil = {1, 1}, groups = 2, bias = true},
      {name = 'depthwise (groups = channels)', x = {2, 3, 5, 4}, w = {3, 1, 3, 3}, stride = {1, 1}, pad = {1, 1}, dil = {1, 1}, groups = 3, bias = true},
      {name = '1x1', x = {3, 4, 3, 5}, w = {2, 4, 1, 1}, stride = {1, 1}, pad = {0, 0}, dil = {1, 1}, groups = 1, bias = true},
      {name = '1x1 stride 2, no bias', x = {2, 3, 5, 5}, w = {2, 3, 1, 1}, stride = {2, 2}, pad = {0, 0}, dil = {1, 1}, groups = 1, bias = false},
      {name = 'rectangular, mixed strides/padding/dilation', x = {2, 2, 9, 7}, w = {3, 2, 2, 3}, stride = {2, 1}, pad = {1, 2}, dil = {2, 1}, groups = 1, bias = true},
      {name = 'padding larger than the kernel reach', x = {1, 1, 2, 3}, w = {2, 1, 3, 3}, stride = {1, 1}, pad = {3, 2}, dil = {1, 1}, groups = 1, bias = true},
      {name = 'a batch split over threads', x = {37, 4, 8, 8}, w = {8, 4, 3, 3}, stride = {1, 1}, pad = {1, 1}, dil = {1, 1}, groups = 1, bias = true},
   }
   for _, cfg in ipairs(configs) do
      it('matches naive loops: ' .. cfg.name, function()
         fnn.manual_seed(11)
         local x, w = fnn.randn(cfg.x), fnn.randn(cfg.w)
         local b = cfg.bias and fnn.randn(cfg.w[1]) or nil
         local y = fnn.conv2d(x, w, b, opts_of(cfg))
         local expected, shape = naive_conv(x, w, b, cfg)
         assert.same(shape, y:shape())
         approx(expected, y)
      end)
   end

   it('computes the gradients of x, w and b of the naive adjoint loops', function()
      for _, cfg in ipairs{configs[2], configs[3], configs[4], configs[6], configs[8], configs[10]} do
         fnn.manual_seed(12)
         local px, pw = fnn.Param(fnn.randn(cfg.x)), fnn.Param(fnn.randn(cfg.w))
         local pb = fnn.Param(fnn.randn(cfg.w[1]))
         local y = fnn.conv2d(px:tensor(), pw:tensor(), pb:tensor(), opts_of(cfg))
         local gy = fnn.randn(y:shape())
         y:backward(gy)
         local dx, dw, db = naive_conv_grads(px:tensor(), pw:tensor(), cfg, gy)
         approx(dx, px:grad())
         approx(dw, pw:grad())
         approx(db, pb:grad())
      end
   end)

   it('gives hand-computed values and gradients on a 1x1x3x3 input', function()
      -- x = 1..9, w = [[1, 0], [0, -1]], b = 0.5: y[i][j] = x[i][j] - x[i+1][j+1] + 0.5 = -3.5 everywhere
      local px = fnn.Param(fnn.tensor({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}))
      local pw = fnn.Param(fnn.tensor({1, 0, 0, -1}, {1, 1, 2, 2}))
      local pb = fnn.Param(fnn.tensor{0.5})
      local y = fnn.conv2d(px:tensor(), pw:tensor(), pb:tensor())
      approx({-3.5, -3.5, -3.5, -3.5}, y)
      y:backward(fnn.tensor({1, 2, 3, 4}, {1, 1, 2, 2}))
      -- dx = g placed at the top-left tap minus g placed at the bottom-right tap
      approx({1, 2, 0, 3, 3, -2, 0, -3, -4}, px:grad())
      -- dw[a][b] = sum g[i][j] x[i+a][j+b]: (1*1+2*2+3*4+4*5, ..., ...)
      approx({37, 47, 67, 77}, pw:grad())
      approx({10}, pb:grad())
   end)

   it('skips the input gradient when the input is plain data, and the weight\'s when it is frozen', function()
      local cfg = configs[2]
      fnn.manual_seed(13)
      local x, pw = fnn.randn(cfg.x), fnn.Param(fnn.randn(cfg.w))
      local y = fnn.conv2d(x, pw:tensor(), nil, opts_of(cfg))
      local gy = fnn.randn(y:shape())
      y:backward(gy)
      local dx, dw = naive_conv_grads(x, pw:tensor(), cfg, gy)
      approx(dw, pw:grad())
      local px = fnn.Param(x)
      pw:freeze()
      local y2 = fnn.conv2d(px:tensor(), pw:tensor(), nil, opts_of(cfg))
      y2:backward(gy)
      approx(dx, px:grad())
   end)

   it('takes non-contiguous inputs and weights', function()
      local cfg = {stride = {1, 2}, pad = {1, 0}, dil = {1, 1}, groups = 1}
      fnn.manual_seed(14)
      local x = fnn.randn(2, 3, 5, 6):transpose(3, 4)     -- [2,3,6,5], strided
      local w = fnn.randn(4, 3, 2, 3):narrow(1, 2, 2)      -- [2,3,2,3] at an offset
      local b = fnn.randn(4):narrow(1, 3, 2)
      assert.is_false(x:is_contiguous())
      local y = fnn.conv2d(x, w, b, opts_of(cfg))
      local expected, shape = naive_conv(x, w, b, cfg)
      assert.same(shape, y:shape())
      approx(expected, y)
      local px = fnn.Param(fnn.randn(2, 3, 5, 6))
      local y2 = fnn.conv2d(px:tensor():transpose(3, 4), w, nil, opts_of(cfg))
      local gy = fnn.randn(y2:shape())
      y2:backward(gy)
      local dx = naive_conv_grads(px:tensor():transpose(3, 4), w, cfg, gy)
      approx(dx, px:grad():transpose(3, 4))
   end)

   it('takes an unbatched [C,H,W] input', function()
      local cfg = {stride = {1, 1}, pad = {1, 1}, dil = {1, 1}, groups = 1}
      fnn.manual_seed(15)
      local x, w, b = fnn.randn(3, 4, 5), fnn.randn(2, 3, 3, 3), fnn.randn(2)
      local y = fnn.conv2d(x, w, b, {padding = 1})
      assert.same({2, 4, 5}, y:shape())
      approx((naive_conv(x:reshape(1, 3, 4, 5), w, b, cfg)), y)
      assert.same({2, 4, 5}, x:conv2d(w, b, {padding = 1}):shape())   -- also a tensor method
   end)

   it("padding 'same' keeps H and W (the odd extra pad at the bottom/right), 'valid' is none", function()
      fnn.manual_seed(16)
      local x = fnn.randn(1, 2, 5, 6)
      for _, k in ipairs{{3, 3}, {4, 2}, {2, 5}} do
         for _, d in ipairs{1, 2} do
            local w = fnn.randn(3, 2, k[1], k[2])
            local y = fnn.conv2d(x, w, nil, {padding = 'same', dilation = d})
            assert.same({1, 3, 5, 6}, y:shape())
            -- PyTorch: total pad d(k-1) per dim, floor of half before, the rest after
            local th, tw = d * (k[1] - 1), d * (k[2] - 1)
            local xp = x:pad{floor(tw / 2), tw - floor(tw / 2), floor(th / 2), th - floor(th / 2)}
            approx((naive_conv(xp, w, nil, {stride = {1, 1}, pad = {0, 0}, dil = {d, d}, groups = 1})), y)
         end
      end
      local w = fnn.randn(3, 2, 3, 3)
      assert.same({1, 3, 3, 4}, fnn.conv2d(x, w, nil, {padding = 'valid'}):shape())
   end)

   it('gives empty outputs for an empty batch or no output channels, and zero gradients', function()
      local pw, pb = fnn.Param(fnn.randn(4, 3, 3, 3)), fnn.Param(fnn.randn(4))
      local y = fnn.conv2d(fnn.zeros(0, 3, 5, 5), pw:tensor(), pb:tensor(), {padding = 1})
      assert.same({0, 4, 5, 5}, y:shape())
      y:backward(fnn.zeros(0, 4, 5, 5))
      approx(zeros_list(4 * 3 * 9), pw:grad())
      approx({0, 0, 0, 0}, pb:grad())
      -- no output channels: an empty output and a zero input gradient
      local px, pw0 = fnn.Param(fnn.randn(2, 3, 4, 4)), fnn.Param(fnn.zeros(0, 3, 3, 3))
      local y0 = fnn.conv2d(px:tensor(), pw0:tensor(), nil, {padding = 1})
      assert.same({2, 0, 4, 4}, y0:shape())
      y0:backward(fnn.zeros(2, 0, 4, 4))
      approx(zeros_list(2 * 3 * 16), px:grad())
   end)

   it('refuses mismatched channels, naming both shapes, at the caller\'s line', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = fnn.conv2d(fnn.ones(8, 3, 28, 28), fnn.ones(16, 1, 3, 3)) end)
      assert.equals(('spec/conv_spec.lua:%d: conv2d: input [8,3,28,28] has 3 channels, weight [16,1,3,3] expects 1 '
                     .. '(groups 1)'):format(line), err)
      assert.matches('conv2d: input %[2,4,5,5%] has 4 channels, weight %[6,1,3,3%] expects 2 %(groups 2%)',
                     err_of(function() local _ = fnn.conv2d(fnn.ones(2, 4, 5, 5), fnn.ones(6, 1, 3, 3), nil, {groups = 2}) end))
      assert.matches('conv2d: input %[2,3,5,5%] has 3 channels, not divisible by groups 2',
                     err_of(function() local _ = fnn.conv2d(fnn.ones(2, 3, 5, 5), fnn.ones(4, 1, 3, 3), nil, {groups = 2}) end))
      assert.matches('conv2d: weight %[3,2,3,3%] has 3 output channels, not divisible by groups 2',
                     err_of(function() local _ = fnn.conv2d(fnn.ones(2, 4, 5, 5), fnn.ones(3, 2, 3, 3), nil, {groups = 2}) end))
   end)

   it('refuses a kernel larger than the padded input, bad strides, padding and dilation', function()
      local x, w = fnn.ones(1, 1, 2, 2), fnn.ones(1, 1, 3, 3)
      assert.matches('conv2d: kernel 3x3 %(dilation 1x1%) is larger than the padded input 2x2 %(input %[1,1,2,2%], padding 0x0%)',
                     err_of(function() local _ = fnn.conv2d(x, w) end))
      assert.matches('conv2d: kernel 3x3 %(dilation 2x2%) is larger than the padded input 4x4',
                     err_of(function() local _ = fnn.conv2d(x, w, nil, {padding = 1, dilation = 2}) end))
      assert.matches('conv2d: stride 0x1 must be positive',
                     err_of(function() local _ = fnn.conv2d(x, w, nil, {stride = {0, 1}, padding = 1}) end))
      assert.matches('conv2d: padding %-1x%-1 must not be negative',
                     err_of(function() local _ = fnn.conv2d(x, w, nil, {padding = -1}) end))
      assert.matches('conv2d: dilation 0x0 must be positive',
                     err_of(function() local _ = fnn.conv2d(x, w, nil, {dilation = 0, padding = 1}) end))
      assert.matches("conv2d: padding is 'full', expected an integer, a table {h, w} %(an entry may be {before, after}%), "
                     .. "'valid', 'same'$",
                     err_of(function() local _ = fnn.conv2d(x, w, nil, {padding = 'full'}) end))
      assert.matches("conv2d: padding 'causal' is only for 1%-d convolutions",
                     err_of(function() local _ = fnn.conv2d(x, w, nil, {padding = 'causal'}) end))
   end)

   it('refuses wrong ranks, a mismatched bias and bad arguments', function()
      assert.matches('conv2d: input %[3,4%] must be 4%-D %[N,C,H,W%] or 3%-D %[C,H,W%]',
                     err_of(function() local _ = fnn.conv2d(fnn.ones(3, 4), fnn.ones(1, 1, 1, 1)) end))
      assert.matches('conv2d: weight %[2,3,3%] must be 4%-D',
                     err_of(function() local _ = fnn.conv2d(fnn.ones(1, 3, 5, 5), fnn.ones(2, 3, 3)) end))
      assert.matches('conv2d: bias %[3%] does not match weight %[2,3,3,3%] %(expected %[2%]%)',
                     err_of(function() local _ = fnn.conv2d(fnn.ones(1, 3, 5, 5), fnn.ones(2, 3, 3, 3), fnn.ones(3)) end))
      assert.matches('conv2d: weight is a number, expected a tensor',
                     err_of(function() local _ = fnn.conv2d(fnn.ones(1, 3, 5, 5), 3) end))
      assert.matches('conv2d: stride is a table of 3 values, expected an integer or a table {h, w}',
                     err_of(function() local _ = fnn.conv2d(fnn.ones(1, 3, 5, 5), fnn.ones(2, 3, 3, 3), nil, {stride = {1, 1, 1}}) end))
      assert.matches('conv2d: options must be a table',
                     err_of(function() local _ = fnn.conv2d(fnn.ones(1, 3, 5, 5), fnn.ones(2, 3, 3, 3), nil, 2) end))
   end)
end)

describe('max_pool2d', function()
   local configs = {
      {name = '2x2 (the fast path)', x = {2, 3, 8, 6}, k = {2, 2}},
      {name = '2x2 on odd sizes (last row and column unused)', x = {2, 2, 7, 9}, k = {2, 2}},
      {name = '3x3 stride 2 padding 1', x = {2, 2, 7, 8}, k = {3, 3}, s = {2, 2}, p = {1, 1}},
      {name = '3x3 stride 1 (overlapping windows)', x = {1, 2, 5, 6}, k = {3, 3}, s = {1, 1}},
      {name = 'rectangular with ceil_mode', x = {2, 2, 7, 6}, k = {3, 2}, s = {2, 3}, p = {1, 1}, ceil = true},
      {name = '2x2 with ceil_mode on odd sizes', x = {1, 2, 5, 7}, k = {2, 2}, ceil = true},
   }
   for _, cfg in ipairs(configs) do
      it('matches naive loops, values and gradient: ' .. cfg.name, function()
         fnn.manual_seed(21)
         local px = fnn.Param(fnn.randn(cfg.x))
         local y = fnn.max_pool2d(px:tensor(), cfg.k, {stride = cfg.s, padding = cfg.p, ceil_mode = cfg.ceil})
         local gy = fnn.randn(y:shape())
         local expected, shape, dx = naive_max_pool(px:tensor(), cfg, gy)
         assert.same(shape, y:shape())
         approx(expected, y)
         y:backward(gy)
         approx(dx, px:grad())
         local plain = fnn.no_grad(function()   -- no graph: the maxima alone
            return fnn.max_pool2d(px:tensor(), cfg.k, {stride = cfg.s, padding = cfg.p, ceil_mode = cfg.ceil})
         end)
         approx(expected, plain)
      end)
   end

   it("ceil_mode drops a last window that would start in the right padding (PyTorch's rule)", function()
      local x = fnn.randn(1, 1, 5, 5)
      -- ceil((5 + 2 - 2) / 2) + 1 = 4, but window 4 would start at 6 - 1 = 5, past the input: 3
      assert.same({1, 1, 3, 3}, fnn.max_pool2d(x, 2, {padding = 1, ceil_mode = true}):shape())
      -- ceil((6 + 2 - 3) / 2) + 1 = 4 (floor gives 3); window 4 starts at 5, inside the input
      assert.same({1, 1, 4, 4}, fnn.max_pool2d(fnn.randn(1, 1, 6, 6), 3, {stride = 2, padding = 1, ceil_mode = true}):shape())
      assert.same({1, 1, 3, 3}, fnn.max_pool2d(fnn.randn(1, 1, 6, 6), 3, {stride = 2, padding = 1}):shape())
      assert.same({1, 1, 3, 3}, fnn.max_pool2d(x, 2, {ceil_mode = true}):shape())
      assert.same({1, 1, 2, 2}, fnn.max_pool2d(x, 2):shape())
   end)

   it('sends the gradient of a tie to the first maximum in the window', function()
      local px = fnn.Param(fnn.ones(1, 1, 4, 4))
      local y = fnn.max_pool2d(px:tensor(), 2)
      y:backward(fnn.tensor({1, 2, 3, 4}, {1, 1, 2, 2}))
      approx({1, 0, 2, 0,
              0, 0, 0, 0,
              3, 0, 4, 0,
              0, 0, 0, 0}, px:grad())
      -- a tie between two later positions: the first in row-major order wins
      -- overlapping windows: (1,2) wins both top windows; (2,2) wins a three-way tie and a two-way one
      local p2 = fnn.Param(fnn.tensor({0, 5, 5, 1, 2, 0, 2, 2, 0}, {1, 1, 3, 3}))
      local y2 = fnn.max_pool2d(p2:tensor(), 2, {stride = 1})
      approx({5, 5, 2, 2}, y2)
      y2:backward(fnn.ones(1, 1, 2, 2))
      approx({0, 2, 0, 0, 2, 0, 0, 0, 0}, p2:grad())
   end)

   -- the 2x2 path runs rows in vector blocks of 8 or 4 outputs, the last block moved back over the
   -- one before (core/ops/pool.c): rows of 4 to 16 outputs, with and without a last unused column,
   -- values of a few levels (ties in every lane and candidate position), nan and infinities, float32
   -- and bfloat16, with and without a graph: maxima and the gradient's routing against the naive loop
   it('runs rows in vector blocks with the scalar loop\'s ties, nan and routing', function()
      local function exact(expected, t, what)   -- equal values (infinities too), nan for nan
         local got = t:to_flat()
         assert.equals(#expected, #got, what)
         for i = 1, #expected do
            local e, g = expected[i], got[i]
            assert.is_true(e ~= e and g ~= g or e == g, ('%s: element %d: expected %s got %s'):format(what, i, e, g))
         end
      end
      local rng = 7
      local function draw(n)   -- a fixed stream: levels -1, 0, 1, and now and then nan or an infinity
         local v = {}
         for i = 1, n do
            rng = (rng * 1103515245 + 12345) % 2147483648
            local r = rng % 40
            v[i] = r == 0 and 0 / 0 or r == 1 and math.huge or r == 2 and -math.huge or (r % 3) - 1
         end
         return v
      end
      for _, W in ipairs{7, 8, 9, 11, 14, 16, 17, 19, 28, 33} do
         for _, H in ipairs{2, 5} do
            local shape = {2, 3, H, W}
            local xv = draw(2 * 3 * H * W)
            for _, dt in ipairs{'float', 'bf16'} do
               local px = fnn.Param(fnn.tensor(xv, shape))
               local x = dt == 'bf16' and px:tensor():bf16() or px:tensor()
               local y = fnn.max_pool2d(x, 2)
               local gy = fnn.arange(1, y:numel() + 1):float():reshape(y:shape())   -- distinct: the routing shows
               local expected, oshape, dx = naive_max_pool(px:tensor(), {k = {2, 2}}, gy)
               local what = ('[2,3,%d,%d] %s'):format(H, W, dt)
               assert.same(oshape, y:shape(), what)
               exact(expected, y:float(), what)
               y:float():backward(gy)
               exact(dx, px:grad(), what .. ' gradient')
               exact(expected, fnn.no_grad(function() return fnn.max_pool2d(x, 2) end):float(), what .. ' no graph')
            end
         end
      end
   end)

   it('propagates a nan in its window, as PyTorch', function()
      local x = fnn.tensor({0 / 0, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 4})
      local y = fnn.max_pool2d(x, 2)
      approx({0 / 0, 8}, y)
      approx({0 / 0, 8}, fnn.max_pool2d(x, {2, 3}, {stride = 1}):narrow(4, 1, 2))   -- the general path too
   end)

   it('takes non-contiguous and unbatched inputs', function()
      fnn.manual_seed(22)
      local x = fnn.randn(2, 3, 6, 8):transpose(3, 4)
      local cfg = {k = {3, 2}, s = {2, 2}, p = {1, 0}}
      local y = fnn.max_pool2d(x, cfg.k, {stride = cfg.s, padding = cfg.p})
      approx((naive_max_pool(x, cfg)), y)
      local x3 = fnn.randn(3, 6, 4)
      local y3 = x3:max_pool2d(2)
      assert.same({3, 3, 2}, y3:shape())
      approx((naive_max_pool(x3:reshape(1, 3, 6, 4), {k = {2, 2}})), y3)
   end)

   it('refuses bad kernels, strides, padding and shapes, at the caller\'s line', function()
      local x = fnn.ones(1, 1, 4, 4)
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = fnn.max_pool2d(x, 3, {padding = 2}) end)
      assert.equals(('spec/conv_spec.lua:%d: max_pool2d: padding 2x2 must be between 0 and half the kernel 3x3'):format(line), err)
      assert.matches('max_pool2d: kernel 5x5 is larger than the padded input 4x4 %(input %[1,1,4,4%], padding 0x0%)',
                     err_of(function() local _ = fnn.max_pool2d(x, 5) end))
      assert.matches('max_pool2d: stride 0x2 must be positive',
                     err_of(function() local _ = fnn.max_pool2d(x, 2, {stride = {0, 2}}) end))
      assert.matches('max_pool2d: kernel 0x2 must be positive', err_of(function() local _ = fnn.max_pool2d(x, {0, 2}) end))
      assert.matches('max_pool2d: input %[4,4%] must be 4%-D %[N,C,H,W%] or 3%-D %[C,H,W%]',
                     err_of(function() local _ = fnn.max_pool2d(fnn.ones(4, 4), 2) end))
      assert.matches('max_pool2d: kernel size missing', err_of(function() local _ = fnn.max_pool2d(x) end))
      assert.matches('max_pool2d: input is a string, expected a tensor', err_of(function() local _ = fnn.max_pool2d('x', 2) end))
   end)
end)

describe('avg_pool2d', function()
   local configs = {
      {name = '2x2 (the fast path)', x = {2, 3, 6, 8}, k = {2, 2}},
      {name = '2x2 on odd sizes', x = {1, 2, 5, 7}, k = {2, 2}},
      {name = '3x3 stride 2 padding 1, padding counted', x = {2, 2, 7, 8}, k = {3, 3}, s = {2, 2}, p = {1, 1}},
      {name = '3x3 stride 2 padding 1, padding not counted', x = {2, 2, 7, 8}, k = {3, 3}, s = {2, 2}, p = {1, 1}, include = false},
      {name = 'ceil_mode, padding counted (a window clipped by the input edge)', x = {1, 2, 6, 5}, k = {3, 2}, s = {2, 1}, p = {1, 1}, ceil = true},
      {name = 'ceil_mode, padding not counted', x = {1, 2, 7, 7}, k = {3, 3}, s = {2, 2}, p = {1, 1}, ceil = true, include = false},
      {name = '2x2 ceil_mode (a window hanging past the input)', x = {1, 1, 5, 5}, k = {2, 2}, ceil = true},
   }
   for _, cfg in ipairs(configs) do
      it('matches naive loops, values and gradient: ' .. cfg.name, function()
         fnn.manual_seed(31)
         local px = fnn.Param(fnn.randn(cfg.x))
         local y = fnn.avg_pool2d(px:tensor(), cfg.k, {stride = cfg.s, padding = cfg.p, ceil_mode = cfg.ceil,
                                                       count_include_pad = cfg.include})
         local gy = fnn.randn(y:shape())
         local expected, shape, dx = naive_avg_pool(px:tensor(), cfg, gy)
         assert.same(shape, y:shape())
         approx(expected, y)
         y:backward(gy)
         approx(dx, px:grad())
      end)
   end

   it('divides by the window clipped to the padded input: hand-computed corners', function()
      local x = fnn.ones(1, 1, 3, 3)
      -- 3x3 windows, stride 2, padding 1: each window holds 4 ones of its 9 positions
      approx({4 / 9, 4 / 9, 4 / 9, 4 / 9}, fnn.avg_pool2d(x, 3, {stride = 2, padding = 1}))
      approx({1, 1, 1, 1}, fnn.avg_pool2d(x, 3, {stride = 2, padding = 1, count_include_pad = false}))
      -- 2x2 ceil_mode on 3x3: the last windows hang past the input into nothing (not padding): divisor 2 or 1
      approx({1, 1, 1, 1}, fnn.avg_pool2d(x, 2, {ceil_mode = true}))
   end)

   it('refuses bad arguments like max_pool2d', function()
      assert.matches('avg_pool2d: padding 2x2 must be between 0 and half the kernel 2x2',
                     err_of(function() local _ = fnn.avg_pool2d(fnn.ones(1, 1, 4, 4), 2, {padding = 2}) end))
      assert.matches('avg_pool2d: kernel 3x3 is larger than the padded input 2x2',
                     err_of(function() local _ = fnn.avg_pool2d(fnn.ones(1, 1, 2, 2), 3) end))
   end)
end)

describe('nn.Conv2d', function()
   it('has weight [out, in/groups, kh, kw] and bias [out] in U(-1/sqrt(fan_in), 1/sqrt(fan_in))', function()
      fnn.manual_seed(41)
      local conv = nn.Conv2d(8, 16, {3, 2}, {groups = 2})
      assert.same({16, 4, 3, 2}, conv.weight:shape())
      assert.same({16}, conv.bias:shape())
      local bound = 1 / math.sqrt(4 * 3 * 2)
      for _, p in ipairs{conv.weight, conv.bias} do
         local lo, hi = math.huge, -math.huge
         for _, v in ipairs(p:tensor():to_flat()) do lo, hi = math.min(lo, v), math.max(hi, v) end
         assert.is_true(lo >= -bound and hi <= bound)
      end
      local names = {}
      for i, pair in ipairs(conv:named_parameters()) do names[i] = pair[1] end
      assert.same({'weight', 'bias'}, names)
      assert.is_nil(nn.Conv2d(1, 2, 3, {bias = false}).bias)
   end)

   it('computes fnn.conv2d with its options, and trains through backward', function()
      fnn.manual_seed(42)
      local conv = nn.Conv2d(3, 4, 3, {stride = 2, padding = 1, dilation = {1, 2}})
      local x = fnn.randn(2, 3, 9, 9)
      local y = conv(x)
      local cfg = {stride = {2, 2}, pad = {1, 1}, dil = {1, 2}, groups = 1}
      approx((naive_conv(x, conv.weight:tensor(), conv.bias:tensor(), cfg)), y)
      y:sum():backward()
      assert.same({4, 3, 3, 3}, conv.weight:grad():shape())
      assert.same({4}, conv.bias:grad():shape())
   end)

   it("keeps H and W with padding 'same', also for an even kernel", function()
      local conv = nn.Conv2d(2, 3, 4, {padding = 'same'})
      assert.same({1, 3, 7, 5}, conv(fnn.randn(1, 2, 7, 5)):shape())
      assert.equals('nn.Conv2d(2 -> 3, k=4x4, p=same)', tostring(conv))
      assert.equals('nn.Conv2d(2 -> 3, k=4x4, p=same)', conv:short_str())
   end)

   it('refuses an input with the wrong channel count, at the caller\'s line', function()
      local conv = nn.Conv2d(3, 4, 3)
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = conv(fnn.ones(2, 1, 8, 8)) end)
      assert.equals(('spec/conv_spec.lua:%d: Conv2d(3 -> 4, k=3x3): input [2,1,8,8] has 1 channels in dim 2, expected 3')
                    :format(line), err)
      assert.matches('Conv2d%(3 %-> 4, k=3x3%): input %[8,8%] must be %[N, C, H, W%] or %[C, H, W%]',
                     err_of(function() local _ = conv(fnn.ones(8, 8)) end))
      assert.matches('nn.Conv2d: in 3 and out 4 must both be divisible by groups 2',
                     err_of(function() local _ = nn.Conv2d(3, 4, 3, {groups = 2}) end))
      assert.matches('nn.Conv2d: kernel is nil', err_of(function() local _ = nn.Conv2d(3, 4) end))
   end)
end)

describe('nn.MaxPool2d and nn.AvgPool2d', function()
   it('default the stride to the kernel and pass their options', function()
      fnn.manual_seed(51)
      local x = fnn.randn(2, 3, 7, 7)
      local mp = nn.MaxPool2d(2)
      approx((naive_max_pool(x, {k = {2, 2}})), mp(x))
      local mp3 = nn.MaxPool2d(3, {stride = 2, padding = 1, ceil_mode = true})
      approx((naive_max_pool(x, {k = {3, 3}, s = {2, 2}, p = {1, 1}, ceil = true})), mp3(x))
      local ap = nn.AvgPool2d({3, 2}, {padding = {1, 1}})
      approx((naive_avg_pool(x, {k = {3, 2}, s = {3, 2}, p = {1, 1}})), ap(x))
      local ap2 = nn.AvgPool2d(3, {stride = 2, padding = 1, count_include_pad = false})
      approx((naive_avg_pool(x, {k = {3, 3}, s = {2, 2}, p = {1, 1}, include = false})), ap2(x))
      assert.equals('nn.MaxPool2d(2x2)', tostring(mp))
      assert.equals(0, #mp:parameters())
   end)

   it('make a small CNN that runs forward and backward', function()
      fnn.manual_seed(52)
      local model = nn.Sequential()
      model:add(nn.Conv2d(1, 4, 3, {padding = 1})); model:add(nn.ReLU()); model:add(nn.MaxPool2d(2))
      model:add(nn.Conv2d(4, 8, 3, {padding = 1})); model:add(nn.ReLU()); model:add(nn.AvgPool2d(2))
      model:add(nn.Flatten()); model:add(nn.Linear(8 * 7 * 7, 10))
      local loss = nn.cross_entropy(model(fnn.randn(5, 1, 28, 28)), {1, 2, 3, 4, 5})
      loss:backward()
      for _, p in ipairs(model:parameters()) do assert.is_not_nil(p:grad()) end
   end)

   it('name the layer and the shapes when the input does not fit', function()
      local err = err_of(function() local _ = nn.MaxPool2d(2)(fnn.ones(3)) end)
      assert.matches('max_pool2d: input %[3%] must be 4%-D', err)
      assert.matches('nn.AvgPool2d: options must be a table', err_of(function() local _ = nn.AvgPool2d(2, 3) end))
   end)
end)
