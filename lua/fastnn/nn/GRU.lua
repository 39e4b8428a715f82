-- nn.GRU(input_size, hidden_size, {num_layers, bias, return_sequences = true, go_backwards = false,
-- dropout}) or nn.GRU{units = H, ...} (lazy). Gates r, z, n as PyTorch, the reset applied after the
-- hidden projection:
--   r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z likewise, n = tanh(W_in x + b_in + r (W_hn h + b_hn)),
--   h' = (1 - z) n + z h.
-- out, h = m:forward(x, h0): x [N, T, I]; h0, h [num_layers, N, H]; each layer one C node (fnn.gru).
-- Options, parameters and shapes: lua/fastnn/nn/_recurrent.lua.
return require('fastnn.nn._recurrent').class('GRU', 'gru')
