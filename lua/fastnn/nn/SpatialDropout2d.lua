-- nn.SpatialDropout2d(p = 0.5): drops whole channels of [N, C, H, W] inputs in training mode (see _spatial_dropout).
return require('fastnn.nn._spatial_dropout')(2)
