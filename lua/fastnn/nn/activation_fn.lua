-- nn.activation_fn(name[, level[, who]]) -> function(x): the activation named `name` ('relu', 'gelu',
-- 'softmax', 'linear', ...; nil is the identity), for layers that fold an activation into
-- themselves (nn.Dense(16, 'relu')). An unknown name raises an error listing the known ones, at
-- the caller's line (level as error()'s, counted from the caller: Dense:__init passes 3, 'nn.Dense').
return require('fastnn.nn._activation').fn
