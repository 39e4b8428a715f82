-- nn.metrics: Keras-style metrics (accuracy variants, top-k, mse, mae, precision, recall, F1, AUC,
-- Mean/Average): fastnn/keras/metrics.lua. nn.metrics.Average is a metric; nn.Average is the merge layer.
return require 'fastnn.keras.metrics'
