-- Naive references for the convolution specs (conv_nd_spec, conv_transpose_spec): direct loops over
-- flat row-major Lua arrays, written from the definitions, not from the C kernels.
--   plain: y[n, o, p...] = b[o] + sum over c of o's group and taps k of
--          w[o, c, k...] * x[n, c, p*s - before + k*d ...]              (zero outside x)
--   transposed: each x[n, c, i...] times the kernel w[c, ., k...] scattered onto
--          y[n, ., i*s - before + k*d ...], dropping what falls outside y
-- o = {stride = {..}, pad = {..}, dil = {..}, groups = g, opad = {..}}: one entry per spatial dim,
-- a pad entry a number or {before, after}; missing entries are 1 (stride, dil) or 0.
local support = require 'support'
local floor = math.floor
local each_index, pos = support.each_index, support.pos

local M = {}

local function options(o, nd)
   local s, p, d, op = {}, {}, {}, {}
   for i = 1, nd do
      s[i] = o.stride and o.stride[i] or 1
      d[i] = o.dil and o.dil[i] or 1
      local pi = o.pad and o.pad[i] or 0
      p[i] = type(pi) == 'number' and {pi, pi} or pi
      op[i] = o.opad and o.opad[i] or 0
   end
   return s, p, d, op, o.groups or 1
end

local function kernel_of(ws, nd)
   local k = {}
   for i = 1, nd do k[i] = ws[2 + i] end
   return k
end

-- f(yi, xi, wi) for every (output, input, weight) triple of a plain convolution of x [N, C, sp...]
-- by w [O, C/g, k...], 1-based flat indices; returns the output shape
function M.conv_each(xs, ws, o, f)
   local nd = #xs - 2
   local s, p, d, _, g = options(o, nd)
   local O, Cg = ws[1], ws[2]
   local Og = O / g
   local ys = {xs[1], O}
   for i = 1, nd do
      ys[2 + i] = floor((xs[2 + i] + p[i][1] + p[i][2] - d[i] * (ws[2 + i] - 1) - 1) / s[i]) + 1
   end
   local ks, xidx, widx = kernel_of(ws, nd), {}, {}
   each_index(ys, function(yidx)
      local yi = pos(ys, yidx)
      local grp = floor((yidx[2] - 1) / Og)
      for c = 1, Cg do
         each_index(ks, function(kidx)
            xidx[1], xidx[2], widx[1], widx[2] = yidx[1], grp * Cg + c, yidx[2], c
            for i = 1, nd do
               local at = (yidx[2 + i] - 1) * s[i] - p[i][1] + (kidx[i] - 1) * d[i]
               if at < 0 or at >= xs[2 + i] then return end
               xidx[2 + i], widx[2 + i] = at + 1, kidx[i]
            end
            f(yi, pos(xs, xidx), pos(ws, widx))
         end)
      end
   end)
   return ys
end

-- the same for a transposed convolution of x [N, Cin, sp...] by w [Cin, Cout/g, k...]: each input
-- element scattered through the kernel; out = (in - 1) s - before - after + d (k - 1) + opad + 1
function M.conv_transpose_each(xs, ws, o, f)
   local nd = #xs - 2
   local s, p, d, op, g = options(o, nd)
   local Cin, Cog = xs[2], ws[2]
   local Cig = Cin / g
   local ys = {xs[1], Cog * g}
   for i = 1, nd do
      ys[2 + i] = (xs[2 + i] - 1) * s[i] - p[i][1] - p[i][2] + d[i] * (ws[2 + i] - 1) + op[i] + 1
   end
   local ks, yidx, widx = kernel_of(ws, nd), {}, {}
   each_index(xs, function(xidx)
      local xi = pos(xs, xidx)
      local grp = floor((xidx[2] - 1) / Cig)
      for co = 1, Cog do
         each_index(ks, function(kidx)
            yidx[1], yidx[2], widx[1], widx[2] = xidx[1], grp * Cog + co, xidx[2], co
            for i = 1, nd do
               local at = (xidx[2 + i] - 1) * s[i] - p[i][1] + (kidx[i] - 1) * d[i]
               if at < 0 or at >= ys[2 + i] then return end
               yidx[2 + i], widx[2 + i] = at + 1, kidx[i]
            end
            f(pos(ys, yidx), xi, pos(ws, widx))
         end)
      end
   end)
   return ys
end

local function numel(shape)
   local n = 1
   for _, v in ipairs(shape) do n = n * v end
   return n
end

local function zeros(n)
   local t = {}
   for i = 1, n do t[i] = 0 end
   return t
end

-- channel (1-based) of flat element i of a [N, C, sp...] array
local function channel_of(shape, i)
   local inner = numel(shape) / (shape[1] * shape[2])
   return floor((i - 1) / inner) % shape[2] + 1
end

-- values of the convolution: each = M.conv_each or M.conv_transpose_each; x, w, b tensors (b may be nil)
function M.values(each, x, w, b, o)
   local xv, wv, bv = x:to_flat(), w:to_flat(), b and b:to_flat()
   local acc = {}
   local ys = each(x:shape(), w:shape(), o, function(yi, xi, wi) acc[yi] = (acc[yi] or 0) + xv[xi] * wv[wi] end)
   local y = {}
   for i = 1, numel(ys) do y[i] = (acc[i] or 0) + (bv and bv[channel_of(ys, i)] or 0) end
   return y, ys
end

-- gradients of sum(gy * conv(x, w, b)) by the adjoint loops: dx, dw, db
function M.grads(each, x, w, o, gy)
   local xv, wv, gv = x:to_flat(), w:to_flat(), gy:to_flat()
   local dx, dw = zeros(#xv), zeros(#wv)
   local ys = each(x:shape(), w:shape(), o, function(yi, xi, wi)
      dx[xi] = dx[xi] + gv[yi] * wv[wi]
      dw[wi] = dw[wi] + gv[yi] * xv[xi]
   end)
   local db = zeros(ys[2])
   for i = 1, #gv do
      local c = channel_of(ys, i)
      db[c] = db[c] + gv[i]
   end
   return dx, dw, db
end

-- PyTorch's output size of a plain convolution along one dim
function M.out_size(n, k, s, before, after, d)
   return floor((n + before + after - d * (k - 1) - 1) / s) + 1
end

-- padding 'same' along one dim, from the rules (not from the binding): stride 1, PyTorch's total
-- d (k - 1); stride > 1, TensorFlow's, output ceil(n / s); the odd pad goes after
function M.same_pad(n, k, s, d)
   local ext = d * (k - 1) + 1
   local out = math.ceil(n / s)
   local total = math.max((out - 1) * s + ext - n, 0)
   return {floor(total / 2), total - floor(total / 2)}
end

return M
