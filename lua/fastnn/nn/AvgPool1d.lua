-- nn.AvgPool1d(kernel, {stride = kernel, padding = 0, ceil_mode = false, count_include_pad = true}):
-- the mean of each window over [N, C, L] or [C, L]. With count_include_pad the divisor counts the
-- zero padding inside the window (PyTorch's default). kernel, stride and padding are numbers (or {k}).
return require('fastnn.nn._pool').pool('AvgPool1d', 'avg', 1)
