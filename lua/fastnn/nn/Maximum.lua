-- nn.Maximum(): the element-wise maximum of two or more inputs of one shape (a merge layer, see _merge.lua)
return require('fastnn.nn._merge').elementwise('Maximum')
