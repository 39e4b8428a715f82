-- nn.SiLU(): elementwise silu as a layer; x any shape -> same shape.
return require('fastnn.nn._activation')('SiLU', 'fnn_silu')
