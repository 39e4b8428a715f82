-- nn.BCEWithLogitsLoss{weight, pos_weight, reduction = 'mean'}: crit(logits, target) = nn.bce_with_logits,
-- stable for any logit; pos_weight (e.g. [C] for [N, C]) scales the positive term; 'mean' divides by
-- the element count.
return require('fastnn.nn._loss')('BCEWithLogitsLoss', 'bce_with_logits',
                                  {options = {'weight', 'pos_weight', 'reduction'}, positional = 'weight'})
