-- nn.LayerNormalization({epsilon = 1e-5}) (Keras, axis -1): an nn.LayerNorm over the last dim,
-- whose width is read at build. Parameters weight/bias [width].
local nn = require 'fastnn.nn'
local K = require 'fastnn.nn._keras'

return K.class('LayerNormalization', {
   parse = function(self, opts)
      opts = K.check_opts('LayerNormalization', opts, 4)
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
