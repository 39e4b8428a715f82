-- nn.Subtract(): a - b for exactly two inputs of one shape (a merge layer, see _merge.lua)
return require('fastnn.nn._merge').elementwise('Subtract', 2)
