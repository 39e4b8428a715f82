-- nn.UpSampling2D(size = 2, opts) (Keras): the same class as nn.UpSampling2d.
return require('fastnn.nn').UpSampling2d
