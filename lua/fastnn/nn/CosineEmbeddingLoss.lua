-- nn.CosineEmbeddingLoss{margin = 0, reduction = 'mean'} (or nn.CosineEmbeddingLoss(margin)):
-- crit(x1, x2, y) = nn.cosine_embedding with y = 1 (similar: 1 - cos) or -1 (dissimilar:
-- max(0, cos - margin)) per row; 'mean' divides by the number of pairs.
return require('fastnn.nn._loss')('CosineEmbeddingLoss', 'cosine_embedding',
                                  {options = {'margin', 'reduction'}, positional = 'margin', inputs = 3})
