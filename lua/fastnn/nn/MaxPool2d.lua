-- nn.MaxPool2d(kernel, {stride = kernel, padding = 0, ceil_mode = false}): the maximum of each
-- window over [N, C, H, W] (or [C, H, W]) -> [N, C, Ho, Wo]; padding counts as -inf and may be at
-- most half the kernel. kernel, stride and padding are numbers or {h, w}. (fnn.max_pool2d, in conv.)
return require('fastnn.nn._pool').pool('MaxPool2d', 'max', 2)
