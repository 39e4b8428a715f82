-- fastnn.nn: modules, layers and losses.
--   local nn = require 'fastnn.nn'
--   local model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
--   local loss = nn.cross_entropy(model(x), targets)
-- Every name nn.X resolves is in CLASSES below (name -> the module that defines it, loaded on
-- first use) or, for a Keras spelling of the same class, in SAME_AS. Classes of one shape live
-- together in a family module (conv.lua: Conv1d/2d/3d, ConvTranspose*, ...); a large class has
-- its own file (Linear.lua). No file is named after a Keras spelling, so no two files differ only
-- by case (Conv2D beside Conv2d would collide on case-insensitive file systems).
local fnn_tensor = require 'fastnn.tensor'
local autograd = require 'fastnn.autograd'
local C = fnn_tensor.C
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor

local nn = {}
nn.Param = autograd.Param

-- ---------------------------------------------------------------------------
require 'fastnn'   -- the tensor methods the layers and losses use

-- loss functions (nn.mse, nn.cross_entropy, ...): lua/fastnn/ops/loss.lua, every loss in one place
for k, v in pairs(require('fastnn.ops.loss').functional) do nn[k] = v end

-- nn.scoped('inner', m:named_parameters()) -> the same pairs named 'inner.<name>'
function nn.scoped(prefix, named)
   if type(prefix) ~= 'string' then error('scoped: prefix must be a string', 2) end
   if type(named) ~= 'table' then error('scoped: expected an array of {name, param} pairs', 2) end
   local out = {}
   for i, pair in ipairs(named) do
      out[i] = {prefix .. '.' .. pair[1], pair[2]}
   end
   return out
end

-- ---------------------------------------------------------------------------
-- name -> where it is defined: 'family' is lua/fastnn/nn/family.lua, which returns a table of
-- its classes; a value equal to the name is the class's own file (Linear = 'Linear'); a value
-- with a dot is a whole module (nn.callbacks)
local CLASSES = {
   -- containers, graphs and the base class
   Module = 'Module', Sequential = 'Sequential', ModuleList = 'ModuleList', Graph = 'Graph',
   GraphBuilder = 'GraphBuilder',
   -- dense, embedding, attention, transformers, decoding
   Linear = 'Linear', Bilinear = 'Bilinear', Embedding = 'Embedding', MultiheadAttention = 'MultiheadAttention',
   TransformerEncoderLayer = 'TransformerEncoderLayer', TransformerDecoderLayer = 'TransformerDecoderLayer',
   TransformerStack = 'transformer', TransformerEncoder = 'transformer', TransformerDecoder = 'transformer',
   StackCache = 'StackCache', Sampler = 'Sampler', BeamSearch = 'BeamSearch',
   -- shape
   Flatten = 'Flatten', Reshape = 'Reshape', Reverse = 'Reverse', Rescaling = 'Rescaling',
   -- convolution
   Conv1d = 'conv', Conv2d = 'conv', Conv3d = 'conv',
   ConvTranspose1d = 'conv', ConvTranspose2d = 'conv', ConvTranspose3d = 'conv',
   DepthwiseConv1d = 'conv', DepthwiseConv2d = 'conv',
   SeparableConv1d = 'conv', SeparableConv2d = 'conv',
   -- pooling and upsampling
   MaxPool1d = 'pool', MaxPool2d = 'pool', MaxPool3d = 'pool',
   AvgPool1d = 'pool', AvgPool2d = 'pool', AvgPool3d = 'pool',
   GlobalMaxPool1d = 'pool', GlobalMaxPool2d = 'pool', GlobalMaxPool3d = 'pool',
   GlobalAvgPool1d = 'pool', GlobalAvgPool2d = 'pool', GlobalAvgPool3d = 'pool',
   UpSampling1d = 'pool', UpSampling2d = 'pool', UpSampling3d = 'pool',
   AdaptiveAvgPool2d = 'pool',
   -- activations
   ReLU = 'activations', Sigmoid = 'activations', Tanh = 'activations', SiLU = 'activations',
   Swish = 'activations', Mish = 'activations', Softsign = 'activations', HardSigmoid = 'activations',
   SELU = 'activations', ELU = 'activations', GELU = 'activations', LeakyReLU = 'activations',
   Softplus = 'activations', Softmax = 'activations', LogSoftmax = 'activations', Identity = 'activations',
   Activation = 'activations', activation_fn = 'activations',
   -- normalization
   BatchNorm1d = 'norm', BatchNorm2d = 'norm', BatchNorm3d = 'norm',
   InstanceNorm = 'norm', InstanceNorm1d = 'norm', InstanceNorm2d = 'norm', InstanceNorm3d = 'norm',
   LayerNorm = 'norm', GroupNorm = 'norm', RMSNorm = 'norm', UnitNormalization = 'norm',
   -- dropout and noise
   Dropout = 'regularization', AlphaDropout = 'regularization', GaussianDropout = 'regularization',
   GaussianNoise = 'regularization',
   SpatialDropout1d = 'regularization', SpatialDropout2d = 'regularization', SpatialDropout3d = 'regularization',
   -- merge layers of graph models
   Add = 'merge', Subtract = 'merge', Multiply = 'merge', Average = 'merge', Maximum = 'merge',
   Minimum = 'merge', Concatenate = 'merge',
   -- recurrent
   SimpleRNN = 'recurrent', LSTM = 'recurrent', GRU = 'recurrent', Bidirectional = 'Bidirectional',
   -- loss modules (the functions, nn.mse ..., are fastnn.ops.loss's; nn.losses holds both)
   MSELoss = 'losses', L1Loss = 'losses', HuberLoss = 'losses', BCELoss = 'losses',
   BCEWithLogitsLoss = 'losses', CrossEntropyLoss = 'losses', NLLLoss = 'losses',
   KLDivLoss = 'losses', CosineEmbeddingLoss = 'losses',
   MeanSquaredError = 'losses', MeanAbsoluteError = 'losses',
   BinaryCrossEntropy = 'losses', CategoricalCrossEntropy = 'losses',
   SparseCategoricalCrossEntropy = 'losses',
   -- Keras-style layers that read their input width at build
   Dense = 'keras_layers', BatchNormalization = 'keras_layers', LayerNormalization = 'keras_layers',
   Conv1DTranspose = 'keras_layers', Conv2DTranspose = 'keras_layers', Conv3DTranspose = 'keras_layers',
   MaxPooling1D = 'keras_layers', MaxPooling2D = 'keras_layers', MaxPooling3D = 'keras_layers',
   AveragePooling1D = 'keras_layers', AveragePooling2D = 'keras_layers', AveragePooling3D = 'keras_layers',
   Conv1D = 'keras_layers', Conv2D = 'keras_layers', Conv3D = 'keras_layers',
   DepthwiseConv1D = 'keras_layers', DepthwiseConv2D = 'keras_layers',
   SeparableConv1D = 'keras_layers', SeparableConv2D = 'keras_layers',
   -- nn.losses: the loss functions (also as nn.mse, ...) and the loss modules
   losses = 'fastnn.nn.losses',
}

-- Keras spellings of a class above: the same class under a second name
local SAME_AS = {
   GlobalAveragePooling1D = 'GlobalAvgPool1d', GlobalAveragePooling2D = 'GlobalAvgPool2d',
   GlobalAveragePooling3D = 'GlobalAvgPool3d',
   GlobalMaxPooling1D = 'GlobalMaxPool1d', GlobalMaxPooling2D = 'GlobalMaxPool2d', GlobalMaxPooling3D = 'GlobalMaxPool3d',
   UpSampling1D = 'UpSampling1d', UpSampling2D = 'UpSampling2d', UpSampling3D = 'UpSampling3d',
}

-- every name above, sorted (specs and tools walk them)
nn._names = {}
for name in pairs(CLASSES) do nn._names[#nn._names + 1] = name end
for name in pairs(SAME_AS) do nn._names[#nn._names + 1] = name end
table.sort(nn._names)

-- A layer above nn adds to it without nn naming that layer (fastnn.keras gives Sequential and
-- Graph their model methods and adds nn.callbacks and nn.metrics):
--   nn._provide(name, modname)   nn.name is require(modname), loaded on first use
--   nn._extend(name, fn)         fn(nn.name) runs once nn.name has loaded (at once if it has)
local extenders = {}
function nn._provide(name, modname)
   if CLASSES[name] ~= nil then return end
   CLASSES[name] = modname
   nn._names[#nn._names + 1] = name
   table.sort(nn._names)
end
function nn._extend(name, fn)
   local v = rawget(nn, name)
   if v ~= nil then return fn(v) end
   extenders[name] = extenders[name] or {}
   table.insert(extenders[name], fn)
end

local function resolve(name)
   local where = CLASSES[name]
   if where == nil then
      if SAME_AS[name] then return nn[SAME_AS[name]] end
      return nil
   end
   if where:find('.', 1, true) then return require(where) end
   local m = require('fastnn.nn.' .. where)
   if where == name then return m end
   return m[name]
end

setmetatable(nn, {__index = function(t, name)
   if type(name) ~= 'string' then return nil end
   local v = resolve(name)
   if v ~= nil then
      rawset(t, name, v)
      for _, fn in ipairs(extenders[name] or {}) do fn(v) end
      extenders[name] = nil
   end
   return v
end})

-- bfloat16 inputs and fnn.autocast for every layer class, as for the ops (fastnn.precision)
require('fastnn.precision').install_nn(nn)

package.loaded['fastnn.nn'] = nn
return nn
