-- data.TensorDataset(inputs, targets): item i is row i of each tensor (dim 1).
--   inputs [N, ...]; targets [N, ...], a Lua array of N numbers, or nil.
-- DataLoader batches it with one C call per tensor (take), on its background thread with prefetch(k).
local fnn_tensor = require 'fastnn.tensor'
local C = fnn_tensor.C
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local fnn_take_rows = C.fnn_take_rows
local too_many = fnn_tensor.too_many

local TensorDataset = require('fastnn.class')('TensorDataset')
function TensorDataset.__new(cls, inputs, targets, extra)
   if extra ~= nil then too_many('data.TensorDataset', 3, extra, 'inputs, targets') end
   if not istype(inputs) then
      error(('TensorDataset: inputs is a %s, expected a tensor'):format(type(inputs)), 2)
   end
   if inputs.ndim < 1 then error('TensorDataset: inputs is a 0-dim tensor; expected [N, ...]', 2) end
   if type(targets) == 'table' then targets = fnn_tensor.tensor(targets) end
   local n = tonumber(inputs.shape_[0])
   if targets ~= nil then
      if not istype(targets) then
         error(('TensorDataset: targets is a %s, expected a tensor or a Lua array'):format(type(targets)), 2)
      end
      if targets.ndim < 1 or tonumber(targets.shape_[0]) ~= n then
         error(('TensorDataset: inputs %s and targets %s differ in dim 1'):format(
            fnn_tensor.shape_str(inputs), fnn_tensor.shape_str(targets)), 2)
      end
   end
   return setmetatable({inputs = inputs, targets = targets, n = n}, cls)
end

function TensorDataset:len(extra)
   if extra ~= nil then too_many('TensorDataset:len', 2, extra, 'dataset') end
   return self.n
end

-- item i (1-based): input row, target row (a number when targets are 1-D)
function TensorDataset:get(i, extra)
   if extra ~= nil then too_many('TensorDataset:get', 3, extra, 'dataset, i') end
   if type(i) ~= 'number' or i ~= math.floor(i) or i < 1 or i > self.n then
      error(('TensorDataset:get: index %s outside 1..%d'):format(tostring(i), self.n), 2)
   end
   local x = self.inputs:select(1, i)
   local t = self.targets
   if t == nil then return x end
   if t.ndim == 1 then return x, t[i] end
   return x, t:select(1, i)
end

-- take(n, ids): rows ids[0..n-1] (an int64_t buffer of 1-based ids) of inputs and targets
function TensorDataset:take(n, ids, extra)
   if extra ~= nil then too_many('TensorDataset:take', 4, extra, 'dataset, n, ids') end
   local x = new()
   if fnn_take_rows(x, self.inputs, n, ids) ~= 0 then fail() end
   x = done(x)
   local t = self.targets
   if t == nil then return x end
   local y = new()
   if fnn_take_rows(y, t, n, ids) ~= 0 then fail() end
   return x, done(y)
end

-- what DataLoader's background thread needs to make batches without Lua: rows of these tensors
function TensorDataset:prefetch_source(extra)
   if extra ~= nil then too_many('TensorDataset:prefetch_source', 2, extra, 'dataset') end
   return C.FNN_PREFETCH_ROWS, self.inputs, self.targets, 0, 0
end

function TensorDataset:__tostring()
   return ('data.TensorDataset(%d items, inputs %s%s)'):format(self.n, fnn_tensor.shape_str(self.inputs),
      self.targets and (', targets ' .. fnn_tensor.shape_str(self.targets)) or '')
end

return TensorDataset
