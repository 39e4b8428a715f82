-- Keras-style layers and Sequential:build: shape inference against hand formulas and the
-- layers' own forward, the refusals of build (position, type, got, needs), Dense and Conv2D
-- reading their input width, folded and standalone activations, summary() parameter counts.
local fnn = require 'fastnn'
local nn = fnn.nn
local support = require 'support'

local SPEC_FILE = 'keras_build_spec.lua'

-- the message of f's error, which must point at this spec's line
local function err_here(f)
   local err = support.err_of(f)
   assert.matches(SPEC_FILE .. ':%d+:', err)
   return err
end

local function out_size(n, k, s, p, d)   -- PyTorch's conv / pool output length
   return math.floor((n + 2 * p - d * (k - 1) - 1) / s) + 1
end

describe('output_shape', function()
   -- {layer, input shape, expected shape}: expectations from the formulas, not from the layers
   local cases = {
      {function() return nn.Linear(4, 7) end, {5, 4}, {5, 7}},
      {function() return nn.Linear(4, 7) end, {5, 3, 4}, {5, 3, 7}},
      {function() return nn.Dense(16, 'relu') end, {8, 4}, {8, 16}},
      {function() return nn.Dense(3) end, {2, 6, 5}, {2, 6, 3}},
      {function() return nn.Conv2D(8, 3) end, {2, 3, 10, 12}, {2, 8, out_size(10, 3, 1, 0, 1), out_size(12, 3, 1, 0, 1)}},
      {function() return nn.Conv2D(8, 3, {padding = 'same'}) end, {2, 3, 10, 12}, {2, 8, 10, 12}},
      {function() return nn.Conv2D(4, 3, {strides = 2, padding = 'same'}) end, {2, 3, 9, 8}, {2, 4, 5, 4}},
      {function() return nn.Conv2D(4, {3, 5}, {strides = {2, 1}, dilation_rate = 2}) end, {1, 2, 15, 15},
       {1, 4, out_size(15, 3, 2, 0, 2), out_size(15, 5, 1, 0, 2)}},
      {function() return nn.Conv1D(6, 5, {padding = 'causal'}) end, {3, 2, 11}, {3, 6, 11}},
      {function() return nn.Conv1D(6, 5, {strides = 3}) end, {3, 2, 11}, {3, 6, out_size(11, 5, 3, 0, 1)}},
      {function() return nn.Conv3D(2, 3) end, {1, 1, 5, 6, 7}, {1, 2, 3, 4, 5}},
      {function() return nn.Conv2DTranspose(5, 3, {strides = 2}) end, {2, 3, 4, 6}, {2, 5, (4 - 1) * 2 + 3, (6 - 1) * 2 + 3}},
      {function() return nn.Conv1DTranspose(5, 4) end, {2, 3, 7}, {2, 5, 7 - 1 + 4}},
      {function() return nn.DepthwiseConv2D(3, {depth_multiplier = 2}) end, {2, 3, 8, 8}, {2, 6, 6, 6}},
      {function() return nn.DepthwiseConv1D(3, {padding = 'same'}) end, {2, 4, 9}, {2, 4, 9}},
      {function() return nn.SeparableConv2D(7, 3) end, {2, 3, 8, 9}, {2, 7, 6, 7}},
      {function() return nn.SeparableConv1D(7, 3, {padding = 'same'}) end, {2, 3, 8}, {2, 7, 8}},
      -- every conv form takes a dilation_rate
      {function() return nn.Conv2DTranspose(3, 3, {dilation_rate = 2}) end, {1, 2, 5, 5}, {1, 3, (5 - 1) + 2 * 2 + 1, 9}},
      {function() return nn.Conv3DTranspose(2, 2, {strides = 2}) end, {1, 1, 2, 3, 4}, {1, 2, 4, 6, 8}},
      {function() return nn.SeparableConv2D(4, 3, {dilation_rate = 2}) end, {1, 2, 9, 9}, {1, 4, 5, 5}},
      {function() return nn.DepthwiseConv1D(3, {dilation_rate = 2}) end, {1, 2, 9}, {1, 2, 5}},
      {function() return nn.Conv1D(2, 3, {dilation_rate = 3, padding = 'causal'}) end, {1, 2, 9}, {1, 2, 9}},
      {function() return nn.MaxPool2d(2) end, {2, 3, 9, 8}, {2, 3, 4, 4}},
      {function() return nn.AvgPool1d(3, {stride = 2}) end, {2, 3, 9}, {2, 3, 4}},
      {function() return nn.GlobalAvgPool2d() end, {2, 3, 9, 8}, {2, 3}},
      {function() return nn.Flatten() end, {2, 3, 4, 5}, {2, 60}},
      {function() return nn.Reshape(6, -1) end, {2, 3, 4}, {2, 6, 2}},
      {function() return nn.BatchNormalization() end, {4, 3, 5, 5}, {4, 3, 5, 5}},
      {function() return nn.LayerNormalization() end, {4, 7}, {4, 7}},
      {function() return nn.Dropout(0.5) end, {4, 7}, {4, 7}},
      {function() return nn.Activation('softmax', {axis = 2}) end, {4, 7, 2}, {4, 7, 2}},
      {function() return nn.UpSampling2d(2) end, {1, 2, 3, 4}, {1, 2, 6, 8}},
      -- the Keras names of the pools
      {function() return nn.MaxPooling2D() end, {2, 3, 9, 8}, {2, 3, 4, 4}},
      {function() return nn.MaxPooling1D(3, {strides = 1}) end, {2, 3, 9}, {2, 3, 7}},
      {function() return nn.AveragePooling1D(3, {strides = 2}) end, {2, 3, 9}, {2, 3, 4}},
      {function() return nn.AveragePooling3D{pool_size = 2} end, {1, 2, 4, 6, 8}, {1, 2, 2, 3, 4}},
      {function() return nn.GlobalAveragePooling2D() end, {2, 3, 9, 8}, {2, 3}},
      {function() return nn.GlobalMaxPooling1D() end, {2, 3, 9}, {2, 3}},
      {function() return nn.UpSampling1D(3) end, {1, 2, 5}, {1, 2, 15}},
   }
   for i, c in ipairs(cases) do
      it(('case %d: %s'):format(i, table.concat(c[2], 'x')), function()
         local layer = c[1]()
         local got = layer:output_shape(c[2])
         assert.same(c[3], got)
         -- and the layer's real output agrees, for this batch size and another one
         layer:eval()
         assert.same(c[3], layer(fnn.zeros(c[2])):shape())
         local other = {}
         for d, v in ipairs(c[2]) do other[d] = v end
         other[1] = 3
         local want = {}
         for d, v in ipairs(c[3]) do want[d] = v end
         want[1] = 3
         assert.same(want, layer:output_shape(other))
      end)
   end

   it('refuses a shape a layer does not take, naming it and both shapes', function()
      local err = err_here(function() nn.Linear(4, 7):output_shape{5, 3} end)
      assert.matches('nn.Linear(4 -> 7): got input [5,3], needs [5,4]', err, 1, true)
      err = err_here(function() nn.Conv2d(3, 8, 3):output_shape{2, 1, 9, 9} end)
      assert.matches('got input [2,1,9,9], needs [2,3,H,W]', err, 1, true)
   end)
end)

describe('Keras-style constructors', function()
   it('Dense reads its input width at build: weight [units, in], PyTorch init bound', function()
      local d = nn.Dense(16, 'relu')
      assert.same({}, d:parameters())
      d:build{8, 4}
      local named = d:named_parameters()
      assert.equals('weight', named[1][1])
      assert.equals('bias', named[2][1])
      assert.same({16, 4}, named[1][2]:shape())
      assert.same({16}, named[2][2]:shape())
      local bound = 1 / math.sqrt(4)
      for _, v in ipairs(named[1][2]:tensor():to_flat()) do assert.is_true(math.abs(v) <= bound) end
      assert.equals('nn.Dense(4 -> 16, relu)', d:short_str())
   end)

   it('Dense(units, activation) computes act(x W^T + b), checked against loops', function()
      fnn.manual_seed(3)
      for _, act in ipairs{'relu', 'tanh', 'sigmoid', 'linear'} do
         local d = nn.Dense(3, act)
         local x = fnn.randn(2, 5)
         local y = d(x)   -- built on its first input
         local w, b = d.inner.weight:tensor():to_table(), d.inner.bias:tensor():to_table()
         local xt = x:to_table()
         local f = ({relu = function(v) return math.max(v, 0) end, tanh = math.tanh,
                     sigmoid = function(v) return 1 / (1 + math.exp(-v)) end, linear = function(v) return v end})[act]
         local want = {}
         for n = 1, 2 do
            for o = 1, 3 do
               local s = b[o]
               for i = 1, 5 do s = s + xt[n][i] * w[o][i] end
               want[#want + 1] = f(s)
            end
         end
         support.approx(want, y, 1e-5)
      end
   end)

   it('Conv2D reads its channels at build and keeps PyTorch layouts', function()
      local c = nn.Conv2D(8, 3, {padding = 'same', activation = 'relu', strides = 1})
      c:build{2, 5, 6, 6}
      assert.same({8, 5, 3, 3}, c:named_parameters()[1][2]:shape())
      local y = c(fnn.randn(2, 5, 6, 6))
      assert.same({2, 8, 6, 6}, y:shape())
      assert.equals(0, y:lt(0):sum():item())   -- the folded relu
   end)

   it('a standalone Activation takes every activation name, and an axis for softmax', function()
      local names = require('fastnn.nn.activations').names
      assert.is_true(#names >= 15)
      local x = fnn.randn(2, 3)
      for _, name in ipairs(names) do
         local y = nn.Activation(name)(x)
         assert.same({2, 3}, y:shape())
         support.approx(nn.activation_fn(name)(x):to_flat(), y, 1e-6)
      end
      -- softmax over dim 1 against a loop
      local a = nn.Activation('softmax', {axis = 1})(x)
      local xt = x:to_table()
      local want = {}
      for i = 1, 2 do
         for j = 1, 3 do
            local z = math.exp(xt[1][j]) + math.exp(xt[2][j])
            want[#want + 1] = math.exp(xt[i][j]) / z
         end
      end
      support.approx(want, a, 1e-5)
   end)

   it('refuses bad arguments at the caller line', function()
      assert.matches("nn.Dense: unknown activation 'relux'", err_here(function() nn.Dense(4, 'relux') end), 1, true)
      assert.matches('nn.Dense: units is 0, expected a positive integer', err_here(function() nn.Dense(0) end), 1, true)
      assert.matches('nn.Conv2D: filters is nil', err_here(function() nn.Conv2D() end), 1, true)
      assert.matches("nn.Activation: 'relu' takes no axis", err_here(function() nn.Activation('relu', {axis = 1}) end),
                     1, true)
      assert.matches("nn.MaxPooling2D: padding 'same' is not supported",
                     err_here(function() nn.MaxPooling2D(2, {padding = 'same'}) end), 1, true)
      assert.matches('nn.MaxPooling2D: options must be a table', err_here(function() nn.MaxPooling2D(2, 3) end), 1, true)
      assert.matches('nn.Conv2D: build: input shape [2,3,8] must be [N, C, H, W]',
                     err_here(function() nn.Conv2D(4, 3):build{2, 3, 8} end), 1, true)
   end)
end)

describe('Sequential:build', function()
   it('gives each layer the shape that reaches it; any batch size works afterwards', function()
      local m = nn.Sequential():add(nn.Dense(16, 'relu')):add(nn.Dense(1)):build{8, 4}
      assert.same({8, 4}, m:input_shape())
      assert.same({8, 1}, m:output_shape())
      assert.same({3, 1}, m:output_shape{3, 4})
      assert.same({5, 1}, m(fnn.ones(5, 4)):shape())
      assert.equals(4 * 16 + 16 + 16 + 1, m:num_parameters())
      assert.equals('1.weight', m:named_parameters()[1][1])
   end)

   it('refuses a stack that does not agree: position, type, shape got and shape needed', function()
      local m = nn.Sequential(nn.Linear(4, 100), nn.ReLU(), nn.Linear(784, 128))
      local err = err_here(function() m:build{8, 4} end)
      assert.matches('Sequential:build: layer 3 (nn.Linear(784 -> 128)) got input [8,100], needs [8,784]', err, 1, true)
      err = err_here(function() nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten()):build{8, 1, 28, 28} end)
      assert.matches('Sequential:build: layer 1 (nn.Conv2d(3 -> 8, k=3x3)) got input [8,1,28,28], needs [8,3,H,W]',
                     err, 1, true)
      err = err_here(function() nn.Sequential(nn.Dense(4), nn.BatchNorm1d(5)):build{8, 3} end)
      assert.matches('layer 2 (nn.BatchNorm1d', err, 1, true)
      assert.matches('got input [8,4], needs [8,5,...]', err, 1, true)
      -- a layer without a rule gives its own refusal
      err = err_here(function() nn.Sequential(nn.Dense(16), nn.Reshape(5, 5)):build{8, 3} end)
      assert.matches('Sequential:build: layer 2 (nn.Reshape(5, 5)) cannot take input [8,16]:', err, 1, true)
      assert.matches('16 values per sample', err, 1, true)
      -- a Keras-style layer whose build refuses the rank
      err = err_here(function() nn.Sequential(nn.Dense(16), nn.Conv2D(4, 3)):build{8, 3} end)
      assert.matches('Sequential:build: layer 2 (nn.Conv2D(4, k=3)) cannot take input [8,16]:', err, 1, true)
      assert.matches('[8,16] must be [N, C, H, W]', err, 1, true)
      assert.matches('Sequential:build: size 2 of the shape is -1', err_here(function() m:build{8, -1} end), 1, true)
   end)

   it('refuses before any data moves: no parameter of a later layer is created', function()
      local late = nn.Dense(3)
      local m = nn.Sequential(nn.Dense(4), nn.Linear(5, 2), late)
      support.err_of(function() m:build{2, 3} end)
      assert.same({}, late:parameters())
   end)
end)

describe('summary', function()
   it('matches hand-counted parameters for a conv model', function()
      local m = nn.Sequential()
         :add(nn.Conv2D(8, 3, {activation = 'relu'}))      -- 8*1*3*3 + 8 = 80        -> [N,8,26,26]
         :add(nn.BatchNormalization())                       -- 8 + 8 (+ 16 buffers)
         :add(nn.MaxPool2d(2))                               -- 0                       -> [N,8,13,13]
         :add(nn.Conv2D(16, 3, {padding = 'same'}))          -- 16*8*3*3 + 16 = 1168     -> [N,16,13,13]
         :add(nn.GlobalAvgPool2d())                          -- 0                       -> [N,16]
         :add(nn.Dense(10, 'softmax'))                       -- 16*10 + 10 = 170
         :build{32, 1, 28, 28}
      local text = m:summary{print = false}
      local rows = {
         {'1 nn.Conv2D(1 -> 8, k=3, relu)', '(None, 8, 26, 26)', '80'},
         {'2 nn.BatchNormalization(8)', '(None, 8, 26, 26)', '16'},
         {'3 nn.MaxPool2d', '(None, 8, 13, 13)', '0'},
         {'4 nn.Conv2D(8 -> 16, k=3, same)', '(None, 16, 13, 13)', '1,168'},
         {'5 nn.GlobalAvgPool2d', '(None, 16)', '0'},
         {'6 nn.Dense(16 -> 10, softmax)', '(None, 10)', '170'},
      }
      for _, r in ipairs(rows) do
         local line = text:match('\n( ' .. r[1]:gsub('%p', '%%%0') .. '[^\n]*)')
         assert.is_truthy(line, 'no row for ' .. r[1] .. ' in\n' .. text)
         assert.matches(r[2], line, 1, true)
         assert.matches(' ' .. r[3] .. '$', line)
      end
      assert.matches('\nTotal params: 1,450\n', text, 1, true)
      assert.matches('\nTrainable params: 1,434\n', text, 1, true)
      assert.matches('\nNon-trainable params: 16\n', text, 1, true)
      assert.equals(80 + 16 + 1168 + 170, m:num_parameters())
   end)

   it('counts frozen parameters as non-trainable', function()
      local m = nn.Sequential(nn.Dense(3), nn.Dense(2)):build{1, 4}
      m[1]:freeze()
      local text = m:summary{print = false}
      assert.matches('Trainable params: 8\n', text, 1, true)
      assert.matches('Non-trainable params: 15\n', text, 1, true)
   end)
end)
