-- fastnn.ops.rnn: bindings for core/ops/rnn.c (fused recurrent cells).
--   fnn.lstm_cell(z, c) -> h, c_new
--     z [N, 4H] gate pre-activations in PyTorch's order i, f, g, o (x W_ih^T + b_ih + h W_hh^T + b_hh),
--     c [N, H] the previous cell state. i, f, o = sigmoid, g = tanh, c_new = f*c + i*g,
--     h = o*tanh(c_new). One graph node; h and c_new are narrow views of its [N, 2H] output.
-- Also a method: z:lstm_cell(c).
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, is_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local M = {}

-- raised at the user's line: 1 here, 2 the binding, 3 its caller
local function check_tensor(op, t, what)
   if not is_tensor(t) then error(('%s: %s is a %s, expected a tensor'):format(op, what, type(t)), 3) end
end

local fnn_lstm_cell = C.fnn_lstm_cell

function M.lstm_cell(z, c)
   check_tensor('lstm_cell', z, 'z')
   check_tensor('lstm_cell', c, 'c')
   local out = new()
   if fnn_lstm_cell(out, z, c) ~= 0 then fail() end
   out = done(out)
   local H = c:size(2)
   return out:narrow(2, 1, H), out:narrow(2, H + 1, H)
end

Tensor.lstm_cell = M.lstm_cell
return M
