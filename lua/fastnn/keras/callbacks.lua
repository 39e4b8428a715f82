-- nn.callbacks: hooks into model:fit (Keras' protocol, with 1-based epoch and batch numbers).
--   model:fit(x, y, {epochs = 50, validation_split = 0.2, callbacks = {
--      nn.callbacks.EarlyStopping{monitor = 'val_loss', patience = 3, restore_best_weights = true},
--      nn.callbacks.ModelCheckpoint('run-{epoch}.fdl', {save_best_only = true}),
--      nn.callbacks.CSVLogger('log.csv'),
--      nn.callbacks.TensorBoard{log_dir = 'logs'},                                   -- tensorboard --logdir logs
--      {on_epoch_end = function(self, epoch, logs) print(epoch, logs.loss) end},   -- a user callback
--   }})
-- A callback is any table with some of these methods (missing ones are skipped):
--   set_model(model)                 before training (the default stores self.model)
--   on_train_begin(logs), on_train_end(logs)
--   on_epoch_begin(epoch, logs), on_epoch_end(epoch, logs)   logs: loss, metrics, val_* (end)
--   on_batch_begin(batch, logs), on_batch_end(batch, logs)   logs: the epoch's running figures
-- Setting model.stop_training = true ends fit after the current epoch.
-- nn.callbacks.Callback{...} and LambdaCallback{on_epoch_end = function(epoch, logs) ... end} make
-- one from plain functions (LambdaCallback's take no self).
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local class = require 'fastnn.class'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local M = {}

-- a constructor's extra, at the user's line: 1 too_many, 2 here, 3 __init, 4 the class call, 5 the user
local function ctor_extra(name, pos, v, takes) too_many('nn.callbacks.' .. name, pos, v, takes, 4) end

local Callback = class('Callback')
M.Callback = Callback
function Callback:set_model(model, extra)
   if extra ~= nil then too_many('nn.callbacks.Callback:set_model', 2, extra, 'model') end
   self.model = model
end
-- Callback{on_epoch_end = function(self, epoch, logs) ... end}: the table itself becomes the callback
function Callback.__new(cls, t, extra)
   if extra ~= nil then too_many('nn.callbacks.Callback', 2, extra, 'methods') end
   if t ~= nil and type(t) ~= 'table' then error('nn.callbacks.Callback: expected a table of methods', 2) end
   return setmetatable(t or {}, cls)
end

local HOOKS = {'on_train_begin', 'on_train_end', 'on_epoch_begin', 'on_epoch_end', 'on_batch_begin', 'on_batch_end'}

function M.LambdaCallback(fns, extra)
   if extra ~= nil then too_many('nn.callbacks.LambdaCallback', 2, extra, 'fns') end
   if type(fns) ~= 'table' then error('nn.callbacks.LambdaCallback: expected a table of functions', 2) end
   local cb = setmetatable({}, Callback)
   for _, h in ipairs(HOOKS) do
      local f = fns[h]
      if f ~= nil then
         if type(f) ~= 'function' then
            error(('nn.callbacks.LambdaCallback: %s is a %s, expected a function'):format(h, type(f)), 2)
         end
         cb[h] = function(_, ...) return f(...) end
      end
   end
   return cb
end

-- nn.callbacks.<name>: a class with a constructor taking (self, ...) and the user's error level 3
local function callback_class(name)
   local cls = class.extend(Callback, name)
   cls.__tostring = function() return 'nn.callbacks.' .. name end
   M[name] = cls
   return cls
end

-- each callback's options, declared once (docs/options.md)
local options = require 'fastnn.options'
local MONITOR = {'monitor', 'string', 'val_loss', "the history key watched ('val_loss', 'accuracy', ...)"}
local MODE = {'mode', 'string', 'auto', "'min', 'max', or 'auto' (max for accuracy, auc, precision, recall, f1)",
              values = {'auto', 'min', 'max'}}
local DECL = {
   EarlyStopping = {
      MONITOR, MODE,
      {'min_delta', 'number', 0, 'the least change that counts as an improvement'},
      {'patience', 'integer', 0, 'epochs without improvement before stopping', min = 0},
      {'baseline', 'number', nil, 'stop unless the figure beats it within patience'},
      {'restore_best_weights', 'boolean', false, "put the best epoch's weights back at the end"},
      {'start_from_epoch', 'integer', 0, 'epochs before any counting', min = 0},
   },
   ModelCheckpoint = {
      MONITOR, MODE,
      {'save_best_only', 'boolean', false, 'write only when the monitored figure improves'},
      {'save_weights_only', 'boolean', false, 'write weights (fnn.save) rather than the training state'},
   },
   LearningRateScheduler = {
      {'per', 'string', nil, "'epoch' or 'step': what the schedule's argument counts", values = {'epoch', 'step'},
       default_doc = "'epoch' for a function, 'step' for a schedule"},
   },
   ReduceLROnPlateau = {
      MONITOR, MODE,
      {'factor', 'number', 0.1, 'the rate is multiplied by it on a plateau', min = 0, max = 1, max_open = true},
      {'patience', 'integer', 10, 'epochs without improvement before a reduction', min = 0},
      {'min_delta', 'number', 1e-4, 'the least change that counts as an improvement'},
      {'cooldown', 'integer', 0, 'epochs to wait after a reduction', min = 0},
      {'min_lr', 'number', 0, 'the rate is never reduced below it', min = 0},
   },
   CSVLogger = {
      {'separator', 'string', ',', 'the field separator'},
      {'append', 'boolean', false, 'append to an existing file instead of replacing it'},
   },
   TensorBoard = {
      {'log_dir', 'string', 'logs', "the directory of the runs: <log_dir>/train and <log_dir>/validation"},
      {'histogram_freq', 'integer', 0, "every this many epochs, a histogram of each parameter (0: none)", min = 0},
   },
}
for name, entries in pairs(DECL) do DECL[name] = options.declare('nn.callbacks.' .. name, entries) end

-- errors at the user's line: 1 check, 2 here, 3 __init, 4 the class call, 5 the user
local function opts_of(name, opts)
   local o = DECL[name]:check(opts, 4)   -- not a tail call: that would drop this frame from the count
   return o
end

-- the (path, opts) of a callback that writes a file, checked at the user's line (a path: 1 here,
-- 2 __init, 3 the class call, 4 the user)
local function path_opts_of(name, path, opts)
   if type(path) ~= 'string' then
      error(('nn.callbacks.%s: path is a %s, expected a string'):format(name, type(path)), 4)
   end
   local o = DECL[name]:check(opts, 4)   -- as opts_of: this frame stands where its does
   return path, o
end

-- 'max' for figures that grow when better (accuracy, auc, precision, recall, f1), else 'min'
local function mode_of(name, mode, monitor)
   mode = mode or 'auto'
   if mode == 'auto' then
      local m = monitor:lower()
      if m:find('acc') or m:find('auc') or m:find('precision') or m:find('recall') or m:find('f1') then
         return 'max'
      end
      return 'min'
   end
   if mode ~= 'min' and mode ~= 'max' then
      error(("nn.callbacks.%s: mode is '%s', expected 'auto', 'min' or 'max'"):format(name, show_value(mode)), 4)
   end
   return mode
end

local function monitored(name, monitor, logs)
   local v = logs[monitor]
   if type(v) ~= 'number' then
      local keys = {}
      for k in pairs(logs) do keys[#keys + 1] = k end
      table.sort(keys)
      error(("nn.callbacks.%s: '%s' is not in the epoch's logs (they have %s)%s"):format(name, monitor,
            #keys > 0 and table.concat(keys, ', ') or 'nothing',
            monitor:match('^val_') and '; pass validation_data or validation_split to fit' or ''), 0)
   end
   return v
end

-- a copy of every parameter and buffer (the optimizer updates parameters in place)
local function snapshot(model)
   local s = {params = {}, buffers = {}}
   for i, pair in ipairs(model:named_parameters()) do s.params[i] = {pair[2], pair[2]:tensor():detach() * 1} end
   for i, pair in ipairs(model:named_buffers()) do s.buffers[i] = {pair[1], pair[2]} end
   return s
end
local function restore(model, s)
   for _, e in ipairs(s.params) do e[1]:set(e[2]) end
   for _, e in ipairs(s.buffers) do model:set_buffer(e[1], e[2]) end
end
M._snapshot, M._restore = snapshot, restore

-- ---------------------------------------------------------------------------
-- EarlyStopping{monitor = 'val_loss', min_delta = 0, patience = 0, mode = 'auto', baseline,
-- restore_best_weights = false, start_from_epoch = 0}: stops fit when the monitored figure has not
-- improved by more than min_delta for `patience` epochs in a row. With restore_best_weights, the
-- weights (and buffers) of the best epoch are put back when it stops. stopped_epoch and best
-- say what happened.
local EarlyStopping = callback_class('EarlyStopping')
function EarlyStopping:__init(opts, extra)
   if extra ~= nil then ctor_extra('EarlyStopping', 2, extra, 'opts') end
   opts = opts_of('EarlyStopping', opts)
   self.monitor = opts.monitor or 'val_loss'
   self.min_delta = math.abs(opts.min_delta or 0)
   self.patience = opts.patience or 0
   self.mode = mode_of('EarlyStopping', opts.mode, self.monitor)
   self.baseline = opts.baseline
   self.restore_best_weights = opts.restore_best_weights and true or false
   self.start_from_epoch = opts.start_from_epoch or 0
end
function EarlyStopping:_better(v, ref)
   if self.mode == 'min' then return v < ref - self.min_delta end
   return v > ref + self.min_delta
end
function EarlyStopping:on_train_begin(_logs, extra)
   if extra ~= nil then too_many('nn.callbacks.EarlyStopping:on_train_begin', 2, extra, 'logs') end
   self.wait, self.stopped_epoch, self.best_epoch = 0, 0, 0
   self.best = self.mode == 'min' and math.huge or -math.huge
   self.best_weights = nil
end
function EarlyStopping:on_epoch_end(epoch, logs, extra)
   if extra ~= nil then too_many('nn.callbacks.EarlyStopping:on_epoch_end', 3, extra, 'epoch, logs') end
   if epoch <= self.start_from_epoch then return end
   local v = monitored('EarlyStopping', self.monitor, logs)
   if self.restore_best_weights and self.best_weights == nil then self.best_weights = snapshot(self.model) end
   self.wait = self.wait + 1
   if self:_better(v, self.best) then
      self.best, self.best_epoch = v, epoch
      if self.restore_best_weights then self.best_weights = snapshot(self.model) end
      if self.baseline == nil or self:_better(v, self.baseline) then self.wait = 0 end
      return
   end
   if self.wait >= self.patience and epoch > 1 then
      self.stopped_epoch = epoch
      self.model.stop_training = true
      if self.restore_best_weights and self.best_weights then restore(self.model, self.best_weights) end
   end
end

-- ---------------------------------------------------------------------------
-- ModelCheckpoint(path, {monitor = 'val_loss', save_best_only = false, mode = 'auto',
-- save_weights_only = false}): after each epoch, fnn.save_training(model, optimizer, step, path)
-- (step = the optimizer's step count), or fnn.save(model, path) with save_weights_only. '{epoch}'
-- in path is replaced by the epoch number ('{epoch:03d}' pads it). last_path is the last file.
local ModelCheckpoint = callback_class('ModelCheckpoint')
function ModelCheckpoint:__init(path, opts, extra)
   if extra ~= nil then ctor_extra('ModelCheckpoint', 3, extra, 'path, opts') end
   path, opts = path_opts_of('ModelCheckpoint', path, opts)
   self.path = path
   self.monitor = opts.monitor or 'val_loss'
   self.save_best_only = opts.save_best_only and true or false
   self.save_weights_only = opts.save_weights_only and true or false
   self.mode = mode_of('ModelCheckpoint', opts.mode, self.monitor)
   self.best = self.mode == 'min' and math.huge or -math.huge
end
function ModelCheckpoint:path_for(epoch, extra)
   if extra ~= nil then too_many('nn.callbacks.ModelCheckpoint:path_for', 2, extra, 'epoch') end
   return (self.path:gsub('{epoch:?([^}]*)}', function(f)
      return f ~= '' and ('%' .. f):format(epoch) or tostring(epoch)
   end))
end
function ModelCheckpoint:on_epoch_end(epoch, logs, extra)
   if extra ~= nil then too_many('nn.callbacks.ModelCheckpoint:on_epoch_end', 3, extra, 'epoch, logs') end
   if self.save_best_only then
      local v = monitored('ModelCheckpoint', self.monitor, logs)
      local better = self.mode == 'min' and v < self.best or self.mode == 'max' and v > self.best
      if not better then return end
      self.best = v
   end
   local fnn = require 'fastnn'
   local path = self:path_for(epoch)
   local model = self.model
   if self.save_weights_only or not model.optimizer then
      fnn.save(model, path)
   else
      fnn.save_training(model, model.optimizer, model.optimizer:steps(), path)
   end
   self.last_path = path
end

-- ---------------------------------------------------------------------------
-- LearningRateScheduler(schedule, {per = ...}): sets the optimizer's rate
--   a function(epoch, lr) -> lr   at the start of each epoch (Keras; epochs from 1)
--   an optim schedule (lr_at)     per step by default: lr_at(optimizer steps so far), so step 0
--                                 is the first; {per = 'epoch'} uses lr_at(epoch - 1)
-- The rate in force is logged as logs.lr at each epoch's end.
local LearningRateScheduler = callback_class('LearningRateScheduler')
function LearningRateScheduler:__init(schedule, opts, extra)
   if extra ~= nil then ctor_extra('LearningRateScheduler', 3, extra, 'schedule, opts') end
   local is_fn = type(schedule) == 'function'
   local is_sched = type(schedule) == 'table' and type(schedule.lr_at) == 'function'
   if not (is_fn or is_sched) then
      error(('nn.callbacks.LearningRateScheduler: expected a function(epoch, lr) or a schedule with lr_at, '
             .. 'got a %s'):format(type(schedule)), 3)
   end
   opts = opts_of('LearningRateScheduler', opts)
   self.schedule = schedule
   self.per = opts.per or (is_fn and 'epoch' or 'step')
   if self.per ~= 'epoch' and self.per ~= 'step' then
      error(("nn.callbacks.LearningRateScheduler: per is '%s', expected 'epoch' or 'step'"):format(
         show_value(self.per)), 3)
   end
   if is_fn and self.per == 'step' then
      error('nn.callbacks.LearningRateScheduler: a function is called per epoch; pass a schedule for per = step', 3)
   end
end
function LearningRateScheduler:on_epoch_begin(epoch, _logs, extra)
   if extra ~= nil then too_many('nn.callbacks.LearningRateScheduler:on_epoch_begin', 3, extra, 'epoch, logs') end
   if self.per ~= 'epoch' then return end
   local opt, lr = self.model.optimizer
   if type(self.schedule) == 'function' then lr = self.schedule(epoch, opt:lr())
   else lr = self.schedule:lr_at(epoch - 1) end
   if type(lr) ~= 'number' then
      error(('nn.callbacks.LearningRateScheduler: the schedule returned a %s, expected a number'):format(type(lr)), 0)
   end
   opt:set_lr(lr)
end
function LearningRateScheduler:on_batch_begin(_batch, _logs, extra)
   if extra ~= nil then too_many('nn.callbacks.LearningRateScheduler:on_batch_begin', 3, extra, 'batch, logs') end
   if self.per ~= 'step' then return end
   local opt = self.model.optimizer
   opt:set_lr(self.schedule:lr_at(opt:steps()))
end
function LearningRateScheduler:on_epoch_end(_, logs, extra)
   if extra ~= nil then too_many('nn.callbacks.LearningRateScheduler:on_epoch_end', 3, extra, 'epoch, logs') end
   logs.lr = self.model.optimizer:lr()
end

-- ---------------------------------------------------------------------------
-- ReduceLROnPlateau{monitor = 'val_loss', factor = 0.1, patience = 10, mode = 'auto',
-- min_delta = 1e-4, cooldown = 0, min_lr = 0} (Keras): multiplies the rate by factor when the
-- figure has not improved by min_delta for `patience` epochs; then waits `cooldown` epochs.
local ReduceLROnPlateau = callback_class('ReduceLROnPlateau')
function ReduceLROnPlateau:__init(opts, extra)
   if extra ~= nil then ctor_extra('ReduceLROnPlateau', 2, extra, 'opts') end
   opts = opts_of('ReduceLROnPlateau', opts)
   self.monitor = opts.monitor or 'val_loss'
   self.factor = opts.factor or 0.1
   if type(self.factor) ~= 'number' or self.factor >= 1 or self.factor < 0 then
      error(('nn.callbacks.ReduceLROnPlateau: factor is %s, expected a number in [0, 1)'):format(
         show_value(self.factor)), 3)
   end
   self.patience = opts.patience or 10
   self.mode = mode_of('ReduceLROnPlateau', opts.mode, self.monitor)
   self.min_delta = opts.min_delta or 1e-4
   self.cooldown = opts.cooldown or 0
   self.min_lr = opts.min_lr or 0
end
function ReduceLROnPlateau:on_train_begin(_logs, extra)
   if extra ~= nil then too_many('nn.callbacks.ReduceLROnPlateau:on_train_begin', 2, extra, 'logs') end
   self.wait, self.cooling = 0, 0
   self.best = self.mode == 'min' and math.huge or -math.huge
end
function ReduceLROnPlateau:on_epoch_end(_, logs, extra)
   if extra ~= nil then too_many('nn.callbacks.ReduceLROnPlateau:on_epoch_end', 3, extra, 'epoch, logs') end
   local v = monitored('ReduceLROnPlateau', self.monitor, logs)
   local opt = self.model.optimizer
   logs.lr = opt:lr()
   local in_cooldown = self.cooling > 0
   if in_cooldown then
      self.cooling = self.cooling - 1
      self.wait = 0
   end
   local better = self.mode == 'min' and v < self.best - self.min_delta or
                  self.mode == 'max' and v > self.best + self.min_delta
   if better then
      self.best, self.wait = v, 0
   elseif not in_cooldown then
      self.wait = self.wait + 1
      if self.wait >= self.patience then
         local old = opt:lr()
         if old > self.min_lr then
            opt:set_lr(math.max(old * self.factor, self.min_lr))
            self.cooling, self.wait = self.cooldown, 0
         end
      end
   end
end

-- ---------------------------------------------------------------------------
-- CSVLogger(path, {separator = ',', append = false}): one row per epoch: epoch, then the logs'
-- keys in sorted order (the header names them)
local CSVLogger = callback_class('CSVLogger')
function CSVLogger:__init(path, opts, extra)
   if extra ~= nil then ctor_extra('CSVLogger', 3, extra, 'path, opts') end
   path, opts = path_opts_of('CSVLogger', path, opts)
   self.path, self.separator, self.append = path, opts.separator or ',', opts.append and true or false
end
function CSVLogger:on_train_begin(_logs, extra)
   if extra ~= nil then too_many('nn.callbacks.CSVLogger:on_train_begin', 2, extra, 'logs') end
   local f, err = io.open(self.path, self.append and 'a' or 'w')
   if not f then error(('nn.callbacks.CSVLogger: cannot open %s: %s'):format(self.path, tostring(err)), 0) end
   self.file, self.keys = f, nil
   self.has_header = false
   if self.append then
      local r = io.open(self.path, 'r')
      if r then self.has_header = r:read(1) ~= nil; r:close() end
   end
end
function CSVLogger:on_epoch_end(epoch, logs, extra)
   if extra ~= nil then too_many('nn.callbacks.CSVLogger:on_epoch_end', 3, extra, 'epoch, logs') end
   if not self.keys then
      local keys = {}
      for k, v in pairs(logs) do if type(v) == 'number' then keys[#keys + 1] = k end end
      table.sort(keys)
      self.keys = keys
      if not self.has_header then
         self.file:write('epoch', self.separator, table.concat(keys, self.separator), '\n')
      end
   end
   local row = {tostring(epoch)}
   for i, k in ipairs(self.keys) do
      local v = logs[k]
      row[i + 1] = type(v) == 'number' and ('%.10g'):format(v) or ''
   end
   self.file:write(table.concat(row, self.separator), '\n')
   self.file:flush()
end
function CSVLogger:on_train_end(_logs, extra)
   if extra ~= nil then too_many('nn.callbacks.CSVLogger:on_train_end', 2, extra, 'logs') end
   if self.file then self.file:close(); self.file = nil end
end

-- ---------------------------------------------------------------------------
-- TensorBoard{log_dir = 'logs', histogram_freq = 0} (or TensorBoard('logs')), Keras' layout: at each
-- epoch's end the run <log_dir>/train gets epoch_<name> for each figure of the logs (loss,
-- metrics) and epoch_learning_rate (the optimizer's rate), and <log_dir>/validation gets the val_
-- figures under the same names, so TensorBoard draws each figure's two curves in one chart. The step
-- is fit's 1-based epoch number. With histogram_freq = k, every k-th epoch adds a histogram of each
-- parameter (by its named_parameters() name) to the train run. Each epoch's events are flushed.
local TensorBoard = class('TensorBoard')
function TensorBoard:__init(opts, extra)
   if extra ~= nil then ctor_extra('TensorBoard', 2, extra, 'opts') end
   if type(opts) == 'string' then opts = {log_dir = opts} end
   opts = opts_of('TensorBoard', opts)
   self.log_dir = opts.log_dir
   self.histogram_freq = opts.histogram_freq
end
function TensorBoard:_writer(name)
   local w = self.writers[name]
   if not w then
      w = require('fastnn.tensorboard').SummaryWriter(self.log_dir .. '/' .. name)
      self.writers[name] = w
   end
   return w
end
function TensorBoard:on_train_begin(_logs, extra)
   if extra ~= nil then too_many('nn.callbacks.TensorBoard:on_train_begin', 2, extra, 'logs') end
   self.writers = {}
end
function TensorBoard:on_epoch_end(epoch, logs, extra)
   if extra ~= nil then too_many('nn.callbacks.TensorBoard:on_epoch_end', 3, extra, 'epoch, logs') end
   local keys = {}
   for k, v in pairs(logs) do
      if type(v) == 'number' and k ~= 'lr' then keys[#keys + 1] = k end   -- lr: epoch_learning_rate below
   end
   table.sort(keys)
   local train = self:_writer('train')
   for _, k in ipairs(keys) do
      local val = k:match('^val_(.+)$')
      if val then self:_writer('validation'):add_scalar('epoch_' .. val, logs[k], epoch)
      else train:add_scalar('epoch_' .. k, logs[k], epoch) end
   end
   local opt = self.model and self.model.optimizer
   if opt and opt.lr then train:add_scalar('epoch_learning_rate', opt:lr(), epoch) end
   if self.histogram_freq > 0 and epoch % self.histogram_freq == 0 then
      for _, pair in ipairs(self.model:named_parameters()) do
         train:add_histogram(pair[1], pair[2]:tensor(), epoch)
      end
   end
   for _, w in pairs(self.writers) do w:flush() end
end
function TensorBoard:on_train_end(_logs, extra)
   if extra ~= nil then too_many('nn.callbacks.TensorBoard:on_train_end', 2, extra, 'logs') end
   for _, w in pairs(self.writers or {}) do w:close() end
   self.writers = {}
end
M.TensorBoard = TensorBoard

-- ---------------------------------------------------------------------------
-- History (made by fit, which returns its table): history.loss, history.val_loss, ... per epoch,
-- history.epoch the epoch numbers
local History = callback_class('History')
function History:__init(extra)
   if extra ~= nil then ctor_extra('History', 1, extra, '') end
   self.history = {epoch = {}}
end
function History:on_epoch_end(epoch, logs, extra)
   if extra ~= nil then too_many('nn.callbacks.History:on_epoch_end', 3, extra, 'epoch, logs') end
   local h = self.history
   h.epoch[#h.epoch + 1] = epoch
   for k, v in pairs(logs) do
      if type(v) == 'number' then
         local list = h[k]
         if not list then list = {}; h[k] = list end
         list[#h.epoch] = v
      end
   end
end

M.hooks = HOOKS
return M
