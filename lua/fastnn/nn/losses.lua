-- fastnn.nn.losses (nn.losses): nn's face of the losses, whose functions all live in fastnn.ops.loss.
-- It holds the loss functions under nn's names (nn.mse, nn.cross_entropy, ...: fastnn.ops.loss's
-- functional table, which fastnn.nn also merges into nn) and the loss modules (nn.MSELoss,
-- nn.CrossEntropyLoss, nn.MeanSquaredError, ...): each applies one of those functions with the
-- options it was made with.
--   local crit = nn.CrossEntropyLoss{label_smoothing = 0.1}
--   local loss = crit(logits, ids)            -- or crit:forward(logits, ids)
--   print(crit)                               --> nn.CrossEntropyLoss(label_smoothing=0.1)
-- A loss is a Module without parameters; tensor options (weight, pos_weight) are buffers, so
-- to_device moves them. The Loss base class has the methods; each class below names its
-- function and a spec:
--   options     option names, in print order
--   positional  the option a non-table argument sets (nn.HuberLoss(2) is delta = 2)
--   keras       accept Keras's reduction names ('sum_over_batch_size' = 'mean', the default)
--   extra_reduction  one more reduction the function takes ('batchmean' for KLDivLoss)
local nn = require 'fastnn.nn'
local fnn_tensor = require 'fastnn.tensor'
local loss = require 'fastnn.ops.loss'
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

local M = {}
for k, f in pairs(loss.functional) do M[k] = f end

local Loss = nn.Module:extend('Loss')

function Loss:__init(opts)
   local name, spec = self._title, self._spec
   -- errors at the user's line: 1 here, 2 the class's __call, 3 the caller
   if opts ~= nil and type(opts) ~= 'table' then
      if not spec.positional then
         error(('nn.%s: options must be a table, got a %s'):format(name, type(opts)), 3)
      end
      opts = {[spec.positional] = opts}
   end
   local o = {}
   for k, v in pairs(self._OPTS:check(opts, 3)) do o[k] = v end   -- a plain copy: the loss function reads it
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
function Loss:forward(pred, target)
   local o = self._opts
   if o.weight ~= nil then o.weight = self.weight end            -- moved by to_device
   if o.pos_weight ~= nil then o.pos_weight = self.pos_weight end
   return self._fn(pred, target, o, 2)
end

function Loss:__tostring()
   local parts = {}
   for _, k in ipairs(self._spec.options) do
      local v = self._opts[k]
      if v ~= nil then parts[#parts + 1] = k .. '=' .. show(TENSOR_OPTS[k] and self[k] or v) end
   end
   return ('nn.%s(%s)'):format(self._title, table.concat(parts, ', '))
end

-- a Loss subclass named name applying fastnn.ops.loss's _impl[fn_name], its options declared from spec
local function loss_class(name, fn_name, spec)
   local cls = Loss:extend(name)
   cls._title, cls._spec, cls._fn = name, spec, loss._impl[fn_name]
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
   cls._OPTS = options.declare('nn.' .. name, entries)
   M[name] = cls
   return cls
end

-- nn.MSELoss{reduction = 'mean'}: crit(pred, target) = nn.mse; 'mean' divides by the element count.
local MSELoss = loss_class('MSELoss', 'mse', {options = {'reduction'}})

-- nn.L1Loss{reduction = 'mean'}: crit(pred, target) = nn.mae, |pred - target|; 'mean' divides by the element count.
local L1Loss = loss_class('L1Loss', 'mae', {options = {'reduction'}})

-- nn.HuberLoss{delta = 1, reduction = 'mean'} (or nn.HuberLoss(delta)): crit(pred, target) = nn.huber,
-- 0.5 d^2 where |d| < delta, else delta (|d| - delta / 2); 'mean' divides by the element count.
local HuberLoss = loss_class('HuberLoss', 'huber', {options = {'delta', 'reduction'}, positional = 'delta'})

-- nn.BCELoss{weight, reduction = 'mean'}: crit(probs, target) = nn.binary_cross_entropy on probabilities
-- in [0, 1] (others refused); weight broadcasts to the input; 'mean' divides by the element count.
local BCELoss = loss_class('BCELoss', 'binary_cross_entropy',
   {options = {'weight', 'reduction'}, positional = 'weight'})

-- nn.BCEWithLogitsLoss{weight, pos_weight, reduction = 'mean'}: crit(logits, target) = nn.bce_with_logits,
-- stable for any logit; pos_weight (e.g. [C] for [N, C]) scales the positive term; 'mean' divides by
-- the element count.
local BCEWithLogitsLoss = loss_class('BCEWithLogitsLoss', 'bce_with_logits',
   {options = {'weight', 'pos_weight', 'reduction'}, positional = 'weight'})

-- nn.CrossEntropyLoss{weight, ignore_index = -100, label_smoothing = 0, reduction = 'mean'} (or
-- nn.CrossEntropyLoss(weight)): crit(logits, ids) = nn.cross_entropy, logits [N, C] (or [N, C, d...])
-- and 1-based class ids. 'mean' divides by the number of counted sites, or by the sum of weight[y]
-- over them when weight is given (a weighted mean); ids equal to ignore_index are not counted.
local CrossEntropyLoss = loss_class('CrossEntropyLoss', 'cross_entropy',
   {options = {'weight', 'ignore_index', 'label_smoothing', 'reduction'}, positional = 'weight'})

-- nn.NLLLoss{weight, ignore_index = -100, reduction = 'mean'}: crit(log_probs, ids) = nn.nll,
-- -weight[y] log_probs[y] per site, averaged as nn.CrossEntropyLoss.
local NLLLoss = loss_class('NLLLoss', 'nll', {options = {'weight', 'ignore_index', 'reduction'},
   positional = 'weight'})

-- nn.KLDivLoss{reduction = 'mean', log_target = false}: crit(log_q, p) = nn.kl_div, p (log p - log_q)
-- pointwise (PyTorch). 'mean' divides by the element count, 'batchmean' by the batch size (the
-- true KL divergence per sample).
local KLDivLoss = loss_class('KLDivLoss', 'kl_div', {options = {'reduction', 'log_target'},
   extra_reduction = 'batchmean'})

-- nn.CosineEmbeddingLoss{margin = 0, reduction = 'mean'} (or nn.CosineEmbeddingLoss(margin)):
-- crit(x1, x2, y) = nn.cosine_embedding with y = 1 (similar: 1 - cos) or -1 (dissimilar:
-- max(0, cos - margin)) per row; 'mean' divides by the number of pairs.
local CosineEmbeddingLoss = loss_class('CosineEmbeddingLoss', 'cosine_embedding',
   {options = {'margin', 'reduction'}, positional = 'margin'})

-- nn.MeanSquaredError{reduction = 'sum_over_batch_size'} (Keras): the squared error averaged over
-- the last dim per sample, then over the samples (the mean of every element); 'none' gives the
-- per-sample losses, 'sum' their sum.
local MeanSquaredError = loss_class('MeanSquaredError', 'keras_mse', {options = {'reduction'}, keras = true})

-- nn.MeanAbsoluteError{reduction = 'sum_over_batch_size'} (Keras): |pred - target| averaged over the
-- last dim per sample, then over the samples; 'none' gives the per-sample losses, 'sum' their sum.
local MeanAbsoluteError = loss_class('MeanAbsoluteError', 'keras_mae', {options = {'reduction'}, keras = true})

-- nn.BinaryCrossEntropy{from_logits = false, label_smoothing = 0, reduction = 'sum_over_batch_size'}
-- (Keras): probabilities clipped to [1e-7, 1 - 1e-7] (or logits with from_logits), averaged over the
-- last dim per sample, then over the samples; 'none' gives the per-sample losses.
local BinaryCrossEntropy = loss_class('BinaryCrossEntropy', 'keras_bce',
   {options = {'from_logits', 'label_smoothing', 'reduction'}, keras = true})

-- nn.CategoricalCrossEntropy{from_logits = false, label_smoothing = 0, axis = -1,
-- reduction = 'sum_over_batch_size'} (Keras): crit(pred, onehot) = nn.categorical_cross_entropy,
-- -sum_c t_c log p_c per sample, averaged over the samples.
local CategoricalCrossEntropy = loss_class('CategoricalCrossEntropy', 'categorical_cross_entropy',
   {options = {'from_logits', 'label_smoothing', 'axis', 'reduction'}, keras = true})

-- nn.SparseCategoricalCrossEntropy{from_logits = false, ignore_class, reduction = 'sum_over_batch_size'}
-- (Keras): crit(pred, ids) = nn.sparse_categorical_cross_entropy with 1-based ids, classes along the
-- last dim; averaged over the samples not ignored.
local SparseCategoricalCrossEntropy = loss_class('SparseCategoricalCrossEntropy', 'sparse_categorical_cross_entropy',
   {options = {'from_logits', 'ignore_class', 'reduction'}, keras = true})

-- two inputs and a target (the other losses take a prediction and a target)
function CosineEmbeddingLoss:forward(a, b, y)
   return self._fn(a, b, y, self._opts, 2)
end

return M
