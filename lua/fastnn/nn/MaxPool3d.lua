-- nn.MaxPool3d(kernel, {stride = kernel, padding = 0, ceil_mode = false}): the maximum of each
-- window over [N, C, D, H, W] or [C, D, H, W]; padding counts as -inf and may be at most half the
-- kernel. kernel, stride and padding are numbers or {d, h, w}.
return require('fastnn.nn._pool').pool('MaxPool3d', 'max', 3)
