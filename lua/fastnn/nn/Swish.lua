-- nn.Swish(): x * sigmoid(x), the same function as nn.SiLU (Keras' name); x any shape -> same shape.
return require('fastnn.nn._activation')('Swish', 'fnn_silu')
