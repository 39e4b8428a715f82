-- fastnn.nn.losses: the loss functions of nn (nn/init.lua merges them into nn). Each takes an
-- options table last; reduction = 'mean' (the default), 'sum' or 'none'. What 'mean' divides by:
--   mse, mae (= l1), huber, binary_cross_entropy, bce_with_logits, kl_div   the element count
--       (kl_div also has 'batchmean': the sum divided by the batch size, input:size(1))
--   cross_entropy, nll   the number of prediction sites (rows of [N, C], N * d... of [N, C, d...])
--       whose id is not ignore_index, or the sum of weight[y] over them when a class weight is given
--   categorical_cross_entropy, sparse_categorical_cross_entropy (Keras)   the number of samples
--       (sites: every position but the class dim, which is the last)
--   cosine_embedding   the number of pairs (rows)
-- The fused ones (cross_entropy, nll, binary_cross_entropy, bce_with_logits, mse) run in C
-- (core/ops/loss.c); the others are compositions of C ops.
--   nn.mse(pred, target, {reduction})
--   nn.mae(pred, target, {reduction}), nn.l1 the same
--   nn.huber(pred, target, {delta = 1, reduction})   0.5 d^2 where |d| < delta, else delta (|d| - delta/2)
--   nn.binary_cross_entropy(probs, target, {weight, reduction})   probabilities in [0, 1], others refused
--   nn.bce_with_logits(logits, target, {weight, pos_weight, reduction})
--   nn.cross_entropy(logits, ids, {weight, ignore_index = -100, label_smoothing = 0, reduction})
--   nn.nll(log_probs, ids, {weight, ignore_index = -100, reduction}), nn.nll_loss the same
--   nn.categorical_cross_entropy(pred, onehot, {from_logits = false, label_smoothing = 0, axis = -1, reduction})
--       Keras: probabilities are renormalized along the class axis and clipped to [1e-7, 1 - 1e-7];
--       'none' gives one loss per sample
--   nn.sparse_categorical_cross_entropy(pred, ids, {from_logits = false, ignore_class, reduction})
--       Keras: classes along the last dim, pred [N, C] with ids [N], [N, T, C] with [N, T]
--   nn.kl_div(log_q, p, {reduction, log_target = false})   PyTorch: p (log p - log_q) pointwise
--   nn.cosine_embedding(x1, x2, y, {margin = 0, reduction})   y = 1: 1 - cos; y = -1: max(0, cos - margin)
-- L._impl holds each function taking the caller's error level last (the loss classes use them).
require 'fastnn'   -- the tensor methods the compositions use
local fnn_tensor = require 'fastnn.tensor'
local ops = require 'fastnn.ops.loss'
local impl = ops._impl
local is_tensor, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str
local options, reduction_of, number_opt = impl.options, impl.reduction_of, impl.number_opt
local L = {}

local EPS = 1e-7   -- Keras's backend epsilon: probabilities are clipped to [EPS, 1 - EPS]

-- a float32 tensor argument (raised at lvl + 1, like every helper here)
local function float_arg(op, t, what, lvl)
   if not is_tensor(t) then
      error(('%s: %s is a %s, expected a tensor'):format(op, what, type(t)), lvl + 1)
   end
   if t.dtype_ ~= 0 then
      error(('%s: %s is an %s tensor %s, expected float32; convert it with :float()'):format(
         op, what, t:dtype(), shape_str(t)), lvl + 1)
   end
end

-- compared in the header, without making strings (these run on every training step)
local function same_shape(op, a, b, aname, bname, lvl)
   local same = a.ndim == b.ndim
   for d = 0, a.ndim - 1 do
      if not same then break end
      same = a.shape_[d] == b.shape_[d]
   end
   if not same then
      error(('%s: %s %s and %s %s differ in shape'):format(op, aname, shape_str(a), bname, shape_str(b)), lvl + 1)
   end
end

local function reduce(l, r)
   if r == 'none' then return l end
   if r == 'sum' then return l:sum() end
   return l:mean()
end

local PLAIN = {reduction = true}

-- ---------------------------------------------------------------------------
-- regression: mse, mae/l1, huber

local function mse(pred, target, opts, lvl)
   local op = 'mse'
   opts = options(op, opts, PLAIN, lvl)
   local r = reduction_of(op, opts, lvl)
   float_arg(op, pred, 'prediction', lvl)
   float_arg(op, target, 'target', lvl)
   same_shape(op, pred, target, 'prediction', 'target', lvl)
   if r == 'none' then
      local d = pred - target
      return d * d
   end
   local out = impl.mse_loss(pred, target, lvl + 1)   -- fused: one pass, no [N, ...] temporary
   if r == 'sum' then return out * pred:numel() end
   return out
end

local function mae(pred, target, opts, lvl)
   local op = 'mae'
   opts = options(op, opts, PLAIN, lvl)
   local r = reduction_of(op, opts, lvl)
   float_arg(op, pred, 'prediction', lvl)
   float_arg(op, target, 'target', lvl)
   same_shape(op, pred, target, 'prediction', 'target', lvl)
   return reduce((pred - target):abs(), r)
end

local HUBER_OPTS = {reduction = true, delta = true}
-- with a = |d| and q = min(a, delta): 0.5 q^2 + delta (a - q), the two branches in one expression
local function huber(pred, target, opts, lvl)
   local op = 'huber'
   opts = options(op, opts, HUBER_OPTS, lvl)
   local r = reduction_of(op, opts, lvl)
   local delta = number_opt(op, opts, 'delta', 1, lvl)
   if not (delta > 0) then error(('%s: delta %g should be positive'):format(op, delta), lvl) end
   float_arg(op, pred, 'prediction', lvl)
   float_arg(op, target, 'target', lvl)
   same_shape(op, pred, target, 'prediction', 'target', lvl)
   local a = (pred - target):abs()
   local q = a:clamp(nil, delta)
   return reduce(q * q * 0.5 + (a - q) * delta, r)
end

-- ---------------------------------------------------------------------------
-- Keras categorical losses: classes along `axis` (the last by default)

-- probabilities refused when negative (logits passed without from_logits), naming the first
local function check_probabilities(op, pred, lvl)
   if pred:numel() > 0 and pred:min():item() < 0 then
      local flat = pred:to_flat()
      for i = 1, #flat do
         if flat[i] < 0 then
            error(('%s: pred %g at element %d of %s is negative (expected probabilities; pass from_logits = true '
                   .. 'for logits)'):format(op, flat[i], i, shape_str(pred)), lvl + 1)
         end
      end
   end
end

-- log-probabilities along dim cd: log_softmax of logits, or Keras's renormalized, clipped log p
local function keras_log_probs(op, pred, cd, from_logits, lvl)
   if from_logits then return pred:log_softmax(cd) end
   check_probabilities(op, pred, lvl + 1)
   return (pred / pred:sum(cd, true)):clamp(EPS, 1 - EPS):log()
end

local CCE_OPTS = {reduction = true, from_logits = true, label_smoothing = true, axis = true}
local function categorical_cross_entropy(pred, target, opts, lvl)
   local op = 'categorical_cross_entropy'
   opts = options(op, opts, CCE_OPTS, lvl)
   local r = reduction_of(op, opts, lvl)
   float_arg(op, pred, 'pred', lvl)
   float_arg(op, target, 'target', lvl)
   same_shape(op, pred, target, 'pred', 'target', lvl)
   if pred:dim() == 0 then error(op .. ': pred [] has no class dim', lvl) end
   local cd = opts.axis or -1
   if type(cd) ~= 'number' or cd ~= math.floor(cd) or cd == 0 or cd > pred:dim() or cd < -pred:dim() then
      error(('%s: axis %s out of range for %s (dims are 1..%d or -%d..-1)'):format(
         op, tostring(cd), shape_str(pred), pred:dim(), pred:dim()), lvl)
   end
   local smoothing = number_opt(op, opts, 'label_smoothing', 0, lvl)
   if smoothing > 0 then target = target * (1 - smoothing) + smoothing / pred:size(cd) end
   local logp = keras_log_probs(op, pred, cd, opts.from_logits, lvl)
   return reduce(-(target * logp):sum(cd), r)
end

local SCCE_OPTS = {reduction = true, from_logits = true, ignore_class = true}
local function sparse_categorical_cross_entropy(pred, ids, opts, lvl)
   local op = 'sparse_categorical_cross_entropy'
   opts = options(op, opts, SCCE_OPTS, lvl)
   local r = reduction_of(op, opts, lvl)
   float_arg(op, pred, 'pred', lvl)
   local t = impl.ids(op, ids, lvl)
   -- classes last: pred [..., C] takes ids [...]
   local nd = pred:dim()
   local agree = nd >= 1 and t:dim() == nd - 1
   for d = 1, nd - 1 do agree = agree and t:size(d) == pred:size(d) end
   if not agree then
      local want = pred:shape()
      want[#want] = nil
      error(('%s: pred %s and targets %s do not agree (expected targets %s: classes are the last dim)'):format(
         op, shape_str(pred), shape_str(t), fnn_tensor.dims_str(want)), lvl)
   end
   local ignore = opts.ignore_class
   if ignore == nil then ignore = false end
   local copts = {reduction = r, ignore_index = ignore}
   local classes = pred:size(nd)
   local x = pred:reshape(-1, classes)
   local flat = t:reshape(-1)
   local logp = not opts.from_logits and keras_log_probs(op, x, 2, false, lvl)
   -- the fused losses' messages (a bad id) are raised again under this op's name
   local ok, l
   if logp then ok, l = pcall(impl.nll_loss, logp, flat, copts, 1)
   else ok, l = pcall(impl.cross_entropy, x, flat, copts, 1) end
   if not ok then
      error((tostring(l):gsub('^[^\n]-:%d+: ', ''):gsub('^%a[%w_]*:', op .. ':')), lvl)
   end
   if r == 'none' then return l:reshape(t:shape()) end
   return l
end

-- ---------------------------------------------------------------------------
-- kl_div, cosine_embedding

local KL_OPTS = {reduction = true, log_target = true}
-- pointwise p (log p - log_q) (0 where p = 0), or e^t (t - log_q) with log_target
local function kl_div(log_q, p, opts, lvl)
   local op = 'kl_div'
   opts = options(op, opts, KL_OPTS, lvl)
   local r = reduction_of(op, opts, lvl, 'batchmean')
   float_arg(op, log_q, 'input', lvl)
   float_arg(op, p, 'target', lvl)
   same_shape(op, log_q, p, 'input', 'target', lvl)
   local l
   if opts.log_target then
      l = p:exp() * (p - log_q)
   else
      l = p * (p:gt(0):where(p, 1):log() - log_q)   -- log 1 = 0 where p = 0: xlogy's convention
   end
   if r == 'batchmean' then
      local n = log_q:dim() > 0 and log_q:size(1) or 1
      return l:sum() / n
   end
   return reduce(l, r)
end

local COS_OPTS = {reduction = true, margin = true}
-- PyTorch: cos = x1.x2 / sqrt((|x1|^2 + 1e-12)(|x2|^2 + 1e-12)) per row
local function cosine_embedding(x1, x2, y, opts, lvl)
   local op = 'cosine_embedding'
   opts = options(op, opts, COS_OPTS, lvl)
   local r = reduction_of(op, opts, lvl)
   local margin = number_opt(op, opts, 'margin', 0, lvl)
   float_arg(op, x1, 'input1', lvl)
   float_arg(op, x2, 'input2', lvl)
   same_shape(op, x1, x2, 'input1', 'input2', lvl)
   if x1:dim() ~= 1 and x1:dim() ~= 2 then
      error(('%s: inputs %s should be [N,D] or [D]'):format(op, shape_str(x1)), lvl)
   end
   if type(y) == 'number' or type(y) == 'table' then y = fnn_tensor.tensor(y) end
   if not is_tensor(y) then
      error(('%s: target is a %s, expected a tensor of 1 and -1'):format(op, type(y)), lvl)
   end
   y = y:float()
   local want = x1:dim() == 2 and ('[' .. x1:size(1) .. ']') or '[]'
   if shape_str(y) ~= want then
      error(('%s: inputs %s and target %s do not agree (expected target %s)'):format(
         op, shape_str(x1), shape_str(y), want), lvl)
   end
   local pos = y:eq(1)
   if y:numel() > 0 and (pos + y:eq(-1)):min():item() == 0 then
      local flat = y:to_flat()
      for i = 1, #flat do
         if flat[i] ~= 1 and flat[i] ~= -1 then
            error(('%s: target %g at element %d of %s is not 1 or -1'):format(op, flat[i], i, shape_str(y)), lvl)
         end
      end
   end
   local d = x1:dim()
   local dot = (x1 * x2):sum(d)
   local cos = dot / (((x1 * x1):sum(d) + 1e-12) * ((x2 * x2):sum(d) + 1e-12)):sqrt()
   return reduce(pos * (1 - cos) + (1 - pos) * (cos - margin):relu(), r)
end

-- ---------------------------------------------------------------------------
-- Keras's elementwise losses (the classes MeanSquaredError, MeanAbsoluteError, BinaryCrossEntropy):
-- a per-sample loss, the mean over the last dim ([N] stays one loss per element), then reduced
-- over the samples. 'mean' is the mean of every element either way, so it takes the fused path.

local function keras_per_sample(l, r)
   if l:dim() >= 2 then l = l:mean(-1) end
   return reduce(l, r)
end

local function keras_mse(pred, target, opts, lvl)
   opts = options('mse', opts, PLAIN, lvl)
   local r = reduction_of('mse', opts, lvl)
   if r == 'mean' then return mse(pred, target, nil, lvl) end
   return keras_per_sample(mse(pred, target, 'none', lvl + 1), r)
end

local function keras_mae(pred, target, opts, lvl)
   opts = options('mae', opts, PLAIN, lvl)
   local r = reduction_of('mae', opts, lvl)
   return keras_per_sample(mae(pred, target, 'none', lvl + 1), r)
end

local KBCE_OPTS = {reduction = true, from_logits = true, label_smoothing = true}
-- Keras clips probabilities to [EPS, 1 - EPS] rather than refusing them; label smoothing pulls the
-- targets toward 1/2
local function keras_bce(pred, target, opts, lvl)
   local op = opts and opts.from_logits and 'bce_with_logits' or 'binary_cross_entropy'
   opts = options(op, opts, KBCE_OPTS, lvl)
   local r = reduction_of(op, opts, lvl)
   float_arg(op, pred, 'input', lvl)
   float_arg(op, target, 'target', lvl)
   local smoothing = number_opt(op, opts, 'label_smoothing', 0, lvl)
   if smoothing > 0 then target = target * (1 - smoothing) + 0.5 * smoothing end
   local inner = r == 'mean' and 'mean' or 'none'
   local l
   if opts.from_logits then l = impl.bce_with_logits(pred, target, inner, lvl + 1)
   else l = impl.binary_cross_entropy(pred:clamp(EPS, 1 - EPS), target, inner, lvl + 1) end
   if r == 'mean' then return l end
   return keras_per_sample(l, r)
end

-- ---------------------------------------------------------------------------
-- the public functions (tail calls: the user's line is level 2 inside each implementation)

L.cross_entropy = ops.cross_entropy
L.binary_cross_entropy = ops.binary_cross_entropy
L.bce_with_logits = ops.bce_with_logits
function L.nll(x, t, opts) return impl.nll_loss(x, t, opts, 2) end
L.nll_loss = L.nll
function L.mse(p, t, opts) return mse(p, t, opts, 2) end
function L.mae(p, t, opts) return mae(p, t, opts, 2) end
L.l1 = L.mae
function L.huber(p, t, opts) return huber(p, t, opts, 2) end
function L.categorical_cross_entropy(p, t, opts) return categorical_cross_entropy(p, t, opts, 2) end
function L.sparse_categorical_cross_entropy(p, t, opts) return sparse_categorical_cross_entropy(p, t, opts, 2) end
function L.kl_div(q, p, opts) return kl_div(q, p, opts, 2) end
function L.cosine_embedding(a, b, y, opts) return cosine_embedding(a, b, y, opts, 2) end

L._impl = {mse = mse, mae = mae, huber = huber, binary_cross_entropy = impl.binary_cross_entropy,
           bce_with_logits = impl.bce_with_logits, cross_entropy = impl.cross_entropy, nll = impl.nll_loss,
           categorical_cross_entropy = categorical_cross_entropy,
           sparse_categorical_cross_entropy = sparse_categorical_cross_entropy, kl_div = kl_div,
           cosine_embedding = cosine_embedding, keras_mse = keras_mse, keras_mae = keras_mae, keras_bce = keras_bce,
           EPS = EPS}
return L
