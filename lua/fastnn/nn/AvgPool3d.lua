-- nn.AvgPool3d(kernel, {stride = kernel, padding = 0, ceil_mode = false, count_include_pad = true}):
-- the mean of each window over [N, C, D, H, W] or [C, D, H, W]. With count_include_pad the
-- divisor counts the zero padding inside the window (PyTorch's default). kernel, stride and
-- padding are numbers or {d, h, w}.
return require('fastnn.nn._pool').pool('AvgPool3d', 'avg', 3)
