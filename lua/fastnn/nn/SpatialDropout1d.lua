-- nn.SpatialDropout1d(p = 0.5): drops whole channels of [N, C, L] inputs in training mode (see _spatial_dropout).
return require('fastnn.nn._spatial_dropout')(1)
