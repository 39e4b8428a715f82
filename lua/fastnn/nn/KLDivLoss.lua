-- nn.KLDivLoss{reduction = 'mean', log_target = false}: crit(log_q, p) = nn.kl_div, p (log p - log_q)
-- pointwise (PyTorch). 'mean' divides by the element count, 'batchmean' by the batch size (the
-- true KL divergence per sample).
return require('fastnn.nn._loss')('KLDivLoss', 'kl_div', {options = {'reduction', 'log_target'},
                                                          extra_reduction = 'batchmean'})
