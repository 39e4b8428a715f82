-- Shared by the regularization layers (Dropout, SpatialDropout*, AlphaDropout, GaussianNoise,
-- GaussianDropout): draws from the core's random source (so fnn.manual_seed makes them
-- reproducible) and the checks of their rates.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local C = fnn_tensor.C
local new, done, fail = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail

local M = {}

-- Each draw lands on the device of `like` (the layer's input): on a GPU it is drawn there
-- (cuRAND, core/random.c), so a model moved to a GPU copies no mask per step.

-- [shape] of 1 with probability keep, else 0 (plain data: no node)
function M.bernoulli(ndim, shape, keep, like)
   local out = new()
   local rc = like.device_ == 0 and C.fnn_bernoulli(out, ndim, shape, keep)
                                 or C.fnn_bernoulli_on(out, like.device_, ndim, shape, keep)
   if rc ~= 0 then fail() end
   return done(out)
end

-- [shape] drawn from N(mean, std^2)
function M.normal(ndim, shape, mean, std, like)
   local out = new()
   local rc = like.device_ == 0 and C.fnn_normal(out, ndim, shape, mean, std)
                                 or C.fnn_normal_on(out, like.device_, ndim, shape, mean, std)
   if rc ~= 0 then fail() end
   return done(out)
end

local function finite(v) return type(v) == 'number' and v == v and v ~= math.huge and v ~= -math.huge end

-- a rate in [0, 1), else an error naming the layer and the value at the constructor's caller
function M.check_rate(who, what, v)
   if not finite(v) or v < 0 or v >= 1 then
      error(('%s: %s is %s, expected a number in [0, 1)'):format(who, what, show_value(v)), 4)
   end
   return v
end

-- a finite number >= 0
function M.check_nonneg(who, what, v)
   if not finite(v) or v < 0 then
      error(('%s: %s is %s, expected a non-negative number'):format(who, what, show_value(v)), 4)
   end
   return v
end

return M
