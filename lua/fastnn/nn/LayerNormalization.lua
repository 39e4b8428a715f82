-- nn.LayerNormalization({epsilon = 1e-5}) (Keras, axis -1): an nn.LayerNorm over the last dim,
-- whose width is read at build. Parameters weight/bias [width].
local nn = require 'fastnn.nn'
local K = require 'fastnn.nn._keras'

local OPTS = require('fastnn.options').declare('nn.LayerNormalization', {
   {'epsilon', 'number', nil, 'added to the variance', min = 0, default_doc = '1e-5'},
   {'eps', 'number', nil, "PyTorch's name of epsilon", min = 0, default_doc = '1e-5'},
   {'axis', 'integer', -1, 'the normalised dim: only -1 (the last) is supported'},
})

return K.class('LayerNormalization', {
   parse = function(self, opts)
      opts = OPTS:check(opts, 4)
      if opts.axis ~= nil and opts.axis ~= -1 then
         error(('nn.LayerNormalization: axis %s is not supported (only -1, the last dim)'):format(
            tostring(opts.axis)), 4)
      end
      self._opts = {eps = opts.epsilon or opts.eps}
      K.set_activation(self, 'LayerNormalization', nil, 4)
   end,
   make = function(self, s) return nn.LayerNorm(s[#s], self._opts) end,
   describe = function(self)
      local inner = rawget(self, 'inner')
      return inner and tostring(inner.shape[1]) or ''
   end,
})
