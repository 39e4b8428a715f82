-- compile / fit / train_batch / evaluate / predict on nn.Sequential, with losses and metrics
-- checked against loops in this file, validation_split's held-out samples, gradient clipping,
-- seeds, learning rates and weights files.
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim
local support = require 'support'

local SPEC_FILE = 'keras_fit_spec.lua'
local function err_here(f)
   local err = support.err_of(f)
   assert.matches(SPEC_FILE .. ':%d+:', err)
   return err
end

-- y = x . w_true + 0.5 for n samples of 3 features
local function regression(n)
   local x = fnn.randn(n, 3)
   local y = x:matmul(fnn.tensor({{1.0}, {-2.0}, {0.5}})) + 0.5
   return x, y
end

local function model_for(seed)
   fnn.manual_seed(seed or 1)
   return nn.Sequential():add(nn.Dense(8, 'tanh')):add(nn.Dense(1)):build{4, 3}
end

-- mean squared error by loops
local function mse_loop(pred, target)
   local p, t = pred:to_flat(), target:to_flat()
   local s = 0
   for i = 1, #p do s = s + (p[i] - t[i]) ^ 2 end
   return s / #p
end

describe('compile and fit', function()
   it('fit before compile is an error saying so', function()
      local m = model_for()
      local x, y = regression(8)
      assert.matches('fit: the model is not compiled; call model:compile', err_here(function() m:fit(x, y) end), 1, true)
      assert.matches('evaluate: the model is not compiled', err_here(function() m:evaluate(x, y) end), 1, true)
   end)

   it('refuses unknown names and mismatched data at the caller line', function()
      local m = model_for()
      assert.matches("compile: unknown loss 'msee'", err_here(function() m:compile{loss = 'msee'} end), 1, true)
      assert.matches("compile: unknown optimizer 'adamm'",
                     err_here(function() m:compile{loss = 'mse', optimizer = 'adamm'} end), 1, true)
      assert.matches("compile: unknown metric 'acuracy'",
                     err_here(function() m:compile{loss = 'mse', metrics = {'acuracy'}} end), 1, true)
      m:compile{loss = 'mse', optimizer = 'sgd'}
      assert.matches('fit: [10,3] and [9,1] differ in dim 1 (the samples)',
                     err_here(function() m:fit(fnn.zeros(10, 3), fnn.zeros(9, 1), {verbose = 0}) end), 1, true)
      assert.matches('fit: batch_size is 0, expected a positive integer',
                     err_here(function() m:fit(fnn.zeros(10, 3), fnn.zeros(10, 1), {batch_size = 0}) end), 1, true)
      -- a layer's refusal during fit names the layer
      assert.matches('Sequential[1] nn.Dense(3 -> 8, tanh)',
                     err_here(function() m:fit(fnn.zeros(10, 5), fnn.zeros(10, 1), {verbose = 0}) end), 1, true)
   end)

   it('binds an unbound optimizer and lowers the loss; history has one entry per epoch', function()
      local m = model_for(2)
      local x, y = regression(64)
      local opt = optim.Adam{lr = 0.02}
      m:compile{optimizer = opt, loss = 'mse', metrics = {'mae'}}
      assert.equals(#m:parameters(), #opt:parameters())
      local h = m:fit(x, y, {epochs = 6, batch_size = 16, verbose = 0})
      assert.equals(6, #h.loss)
      assert.equals(6, #h.mae)
      assert.same({1, 2, 3, 4, 5, 6}, h.epoch)
      assert.is_true(h.loss[6] < 0.5 * h.loss[1], ('loss %g -> %g'):format(h.loss[1], h.loss[6]))
      assert.equals(6 * 4, opt:steps())   -- 64 / 16 batches per epoch
   end)

   it('validation_split holds out the last fraction; val_loss is the loss on those samples', function()
      local m = model_for(3)
      local x, y = regression(40)
      m:compile{optimizer = optim.SGD{lr = 0.05}, loss = 'mse', metrics = {'mse'}}
      local batches = 0
      local probe = {on_batch_end = function(_, b) batches = math.max(batches, b) end}
      local h = m:fit(x, y, {epochs = 3, batch_size = 10, validation_split = 0.25, callbacks = {probe}, verbose = 0})
      assert.equals(3, batches)   -- 30 training samples in batches of 10
      assert.equals(3, #h.val_loss)
      local xv, yv = x:narrow(1, 31, 10), y:narrow(1, 31, 10)
      local want = mse_loop(m:predict(xv), yv)
      assert.is_true(math.abs(h.val_loss[3] - want) < 1e-5 * math.max(1, want), ('%g vs %g'):format(h.val_loss[3], want))
      assert.is_true(math.abs(h.val_mse[3] - want) < 1e-5 * math.max(1, want))
      local loss, ms = m:evaluate(xv, yv, {batch_size = 3})
      assert.is_true(math.abs(loss - want) < 1e-5 * math.max(1, want))
      assert.is_true(math.abs(ms.mse - want) < 1e-5 * math.max(1, want))
   end)

   it('validation_data gives val_ figures for each metric', function()
      local m = model_for(4)
      local x, y = regression(16)
      local xv, yv = regression(8)
      m:compile{optimizer = 'adam', loss = 'mse', metrics = {'mae'}}
      local h = m:fit(x, y, {epochs = 2, batch_size = 8, validation_data = {xv, yv}, verbose = 0})
      assert.equals(2, #h.val_loss)
      assert.equals(2, #h.val_mae)
      local p, t = m:predict(xv):to_flat(), yv:to_flat()
      local s = 0
      for i = 1, #p do s = s + math.abs(p[i] - t[i]) end
      assert.is_true(math.abs(h.val_mae[2] - s / #p) < 1e-5)
   end)

   it('predict is batched and equals the forward pass; it needs no compile', function()
      local m = model_for(5)
      local x = fnn.randn(10, 3)
      local whole = m(x)
      local p = m:predict(x, {batch_size = 3})
      assert.same({10, 1}, p:shape())
      support.approx(whole:to_flat(), p, 1e-6)
      assert.is_nil(p:grad_fn())
   end)

   it('predict raises a layer refusal at the caller line', function()
      local m = model_for(5)
      assert.matches('Sequential[1] nn.Dense(3 -> 8, tanh)', err_here(function() m:predict(fnn.zeros(4, 5)) end), 1, true)
      assert.matches('predict: x is a string, expected a tensor', err_here(function() m:predict('x') end), 1, true)
   end)

   it('train_batch runs one step and returns the batch loss', function()
      local m = model_for(6)
      local x, y = regression(8)
      m:compile{optimizer = optim.SGD{lr = 0.1}, loss = 'mse'}
      local before = mse_loop(m:predict(x), y)
      local l1 = m:train_batch(x, y)
      assert.is_true(math.abs(l1 - before) < 1e-5 * math.max(1, before))
      local l2 = m:train_batch(x, y)
      assert.is_true(l2 < l1)
   end)

   it('global_clipnorm bounds the update of one SGD step', function()
      local m = model_for(7)
      local x, y = regression(8)
      m:compile{optimizer = optim.SGD{lr = 1}, loss = 'mse', global_clipnorm = 1e-3}
      local before = {}
      for i, p in ipairs(m:parameters()) do before[i] = p:tensor():detach() * 1 end
      m:train_batch(x, y * 100)
      local sq = 0
      for i, p in ipairs(m:parameters()) do
         local d = (p:tensor() - before[i]):to_flat()
         for _, v in ipairs(d) do sq = sq + v * v end
      end
      assert.is_true(math.sqrt(sq) <= 1e-3 * 1.001, 'update norm ' .. math.sqrt(sq))
      assert.is_true(math.sqrt(sq) > 1e-4)
   end)

   it('set_seed makes the shuffling reproducible; learning_rate and set_learning_rate', function()
      local function run()
         local m = model_for(8)
         m:set_seed(42)
         local x, y = regression(32)
         m:compile{optimizer = optim.SGD{lr = 0.05}, loss = 'mse'}
         return m:fit(x, y, {epochs = 3, batch_size = 5, verbose = 0}).loss, m
      end
      local a, m = run()
      local b = run()
      assert.same(a, b)
      assert.equals(0.05, m:learning_rate())
      m:set_learning_rate(0.01)
      assert.equals(0.01, m:learning_rate())
      assert.equals(0.01, m.optimizer:lr())
   end)

   it('shuffle = false keeps the sample order; shuffle draws a permutation each epoch', function()
      local seen = {}
      local recorder = {name = 'seen', reset = function() end, result = function() return 0 end,
                        update = function(_, _, target) for _, v in ipairs(target:to_flat()) do seen[#seen + 1] = v end end}
      local m = model_for(15)
      m:compile{optimizer = 'sgd', loss = 'mse', metrics = {recorder}}
      local x = fnn.randn(10, 3)
      local y = fnn.arange(1, 11):float():reshape(10, 1)
      m:fit(x, y, {epochs = 1, batch_size = 4, shuffle = false, verbose = 0})
      assert.same({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, seen)
      seen = {}
      m:fit(x, y, {epochs = 2, batch_size = 4, verbose = 0})
      assert.equals(20, #seen)
      local first, second = {unpack(seen, 1, 10)}, {unpack(seen, 11, 20)}
      assert.is_false(table.concat(first, ',') == table.concat(second, ','))
      table.sort(first); table.sort(second)
      assert.same({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, first)
      assert.same(first, second)
   end)

   it('fit and evaluate take a data.DataLoader; its figures equal those on the tensors', function()
      local data = fnn.data
      local x, y = regression(24)
      local a, b = model_for(16), model_for(16)
      a:compile{optimizer = optim.SGD{lr = 0.05}, loss = 'mse', metrics = {'mae'}}
      b:compile{optimizer = optim.SGD{lr = 0.05}, loss = 'mse', metrics = {'mae'}}
      local loader = data.DataLoader(data.TensorDataset(x, y), 8)
      local ha = a:fit(loader, nil, {epochs = 2, verbose = 0, validation_data = loader})
      local hb = b:fit(x, y, {epochs = 2, batch_size = 8, shuffle = false, verbose = 0, validation_data = {x, y}})
      support.approx(hb.loss, ha.loss, 1e-6)
      support.approx(hb.val_mae, ha.val_mae, 1e-6)
      local la, ma = a:evaluate(loader)
      local lb, mb = b:evaluate(x, y, {batch_size = 8})
      assert.is_true(math.abs(la - lb) < 1e-6 and math.abs(ma.mae - mb.mae) < 1e-6)
      assert.matches('fit: with a data loader, y must be nil', err_here(function() a:fit(loader, y) end), 1, true)
   end)

   it('save_weights and load_weights round-trip', function()
      local a, b = model_for(9), model_for(10)
      local base = os.tmpname()
      local path = base .. '.fdl'
      a:save_weights(path)
      b:load_weights(path)
      os.remove(path); os.remove(base)
      local x = fnn.randn(4, 3)
      support.approx(a:predict(x):to_flat(), b:predict(x), 1e-7)
   end)

   it('weights files carry the buffers of Keras-style layers (BatchNormalization)', function()
      local function make()
         return nn.Sequential(nn.Conv2D(4, 3), nn.BatchNormalization(), nn.Flatten(), nn.Dense(2)):build{2, 1, 6, 6}
      end
      fnn.manual_seed(17)
      local a = make()
      a:compile{optimizer = 'adam', loss = 'mse'}
      a:fit(fnn.randn(8, 1, 6, 6), fnn.randn(8, 2), {epochs = 2, batch_size = 4, verbose = 0})
      assert.equals('2.running_mean', a:named_buffers()[1][1])
      local base = os.tmpname()
      local path = base .. '.fdl'
      a:save_weights(path)
      local b = make()
      b:load_weights(path)
      os.remove(path); os.remove(base)
      support.approx(a:named_buffers()[1][2]:to_flat(), b:named_buffers()[1][2], 1e-7)
      local x = fnn.randn(3, 1, 6, 6)
      support.approx(a:predict(x):to_flat(), b:predict(x), 1e-6)
   end)

   it('builds from the data when build was not called', function()
      fnn.manual_seed(11)
      local m = nn.Sequential(nn.Dense(4, 'relu'), nn.Dense(2))
      m:compile{optimizer = 'adam', loss = 'cross_entropy', metrics = {'accuracy'}}
      local x = fnn.randn(12, 5)
      local y = fnn.long{1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}
      local h = m:fit(x, y, {epochs = 2, batch_size = 4, verbose = 0})
      assert.same({12, 5}, m:input_shape())
      assert.same({12, 2}, m:output_shape())
      assert.equals(2, #h.accuracy)
      assert.equals(5 * 4 + 4 + 4 * 2 + 2, m:num_parameters())
      assert.equals(4, #m.optimizer:parameters())
   end)
end)

describe('metrics', function()
   local metrics = nn.metrics

   it('is reachable as nn.metrics and its Average is not the merge layer', function()
      assert.is_not.equal(nn.Average, metrics.Average)
      local avg = metrics.Average()
      avg:update(1); avg:update(4, 2)
      assert.equals(3, avg:result())
   end)

   -- pred [N, C] logits and 1-based ids, against loops
   it('accuracy variants and top-k agree with loops, over several batches', function()
      fnn.manual_seed(12)
      local pred = fnn.randn(20, 5)
      local ids = {}
      for i = 1, 20 do ids[i] = (i * 7) % 5 + 1 end
      local rows = pred:to_table()
      local function rank_of(row, c)   -- 1 + the number of entries above row[c]
         local r = 1
         for j = 1, #row do if row[j] > row[c] then r = r + 1 end end
         return r
      end
      local hits1, hits3 = 0, 0
      for i = 1, 20 do
         local r = rank_of(rows[i], ids[i])
         if r == 1 then hits1 = hits1 + 1 end
         if r <= 3 then hits3 = hits3 + 1 end
      end
      local sparse = metrics.SparseCategoricalAccuracy()
      local auto = metrics.get('accuracy')
      local topk = metrics.SparseTopKCategoricalAccuracy{k = 3}
      local cat = metrics.CategoricalAccuracy()
      local onehot = {}
      for i = 1, 20 do
         onehot[i] = {0, 0, 0, 0, 0}
         onehot[i][ids[i]] = 1
      end
      local oh = fnn.tensor(onehot)
      local cat_topk = metrics.TopKCategoricalAccuracy{k = 3}
      for _, part in ipairs{{1, 8}, {9, 12}} do
         local p = pred:narrow(1, part[1], part[2])
         local t = fnn.long(ids):narrow(1, part[1], part[2])
         sparse:update(p, t); auto:update(p, t); topk:update(p, t)
         cat:update(p, oh:narrow(1, part[1], part[2])); cat_topk:update(p, oh:narrow(1, part[1], part[2]))
      end
      assert.equals(hits1 / 20, sparse:result())
      assert.equals(hits1 / 20, auto:result())
      assert.equals(hits1 / 20, cat:result())
      assert.equals(hits3 / 20, topk:result())
      assert.equals(hits3 / 20, cat_topk:result())
      sparse:reset()
      assert.equals(0, sparse:result())
   end)

   it('binary accuracy, precision, recall, F1, mse, mae against loops', function()
      local p = {0.9, 0.2, 0.6, 0.4, 0.7, 0.1, 0.55, 0.3}
      local t = {1, 0, 0, 1, 1, 0, 1, 1}
      local tp, fp, fn, right, se, ae = 0, 0, 0, 0, 0, 0
      for i = 1, #p do
         local pos = p[i] > 0.5
         if pos and t[i] == 1 then tp = tp + 1 end
         if pos and t[i] == 0 then fp = fp + 1 end
         if not pos and t[i] == 1 then fn = fn + 1 end
         if (pos and 1 or 0) == t[i] then right = right + 1 end
         se, ae = se + (p[i] - t[i]) ^ 2, ae + math.abs(p[i] - t[i])
      end
      local pt, tt = fnn.tensor(p):reshape(8, 1), fnn.tensor(t)
      local function value(name)
         local m = metrics.get(name)
         m:update(pt, tt)
         return m:result()
      end
      assert.is_true(math.abs(value('binary_accuracy') - right / 8) < 1e-7)
      assert.is_true(math.abs(value('accuracy') - right / 8) < 1e-7)
      local prec, rec = tp / (tp + fp), tp / (tp + fn)
      assert.is_true(math.abs(value('precision') - prec) < 1e-7)
      assert.is_true(math.abs(value('recall') - rec) < 1e-7)
      assert.is_true(math.abs(value('f1') - 2 * prec * rec / (prec + rec)) < 1e-7)
      assert.is_true(math.abs(value('mse') - se / 8) < 1e-6)
      assert.is_true(math.abs(value('mae') - ae / 8) < 1e-6)
   end)

   it('AUC approximates the pairwise ROC area', function()
      fnn.manual_seed(13)
      local n = 60
      local scores = fnn.rand(n):to_flat()
      local labels = {}
      for i = 1, n do labels[i] = (scores[i] + 0.3 * math.sin(i * 12.9898)) > 0.5 and 1 or 0 end
      local pairs_, good = 0, 0
      for i = 1, n do
         for j = 1, n do
            if labels[i] == 1 and labels[j] == 0 then
               pairs_ = pairs_ + 1
               if scores[i] > scores[j] then good = good + 1 elseif scores[i] == scores[j] then good = good + 0.5 end
            end
         end
      end
      local auc = metrics.AUC()
      auc:update(fnn.tensor(scores):narrow(1, 1, 30), fnn.tensor(labels):narrow(1, 1, 30))
      auc:update(fnn.tensor(scores):narrow(1, 31, 30), fnn.tensor(labels):narrow(1, 31, 30))
      assert.is_true(math.abs(auc:result() - good / pairs_) < 0.02, ('%g vs %g'):format(auc:result(), good / pairs_))
   end)

   it('compile logs each metric by the name given', function()
      local m = model_for(14)
      m:compile{optimizer = 'sgd', loss = 'mse', metrics = {'mae', metrics.MeanSquaredError{name = 'my_mse'}}}
      local x, y = regression(8)
      local loss, ms = m:evaluate(x, y)
      assert.is_number(ms.mae)
      assert.is_true(math.abs(ms.my_mse - loss) < 1e-6)
   end)
end)
