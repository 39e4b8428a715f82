-- nn.MaxPool1d(kernel, {stride = kernel, padding = 0, ceil_mode = false}): the maximum of each
-- window over [N, C, L] or [C, L]; padding counts as -inf and may be at most half the kernel.
-- kernel, stride and padding are numbers (or {k}).
return require('fastnn.nn._pool').pool('MaxPool1d', 'max', 1)
