-- nn.BatchNormalization({momentum = 0.1, epsilon = 1e-5, center, scale}) (Keras): batch
-- normalization over the channels (dim 2) of whatever reaches it, read at build: [N, C] and
-- [N, C, L] give an nn.BatchNorm1d(C), [N, C, H, W] a BatchNorm2d, [N, C, D, H, W] a BatchNorm3d.
-- momentum keeps PyTorch's meaning (running = (1 - momentum) running + momentum batch), so Keras'
-- 0.99 is 0.01 here. Parameters weight/bias [C], buffers running_mean/running_var [C].
local nn = require 'fastnn.nn'
local K = require 'fastnn.nn._keras'

local KINDS = {[2] = 'BatchNorm1d', [3] = 'BatchNorm1d', [4] = 'BatchNorm2d', [5] = 'BatchNorm3d'}

local OPTS = require('fastnn.options').declare('nn.BatchNormalization', {
   {'momentum', 'number|boolean', 0.1, "PyTorch's meaning: running = (1 - momentum) running + momentum batch (Keras' 0.99 is 0.01)",
    min = 0, max = 1},
   {'epsilon', 'number', nil, 'added to the variance', min = 0, default_doc = '1e-5'},
   {'eps', 'number', nil, "PyTorch's name of epsilon", min = 0, default_doc = '1e-5'},
   {'center', 'boolean', true, 'learn a bias (center and scale false together: no affine parameters)'},
   {'scale', 'boolean', true, 'learn a weight (see center)'},
   {'affine', 'boolean', true, "PyTorch's switch for both"},
})

return K.class('BatchNormalization', {
   parse = function(self, opts)
      opts = OPTS:check(opts, 4)
      self._opts = {momentum = opts.momentum, eps = opts.epsilon or opts.eps,
                    affine = not (opts.center == false and opts.scale == false) and opts.affine ~= false}
      K.set_activation(self, 'BatchNormalization', nil, 4)
   end,
   make = function(self, s)
      local kind = KINDS[#s]
      if not kind then
         error(('nn.BatchNormalization: build: input shape [%s] must be [N, C], [N, C, L], [N, C, H, W] or '
                .. '[N, C, D, H, W]'):format(table.concat(s, ',')), 0)
      end
      return nn[kind](s[2], self._opts)
   end,
   describe = function(self)
      local inner = rawget(self, 'inner')
      return inner and tostring(inner.num_features) or ''
   end,
})
