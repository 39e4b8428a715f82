-- nn.callbacks: fit's callbacks (EarlyStopping, ModelCheckpoint, LearningRateScheduler,
-- ReduceLROnPlateau, CSVLogger, LambdaCallback, Callback): fastnn/keras/callbacks.lua.
return require 'fastnn.keras.callbacks'
