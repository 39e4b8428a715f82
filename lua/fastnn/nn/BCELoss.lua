-- nn.BCELoss{weight, reduction = 'mean'}: crit(probs, target) = nn.binary_cross_entropy on probabilities
-- in [0, 1] (others refused); weight broadcasts to the input; 'mean' divides by the element count.
return require('fastnn.nn._loss')('BCELoss', 'binary_cross_entropy',
                                  {options = {'weight', 'reduction'}, positional = 'weight'})
