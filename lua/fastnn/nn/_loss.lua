-- Shared maker for the loss classes (nn.MSELoss, nn.CrossEntropyLoss, nn.MeanSquaredError, ...):
-- each class file is one call naming the function of fastnn.nn.losses it applies and the options
-- it takes, in the order __tostring prints them.
--   local crit = nn.CrossEntropyLoss{label_smoothing = 0.1}
--   local loss = crit(logits, ids)            -- or crit:forward(logits, ids)
--   print(crit)                               --> nn.CrossEntropyLoss(label_smoothing=0.1)
-- A loss is a Module without parameters; tensor options (weight, pos_weight) are buffers, so
-- to_device moves them. spec fields:
--   options     option names, in print order
--   positional  the option a non-table argument sets (nn.HuberLoss(2) is delta = 2)
--   inputs      3 for losses of two inputs and a target (CosineEmbeddingLoss); 2 otherwise
--   keras       accept Keras's reduction names ('sum_over_batch_size' = 'mean', the default)
--   extra_reduction  one more reduction the function takes ('batchmean' for KLDivLoss)
local nn = require 'fastnn.nn'
local fnn_tensor = require 'fastnn.tensor'
local losses = require 'fastnn.nn.losses'
local is_tensor, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str

local options = require 'fastnn.options'
local TENSOR_OPTS = {weight = true, pos_weight = true}

-- every loss option, declared once; a class takes the ones its spec names
local ENTRIES = {
   reduction = {'reduction', 'string', 'mean', "'mean', 'sum' or 'none' over the per-element losses"},
   weight = {'weight', 'tensor|table|number', nil, 'a rescaling weight (per class, or broadcast to the prediction)'},
   pos_weight = {'pos_weight', 'tensor|table|number', nil, 'a weight of the positive term (e.g. [C] for [N, C])'},
   ignore_index = {'ignore_index', 'integer|boolean', nil, 'a target id that does not count (false: none)',
                   default_doc = '-100'},
   label_smoothing = {'label_smoothing', 'number', nil, 'mix the target with the uniform distribution by this much',
                      min = 0, max = 1, default_doc = '0'},
   delta = {'delta', 'number', nil, 'where the loss turns from quadratic to linear', min = 0, min_open = true,
            default_doc = '1'},
   margin = {'margin', 'number', nil, 'the margin for dissimilar pairs', default_doc = '0'},
   log_target = {'log_target', 'boolean', nil, 'the target is given as log-probabilities', default_doc = 'false'},
   from_logits = {'from_logits', 'boolean', nil, 'the prediction is logits, not probabilities', default_doc = 'false'},
   axis = {'axis', 'integer', nil, 'the class axis', default_doc = '-1'},
   ignore_class = {'ignore_class', 'integer', nil, 'a class id that does not count', default_doc = 'none'},
}

local function show(v)
   if is_tensor(v) then return shape_str(v) end
   if type(v) == 'string' then return "'" .. v .. "'" end
   return tostring(v)
end

return function(name, fn_name, spec)
   local cls = nn.Module:extend(name)
   local fn = losses._impl[fn_name]
   local entries = {}
   for i, k in ipairs(spec.options) do
      local e = assert(ENTRIES[k], k)
      if k == 'reduction' then
         local values = {'mean', 'sum', 'none'}
         if spec.extra_reduction then values[#values + 1] = spec.extra_reduction end
         if spec.keras then values[#values + 1] = 'sum_over_batch_size'; values[#values + 1] = 'auto' end
         e = {e[1], e[2], e[3], "'" .. table.concat(values, "', '") .. "' over the per-element losses",
              values = values}
      end
      entries[i] = e
   end
   local OPTS = options.declare('nn.' .. name, entries)

   function cls:__init(opts)
      -- errors at the user's line: 1 here, 2 the class's __call, 3 the caller
      if opts ~= nil and type(opts) ~= 'table' then
         if not spec.positional then
            error(('nn.%s: options must be a table, got a %s'):format(name, type(opts)), 3)
         end
         opts = {[spec.positional] = opts}
      end
      local o = {}
      for k, v in pairs(OPTS:check(opts, 3)) do o[k] = v end   -- a plain copy: the loss function reads it
      if spec.keras and (o.reduction == 'sum_over_batch_size' or o.reduction == 'auto') then o.reduction = nil end
      if o.reduction == 'mean' then o.reduction = nil end
      for k in pairs(TENSOR_OPTS) do
         local v = o[k]
         if v ~= nil then
            if not is_tensor(v) then v = fnn_tensor.tensor(v) end
            o[k] = v
            self:register_buffer(k, v)
         end
      end
      self._opts = o
   end

   -- tail calls: the loss functions raise at the caller's line (level 2 inside them)
   if spec.inputs == 3 then
      function cls:forward(a, b, y)
         return fn(a, b, y, self._opts, 2)
      end
   else
      function cls:forward(pred, target)
         local o = self._opts
         if o.weight ~= nil then o.weight = self.weight end            -- moved by to_device
         if o.pos_weight ~= nil then o.pos_weight = self.pos_weight end
         return fn(pred, target, o, 2)
      end
   end

   function cls:__tostring()
      local parts = {}
      for _, k in ipairs(spec.options) do
         local v = self._opts[k]
         if v ~= nil then parts[#parts + 1] = k .. '=' .. show(TENSOR_OPTS[k] and self[k] or v) end
      end
      return ('nn.%s(%s)'):format(name, table.concat(parts, ', '))
   end

   return cls
end
