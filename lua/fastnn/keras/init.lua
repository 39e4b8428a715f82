-- fastnn.keras: the Keras-style face of fastnn.nn, a layer above it (nn requires nothing from
-- here). Loading it (fnn.nn does) adds to nn:
--   nn.Sequential and nn.Graph: build, output_shape, compile, fit, train_batch, evaluate, predict,
--       summary, ... (keras/sequential.lua, keras/graph.lua, keras/model.lua), once each class loads;
--   nn.callbacks: fit's callbacks (EarlyStopping, ModelCheckpoint, LearningRateScheduler,
--       ReduceLROnPlateau, CSVLogger, LambdaCallback, Callback);
--   nn.metrics: Keras-style metrics (accuracy variants, top-k, mse, mae, precision, recall, F1, AUC,
--       Mean/Average; nn.metrics.Average is a metric, nn.Average the merge layer).
local nn = require 'fastnn.nn'

nn._extend('Sequential', function(cls) require('fastnn.keras.sequential').install(cls) end)
nn._extend('Graph', function(cls) require('fastnn.keras.graph').install(cls) end)
nn._provide('callbacks', 'fastnn.keras.callbacks')
nn._provide('metrics', 'fastnn.keras.metrics')

return nn
