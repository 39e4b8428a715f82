-- nn.BinaryCrossEntropy{from_logits = false, label_smoothing = 0, reduction = 'sum_over_batch_size'}
-- (Keras): probabilities clipped to [1e-7, 1 - 1e-7] (or logits with from_logits), averaged over the
-- last dim per sample, then over the samples; 'none' gives the per-sample losses.
return require('fastnn.nn._loss')('BinaryCrossEntropy', 'keras_bce',
                                  {options = {'from_logits', 'label_smoothing', 'reduction'}, keras = true})
