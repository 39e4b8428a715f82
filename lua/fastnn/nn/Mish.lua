-- nn.Mish(): x * tanh(softplus(x)); x any shape -> same shape.
return require('fastnn.nn._activation')('Mish', 'fnn_mish')
