-- nn.MaxPooling1D(pool_size = 2, {strides = pool_size, padding = 'valid'}) (Keras): nn.MaxPool1d
-- under Keras' names and defaults (see fastnn/nn/_keras.lua).
return require('fastnn.nn._keras').pooling('MaxPooling1D', 'MaxPool1d')
