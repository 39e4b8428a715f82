-- nn.GlobalAvgPool3d({keepdims = false}): the mean over the spatial dims, [N, C, D, H, W] -> [N, C]
-- (Keras), or with size-1 spatial dims kept when keepdims; unbatched input drops N.
return require('fastnn.nn._pool').global('GlobalAvgPool3d', 'avg', 3)
