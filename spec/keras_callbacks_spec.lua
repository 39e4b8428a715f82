-- fit's callbacks: the hook protocol, EarlyStopping (patience, restore_best_weights),
-- ModelCheckpoint (save_training), LearningRateScheduler (functions and optim schedules),
-- ReduceLROnPlateau, CSVLogger; and what fit prints without a terminal and on one (script(1)).
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim
local support = require 'support'
local cb = nn.callbacks

local function data(n)
   fnn.manual_seed(21)
   local x = fnn.randn(n, 3)
   return x, x:matmul(fnn.tensor({{1.0}, {-1.0}, {2.0}}))
end

local function model(lr)
   fnn.manual_seed(22)
   local m = nn.Sequential(nn.Dense(4, 'tanh'), nn.Dense(1)):build{2, 3}
   m:compile{optimizer = optim.SGD{lr = lr or 0.05}, loss = 'mse'}
   return m
end

-- a callback (listed before the one under test) that replaces val_loss by a fixed sequence
local function scripted(values)
   return {on_epoch_end = function(_, epoch, logs) logs.val_loss = values[epoch] end}
end

local function weights(m)
   local out = {}
   for _, p in ipairs(m:parameters()) do
      for _, v in ipairs(p:tensor():to_flat()) do out[#out + 1] = v end
   end
   return out
end

describe('callbacks', function()
   it('calls the hooks in order with 1-based epochs and batches', function()
      local m = model()
      local x, y = data(6)
      local seen = {}
      local user = {
         on_train_begin = function() seen[#seen + 1] = 'train_begin' end,
         on_epoch_begin = function(_, e) seen[#seen + 1] = 'epoch_begin ' .. e end,
         on_batch_begin = function(_, b) seen[#seen + 1] = 'batch_begin ' .. b end,
         on_batch_end = function(_, b, logs) seen[#seen + 1] = ('batch_end %d %s'):format(b, type(logs.loss)) end,
         on_epoch_end = function(_, e, logs) seen[#seen + 1] = ('epoch_end %d %s'):format(e, type(logs.loss)) end,
         on_train_end = function() seen[#seen + 1] = 'train_end' end,
      }
      m:fit(x, y, {epochs = 2, batch_size = 4, callbacks = {user}, verbose = 0})
      assert.same({'train_begin', 'epoch_begin 1', 'batch_begin 1', 'batch_end 1 number', 'batch_begin 2',
                   'batch_end 2 number', 'epoch_end 1 number', 'epoch_begin 2', 'batch_begin 1', 'batch_end 1 number',
                   'batch_begin 2', 'batch_end 2 number', 'epoch_end 2 number', 'train_end'}, seen)
      assert.equals(m, user.model)
      -- LambdaCallback takes plain functions
      local epochs = {}
      m:fit(x, y, {epochs = 3, callbacks = {cb.LambdaCallback{on_epoch_end = function(e) epochs[#epochs + 1] = e end}},
                   verbose = 0})
      assert.same({1, 2, 3}, epochs)
   end)

   it('a callback stops fit with model.stop_training', function()
      local m = model()
      local x, y = data(4)
      local h = m:fit(x, y, {epochs = 10, verbose = 0, callbacks = {
         {on_epoch_end = function(self, e) if e == 3 then self.model.stop_training = true end end}}})
      assert.equals(3, #h.loss)
   end)

   it('EarlyStopping waits `patience` epochs without improvement, then restores the best weights', function()
      local m = model(0.1)
      local x, y = data(8)
      local best
      local keep = {on_epoch_end = function(_, e) if e == 2 then best = weights(m) end end}
      local es = cb.EarlyStopping{monitor = 'val_loss', patience = 2, restore_best_weights = true}
      local h = m:fit(x, y, {epochs = 10, verbose = 0, callbacks = {scripted{3, 1, 2, 2.5, 0.1}, keep, es}})
      assert.equals(4, #h.loss)          -- best at 2, no improvement at 3 and 4
      assert.equals(4, es.stopped_epoch)
      assert.equals(2, es.best_epoch)
      assert.equals(1, es.best)
      support.approx(best, weights(m), 1e-7)
      -- without restore_best_weights the last weights stay
      local m2 = model(0.1)
      local last
      local keep2 = {on_epoch_end = function(_, e) if e == 4 then last = weights(m2) end end}
      m2:fit(x, y, {epochs = 10, verbose = 0, callbacks = {scripted{3, 1, 2, 2.5}, keep2, cb.EarlyStopping{patience = 2}}})
      support.approx(last, weights(m2), 1e-7)
      -- min_delta: smaller improvements do not count; mode max for accuracy-like names
      local es3 = cb.EarlyStopping{monitor = 'val_loss', patience = 1, min_delta = 0.5}
      local h3 = model():fit(x, y, {epochs = 10, verbose = 0, callbacks = {scripted{3, 2.8, 2.7, 1}, es3}})
      assert.equals(2, #h3.loss)
      assert.equals('max', cb.EarlyStopping{monitor = 'val_accuracy'}.mode)
   end)

   it('EarlyStopping names a monitored figure the logs lack', function()
      local x, y = data(4)
      local err = support.err_of(function()
         model():fit(x, y, {epochs = 2, verbose = 0, callbacks = {cb.EarlyStopping{}}})
      end)
      assert.matches("EarlyStopping: 'val_loss' is not in the epoch's logs (they have loss)", err, 1, true)
      assert.matches('pass validation_data or validation_split', err, 1, true)
   end)

   it('ModelCheckpoint writes training checkpoints through save_training', function()
      local m = model()
      local x, y = data(8)
      local dir = os.tmpname()
      local ck = cb.ModelCheckpoint(dir .. '-{epoch:02d}.fdl', {monitor = 'loss'})
      m:fit(x, y, {epochs = 2, batch_size = 4, verbose = 0, callbacks = {ck}})
      assert.equals(dir .. '-02.fdl', ck.last_path)
      local fresh = model()
      local step = fnn.load_training(fresh, fresh.optimizer, dir .. '-02.fdl')
      assert.equals(4, step)
      support.approx(weights(m), weights(fresh), 1e-7)
      -- save_best_only skips epochs that do not improve
      local best = cb.ModelCheckpoint(dir .. '-best-{epoch}.fdl', {save_best_only = true})
      m:fit(x, y, {epochs = 3, verbose = 0, callbacks = {scripted{2, 3, 1}, best}})
      assert.equals(dir .. '-best-3.fdl', best.last_path)
      assert.is_nil(io.open(dir .. '-best-2.fdl', 'rb'))
      -- save_weights_only writes a weights file, which load_training refuses and load takes
      local w = cb.ModelCheckpoint(dir .. '-w.fdl', {save_weights_only = true})
      m:fit(x, y, {epochs = 1, verbose = 0, callbacks = {w}})
      assert.matches('load_training', support.err_of(function() fnn.load_training(fresh, fresh.optimizer, w.last_path) end))
      fnn.load(fresh, w.last_path)
      support.approx(weights(m), weights(fresh), 1e-7)
      for _, p in ipairs{'-01.fdl', '-02.fdl', '-best-1.fdl', '-best-3.fdl', '-w.fdl'} do os.remove(dir .. p) end
      os.remove(dir)
   end)

   it('LearningRateScheduler: a function per epoch, a schedule per step', function()
      local m = model()
      local x, y = data(8)
      local h = m:fit(x, y, {epochs = 3, batch_size = 4, verbose = 0,
                             callbacks = {cb.LearningRateScheduler(function(epoch, lr) return 0.01 * epoch end)}})
      support.approx({0.01, 0.02, 0.03}, h.lr, 1e-12)
      local sched = optim.StepDecay(0.1, 3, 0.5)
      local rates = {}
      local m2 = model()
      m2:fit(x, y, {epochs = 2, batch_size = 2, verbose = 0, callbacks = {cb.LearningRateScheduler(sched),
         {on_batch_end = function() rates[#rates + 1] = m2.optimizer:lr() end}}})
      local want = {}
      for s = 0, 7 do want[s + 1] = sched:lr_at(s) end
      support.approx(want, rates, 1e-12)
      -- a schedule per epoch: lr_at(epoch - 1)
      local h3 = model():fit(x, y, {epochs = 3, verbose = 0, callbacks = {
         cb.LearningRateScheduler(optim.ExponentialDecay(0.1, 1, 0.5), {per = 'epoch'})}})
      support.approx({0.1, 0.05, 0.025}, h3.lr, 1e-9)
      assert.matches('expected a function%(epoch, lr%) or a schedule', support.err_of(function()
         cb.LearningRateScheduler(3) end))
   end)

   it('ReduceLROnPlateau cuts the rate after `patience` flat epochs, then cools down', function()
      local m = model(0.1)
      local x, y = data(4)
      local r = cb.ReduceLROnPlateau{factor = 0.5, patience = 2, cooldown = 1}
      local h = m:fit(x, y, {epochs = 7, verbose = 0, callbacks = {scripted{1, 1, 1, 1, 1, 1, 1}, r}})
      -- logged before each epoch's decision: wait 1, 2 -> cut after epoch 3; cooldown at 4; cut after 6
      support.approx({0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025}, h.lr, 1e-12)
   end)

   it('CSVLogger writes a header and one row per epoch', function()
      local m = model()
      local x, y = data(4)
      local path = os.tmpname()
      m:compile{optimizer = optim.SGD{lr = 0.05}, loss = 'mse', metrics = {'mae'}}
      local h = m:fit(x, y, {epochs = 3, verbose = 0, callbacks = {cb.CSVLogger(path)}})
      local lines = {}
      for l in io.lines(path) do lines[#lines + 1] = l end
      os.remove(path)
      assert.equals(4, #lines)
      assert.equals('epoch,loss,mae', lines[1])
      local e, loss = lines[3]:match('^(%d+),([^,]+),')
      assert.equals('2', e)
      assert.is_true(math.abs(tonumber(loss) - h.loss[2]) < 1e-9)
   end)
end)

-- ---------------------------------------------------------------------------
-- what fit prints, from a child process

local function write_file(path, text)
   local f = assert(io.open(path, 'wb'))
   f:write(text)
   f:close()
end

local PROGRAM = [[
package.path = './lua/?.lua;./lua/?/init.lua;' .. package.path
local fnn = require 'fastnn'
local nn = fnn.nn
fnn.manual_seed(1)
local x = fnn.randn(64, 3)
local y = x:sum(2, true)
local m = nn.Sequential(nn.Dense(4, 'relu'), nn.Dense(1)):build{8, 3}
m:compile{optimizer = 'adam', loss = 'mse', metrics = {'mae'}}
m:fit(x, y, {epochs = 2, batch_size = 8, validation_split = 0.25, verbose = tonumber(arg[1])})
print('done')
]]

local function run(cmd)
   local p = io.popen(cmd .. ' 2>&1')
   local out = p:read('*a')
   p:close()
   return out
end

describe('fit output', function()
   local base = os.tmpname()
   local prog = base .. '.lua'
   setup(function() write_file(prog, PROGRAM) end)
   teardown(function() os.remove(prog); os.remove(base) end)
   local env = 'FASTNN_PROGRESS= '

   it('prints one line per epoch when stdout is not a terminal, nothing with verbose 0', function()
      local out = run(env .. 'luajit ' .. prog .. ' 1 | cat')
      assert.matches('^Epoch 1/2 %- 6/6 %- [%dmu]+s %- loss: [%d.]+ %- mae: [%d.]+ %- val_loss: [%d.]+ %- val_mae: [%d.]+\n'
                     .. 'Epoch 2/2 %- 6/6 %- [^\n]+\ndone\n$', out)
      assert.is_nil(out:find('\r', 1, true))
      assert.equals('done\n', run(env .. 'luajit ' .. prog .. ' 0 | cat'))
   end)

   it('redraws a bar in place on a terminal (script(1)) and ends with the epoch figures', function()
      local has_script = run('command -v script') ~= ''
      assert.is_true(has_script, 'script(1) is needed for this spec (util-linux)')
      local out = run(('script -qec %q /dev/null'):format(env .. 'luajit ' .. prog .. ' 1'))
      out = out:gsub('\r\n', '\n')
      assert.matches('Epoch 1/2\n', out, 1, true)
      assert.matches('Epoch 2/2\n', out, 1, true)
      -- the last state of each epoch's line: the full bar, time per step, the figures
      local finals = {}
      for line in out:gmatch('[^\n]+') do
         local last = line:match('([^\r]*)$')
         if last:match('^6/6 %[') then finals[#finals + 1] = last end
      end
      assert.equals(2, #finals, out)
      for _, f in ipairs(finals) do
         assert.matches('^6/6 %[==============================%] %- [%dmu]+s [%dmu]+s/step %- loss: [%d.]+ %- mae: [%d.]+'
                        .. ' %- val_loss: [%d.]+ %- val_mae: [%d.]+ *$', f)
      end
      -- verbose = 2 prints the plain lines even on a terminal
      local two = run(('script -qec %q /dev/null'):format(env .. 'luajit ' .. prog .. ' 2')):gsub('\r\n', '\n')
      assert.matches('^Epoch 1/2 %- 6/6 %- [^\n]+\nEpoch 2/2 %- 6/6 %- [^\n]+\ndone\n$', two)
      -- the first step was drawn, then redrawn over in place
      assert.matches('\r1/6 [====>.........................] - ETA: ', out, 1, true)
   end)
end)
