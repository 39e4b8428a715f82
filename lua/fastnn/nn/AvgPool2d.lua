-- nn.AvgPool2d(kernel, {stride = kernel, padding = 0, ceil_mode = false, count_include_pad = true}):
-- the mean of each window over [N, C, H, W] (or [C, H, W]) -> [N, C, Ho, Wo]. With
-- count_include_pad the divisor counts the zero padding inside the window (PyTorch's default).
-- kernel, stride and padding are numbers or {h, w}. (fnn.avg_pool2d, in conv.)
return require('fastnn.nn._pool').pool('AvgPool2d', 'avg', 2)
