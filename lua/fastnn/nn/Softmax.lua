-- nn.Softmax(dim = -1) or nn.Softmax{dim = -1}: exp(x) / sum(exp(x)) along dim (1-based, negatives
-- from the end). x any shape -> same shape.
return require('fastnn.nn._softmax')('Softmax', 'softmax')
