-- nn.UpSampling3D(size = 2, opts) (Keras): the same class as nn.UpSampling3d.
return require('fastnn.nn').UpSampling3d
