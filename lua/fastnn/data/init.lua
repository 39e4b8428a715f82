-- fastnn.data: datasets and batching.
--   local ds = data.FashionMnist.load('train')          -- a TensorDataset, inputs [N,1,28,28]
--   for batch in data.DataLoader(ds, 128):shuffle(true):iter() do ... batch.inputs, batch.targets ... end
-- A dataset is a table with len() and either get(i) -> input, target or the
-- fast write(i, input_slot, target_slot) (see DataLoader.lua). Classes live one
-- per file in lua/fastnn/data/<Name>.lua and load on first use.
local data = {}

setmetatable(data, {__index = function(t, name)
   if type(name) ~= 'string' or not name:match('^%a[%w_]*$') then return nil end
   local modname = 'fastnn.data.' .. name
   if not package.loaded[modname] and not package.searchpath(modname, package.path) then return nil end
   local cls = require(modname)
   rawset(t, name, cls)
   return cls
end})

package.loaded['fastnn.data'] = data
return data
