-- nn.Average(): the element-wise mean of two or more inputs of one shape (a merge layer, see _merge.lua)
return require('fastnn.nn._merge').elementwise('Average')
