-- fastnn.precision: bfloat16 in the ops, and PyTorch's two precision controls.
--
--   fnn.set_float32_precision('bf16' | 'ieee' | {matmul =, conv =, rnn =}), fnn.get_float32_precision()
--      the GEMM-bound families of float32 ops compute with bfloat16 operands and float32 sums
--      (core/precision.c); tensors stay float32
--   t:bf16() / t:bfloat16(), t:float()   differentiable conversions (core/ops/to_dtype.c)
--   fnn.autocast('bf16', fn, ...)        PyTorch's torch.autocast(device, dtype=torch.bfloat16)
--
-- Every op takes bfloat16 tensors. The ops that compute on bfloat16 in C are the views and copies
-- (by element size), the conversions and the elementwise family (core/ops/elementwise.c widens and
-- rounds back itself, so the arithmetic operators pay nothing here), and on the CPU the pools,
-- linear (nn.Linear, nn.Dense) and the convolutions (their nn and Keras layers), which also make
-- autocast's bfloat16 output themselves (NATIVE_BF16, NATIVE_HOST below); every other op is
-- wrapped here: its bfloat16 inputs are
-- widened to float32 (exactly), it runs in float32 (its sums in float32), and its float results are
-- rounded back to bfloat16 when every float input was bfloat16 (PyTorch's promotion: bf16 with bf16
-- is bf16, with float32 is float32). Comparisons keep their float32 0/1 masks and indices stay int64.
--
-- Inside fnn.autocast('bf16', fn) (PyTorch's op lists in spirit):
--   * GEMM-bound ops (linear, matmul, bmm, outer, the convolutions, attention, the recurrent layers)
--     take float32 or bfloat16 inputs, compute with bfloat16 operands and float32 sums, and return
--     bfloat16;
--   * softmax, log_softmax, the norms, the losses, exp, log and the reductions widen bfloat16 inputs
--     and return float32;
--   * every other op follows the promotion above, so activations between products stay bfloat16.
-- Parameters stay float32 (each use converts them, as PyTorch's autocast does), and every bfloat16
-- tensor's gradient is float32, so parameter gradients and optimizers are float32 throughout.
-- Regions nest, compose with fnn.no_grad, and belong to the thread that opened them.
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local options = require 'fastnn.options'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped

local M = {}

local F32, BF16 = 0, 3
local T = ffi.typeof('fnn_tensor')
local istype = ffi.istype

-- ---------------------------------------------------------------------------
-- set_float32_precision / get_float32_precision

local FAMILIES = {'matmul', 'conv', 'rnn'}
local PRECISION_OPTS = options.declare('fnn.set_float32_precision', {
   {'matmul', 'string', nil, 'matmul, linear, bmm and attention\'s products', values = {'ieee', 'bf16'}},
   {'conv', 'string', nil, 'the convolutions (1-3d, transposed, grouped)', values = {'ieee', 'bf16'}},
   {'rnn', 'string', nil, 'the recurrent layers\' products (LSTM, GRU, SimpleRNN)', values = {'ieee', 'bf16'}},
})
local emulated_noted = false
function M.set_float32_precision(mode, extra)
   if extra ~= nil then too_many('set_float32_precision', 2, extra, 'mode') end
   local set = {}
   if type(mode) == 'table' then
      local o = PRECISION_OPTS:check(mode, 2)
      for _, f in ipairs(FAMILIES) do set[f] = o[f] end
   else
      if mode ~= 'ieee' and mode ~= 'bf16' then
         local shown = type(mode) == 'string' and ("'" .. mode .. "'") or options.show(mode)
         error(("fnn.set_float32_precision: precision %s is not one of 'ieee', 'bf16' (or a table of families: "
                .. "matmul, conv, rnn)"):format(shown), 2)
      end
      for _, f in ipairs(FAMILIES) do set[f] = mode end
   end
   for _, f in ipairs(FAMILIES) do
      if set[f] and C.fnn_set_float32_precision(f, set[f]) ~= 0 then error(ffi.string(C.fnn_last_error()), 2) end
   end
   if (set.matmul == 'bf16' or set.conv == 'bf16' or set.rnn == 'bf16') then M.note_emulated() end
end
function M.get_float32_precision(extra)
   if extra ~= nil then too_many('get_float32_precision', 1, extra, '') end
   local t = {}
   for _, f in ipairs(FAMILIES) do t[f] = ffi.string(C.fnn_get_float32_precision(f)) end
   return t
end

-- the one-time note that bf16 runs emulated on this CPU (SPEC: "a one-time note says so"), with the reason
-- fnn.config() gives: no bf16 units, or units no faster than the float32 FMA. The path depends only on the
-- CPU, the kernels selected and fnn.set_bf16_path, so fnn.config() is read once per selection, not at every
-- autocast region
local path_read_for
function M.note_emulated()
   if emulated_noted then return end
   local selection = ffi.string(C.fnn_get_kernels()) .. ' ' .. ffi.string(C.fnn_get_bf16_path())
   if path_read_for == selection then return end
   path_read_for = selection
   local n = tonumber(C.fnn_config(nil, 0))
   local buf = ffi.new('char[?]', n + 1)
   C.fnn_config(buf, n + 1)
   local why = ffi.string(buf):match('\nbf16_path\temulated[^(\n]*%(([^\n]*)%)')
   if why then
      emulated_noted = true
      io.stderr:write('fastnn: bf16 precision is emulated here (bf16-rounded operands, float32 products: as exact '
                      .. 'as bf16): ' .. why .. '\n')
   end
end

-- fnn.set_bf16_path('auto' | 'native' | 'emulated'): which kernels compute bf16 precision's products
-- (core/bf16_units.c); fnn.get_bf16_path() returns the setting
local BF16_PATHS = {auto = true, native = true, emulated = true}
function M.set_bf16_path(path, extra)
   if extra ~= nil then too_many('set_bf16_path', 2, extra, 'path') end
   if not BF16_PATHS[path] then
      local shown = type(path) == 'string' and ("'" .. path .. "'") or options.show(path)
      error(("fnn.set_bf16_path: path %s is not one of 'auto', 'native', 'emulated'"):format(shown), 2)
   end
   C.fnn_set_bf16_path(path)
end
function M.get_bf16_path(extra)
   if extra ~= nil then too_many('get_bf16_path', 1, extra, '') end
   return ffi.string(C.fnn_get_bf16_path())
end

-- ---------------------------------------------------------------------------
-- conversions

function Tensor.bf16(t, extra)
   if extra ~= nil then too_many('bf16', 2, extra, 't') end
   local out = new()
   if C.fnn_to_dtype(out, t, BF16) ~= 0 then fail() end
   return done(out)
end
Tensor.bfloat16 = Tensor.bf16

-- ---------------------------------------------------------------------------
-- the ops' wrapper

local autocast_depth = 0   -- this Lua state's open regions (the C side keeps the thread's)
-- a depth per load of this module (an upvalue the wrappers test per call), every load's moved
-- together: tensors keep the first load's methods, so a region opened by a later load (busted
-- loads fastnn afresh for each spec file) must be seen by the first load's wrappers too
local move_depth
do
   local registry = debug.getregistry()
   local movers = registry['fastnn.autocast_depth_movers'] or {}
   registry['fastnn.autocast_depth_movers'] = movers
   movers[#movers + 1] = function(d) autocast_depth = autocast_depth + d end
   move_depth = function(d) for i = 1, #movers do movers[i](d) end end
end
-- wrapped ops and layers running on widened inputs inside a region: C's autocast narrowing (linear's)
-- is held meanwhile (fnn_autocast_hold), since the wrapper narrows their results, and the ops inside
-- them (MultiheadAttention's linear before its attention) expect float32 as everywhere else
local held = 0
local function hold()
   held = held + 1
   C.fnn_autocast_hold(1)
end
local function release()
   held = held - 1
   C.fnn_autocast_hold(-1)
end

-- autocast's lists, by the name the op is reached under (fnn.<name> / Tensor:<name>)
local GEMM_OPS = {}
for _, n in ipairs{'linear', 'matmul', 'bmm', 'outer', 'conv1d', 'conv2d', 'conv3d', 'conv_transpose1d',
                   'conv_transpose2d', 'conv_transpose3d', 'attention', 'scaled_dot_product_attention', 'lstm',
                   'gru', 'rnn_tanh', 'lstm_cell'} do GEMM_OPS[n] = true end
local FLOAT32_OPS = {}
for _, n in ipairs{'softmax', 'log_softmax', 'layer_norm', 'batch_norm', 'group_norm', 'instance_norm', 'rms_norm',
                   'cross_entropy', 'nll_loss', 'mse_loss', 'binary_cross_entropy', 'bce_with_logits', 'exp', 'log',
                   'nll', 'mse', 'mae', 'l1', 'huber', 'categorical_cross_entropy', 'sparse_categorical_cross_entropy',
                   'kl_div', 'cosine_embedding',
                   'sum', 'mean', 'var', 'std', 'norm', 'prod', 'logsumexp', 'cumsum'} do FLOAT32_OPS[n] = true end
M.GEMM_OPS, M.FLOAT32_OPS = GEMM_OPS, FLOAT32_OPS
-- ops (and nn layers) that take bfloat16 in C on the CPU and follow promotion there (bf16 in, bf16
-- out): core/ops/pool.c's forward_bf16 rows. A bfloat16 tensor on another device (whose row takes
-- float32 only) still goes through the widening path below
local NATIVE_BF16 = {}
for _, n in ipairs{'max_pool1d', 'max_pool2d', 'max_pool3d', 'avg_pool1d', 'avg_pool2d', 'avg_pool3d',
                   'MaxPool1d', 'MaxPool2d', 'MaxPool3d', 'AvgPool1d', 'AvgPool2d', 'AvgPool3d',
                   -- a view and the identity: widening around them made two full-size copies for the
                   -- same values
                   'Flatten', 'Identity',
                   -- the activation layers whose gradient reads the input, not the output: elementwise.c
                   -- runs them on bf16 in one tiled pass, the same numbers and float32 gradients as widen,
                   -- float32, round (Sigmoid, Tanh, ELU and SELU keep the wrapper: their backward reads the
                   -- output, which would be the rounded one)
                   'ReLU', 'SiLU', 'Swish', 'Mish', 'Softsign', 'HardSigmoid', 'LeakyReLU', 'GELU'} do
   NATIVE_BF16[n] = true
end
M.NATIVE_BF16 = NATIVE_BF16
-- ops (and layers) that take bfloat16 in C on the CPU and narrow their own output there by the rule
-- above, autocast's included (core/ops/linalg.c's linear, matmul, bmm and outer, attention.c's attention,
-- core/ops/conv.c's convolutions: bf16 out
-- inside a region, even from a float32 x): called as they are when every tensor argument is on the
-- CPU (a float32 tensor on another device too, since autocast's narrowing of its output is still the
-- wrapper's). Dense is an nn.Linear inside, and the Keras convolutions an nn.Conv*d inside; the
-- activation after them takes bfloat16 in C.
local NATIVE_HOST = {}
for _, n in ipairs{'linear', 'Linear', 'Dense', 'matmul', 'bmm', 'outer', 'attention', 'scaled_dot_product_attention',
                   'conv1d', 'conv2d', 'conv3d', 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d',
                   'Conv1d', 'Conv2d', 'Conv3d', 'ConvTranspose1d', 'ConvTranspose2d', 'ConvTranspose3d',
                   'DepthwiseConv1d', 'DepthwiseConv2d', 'SeparableConv1d', 'SeparableConv2d',
                   'Conv1D', 'Conv2D', 'Conv3D', 'Conv1DTranspose', 'Conv2DTranspose', 'Conv3DTranspose',
                   'DepthwiseConv1D', 'DepthwiseConv2D', 'SeparableConv1D', 'SeparableConv2D'} do
   NATIVE_HOST[n] = true
end
M.NATIVE_HOST = NATIVE_HOST

local function is_bf16(v) return istype(T, v) and v.dtype_ == BF16 end

-- v is a bfloat16 tensor or a list holding one (cat, stack)
local function holds_bf16(v)
   if istype(T, v) then return v.dtype_ == BF16 end
   if type(v) == 'table' and istype(T, v[1]) then
      for _, x in ipairs(v) do if is_bf16(x) then return true end end
   end
   return false
end

-- does any argument (or a tensor in a list argument: cat, stack) hold bfloat16?
local function any_bf16(n, ...)
   for i = 1, n do
      local v = select(i, ...)
      if istype(T, v) then
         if v.dtype_ == BF16 then return true end
      elseif type(v) == 'table' and istype(T, v[1]) then
         for _, x in ipairs(v) do if is_bf16(x) then return true end end
      end
   end
   return false
end

-- the arguments with bfloat16 (and, to_f32, float32: no change) tensors widened; all_bf16: no float32
-- tensor among them
local function widen(args, n)
   local all_bf16, any_float = true, false
   for i = 1, n do
      local v = args[i]
      if istype(T, v) then
         if v.dtype_ == BF16 then any_float = true; args[i] = v:float()
         elseif v.dtype_ == F32 then any_float = true; all_bf16 = false end
      elseif type(v) == 'table' and istype(T, v[1]) then
         local list = {}
         for k, x in ipairs(v) do
            if is_bf16(x) then any_float = true; list[k] = x:float()
            else
               if istype(T, x) and x.dtype_ == F32 then any_float = true; all_bf16 = false end
               list[k] = x
            end
         end
         args[i] = list
      end
   end
   return all_bf16 and any_float
end

-- v is not a bfloat16 tensor off the CPU (device = type * 256 + ordinal; the CPU's type is 0)
local function host_or_not_bf16(v) return not (istype(T, v) and v.dtype_ == BF16 and v.device_ >= 256) end
-- v is not a tensor off the CPU
local function host_or_not_tensor(v) return not (istype(T, v) and v.device_ >= 256) end

-- an argument's kind for the short path: 1 a bfloat16 tensor, 2 a float32 one, 3 a list of tensors
-- (cat, stack: the table path), 0 anything else
local function kind(v)
   if istype(T, v) then return v.dtype_ == BF16 and 1 or v.dtype_ == F32 and 2 or 0 end
   if type(v) == 'table' and istype(T, v[1]) then return 3 end
   return 0
end

local function narrow1(v)
   if istype(T, v) and v.dtype_ == F32 then return v:bf16() end
   return v
end

-- the op's pcall results, narrowed when asked, without a table for up to three results; tail-called
-- by the wrapper, so an error lands at the wrapper's caller, the user's line, as the table path's.
-- was_held: the wrapper held C's autocast narrowing around the call (released first)
local function finish(narrow, was_held, ok, ...)
   if was_held then release() end
   if not ok then error((...), 2) end
   if not narrow then return ... end
   local n = select('#', ...)
   if n == 1 then return narrow1((...)) end
   local r1, r2, r3 = ...
   if n == 2 then return narrow1(r1), narrow1(r2) end
   if n == 3 then return narrow1(r1), narrow1(r2), narrow1(r3) end
   local r = {...}
   for i = 1, n do r[i] = narrow1(r[i]) end
   return unpack(r, 1, n)
end

local function narrow_results(r, from, to)
   for i = from, to do
      if istype(T, r[i]) and r[i].dtype_ == F32 then r[i] = r[i]:bf16() end
   end
end

-- f, reached as `name`, wrapped: untouched (one scan of the arguments) unless a bfloat16 tensor is
-- among them or an autocast region is open. own: the name its C support is listed under (a layer's
-- class name, while `name` is its policy: 'matmul', 'softmax'); default name
local function wrap(name, f, own)
   own = own or name
   local gemm, f32_out = GEMM_OPS[name], FLOAT32_OPS[name]
   local compare = name == 'eq' or name == 'ne' or name == 'lt' or name == 'le' or name == 'gt' or name == 'ge'
   local native, native_host = NATIVE_BF16[own], NATIVE_HOST[own]
   return function(...)
      -- the float32 path: four arguments looked at without a loop (most ops take no more)
      if autocast_depth == 0 then
         local a, b, c, d = ...
         if not (holds_bf16(a) or holds_bf16(b) or holds_bf16(c) or holds_bf16(d)) and
            (select('#', ...) <= 4 or not any_bf16(select('#', ...), ...)) then
            return f(...)
         end
      end
      local n = select('#', ...)
      if n <= 4 then
         local a, b, c, d = ...
         -- the C op takes these bfloat16 tensors itself: a tail call, so its errors name the user's line
         if native and host_or_not_bf16(a) and host_or_not_bf16(b) and host_or_not_bf16(c) and
            host_or_not_bf16(d) then
            return f(...)
         end
         if native_host and held == 0 and host_or_not_tensor(a) and host_or_not_tensor(b) and
            host_or_not_tensor(c) and host_or_not_tensor(d) then
            return f(...)
         end
         -- the short path: no argument table, no results table (a list argument takes the table path)
         local ka, kb, kc, kd = kind(a), kind(b), kind(c), kind(d)
         if ka ~= 3 and kb ~= 3 and kc ~= 3 and kd ~= 3 then
            local narrow = ka + kb + kc + kd > 0 and ka ~= 2 and kb ~= 2 and kc ~= 2 and kd ~= 2
            if ka == 1 then a = a:float() end
            if kb == 1 then b = b:float() end
            if kc == 1 then c = c:float() end
            if kd == 1 then d = d:float() end
            local h = autocast_depth > 0
            if h then
               if gemm then narrow = true elseif f32_out then narrow = false end
               hold()
            end
            if compare then narrow = false end
            if n == 1 then return finish(narrow, h, pcall(f, a)) end
            if n == 2 then return finish(narrow, h, pcall(f, a, b)) end
            if n == 3 then return finish(narrow, h, pcall(f, a, b, c)) end
            return finish(narrow, h, pcall(f, a, b, c, d))
         end
      end
      local args = {...}
      local narrow = widen(args, n)
      local h = autocast_depth > 0
      if h then
         if gemm then narrow = true elseif f32_out then narrow = false end
         hold()
      end
      if compare then narrow = false end
      -- an error raised for the op's caller lands here without a position (pcall is a C frame):
      -- raised again at the user's line
      local r = {pcall(f, unpack(args, 1, n))}
      if h then release() end
      if not r[1] then error(r[2], 2) end
      local m = table.maxn(r)
      if narrow then narrow_results(r, 2, m) end
      return unpack(r, 2, m)
   end
end

-- the ops to wrap: every op family's functions but the views and the conversions, which take any
-- dtype in C (so a bfloat16 view is a view, not a copy)
local ANY_DTYPE = {}
for _, n in ipairs{'reshape', 'view', 'flatten', 'squeeze', 'unsqueeze', 'permute', 'transpose', 't', 'expand',
                   'narrow', 'select', 'split', 'chunk', 'contiguous', 'float', 'long', 'bf16', 'bfloat16', 'to',
                   'to_device', 'detach', 'backward', 'free', 'item', 'to_table', 'to_flat', 'dtype', 'shape',
                   'size', 'stride', 'dim', 'numel', 'device', 'device_name', 'grad_fn', 'is_contiguous', 'is_freed',
                   'storage_id', 'shape_str', 'is_tensor'} do ANY_DTYPE[n] = true end
M.ANY_DTYPE = ANY_DTYPE

-- wraps, in the tables given, each op function of the families' modules (mods) under its name; the
-- functions of the native modules (the elementwise family and the operators, which take bfloat16 in
-- C) only where autocast's lists name them (exp, log)
function M.install(tables, mods, native)
   local skip = {}
   for _, mod in ipairs(native or {}) do
      for name, f in pairs(mod) do
         if type(f) == 'function' and not GEMM_OPS[name] and not FLOAT32_OPS[name] then skip[f] = true end
      end
   end
   local wrapped = {}
   for f in pairs(skip) do wrapped[f] = f end
   for _, mod in ipairs(mods) do
      for name, f in pairs(mod) do
         if type(f) == 'function' and type(name) == 'string' and not name:match('^_') and not ANY_DTYPE[name]
            and not name:match('^try_') then
            wrapped[f] = wrapped[f] or wrap(name, f)
         end
      end
   end
   for _, t in ipairs(tables) do
      for name, f in pairs(t) do
         if type(f) == 'function' and wrapped[f] and not ANY_DTYPE[name] then t[name] = wrapped[f] end
      end
   end
end

-- ---------------------------------------------------------------------------
-- nn's layers: many call the core directly (no op function between), so each layer class's forward
-- gets the same wrapper, with its layer's place in autocast's lists. The containers are left alone:
-- their children convert for themselves, so activations between them stay bfloat16.
local GEMM_LAYERS, FLOAT32_LAYERS, CONTAINERS = {}, {}, {}
for _, n in ipairs{'Linear', 'Bilinear', 'Dense', 'Conv1d', 'Conv2d', 'Conv3d', 'ConvTranspose1d', 'ConvTranspose2d',
                   'ConvTranspose3d', 'Conv1D', 'Conv2D', 'Conv3D', 'Conv1DTranspose', 'Conv2DTranspose',
                   'Conv3DTranspose', 'DepthwiseConv1d', 'DepthwiseConv2d', 'DepthwiseConv1D', 'DepthwiseConv2D',
                   'SeparableConv1d', 'SeparableConv2d', 'SeparableConv1D', 'SeparableConv2D', 'LSTM', 'GRU',
                   'SimpleRNN', 'MultiheadAttention'} do GEMM_LAYERS[n] = true end
for _, n in ipairs{'BatchNorm1d', 'BatchNorm2d', 'BatchNorm3d', 'BatchNormalization', 'LayerNorm', 'LayerNormalization',
                   'GroupNorm', 'InstanceNorm', 'InstanceNorm1d', 'InstanceNorm2d', 'InstanceNorm3d', 'RMSNorm',
                   'UnitNormalization', 'Softmax', 'LogSoftmax', 'BCELoss', 'BCEWithLogitsLoss', 'CrossEntropyLoss',
                   'NLLLoss', 'MSELoss', 'L1Loss', 'HuberLoss', 'KLDivLoss', 'CosineEmbeddingLoss',
                   'MeanSquaredError', 'MeanAbsoluteError', 'BinaryCrossEntropy', 'CategoricalCrossEntropy',
                   'SparseCategoricalCrossEntropy'} do FLOAT32_LAYERS[n] = true end
for _, n in ipairs{'Module', 'Sequential', 'ModuleList', 'Graph'} do CONTAINERS[n] = true end
M.GEMM_LAYERS, M.FLOAT32_LAYERS = GEMM_LAYERS, FLOAT32_LAYERS

local function wrap_layer(name, cls)
   local f = rawget(cls, 'forward') or cls.forward
   if type(f) ~= 'function' or rawget(cls, '_precision_wrapped') == f then return end
   local policy = GEMM_LAYERS[name] and 'matmul' or FLOAT32_LAYERS[name] and 'softmax' or name
   local w = wrap(policy, f, name)
   cls.forward = w
   rawset(cls, '_precision_wrapped', w)
end

function M.install_nn(nn)
   for _, name in ipairs(nn._names) do
      if not CONTAINERS[name] then
         nn._extend(name, function(cls)
            if type(cls) == 'table' and cls.forward then wrap_layer(name, cls) end
         end)
      end
   end
end

-- ---------------------------------------------------------------------------
-- fnn.autocast(mode, fn, ...): fn(...) with autocast's op lists; returns fn's results

function M.autocast(mode, fn, ...)
   if mode ~= 'bf16' and mode ~= 'bfloat16' then
      error(("autocast: mode %s is not 'bf16' (bfloat16 is the CPU's and the GPU's autocast type here)"):format(
         type(mode) == 'string' and ("'" .. mode .. "'") or options.show(mode)), 2)
   end
   if type(fn) ~= 'function' then
      error(('autocast: expected a function to run, got %s'):format(options.show(fn)), 2)
   end
   M.note_emulated()
   move_depth(1)
   C.fnn_autocast_enter()
   local r = {pcall(fn, ...)}
   C.fnn_autocast_exit()
   move_depth(-1)
   if not r[1] then error(r[2], 0) end
   return unpack(r, 2, table.maxn(r))
end

function M.is_autocast_enabled(extra)
   if extra ~= nil then too_many('is_autocast_enabled', 1, extra, '') end
   return autocast_depth > 0
end

return M
