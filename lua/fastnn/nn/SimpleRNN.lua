-- nn.SimpleRNN(input_size, hidden_size, {num_layers, bias, return_sequences = true, go_backwards =
-- false, dropout}) or nn.SimpleRNN{units = H, ...} (lazy): h' = tanh(W_ih x + b_ih + W_hh h + b_hh)
-- (PyTorch's nn.RNN, Keras' SimpleRNN). out, h = m:forward(x, h0): x [N, T, I]; h0, h [num_layers, N, H];
-- each layer one C node (fnn.rnn_tanh). Options, parameters and shapes: lua/fastnn/nn/_recurrent.lua.
return require('fastnn.nn._recurrent').class('SimpleRNN', 'rnn_tanh')
