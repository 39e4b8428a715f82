-- fastnn.ops.rnn: bindings for core/ops/rnn.c (fused recurrent cells and whole-sequence layers).
--   fnn.lstm_cell(z, c) -> h, c_new
--     z [N, 4H] gate pre-activations in PyTorch's order i, f, g, o (x W_ih^T + b_ih + h W_hh^T + b_hh),
--     c [N, H] the previous cell state. i, f, o = sigmoid, g = tanh, c_new = f*c + i*g,
--     h = o*tanh(c_new). One graph node; h and c_new are narrow views of its [N, 2H] output.
--   fnn.lstm(x, w_ih, w_hh, b_ih, b_hh, {h0, c0, reverse}) -> out, h_n, c_n
--   fnn.gru(x, w_ih, w_hh, b_ih, b_hh, {h0, reverse}) -> out, h_n
--   fnn.rnn_tanh(x, w_ih, w_hh, b_ih, b_hh, {h0, reverse}) -> out, h_n
--     One layer over a whole sequence, one graph node (backprop through time in C). x [N, T, I]
--     batch first; w_ih [G*H, I], w_hh [G*H, H], b_ih, b_hh [G*H] or nil, G = 4 (i, f, g, o),
--     3 (r, z, n: n = tanh(W_in x + b_in + r*(W_hn h + b_hn))) or 1 (h = tanh(...)), PyTorch's
--     layouts; h0, c0 [N, H] initial states (nil: zeros). reverse = true reads x from its last
--     step to its first (Keras go_backwards); out [N, T, H] is in processing order and
--     h_n = out[:, T], c_n [N, H] the final states.
-- Also a method: z:lstm_cell(c).
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, is_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local M = {}

-- raised at the user's line: 1 here, 2 the binding, 3 its caller
local check_tensor = fnn_tensor.check_tensor
-- an argument past an op's last is refused at the caller's line (fastnn.tensor's too_many)
local too_many = fnn_tensor.too_many

local fnn_lstm_cell = C.fnn_lstm_cell

function M.lstm_cell(z, c, extra)
   if extra ~= nil then too_many('lstm_cell', 3, extra, 'z, c') end
   check_tensor('lstm_cell', z, 'z')
   check_tensor('lstm_cell', c, 'c')
   local out = new()
   if fnn_lstm_cell(out, z, c) ~= 0 then fail() end
   out = done(out)
   local H = c:size(2)
   return out:narrow(2, 1, H), out:narrow(2, H + 1, H)
end

Tensor.lstm_cell = M.lstm_cell

-- {h0, c0, reverse} -> h0, c0, reverse as 0/1
-- both raise at the user's line: 1 here, 2 the binding, 3 its caller
local SEQ_OPTS = {}
for _, op in ipairs{'lstm', 'gru', 'rnn_tanh'} do
   local entries = {
      {'h0', 'tensor', nil, 'the initial hidden state [N, H] (default zeros)'},
      {'reverse', 'boolean', false, 'run the sequence from its last step to its first'},
   }
   if op == 'lstm' then entries[3] = {'c0', 'tensor', nil, 'the initial cell state [N, H] (default zeros)'} end
   SEQ_OPTS[op] = require('fastnn.options').declare('fnn.' .. op, entries)
end
local function seq_opts(op, opts, cell)
   if opts == nil then return nil, nil, 0 end
   if type(opts) ~= 'table' then
      error(('%s: options must be a table like {h0 = h, reverse = true}, got a %s'):format(op, type(opts)), 3)
   end
   if not cell and opts.c0 ~= nil then error(('%s: takes no cell state c0'):format(op), 3) end
   SEQ_OPTS[op]:check(opts, 3)
   if opts.h0 ~= nil and not is_tensor(opts.h0) then
      error(('%s: h0 is a %s, expected a tensor'):format(op, type(opts.h0)), 3)
   end
   if opts.c0 ~= nil then
      if not cell then error(('%s: takes no cell state c0'):format(op), 3) end
      if not is_tensor(opts.c0) then error(('%s: c0 is a %s, expected a tensor'):format(op, type(opts.c0)), 3) end
   end
   return opts.h0, opts.c0, opts.reverse and 1 or 0
end

local function seq_args(op, x, w_ih, w_hh, b_ih, b_hh)
   local args = {{x, 'input'}, {w_ih, 'weight_ih'}, {w_hh, 'weight_hh'}, {b_ih, 'bias_ih', true}, {b_hh, 'bias_hh', true}}
   for _, a in ipairs(args) do
      if not is_tensor(a[1]) and not (a[3] and a[1] == nil) then
         error(('%s: %s is a %s, expected a tensor'):format(op, a[2], type(a[1])), 3)
      end
   end
end

local fnn_lstm, fnn_gru, fnn_rnn_tanh = C.fnn_lstm, C.fnn_gru, C.fnn_rnn_tanh

function M.lstm(x, w_ih, w_hh, b_ih, b_hh, opts, extra)
   if extra ~= nil then too_many('lstm', 7, extra, 'x, w_ih, w_hh, b_ih, b_hh[, {h0, c0, reverse}]') end
   seq_args('lstm', x, w_ih, w_hh, b_ih, b_hh)
   local h0, c0, rev = seq_opts('lstm', opts, true)
   local out = new()
   if fnn_lstm(out, x, h0, c0, w_ih, w_hh, b_ih, b_hh, rev) ~= 0 then fail() end
   out = done(out)
   local T = tonumber(out.shape_[1]) - 1
   return out:narrow(2, 1, T), out:select(2, T), out:select(2, T + 1)
end

local function simple(op, cfn)
   local takes = 'x, w_ih, w_hh, b_ih, b_hh[, {h0, reverse}]'
   return function(x, w_ih, w_hh, b_ih, b_hh, opts, extra)
      if extra ~= nil then too_many(op, 7, extra, takes) end
      seq_args(op, x, w_ih, w_hh, b_ih, b_hh)
      local h0, _, rev = seq_opts(op, opts, false)
      local out = new()
      if cfn(out, x, h0, w_ih, w_hh, b_ih, b_hh, rev) ~= 0 then fail() end
      out = done(out)
      return out, out:select(2, tonumber(out.shape_[1]))
   end
end
M.gru = simple('gru', fnn_gru)
M.rnn_tanh = simple('rnn_tanh', fnn_rnn_tanh)

return M
