-- nn.metrics: Keras-style stateful metrics for compile{metrics = {...}} and for use by hand.
--   local m = nn.metrics.SparseCategoricalAccuracy()
--   m:update(logits, ids); m:update(logits2, ids2); print(m:result()); m:reset()
--   model:compile{..., metrics = {'accuracy', 'top_k_categorical_accuracy', nn.metrics.AUC()}}
-- Every metric has name, reset(), update(pred, target) and result() (a number); updates run as a
-- few tensor ops per batch (no per-element Lua) and keep running counts, so result() over many
-- batches is the figure over all their samples.
--   Accuracy            'accuracy'/'acc': picks sparse (targets one dim fewer than pred, or an
--                       int64 target of another shape), categorical (same shape, last dim > 1)
--                       or binary (same shape, last dim 1 or a 1-d pred), as Keras does
--   BinaryAccuracy{threshold = 0.5}, CategoricalAccuracy (one-hot targets),
--   SparseCategoricalAccuracy (class ids 1..C), TopKCategoricalAccuracy{k = 5},
--   SparseTopKCategoricalAccuracy{k = 5}
--   MeanSquaredError 'mse', MeanAbsoluteError 'mae'   (the mean over every element)
--   Precision, Recall, F1Score {threshold = 0.5}      binary or multi-label: pred > threshold is
--                       positive; counts over every element (micro average)
--   AUC{num_thresholds = 200}   ROC area by the trapezoid rule over evenly spaced thresholds
--                       (Keras' method); pred are probabilities, targets 0/1
--   Mean / Average      the (weighted) mean of the numbers given to update(value, weight):
--                       nn.metrics.Average, not the Average merge layer nn.Average
-- Classes are nn.metrics.<Name>(opts); nn.metrics.get(name_or_metric) resolves compile's names.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local autograd = require 'fastnn.autograd'
require 'fastnn'   -- the tensor methods below
local is_tensor, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped

local M = {}

local class = require 'fastnn.class'
local Metric = class('Metric')
M.Metric = Metric

-- Metric:extend('Name', default_name [, entries]) -> a class; Class(opts) checks opts against the
-- class's declaration (name, then its entries: fastnn.options) and runs __init(opts) then reset()
local options = require 'fastnn.options'
local THRESHOLD = {'threshold', 'number', 0.5, 'a prediction above it counts as positive'}
local K = {'k', 'integer', 5, 'a hit when the target is among the k highest scores', min = 1}

function Metric:extend(cls_name, default_name, entries, extra)
   if extra ~= nil then too_many('nn.metrics.Metric:extend', 4, extra, 'cls_name, default_name, entries') end
   local list = {{'name', 'string', default_name, 'the key in the history and in evaluate\'s table'}}
   for _, e in ipairs(entries or {}) do list[#list + 1] = e end
   local OPTS = options.declare('nn.metrics.' .. cls_name, list)
   local cls = class.extend(self, cls_name, {construct = function(c, opts, extra)
      if extra ~= nil then too_many('nn.metrics.' .. cls_name, 2, extra, 'opts') end
      opts = OPTS:check(opts, 2)
      local m = setmetatable({}, c)
      m.name = opts.name
      m:__init(opts)
      m:reset()
      return m
   end})
   cls.__tostring = function(m) return ('nn.metrics.%s(%s)'):format(cls_name, m.name) end
   cls._class = cls_name
   return cls
end
function Metric:__init() end
-- every metric's reset, update and result refuse what follows their arguments, named by the class
local function refuse(self, method, pos, v, takes)
   too_many(('nn.metrics.%s:%s'):format(rawget(getmetatable(self), '_class') or 'Metric', method), pos, v, takes, 3)
end
function Metric:reset(extra)
   if extra ~= nil then refuse(self, 'reset', 1, extra, '') end
   self.total, self.count = 0, 0
end
function Metric:result(extra)
   if extra ~= nil then refuse(self, 'result', 1, extra, '') end
   return self.count > 0 and self.total / self.count or 0
end

local function check_pair(who, pred, target)
   if not is_tensor(pred) then error(('%s: prediction is a %s, expected a tensor'):format(who, type(pred)), 3) end
   if type(target) == 'table' then target = fnn_tensor.tensor(target) end
   if not is_tensor(target) then error(('%s: target is a %s, expected a tensor'):format(who, type(target)), 3) end
   return pred:detach(), target
end

-- target reshaped like `like` when they hold the same count ([N] against [N, 1])
local function fit_shape(who, t, like, pred)
   if t:numel() ~= like:numel() then
      error(('%s: prediction %s and target %s do not agree'):format(who, shape_str(pred), shape_str(t)), 0)
   end
   if t:dim() ~= like:dim() then t = t:reshape(like:shape()) end
   return t
end

local function sum(t) return t:sum():item() end

-- ---------------------------------------------------------------------------
-- accuracies

-- cls:update(pred, target) adds counter(self, pred, target) -> hits, n (run without a graph on the
-- checked pair) to the running total and count
local function counting(cls, counter)
   function cls:update(pred, target, extra)
      if extra ~= nil then refuse(self, 'update', 3, extra, 'pred, target') end
      pred, target = check_pair(self.name, pred, target)
      local hits, n = autograd.no_grad(counter, self, pred, target)
      self.total, self.count = self.total + hits, self.count + n
   end
   return cls
end

-- ids [N, ...] 1-based against pred [N, ..., C]
local SparseCategoricalAccuracy = counting(Metric:extend('SparseCategoricalAccuracy', 'sparse_categorical_accuracy'),
   function(self, pred, target)
      local top = pred:argmax(-1)
      local t = fit_shape(self.name, target, top, pred)
      return sum(top:eq(t)), top:numel()
   end)
M.SparseCategoricalAccuracy = SparseCategoricalAccuracy

local CategoricalAccuracy = counting(Metric:extend('CategoricalAccuracy', 'categorical_accuracy'),
   function(self, pred, target)
      local t = fit_shape(self.name, target, pred, pred)
      local top = pred:argmax(-1)
      return sum(top:eq(t:argmax(-1))), top:numel()
   end)
M.CategoricalAccuracy = CategoricalAccuracy

local BinaryAccuracy = counting(Metric:extend('BinaryAccuracy', 'binary_accuracy', {THRESHOLD}),
   function(self, pred, target)
      local t = fit_shape(self.name, target, pred, pred)
      return sum(pred:gt(self.threshold):eq(t:float():gt(0.5))), pred:numel()
   end)
function BinaryAccuracy:__init(opts) self.threshold = opts.threshold end
M.BinaryAccuracy = BinaryAccuracy

-- 'accuracy': the variant is chosen from the shapes of the first batch, as Keras chooses it
local Accuracy = Metric:extend('Accuracy', 'accuracy', {THRESHOLD})
function Accuracy:__init(opts) self.threshold = opts.threshold end
function Accuracy:update(pred, target, extra)
   if extra ~= nil then refuse(self, 'update', 3, extra, 'pred, target') end
   if is_tensor(pred) and (is_tensor(target) or type(target) == 'table') and not self.kind then
      local t = is_tensor(target) and target or fnn_tensor.tensor(target)
      local same = t:dim() == pred:dim() and t:numel() == pred:numel()
      if same and pred:dim() >= 2 and pred:size(-1) > 1 then self.kind = CategoricalAccuracy
      elseif same or (t:numel() == pred:numel() and pred:dim() >= 1 and pred:size(-1) == 1) then
         self.kind = BinaryAccuracy
      else self.kind = SparseCategoricalAccuracy end
   end
   local kind = self.kind or SparseCategoricalAccuracy
   kind.update(self, pred, target)
end
M.Accuracy = Accuracy

local function topk_hits(pred, ids, k)
   local kk = math.min(k, pred:size(-1))
   local _, idx = pred:topk(kk, -1)
   return sum(idx:eq(ids:unsqueeze(-1))), ids:numel()
end

local SparseTopK = counting(
   Metric:extend('SparseTopKCategoricalAccuracy', 'sparse_top_k_categorical_accuracy', {K}),
   function(self, pred, target)
      local like = pred:select(-1, 1)
      return topk_hits(pred, fit_shape(self.name, target, like, pred):long(), self.k)
   end)
function SparseTopK:__init(opts) self.k = opts.k end
M.SparseTopKCategoricalAccuracy = SparseTopK

local TopK = counting(Metric:extend('TopKCategoricalAccuracy', 'top_k_categorical_accuracy', {K}),
   function(self, pred, target)
      local t = fit_shape(self.name, target, pred, pred)
      return topk_hits(pred, t:argmax(-1), self.k)
   end)
function TopK:__init(opts) self.k = opts.k end
M.TopKCategoricalAccuracy = TopK

-- ---------------------------------------------------------------------------
-- regression

local function error_metric(cls_name, default_name, f)
   return counting(Metric:extend(cls_name, default_name), function(self, pred, target)
      local t = fit_shape(self.name, target, pred, pred):float()
      return sum(f(pred - t)), pred:numel()
   end)
end
M.MeanSquaredError = error_metric('MeanSquaredError', 'mse', function(d) return d * d end)
M.MeanAbsoluteError = error_metric('MeanAbsoluteError', 'mae', function(d) return d:abs() end)

-- ---------------------------------------------------------------------------
-- precision, recall, F1 (confusion counts over every element)

local function confusion(cls_name, default_name, result)
   local cls = Metric:extend(cls_name, default_name, {THRESHOLD})
   function cls:__init(opts) self.threshold = opts.threshold end
   function cls:reset(extra)
      if extra ~= nil then refuse(self, 'reset', 1, extra, '') end
      self.tp, self.fp, self.fn = 0, 0, 0
   end
   function cls:update(pred, target, extra)
      if extra ~= nil then refuse(self, 'update', 3, extra, 'pred, target') end
      pred, target = check_pair(self.name, pred, target)
      local tp, fp, fn = autograd.no_grad(function()
         local t = fit_shape(self.name, target, pred, pred):float():gt(0.5)
         local p = pred:gt(self.threshold)
         local tp = sum(p * t)
         return tp, sum(p) - tp, sum(t) - tp
      end)
      self.tp, self.fp, self.fn = self.tp + tp, self.fp + fp, self.fn + fn
   end
   function cls:result(extra)
      if extra ~= nil then refuse(self, 'result', 1, extra, '') end
      return result(self)
   end
   return cls
end
local function ratio(a, b) return b > 0 and a / b or 0 end
M.Precision = confusion('Precision', 'precision', function(self) return ratio(self.tp, self.tp + self.fp) end)
M.Recall = confusion('Recall', 'recall', function(self) return ratio(self.tp, self.tp + self.fn) end)
M.F1Score = confusion('F1Score', 'f1_score', function(self)
   local p, r = ratio(self.tp, self.tp + self.fp), ratio(self.tp, self.tp + self.fn)
   return ratio(2 * p * r, p + r)
end)

-- ---------------------------------------------------------------------------
-- AUC: true and false positives at each threshold, counted by one broadcast comparison per batch

local AUC = Metric:extend('AUC', 'auc', {{'num_thresholds', 'integer', 200, 'thresholds between 0 and 1 (Keras\'s)', min = 2}})
function AUC:__init(opts)
   local n = opts.num_thresholds
   if type(n) ~= 'number' or n < 2 or n ~= math.floor(n) then
      error(('nn.metrics.AUC: num_thresholds is %s, expected a whole number >= 2'):format(show_value(n)), 3)
   end
   -- Keras' thresholds: 0 - eps, (1 .. n-2) / (n-1), 1 + eps
   local th = {-1e-7}
   for i = 1, n - 2 do th[#th + 1] = i / (n - 1) end
   th[#th + 1] = 1 + 1e-7
   self.thresholds = th
   self._th = fnn_tensor.tensor(th):reshape(1, n)
end
function AUC:reset(extra)
   if extra ~= nil then refuse(self, 'reset', 1, extra, '') end
   self.tp, self.fp, self.pos, self.neg = nil, nil, 0, 0
end
function AUC:update(pred, target, extra)
   if extra ~= nil then refuse(self, 'update', 3, extra, 'pred, target') end
   pred, target = check_pair(self.name, pred, target)
   autograd.no_grad(function()
      local t = fit_shape(self.name, target, pred, pred):float():gt(0.5):reshape(-1, 1)
      local above = pred:reshape(-1, 1):gt(self._th)            -- [M, T]
      local tp = (above * t):sum(1)
      local fp = above:sum(1) - tp
      self.tp = self.tp and self.tp + tp or tp
      self.fp = self.fp and self.fp + fp or fp
      local pos = sum(t)
      self.pos, self.neg = self.pos + pos, self.neg + t:numel() - pos
   end)
end
function AUC:result(extra)
   if extra ~= nil then refuse(self, 'result', 1, extra, '') end
   if not self.tp or self.pos == 0 or self.neg == 0 then return 0 end
   local tp, fp = self.tp:to_flat(), self.fp:to_flat()
   local area = 0
   for i = 1, #tp - 1 do   -- thresholds ascend, so the rates descend
      local tpr1, tpr2 = tp[i] / self.pos, tp[i + 1] / self.pos
      local fpr1, fpr2 = fp[i] / self.neg, fp[i + 1] / self.neg
      area = area + (fpr1 - fpr2) * (tpr1 + tpr2) / 2
   end
   return area
end
M.AUC = AUC

-- ---------------------------------------------------------------------------
-- Mean / Average of plain numbers

local Mean = Metric:extend('Mean', 'mean')
function Mean:update(value, weight, extra)
   if extra ~= nil then refuse(self, 'update', 3, extra, 'value, weight') end
   if is_tensor(value) then value = value:mean():item() end
   if type(value) ~= 'number' then error(('%s: value is a %s, expected a number'):format(self.name, type(value)), 2) end
   weight = weight or 1
   self.total, self.count = self.total + value * weight, self.count + weight
end
M.Mean = Mean
M.Average = Mean:extend('Average', 'average')

-- ---------------------------------------------------------------------------
-- names for compile{metrics = {...}}

local NAMES = {
   accuracy = M.Accuracy, acc = M.Accuracy,
   binary_accuracy = M.BinaryAccuracy, categorical_accuracy = M.CategoricalAccuracy,
   sparse_categorical_accuracy = M.SparseCategoricalAccuracy,
   top_k_categorical_accuracy = M.TopKCategoricalAccuracy,
   sparse_top_k_categorical_accuracy = M.SparseTopKCategoricalAccuracy,
   mse = M.MeanSquaredError, mean_squared_error = M.MeanSquaredError,
   mae = M.MeanAbsoluteError, mean_absolute_error = M.MeanAbsoluteError,
   precision = M.Precision, recall = M.Recall, f1 = M.F1Score, f1_score = M.F1Score, auc = M.AUC,
}
local names = {}
for k in pairs(NAMES) do names[#names + 1] = k end
table.sort(names)
M.names = names

-- get(spec, level): a fresh metric for a name (logged under that name), or the metric object
-- itself (anything with update and result)
function M.get(spec, level, extra)
   if extra ~= nil then too_many('nn.metrics.get', 3, extra, 'spec, level') end
   level = (level or 1) + 1
   if type(spec) == 'string' then
      local cls = NAMES[spec] or NAMES[spec:lower()]
      if not cls then
         error(("compile: unknown metric '%s' (known: %s)"):format(spec, table.concat(names, ', ')), level)
      end
      return cls{name = spec}
   end
   if type(spec) == 'table' and type(spec.update) == 'function' and type(spec.result) == 'function' then
      if spec.reset then spec:reset() end
      spec.name = spec.name or 'metric'
      return spec
   end
   error(("compile: a metric is a name such as 'accuracy' or an object with update and result, got a %s")
         :format(type(spec)), level)
end

return M
