-- nn.GlobalMaxPool3d({keepdims = false}): the maximum over the spatial dims, [N, C, D, H, W] -> [N, C]
-- (Keras), or with size-1 spatial dims kept when keepdims; unbatched input drops N.
return require('fastnn.nn._pool').global('GlobalMaxPool3d', 'max', 3)
