-- nn.DepthwiseConv1D(kernel_size, {depth_multiplier = 1, strides = 1, padding = 'valid',
--    dilation_rate = 1, use_bias = true, activation})
-- (Keras): an nn.DepthwiseConv1d whose input channels are read at build from dim 2 of the shape
-- that reaches it (channels first), then the activation. padding: 'valid' (Keras' default), 'same', or numbers
-- as nn.DepthwiseConv1d takes them. See fastnn/nn/_keras.lua.
return require('fastnn.nn._keras').conv('DepthwiseConv1D', 'DepthwiseConv1d', 1, 'depthwise')
