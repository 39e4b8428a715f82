-- nn.SeparableConv2d(in, out, kernel, {depth_multiplier = 1, stride = 1, padding = 0, dilation = 1,
-- bias = true}): a depthwise convolution (nn.DepthwiseConv2d without bias: stride, padding,
-- dilation go there) then a pointwise 1x1 nn.Conv2d(in * depth_multiplier, out) with the bias,
-- as Keras's SeparableConv2D, over [N, C, H, W] (or [C, H, W]). Padding: numbers, 'valid' or 'same'.
-- Parameters 'depthwise.weight' [in * depth_multiplier, 1, kh, kw], 'pointwise.weight'
-- [out, in * depth_multiplier, 1...], 'pointwise.bias' [out].
return require('fastnn.nn._conv').separable_class('SeparableConv2d', 2)
