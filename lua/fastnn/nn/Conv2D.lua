-- nn.Conv2D(filters, kernel_size, {strides = 1, padding = 'valid', dilation_rate = 1,
--    groups = 1, use_bias = true, activation})
-- (Keras): an nn.Conv2d whose input channels are read at build from dim 2 of the shape
-- that reaches it (channels first), then the activation. padding: 'valid' (Keras' default), 'same', or numbers
-- as nn.Conv2d takes them. See fastnn/nn/_keras.lua.
return require('fastnn.nn._keras').conv('Conv2D', 'Conv2d', 2, 'conv')
