-- nn.GlobalAveragePooling1D({keepdims = false}) (Keras): the same class as nn.GlobalAvgPool1d.
return require('fastnn.nn').GlobalAvgPool1d
