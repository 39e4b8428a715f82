-- nn.HardSigmoid(): relu6(x + 3) / 6, PyTorch's Hardsigmoid (0 below -3, 1 above 3);
-- x any shape -> same shape.
return require('fastnn.nn._activation')('HardSigmoid', 'fnn_hardsigmoid')
