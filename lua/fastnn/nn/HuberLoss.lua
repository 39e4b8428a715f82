-- nn.HuberLoss{delta = 1, reduction = 'mean'} (or nn.HuberLoss(delta)): crit(pred, target) = nn.huber,
-- 0.5 d^2 where |d| < delta, else delta (|d| - delta / 2); 'mean' divides by the element count.
return require('fastnn.nn._loss')('HuberLoss', 'huber', {options = {'delta', 'reduction'}, positional = 'delta'})
