-- fastnn.ops.linalg: bindings for core/ops/linalg.c.
--   a:matmul(b)        PyTorch rules: 1-D . 1-D -> 0-dim dot; a 1-D side is a row (left) or a
--                      column (right) whose added dim is dropped; batch dims broadcast
--   a:bmm(b)           [B,n,k] x [B,k,m] -> [B,n,m], no broadcasting
--   a:outer(b)         [n] x [m] -> [n,m]
--   fnn.linear(x, w, b, opts)  x [..., in], w [out, in], b [out] or nil -> [..., out] (one node);
--                      opts.activation = 'relu' | 'gelu' (the exact erf GELU) applies it in the same
--                      node (Keras's Dense(units, activation)): the values and gradients of
--                      fnn.linear(x, w, b):relu() / :gelu(), with no pass of their own
--                      (fnn.linear(x, w, opts) without a bias)
-- Each is also fnn.<name>(a, b).
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail, is_tensor = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local M = {}

-- raised at the user's line: 1 here, 2 the binding, 3 its caller
local check_tensor = fnn_tensor.check_tensor
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped

for _, name in ipairs{'matmul', 'bmm', 'outer'} do
   local cfn = C['fnn_' .. name]
   Tensor[name] = function(a, b, extra)
      if extra ~= nil then too_many(name, 3, extra, 'a, b') end
      check_tensor(name, a, 'argument 1')
      check_tensor(name, b, 'argument 2')
      local out = new()
      if cfn(out, a, b) ~= 0 then fail() end
      return done(out)
   end
   M[name] = Tensor[name]
end

local LINEAR_OPTS = require('fastnn.options').declare('fnn.linear', {
   {'activation', 'string', nil, "applied in the same node: 'relu' or 'gelu' (exact, through erf); nil: none",
    values = {'relu', 'gelu'}},
})
local fnn_linear = C.fnn_linear_act
function M.linear(x, w, b, opts, extra)
   if extra ~= nil then too_many('linear', 5, extra, 'x, w, b, opts') end
   check_tensor('linear', x, 'input')
   check_tensor('linear', w, 'weight')
   if type(b) == 'table' and not is_tensor(b) then   -- linear(x, w, opts): nothing after the options
      if opts ~= nil then too_many('linear', 4, opts, 'x, w, opts', 2, 'the options come last') end
      b, opts = nil, b
   end
   if b ~= nil then check_tensor('linear', b, 'bias') end
   local act = opts ~= nil and LINEAR_OPTS:check(opts, 2).activation or nil
   local out = new()
   if fnn_linear(out, x, w, b, act) ~= 0 then fail() end
   return done(out)
end
Tensor.linear = M.linear

return M
