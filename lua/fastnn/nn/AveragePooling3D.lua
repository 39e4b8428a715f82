-- nn.AveragePooling3D(pool_size = 2, {strides = pool_size, padding = 'valid'}) (Keras): nn.AvgPool3d
-- under Keras' names and defaults (see fastnn/nn/_keras.lua).
return require('fastnn.nn._keras').pooling('AveragePooling3D', 'AvgPool3d')
