-- nn.AveragePooling1D(pool_size = 2, {strides = pool_size, padding = 'valid'}) (Keras): nn.AvgPool1d
-- under Keras' names and defaults (see fastnn/nn/_keras.lua).
return require('fastnn.nn._keras').pooling('AveragePooling1D', 'AvgPool1d')
