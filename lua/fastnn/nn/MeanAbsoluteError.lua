-- nn.MeanAbsoluteError{reduction = 'sum_over_batch_size'} (Keras): |pred - target| averaged over the
-- last dim per sample, then over the samples; 'none' gives the per-sample losses, 'sum' their sum.
return require('fastnn.nn._loss')('MeanAbsoluteError', 'keras_mae', {options = {'reduction'}, keras = true})
