-- Gradcheck cases for core/ops/rnn.c. h and c' are weighted differently so that a
-- gradient routed to the wrong half of the output shows.
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end

return {
   {op = 'lstm_cell', inputs = function() return u(3, 8), u(3, 2) end,
    fn = function(z, c) local h, cn = fnn.lstm_cell(z, c); return h * 1.3 - cn * 0.6 end},
   {op = 'lstm_cell', inputs = function() return u(2, 12), u(2, 3) end,   -- h alone: dc' only through tanh
    fn = function(z, c) local h = fnn.lstm_cell(z, c); return h end},
   {op = 'lstm_cell', inputs = function() return u(12, 2), u(3, 2) end,   -- transposed z and c
    fn = function(z, c) local h, cn = fnn.lstm_cell(z:t(), c:t()); return cn * 0.8 + h end},
}
