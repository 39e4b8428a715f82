-- The Keras spellings whose file would differ from a PyTorch-style class's file only by case
-- (Conv2D.lua beside Conv2d.lua): such pairs collide on case-insensitive file systems (macOS and
-- Windows checkouts), so these classes have no file of their own. fastnn.nn looks names up here
-- before it looks for a file; each entry makes its class on first use.
--   nn.Conv1D/2D/3D(filters, kernel_size, {strides = 1, padding = 'valid', dilation_rate = 1,
--      groups = 1, use_bias = true, activation}): an nn.Conv1d/2d/3d whose input channels are
--      read at build from dim 2 of the shape that reaches it (channels first), then the
--      activation; padding 'valid' (Keras' default), 'same', or numbers as nn.Conv2d takes them
--   nn.DepthwiseConv1D/2D(kernel_size, {depth_multiplier = 1, strides, padding, dilation_rate,
--      use_bias, activation}) and nn.SeparableConv1D/2D(filters, kernel_size, {depth_multiplier = 1,
--      ...}): likewise over DepthwiseConv1d/2d and SeparableConv1d/2d (see fastnn/nn/_keras.lua)
local function keras_conv(name, torch_name, dims, kind)
   return function() return require('fastnn.nn._keras').conv(name, torch_name, dims, kind) end
end

return {
   Conv1D = keras_conv('Conv1D', 'Conv1d', 1, 'conv'),
   Conv2D = keras_conv('Conv2D', 'Conv2d', 2, 'conv'),
   Conv3D = keras_conv('Conv3D', 'Conv3d', 3, 'conv'),
   DepthwiseConv1D = keras_conv('DepthwiseConv1D', 'DepthwiseConv1d', 1, 'depthwise'),
   DepthwiseConv2D = keras_conv('DepthwiseConv2D', 'DepthwiseConv2d', 2, 'depthwise'),
   SeparableConv1D = keras_conv('SeparableConv1D', 'SeparableConv1d', 1, 'conv'),
   SeparableConv2D = keras_conv('SeparableConv2D', 'SeparableConv2d', 2, 'conv'),
}
