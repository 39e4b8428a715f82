-- nn.SpatialDropout3d(p = 0.5): drops whole channels of [N, C, D, H, W] inputs in training mode (see _spatial_dropout).
return require('fastnn.nn._spatial_dropout')(3)
