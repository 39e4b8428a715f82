-- nn.GlobalMaxPooling3D({keepdims = false}) (Keras): the same class as nn.GlobalMaxPool3d.
return require('fastnn.nn').GlobalMaxPool3d
