-- Cases for core/ops/rnn.c (format: spec/cases/elementwise.lua), each with a naive reference: the
-- cells by PyTorch's gate equations over plain numbers, step by step. lstm_cell: h and c' are weighted differently so that a
-- gradient routed to the wrong half of the output shows. The sequence layers (rnn_tanh, lstm,
-- gru): backprop through time over 3-4 steps into x, the initial states and every weight and
-- bias, read forwards and backwards (reverse), with and without states and biases, on a
-- transposed x, and at H = 16; the final states are mixed into the output so their gradients
-- count too.
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end
local function w(...) return fnn.rand(...) * 1.6 - 0.8 end   -- weights: gates away from saturation
local function ws(...) return fnn.rand(...) * 0.6 - 0.3 end   -- the same for 16 hidden units

-- every output of a layer in one tensor: the sequence plus the final states on each step
local function lstm_all(x, h0, c0, wi, wh, bi, bh, rev)
   local y, h, c = fnn.lstm(x, wi, wh, bi, bh, {h0 = h0, c0 = c0, reverse = rev})
   return y + (h * 0.7 - c * 1.3):unsqueeze(2)
end
local function simple_all(op)
   return function(x, h0, wi, wh, bi, bh, rev)
      local y, h = fnn[op](x, wi, wh, bi, bh, {h0 = h0, reverse = rev})
      return y * 1.1 + (h * 0.6):unsqueeze(2)
   end
end
local gru_all, tanh_all = simple_all('gru'), simple_all('rnn_tanh')

-- ---- naive references ----
local N_ = require 'naive_nd'
local sig, tanh = N_.sigmoid, N_.tanh

-- lstm_cell over plain numbers: z [N, 4H] (i, f, g, o), c [N, H] -> h, c' as flat lists
local function cell_ref(z, c)
   local zv, cv, N, H = z:to_flat(), c:to_flat(), c:shape()[1], c:shape()[2]
   local h, cn = {}, {}
   for n = 0, N - 1 do
      for j = 1, H do
         local function g(k) return zv[n * 4 * H + k * H + j] end
         local k = n * H + j
         cn[k] = sig(g(1)) * cv[k] + sig(g(0)) * tanh(g(2))
         h[k] = sig(g(3)) * tanh(cn[k])
      end
   end
   return h, cn, {N, H}
end
local function cell_case_ref(wh, wc)
   return function(z, c, view)
      if view then z, c = z:t(), c:t() end
      local h, cn, shape = cell_ref(z, c)
      local out = {}
      for k = 1, #h do out[k] = wh * h[k] + wc * cn[k] end
      return fnn.tensor(out, shape)
   end
end

-- one layer over a sequence (x [N, T, I] batch first), step by step: the outputs [N, T, H] in
-- processing order (reverse: step s reads x[:, T+1-s]) and the final h and c, as flat lists
local function seq_ref(kind, x, h0, c0, wi, wh, bi, bh, rev)
   local G = ({rnn_tanh = 1, gru = 3, lstm = 4})[kind]
   local xs = x:shape()
   local N, T, I, H = xs[1], xs[2], xs[3], wh:shape()[2]
   local xv, wiv, whv = x:to_flat(), wi:to_flat(), wh:to_flat()
   local biv, bhv = bi and bi:to_flat(), bh and bh:to_flat()
   local h = h0 and h0:to_flat() or {}
   local c = c0 and c0:to_flat() or {}
   for k = 1, N * H do h[k] = h[k] or 0; c[k] = c[k] or 0 end
   local out = {}
   for s = 1, T do
      local t = rev and T + 1 - s or s
      local hn, cn = {}, {}
      for n = 0, N - 1 do
         -- a[r]: the input side W_ih x + b_ih, b[r]: the hidden side W_hh h + b_hh, rows r of G H
         local a, b = {}, {}
         for r = 0, G * H - 1 do
            local sa, sb = biv and biv[r + 1] or 0, bhv and bhv[r + 1] or 0
            for i = 1, I do sa = sa + wiv[r * I + i] * xv[(n * T + t - 1) * I + i] end
            for j = 1, H do sb = sb + whv[r * H + j] * h[n * H + j] end
            a[r], b[r] = sa, sb
         end
         for j = 1, H do
            local k = n * H + j
            if kind == 'rnn_tanh' then
               hn[k] = tanh(a[j - 1] + b[j - 1])
            elseif kind == 'lstm' then
               local function z(g) return a[g * H + j - 1] + b[g * H + j - 1] end
               cn[k] = sig(z(1)) * c[k] + sig(z(0)) * tanh(z(2))
               hn[k] = sig(z(3)) * tanh(cn[k])
            else   -- gru: r, z, n; n = tanh(W_in x + b_in + r (W_hn h + b_hn))
               local r = sig(a[j - 1] + b[j - 1])
               local zz = sig(a[H + j - 1] + b[H + j - 1])
               local nn = tanh(a[2 * H + j - 1] + r * b[2 * H + j - 1])
               hn[k] = (1 - zz) * nn + zz * h[k]
            end
            out[(n * T + s - 1) * H + j] = hn[k]
         end
      end
      h = hn
      if kind == 'lstm' then c = cn end
   end
   return out, h, c, {N, T, H}
end
-- the case functions' mixes of the outputs: out + (h 0.7 - c 1.3) per step (lstm), out 1.1 + h 0.6
local function mix(out, shape, f)
   local N, T, H = shape[1], shape[2], shape[3]
   local v = {}
   for n = 0, N - 1 do
      for s = 0, T - 1 do
         for j = 1, H do v[(n * T + s) * H + j] = f(out[(n * T + s) * H + j], n * H + j) end
      end
   end
   return fnn.tensor(v, shape)
end
local function lstm_all_ref(x, h0, c0, wi, wh, bi, bh, rev)
   local out, h, c, shape = seq_ref('lstm', x, h0, c0, wi, wh, bi, bh, rev)
   return mix(out, shape, function(y, k) return y + h[k] * 0.7 - c[k] * 1.3 end)
end
local function simple_all_ref(kind)
   return function(x, h0, wi, wh, bi, bh, rev)
      local out, h, _, shape = seq_ref(kind, x, h0, nil, wi, wh, bi, bh, rev)
      return mix(out, shape, function(y, k) return y * 1.1 + h[k] * 0.6 end)
   end
end
local gru_ref, tanh_ref = simple_all_ref('gru'), simple_all_ref('rnn_tanh')

return {
   {op = 'lstm_cell', inputs = function() return u(3, 8), u(3, 2) end,
    fn = function(z, c) local h, cn = fnn.lstm_cell(z, c); return h * 1.3 - cn * 0.6 end,
    ref = function(z, c) return cell_case_ref(1.3, -0.6)(z, c) end},
   {op = 'lstm_cell', inputs = function() return u(2, 12), u(2, 3) end,   -- h alone: dc' only through tanh
    fn = function(z, c) local h = fnn.lstm_cell(z, c); return h end,
    ref = function(z, c) return cell_case_ref(1, 0)(z, c) end},
   {op = 'lstm_cell', inputs = function() return u(12, 2), u(3, 2) end,   -- transposed z and c
    fn = function(z, c) local h, cn = fnn.lstm_cell(z:t(), c:t()); return cn * 0.8 + h end,
    ref = function(z, c) return cell_case_ref(1, 0.8)(z, c, true) end},

   -- lstm: N = 2, T = 3, I = 2, H = 3 (gates [12, *])
   {op = 'lstm', inputs = function() return u(2, 3, 2), u(2, 3), u(2, 3), w(12, 2), w(12, 3), w(12), w(12) end,
    fn = function(x, h0, c0, wi, wh, bi, bh) return lstm_all(x, h0, c0, wi, wh, bi, bh, false) end,
    ref = function(x, h0, c0, wi, wh, bi, bh) return lstm_all_ref(x, h0, c0, wi, wh, bi, bh, false) end},
   {op = 'lstm', inputs = function() return u(2, 4, 2), u(2, 3), u(2, 3), w(12, 2), w(12, 3), w(12), w(12) end,
    fn = function(x, h0, c0, wi, wh, bi, bh) return lstm_all(x, h0, c0, wi, wh, bi, bh, true) end,
    ref = function(x, h0, c0, wi, wh, bi, bh) return lstm_all_ref(x, h0, c0, wi, wh, bi, bh, true) end},
   {op = 'lstm', inputs = function() return u(3, 2, 2), w(12, 2), w(12, 3) end,   -- zero states, no biases, x [T, N, I]^T
    fn = function(x, wi, wh) return lstm_all(x:transpose(1, 2), nil, nil, wi, wh, nil, nil, false) end,
    ref = function(x, wi, wh) return lstm_all_ref(x:transpose(1, 2), nil, nil, wi, wh, nil, nil, false) end},

   -- gru: gates [9, *]
   {op = 'gru', inputs = function() return u(2, 3, 2), u(2, 3), w(9, 2), w(9, 3), w(9), w(9) end,
    fn = function(x, h0, wi, wh, bi, bh) return gru_all(x, h0, wi, wh, bi, bh, false) end,
    ref = function(x, h0, wi, wh, bi, bh) return gru_ref(x, h0, wi, wh, bi, bh, false) end},
   {op = 'gru', inputs = function() return u(2, 4, 2), u(2, 3), w(9, 2), w(9, 3), w(9), w(9) end,
    fn = function(x, h0, wi, wh, bi, bh) return gru_all(x, h0, wi, wh, bi, bh, true) end,
    ref = function(x, h0, wi, wh, bi, bh) return gru_ref(x, h0, wi, wh, bi, bh, true) end},
   {op = 'gru', inputs = function() return u(3, 2, 2), w(9, 2), w(9, 3), w(9) end,
    fn = function(x, wi, wh, bh) return gru_all(x:transpose(1, 2), nil, wi, wh, nil, bh, false) end,
    ref = function(x, wi, wh, bh) return gru_ref(x:transpose(1, 2), nil, wi, wh, nil, bh, false) end},

   -- H = 16, N = 5: wider steps, a batch that is not a multiple of 4
   {op = 'lstm', inputs = function() return u(5, 2, 1), u(5, 16), u(5, 16), ws(64, 1), ws(64, 16), ws(64), ws(64) end,
    fn = function(x, h0, c0, wi, wh, bi, bh) return lstm_all(x, h0, c0, wi, wh, bi, bh, true) end,
    ref = function(x, h0, c0, wi, wh, bi, bh) return lstm_all_ref(x, h0, c0, wi, wh, bi, bh, true) end},
   {op = 'gru', inputs = function() return u(5, 2, 1), u(5, 16), ws(48, 1), ws(48, 16), ws(48), ws(48) end,
    fn = function(x, h0, wi, wh, bi, bh) return gru_all(x, h0, wi, wh, bi, bh, false) end,
    ref = function(x, h0, wi, wh, bi, bh) return gru_ref(x, h0, wi, wh, bi, bh, false) end},
   {op = 'rnn_tanh', inputs = function() return u(5, 2, 1), u(5, 16), ws(16, 1), ws(16, 16), ws(16), ws(16) end,
    fn = function(x, h0, wi, wh, bi, bh) return tanh_all(x, h0, wi, wh, bi, bh, true) end,
    ref = function(x, h0, wi, wh, bi, bh) return tanh_ref(x, h0, wi, wh, bi, bh, true) end},

   -- rnn_tanh: gates [3, *]
   {op = 'rnn_tanh', inputs = function() return u(2, 3, 2), u(2, 3), w(3, 2), w(3, 3), w(3), w(3) end,
    fn = function(x, h0, wi, wh, bi, bh) return tanh_all(x, h0, wi, wh, bi, bh, false) end,
    ref = function(x, h0, wi, wh, bi, bh) return tanh_ref(x, h0, wi, wh, bi, bh, false) end},
   {op = 'rnn_tanh', inputs = function() return u(2, 4, 3), u(2, 3), w(3, 3), w(3, 3), w(3), w(3) end,
    fn = function(x, h0, wi, wh, bi, bh) return tanh_all(x, h0, wi, wh, bi, bh, true) end,
    ref = function(x, h0, wi, wh, bi, bh) return tanh_ref(x, h0, wi, wh, bi, bh, true) end},
   {op = 'rnn_tanh', inputs = function() return u(3, 2, 2), w(3, 2), w(3, 3) end,
    fn = function(x, wi, wh) return tanh_all(x:transpose(1, 2), nil, wi, wh, nil, nil, false) end,
    ref = function(x, wi, wh) return tanh_ref(x:transpose(1, 2), nil, wi, wh, nil, nil, false) end},
}
