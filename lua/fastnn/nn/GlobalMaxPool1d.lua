-- nn.GlobalMaxPool1d({keepdims = false}): the maximum over the spatial dims, [N, C, L] -> [N, C]
-- (Keras), or with size-1 spatial dims kept when keepdims; unbatched input drops N.
return require('fastnn.nn._pool').global('GlobalMaxPool1d', 'max', 1)
