-- nn.Tanh(): elementwise tanh as a layer; x any shape -> same shape.
return require('fastnn.nn._activation')('Tanh', 'fnn_tanh')
