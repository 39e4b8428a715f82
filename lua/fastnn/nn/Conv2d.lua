-- nn.Conv2d(in, out, kernel, {stride = 1, padding = 0, dilation = 1, groups = 1, bias = true}):
-- 2-d convolution over [N, in, H, W] (or [in, H, W]) -> [N, out, Ho, Wo]. kernel, stride, padding
-- and dilation are numbers or {h, w}; a padding entry may be {before, after}; padding may also be
-- 'valid' or 'same' (stride 1: PyTorch's, the odd pad at the bottom/right; stride > 1:
-- TensorFlow's, Ho = ceil(H / stride)). weight Param [out, in/groups, kh, kw], bias [out], both
-- U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups * kh * kw (PyTorch's default).
return require('fastnn.nn._conv').class('Conv2d', 2, false)
