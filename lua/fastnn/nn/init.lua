-- fastnn.nn: modules, layers and losses.
--   local nn = require 'fastnn.nn'
--   local model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
--   local loss = nn.cross_entropy(model(x), targets)
-- Classes live one per file in lua/fastnn/nn/<Name>.lua and load on first use
-- (`nn.Linear` requires fastnn.nn.Linear), so there is no list to keep.
local fnn_tensor = require 'fastnn.tensor'
local autograd = require 'fastnn.autograd'
local C = fnn_tensor.C
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor

local nn = {}
nn.Param = autograd.Param

-- ---------------------------------------------------------------------------
-- loss functions (nn.mse, nn.cross_entropy, ...): lua/fastnn/nn/losses.lua
for k, v in pairs(require 'fastnn.nn.losses') do
   if not k:match('^_') then nn[k] = v end
end

-- nn.scoped('inner', m:named_parameters()) -> the same pairs named 'inner.<name>'
function nn.scoped(prefix, named)
   if type(prefix) ~= 'string' then error('scoped: prefix must be a string', 2) end
   if type(named) ~= 'table' then error('scoped: expected an array of {name, param} pairs', 2) end
   local out = {}
   for i, pair in ipairs(named) do
      out[i] = {prefix .. '.' .. pair[1], pair[2]}
   end
   return out
end

-- classes by name, loaded on first use
setmetatable(nn, {__index = function(t, name)
   if type(name) ~= 'string' or not name:match('^%a[%w_]*$') then return nil end
   local modname = 'fastnn.nn.' .. name
   if not package.loaded[modname] and not package.searchpath(modname, package.path) then return nil end
   local cls = require(modname)
   rawset(t, name, cls)
   return cls
end})

package.loaded['fastnn.nn'] = nn
return nn
