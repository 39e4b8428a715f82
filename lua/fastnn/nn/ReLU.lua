-- nn.ReLU(): elementwise relu as a layer; x any shape -> same shape.
return require('fastnn.nn._activation')('ReLU', 'fnn_relu')
