-- nn.ConvTranspose1d(in, out, kernel, {stride = 1, padding = 0, output_padding = 0, dilation = 1,
-- groups = 1, bias = true}): the transposed (fractionally strided) 1-d convolution, the input
-- gradient of nn.Conv1d(out, in, kernel) with the same options, over
-- [N, in, L] (or [in, L]) -> [N, out, Lo].
-- Per dim, out size = (in - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1
-- (PyTorch's); output_padding must be smaller than the stride or the dilation. kernel, stride,
-- padding, output_padding and dilation are numbers or {l}; padding 'valid' is 0 and 'same'
-- gives in * stride (Keras). weight Param [in, out/groups, k], bias [out], both
-- U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = out/groups * prod(kernel) (PyTorch's default).
return require('fastnn.nn._conv').class('ConvTranspose1d', 1, true)
