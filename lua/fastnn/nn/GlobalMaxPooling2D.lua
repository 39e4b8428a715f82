-- nn.GlobalMaxPooling2D({keepdims = false}) (Keras): the same class as nn.GlobalMaxPool2d.
return require('fastnn.nn').GlobalMaxPool2d
