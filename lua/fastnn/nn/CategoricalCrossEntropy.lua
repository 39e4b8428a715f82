-- nn.CategoricalCrossEntropy{from_logits = false, label_smoothing = 0, axis = -1,
-- reduction = 'sum_over_batch_size'} (Keras): crit(pred, onehot) = nn.categorical_cross_entropy,
-- -sum_c t_c log p_c per sample, averaged over the samples.
return require('fastnn.nn._loss')('CategoricalCrossEntropy', 'categorical_cross_entropy',
                                  {options = {'from_logits', 'label_smoothing', 'axis', 'reduction'}, keras = true})
