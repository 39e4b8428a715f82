-- nn.GlobalAveragePooling2D({keepdims = false}) (Keras): the same class as nn.GlobalAvgPool2d.
return require('fastnn.nn').GlobalAvgPool2d
