-- nn.NLLLoss{weight, ignore_index = -100, reduction = 'mean'}: crit(log_probs, ids) = nn.nll,
-- -weight[y] log_probs[y] per site, averaged as nn.CrossEntropyLoss.
return require('fastnn.nn._loss')('NLLLoss', 'nll', {options = {'weight', 'ignore_index', 'reduction'},
                                                      positional = 'weight'})
