-- nn.GlobalMaxPool2d({keepdims = false}): the maximum over the spatial dims, [N, C, H, W] -> [N, C]
-- (Keras), or with size-1 spatial dims kept when keepdims; unbatched input drops N.
return require('fastnn.nn._pool').global('GlobalMaxPool2d', 'max', 2)
