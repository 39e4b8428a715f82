-- The recurrent layers nn.SimpleRNN, nn.LSTM and nn.GRU: an RNN base class with the methods,
-- the three classes declared by name at the end naming their gates and C op. Each layer of a stack is
-- one C node over the whole sequence (fnn.rnn_tanh, fnn.lstm, fnn.gru: the input projection as
-- one GEMM, one recurrent GEMM and a fused cell per step, backprop through time in C), so a
-- forward costs num_layers calls, never one per step.
--
--   nn.LSTM(input_size, hidden_size, {num_layers = 1, bias = true, return_sequences = true,
--           go_backwards = false, dropout = 0})
--   nn.LSTM{units = H, ...}            the Keras-style lazy form: the input width is read from the
--                                      first input (or build(shape)); parameters exist from then on.
--                                      use_bias is bias's Keras name; dropout keeps PyTorch's meaning
--   out, state = m:forward(x, state)
--     x [N, T, input_size], batch first. state nil (zeros), else the initial states: LSTM {h, c},
--     GRU and SimpleRNN h, each [num_layers, N, H]. out [N, T, H] (return_sequences) or [N, H]
--     (the last step's); state the final states in the same form. go_backwards reads x from its
--     last step to its first and returns the outputs in that processing order (Keras); the final
--     states are those after the last step processed. With several layers only the first reads
--     backwards (the others read its output, already in processing order).
--   dropout: applied to each layer's output except the last's, in training mode only (PyTorch).
--   bidirectional = true (PyTorch's): each layer also reads the sequence backwards, and layer k + 1
--     reads both directions of layer k; out [N, T, 2H], the backward half aligned with the input's
--     steps (PyTorch's); states [2 * num_layers, N, H] ordered l0, l0 reverse, l1, ...; without
--     return_sequences, out is [N, 2H]: the last layer's two final states. Its parameters are
--     PyTorch's *_reverse ones (weight_ih_l<k>_reverse, ...). nn.Bidirectional is the Keras form.
-- Parameters per layer k = 0 .. num_layers-1, PyTorch's names and layouts: weight_ih_l<k>
-- [G*H, in], weight_hh_l<k> [G*H, H], bias_ih_l<k>, bias_hh_l<k> [G*H], G = 4 (LSTM: i, f, g, o),
-- 3 (GRU: r, z, n) or 1; every one drawn from U(-1/sqrt(H), 1/sqrt(H)) (PyTorch's init).
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local noise = require 'fastnn.nn._noise'
local C = fnn_tensor.C
local new, done, istype, shape_str = fnn_tensor.new, fnn_tensor.done, fnn_tensor.is_tensor, fnn_tensor.shape_str
local Param = nn.Param
local stack, cat = require('fastnn.ops.shape').stack, require('fastnn.ops.shape').cat
local Reverse = nn.Reverse

local M = {}

local function raise(level) error(ffi.string(C.fnn_last_error()), level + 1) end

local function uniform(rows, cols, bound)
   return fnn_tensor.uniform(cols and {rows, cols} or {rows}, -bound, bound)
end

local function is_size(v, min) return type(v) == 'number' and v == math.floor(v) and v >= min end

local options = require 'fastnn.options'
local function declare(name)
   return options.declare('nn.' .. name, {
      {'num_layers', 'integer', 1, 'stacked layers, each reading the sequence of the one before', min = 1},
      {'bias', 'boolean', true, 'learn the input and hidden biases'},
      {'use_bias', 'boolean', true, "Keras's name of bias"},
      {'return_sequences', 'boolean', true, 'return every step [N, T, H] (false: the last step [N, H])'},
      {'go_backwards', 'boolean', false, 'read the sequence from its end'},
      {'dropout', 'number', 0, 'dropout between stacked layers (training only)', min = 0, max = 1, max_open = true},
      {'batch_first', 'boolean', true, 'input is [N, T, F] (the only layout: false is refused)'},
      {'bidirectional', 'boolean', false, "also read each layer's sequence backwards (PyTorch's: out [N, T, 2H])"},
      {'units', 'integer', nil, "the hidden size (Keras's name; in the one-table form)", min = 1},
      {'hidden_size', 'integer', nil, 'the hidden size (in the one-table form)', min = 1},
      {'input_size', 'integer', nil, 'the input width (in the one-table form; else read from the first input)', min = 0},
   })
end

-- the options table, checked; errors at the user's line (1 here, 2 __init, 3 Class(), 4 the user)
local function read_options(OPTS, who, opts)
   opts = OPTS:check(opts, 4)
   if opts.batch_first == false then
      error(('%s: only batch-first input [N, T, F] is supported (batch_first = true)'):format(who), 4)
   end
   local o = {num_layers = opts.num_layers, bias = opts.bias and opts.use_bias,
              return_sequences = opts.return_sequences, go_backwards = opts.go_backwards, dropout = opts.dropout,
              bidirectional = opts.bidirectional}
   if o.bidirectional and o.go_backwards then
      error(('%s: go_backwards and bidirectional together: bidirectional reads both ways already'):format(who), 4)
   end
   if not is_size(o.num_layers, 1) then
      error(('%s: num_layers is %s, expected a positive integer'):format(who, show_value(o.num_layers)), 4)
   end
   local d = o.dropout
   if type(d) ~= 'number' or d ~= d or d < 0 or d >= 1 then
      error(('%s: dropout is %s, expected a number in [0, 1)'):format(who, show_value(d)), 4)
   end
   return o
end

-- ---------------------------------------------------------------------------
-- RNN: the base of SimpleRNN, LSTM and GRU. Class fields: _title (the name in messages), _gates
-- (G), _cell (LSTM's cell state beside h), _cfn (the C op of one layer), _OPTS

local RNN = nn.Module:extend('RNN')

-- (input_size, hidden_size, opts) or {units = H, input_size = I, ...}
function RNN:__init(input_size, hidden_size, opts)
   local who = 'nn.' .. self._title
   if type(input_size) == 'table' then
      opts = input_size
      input_size, hidden_size = opts.input_size, opts.units or opts.hidden_size
      if not is_size(hidden_size, 1) then
         error(('%s: units is %s, expected a positive integer (%s{units = H})'):format(
            who, show_value(hidden_size), who), 3)
      end
   elseif not is_size(hidden_size, 1) then
      error(('%s: hidden_size is %s, expected a positive integer (%s(input_size, hidden_size, {...}))'):format(
         who, show_value(hidden_size), who), 3)
   end
   if input_size ~= nil and not is_size(input_size, 0) then
      error(('%s: input_size is %s, expected a non-negative integer'):format(who, show_value(input_size)), 3)
   end
   local o = read_options(self._OPTS, who, opts)
   rawset(self, '_opts', o)
   self.hidden_size, self.num_layers = hidden_size, o.num_layers
   self.return_sequences, self.go_backwards, self.dropout = o.return_sequences, o.go_backwards, o.dropout
   self.bidirectional = o.bidirectional
   if input_size then self:_make_params(input_size) end
end

function RNN:_make_params(input_size)
   local H, G = self.hidden_size, self._gates
   self.input_size = input_size
   local bound = 1 / math.sqrt(H)
   local D = self.bidirectional and 2 or 1
   for k = 0, self.num_layers - 1 do
      local width = k == 0 and input_size or D * H
      for _, sfx in ipairs(D == 2 and {'', '_reverse'} or {''}) do   -- PyTorch's order of names
         self:register_parameter('weight_ih_l' .. k .. sfx, Param(uniform(G * H, width, bound)))
         self:register_parameter('weight_hh_l' .. k .. sfx, Param(uniform(G * H, H, bound)))
         if self._opts.bias then
            self:register_parameter('bias_ih_l' .. k .. sfx, Param(uniform(G * H, nil, bound)))
            self:register_parameter('bias_hh_l' .. k .. sfx, Param(uniform(G * H, nil, bound)))
         end
      end
   end
end

-- build{N, T, F} (Keras): makes the parameters of a lazy layer; returns the output shape
function RNN:build(shape)
   if type(shape) ~= 'table' or #shape ~= 3 then
      error(('%s: build expects the input shape {N, T, features}, got %s'):format(self:short_str(),
         type(shape) == 'table' and ('[' .. table.concat(shape, ',') .. ']') or type(shape)), 2)
   end
   if self.input_size == nil then self:_make_params(shape[3])
   elseif shape[3] ~= self.input_size then
      error(('%s: input shape [%s] has %s features, expected %d'):format(self:short_str(),
         table.concat(shape, ','), show_value(shape[3]), self.input_size), 2)
   end
   return self:output_shape(shape)
end

function RNN:output_shape(shape)
   local width = (self.bidirectional and 2 or 1) * self.hidden_size
   if self.return_sequences then return {shape[1], shape[2], width} end
   return {shape[1], width}
end

-- a state tensor must be [num_layers * directions, N, H]; level counts from the caller of this
local function check_state(self, what, s, N, level)
   local L, H = self.num_layers * (self.bidirectional and 2 or 1), self.hidden_size
   if not istype(s) then
      error(('%s: state %s is a %s, expected a tensor [num_layers, N, H] = [%d,%d,%d]'):format(
         self:short_str(), what, type(s), L, N, H), level + 1)
   end
   if s.ndim ~= 3 or tonumber(s.shape_[0]) ~= L or tonumber(s.shape_[1]) ~= N or tonumber(s.shape_[2]) ~= H then
      error(('%s: state %s %s is not [num_layers, N, H] = [%d,%d,%d]'):format(
         self:short_str(), what, shape_str(s), L, N, H), level + 1)
   end
   return s
end

function RNN:forward(x, state)
   if not istype(x) then
      error(('%s: input is a %s, expected a tensor [N, T, features]'):format(self:short_str(), type(x)), 2)
   end
   if x.ndim ~= 3 then
      error(('%s: input %s is not [N, T, features] (batch first)'):format(self:short_str(), shape_str(x)), 2)
   end
   if self.input_size == nil then self:_make_params(tonumber(x.shape_[2])) end
   if tonumber(x.shape_[2]) ~= self.input_size then
      error(('%s: input %s has %d features, expected %d'):format(
         self:short_str(), shape_str(x), tonumber(x.shape_[2]), self.input_size), 2)
   end
   if x.shape_[1] < 1 then
      error(('%s: input %s has no time steps'):format(self:short_str(), shape_str(x)), 2)
   end
   local cell, cfn = self._cell, self._cfn
   local N, T, L = tonumber(x.shape_[0]), tonumber(x.shape_[1]), self.num_layers
   local h0s, c0s
   if state ~= nil then
      if cell then
         if type(state) ~= 'table' or istype(state) then
            error(('%s: state is a %s, expected {h, c}, each [num_layers, N, H]'):format(
               self:short_str(), istype(state) and 'tensor' or type(state)), 2)
         end
         h0s = check_state(self, 'h', state[1], N, 2)
         c0s = check_state(self, 'c', state[2], N, 2)
      else
         h0s = check_state(self, 'h', state, N, 2)
      end
   end
   local input, hs, cs = x, {}, {}
   local drop = self.training and self.dropout > 0
   local D = self.bidirectional and 2 or 1
   for k = 0, L - 1 do
      local seqs = {}
      for d = 1, D do
         local sfx = d == 2 and '_reverse' or ''
         local w_ih, w_hh = self['weight_ih_l' .. k .. sfx]:tensor(), self['weight_hh_l' .. k .. sfx]:tensor()
         local bi, bh = self['bias_ih_l' .. k .. sfx], self['bias_hh_l' .. k .. sfx]
         local j = k * D + d               -- this direction's row of the states
         local h0 = h0s and h0s:select(1, j) or nil
         local c0 = c0s and c0s:select(1, j) or nil
         local rev = (d == 2 or (k == 0 and self.go_backwards)) and 1 or 0
         local out = new()
         local rc
         if cell then
            rc = cfn(out, input, h0, c0, w_ih, w_hh, bi and bi:tensor() or nil, bh and bh:tensor() or nil, rev)
         else
            rc = cfn(out, input, h0, w_ih, w_hh, bi and bi:tensor() or nil, bh and bh:tensor() or nil, rev)
         end
         if rc ~= 0 then raise(2) end
         out = done(out)
         -- out [N, T, H] (LSTM [N, T+1, H], the final cell state as row T+1), in processing order
         seqs[d] = cell and out:narrow(2, 1, T) or out
         hs[j] = out:select(2, T)
         if cell then cs[j] = out:select(2, T + 1) end
      end
      -- the backward direction back in the input's step order, beside the forward one (PyTorch)
      local seq = D == 1 and seqs[1] or cat({seqs[1], Reverse.flip(seqs[2], 2, rawget(self, '_index'))}, 3)
      if drop and k < L - 1 then
         local keep = 1 - self.dropout
         seq = seq * (noise.bernoulli(3, seq.shape_, keep, seq) * (1 / keep))
      end
      input = seq
   end
   -- final states [L * D, N, H]
   local final = #hs == 1 and hs[1]:unsqueeze(1) or stack(hs, 1)
   if cell then final = {final, #cs == 1 and cs[1]:unsqueeze(1) or stack(cs, 1)} end
   if self.return_sequences then return input, final end
   if D == 2 then return cat({hs[#hs - 1], hs[#hs]}, 2), final end
   return hs[L], final
end

-- a fresh layer with the same configuration (Bidirectional's second direction); `flip` inverts go_backwards
function RNN:_clone_config(flip)
   local o = self._opts
   if o.bidirectional then
      error(('%s: nn.Bidirectional wraps a one-way layer; this one is bidirectional already'):format(
         self:short_str()), 4)
   end
   local opts = {num_layers = o.num_layers, bias = o.bias, return_sequences = o.return_sequences,
                 go_backwards = (o.go_backwards ~= (flip == true)), dropout = o.dropout}
   local c = getmetatable(self)
   if self.input_size == nil then
      opts.units = self.hidden_size
      return c(opts)
   end
   return c(self.input_size, self.hidden_size, opts)
end

function RNN:short_str()
   local o, parts = self._opts, {}
   if o.num_layers ~= 1 then parts[#parts + 1] = 'num_layers=' .. o.num_layers end
   if not o.bias then parts[#parts + 1] = 'no bias' end
   if not o.return_sequences then parts[#parts + 1] = 'return_sequences=false' end
   if o.go_backwards then parts[#parts + 1] = 'go_backwards' end
   if o.bidirectional then parts[#parts + 1] = 'bidirectional' end
   if o.dropout > 0 then parts[#parts + 1] = ('dropout=%g'):format(o.dropout) end
   return ('nn.%s(%s -> %d%s)'):format(self._title, self.input_size and tostring(self.input_size) or '?',
      self.hidden_size, #parts > 0 and (', ' .. table.concat(parts, ', ')) or '')
end

local function rnn_class(name, gates, cfn_name, cell)
   local cls = RNN:extend(name)
   cls._title, cls._gates, cls._cfn, cls._cell = name, gates, C[cfn_name], cell
   cls._OPTS = declare(name)
   M[name] = cls
   return cls
end

-- nn.SimpleRNN(input_size, hidden_size, {num_layers, bias, return_sequences = true, go_backwards =
-- false, dropout}) or nn.SimpleRNN{units = H, ...} (lazy): h' = tanh(W_ih x + b_ih + W_hh h + b_hh)
-- (PyTorch's nn.RNN, Keras' SimpleRNN). out, h = m:forward(x, h0): x [N, T, I]; h0, h [num_layers, N, H];
-- each layer one C node (fnn.rnn_tanh). Options, parameters and shapes: above.
local SimpleRNN = rnn_class('SimpleRNN', 1, 'fnn_rnn_tanh', false)

-- nn.LSTM(input_size, hidden_size, {num_layers, bias, return_sequences = true, go_backwards = false,
-- dropout}) or nn.LSTM{units = H, ...} (lazy). Gates i, f, g, o as PyTorch:
--   i, f, o = sigmoid(W_i* x + b_i* + W_h* h + b_h*), g = tanh(...), c' = f c + i g, h' = o tanh(c').
-- out, {h, c} = m:forward(x, {h0, c0}): x [N, T, I]; states [num_layers, N, H]; each layer one C
-- node (fnn.lstm). Options, parameters and shapes: above.
local LSTM = rnn_class('LSTM', 4, 'fnn_lstm', true)

-- nn.GRU(input_size, hidden_size, {num_layers, bias, return_sequences = true, go_backwards = false,
-- dropout}) or nn.GRU{units = H, ...} (lazy). Gates r, z, n as PyTorch, the reset applied after the
-- hidden projection:
--   r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z likewise, n = tanh(W_in x + b_in + r (W_hn h + b_hn)),
--   h' = (1 - z) n + z h.
-- out, h = m:forward(x, h0): x [N, T, I]; h0, h [num_layers, N, H]; each layer one C node (fnn.gru).
-- Options, parameters and shapes: above.
local GRU = rnn_class('GRU', 3, 'fnn_gru', false)

return M
