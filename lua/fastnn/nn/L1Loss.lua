-- nn.L1Loss{reduction = 'mean'}: crit(pred, target) = nn.mae, |pred - target|; 'mean' divides by the element count.
return require('fastnn.nn._loss')('L1Loss', 'mae', {options = {'reduction'}})
