-- nn.Softsign(): x / (1 + |x|); x any shape -> same shape.
return require('fastnn.nn._activation')('Softsign', 'fnn_softsign')
