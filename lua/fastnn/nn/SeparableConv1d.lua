-- nn.SeparableConv1d(in, out, kernel, {depth_multiplier = 1, stride = 1, padding = 0, dilation = 1,
-- bias = true}): a depthwise convolution (nn.DepthwiseConv1d without bias: stride, padding,
-- dilation go there) then a pointwise 1x1 nn.Conv1d(in * depth_multiplier, out) with the bias,
-- as Keras's SeparableConv1D, over [N, C, L] (or [C, L]). Padding: numbers, 'valid', 'same' or 'causal'.
-- Parameters 'depthwise.weight' [in * depth_multiplier, 1, k], 'pointwise.weight'
-- [out, in * depth_multiplier, 1...], 'pointwise.bias' [out].
return require('fastnn.nn._conv').separable_class('SeparableConv1d', 1)
