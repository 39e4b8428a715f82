-- The Keras-style layers: each declares only its output size and reads its input width when it
-- is built, from the shape that reaches it (Sequential:build, GraphBuilder:add) or from its first
-- input.
--   local d = nn.Dense(16, 'relu')          -- no weights yet
--   d:build{8, 4}                           -- now an inner nn.Linear(4, 16): weight [16, 4], bias [16]
--   d:output_shape{8, 4}                    --> {8, 16}
-- KerasLayer is their base: a built layer delegates to its inner PyTorch-style layer (so layouts,
-- init and messages are that layer's), applies its folded activation after it, and names its
-- parameters as the inner layer does ('weight', 'bias'; Separable: 'depthwise.weight', ...). A
-- subclass defines _parse(...) (the constructor's arguments; errors at level 4), _make(shape) (the
-- inner module) and _describe() (the text inside nn.Name(...)). Keras option names are accepted
-- beside PyTorch's: strides/stride, dilation_rate/dilation, use_bias/bias, kernel_size, filters.
--   Dense, BatchNormalization, LayerNormalization
--   KerasConv -> Conv1D/2D/3D, Conv1DTranspose/2D/3D, DepthwiseConv1D/2D, SeparableConv1D/2D
--   MaxPooling1D/2D/3D, AveragePooling1D/2D/3D: subclasses of nn.MaxPool1d ... (KerasPooling)
-- Their names are in nn/init.lua's table; none has a file, so Conv2D and Conv2d cannot collide on
-- a case-insensitive file system.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local nn = require 'fastnn.nn'
local shape = require 'fastnn.nn.shape'
local activation_fn = require('fastnn.nn.activations').activation_fn
local options = require 'fastnn.options'
local Module = nn.Module
local floor = math.floor

local M = {}

-- Keras name -> PyTorch name of the conv options
local ALIASES = {strides = 'stride', dilation_rate = 'dilation', use_bias = 'bias', kernel_size = false,
                 filters = false, activation = false, units = false}

-- the options for the inner layer: PyTorch names, without the ones this maker consumed
local function torch_opts(opts, drop)
   local out = {}
   for k, v in pairs(opts) do
      local a = ALIASES[k]
      if a then out[a] = v
      elseif a == nil and not (drop and drop[k]) then out[k] = v end
   end
   return out
end

local function check_count(name, what, v, level)
   if type(v) ~= 'number' or v < 1 or v ~= floor(v) then
      error(('nn.%s: %s is %s, expected a positive integer'):format(name, what, show_value(v)), level + 1)
   end
   return v
end


-- the activation: an argument, or opts.activation; stored with its name for printing
local function set_activation(self, name, act, level)
   self.activation = act
   self._act = activation_fn(act, level + 1, 'nn.' .. name)
   self._identity = act == nil or act == 'linear'
end

local function rethrow(err, level)
   if type(err) ~= 'string' then error(err, 0) end
   error(shape.strip_where(err), level + 1)
end

local KerasLayer = Module:extend('KerasLayer')
KerasLayer._keras = true

-- not a tail call: _parse raises at level 4 (1 _parse, 2 __init, 3 the class call, 4 the user)
function KerasLayer:__init(...)
   self:_parse(...)
end

-- build(shape): makes the inner layer for inputs of `shape` (batch dim included); a second
-- build keeps the weights (the shape is checked by output_shape)
function KerasLayer:build(s)
   if rawget(self, 'inner') then return self end
   local bad = shape.check(s)
   if bad then error(('nn.%s: build: %s'):format(self._title, bad), 2) end
   local ok, inner = pcall(self._make, self, s)
   if not ok then rethrow(inner, 2) end
   rawset(self, 'inner', inner)
   rawset(self, 'built', true)
   inner:train(self.training)
   -- the inner layer's own buffers, listed here so that Module.set_buffer (what checkpoint
   -- loaders call on the model) finds them; a value it sets here is handed on by pull()
   local names = {}
   for _, pair in ipairs(inner:named_buffers()) do
      if not pair[1]:find('.', 1, true) then names[#names + 1] = pair[1] end
   end
   rawset(self, '_buffer_names', names)
   return self
end

-- buffers set on this layer by name (Module.set_buffer) go to the inner layer
local function pull(self, inner)
   local names = rawget(self, '_buffer_names')
   if not names then return end
   for _, n in ipairs(names) do
      local v = rawget(self, n)
      if v ~= nil then
         inner:set_buffer(n, v)
         rawset(self, n, nil)
      end
   end
end

function KerasLayer:forward(x)
   local inner = rawget(self, 'inner')
   if not inner then
      if type(x) ~= 'cdata' then
         error(('%s: input is a %s, expected a tensor'):format(self:short_str(), type(x)), 2)
      end
      local ok, err = pcall(self.build, self, x:shape())
      if not ok then rethrow(err, 2) end
      inner = self.inner
   end
   pull(self, inner)
   -- the mode set on this layer reaches the inner one (modules() does not list it)
   if rawget(inner, 'training') ~= rawget(self, 'training') then inner:train(rawget(self, 'training')) end
   if self._identity then return inner:forward(x) end   -- a tail call: inner errors land on our caller
   local ok, y = pcall(inner.forward, inner, x)
   if not ok then rethrow(y, 2) end
   return self._act(y)
end

-- the inner layer's parameters, buffers and children, under its own names
function KerasLayer:named_parameters()
   local inner = rawget(self, 'inner')
   return inner and inner:named_parameters() or {}
end
function KerasLayer:named_buffers()
   local inner = rawget(self, 'inner')
   if not inner then return {} end
   pull(self, inner)
   return inner:named_buffers()
end
function KerasLayer:named_children()
   local inner = rawget(self, 'inner')
   return inner and inner:named_children() or {}
end
function KerasLayer:set_buffer(n, t, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':set_buffer', 3, extra, 'n, t') end
   local inner = rawget(self, 'inner')
   if not inner then error(('%s has no buffer %s (it is not built)'):format(self:short_str(), tostring(n)), 2) end
   local ok, err = pcall(inner.set_buffer, inner, n, t)
   if not ok then rethrow(err, 2) end
   return self
end
function KerasLayer:train(mode, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':train', 2, extra, 'mode') end
   Module.train(self, mode)
   local inner = rawget(self, 'inner')
   if inner then inner:train(mode) end
   return self
end
function KerasLayer:to_device(d, extra)
   if extra ~= nil then too_many(self:_full_name() .. ':to_device', 2, extra, 'd') end
   local inner = rawget(self, 'inner')
   if inner then
      pull(self, inner)
      local ok, err = pcall(inner.to_device, inner, d)
      if not ok then rethrow(err, 2) end
   end
   return self
end

-- 'nn.Dense(16, relu)'; built: 'nn.Dense(4 -> 16, relu)'
function KerasLayer:short_str()
   local act = self.activation
   local a = ''
   if type(act) == 'string' and act ~= 'linear' then a = ', ' .. act
   elseif type(act) == 'function' then a = ', <function>' end
   return ('nn.%s(%s%s)'):format(self._title, self:_describe(), a)
end
KerasLayer.__tostring = function(self) return self:short_str() end

-- the channels (dim 2) of a channels-first shape of rank nd + 2, or an error naming the layout
local function channels(name, s, nd)
   if #s ~= nd + 2 then
      local layout = ({'[N, C, L]', '[N, C, H, W]', '[N, C, D, H, W]'})[nd]
      error(('nn.%s: build: input shape %s must be %s (channels first, batch included)'):format(
         name, shape.str(s), layout), 0)
   end
   return s[2]
end

-- a throwaway inner layer with the fewest channels, to check the options at construction
local function spec_probe(torch_name, depthwise, filters, kernel, opts)
   if depthwise then return nn[torch_name](1, kernel, opts) end
   local groups = opts.groups or 1
   return nn[torch_name](groups, filters, kernel, opts)
end

-- Keras' name of a PyTorch conv option
local KERAS_NAME = {stride = 'strides', dilation = 'dilation_rate', bias = 'use_bias'}

-- the declaration of a Keras conv layer: its own names, then the inner layer's options, each with
-- its Keras name beside it (the inner layer checks them again at the probe)
local function conv_declaration(name, torch_name, depthwise)
   local _ = nn[torch_name]   -- loads the inner class, whose module declares its options
   local e = {}
   if not depthwise then e[#e + 1] = {'filters', 'integer', nil, 'output channels (in the one-table form)', min = 1} end
   e[#e + 1] = {'kernel_size', 'integer|table', nil, 'the kernel (in the one-table form)'}
   e[#e + 1] = {'activation', 'string|function', nil, "a name of nn.activation_fn, a function, or nil/'linear' for none"}
   for _, o in ipairs(require('fastnn.options').registry['nn.' .. torch_name].entries) do
      if o.name == 'activation' then goto continue end   -- Keras' own entry above (the inner's: see _make)
      local k = KERAS_NAME[o.name]
      if k then
         e[#e + 1] = {k, o.types, nil, o.doc .. (' (%s: %s)'):format("PyTorch's name", o.name), values = o.values,
                      min = o.min, max = o.max, default_doc = o.default ~= nil and tostring(o.default) or nil}
      end
      e[#e + 1] = o
      ::continue::
   end
   return require('fastnn.options').declare('nn.' .. name, e)
end


-- ---------------------------------------------------------------------------
-- KerasConv: nn.<name>(filters, kernel_size, {strides, padding = 'valid', dilation_rate, groups,
-- use_bias, activation, output_padding, depth_multiplier}) over _torch(in, filters, kernel, opts),
-- or _torch(in, kernel, opts) for a depthwise one (no filters argument). Class fields: _title,
-- _torch (the inner class's name), _nd, _depthwise, _OPTS

local KerasConv = KerasLayer:extend('KerasConv')

function KerasConv:_parse(a, b, c)
   local name, torch_name, depthwise = self._title, self._torch, self._depthwise
   local filters, kernel, opts
   if depthwise then
      if type(a) == 'table' and b == nil then opts = a; kernel = opts.kernel_size
      else kernel, opts = a, b end
   else
      if type(a) == 'table' and b == nil then opts = a; filters, kernel = opts.filters, opts.kernel_size
      else filters, kernel, opts = a, b, c end
      check_count(name, 'filters', filters, 4)
   end
   -- checked here; what goes on is the caller's own keys (defaults filled in would hide their
   -- Keras aliases: strides = 2 beside a filled-in stride = 1)
   self._OPTS:check(opts, 4)
   opts = opts or {}
   if kernel == nil then error(('nn.%s: kernel_size is missing'):format(name), 4) end
   self.filters, self.kernel_size = filters, kernel
   self._opts = torch_opts(opts)
   if self._opts.padding == nil then self._opts.padding = 'valid' end   -- Keras' default
   set_activation(self, name, opts.activation, 4)
   -- the inner layer's own checks (kernel, strides, padding), now rather than at build
   local ok, err = pcall(spec_probe, torch_name, depthwise, filters, kernel, self._opts)
   if not ok then error((shape.strip_where(err):gsub('^nn%.' .. torch_name, 'nn.' .. name)), 4) end
end

-- the inner layers that apply a relu themselves, in the convolution's node ({activation = 'relu'})
local FUSES_RELU = {Conv1d = true, Conv2d = true, Conv3d = true}

function KerasConv:_make(s)
   local c = channels(self._title, s, self._nd)
   if self._depthwise then return nn[self._torch](c, self.kernel_size, self._opts) end
   if self.activation == 'relu' and FUSES_RELU[self._torch] then
      local opts = {activation = 'relu'}
      for k, v in pairs(self._opts) do opts[k] = v end
      self._identity = true   -- forward returns the inner layer's output: the relu is in it
      return nn[self._torch](c, self.filters, self.kernel_size, opts)
   end
   return nn[self._torch](c, self.filters, self.kernel_size, self._opts)
end

function KerasConv:_describe()
   local ks = self.kernel_size
   local k = type(ks) == 'table' and table.concat(ks, 'x') or tostring(ks)
   local inner = rawget(self, 'inner')
   local io = self._depthwise and (inner and (inner.inputs .. ' -> ' .. inner.outputs) or '')
              or ((inner and (inner.inputs .. ' -> ') or '') .. self.filters)
   local pad = self._opts.padding
   local parts = {}
   if io ~= '' then parts[1] = io end
   parts[#parts + 1] = 'k=' .. k
   if type(pad) == 'string' and pad ~= 'valid' then parts[#parts + 1] = pad end
   return table.concat(parts, ', ')
end

-- a KerasConv named name over the class torch_name with nd spatial dims
local function conv_class(name, torch_name, nd, depthwise)
   local cls = KerasConv:extend(name)
   cls._title, cls._torch, cls._nd, cls._depthwise = name, torch_name, nd, depthwise or false
   cls._OPTS = conv_declaration(name, torch_name, depthwise)
   M[name] = cls
   return cls
end

-- nn.Conv1D/2D/3D(filters, kernel_size, {strides = 1, padding = 'valid', dilation_rate = 1,
-- groups = 1, use_bias = true, activation}): an nn.Conv1d/2d/3d whose input channels are read at
-- build from dim 2 of the shape that reaches it (channels first), then the activation; padding
-- 'valid' (Keras' default), 'same', or numbers as nn.Conv2d takes them
local Conv1D = conv_class('Conv1D', 'Conv1d', 1)
local Conv2D = conv_class('Conv2D', 'Conv2d', 2)
local Conv3D = conv_class('Conv3D', 'Conv3d', 3)

-- nn.Conv1DTranspose(filters, kernel_size, {strides = 1, padding = 'valid', output_padding = 0,
--    dilation_rate = 1, groups = 1, use_bias = true, activation})
-- (Keras): an nn.ConvTranspose1d whose input channels are read at build from dim 2 of the shape
-- that reaches it (channels first), then the activation. padding: 'valid' (Keras' default), 'same', or numbers
-- as nn.ConvTranspose1d takes them.
local Conv1DTranspose = conv_class('Conv1DTranspose', 'ConvTranspose1d', 1)

-- nn.Conv2DTranspose(filters, kernel_size, {strides = 1, padding = 'valid', output_padding = 0,
--    dilation_rate = 1, groups = 1, use_bias = true, activation})
-- (Keras): an nn.ConvTranspose2d whose input channels are read at build from dim 2 of the shape
-- that reaches it (channels first), then the activation. padding: 'valid' (Keras' default), 'same', or numbers
-- as nn.ConvTranspose2d takes them.
local Conv2DTranspose = conv_class('Conv2DTranspose', 'ConvTranspose2d', 2)

-- nn.Conv3DTranspose(filters, kernel_size, {strides = 1, padding = 'valid', output_padding = 0,
--    dilation_rate = 1, groups = 1, use_bias = true, activation})
-- (Keras): an nn.ConvTranspose3d whose input channels are read at build from dim 2 of the shape
-- that reaches it (channels first), then the activation. padding: 'valid' (Keras' default), 'same', or numbers
-- as nn.ConvTranspose3d takes them.
local Conv3DTranspose = conv_class('Conv3DTranspose', 'ConvTranspose3d', 3)

-- nn.DepthwiseConv1D/2D(kernel_size, {depth_multiplier = 1, strides, padding, dilation_rate,
-- use_bias, activation}): likewise over nn.DepthwiseConv1d/2d
local DepthwiseConv1D = conv_class('DepthwiseConv1D', 'DepthwiseConv1d', 1, true)
local DepthwiseConv2D = conv_class('DepthwiseConv2D', 'DepthwiseConv2d', 2, true)

-- nn.SeparableConv1D/2D(filters, kernel_size, {depth_multiplier = 1, strides, padding,
-- dilation_rate, use_bias, activation}): likewise over nn.SeparableConv1d/2d
local SeparableConv1D = conv_class('SeparableConv1D', 'SeparableConv1d', 1)
local SeparableConv2D = conv_class('SeparableConv2D', 'SeparableConv2d', 2)

-- ---------------------------------------------------------------------------
-- nn.Dense(units, activation, {use_bias = true}) or nn.Dense{units = 16, activation = 'relu'}
-- (Keras): a fully connected layer that declares only its output width and reads its input width
-- at build (Sequential:build, GraphBuilder:add, or its first input). Built, it is an nn.Linear(in,
-- units) (weight [units, in], bias [units], PyTorch's init) followed by the activation (any name of
-- nn.activation_fn, nil or 'linear' for none; 'relu' and 'gelu' go into the Linear's own node).
-- x [..., in] -> [..., units]: the last dim is contracted, so one kernel also maps every step of a
-- sequence.
local Dense = KerasLayer:extend('Dense')
Dense._title = 'Dense'
M.Dense = Dense
local DENSE_OPTS = require('fastnn.options').declare('nn.Dense', {
   {'units', 'integer', nil, 'the output width (in the one-table form)', min = 1},
   {'activation', 'string|function', nil, "a name of nn.activation_fn ('relu', ...), a function, or nil/'linear' for none"},
   {'use_bias', 'boolean', true, 'learn an additive bias [units]'},
   {'bias', 'boolean', true, "PyTorch's name of use_bias"},
})

function Dense:_parse(units, act, opts)
   if type(units) == 'table' then units, act, opts = units.units, units.activation, units end
   if type(act) == 'table' then act, opts = act.activation, act end
   opts = DENSE_OPTS:check(opts, 4)
   if act == nil then act = opts.activation end
   self.units = check_count('Dense', 'units', units, 4)
   self.use_bias = opts.use_bias and opts.bias
   set_activation(self, 'Dense', act, 4)
end

function Dense:_make(s)
   if #s < 2 then
      error(('nn.Dense: build: input shape [%s] has no feature dim (expected [N, features])'):format(
         table.concat(s, ',')), 0)
   end
   if self.activation == 'relu' or self.activation == 'gelu' then   -- in the Linear's node (its activation option)
      self._identity = true   -- forward returns the inner layer's output: the activation is in it
      return nn.Linear(s[#s], self.units, {bias = self.use_bias, activation = self.activation})
   end
   return nn.Linear(s[#s], self.units, {bias = self.use_bias})
end

function Dense:_describe()
   local inner = rawget(self, 'inner')
   return (inner and (inner.inputs .. ' -> ') or '') .. self.units .. (self.use_bias and '' or ', no bias')
end

-- ---------------------------------------------------------------------------
-- nn.BatchNormalization({momentum = 0.1, epsilon = 1e-5, center, scale}) (Keras): batch
-- normalization over the channels (dim 2) of whatever reaches it, read at build: [N, C] and
-- [N, C, L] give an nn.BatchNorm1d(C), [N, C, H, W] a BatchNorm2d, [N, C, D, H, W] a BatchNorm3d.
-- momentum keeps PyTorch's meaning (running = (1 - momentum) running + momentum batch), so Keras'
-- 0.99 is 0.01 here. Parameters weight/bias [C], buffers running_mean/running_var [C].
local BatchNormalization = KerasLayer:extend('BatchNormalization')
BatchNormalization._title = 'BatchNormalization'
M.BatchNormalization = BatchNormalization
local KINDS = {[2] = 'BatchNorm1d', [3] = 'BatchNorm1d', [4] = 'BatchNorm2d', [5] = 'BatchNorm3d'}

local BN_OPTS = require('fastnn.options').declare('nn.BatchNormalization', {
   {'momentum', 'number|boolean', 0.1, "PyTorch's meaning: running = (1 - momentum) running + momentum batch (Keras' 0.99 is 0.01)",
    min = 0, max = 1},
   {'epsilon', 'number', nil, 'added to the variance', min = 0, default_doc = '1e-5'},
   {'eps', 'number', nil, "PyTorch's name of epsilon", min = 0, default_doc = '1e-5'},
   {'center', 'boolean', true, 'learn a bias (center and scale false together: no affine parameters)'},
   {'scale', 'boolean', true, 'learn a weight (see center)'},
   {'affine', 'boolean', true, "PyTorch's switch for both"},
})

function BatchNormalization:_parse(opts)
   opts = BN_OPTS:check(opts, 4)
   self._opts = {momentum = opts.momentum, eps = opts.epsilon or opts.eps,
                 affine = not (opts.center == false and opts.scale == false) and opts.affine ~= false}
   set_activation(self, 'BatchNormalization', nil, 4)
end

function BatchNormalization:_make(s)
   local kind = KINDS[#s]
   if not kind then
      error(('nn.BatchNormalization: build: input shape [%s] must be [N, C], [N, C, L], [N, C, H, W] or '
             .. '[N, C, D, H, W]'):format(table.concat(s, ',')), 0)
   end
   return nn[kind](s[2], self._opts)
end

function BatchNormalization:_describe()
   local inner = rawget(self, 'inner')
   return inner and tostring(inner.num_features) or ''
end

-- ---------------------------------------------------------------------------
-- nn.LayerNormalization({epsilon = 1e-5}) (Keras, axis -1): an nn.LayerNorm over the last dim,
-- whose width is read at build. Parameters weight/bias [width].
local LayerNormalization = KerasLayer:extend('LayerNormalization')
LayerNormalization._title = 'LayerNormalization'
M.LayerNormalization = LayerNormalization
local LN_OPTS = require('fastnn.options').declare('nn.LayerNormalization', {
   {'epsilon', 'number', nil, 'added to the variance', min = 0, default_doc = '1e-5'},
   {'eps', 'number', nil, "PyTorch's name of epsilon", min = 0, default_doc = '1e-5'},
   {'axis', 'integer', -1, 'the normalised dim: only -1 (the last) is supported'},
})

function LayerNormalization:_parse(opts)
   opts = LN_OPTS:check(opts, 4)
   if opts.axis ~= nil and opts.axis ~= -1 then
      error(('nn.LayerNormalization: axis %s is not supported (only -1, the last dim)'):format(
         tostring(opts.axis)), 4)
   end
   self._opts = {eps = opts.epsilon or opts.eps}
   set_activation(self, 'LayerNormalization', nil, 4)
end

function LayerNormalization:_make(s) return nn.LayerNorm(s[#s], self._opts) end

function LayerNormalization:_describe()
   local inner = rawget(self, 'inner')
   return inner and tostring(inner.shape[1]) or ''
end

-- ---------------------------------------------------------------------------
-- KerasPooling: nn.<name>(pool_size = 2, {strides = pool_size, padding = 'valid'}) (Keras'
-- MaxPooling2D, ...): a subclass of the PyTorch-style pool _torch (nn.MaxPool2d, ...) taking
-- (pool_size, {stride, padding}); padding 'valid' or numbers ('same' is refused: the pools pad
-- symmetrically). It keeps its parent's messages and printing (nn.MaxPool2d(2)); its own options
-- are _keras_OPTS (_OPTS stays the parent's, which the parent's __init checks).

local KerasPooling = {}

function KerasPooling:__init(pool_size, opts)
   local name, torch_name = self._keras_title, self._torch
   if type(pool_size) == 'table' and pool_size[1] == nil and opts == nil then
      pool_size, opts = pool_size.pool_size, pool_size
   end
   opts = self._keras_OPTS:check(opts, 3)
   local padding = opts.padding
   if padding == nil or padding == 'valid' then padding = 0 end
   if padding == 'same' then
      error(("nn.%s: padding 'same' is not supported; pad with numbers (as nn.%s takes them)"):format(
         name, torch_name), 3)
   end
   local o = {stride = opts.strides or opts.stride, padding = padding, ceil_mode = opts.ceil_mode}
   local ok, err = pcall(nn[torch_name].__init, self, pool_size or 2, o)
   if not ok then error((shape.strip_where(err):gsub('^nn%.' .. torch_name, 'nn.' .. name)), 3) end
end

local function pooling_class(name, torch_name)
   local cls = nn[torch_name]:extend(name)
   cls._keras_title, cls._torch = name, torch_name
   cls.__init = KerasPooling.__init
   cls._keras_OPTS = options.declare('nn.' .. name, {
      {'pool_size', 'integer|table', 2, 'the window (in the one-table form)'},
      {'strides', 'integer|table', nil, 'step of the window', default_doc = 'pool_size'},
      {'stride', 'integer|table', nil, "PyTorch's name of strides", default_doc = 'pool_size'},
      {'padding', 'string|integer|table', 'valid', "'valid' or numbers ('same' is refused: the pools pad symmetrically)",
       values = {'valid', 'same'}},
      {'ceil_mode', 'boolean', false, 'round the output size up instead of down'},
   })
   M[name] = cls
   return cls
end

-- nn.MaxPooling1D(pool_size = 2, {strides = pool_size, padding = 'valid'}) (Keras): nn.MaxPool1d
-- under Keras' names and defaults.
local MaxPooling1D = pooling_class('MaxPooling1D', 'MaxPool1d')

-- nn.MaxPooling2D(pool_size = 2, {strides = pool_size, padding = 'valid'}) (Keras): nn.MaxPool2d
-- under Keras' names and defaults.
local MaxPooling2D = pooling_class('MaxPooling2D', 'MaxPool2d')

-- nn.MaxPooling3D(pool_size = 2, {strides = pool_size, padding = 'valid'}) (Keras): nn.MaxPool3d
-- under Keras' names and defaults.
local MaxPooling3D = pooling_class('MaxPooling3D', 'MaxPool3d')

-- nn.AveragePooling1D(pool_size = 2, {strides = pool_size, padding = 'valid'}) (Keras): nn.AvgPool1d
-- under Keras' names and defaults.
local AveragePooling1D = pooling_class('AveragePooling1D', 'AvgPool1d')

-- nn.AveragePooling2D(pool_size = 2, {strides = pool_size, padding = 'valid'}) (Keras): nn.AvgPool2d
-- under Keras' names and defaults.
local AveragePooling2D = pooling_class('AveragePooling2D', 'AvgPool2d')

-- nn.AveragePooling3D(pool_size = 2, {strides = pool_size, padding = 'valid'}) (Keras): nn.AvgPool3d
-- under Keras' names and defaults.
local AveragePooling3D = pooling_class('AveragePooling3D', 'AvgPool3d')

return M
