-- nn.CrossEntropyLoss{weight, ignore_index = -100, label_smoothing = 0, reduction = 'mean'} (or
-- nn.CrossEntropyLoss(weight)): crit(logits, ids) = nn.cross_entropy, logits [N, C] (or [N, C, d...])
-- and 1-based class ids. 'mean' divides by the number of counted sites, or by the sum of weight[y]
-- over them when weight is given (a weighted mean); ids equal to ignore_index are not counted.
return require('fastnn.nn._loss')('CrossEntropyLoss', 'cross_entropy',
   {options = {'weight', 'ignore_index', 'label_smoothing', 'reduction'}, positional = 'weight'})
