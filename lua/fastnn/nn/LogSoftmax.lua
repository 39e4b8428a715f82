-- nn.LogSoftmax(dim = -1) or nn.LogSoftmax{dim = -1}: x - logsumexp(x) along dim (1-based,
-- negatives from the end). x any shape -> same shape.
return require('fastnn.nn._softmax')('LogSoftmax', 'log_softmax')
