-- Gradcheck cases for core/ops/rnn.c. lstm_cell: h and c' are weighted differently so that a
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

return {
   {op = 'lstm_cell', inputs = function() return u(3, 8), u(3, 2) end,
    fn = function(z, c) local h, cn = fnn.lstm_cell(z, c); return h * 1.3 - cn * 0.6 end},
   {op = 'lstm_cell', inputs = function() return u(2, 12), u(2, 3) end,   -- h alone: dc' only through tanh
    fn = function(z, c) local h = fnn.lstm_cell(z, c); return h end},
   {op = 'lstm_cell', inputs = function() return u(12, 2), u(3, 2) end,   -- transposed z and c
    fn = function(z, c) local h, cn = fnn.lstm_cell(z:t(), c:t()); return cn * 0.8 + h end},

   -- lstm: N = 2, T = 3, I = 2, H = 3 (gates [12, *])
   {op = 'lstm', inputs = function() return u(2, 3, 2), u(2, 3), u(2, 3), w(12, 2), w(12, 3), w(12), w(12) end,
    fn = function(x, h0, c0, wi, wh, bi, bh) return lstm_all(x, h0, c0, wi, wh, bi, bh, false) end},
   {op = 'lstm', inputs = function() return u(2, 4, 2), u(2, 3), u(2, 3), w(12, 2), w(12, 3), w(12), w(12) end,
    fn = function(x, h0, c0, wi, wh, bi, bh) return lstm_all(x, h0, c0, wi, wh, bi, bh, true) end},
   {op = 'lstm', inputs = function() return u(3, 2, 2), w(12, 2), w(12, 3) end,   -- zero states, no biases, x [T, N, I]^T
    fn = function(x, wi, wh) return lstm_all(x:transpose(1, 2), nil, nil, wi, wh, nil, nil, false) end},

   -- gru: gates [9, *]
   {op = 'gru', inputs = function() return u(2, 3, 2), u(2, 3), w(9, 2), w(9, 3), w(9), w(9) end,
    fn = function(x, h0, wi, wh, bi, bh) return gru_all(x, h0, wi, wh, bi, bh, false) end},
   {op = 'gru', inputs = function() return u(2, 4, 2), u(2, 3), w(9, 2), w(9, 3), w(9), w(9) end,
    fn = function(x, h0, wi, wh, bi, bh) return gru_all(x, h0, wi, wh, bi, bh, true) end},
   {op = 'gru', inputs = function() return u(3, 2, 2), w(9, 2), w(9, 3), w(9) end,
    fn = function(x, wi, wh, bh) return gru_all(x:transpose(1, 2), nil, wi, wh, nil, bh, false) end},

   -- H = 16, N = 5: wider steps, a batch that is not a multiple of 4
   {op = 'lstm', inputs = function() return u(5, 2, 1), u(5, 16), u(5, 16), ws(64, 1), ws(64, 16), ws(64), ws(64) end,
    fn = function(x, h0, c0, wi, wh, bi, bh) return lstm_all(x, h0, c0, wi, wh, bi, bh, true) end},
   {op = 'gru', inputs = function() return u(5, 2, 1), u(5, 16), ws(48, 1), ws(48, 16), ws(48), ws(48) end,
    fn = function(x, h0, wi, wh, bi, bh) return gru_all(x, h0, wi, wh, bi, bh, false) end},
   {op = 'rnn_tanh', inputs = function() return u(5, 2, 1), u(5, 16), ws(16, 1), ws(16, 16), ws(16), ws(16) end,
    fn = function(x, h0, wi, wh, bi, bh) return tanh_all(x, h0, wi, wh, bi, bh, true) end},

   -- rnn_tanh: gates [3, *]
   {op = 'rnn_tanh', inputs = function() return u(2, 3, 2), u(2, 3), w(3, 2), w(3, 3), w(3), w(3) end,
    fn = function(x, h0, wi, wh, bi, bh) return tanh_all(x, h0, wi, wh, bi, bh, false) end},
   {op = 'rnn_tanh', inputs = function() return u(2, 4, 3), u(2, 3), w(3, 3), w(3, 3), w(3), w(3) end,
    fn = function(x, h0, wi, wh, bi, bh) return tanh_all(x, h0, wi, wh, bi, bh, true) end},
   {op = 'rnn_tanh', inputs = function() return u(3, 2, 2), w(3, 2), w(3, 3) end,
    fn = function(x, wi, wh) return tanh_all(x:transpose(1, 2), nil, wi, wh, nil, nil, false) end},
}
