-- nn.UpSampling1d(factor = 2): repeats each position of [N, C, L] (or [C, L]) factor times (Keras'
-- UpSampling1D size); nn.UpSampling1d{size = n} resizes to n positions by the nearest rule
-- (output o reads input floor(o L / n)). Mode 'nearest' only.
return require('fastnn.nn._pool').upsampling('UpSampling1d', 1)
