-- nn.LSTM(input_size, hidden_size, {num_layers, bias, return_sequences = true, go_backwards = false,
-- dropout}) or nn.LSTM{units = H, ...} (lazy). Gates i, f, g, o as PyTorch:
--   i, f, o = sigmoid(W_i* x + b_i* + W_h* h + b_h*), g = tanh(...), c' = f c + i g, h' = o tanh(c').
-- out, {h, c} = m:forward(x, {h0, c0}): x [N, T, I]; states [num_layers, N, H]; each layer one C
-- node (fnn.lstm). Options, parameters and shapes: lua/fastnn/nn/_recurrent.lua.
return require('fastnn.nn._recurrent').class('LSTM', 'lstm')
