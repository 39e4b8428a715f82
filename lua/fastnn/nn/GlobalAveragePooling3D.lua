-- nn.GlobalAveragePooling3D({keepdims = false}) (Keras): the same class as nn.GlobalAvgPool3d.
return require('fastnn.nn').GlobalAvgPool3d
