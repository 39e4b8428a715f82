-- Shared by the regularization layers (Dropout, SpatialDropout*, AlphaDropout, GaussianNoise,
-- GaussianDropout): draws from the core's random source (so fnn.manual_seed makes them
-- reproducible) and the checks of their rates.
local fnn_tensor = require 'fastnn.tensor'
local C = fnn_tensor.C
local new, done, fail = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail

local M = {}

-- [shape] of 1 with probability keep, else 0 (plain data: no node)
function M.bernoulli(ndim, shape, keep)
   local out = new()
   if C.fnn_bernoulli(out, ndim, shape, keep) ~= 0 then fail() end
   return done(out)
end

-- [shape] drawn from N(mean, std^2)
function M.normal(ndim, shape, mean, std)
   local out = new()
   if C.fnn_normal(out, ndim, shape, mean, std) ~= 0 then fail() end
   return done(out)
end

-- t (drawn on the CPU) on the device of x, so a model moved to a GPU keeps working
function M.like(t, x)
   if x.device_ == 0 then return t end
   return t:to(x:device())
end

local function finite(v) return type(v) == 'number' and v == v and v ~= math.huge and v ~= -math.huge end

-- a rate in [0, 1), else an error naming the layer and the value at the constructor's caller
function M.check_rate(who, what, v)
   if not finite(v) or v < 0 or v >= 1 then
      error(('%s: %s is %s, expected a number in [0, 1)'):format(who, what, tostring(v)), 4)
   end
   return v
end

-- a finite number >= 0
function M.check_nonneg(who, what, v)
   if not finite(v) or v < 0 then
      error(('%s: %s is %s, expected a non-negative number'):format(who, what, tostring(v)), 4)
   end
   return v
end

return M
