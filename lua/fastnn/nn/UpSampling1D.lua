-- nn.UpSampling1D(size = 2, opts) (Keras): the same class as nn.UpSampling1d.
return require('fastnn.nn').UpSampling1d
