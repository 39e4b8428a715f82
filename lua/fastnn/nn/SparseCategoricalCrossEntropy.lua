-- nn.SparseCategoricalCrossEntropy{from_logits = false, ignore_class, reduction = 'sum_over_batch_size'}
-- (Keras): crit(pred, ids) = nn.sparse_categorical_cross_entropy with 1-based ids, classes along the
-- last dim; averaged over the samples not ignored.
return require('fastnn.nn._loss')('SparseCategoricalCrossEntropy', 'sparse_categorical_cross_entropy',
                                  {options = {'from_logits', 'ignore_class', 'reduction'}, keras = true})
