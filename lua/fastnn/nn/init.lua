-- fastnn.nn: modules, layers and losses.
--   local nn = require 'fastnn.nn'
--   local model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
--   local loss = nn.cross_entropy(model(x), targets)
-- Classes live one per file in lua/fastnn/nn/<Name>.lua and load on first use
-- (`nn.Linear` requires fastnn.nn.Linear), so there is no list to keep; the Keras spellings that
-- would differ from another file's name only by case (Conv2D, UpSampling2D) are in nn/_keras_names.lua.
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

-- classes by name, loaded on first use: the Keras spellings that differ from a file's name only by
-- case from their table (nn/_keras_names.lua), checked first, since a case-insensitive file system
-- would find Conv2d.lua for Conv2D; the others from their file
local keras_names = require 'fastnn.nn._keras_names'
nn._keras_names = {}
for name in pairs(keras_names) do nn._keras_names[#nn._keras_names + 1] = name end
table.sort(nn._keras_names)
setmetatable(nn, {__index = function(t, name)
   if type(name) ~= 'string' or not name:match('^%a[%w_]*$') then return nil end
   if keras_names[name] then
      local cls = keras_names[name]()
      rawset(t, name, cls)
      return cls
   end
   local modname = 'fastnn.nn.' .. name
   if not package.loaded[modname] and not package.searchpath(modname, package.path) then return nil end
   local cls = require(modname)
   rawset(t, name, cls)
   return cls
end})

package.loaded['fastnn.nn'] = nn
return nn
