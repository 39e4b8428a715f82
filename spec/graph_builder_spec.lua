-- nn.GraphBuilder and nn.Graph: the seed's residual graph against loops, several inlets and
-- outlets with a loss per outlet and loss weights, a shared layer, and every refusal of build.
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim
local support = require 'support'

local SPEC_FILE = 'graph_builder_spec.lua'
local function err_here(f)
   local err = support.err_of(f)
   assert.matches(SPEC_FILE .. ':%d+:', err)
   return err
end

-- x [N, I] times a Linear's weight [O, I] plus bias, by loops; x and result as Lua tables
local function dense_loop(x, layer, act)
   local w, b = layer.weight:tensor():to_table(), layer.bias:tensor():to_table()
   local out = {}
   for n = 1, #x do
      out[n] = {}
      for o = 1, #w do
         local s = b[o]
         for i = 1, #x[n] do s = s + x[n][i] * w[o][i] end
         out[n][o] = act and act(s) or s
      end
   end
   return out
end

local function flat(t)
   local out = {}
   for _, row in ipairs(t) do for _, v in ipairs(row) do out[#out + 1] = v end end
   return out
end

describe('GraphBuilder', function()
   it('builds the seed residual graph; its output matches loops', function()
      fnn.manual_seed(31)
      local b = nn.GraphBuilder()
      local input = b:input{8, 4}
      local dense1 = nn.Dense(4, 'relu')
      local hidden = b:add(dense1, {input})
      local residual = b:add(nn.Add(), {input, hidden})
      local dense2 = nn.Dense(1)
      local head = b:add(dense2, {residual})
      local model = b:build{head}
      assert.same({{8, 1}}, model:output_shape())
      assert.same({{8, 4}}, model:input_shape())
      local x = fnn.randn(5, 4)
      local xt = x:to_table()
      local h = dense_loop(xt, dense1.inner, function(v) return math.max(v, 0) end)
      for n = 1, 5 do for i = 1, 4 do h[n][i] = h[n][i] + xt[n][i] end end
      local want = flat(dense_loop(h, dense2.inner))
      local preds = model:predict{x}
      assert.equals(1, #preds)
      support.approx(want, preds[1], 1e-5)
      support.approx(want, model(x), 1e-5)
      assert.equals('1.weight', model:named_parameters()[1][1])
      assert.equals(4 * 4 + 4 + 4 + 1, model:num_parameters())
   end)

   it('trains with several inlets and outlets, a loss per outlet and loss weights', function()
      fnn.manual_seed(32)
      local b = nn.GraphBuilder()
      local a = b:input({16, 3}, {name = 'a'})
      local c = b:input({16, 2}, {name = 'c'})
      local joined = b:add(nn.Concatenate(-1), {a, c})
      local trunk = b:add(nn.Dense(8, 'tanh'), {joined})
      local reg = b:add(nn.Dense(1), {trunk})
      local cls = b:add(nn.Dense(3), {trunk})
      local model = b:build{reg, cls}
      assert.same({{16, 1}, {16, 3}}, model:output_shape())
      model:compile{optimizer = optim.Adam{lr = 0.01}, loss = {'mse', 'cross_entropy'}, loss_weights = {1, 0.5},
                    metrics = {{'mae'}, {'accuracy'}}}
      local xa, xc = fnn.randn(16, 3), fnn.randn(16, 2)
      local yr = xa:sum(2, true)
      local ids = {}
      for i = 1, 16 do ids[i] = i % 3 + 1 end
      local yc = fnn.long(ids)
      local h = model:fit({xa, xc}, {yr, yc}, {epochs = 4, batch_size = 8, verbose = 0})
      assert.equals(4, #h.loss)
      assert.equals(4, #h.output_1_loss)
      assert.equals(4, #h.output_2_accuracy)
      assert.equals(4, #h.output_1_mae)
      local loss, ms = model:evaluate({xa, xc}, {yr, yc})
      assert.is_true(math.abs(loss - (ms.output_1_loss + 0.5 * ms.output_2_loss)) < 1e-5)
      local p = model:predict{xa, xc}
      assert.same({16, 1}, p[1]:shape())
      assert.same({16, 3}, p[2]:shape())
      -- the weighted total against the losses computed here
      local mse = nn.mse(p[1], yr):item()
      local ce = nn.cross_entropy(p[2], yc):item()
      assert.is_true(math.abs(loss - (mse + 0.5 * ce)) < 1e-4)
      assert.matches('Graph: the model has 2 inlets, got 1 inputs', err_here(function() model(xa) end), 1, true)
      assert.matches('fit: the model has 2 inlets, got 1 tensors for x',
                     err_here(function() model:fit({xa}, {yr, yc}, {verbose = 0}) end), 1, true)
      assert.matches('Graph node 3 nn.Concatenate(dim -1): Concatenate(dim -1): inputs must agree outside dim 2',
                     err_here(function() model(xa, fnn.zeros(3, 2)) end), 1, true)
      local text = model:summary{print = false}
      assert.matches('Connected to', text, 1, true)
      assert.matches('nn.Concatenate(dim -1)', text, 1, true)
   end)

   it('one metric object given for all outlets keeps a count per outlet', function()
      fnn.manual_seed(34)
      local b = nn.GraphBuilder()
      local x = b:input{6, 2}
      local model = b:build{b:add(nn.Dense(1), x), b:add(nn.Dense(1), x)}
      model:compile{optimizer = 'sgd', loss = 'mse', metrics = {nn.metrics.MeanAbsoluteError()}}
      local xs = fnn.randn(6, 2)
      local y1, y2 = fnn.zeros(6, 1), fnn.ones(6, 1)
      local _, ms = model:evaluate({xs}, {y1, y2}, {batch_size = 4})
      local p = model:predict{xs}
      for k, target in ipairs{y1, y2} do
         local a, t, s = p[k]:to_flat(), target:to_flat(), 0
         for i = 1, 6 do s = s + math.abs(a[i] - t[i]) end
         assert.is_true(math.abs(ms[('output_%d_mae'):format(k)] - s / 6) < 1e-6)
      end
   end)

   it('shares one layer, with one set of weights, between nodes', function()
      fnn.manual_seed(33)
      local b = nn.GraphBuilder()
      local x1, x2 = b:input{4, 3}, b:input{4, 3}
      local shared = nn.Dense(2)
      local y1, y2 = b:add(shared, {x1}), b:add(shared, x2)
      local model = b:build{b:add(nn.Subtract(), {y1, y2})}
      assert.equals(3 * 2 + 2, model:num_parameters())
      local x = fnn.randn(4, 3)
      support.approx_abs({0, 0, 0, 0, 0, 0, 0, 0}, model(x, x), 1e-7)
      model:compile{optimizer = optim.SGD{lr = 0.1}, loss = 'mse'}
      assert.equals(2, #model.optimizer:parameters())
      local text = model:summary{print = false}
      assert.matches('0 (shared)', text, 1, true)
   end)

   describe('build refuses, naming the node', function()
      it('a node from another builder', function()
         local b1, b2 = nn.GraphBuilder(), nn.GraphBuilder()
         local i1 = b1:input{2, 3}
         b2:input{2, 3}
         local n = b2:add(nn.Dense(2), {i1})
         assert.matches('GraphBuilder:build: input 1 of node 2 (nn.Dense(2)) is node 1 (input 1 [2,3]) of another '
                        .. 'GraphBuilder (a foreign node)', err_here(function() b2:build{n} end), 1, true)
         local b3 = nn.GraphBuilder()
         b3:input{2, 3}
         assert.matches('GraphBuilder:build: outlet 1 is node 1 (input 1 [2,3]) of another GraphBuilder',
                        err_here(function() b3:build{i1} end), 1, true)
      end)

      it('an unknown node', function()
         local b = nn.GraphBuilder()
         b:input{2, 3}
         local n = b:add(nn.Dense(2), {1})
         assert.matches('GraphBuilder:build: input 1 of node 2 (nn.Dense(2)) is an unknown node (number 1',
                        err_here(function() b:build{n} end), 1, true)
         assert.matches('GraphBuilder:build: outlet 1 is an unknown node (a table',
                        err_here(function() local b2 = nn.GraphBuilder(); b2:input{2, 3}; b2:build{{}} end), 1, true)
      end)

      it('an inlet that feeds no outlet', function()
         local b = nn.GraphBuilder()
         local a = b:input{2, 3}
         b:input({2, 5}, {name = 'unused'})
         local n = b:add(nn.Dense(2), {a})
         assert.matches("GraphBuilder:build: inlet 2, node 2 'unused' (input 2 [2,5]), feeds no outlet",
                        err_here(function() b:build{n} end), 1, true)
      end)

      it('an outlet not reachable from the inlets', function()
         local b = nn.GraphBuilder()
         local a = b:input{2, 3}
         local orphan = b:add(nn.Dense(3))
         local n = b:add(nn.Add(), {a, orphan})
         assert.matches('GraphBuilder:build: outlet 1, node 3 (nn.Add), is not reachable from the inlets',
                        err_here(function() b:build{n} end), 1, true)
      end)

      it('a merge given one input', function()
         local b = nn.GraphBuilder()
         local a = b:input{2, 3}
         local n = b:add(nn.Add(), {a})
         assert.matches('GraphBuilder:build: node 2 (nn.Add) cannot take input [2,3]: Add: needs at least 2 inputs, got 1',
                        err_here(function() b:build{n} end), 1, true)
      end)

      it('a merge of disagreeing shapes, by each merge layer rule', function()
         local function refusal(merge, s1, s2)
            local b = nn.GraphBuilder()
            local n = b:add(merge, {b:input(s1), b:input(s2)})
            return err_here(function() b:build{n} end)
         end
         assert.matches('node 3 (nn.Add) cannot take input [2,3], [2,4]: Add: inputs must all have the same shape',
                        refusal(nn.Add(), {2, 3}, {2, 4}), 1, true)
         for _, name in ipairs{'Subtract', 'Multiply', 'Average', 'Maximum', 'Minimum'} do
            assert.matches(name .. ': inputs must all have the same shape, got [2,3], [2,4]',
                           refusal(nn[name](), {2, 3}, {2, 4}), 1, true)
         end
         assert.matches('Concatenate(dim -1): inputs must agree outside dim 2, got [2,3], [4,3]',
                        refusal(nn.Concatenate(), {2, 3}, {4, 3}), 1, true)
      end)

      it('a layer given a shape it does not take (a shared layer at a second width)', function()
         local b = nn.GraphBuilder()
         local shared = nn.Dense(2)
         local a, c = b:input{2, 3}, b:input{2, 5}
         local n = b:add(nn.Concatenate(), {b:add(shared, {a}), b:add(shared, {c})})
         assert.matches('GraphBuilder:build: node 4 (nn.Dense(3 -> 2)) got input [2,5], needs [2,3]',
                        err_here(function() b:build{n} end), 1, true)
      end)
   end)
end)
