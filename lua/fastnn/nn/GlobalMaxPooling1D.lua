-- nn.GlobalMaxPooling1D({keepdims = false}) (Keras): the same class as nn.GlobalMaxPool1d.
return require('fastnn.nn').GlobalMaxPool1d
