-- fastnn.ops.loss: every loss function, in one place: the bindings of core/ops/loss.c (the fused
-- losses) and the losses composed of other ops. Options tables take reduction = 'mean' (the
-- default), 'sum' or 'none'; an unknown option is an error naming it.
--   fnn.cross_entropy(logits, targets, {weight, ignore_index = -100, label_smoothing = 0, reduction})
--       (ignore_index = false ignores nothing)
--       logits [N, C] with targets [N], [N, C, d...] with [N, d...], or [C] with one id. Targets are
--       1-based class ids (an int64 tensor, a float tensor of whole numbers, a Lua array, or a number
--       for [C]), or class probabilities shaped like logits. 'mean' divides by the number of counted
--       sites (ids equal to ignore_index are not counted), or by the sum of weight[y] over them when
--       weight [C] is given (a weighted mean); with probabilities, by the number of sites.
--   fnn.nll_loss(log_probs, targets, {weight, ignore_index = -100, reduction})   the same on log-probabilities
--   fnn.binary_cross_entropy(pred, target, {weight, reduction})   pred probabilities in [0, 1] (others
--       refused), logs clamped at -100; weight broadcasts to pred; 'mean' divides by the element count
--   fnn.bce_with_logits(logits, target, {weight, pos_weight, reduction})   stable for any logit;
--       pos_weight (e.g. [C] for [N, C]) scales the positive term
--   fnn.mse_loss(pred, target[, {reduction = 'mean' | 'sum' | 'none'}])   the squared difference, reduced
-- Also methods: logits:cross_entropy(targets, opts), pred:mse_loss(target).
-- M.functional: every loss under nn's name (fastnn.nn merges them into nn; nn.losses holds them
-- too); the fused ones are the functions above. What 'mean' divides by:
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
-- M._impl holds each loss taking the caller's error level last (the loss modules, nn.MSELoss ...).
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, is_tensor, shape_str = fnn_tensor.new, fnn_tensor.done, fnn_tensor.is_tensor, fnn_tensor.shape_str
local shape_buf = fnn_tensor.shape_buf
local floor = math.floor
local options_mod = require 'fastnn.options'   -- the shared message form: known names nearest first
local M = {}

-- Error levels: an implementation takes lvl, the level of the user's frame seen from itself (2
-- when the user called it), and raises error(msg, lvl). A helper gets its caller's lvl and raises
-- at lvl + 1. A nested call passes lvl + 1, or lvl when it is a tail call (LuaJIT drops the
-- caller's frame). The public functions tail-call their implementation with lvl 2.
local function cfail(lvl) error(ffi.string(C.fnn_last_error()), lvl + 1) end   -- a helper

local REDUCTION = {none = 0, mean = 1, sum = 2}

-- the fused loss cfn(out, ...) -> out; tail-called by an implementation (`return fused(lvl, ...)`), so
-- its frame stands in the implementation's and the core's message goes to the same lvl
local function fused(lvl, cfn, ...)
   local out = new()
   if cfn(out, ...) ~= 0 then cfail(lvl) end
   return done(out)
end

-- the options table (nil: none; a string is a reduction), with every key checked against `allowed`
local NO_OPTS = {}
local function options(op, opts, allowed, lvl)
   if opts == nil then return NO_OPTS end
   if type(opts) == 'string' then return {reduction = opts} end
   if type(opts) ~= 'table' then
      error(('%s: options must be a table, got a %s'):format(op, type(opts)), lvl + 1)
   end
   for k in pairs(opts) do
      if not allowed[k] then
         local names = {}
         for name in pairs(allowed) do names[#names + 1] = name end
         error(("%s: unknown option '%s' (options: %s)"):format(op, tostring(k),
               table.concat(options_mod.nearest(k, names), ', ')), lvl + 1)
      end
   end
   return opts
end

-- the reduction named in opts (already checked by options), or 'mean'; `extra` admits one more name
local function reduction_of(op, opts, lvl, extra)
   local r = opts.reduction
   if r == nil then return 'mean' end
   if REDUCTION[r] == nil and r ~= extra then
      error(("%s: reduction '%s' is not one of 'mean', 'sum', 'none'%s"):format(
         op, tostring(r), extra and (", '" .. extra .. "'") or ''), lvl + 1)
   end
   return r
end

local check_tensor = fnn_tensor.check_tensor

-- a number option (nil: the default), checked
local function number_opt(op, opts, key, default, lvl)
   local v = opts[key]
   if v == nil then return default end
   if type(v) ~= 'number' then
      error(('%s: %s is a %s, expected a number'):format(op, key, type(v)), lvl + 1)
   end
   return v
end

-- an optional tensor option: a tensor, a Lua array of numbers, or a number (a 0-dim tensor)
local function tensor_opt(op, opts, key, lvl)
   local v = opts[key]
   if v == nil or is_tensor(v) then return v end
   if type(v) == 'number' then return fnn_tensor.tensor(v) end
   if type(v) ~= 'table' then
      error(('%s: %s is a %s, expected a tensor or a table of numbers'):format(op, key, type(v)), lvl + 1)
   end
   for i = 1, #v do
      if type(v[i]) ~= 'number' then
         error(('%s: %s[%d] is a %s, expected a number'):format(op, key, i, type(v[i])), lvl + 1)
      end
   end
   return fnn_tensor.tensor(v)
end

-- class ids from a tensor, a Lua array of numbers (int64 when all are whole, else float so the core
-- names the bad one) or a number (one id, for unbatched [C] logits)
local function ids_arg(op, ids, lvl)
   if is_tensor(ids) then return ids end
   local out = new()
   if type(ids) == 'number' then
      if C.fnn_full_dtype(out, 0, shape_buf, ids, ids == floor(ids) and 1 or 0) ~= 0 then cfail(lvl) end
      return done(out)
   end
   if type(ids) ~= 'table' then
      error(('%s: targets is a %s, expected a tensor or a table of 1-based class ids'):format(op, type(ids)), lvl + 1)
   end
   local n, whole = #ids, true
   for i = 1, n do
      local v = ids[i]
      if type(v) ~= 'number' then
         error(('%s: targets[%d] is a %s, expected a class id'):format(op, i, type(v)), lvl + 1)
      end
      if v ~= floor(v) or v ~= v or v >= 2^63 or v < -2^63 then whole = false end
   end
   shape_buf[0] = n
   if whole then
      local buf = ffi.new('int64_t[?]', n > 0 and n or 1)
      for i = 1, n do buf[i - 1] = ids[i] end
      if C.fnn_tensor_from_int64(out, 1, shape_buf, buf) ~= 0 then cfail(lvl) end
      return done(out)
   end
   if C.fnn_empty(out, 1, shape_buf) ~= 0 then cfail(lvl) end
   out = done(out)
   local p = C.fnn_tensor_mutable_data(out)
   for i = 1, n do p[i - 1] = ids[i] end
   return out
end

-- ---------------------------------------------------------------------------
-- cross_entropy, nll_loss

local CE_OPTS = {reduction = true, weight = true, ignore_index = true, label_smoothing = true}
local NLL_OPTS = {reduction = true, weight = true, ignore_index = true}

-- has_ignore, ignore_index: -100 by default (PyTorch); false ignores nothing
local function ignore_of(op, opts, lvl)
   if opts.ignore_index == false then return 0, 0 end
   local v = number_opt(op, opts, 'ignore_index', -100, lvl)
   if v ~= floor(v) then
      error(('%s: ignore_index %s is not a whole number'):format(op, tostring(v)), lvl + 1)
   end
   return 1, v
end

-- cross_entropy against class probabilities shaped like logits (PyTorch's soft targets), composed:
-- -sum_c w_c t_c log_softmax(x)_c per site; 'mean' divides by the number of sites
local function soft_cross_entropy(logits, probs, weight, smoothing, r, lvl)
   local op = 'cross_entropy'
   local cd = logits:dim() == 1 and 1 or 2
   local classes = logits:size(cd)
   if smoothing > 0 then probs = probs * (1 - smoothing) + smoothing / classes end
   local terms = probs * logits:log_softmax(cd)
   if weight then
      if weight:dim() ~= 1 or weight:size(1) ~= classes then
         error(('%s: weight %s should hold one value per class ([%d]) for logits %s'):format(
            op, shape_str(weight), classes, shape_str(logits)), lvl)
      end
      local wshape = {}
      for d = 1, logits:dim() do wshape[d] = d == cd and classes or 1 end
      terms = terms * weight:reshape(wshape)
   end
   local per = -terms:sum(cd)
   if r == 'none' then return per end
   if r == 'sum' then return per:sum() end
   return per:mean()
end

-- what the class losses check first: the scores x (named xname), the options (`allowed`), the
-- reduction and the class weight; -> opts, reduction, weight (a tensor or nil)
local function class_args(op, x, xname, opts, allowed, lvl)
   check_tensor(op, x, xname, lvl + 1)
   opts = options(op, opts, allowed, lvl + 1)
   return opts, reduction_of(op, opts, lvl + 1), tensor_opt(op, opts, 'weight', lvl + 1)
end

local function cross_entropy(logits, targets, opts, lvl)
   local op = 'cross_entropy'
   local r, weight
   opts, r, weight = class_args(op, logits, 'logits', opts, CE_OPTS, lvl)
   local smoothing = number_opt(op, opts, 'label_smoothing', 0, lvl)
   -- float targets shaped like the logits are probabilities; anything else holds class ids
   if is_tensor(targets) and targets.dtype_ == 0 and targets.ndim == logits.ndim and logits.ndim > 0
      and shape_str(targets) == shape_str(logits) then
      if smoothing < 0 or smoothing > 1 then
         error(('%s: label_smoothing %g is outside [0, 1] (logits %s)'):format(op, smoothing, shape_str(logits)),
               lvl)
      end
      return soft_cross_entropy(logits, targets, weight, smoothing, r, lvl)   -- a tail call: lvl stays
   end
   local t = ids_arg(op, targets, lvl)
   local has_ignore, ignore = ignore_of(op, opts, lvl)
   return fused(lvl, C.fnn_cross_entropy_loss, logits, t, weight, has_ignore, ignore, smoothing, REDUCTION[r])
end

local function nll_loss(log_probs, targets, opts, lvl)
   local op = 'nll_loss'
   local r, weight
   opts, r, weight = class_args(op, log_probs, 'input', opts, NLL_OPTS, lvl)
   local t = ids_arg(op, targets, lvl)
   local has_ignore, ignore = ignore_of(op, opts, lvl)
   return fused(lvl, C.fnn_nll_loss, log_probs, t, weight, has_ignore, ignore, REDUCTION[r])
end

-- ---------------------------------------------------------------------------
-- binary_cross_entropy, bce_with_logits, mse_loss

local BCE_OPTS = {reduction = true, weight = true}
local BCEL_OPTS = {reduction = true, weight = true, pos_weight = true}

-- what the binary losses check first: the input and target tensors, the options (`allowed`) and the
-- reduction; -> opts, reduction
local function binary_args(op, x, target, opts, allowed, lvl)
   check_tensor(op, x, 'input', lvl + 1)
   check_tensor(op, target, 'target', lvl + 1)
   opts = options(op, opts, allowed, lvl + 1)
   return opts, reduction_of(op, opts, lvl + 1)
end

local function binary_cross_entropy(pred, target, opts, lvl)
   local op = 'binary_cross_entropy'
   local r
   opts, r = binary_args(op, pred, target, opts, BCE_OPTS, lvl)
   return fused(lvl, C.fnn_binary_cross_entropy, pred, target, tensor_opt(op, opts, 'weight', lvl), REDUCTION[r])
end

local function bce_with_logits(logits, target, opts, lvl)
   local op = 'bce_with_logits'
   local r
   opts, r = binary_args(op, logits, target, opts, BCEL_OPTS, lvl)
   return fused(lvl, C.fnn_bce_with_logits, logits, target, tensor_opt(op, opts, 'weight', lvl),
                tensor_opt(op, opts, 'pos_weight', lvl), REDUCTION[r])
end

local function mse_loss(pred, target, lvl)
   check_tensor('mse_loss', pred, 'pred', lvl)
   check_tensor('mse_loss', target, 'target', lvl)
   return fused(lvl, C.fnn_mse_loss, pred, target)
end

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

-- what a loss of a prediction and a target shaped alike checks first: its options (`allowed`), the
-- reduction (`extra` admits one more name), then two float32 tensors of one shape; -> opts, reduction
local function paired_args(op, pred, target, opts, allowed, lvl, pname, tname, extra)
   opts = options(op, opts, allowed, lvl + 1)
   local r = reduction_of(op, opts, lvl + 1, extra)
   float_arg(op, pred, pname, lvl + 1)
   float_arg(op, target, tname, lvl + 1)
   same_shape(op, pred, target, pname, tname, lvl + 1)
   return opts, r
end

-- ---------------------------------------------------------------------------
-- regression: mse, mae/l1, huber

local function mse(pred, target, opts, lvl, op)
   local _, r = paired_args(op or 'mse', pred, target, opts, PLAIN, lvl, 'prediction', 'target')
   if r == 'none' then
      local d = pred - target
      return d * d
   end
   local out = mse_loss(pred, target, lvl + 1)   -- fused: one pass, no [N, ...] temporary
   if r == 'sum' then return out * pred:numel() end
   return out
end

local function mae(pred, target, opts, lvl)
   local _, r = paired_args('mae', pred, target, opts, PLAIN, lvl, 'prediction', 'target')
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
   local r
   opts, r = paired_args(op, pred, target, opts, CCE_OPTS, lvl, 'pred', 'target')
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
   local t = ids_arg(op, ids, lvl)
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
   if logp then ok, l = pcall(nll_loss, logp, flat, copts, 1)
   else ok, l = pcall(cross_entropy, x, flat, copts, 1) end
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
   local r
   opts, r = paired_args(op, log_q, p, opts, KL_OPTS, lvl, 'input', 'target', 'batchmean')
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
   if opts.from_logits then l = bce_with_logits(pred, target, inner, lvl + 1)
   else l = binary_cross_entropy(pred:clamp(EPS, 1 - EPS), target, inner, lvl + 1) end
   if r == 'mean' then return l end
   return keras_per_sample(l, r)
end

-- ---------------------------------------------------------------------------
-- the public functions (tail calls: the user's line is level 2 inside each implementation). Each
-- refuses an argument past its last at the caller's line (fastnn.tensor's too_many)

local too_many = fnn_tensor.too_many
local TAKES = 'input, target[, opts]'

for name, f in pairs{cross_entropy = cross_entropy, nll_loss = nll_loss, binary_cross_entropy = binary_cross_entropy,
                     bce_with_logits = bce_with_logits} do
   M[name] = function(input, target, opts, extra)
      if extra ~= nil then too_many(name, 4, extra, TAKES) end
      return f(input, target, opts, 2)
   end
end
-- PyTorch's F.mse_loss(input, target, reduction = 'mean'): the fused mean, or with {reduction} (a
-- string too) nn.mse's 'sum' and 'none'
function M.mse_loss(pred, target, opts, extra)
   if extra ~= nil then too_many('mse_loss', 4, extra, TAKES) end
   if opts == nil then return mse_loss(pred, target, 2) end
   return mse(pred, target, opts, 2, 'mse_loss')
end

-- every loss function under nn's names (nn.mse, nn.cross_entropy, ...; fastnn.nn merges them into nn):
-- the fused ones are the functions above, the other spellings aliases (nn.nll_loss is nn.nll, nn.l1 nn.mae)
local F = {cross_entropy = M.cross_entropy, binary_cross_entropy = M.binary_cross_entropy,
           bce_with_logits = M.bce_with_logits, nll = M.nll_loss}
-- (input, target[, opts]) under nn's names, each refusing an argument past its options
for name, f in pairs{mse = mse, mae = mae, huber = huber, categorical_cross_entropy = categorical_cross_entropy,
                     sparse_categorical_cross_entropy = sparse_categorical_cross_entropy, kl_div = kl_div} do
   F[name] = function(p, t, opts, extra)
      if extra ~= nil then too_many(name, 4, extra, TAKES) end
      return f(p, t, opts, 2)
   end
end
function F.cosine_embedding(a, b, y, opts, extra)
   if extra ~= nil then too_many('cosine_embedding', 5, extra, 'input1, input2, target[, opts]') end
   return cosine_embedding(a, b, y, opts, 2)
end
F.nll_loss, F.l1 = F.nll, F.mae
M.functional = F

-- each loss taking the caller's error level last (the loss modules of fastnn.nn.losses call them)
M._impl = {cross_entropy = cross_entropy, nll = nll_loss, binary_cross_entropy = binary_cross_entropy,
           bce_with_logits = bce_with_logits, mse = mse, mae = mae, huber = huber,
           categorical_cross_entropy = categorical_cross_entropy,
           sparse_categorical_cross_entropy = sparse_categorical_cross_entropy, kl_div = kl_div,
           cosine_embedding = cosine_embedding, keras_mse = keras_mse, keras_mae = keras_mae, keras_bce = keras_bce}

Tensor.cross_entropy, Tensor.mse_loss = M.cross_entropy, M.mse_loss
return M
