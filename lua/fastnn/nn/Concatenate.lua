-- nn.Concatenate(dim = -1): inputs equal outside dim joined along it (a merge layer, see _merge.lua)
return require('fastnn.nn._merge').concatenate('Concatenate')
