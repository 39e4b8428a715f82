-- nn.MeanSquaredError{reduction = 'sum_over_batch_size'} (Keras): the squared error averaged over
-- the last dim per sample, then over the samples (the mean of every element); 'none' gives the
-- per-sample losses, 'sum' their sum.
return require('fastnn.nn._loss')('MeanSquaredError', 'keras_mse', {options = {'reduction'}, keras = true})
