-- fastnn.options: every public callable that takes an options table, walked. Each declaration in
-- the registry has a case here (a declaration without one fails, and so does a case without a
-- declaration); each case shows that the call without a typo works, that a typo'd key is refused
-- at the caller's line naming the callable, the key and the known keys nearest first, and that
-- each enumerated option refuses an unknown value. The issue's own examples are checked by name.
-- A source scan keeps new code honest: a Lua file under lua/fastnn with a parameter named opts
-- must go through fastnn.options, or be listed below with what it still reads unchecked.
local fnn = require 'fastnn'
local options = require 'fastnn.options'
local nn, optim, data = fnn.nn, fnn.optim, fnn.data
local serialize = require 'fastnn.serialize'
local plot = require 'fastnn.plot'
local image = require 'fastnn.image'
local dist = fnn.distributed
local serve = require 'fastnn.serve'
local tensorboard = fnn.tensorboard
local onnx = fnn.onnx

local dir = io.popen('mktemp -d /tmp/fastnn-opts-XXXXXX'):read('*l')
local function file(name) return dir .. '/' .. name end
teardown(function() os.execute('rm -rf ' .. dir) end)

-- load every module that declares options, so the registry is complete: nn's classes by name
-- (nn._names lists them all), the other packages' files
for _, name in ipairs(nn._names) do local _ = nn[name] end
for f in io.popen('ls lua/fastnn/optim/*.lua lua/fastnn/data/*.lua lua/fastnn/keras/*.lua'):lines() do
   require((f:gsub('^lua/', ''):gsub('%.lua$', ''):gsub('/', '.')))
end

local csv = file('t.csv')
do
   local fh = assert(io.open(csv, 'w'))
   fh:write('a,b,y\n1,2,0\n3,4,1\n')
   fh:close()
end
local function keras_model()
   local m = nn.Sequential(nn.Dense(2))
   m:build{1, 3}
   return m
end
local compiled = keras_model():compile{loss = 'mse', optimizer = 'sgd'}
local X, Y = fnn.ones(4, 3), fnn.zeros(4, 2)
local function params() return nn.Linear(2, 2):parameters() end
local mlp = nn.Sequential(nn.Linear(2, 2))
serialize.save(mlp, file('m.fdl'))
serialize.save_safetensors(mlp, file('m.safetensors'))
local sgd = optim.SGD(mlp:parameters(), 0.1)
serialize.save_training(mlp, sgd, 1, file('run.fdl'))
local ds = data.TensorDataset(fnn.ones(4, 2), fnn.ones(4))
local NOWHERE = 'http://127.0.0.1:9/'            -- refused at once: the download fails, not the options
-- Mnist and FashionMnist try a port that refuses, in a directory of their own, so nothing is fetched
local saved = {data.Mnist.mirrors, data.FashionMnist.mirrors, data.dir()}
data.Mnist.mirrors, data.FashionMnist.mirrors = {NOWHERE}, {NOWHERE}
data.set_dir(file('data'))
teardown(function() data.Mnist.mirrors, data.FashionMnist.mirrors = saved[1], saved[2]; data.set_dir(saved[3]) end)

-- name -> {call = function(opts) ... end, base = options every call needs}
local CASES = {
   ['data.CsvDataset'] = {call = function(o) return data.CsvDataset(csv, o) end},
   ['data.DataLoader'] = {call = function(o) return data.DataLoader(ds, 2, o) end},
   ['data.DataLoader:prefetch'] = {call = function(o) return data.DataLoader(ds, 2):prefetch(2, o) end},
   ['data.ImageFolder'] = {call = function(o) return data.ImageFolder('spec/fixtures', o) end},
   ['data.transforms.RandomResizedCrop'] = {call = function(o) return data.transforms.RandomResizedCrop(4, o) end},
   ['data.transforms.ColorJitter'] = {call = function(o) return data.transforms.ColorJitter(o) end},
   ['data.TextDataset'] = {call = function(o) return data.TextDataset('abcdefgh', 2, o) end, base = {text = true}},
   ['data.download'] = {call = function(o) return data.try_download(NOWHERE .. 'x', file('dl'), o) end,
                        base = {progress = false, connect_timeout = 1}},
   ['data.Mnist.load'] = {call = function(o) return data.Mnist.try_load('test', o) end,
                          base = {progress = false, connect_timeout = 1}},
   ['data.FashionMnist.load'] = {call = function(o) return data.FashionMnist.try_load('test', o) end,
                                 base = {progress = false, connect_timeout = 1}},
   ['distributed.DataParallel'] = {call = function(o) return dist.DataParallel(nn.Linear(2, 2), o) end},
   ['distributed.all_reduce'] = {call = function(o) return dist.all_reduce(fnn.ones(2), o) end},
   ['fnn.save'] = {call = function(o) return serialize.save(mlp, file('s.fdl'), o) end},
   ['fnn.set_float32_precision'] = {call = function(o)   -- a refused table sets nothing
      fnn.set_float32_precision(o)
      fnn.set_float32_precision('ieee')
   end},
   ['fnn.load'] = {call = function(o) return serialize.load(mlp, file('m.fdl'), o) end},
   ['fnn.save_safetensors'] = {call = function(o) return serialize.save_safetensors(mlp, file('s.safetensors'), o) end},
   ['fnn.load_safetensors'] = {call = function(o) return serialize.load_safetensors(mlp, file('m.safetensors'), o) end},
   ['fnn.save_training'] = {call = function(o) return serialize.save_training(mlp, sgd, 1, file('s.fdl'), o) end},
   ['fnn.load_training'] = {call = function(o) return serialize.load_training(mlp, sgd, file('run.fdl'), o) end},
   ['model:compile'] = {call = function(o) return keras_model():compile(o) end, base = {loss = 'mse'}},
   ['model:fit'] = {call = function(o) return compiled:fit(X, Y, o) end, base = {verbose = 0}},
   ['model:evaluate'] = {call = function(o) return compiled:evaluate(X, Y, o) end},
   ['model:predict'] = {call = function(o) return compiled:predict(X, o) end},
   ['model:summary'] = {call = function(o) return compiled:summary(o) end, base = {print = false}},
   ['nn.BeamSearch'] = {call = function(o) return nn.BeamSearch(o) end},
   ['nn.Sampler'] = {call = function(o) return nn.Sampler(o) end},
   ['nn.Embedding'] = {call = function(o) return nn.Embedding(5, 3, o) end},
   ['nn.GroupNorm'] = {call = function(o) return nn.GroupNorm(2, 4, o) end},
   ['nn.LayerNorm'] = {call = function(o) return nn.LayerNorm(4, o) end},
   ['nn.RMSNorm'] = {call = function(o) return nn.RMSNorm(4, o) end},
   ['nn.Linear'] = {call = function(o) return nn.Linear(3, 4, o) end},
   ['nn.MultiheadAttention'] = {call = function(o) return nn.MultiheadAttention(8, 2, o) end},
   ['nn.MultiheadAttention:forward'] = {call = function(o)
      return nn.MultiheadAttention(8, 2):forward(fnn.ones(1, 3, 8), o)
   end},
   ['nn.TransformerEncoderLayer'] = {call = function(o) return nn.TransformerEncoderLayer(8, 2, 16, o) end},
   ['nn.TransformerDecoderLayer'] = {call = function(o) return nn.TransformerDecoderLayer(8, 2, 16, o) end},
   ['nn.TransformerStack'] = {call = function(o) return nn.TransformerStack(8, 2, 16, 1, o) end},
   ['nn.TransformerEncoder'] = {call = function(o) return nn.TransformerEncoder(8, 2, 16, 1, o) end},
   ['nn.TransformerDecoder'] = {call = function(o) return nn.TransformerDecoder(8, 2, 16, 1, o) end},
   ['nn.callbacks.EarlyStopping'] = {call = function(o) return nn.callbacks.EarlyStopping(o) end},
   ['nn.callbacks.ModelCheckpoint'] = {call = function(o) return nn.callbacks.ModelCheckpoint(file('c.fdl'), o) end},
   ['nn.callbacks.LearningRateScheduler'] = {call = function(o)
      return nn.callbacks.LearningRateScheduler(function(_, lr) return lr end, o)
   end},
   ['nn.callbacks.ReduceLROnPlateau'] = {call = function(o) return nn.callbacks.ReduceLROnPlateau(o) end},
   ['nn.callbacks.CSVLogger'] = {call = function(o) return nn.callbacks.CSVLogger(file('log.csv'), o) end},
   ['nn.callbacks.TensorBoard'] = {call = function(o) return nn.callbacks.TensorBoard(o) end},
   ['tensorboard.SummaryWriter'] = {call = function(o) return tensorboard.SummaryWriter(file('tb'), o) end},
   ['onnx.export'] = {call = function(o) return onnx.export(nn.Linear(2, 2), fnn.ones(1, 2), file('m.onnx'), o) end},
   ['optim.CosineAnnealing'] = {call = function(o) return optim.CosineAnnealing(1e-3, 10, o) end},
   ['optim.ExponentialDecay'] = {call = function(o) return optim.ExponentialDecay(1e-3, 10, 0.9, o) end},
   ['optim.OneCycle'] = {call = function(o) return optim.OneCycle(1e-2, 10, o) end},
   ['optim.ReduceOnPlateau'] = {call = function(o) return optim.ReduceOnPlateau(optim.SGD(params(), 0.1), o) end},
   ['plot.line'] = {call = function(o) return plot.line(o) end,
                    base = {path = file('l.png'), series = {{name = 'a', y = {1, 2, 3}}}}},
   ['plot.scatter'] = {call = function(o) return plot.scatter(o) end,
                       base = {path = file('s.png'), series = {{name = 'a', x = {1, 2}, y = {1, 2}}}}},
   ['plot.image_grid'] = {call = function(o) return plot.image_grid(o) end,
                          base = {path = file('g.png'), images = fnn.ones(2, 4, 4)}},
   ['image.save'] = {call = function(o) return image.save(file('i.jpg'), fnn.ones(3, 4, 4), o) end},
   ['plot.heatmap'] = {call = function(o) return plot.heatmap(o) end,
                       base = {path = file('h.png'), matrix = {{1, 2}, {3, 4}}}},
}
-- the families made by one maker: the same call shape for each member
for _, d in ipairs{1, 2, 3} do
   local function add(name, f) CASES['nn.' .. name] = {call = f} end
   add('Conv' .. d .. 'd', function(o) return nn['Conv' .. d .. 'd'](2, 4, 3, o) end)
   add('ConvTranspose' .. d .. 'd', function(o) return nn['ConvTranspose' .. d .. 'd'](2, 4, 3, o) end)
   add('MaxPool' .. d .. 'd', function(o) return nn['MaxPool' .. d .. 'd'](2, o) end)
   add('AvgPool' .. d .. 'd', function(o) return nn['AvgPool' .. d .. 'd'](2, o) end)
   add('GlobalAvgPool' .. d .. 'd', function(o) return nn['GlobalAvgPool' .. d .. 'd'](o) end)
   add('GlobalMaxPool' .. d .. 'd', function(o) return nn['GlobalMaxPool' .. d .. 'd'](o) end)
   add('UpSampling' .. d .. 'd', function(o) return nn['UpSampling' .. d .. 'd'](2, o) end)
   add('BatchNorm' .. d .. 'd', function(o) return nn['BatchNorm' .. d .. 'd'](3, o) end)
   add('InstanceNorm' .. d .. 'd', function(o) return nn['InstanceNorm' .. d .. 'd'](3, o) end)
   add('SpatialDropout' .. d .. 'd', function(o) return nn['SpatialDropout' .. d .. 'd'](o) end)
   if d < 3 then
      add('DepthwiseConv' .. d .. 'd', function(o) return nn['DepthwiseConv' .. d .. 'd'](2, 3, o) end)
      add('SeparableConv' .. d .. 'd', function(o) return nn['SeparableConv' .. d .. 'd'](2, 4, 3, o) end)
   end
end
CASES['nn.ELU'] = {call = function(o) return nn.ELU(o) end}
CASES['nn.LeakyReLU'] = {call = function(o) return nn.LeakyReLU(o) end}
CASES['nn.GELU'] = {call = function(o) return nn.GELU(o) end}
CASES['nn.Softplus'] = {call = function(o) return nn.Softplus(o) end}
CASES['nn.Flatten'] = {call = function(o) return nn.Flatten(o) end}
CASES['nn.UnitNormalization'] = {call = function(o) return nn.UnitNormalization(o) end}
CASES['nn.Softmax'] = {call = function(o) return nn.Softmax(o) end}
CASES['nn.LogSoftmax'] = {call = function(o) return nn.LogSoftmax(o) end}
CASES['nn.Concatenate'] = {call = function(o) return nn.Concatenate(o) end}
CASES['nn.StackCache'] = {call = function(o) return nn.StackCache(1, 2, 4, o) end}
CASES['nn.Bidirectional'] = {call = function(o) return nn.Bidirectional(nn.LSTM(3, 4), o) end}
CASES['nn.Activation'] = {call = function(o) return nn.Activation('softmax', o) end}
CASES['nn.Bilinear'] = {call = function(o) return nn.Bilinear(2, 3, 4, o) end}
CASES['nn.Dense'] = {call = function(o) return nn.Dense(4, 'relu', o) end}
CASES['nn.BatchNormalization'] = {call = function(o) return nn.BatchNormalization(o) end}
CASES['nn.LayerNormalization'] = {call = function(o) return nn.LayerNormalization(o) end}
for _, d in ipairs{1, 2, 3} do
   for _, name in ipairs{'MaxPooling', 'AveragePooling'} do
      CASES['nn.' .. name .. d .. 'D'] = {call = function(o) return nn[name .. d .. 'D'](2, o) end}
   end
   for _, cls in ipairs{'Conv' .. d .. 'D', 'Conv' .. d .. 'DTranspose'} do
      CASES['nn.' .. cls] = {call = function(o) return nn[cls](4, 3, o) end}
   end
   if d < 3 then
      CASES['nn.DepthwiseConv' .. d .. 'D'] = {call = function(o) return nn['DepthwiseConv' .. d .. 'D'](3, o) end}
      CASES['nn.SeparableConv' .. d .. 'D'] = {call = function(o) return nn['SeparableConv' .. d .. 'D'](4, 3, o) end}
   end
end
CASES['Module:num_parameters'] = {call = function(o) return nn.Linear(2, 2):num_parameters(o) end}
CASES['fnn.gradcheck'] = {call = function(o)
   return fnn.gradcheck(function(a) return a * 2 end, {fnn.randn(3)}, o)
end}
CASES['GraphBuilder:input'] = {call = function(o) return nn.GraphBuilder():input({4, 3}, o) end}
CASES['GraphBuilder:add'] = {call = function(o)
   local g = nn.GraphBuilder()
   return g:add(nn.Dense(2), {g:input({4, 3})}, o)
end}
for _, name in ipairs{'kaiming_uniform', 'kaiming_normal', 'xavier_uniform', 'xavier_normal', 'orthogonal',
                      'uniform_', 'normal_'} do
   CASES['init.' .. name] = {call = function(o) return require('fastnn.initializers')[name]({4, 3}, o) end}
end
CASES['serve.handler'] = {call = function(o) return serve.handler(o) end,
                          base = {model = nn.Linear(2, 2), input_shape = {2}}}
CASES['nn.InstanceNorm'] = {call = function(o) return nn.InstanceNorm(3, o) end}
CASES['Tensor.pad'] = {call = function(o) return fnn.ones(2, 3):pad({1, 1}, o) end}
-- the tensor methods and creators that take options (issue 31)
CASES['Tensor.var'] = {call = function(o) local r = fnn.ones(2, 3):var(1, o); return r end}
CASES['Tensor.std'] = {call = function(o) local r = fnn.ones(2, 3):std(o); return r end}
-- the reductions' keepdim as PyTorch's keyword, {keepdim = true}, in the keepdim position
for _, name in ipairs{'sum', 'mean', 'prod', 'logsumexp', 'argmax', 'argmin', 'max', 'min'} do
   CASES['Tensor.' .. name] = {call = function(o) local r = fnn.ones(2, 3)[name](fnn.ones(2, 3), 1, o); return r end}
end
CASES['Tensor.norm'] = {call = function(o) local r = fnn.ones(2, 3):norm(2, 1, o); return r end}
CASES['Tensor.sort'] = {call = function(o) local r = fnn.ones(2, 3):sort(1, o); return r end}
CASES['Tensor.topk'] = {call = function(o) local r = fnn.ones(2, 3):topk(1, o); return r end}
for nd = 1, 3 do
   local x, w = fnn.ones(1, 2, table.unpack({4, 4, 4}, 1, nd)), fnn.ones(2, 2, table.unpack({3, 3, 3}, 1, nd))
   CASES['fnn.conv' .. nd .. 'd'] = {call = function(o) local r = fnn['conv' .. nd .. 'd'](x, w, nil, o); return r end}
   CASES['fnn.conv_transpose' .. nd .. 'd'] = {call = function(o) local r = fnn['conv_transpose' .. nd .. 'd'](x, w, nil, o); return r end}
   for _, kind in ipairs{'max', 'avg'} do
      local name = kind .. '_pool' .. nd .. 'd'
      CASES['fnn.' .. name] = {call = function(o) local r = fnn[name](x, 2, o); return r end}
   end
end
CASES['fnn.upsample'] = {call = function(o) return fnn.upsample(fnn.ones(1, 1, 2, 2), o) end, base = {scale_factor = 2}}
do
   local x, w = fnn.ones(2, 3, 4), fnn.ones(8, 4)
   CASES['fnn.lstm'] = {call = function(o) local r = fnn.lstm(x, fnn.ones(16, 4), fnn.ones(16, 4), nil, nil, o); return r end}
   CASES['fnn.gru'] = {call = function(o) local r = fnn.gru(x, fnn.ones(12, 4), fnn.ones(12, 4), nil, nil, o); return r end}
   CASES['fnn.rnn_tanh'] = {call = function(o) local r = fnn.rnn_tanh(x, w:narrow(1, 1, 4), fnn.ones(4, 4), nil, nil, o); return r end}
end
for _, op in ipairs{'zeros', 'ones', 'empty'} do
   CASES['fnn.' .. op] = {call = function(o) return fnn[op](2, 3, o) end, base = {dtype = 'float32'}}
end
CASES['fnn.full'] = {call = function(o) local r = fnn.full({2}, 1, o); return r end}
CASES['fnn.arange'] = {call = function(o) return fnn.arange(3, o) end, base = {dtype = 'int64'}}
CASES['fnn.tensor'] = {call = function(o) return fnn.tensor({1, 2}, o) end, base = {dtype = 'float32'}}
for _, op in ipairs{'zeros_like', 'ones_like'} do
   CASES['fnn.' .. op] = {call = function(o) local r = fnn[op](fnn.ones(2), o); return r end}
end
CASES['fnn.attention'] = {call = function(o) local q = fnn.ones(1, 1, 2, 2); local r = fnn.attention(q, q, q, o); return r end}
CASES['Tensor.gelu'] = {call = function(o) local r = fnn.ones(2):gelu(o); return r end}
CASES['fnn.linear'] = {call = function(o) local r = fnn.linear(fnn.ones(2, 3), fnn.ones(4, 3), fnn.ones(4), o); return r end}
CASES['fnn.embedding'] = {call = function(o) local r = fnn.embedding({1, 2}, fnn.ones(3, 2), o); return r end}
CASES['fnn.layer_norm'] = {call = function(o) local r = fnn.layer_norm(fnn.ones(2, 4), nil, nil, o); return r end}
CASES['fnn.add_layer_norm'] = {call = function(o)
   local s, y = fnn.add_layer_norm(fnn.ones(2, 4), fnn.ones(2, 4), nil, nil, o)
   return s, y
end}
CASES['fnn.rms_norm'] = {call = function(o) local r = fnn.rms_norm(fnn.ones(2, 4), nil, o); return r end}
CASES['fnn.group_norm'] = {call = function(o) local r = fnn.group_norm(fnn.ones(2, 4, 3), 2, nil, nil, o); return r end}
CASES['fnn.instance_norm'] = {call = function(o) local r = fnn.instance_norm(fnn.ones(2, 4, 3), nil, nil, o); return r end}
CASES['fnn.batch_norm'] = {call = function(o) local r = fnn.batch_norm(fnn.ones(2, 4), nil, nil, nil, nil, o); return r end,
                           base = {training = true}}
CASES['fnn.full_like'] = {call = function(o) local r = fnn.full_like(fnn.ones(2), 3, o); return r end}
CASES['nn.Dropout'] = {call = function(o) return nn.Dropout(0.5, o) end}
CASES['nn.AlphaDropout'] = {call = function(o) return nn.AlphaDropout(0.5, o) end}
for _, name in ipairs{'BCELoss', 'BCEWithLogitsLoss', 'BinaryCrossEntropy', 'CategoricalCrossEntropy',
                      'CosineEmbeddingLoss', 'CrossEntropyLoss', 'HuberLoss', 'KLDivLoss', 'L1Loss', 'MSELoss',
                      'MeanAbsoluteError', 'MeanSquaredError', 'NLLLoss', 'SparseCategoricalCrossEntropy'} do
   CASES['nn.' .. name] = {call = function(o) return nn[name](o) end}
end
for _, name in ipairs{'LSTM', 'GRU', 'SimpleRNN'} do
   CASES['nn.' .. name] = {call = function(o) return nn[name](3, 4, o) end}
end
for _, name in ipairs{'AUC', 'Accuracy', 'Average', 'BinaryAccuracy', 'CategoricalAccuracy', 'F1Score', 'Mean',
                      'MeanAbsoluteError', 'MeanSquaredError', 'Precision', 'Recall', 'SparseCategoricalAccuracy',
                      'SparseTopKCategoricalAccuracy', 'TopKCategoricalAccuracy'} do
   CASES['nn.metrics.' .. name] = {call = function(o) return nn.metrics[name](o) end}
end
for _, name in ipairs{'Adadelta', 'Adagrad', 'Adam', 'AdamW', 'Lion', 'RAdam', 'RMSprop', 'SGD'} do
   CASES['optim.' .. name] = {call = function(o) return optim[name](params(), o) end}
end

local function with(base, extra)
   local o = {}
   for k, v in pairs(base or {}) do o[k] = v end
   for k, v in pairs(extra) do o[k] = v end
   return o
end

-- the message of calling f, or nil; the error must come back at this file's line
local function err_of(f)
   local ok, err = pcall(f)
   if ok then return nil end
   return tostring(err)
end

-- a typo of name: its last letter doubled ('bias' -> 'biass')
local function typo(name) return name .. name:sub(-1) end

local function quote(s) return (s:gsub('%p', '%%%0')) end

describe('fastnn.options', function()
   it('has a case here for every declaration, and a declaration for every case', function()
      local missing, extra = {}, {}
      for _, name in ipairs(options.order) do
         if not CASES[name] then missing[#missing + 1] = name end
      end
      for name in pairs(CASES) do
         if not options.registry[name] then extra[#extra + 1] = name end
      end
      table.sort(missing); table.sort(extra)
      assert.same({}, missing, 'declared without a case in spec/options_spec.lua')
      assert.same({}, extra, 'a case without a declaration')
   end)

   it('declares each option with a type and a one-line doc, defaults of its type, known enumerations', function()
      for _, name in ipairs(options.order) do
         local d = options.registry[name]
         assert.is_true(#d.entries > 0, name)
         for _, o in ipairs(d.entries) do
            assert.is_true(#o.doc > 0 and not o.doc:find('\n'), name .. ' ' .. o.name)
            if o.default ~= nil then
               assert.is_nil(d:problem(o, o.default), name .. ': the default of ' .. o.name .. ' fails its own check')
            end
         end
      end
   end)

   for _, name in ipairs(options.order) do
      local case = CASES[name]
      if case then
         describe(name, function()
            local d = options.registry[name]
            it('works without a typo', function()
               local err = err_of(function() case.call(with(case.base, {})) end)
               assert.is_nil(err, err)
            end)

            it("refuses a typo'd key at the caller's line, the known keys nearest first", function()
               local key = typo(d.entries[1].name)
               local err = err_of(function() case.call(with(case.base, {[key] = 1})) end)
               assert.is_string(err, name .. ' accepted ' .. key)
               assert.matches('^spec/options_spec%.lua:%d+: ' .. quote(name) .. ": unknown option '" .. quote(key)
                              .. "' %(options: " .. quote(d.entries[1].name) .. '[,)]', err)
            end)

            for _, o in ipairs(d.entries) do
               if o.values then
                  it('refuses an unknown value of ' .. o.name, function()
                     local err = err_of(function() case.call(with(case.base, {[o.name] = 'no_such_value'})) end)
                     assert.is_string(err, name .. ' accepted ' .. o.name .. " = 'no_such_value'")
                     assert.matches('^spec/options_spec%.lua:%d+: ' .. quote(name) .. ': ' .. quote(o.name)
                                    .. " 'no_such_value' is not one of '", err)
                  end)
               end
            end
         end)
      end
   end
end)

describe("issue 23's examples", function()
   local ds4 = data.TensorDataset(fnn.ones(4, 2), fnn.ones(4))
   local function refused(pattern, f)
      local err = err_of(function() local r = f(); return r end)
      assert.is_string(err)
      assert.matches('^spec/options_spec%.lua:%d+: ' .. pattern, err)
   end

   it('are refused, naming the callable, the key and the nearest known one first', function()
      refused("nn%.Linear: unknown option 'bais' %(options: bias, activation%)", function()
         return nn.Linear(3, 4, {bais = false})
      end)
      refused("nn%.Conv2d: unknown option 'paddding' %(options: padding, ", function()
         return nn.Conv2d(3, 8, 3, {paddding = 1})
      end)
      refused("nn%.MaxPool2d: unknown option 'stide' %(options: stride, ", function() return nn.MaxPool2d(2, {stide = 1}) end)
      refused("nn%.LayerNorm: unknown option 'epsilon' %(options: eps, ", function()
         return nn.LayerNorm(4, {epsilon = 1e-3})
      end)
      refused("data%.DataLoader: unknown option 'shufle' %(options: shuffle, ", function()
         return data.DataLoader(ds4, 4, {shufle = true})
      end)
      refused("model:compile: unknown option 'optimiser' %(options: optimizer, ", function()
         return keras_model():compile{optimiser = 'adam', loss = 'mse'}
      end)
      refused("model:fit: unknown option 'epoch' %(options: epochs, ", function()
         return compiled:fit(X, Y, {epoch = 3})
      end)
      refused("optim%.Adam: unknown option 'lrr' %(options: lr, ", function() return optim.Adam(params(), {lrr = 1}) end)
      refused("nn%.MSELoss: reduction 'avg' is not one of 'mean', 'sum', 'none'", function()
         return nn.MSELoss{reduction = 'avg'}
      end)
   end)

   it("refuses DataLoader's reuse misspelt, and a non-boolean reuse", function()
      refused("data%.DataLoader: unknown option 'resue' %(options: reuse, ", function()
         return data.DataLoader(ds4, 4, {resue = true})
      end)
      refused("data%.DataLoader: unknown option 'reuse_buffers' %(options: reuse, ", function()
         return data.DataLoader(ds4, 4, {reuse_buffers = true})
      end)
      refused("data%.DataLoader: reuse is 'yes', expected a boolean", function()
         return data.DataLoader(ds4, 4, {reuse = 'yes'})
      end)
      assert.equals(4, data.DataLoader(ds4, 4, {reuse = true}):len() * 4)
   end)

   it('takes every PyTorch padding_mode and refuses an unknown one', function()
      for _, mode in ipairs{'zeros', 'reflect', 'replicate', 'circular'} do
         local m = nn.Conv2d(3, 8, 3, {padding = 1, padding_mode = mode})
         assert.same({2, 8, 5, 5}, m(fnn.ones(2, 3, 5, 5)):shape())
      end
      refused("nn%.Conv1d: padding_mode 'mirror' is not one of 'zeros', 'reflect', 'replicate', 'circular'", function()
         return nn.Conv1d(3, 8, 3, {padding_mode = 'mirror'})
      end)
      refused("Tensor%.pad: mode 'mirror' is not one of 'constant', 'reflect', 'replicate', 'circular'", function()
         return fnn.ones(2, 3):pad({1, 1}, {mode = 'mirror'})
      end)
   end)

   it('show a bad value by its type and shape, never an address', function()
      refused('nn%.Linear: bias is a tensor %[2,3%], expected a boolean', function()
         return nn.Linear(3, 4, {bias = fnn.ones(2, 3)})
      end)
      refused('nn%.Linear: size 1 is a table {3}, expected a non%-negative integer', function() return nn.Linear({3}, 4) end)
      refused('nn%.Conv2d: stride is a table of 0 values, expected an integer', function() return nn.Conv2d(3, 8, 3, {stride = {a = 1}}) end)
      local err = err_of(function() return nn.LayerNorm({4, {1}}) end)
      assert.is_nil(err:find('0x%x+'), err)
   end)

   it("a callable reading an option it did not declare fails loudly", function()
      local d = options.declare('spec.reader', {{'known', 'boolean', true, 'a declared option'}})
      local o = d:check({}, 1)
      assert.is_true(o.known)
      assert.matches('spec%.reader reads option unknown, which it does not declare', err_of(function() return o.unknown end))
      options.registry['spec.reader'] = nil           -- not a callable of fastnn's: out of the reference
      table.remove(options.order)
   end)
end)

-- files that take an options table without fastnn.options, with what they read: the debt left
local UNCHECKED = {
   ['lua/fastnn/ops/loss.lua'] = 'the functional losses: unknown keys refused by its own loop (fastnn.options\'s '
      .. 'message form), values by reduction_of and tensor_opt',
   ['lua/fastnn/data/idx.lua'] = 'internal: passes Mnist.load\'s checked options on',
   ['lua/fastnn/keras/progress.lua'] = 'internal: the progress bar of fit',
   ['lua/fastnn/nn/TransformerDecoderLayer.lua'] = 'forward(x, memory, opts): passed to the attention',
   ['lua/fastnn/nn/TransformerEncoderLayer.lua'] = 'forward(x, opts): checked by the attention',
   ['lua/fastnn/nn/transformer.lua'] = 'TransformerStack:forward(x, opts), new_cache(opts); '
      .. 'TransformerDecoder:forward(x, memory, opts): passed to the attention',
}

describe('the source', function()
   it('takes options through fastnn.options, or lists the file above with what it still reads unchecked', function()
      local offenders = {}
      for f in io.popen('find lua/fastnn -name "*.lua" | sort'):lines() do
         local fh = assert(io.open(f))
         local src = fh:read('*a')
         fh:close()
         local takes = src:find('function[^\n]*[(,]%s*opts%s*[,)]') ~= nil
         -- a declaration, not only fastnn.options's message helpers (show, nearest)
         local declares = src:find('declare(', 1, true) ~= nil
         if takes and not declares and not UNCHECKED[f] then
            offenders[#offenders + 1] = f
         end
      end
      assert.same({}, offenders)
   end)
end)

describe('docs/options.md', function()
   it('is what tools/options_doc.lua writes from the declarations (run it after changing one)', function()
      local text = dofile('tools/options_doc.lua').render()
      local fh = assert(io.open('docs/options.md'))
      local committed = fh:read('*a')
      fh:close()
      assert.equals(text, committed, 'docs/options.md is stale: FASTNN_LIB=build/libfastnn.so luajit tools/options_doc.lua')
   end)
end)
