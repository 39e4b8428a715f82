-- fastnn.keras.model: the Keras-style model methods that nn.Sequential and nn.Graph (made by
-- nn.GraphBuilder) share. The RustyML seed's first program, in Lua:
--   local model = nn.Sequential():add(nn.Dense(16, 'relu')):add(nn.Dense(1)):build{8, 4}
--   model:compile{optimizer = optim.Adam{lr = 1e-3}, loss = 'mse', metrics = {'mae'}}
--   local history = model:fit(x, y, {epochs = 5, batch_size = 32, validation_split = 0.2})
--   local preds = model:predict(x)                 -- [8, 1]
--   model:summary()
-- Methods (x and y are tensors, or for a graph Lua arrays with one tensor per inlet / outlet):
--   compile{optimizer = 'rmsprop', loss, metrics = {}, loss_weights, global_clipnorm, clipvalue}
--       optimizer: an optimizer (an unbound one, optim.Adam{lr = ...}, is bound to the model's
--       parameters here, or once the model is built) or a name ('adam', 'sgd', 'rmsprop', 'adamw',
--       'adagrad', 'adadelta', 'radam', 'lion' with Keras' default rates); loss: a name ('mse',
--       'mae', 'huber', 'binary_crossentropy', 'categorical_crossentropy',
--       'sparse_categorical_crossentropy', 'cross_entropy', 'bce_with_logits', 'nll', 'kl_div'),
--       a loss object (nn.CategoricalCrossEntropy{from_logits = true}) or a function(pred, target);
--       a graph takes one per outlet (a Lua array) or one for all, weighted by loss_weights.
--       metrics: names or objects of nn.metrics; a graph applies them to every outlet, or takes a
--       Lua array of lists, one per outlet (logged as output_<k>_<name>).
--   fit(x, y, {epochs = 1, batch_size = 32, validation_split = 0, validation_data = {xv, yv},
--       shuffle = true, callbacks = {}, verbose = 1}) -> history: history.loss, history.val_loss,
--       history.<metric>, history.epoch (per-epoch arrays). validation_split holds out the last
--       fraction of the samples (before shuffling), as Keras does. fit before compile is an error.
--       x may instead be a data.DataLoader (y nil): its batches, its shuffling, its prefetch;
--       validation_data may be one too. evaluate(loader) likewise.
--   train_batch(x, y) -> loss, {metric = value}      one step on one batch
--   evaluate(x, y, {batch_size = 32}) -> loss, {metric = value, ...}   (eval mode, no grad)
--   predict(x, {batch_size = 32}) -> tensor (a graph: a Lua array, one per outlet); batched, eval
--       mode, no grad; needs no compile. It keeps nothing between calls, so threads that each
--       run their own lua_State on shared weights can predict at once.
--   summary({print = true}) -> text: layers, output shapes, parameter counts, trainable and
--       non-trainable totals (frozen parameters and buffers are non-trainable)
--   input_shape(), output_shape(), set_seed(n) (the batch-shuffle stream), learning_rate(),
--   set_learning_rate(lr), save_weights(path), load_weights(path) (fnn.save / fnn.load)
-- A model class supplies _keras_forward(xs) -> outputs (Lua arrays), _keras_arity() -> inlets,
-- outlets, _keras_build(shapes) and _keras_rows() (summary lines), then calls M.install(cls).
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local fnn_tensor = require 'fastnn.tensor'
local autograd = require 'fastnn.autograd'
local nn = require 'fastnn.nn'
local shape = require 'fastnn.nn.shape'
local metrics = require 'fastnn.keras.metrics'
local callbacks = require 'fastnn.keras.callbacks'
local progress = require 'fastnn.keras.progress'
local bit = require 'bit'
local is_tensor, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str
local floor, min = math.floor, math.min

local M = {}

-- ---------------------------------------------------------------------------
-- helpers

-- failures raised from inside the implementation reach the user's line (nn.Module's helpers)
local guarded, fail = nn.Module._guarded, nn.Module._fail

local function to_tensor(op, v, what)
   if is_tensor(v) then return v end
   if type(v) == 'table' or type(v) == 'number' then
      local ok, t = pcall(fnn_tensor.tensor, v)
      if ok then return t end
   end
   fail(('%s: %s is a %s, expected a tensor'):format(op, what, type(v)))
end

-- v as a Lua array of n tensors (one tensor is fine for n == 1)
local function list_of(op, v, n, what)
   if v == nil then fail(('%s: %s is missing'):format(op, what)) end
   if is_tensor(v) then
      if n ~= 1 then fail(('%s: the model has %d %s, got one tensor (pass a Lua array of %d)'):format(op, n,
                          what == 'x' and 'inlets' or 'outlets', n)) end
      return {v}
   end
   if type(v) == 'table' and (is_tensor(v[1]) or (n > 1 and type(v[1]) == 'table')) then
      if #v ~= n then
         fail(('%s: the model has %d %s, got %d tensors for %s'):format(op, n, what == 'x' and 'inlets' or 'outlets',
                                                                     #v, what))
      end
      local out = {}
      for i = 1, n do out[i] = to_tensor(op, v[i], ('%s[%d]'):format(what, i)) end
      return out
   end
   if n == 1 then return {to_tensor(op, v, what)} end
   fail(('%s: %s is a %s, expected a Lua array of %d tensors'):format(op, what, type(v), n))
end

-- the common sample count of xs and ys (dim 1 of every tensor)
local function samples(op, xs, ys)
   local n
   local first
   for _, list in ipairs{xs, ys or {}} do
      for _, t in ipairs(list) do
         if t:dim() < 1 then fail(('%s: %s has no sample dim'):format(op, shape_str(t))) end
         if n == nil then n, first = t:size(1), t
         elseif t:size(1) ~= n then
            fail(('%s: %s and %s differ in dim 1 (the samples)'):format(op, shape_str(first), shape_str(t)))
         end
      end
   end
   return n or 0
end

local function narrow_all(list, s, len)
   local out = {}
   for i, t in ipairs(list) do out[i] = t:narrow(1, s, len) end
   return out
end

local function select_all(list, ids)
   local out = {}
   for i, t in ipairs(list) do out[i] = t:index_select(1, ids) end
   return out
end

-- a data.DataLoader (or anything with iter() yielding {inputs, targets} and len())
local function is_loader(v)
   return type(v) == 'table' and not is_tensor(v) and type(v.iter) == 'function' and type(v.len) == 'function'
end

-- batch sources: each returns a function giving bx, by, len per call, nil at the end
local function tensor_batches(xs, ys, n, bs, perm)
   local s = 1
   return function()
      if s > n then return nil end
      local len = min(bs, n - s + 1)
      local bx, by
      if perm then
         local ids = perm:narrow(1, s, len)
         bx, by = select_all(xs, ids), select_all(ys, ids)
      else
         bx, by = narrow_all(xs, s, len), narrow_all(ys, s, len)
      end
      s = s + len
      return bx, by, len
   end
end

local function loader_batches(op, loader)
   local f, state, var = loader:iter()
   return function()
      local batch = f(state, var)
      if batch == nil then return nil end
      var = batch
      if not is_tensor(batch.inputs) or batch.targets == nil then
         fail(('%s: the data loader gave a batch without inputs and targets'):format(op))
      end
      return {batch.inputs}, {batch.targets}, batch.size or batch.inputs:size(1)
   end
end

local function positive_int(op, what, v, default)
   if v == nil then return default end
   if type(v) ~= 'number' or v < 1 or v ~= floor(v) then
      fail(('%s: %s is %s, expected a positive integer'):format(op, what, show_value(v)))
   end
   return v
end

-- the methods' options, declared once (docs/options.md); each method reads only what check returns
local options = require 'fastnn.options'
local BATCH = {'batch_size', 'integer', 32, 'samples per batch (tensors; a loader brings its own)', min = 1}
local OPTS = {
   compile = options.declare('model:compile', {
      {'optimizer', 'any', 'rmsprop', "an optimizer (bound or unbound) or a name: 'adam', 'sgd', ... (Keras's default)"},
      {'loss', 'any', nil, "a name such as 'mse', a loss object or a function; a list of them, one per outlet",
       default_doc = 'required'},
      {'metrics', 'any', nil, "names ('accuracy', ...) or metric objects; a list per outlet", default_doc = 'none'},
      {'loss_weights', 'table', nil, 'one number per outlet', default_doc = 'all 1'},
      {'global_clipnorm', 'number', nil, 'clip the global gradient norm to this', min = 0, min_open = true},
      {'clipvalue', 'number', nil, 'clip each gradient element to [-v, v]', min = 0, min_open = true},
      {'precision', 'string', 'float32', "'float32', or 'mixed_bf16' (Keras's mixed_bfloat16 policy: the forward "
       .. "and the loss under fnn.autocast('bf16'); weights, gradients and predict's outputs float32)",
       values = {'float32', 'mixed_bf16', 'mixed_bfloat16'}},
   }),
   fit = options.declare('model:fit', {
      {'epochs', 'integer', 1, 'passes over the data', min = 1},
      BATCH,
      {'verbose', 'integer', 1, '0 silent, 1 a progress bar, 2 one line per epoch', min = 0, max = 2},
      {'shuffle', 'boolean', true, 'shuffle the samples each epoch (tensors)'},
      {'validation_data', 'table', nil, '{x, y} or a data loader, evaluated after each epoch'},
      {'validation_split', 'number', nil, 'the fraction of the samples held out for validation (the last ones)',
       min = 0, max = 1, max_open = true},
      {'callbacks', 'table', nil, 'a list of callbacks (nn.callbacks)'},
   }),
   evaluate = options.declare('model:evaluate', {BATCH}),
   predict = options.declare('model:predict', {BATCH}),
   summary = options.declare('model:summary', {
      {'print', 'boolean', true, 'print the table (it is returned either way)'},
   }),
}

local function opts_of(op, opts)
   local msg, o = OPTS[op]:try(opts)
   if msg then fail(msg) end
   return o
end

-- ---------------------------------------------------------------------------
-- losses and optimizers by name

local LOSS_FNS = {
   mse = 'mse', mean_squared_error = 'mse', mae = 'mae', mean_absolute_error = 'mae', l1 = 'mae',
   huber = 'huber', bce_with_logits = 'bce_with_logits', cross_entropy = 'cross_entropy', nll = 'nll',
   kl_div = 'kl_div', categorical_crossentropy = 'categorical_cross_entropy',
   categorical_cross_entropy = 'categorical_cross_entropy',
   sparse_categorical_crossentropy = 'sparse_categorical_cross_entropy',
   sparse_categorical_cross_entropy = 'sparse_categorical_cross_entropy',
}
local function loss_names()
   local names = {'binary_crossentropy', 'binary_cross_entropy'}
   for k in pairs(LOSS_FNS) do names[#names + 1] = k end
   table.sort(names)
   return table.concat(names, ', ')
end

-- a loss spec -> function(pred, target) -> scalar tensor
local function loss_of(spec)
   if type(spec) == 'string' then
      local key = spec:lower()
      if key == 'binary_crossentropy' or key == 'binary_cross_entropy' or key == 'bce' then
         local crit = nn.BinaryCrossEntropy()   -- Keras: probabilities clipped to [1e-7, 1 - 1e-7]
         return function(p, t) return crit:forward(p, t) end
      end
      local name = LOSS_FNS[key]
      if not name then fail(("compile: unknown loss '%s' (known: %s)"):format(spec, loss_names())) end
      local f = nn[name]
      return function(p, t) return f(p, t) end
   end
   if type(spec) == 'function' then return spec end
   if type(spec) == 'table' then
      if type(spec.forward) == 'function' then return function(p, t) return spec:forward(p, t) end end
      local mt = getmetatable(spec)
      if mt and mt.__call then return function(p, t) return spec(p, t) end end
   end
   fail(("compile: loss is a %s, expected a name such as 'mse', a loss object or a function"):format(type(spec)))
end

local OPTIMIZERS = {adam = {'Adam', 1e-3}, adamw = {'AdamW', 1e-3}, sgd = {'SGD', 1e-2}, rmsprop = {'RMSprop', 1e-3},
                    adagrad = {'Adagrad', 1e-3}, adadelta = {'Adadelta', 1.0}, radam = {'RAdam', 1e-3},
                    lion = {'Lion', 1e-4}}

local function optimizer_of(spec)
   if spec == nil then spec = 'rmsprop' end   -- Keras' default
   if type(spec) == 'string' then
      local e = OPTIMIZERS[spec:lower()]
      if not e then
         local names = {}
         for k in pairs(OPTIMIZERS) do names[#names + 1] = k end
         table.sort(names)
         fail(("compile: unknown optimizer '%s' (known: %s)"):format(spec, table.concat(names, ', ')))
      end
      return require('fastnn.optim')[e[1]]{lr = e[2]}
   end
   if type(spec) ~= 'table' or type(spec.step) ~= 'function' or type(spec.zero_grad) ~= 'function' then
      fail(("compile: optimizer is a %s, expected an optimizer (optim.Adam{lr = 1e-3}) or a name such as 'adam'")
           :format(type(spec)))
   end
   return spec
end

-- ---------------------------------------------------------------------------
-- state

-- a layer still waiting for its input width: a Keras-style layer without its inner layer, or a
-- lazy recurrent layer (nn.LSTM{units = ...}) without its input size
local function lazy(m)
   if m._keras then return rawget(m, 'inner') == nil end
   return type(m.build) == 'function' and m.hidden_size ~= nil and m.input_size == nil
end

local function unbuilt(self)
   for _, m in ipairs(self:modules()) do
      if lazy(m) then return true end
   end
   return false
end

local function bind(self)
   local st = rawget(self, '_compiled')
   if not st or st.bound or unbuilt(self) then return end
   local opt = st.optimizer
   if type(opt.groups) == 'table' and #opt.groups == 0 and type(opt.bind) == 'function' then
      opt:bind(self:parameters())
   end
   st.params = self:parameters()
   st.bound = true
end
M._bind = bind

local function compiled(self, op)
   local st = rawget(self, '_compiled')
   if not st then
      fail(('%s: the model is not compiled; call model:compile{optimizer = ..., loss = ...} first'):format(op))
   end
   return st
end

-- build from the data's shapes when nothing built the model yet. A model without lazy layers
-- does not need it: if a layer cannot be probed on zeros (ids, say), its forward decides.
local function ready(self, op, xs)
   if not rawget(self, '_input_shapes') then
      local shapes = {}
      for i, t in ipairs(xs) do shapes[i] = t:shape() end
      local ok, err = pcall(self._keras_build, self, shapes)
      if not ok and unbuilt(self) then error(err, 0) end
   end
   bind(self)
end

local function metric_logs(st, logs)
   for _, e in ipairs(st.metric_list) do logs[e[1]] = e[2]:result() end
   return logs
end

local function reset_metrics(st)
   for _, e in ipairs(st.metric_list) do e[2]:reset() end
end

-- the losses of one batch: the weighted total (a tensor) and each outlet's value
local function batch_loss(st, outs, ys)
   local total
   local parts = st.parts
   for k = 1, #outs do
      local l = st.losses[k](outs[k], ys[k])
      if not is_tensor(l) then fail(('the loss of outlet %d returned a %s, expected a tensor'):format(k, type(l))) end
      if #outs > 1 then parts[k] = l end
      local w = st.loss_weights[k]
      if w ~= 1 then l = l * w end
      total = total and total + l or l
   end
   return total
end

local function update_metrics(st, outs, ys)
   for _, e in ipairs(st.metric_list) do e[2]:update(outs[e[3]], ys[e[3]]) end
end

-- the forward of a batch (and its loss, when ys are given), under autocast for 'mixed_bf16'; the
-- outputs come back float32 (metrics and predict see float32, as Keras's float32 output layer gives)
local function forward_of(self, st, xs, ys)
   if not (st and st.mixed) then
      local outs = self:_keras_forward(xs)
      return outs, ys and batch_loss(st, outs, ys)
   end
   local outs, total = require('fastnn').autocast('bf16', function()
      local o = self:_keras_forward(xs)
      return o, ys and batch_loss(st, o, ys)
   end)
   for k = 1, #outs do outs[k] = outs[k]:float() end
   return outs, total
end

local function train_step(self, st, xs, ys)
   local outs, total = forward_of(self, st, xs, ys)
   local opt = st.optimizer
   opt:zero_grad()
   total:backward()
   if st.global_clipnorm then require('fastnn.optim').clip_grad_norm(st.params, st.global_clipnorm) end
   if st.clipvalue then require('fastnn.optim').clip_grad_value(st.params, st.clipvalue) end
   opt:step()
   if #st.metric_list > 0 then update_metrics(st, outs, ys) end
   local parts
   if #outs > 1 then
      parts = {}
      for k = 1, #outs do parts[k] = st.parts[k]:item() end
   end
   return total:item(), parts
end

-- loss and metrics over xs, ys in batches: eval mode, no grad; the metrics are reset first
-- next_batch: a batch source (tensor_batches or loader_batches)
local function run_eval(self, st, next_batch)
   local saved = shape.modes(self)
   self:train(false)
   reset_metrics(st)
   local n = 0
   local ok, sum, part_sums = pcall(autograd.no_grad, function()
      local total, sums = 0, {}
      while true do
         local bx, by, len = next_batch()
         if bx == nil then break end
         n = n + len
         local outs, loss = forward_of(self, st, bx, by)
         total = total + loss:item() * len
         if #outs > 1 then
            for k = 1, #outs do sums[k] = (sums[k] or 0) + st.parts[k]:item() * len end
         end
         update_metrics(st, outs, by)
      end
      return total, sums
   end)
   shape.restore_modes(saved)
   if not ok then error(sum, 0) end
   local logs = {}
   for k, v in pairs(part_sums) do logs[('output_%d_loss'):format(k)] = v / n end
   return sum / math.max(n, 1), metric_logs(st, logs)
end

-- the batch-shuffle stream of set_seed: xorshift32, a permutation by Fisher-Yates
local function seeded_perm(self, n)
   local s = rawget(self, '_seed_state')
   local ids = {}
   for i = 1, n do ids[i] = i end
   for i = n, 2, -1 do
      s = bit.bxor(s, bit.lshift(s, 13)); s = bit.bxor(s, bit.rshift(s, 17)); s = bit.bxor(s, bit.lshift(s, 5))
      local j = (s % i + i) % i + 1
      ids[i], ids[j] = ids[j], ids[i]
   end
   rawset(self, '_seed_state', s)
   return fnn_tensor.long(ids)
end

local function call(cbs, hook, ...)
   for i = 1, #cbs do
      local f = cbs[i][hook]
      if f then f(cbs[i], ...) end
   end
end

-- ---------------------------------------------------------------------------
-- the methods

local function compile(self, opts)
   if type(opts) ~= 'table' then fail('compile: expected a table {optimizer = ..., loss = ..., metrics = ...}') end
   opts = opts_of('compile', opts)
   local n_in, n_out = self:_keras_arity()
   local st = {optimizer = optimizer_of(opts.optimizer), losses = {}, loss_weights = {}, metric_list = {},
               keys = {'loss'}, parts = {}}
   if opts.loss == nil then fail("compile: loss is missing (a name such as 'mse', a loss object or a function)") end
   local loss = opts.loss
   local per_outlet = n_out > 1 and type(loss) == 'table' and type(loss.forward) ~= 'function'
                      and getmetatable(loss) == nil and #loss > 0
   if per_outlet and #loss ~= n_out then
      fail(('compile: %d losses for %d outlets'):format(#loss, n_out))
   end
   for k = 1, n_out do st.losses[k] = loss_of(per_outlet and loss[k] or loss) end
   local w = opts.loss_weights
   if w ~= nil and (type(w) ~= 'table' or #w ~= n_out) then
      fail(('compile: loss_weights must be a Lua array of %d numbers (one per outlet)'):format(n_out))
   end
   for k = 1, n_out do
      local v = w and w[k] or 1
      if type(v) ~= 'number' then fail(('compile: loss_weights[%d] is a %s, expected a number'):format(k, type(v))) end
      st.loss_weights[k] = v
   end
   if n_out > 1 then
      for k = 1, n_out do st.keys[#st.keys + 1] = ('output_%d_loss'):format(k) end
   end
   local ms = opts.metrics or {}
   if type(ms) ~= 'table' or getmetatable(ms) ~= nil then ms = {ms} end
   local nested = n_out > 1 and type(ms[1]) == 'table' and getmetatable(ms[1]) == nil
                  and type(ms[1].update) ~= 'function'
   if nested and #ms ~= n_out then fail(('compile: %d metric lists for %d outlets'):format(#ms, n_out)) end
   for k = 1, n_out do
      local list = nested and ms[k] or ms
      for _, spec in ipairs(list) do
         -- one object per outlet: a shared object would mix the outlets' counts
         if type(spec) == 'table' and k > 1 and not nested then
            local copy = {}
            for key, v in pairs(spec) do copy[key] = v end
            spec = setmetatable(copy, getmetatable(spec))
         end
         local m = metrics.get(spec, 1)
         local key = n_out > 1 and ('output_%d_%s'):format(k, m.name) or m.name
         st.metric_list[#st.metric_list + 1] = {key, m, k}
         st.keys[#st.keys + 1] = key
      end
   end
   st.mixed = opts.precision ~= 'float32'
   for _, key in ipairs{'global_clipnorm', 'clipvalue'} do
      local v = opts[key]
      if v ~= nil and (type(v) ~= 'number' or v <= 0) then
         fail(('compile: %s is %s, expected a positive number'):format(key, show_value(v)))
      end
      st[key] = v
   end
   rawset(self, '_compiled', st)
   rawset(self, 'optimizer', st.optimizer)
   bind(self)
   return self
end

-- what fit and evaluate start from: the compiled state, the checked options, the inlet and outlet counts
local function start(self, op, opts)
   local st = compiled(self, op)
   opts = opts_of(op, opts)
   return st, opts, self:_keras_arity()
end

local function fit(self, x, y, opts)
   local op = 'fit'
   local st, n_in, n_out
   st, opts, n_in, n_out = start(self, op, opts)
   local loader = is_loader(x) and x
   local xs, ys, n
   if loader then
      if y ~= nil then fail('fit: with a data loader, y must be nil (the loader gives the targets)') end
      if n_in ~= 1 or n_out ~= 1 then fail('fit: a data loader feeds a model of one inlet and one outlet') end
      if opts.validation_split then fail('fit: validation_split needs tensors; pass validation_data with a loader') end
   else
      xs, ys = list_of(op, x, n_in, 'x'), list_of(op, y, n_out, 'y')
      n = samples(op, xs, ys)
   end
   local epochs = positive_int(op, 'epochs', opts.epochs, 1)
   local bs = positive_int(op, 'batch_size', opts.batch_size, 32)
   local verbose = opts.verbose
   if verbose == nil then verbose = 1 end
   if verbose ~= 0 and verbose ~= 1 and verbose ~= 2 then
      fail(('fit: verbose is %s, expected 0, 1 or 2'):format(show_value(verbose)))
   end
   local vxs, vys, vloader, nv_total
   if opts.validation_data ~= nil then
      local vd = opts.validation_data
      if is_loader(vd) then
         vloader = vd
      else
         if type(vd) ~= 'table' or vd[1] == nil or vd[2] == nil then
            fail('fit: validation_data must be {x_val, y_val} or a data loader')
         end
         vxs, vys = list_of(op, vd[1], n_in, 'x'), list_of(op, vd[2], n_out, 'y')
         nv_total = samples(op, vxs, vys)
      end
   elseif opts.validation_split ~= nil and opts.validation_split ~= 0 then
      local f = opts.validation_split
      if type(f) ~= 'number' or f <= 0 or f >= 1 then
         fail(('fit: validation_split is %s, expected a fraction in (0, 1)'):format(show_value(f)))
      end
      local nv = floor(n * f)
      if nv < 1 or nv >= n then
         fail(('fit: validation_split %g of %d samples leaves %d for validation and %d for training'):format(
            f, n, nv, n - nv))
      end
      vxs, vys, nv_total = narrow_all(xs, n - nv + 1, nv), narrow_all(ys, n - nv + 1, nv), nv
      xs, ys = narrow_all(xs, 1, n - nv), narrow_all(ys, 1, n - nv)
      n = n - nv
   end
   local has_val = vxs ~= nil or vloader ~= nil
   local shuffle = opts.shuffle ~= false
   local user = opts.callbacks or {}
   if type(user) ~= 'table' then fail('fit: callbacks must be a Lua array of callbacks') end
   if getmetatable(user) ~= nil or user.on_epoch_end or user.on_train_begin then user = {user} end
   local steps
   if loader then
      steps = loader:len()
      local first = {}
      if not rawget(self, '_input_shapes') then   -- the shapes, for a model that was not built
         first = loader_batches(op, loader)()
         if first == nil then fail('fit: the data loader is empty') end
      end
      ready(self, op, first)
   else
      ready(self, op, xs)
      steps = math.ceil(n / bs)
   end
   local history = callbacks.History()
   local cbs = {}
   for i, cb in ipairs(user) do
      if type(cb) ~= 'table' then
         fail(('fit: callback %d is a %s, expected a table of methods'):format(i, type(cb)))
      end
      cbs[#cbs + 1] = cb
   end
   local keys = st.keys
   local val_keys = {}
   for i, k in ipairs(keys) do val_keys[i] = k end
   if has_val then for _, k in ipairs(keys) do val_keys[#val_keys + 1] = 'val_' .. k end end
   if verbose > 0 then
      cbs[#cbs + 1] = progress.new{verbose = verbose, epochs = epochs, steps = steps, keys = function(logs)
         return val_keys
      end}
   end
   cbs[#cbs + 1] = history   -- last: it records what the others added to the logs
   for _, cb in ipairs(cbs) do
      if type(cb.set_model) == 'function' then cb:set_model(self) else cb.model = self end
   end
   rawset(self, 'stop_training', false)
   call(cbs, 'on_train_begin', {})
   for epoch = 1, epochs do
      call(cbs, 'on_epoch_begin', epoch, {})
      self:train()
      reset_metrics(st)
      local next_batch
      if loader then
         next_batch = loader_batches(op, loader)   -- the loader shuffles (or not) itself
      else
         local perm
         if shuffle and n > 1 then
            perm = rawget(self, '_seed_state') and seeded_perm(self, n) or fnn_tensor.randperm(n)
         end
         next_batch = tensor_batches(xs, ys, n, bs, perm)
      end
      local loss_sum, seen = 0, 0
      local part_sums = {}
      local logs = {}
      local b = 0
      while true do
         local bx, by, len = next_batch()
         if bx == nil then break end
         b = b + 1
         call(cbs, 'on_batch_begin', b, logs)
         local lv, parts = train_step(self, st, bx, by)
         loss_sum, seen = loss_sum + lv * len, seen + len
         logs.loss = loss_sum / seen
         if parts then
            for k = 1, #parts do
               part_sums[k] = (part_sums[k] or 0) + parts[k] * len
               logs[('output_%d_loss'):format(k)] = part_sums[k] / seen
            end
         end
         metric_logs(st, logs)
         call(cbs, 'on_batch_end', b, logs)
      end
      local epoch_logs = {}
      for k, v in pairs(logs) do epoch_logs[k] = v end
      if has_val then
         local vl, vm = run_eval(self, st, vloader and loader_batches(op, vloader)
                                           or tensor_batches(vxs, vys, nv_total, bs))
         epoch_logs.val_loss = vl
         for k, v in pairs(vm) do epoch_logs['val_' .. k] = v end
      end
      self:train()
      call(cbs, 'on_epoch_end', epoch, epoch_logs)
      if rawget(self, 'stop_training') then break end
   end
   call(cbs, 'on_train_end', {})
   rawset(self, 'history', history.history)   -- Keras keeps the last one on the model too
   return history.history
end

local function train_batch(self, x, y)
   local op = 'train_batch'
   local st = compiled(self, op)
   local n_in, n_out = self:_keras_arity()
   local xs, ys = list_of(op, x, n_in, 'x'), list_of(op, y, n_out, 'y')
   samples(op, xs, ys)
   ready(self, op, xs)
   self:train()
   reset_metrics(st)
   local lv, parts = train_step(self, st, xs, ys)
   local logs = {}
   if parts then for k = 1, #parts do logs[('output_%d_loss'):format(k)] = parts[k] end end
   return lv, metric_logs(st, logs)
end

local function evaluate(self, x, y, opts)
   local op = 'evaluate'
   local st, n_in, n_out
   st, opts, n_in, n_out = start(self, op, opts)
   if is_loader(x) then
      if y ~= nil then fail('evaluate: with a data loader, y must be nil (the loader gives the targets)') end
      local first = {}
      if not rawget(self, '_input_shapes') then
         first = loader_batches(op, x)()
         if first == nil then fail('evaluate: the data loader is empty') end
      end
      ready(self, op, first)
      return run_eval(self, st, loader_batches(op, x))
   end
   local xs, ys = list_of(op, x, n_in, 'x'), list_of(op, y, n_out, 'y')
   local n = samples(op, xs, ys)
   ready(self, op, xs)
   return run_eval(self, st, tensor_batches(xs, ys, n, positive_int(op, 'batch_size', opts.batch_size, 32)))
end

local function predict(self, x, opts)
   local op = 'predict'
   opts = opts_of(op, opts)
   local n_in, n_out = self:_keras_arity()
   local xs = list_of(op, x, n_in, 'x')
   local n = samples(op, xs)
   local bs = positive_int(op, 'batch_size', opts.batch_size, 32)
   local saved = shape.modes(self)
   self:train(false)
   local st = rawget(self, '_compiled')
   local ok, outs = pcall(autograd.no_grad, function()
      if n <= bs then return (forward_of(self, st, xs)) end
      local parts = {}
      for s = 1, n, bs do
         local o = forward_of(self, st, narrow_all(xs, s, min(bs, n - s + 1)))
         for k = 1, #o do
            parts[k] = parts[k] or {}
            parts[k][#parts[k] + 1] = o[k]
         end
      end
      local cat = require('fastnn').cat
      local out = {}
      for k = 1, #parts do out[k] = cat(parts[k], 1) end
      return out
   end)
   shape.restore_modes(saved)
   if not ok then error(outs, 0) end
   if self._keras_single_output then return outs[1] end
   return outs
end

-- 12345678 -> '12,345,678'
local function grouped(n)
   local s = tostring(n)
   local out = s:reverse():gsub('(%d%d%d)', '%1,'):reverse()
   return (out:gsub('^,', ''))
end
M.grouped = grouped

local function summary(self, opts)
   opts = opts_of('summary', opts)
   local rows, title, extra = self:_keras_rows()
   local cols = {'Layer (type)', 'Output Shape', 'Param #'}
   if extra then cols[4] = extra end
   local width = {#cols[1], #cols[2], #cols[3], extra and #cols[4] or 0}
   for _, r in ipairs(rows) do
      for i = 1, #cols do width[i] = math.max(width[i], #tostring(r[i] or '')) end
   end
   width[1], width[2], width[3] = width[1] + 2, width[2] + 2, width[3] + 2
   local function line(r)
      local s = (' %-' .. width[1] .. 's%-' .. width[2] .. 's%' .. width[3] .. 's'):format(r[1], r[2], r[3])
      if extra then s = s .. '   ' .. (r[4] or '') end
      return (s:gsub('%s+$', ''))
   end
   local total_w = 1 + width[1] + width[2] + width[3] + (extra and (3 + width[4]) or 0)
   local out = {('Model: "%s"'):format(title), string.rep('_', total_w), line(cols), string.rep('=', total_w)}
   for i, r in ipairs(rows) do
      out[#out + 1] = line(r)
      if i < #rows then out[#out + 1] = string.rep('-', total_w) end
   end
   out[#out + 1] = string.rep('=', total_w)
   local trainable, frozen = 0, 0
   for _, p in ipairs(self:parameters()) do
      if p:frozen() then frozen = frozen + p:numel() else trainable = trainable + p:numel() end
   end
   -- buffers count as non-trainable (Keras' moving mean and variance), step counters do not
   for _, pair in ipairs(self:named_buffers()) do
      local b = pair[2]
      if is_tensor(b) and b:dtype() == 'float32' then frozen = frozen + b:numel() end
   end
   out[#out + 1] = 'Total params: ' .. grouped(trainable + frozen)
   out[#out + 1] = 'Trainable params: ' .. grouped(trainable)
   out[#out + 1] = 'Non-trainable params: ' .. grouped(frozen)
   out[#out + 1] = string.rep('_', total_w)
   local text = table.concat(out, '\n')
   if opts.print ~= false then print(text) end
   return text
end

local function learning_rate(self)
   return compiled(self, 'learning_rate').optimizer:lr()
end

local function set_learning_rate(self, lr)
   if type(lr) ~= 'number' or lr < 0 then
      fail(('set_learning_rate: learning rate is %s, expected a number >= 0'):format(show_value(lr)))
   end
   compiled(self, 'set_learning_rate').optimizer:set_lr(lr)
   return self
end

local function set_seed(self, n)
   if type(n) ~= 'number' or n ~= floor(n) then
      fail(('set_seed: seed is %s, expected a whole number'):format(show_value(n)))
   end
   rawset(self, '_seed_state', bit.tobit(n * 2654435761 + 1) == 0 and 1 or bit.tobit(n * 2654435761 + 1))
   return self
end

local function unguarded_input_shape(self)
   local s = rawget(self, '_input_shapes')
   if not s then return nil end
   if self._keras_single_input then return shape.copy(s[1]) end
   local out = {}
   for i, v in ipairs(s) do out[i] = shape.copy(v) end
   return out
end

M.methods = {compile = compile, fit = fit, train_batch = train_batch, evaluate = evaluate, predict = predict,
             summary = summary, learning_rate = learning_rate, set_learning_rate = set_learning_rate,
             set_seed = set_seed}

-- model:name(...) refusing a positional argument past the last of impl(self, ...) (fit(x, y, opts, 5),
-- predict(x, {}, 2)): the count and names are read once, here; a tail call into the method, so its
-- own errors keep their level. (Misspelt option keys are the options declarations'.)
local function refuse_extra(self, name, np, names, ...)
   for i = np + 1, select('#', ...) do
      local v = select(i, ...)
      if v ~= nil then too_many(self._name .. ':' .. name, i, v, names, 3) end   -- 1 too_many, 2 here, 3 the method, 4 the user
   end
end
function M.checked(name, impl, method)
   local np = debug.getinfo(impl, 'u').nparams - 1   -- without self
   local names = {}
   for i = 2, np + 1 do names[#names + 1] = debug.getlocal(impl, i) end
   names = table.concat(names, ', ')
   method = method or impl
   return function(self, ...)
      if select('#', ...) > np then refuse_extra(self, name, np, names, ...) end
      return method(self, ...)
   end
end

function M.install(cls)
   for k, f in pairs(M.methods) do cls[k] = M.checked(k, f, guarded(f)) end
   cls.input_shape = M.checked('input_shape', unguarded_input_shape)
   -- tail calls: fnn.save / fnn.load raise at our caller's line
   function cls:save_weights(path, extra)
      if extra ~= nil then too_many(self._name .. ':save_weights', 2, extra, 'path') end
      return require('fastnn').save(self, path)
   end
   function cls:load_weights(path, extra)
      if extra ~= nil then too_many(self._name .. ':load_weights', 2, extra, 'path') end
      return require('fastnn').load(self, path)
   end
   cls.save_to_path, cls.load_from_path = cls.save_weights, cls.load_weights   -- the seed's names
   return cls
end

M.guarded = guarded
M.fail = fail
return M
