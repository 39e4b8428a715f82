-- common.datasets: the 28x28 image sets the examples train on, and slices of them.
--   local train, test, name = datasets.load(opts.dataset)   -- 'mnist' (falls back) or 'fashion'
--   datasets.head(ds, 2000)                  -- the first 2000 items (a --quick run)
--   datasets.split(ds, 5000)                 -- train, validation: the last 5000 items held out
--   datasets.only(ds, {6, 7, 8, 9, 10})      -- the items of these classes, relabelled 1..5
-- Items are [1, 28, 28] in [0, 1]; targets are int64 class ids 1..10.
local fnn = require 'fastnn'
local data = fnn.data

local M = {}

-- MNIST (downloaded once into data.dir(), then cached); when that fails, Fashion-MNIST from the
-- Debian package dataset-fashion-mnist, saying so. Returns train, test and the set's name.
function M.load(which)
   which = which or 'mnist'
   if which == 'mnist' then
      local train, err = data.Mnist.try_load('train', {progress = 'line', connect_timeout = 10})
      local test, err2
      if train then test, err2 = data.Mnist.try_load('test', {progress = 'line', connect_timeout = 10}) end
      if train and test then return train, test, 'MNIST' end
      local why = (err or err2):match('^[^\n]*')
      if #why > 100 then why = why:sub(1, 97) .. '...' end
      print(('MNIST is not available (%s):'):format(why))
      print('using Fashion-MNIST from the Debian package dataset-fashion-mnist instead')
   elseif which ~= 'fashion' then
      error(("datasets.load: dataset is '%s', expected 'mnist' or 'fashion'"):format(tostring(which)), 2)
   end
   return data.FashionMnist.load('train'), data.FashionMnist.load('test'), 'Fashion-MNIST'
end

local function subset(ds, x, y)
   local out = data.TensorDataset(x, y)
   out.classes = ds.classes
   return out
end

function M.head(ds, n)
   n = math.min(n, ds:len())
   return subset(ds, ds.inputs:narrow(1, 1, n), ds.targets:narrow(1, 1, n))
end

function M.split(ds, held_out)
   local n = ds:len() - held_out
   return subset(ds, ds.inputs:narrow(1, 1, n), ds.targets:narrow(1, 1, n)),
          subset(ds, ds.inputs:narrow(1, n + 1, held_out), ds.targets:narrow(1, n + 1, held_out))
end

-- the items whose class is in `classes` (a list of ids), relabelled by position in that list
function M.only(ds, classes)
   local position = {}
   for i, c in ipairs(classes) do position[c] = i end
   local ids, labels = {}, {}
   for i, t in ipairs(ds.targets:to_table()) do
      if position[t] then
         ids[#ids + 1] = i
         labels[#labels + 1] = position[t]
      end
   end
   local out = data.TensorDataset(ds.inputs:index_select(1, fnn.long(ids)), fnn.long(labels))
   if ds.classes then
      out.classes = {}
      for i, c in ipairs(classes) do out.classes[i] = ds.classes[c] end
   end
   return out
end

return M
