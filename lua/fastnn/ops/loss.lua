-- fastnn.ops.loss: bindings for core/ops/loss.c, the fused losses. Options tables take
-- reduction = 'mean' (the default), 'sum' or 'none'; an unknown option is an error naming it.
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
--   fnn.mse_loss(pred, target)   mean of the squared difference
-- Also methods: logits:cross_entropy(targets, opts), pred:mse_loss(target).
-- M._impl holds the same functions taking the caller's error level last, for nn's losses.
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
M._ids = ids_arg

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

local function cross_entropy(logits, targets, opts, lvl)
   local op = 'cross_entropy'
   check_tensor(op, logits, 'logits', lvl)
   opts = options(op, opts, CE_OPTS, lvl)
   local r = reduction_of(op, opts, lvl)
   local weight = tensor_opt(op, opts, 'weight', lvl)
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
   local out = new()
   if C.fnn_cross_entropy_loss(out, logits, t, weight, has_ignore, ignore, smoothing, REDUCTION[r]) ~= 0 then
      cfail(lvl)
   end
   return done(out)
end

local function nll_loss(log_probs, targets, opts, lvl)
   local op = 'nll_loss'
   check_tensor(op, log_probs, 'input', lvl)
   opts = options(op, opts, NLL_OPTS, lvl)
   local r = reduction_of(op, opts, lvl)
   local weight = tensor_opt(op, opts, 'weight', lvl)
   local t = ids_arg(op, targets, lvl)
   local has_ignore, ignore = ignore_of(op, opts, lvl)
   local out = new()
   if C.fnn_nll_loss(out, log_probs, t, weight, has_ignore, ignore, REDUCTION[r]) ~= 0 then cfail(lvl) end
   return done(out)
end

-- ---------------------------------------------------------------------------
-- binary_cross_entropy, bce_with_logits, mse_loss

local BCE_OPTS = {reduction = true, weight = true}
local BCEL_OPTS = {reduction = true, weight = true, pos_weight = true}

local function binary_cross_entropy(pred, target, opts, lvl)
   local op = 'binary_cross_entropy'
   check_tensor(op, pred, 'input', lvl)
   check_tensor(op, target, 'target', lvl)
   opts = options(op, opts, BCE_OPTS, lvl)
   local r = reduction_of(op, opts, lvl)
   local out = new()
   if C.fnn_binary_cross_entropy(out, pred, target, tensor_opt(op, opts, 'weight', lvl), REDUCTION[r]) ~= 0 then
      cfail(lvl)
   end
   return done(out)
end

local function bce_with_logits(logits, target, opts, lvl)
   local op = 'bce_with_logits'
   check_tensor(op, logits, 'input', lvl)
   check_tensor(op, target, 'target', lvl)
   opts = options(op, opts, BCEL_OPTS, lvl)
   local r = reduction_of(op, opts, lvl)
   local out = new()
   if C.fnn_bce_with_logits(out, logits, target, tensor_opt(op, opts, 'weight', lvl),
                            tensor_opt(op, opts, 'pos_weight', lvl), REDUCTION[r]) ~= 0 then
      cfail(lvl)
   end
   return done(out)
end

local function mse_loss(pred, target, lvl)
   check_tensor('mse_loss', pred, 'pred', lvl)
   check_tensor('mse_loss', target, 'target', lvl)
   local out = new()
   if C.fnn_mse_loss(out, pred, target) ~= 0 then cfail(lvl) end
   return done(out)
end

function M.cross_entropy(logits, targets, opts) return cross_entropy(logits, targets, opts, 2) end
function M.nll_loss(log_probs, targets, opts) return nll_loss(log_probs, targets, opts, 2) end
function M.binary_cross_entropy(pred, target, opts) return binary_cross_entropy(pred, target, opts, 2) end
function M.bce_with_logits(logits, target, opts) return bce_with_logits(logits, target, opts, 2) end
function M.mse_loss(pred, target) return mse_loss(pred, target, 2) end

M._impl = {cross_entropy = cross_entropy, nll_loss = nll_loss, binary_cross_entropy = binary_cross_entropy,
           bce_with_logits = bce_with_logits, mse_loss = mse_loss, options = options, reduction_of = reduction_of,
           check_tensor = check_tensor, number_opt = number_opt, tensor_opt = tensor_opt, ids = ids_arg,
           cfail = cfail}

Tensor.cross_entropy, Tensor.mse_loss = M.cross_entropy, M.mse_loss
return M
