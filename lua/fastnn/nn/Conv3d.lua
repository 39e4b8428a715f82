-- nn.Conv3d(in, out, kernel, {stride = 1, padding = 0, dilation = 1, groups = 1, bias = true}):
-- 3-d convolution over [N, in, D, H, W] (or [in, D, H, W]) -> [N, out, Do, Ho, Wo]. kernel,
-- stride, padding and dilation are numbers or {d, h, w}; padding also 'valid' or 'same' (as
-- nn.Conv2d). weight Param [out, in/groups, kd, kh, kw], bias [out], both
-- U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups * kd * kh * kw (PyTorch's default).
return require('fastnn.nn._conv').class('Conv3d', 3, false)
