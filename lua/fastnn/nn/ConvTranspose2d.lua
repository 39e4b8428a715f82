-- nn.ConvTranspose2d(in, out, kernel, {stride = 1, padding = 0, output_padding = 0, dilation = 1,
-- groups = 1, bias = true}): the transposed (fractionally strided) 2-d convolution, the input
-- gradient of nn.Conv2d(out, in, kernel) with the same options, over
-- [N, in, H, W] (or [in, H, W]) -> [N, out, Ho, Wo].
-- Per dim, out size = (in - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1
-- (PyTorch's); output_padding must be smaller than the stride or the dilation. kernel, stride,
-- padding, output_padding and dilation are numbers or {h, w}; padding 'valid' is 0 and 'same'
-- gives in * stride (Keras). weight Param [in, out/groups, kh, kw], bias [out], both
-- U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = out/groups * prod(kernel) (PyTorch's default).
return require('fastnn.nn._conv').class('ConvTranspose2d', 2, true)
