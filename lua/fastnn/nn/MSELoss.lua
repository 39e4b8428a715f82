-- nn.MSELoss{reduction = 'mean'}: crit(pred, target) = nn.mse; 'mean' divides by the element count.
return require('fastnn.nn._loss')('MSELoss', 'mse', {options = {'reduction'}})
