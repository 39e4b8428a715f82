-- nn.Sigmoid(): elementwise sigmoid as a layer; x any shape -> same shape.
return require('fastnn.nn._activation')('Sigmoid', 'fnn_sigmoid')
