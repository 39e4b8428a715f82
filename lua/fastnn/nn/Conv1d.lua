-- nn.Conv1d(in, out, kernel, {stride = 1, padding = 0, dilation = 1, groups = 1, bias = true}):
-- 1-d convolution over [N, in, L] (or [in, L]) -> [N, out, Lo]. kernel, stride, padding and
-- dilation are numbers or {l}; padding may also be {{before, after}}, 'valid', 'same' (stride 1:
-- PyTorch's; stride > 1: TensorFlow's, Lo = ceil(L / stride)) or 'causal' (dilation (k - 1) on the
-- left only: Lo = L, each output sees only its past). weight Param [out, in/groups, k], bias [out],
-- both U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups * k (PyTorch's default).
return require('fastnn.nn._conv').class('Conv1d', 1, false)
