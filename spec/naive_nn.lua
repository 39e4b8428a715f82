-- Naive references for the case tables of the conv, pool and norm families (spec/cases/conv.lua,
-- pool.lua, norm.lua): plain Lua loops over x:to_flat(), written from PyTorch's documented
-- definitions, never by calling a fastnn op of those families. Each takes the case's (contiguous)
-- inputs and the op's options and returns a tensor.
local fnn = require 'fastnn'
local CR = require 'conv_reference'
local support = require 'support'
local each_index, pos = support.each_index, support.pos
local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min

local M = {}

local function numel(shape)
   local n = 1
   for _, s in ipairs(shape) do n = n * s end
   return n
end
-- a number or a table -> a table of nd entries
local function tuple(v, nd, default)
   if v == nil then v = default end
   if type(v) ~= 'table' then
      local t = {}
      for i = 1, nd do t[i] = v end
      return t
   end
   return v
end
-- shape with its first dim dropped / a 1 put in front
local function tail(shape) local t = {} for i = 2, #shape do t[i - 1] = shape[i] end return t end
local function batched(shape) local t = {1} for i = 1, #shape do t[i + 1] = shape[i] end return t end

-- ---- convolutions ----
-- y of fnn.conv<nd>d / conv_transpose<nd>d (transposed true) by conv_reference's loops; the options
-- as the binding documents them (padding a number, per dim a number or {before, after}, 'valid',
-- 'same', 'causal'), resolved here from those rules; activation 'relu' applied after the bias
function M.conv(transposed, x, w, b, opts)
   opts = opts or {}
   local ws = w:shape()
   local nd = #ws - 2
   local xs = x:shape()
   local unbatched = #xs == nd + 1
   if unbatched then xs = batched(xs) end
   local o = {stride = tuple(opts.stride, nd, 1), dil = tuple(opts.dilation, nd, 1), groups = opts.groups,
              opad = tuple(opts.output_padding, nd, 0), pad = {}}
   local p = opts.padding or 0
   for i = 1, nd do
      local k, s, d = ws[2 + i], o.stride[i], o.dil[i]
      if p == 'valid' then
         o.pad[i] = 0
      elseif p == 'causal' then
         o.pad[i] = {d * (k - 1), 0}
      elseif p == 'same' and transposed then   -- Keras: the output is input * stride
         local total = max(d * (k - 1) + 1 - s, 0)
         o.pad[i] = {floor(total / 2), total - floor(total / 2)}
         o.opad[i] = max(s - d * (k - 1) - 1, 0)
      elseif p == 'same' then
         o.pad[i] = CR.same_pad(xs[2 + i], k, s, d)
      else
         o.pad[i] = tuple(p, nd, 0)[i]
      end
   end
   local each = transposed and CR.conv_transpose_each or CR.conv_each
   local xv, wv = x:to_flat(), w:to_flat()
   local acc = {}
   local ys = each(xs, ws, o, function(yi, xi, wi) acc[yi] = (acc[yi] or 0) + xv[xi] * wv[wi] end)
   local bv, inner = b and b:to_flat(), numel(ys) / (ys[1] * ys[2])
   local y = {}
   for i = 1, numel(ys) do
      y[i] = (acc[i] or 0) + (bv and bv[floor((i - 1) / inner) % ys[2] + 1] or 0)
      if opts.activation == 'relu' and not (y[i] > 0) then y[i] = 0 end   -- the relu formula: a > 0 ? a : 0
   end
   return fnn.tensor(y, unbatched and tail(ys) or ys)
end

-- ---- pooling over the last nd dims (every leading dim is a batch of planes) ----
-- PyTorch's output length of a pool: floor or ceil of (L + 2p - k) / s, plus 1; with ceil_mode the
-- last window must start inside the input or its left padding
local function pool_len(L, k, s, p, ceil_mode)
   local n = (L + 2 * p - k) / s
   local out = (ceil_mode and ceil(n) or floor(n)) + 1
   if ceil_mode and (out - 1) * s >= L + p then out = out - 1 end
   return out
end

-- each plane of x's last nd dims: f(plane values, spatial shape) -> values, out spatial shape
local function by_planes(x, nd, f)
   local xs, v = x:shape(), x:to_flat()
   local sp, lead = {}, {}
   for i = 1, #xs do if i > #xs - nd then sp[#sp + 1] = xs[i] else lead[#lead + 1] = xs[i] end end
   local per, out, osp = numel(sp), {}, nil
   for q = 0, numel(lead) - 1 do
      local plane = {}
      for i = 1, per do plane[i] = v[q * per + i] end
      local y
      y, osp = f(plane, sp)
      for i = 1, #y do out[#out + 1] = y[i] end
   end
   local shape = {}
   for i = 1, #lead do shape[i] = lead[i] end
   for i = 1, nd do shape[#lead + i] = osp[i] end
   return fnn.tensor(out, shape)
end

-- the windows of a pool of one plane: for each output position (row-major), f(list of in-bounds flat
-- 1-based input positions in the window's row-major order, the window's size counting padding up to
-- L + p) -> the output value
local function windows(sp, k, s, p, ceil_mode, f)
   local nd, osp = #sp, {}
   for i = 1, nd do osp[i] = pool_len(sp[i], k[i], s[i], p[i], ceil_mode) end
   local out = {}
   each_index(osp, function(oidx)
      local lo, hi, padded = {}, {}, 1
      for i = 1, nd do
         local start = (oidx[i] - 1) * s[i] - p[i]
         local stop = min(start + k[i], sp[i] + p[i])
         padded = padded * (stop - start)
         lo[i], hi[i] = max(start, 0), min(stop, sp[i])
      end
      local span, list = {}, {}
      for i = 1, nd do span[i] = max(hi[i] - lo[i], 0) end
      each_index(span, function(widx)
         local at = {}
         for i = 1, nd do at[i] = lo[i] + widx[i] end
         list[#list + 1] = pos(sp, at)
      end)
      out[#out + 1] = f(list, padded)
   end)
   return out, osp
end

local function pool_opts(nd, kernel, opts)
   opts = opts or {}
   local k = tuple(kernel, nd)
   return k, opts.stride and tuple(opts.stride, nd) or k, tuple(opts.padding, nd, 0), opts.ceil_mode,
          opts.count_include_pad ~= false
end

-- max pooling: the window's maximum, nan where the window holds one (PyTorch propagates nan)
function M.max_pool(x, nd, kernel, opts)
   local k, s, p, ceil_mode = pool_opts(nd, kernel, opts)
   return by_planes(x, nd, function(v, sp)
      return windows(sp, k, s, p, ceil_mode, function(list)
         local m = -math.huge
         for _, i in ipairs(list) do
            if v[i] ~= v[i] then return 0 / 0 end
            m = max(m, v[i])
         end
         return m
      end)
   end)
end

-- the gradient of sum(gy * max_pool(x)) with gy[i] = i (1-based, row-major over the output): each
-- window's gy goes to the first of its maxima in the window's row-major order
function M.max_pool_grad(x, nd, kernel, opts)
   local k, s, p, ceil_mode = pool_opts(nd, kernel, opts)
   local done = 0   -- outputs of the planes before
   return by_planes(x, nd, function(v, sp)
      local dx = {}
      for i = 1, #v do dx[i] = 0 end
      local n = 0
      local _, osp = windows(sp, k, s, p, ceil_mode, function(list)
         n = n + 1
         local at = list[1]
         for _, i in ipairs(list) do if v[i] > v[at] then at = i end end
         dx[at] = dx[at] + done + n
         return 0
      end)
      done = done + numel(osp)
      return dx, sp
   end)
end

-- avg pooling: the sum of the in-bounds values over the window's size counting the padding
-- (count_include_pad, the default) or over the in-bounds count
function M.avg_pool(x, nd, kernel, opts)
   local k, s, p, ceil_mode, cip = pool_opts(nd, kernel, opts)
   return by_planes(x, nd, function(v, sp)
      return windows(sp, k, s, p, ceil_mode, function(list, padded)
         local sum = 0
         for _, i in ipairs(list) do sum = sum + v[i] end
         return sum / (cip and padded or #list)
      end)
   end)
end

-- the gradient of sum(gy * avg_pool(x)) with gy[i] = i (as max_pool_grad): each window's gy over its
-- divisor goes to every in-bounds input of it
function M.avg_pool_grad(x, nd, kernel, opts)
   local k, s, p, ceil_mode, cip = pool_opts(nd, kernel, opts)
   local done = 0
   return by_planes(x, nd, function(v, sp)
      local dx = {}
      for i = 1, #v do dx[i] = 0 end
      local n = 0
      local _, osp = windows(sp, k, s, p, ceil_mode, function(list, padded)
         n = n + 1
         for _, i in ipairs(list) do dx[i] = dx[i] + (done + n) / (cip and padded or #list) end
         return 0
      end)
      done = done + numel(osp)
      return dx, sp
   end)
end

-- adaptive average pooling of the last two dims to size {oh, ow}: window i covers
-- [floor(i L / out), ceil((i + 1) L / out))
function M.adaptive_avg_pool2d(x, size)
   return by_planes(x, 2, function(v, sp)
      local out = {}
      for i = 0, size[1] - 1 do
         local h0, h1 = floor(i * sp[1] / size[1]), ceil((i + 1) * sp[1] / size[1])
         for j = 0, size[2] - 1 do
            local w0, w1 = floor(j * sp[2] / size[2]), ceil((j + 1) * sp[2] / size[2])
            local sum = 0
            for h = h0, h1 - 1 do for w = w0, w1 - 1 do sum = sum + v[h * sp[2] + w + 1] end end
            out[#out + 1] = sum / ((h1 - h0) * (w1 - w0))
         end
      end
      return out, size
   end)
end

-- nearest resize of the last #size dims: output index i reads input floor(i in / out)
function M.upsample_nearest(x, size)
   local nd = #size
   return by_planes(x, nd, function(v, sp)
      local out, at = {}, {}
      each_index(size, function(oidx)
         for i = 1, nd do at[i] = min(floor((oidx[i] - 1) * sp[i] / size[i]), sp[i] - 1) + 1 end
         out[#out + 1] = v[pos(sp, at)]
      end)
      return out, size
   end)
end

-- bilinear resize of the last two dims: source coordinate (i + 0.5) in / out - 0.5 clamped at 0
-- (align_corners false), or i (in - 1) / (out - 1) (true); the two neighbours weighted linearly
local function source(i, n_in, n_out, align)
   local src
   if align then src = n_out > 1 and i * (n_in - 1) / (n_out - 1) or 0
   else src = max((i + 0.5) * n_in / n_out - 0.5, 0) end
   local i0 = min(floor(src), n_in - 1)
   return i0, min(i0 + 1, n_in - 1), src - i0
end
function M.upsample_bilinear(x, size, align)
   return by_planes(x, 2, function(v, sp)
      local out = {}
      for i = 0, size[1] - 1 do
         local h0, h1, lh = source(i, sp[1], size[1], align)
         for j = 0, size[2] - 1 do
            local w0, w1, lw = source(j, sp[2], size[2], align)
            local function at(h, w) return v[h * sp[2] + w + 1] end
            out[#out + 1] = (1 - lh) * ((1 - lw) * at(h0, w0) + lw * at(h0, w1))
                          + lh * ((1 - lw) * at(h1, w0) + lw * at(h1, w1))
         end
      end
      return out, size
   end)
end

-- ---- norms ----
local function stats(vals)
   local m, ss = 0, 0
   for _, a in ipairs(vals) do m = m + a end
   m = m / #vals
   for _, a in ipairs(vals) do ss = ss + (a - m) ^ 2 end
   return m, ss / #vals
end

-- layer_norm over the trailing `count` elements of each row: (x - mean) / sqrt(biased var + eps) w + b
function M.layer_norm(x, w, b, eps, count)
   eps = eps or 1e-5
   local v = x:to_flat()
   count = count or (w and w:numel()) or (b and b:numel()) or x:shape()[#x:shape()]
   local wv, bv, out = w and w:to_flat(), b and b:to_flat(), {}
   for r = 0, #v / count - 1 do
      local row = {}
      for i = 1, count do row[i] = v[r * count + i] end
      local m, var = stats(row)
      for i = 1, count do
         out[r * count + i] = (row[i] - m) / math.sqrt(var + eps) * (wv and wv[i] or 1) + (bv and bv[i] or 0)
      end
   end
   return fnn.tensor(out, x:shape())
end

-- rms_norm of the rows of `count` values of a flat list v: v / sqrt(mean(v^2) + eps) w (w a list or
-- nil); eps nil: float32's epsilon
function M.rms_rows(v, count, wv, eps)
   eps = eps or 1.1920928955078125e-07
   local out = {}
   for r = 0, #v / count - 1 do
      local ms = 0
      for i = 1, count do ms = ms + v[r * count + i] ^ 2 end
      local scale = 1 / math.sqrt(ms / count + eps)
      for i = 1, count do out[r * count + i] = v[r * count + i] * scale * (wv and wv[i] or 1) end
   end
   return out
end

-- rms_norm over the trailing `count` elements of x (a tensor); count nil: w's size, else the last dim
function M.rms_norm(x, w, eps, count)
   count = count or (w and w:numel()) or x:shape()[#x:shape()]
   return fnn.tensor(M.rms_rows(x:to_flat(), count, w and w:to_flat(), eps), x:shape())
end

-- group_norm of x [N, C, *]: statistics per sample and group of C / groups channels, then the
-- per-channel affine
function M.group_norm(x, groups, w, b, eps)
   eps = eps or 1e-5
   local xs, v = x:shape(), x:to_flat()
   local N, C = xs[1], xs[2]
   local inner = numel(xs) / (N * C)
   local per = C / groups * inner
   local wv, bv, out = w and w:to_flat(), b and b:to_flat(), {}
   for q = 0, N * groups - 1 do
      local vals = {}
      for i = 1, per do vals[i] = v[q * per + i] end
      local m, var = stats(vals)
      for i = 1, per do
         local c = floor((q * per + i - 1) / inner) % C + 1
         out[q * per + i] = (vals[i] - m) / math.sqrt(var + eps) * (wv and wv[c] or 1) + (bv and bv[c] or 0)
      end
   end
   return fnn.tensor(out, xs)
end

-- the values of channel c (1-based) of x [N, C, *], and their flat positions
local function channel(xs, v, c)
   local N, C = xs[1], xs[2]
   local inner = numel(xs) / (N * C)
   local vals, at = {}, {}
   for n = 0, N - 1 do
      for i = 1, inner do
         at[#at + 1] = (n * C + c - 1) * inner + i
         vals[#vals + 1] = v[at[#at]]
      end
   end
   return vals, at
end

-- batch_norm of x [N, C, *]: training normalizes each channel by its batch mean and biased
-- variance (rm, rv nil), eval by the running stats rm, rv; what = 'y' (default), 'mean' (the batch
-- means) or 'var' (the batch's unbiased variances)
function M.batch_norm(x, rm, rv, w, b, eps, what)
   eps = eps or 1e-5
   local xs, v = x:shape(), x:to_flat()
   local C = xs[2]
   local wv, bv, out, means, vars = w and w:to_flat(), b and b:to_flat(), {}, {}, {}
   for c = 1, C do
      local vals, at = channel(xs, v, c)
      local m, var
      if rm then m, var = rm:to_flat()[c], rv:to_flat()[c] else m, var = stats(vals) end
      means[c], vars[c] = m, var * #vals / (#vals - 1)
      for i, a in ipairs(vals) do
         out[at[i]] = (a - m) / math.sqrt(var + eps) * (wv and wv[c] or 1) + (bv and bv[c] or 0)
      end
   end
   if what == 'mean' then return fnn.tensor(means, {C}) end
   if what == 'var' then return fnn.tensor(vars, {C}) end
   return fnn.tensor(out, xs)
end

return M
