-- Shared maker of the Keras-style layers (nn.Dense, nn.Conv2D, nn.SeparableConv1D, ...): each
-- declares only its output size and reads its input width when it is built, from the shape that
-- reaches it (Sequential:build, GraphBuilder:add) or from its first input.
--   local d = nn.Dense(16, 'relu')          -- no weights yet
--   d:build{8, 4}                           -- now an inner nn.Linear(4, 16): weight [16, 4], bias [16]
--   d:output_shape{8, 4}                    --> {8, 16}
-- A built layer delegates to its inner PyTorch-style layer (so layouts, init and messages are that
-- layer's), applies its folded activation after it, and names its parameters as the inner layer
-- does ('weight', 'bias'; Separable: 'depthwise.weight', ...). Keras option names are accepted
-- beside PyTorch's: strides/stride, dilation_rate/dilation, use_bias/bias, kernel_size, filters.
-- A spec for M.class: {parse = function(self, ...) (errors at level 4), make = function(self, shape)
-- -> the inner module, describe = function(self) -> the text inside nn.Name(...)}.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local nn = require 'fastnn.nn'
local shape = require 'fastnn.keras.shape'
local activation_fn = require('fastnn.nn.activations').activation_fn
local Module = nn.Module
local floor = math.floor

local M = {}

-- Keras name -> PyTorch name of the conv options
local ALIASES = {strides = 'stride', dilation_rate = 'dilation', use_bias = 'bias', kernel_size = false,
                 filters = false, activation = false, units = false}

-- the options for the inner layer: PyTorch names, without the ones this maker consumed
function M.torch_opts(opts, drop)
   local out = {}
   for k, v in pairs(opts) do
      local a = ALIASES[k]
      if a then out[a] = v
      elseif a == nil and not (drop and drop[k]) then out[k] = v end
   end
   return out
end

function M.check_count(name, what, v, level)
   if type(v) ~= 'number' or v < 1 or v ~= floor(v) then
      error(('nn.%s: %s is %s, expected a positive integer'):format(name, what, show_value(v)), level + 1)
   end
   return v
end


-- the activation: an argument, or opts.activation; stored with its name for printing
function M.set_activation(self, name, act, level)
   self.activation = act
   self._act = activation_fn(act, level + 1, 'nn.' .. name)
   self._identity = act == nil or act == 'linear'
end

local function rethrow(err, level)
   if type(err) ~= 'string' then error(err, 0) end
   error(shape.strip_where(err), level + 1)
end

function M.class(name, spec)
   local cls = Module:extend(name)
   cls._keras = true

   function cls:__init(...)
      spec.parse(self, ...)
   end

   -- build(shape): makes the inner layer for inputs of `shape` (batch dim included); a second
   -- build keeps the weights (the shape is checked by output_shape)
   function cls:build(s)
      if rawget(self, 'inner') then return self end
      local bad = shape.check(s)
      if bad then error(('nn.%s: build: %s'):format(name, bad), 2) end
      local ok, inner = pcall(spec.make, self, s)
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

   function cls:forward(x)
      local inner = rawget(self, 'inner')
      if not inner then
         if type(x) ~= 'cdata' then
            error(('%s: input is a %s, expected a tensor'):format(self:short_str(), type(x)), 2)
         end
         local ok, err = pcall(cls.build, self, x:shape())
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
   function cls:named_parameters()
      local inner = rawget(self, 'inner')
      return inner and inner:named_parameters() or {}
   end
   function cls:named_buffers()
      local inner = rawget(self, 'inner')
      if not inner then return {} end
      pull(self, inner)
      return inner:named_buffers()
   end
   function cls:named_children()
      local inner = rawget(self, 'inner')
      return inner and inner:named_children() or {}
   end
   function cls:set_buffer(n, t)
      local inner = rawget(self, 'inner')
      if not inner then error(('%s has no buffer %s (it is not built)'):format(self:short_str(), tostring(n)), 2) end
      local ok, err = pcall(inner.set_buffer, inner, n, t)
      if not ok then rethrow(err, 2) end
      return self
   end
   function cls:train(mode)
      Module.train(self, mode)
      local inner = rawget(self, 'inner')
      if inner then inner:train(mode) end
      return self
   end
   function cls:to_device(d)
      local inner = rawget(self, 'inner')
      if inner then
         pull(self, inner)
         local ok, err = pcall(inner.to_device, inner, d)
         if not ok then rethrow(err, 2) end
      end
      return self
   end

   -- 'nn.Dense(16, relu)'; built: 'nn.Dense(4 -> 16, relu)'
   function cls:short_str()
      local act = self.activation
      local a = ''
      if type(act) == 'string' and act ~= 'linear' then a = ', ' .. act
      elseif type(act) == 'function' then a = ', <function>' end
      return ('nn.%s(%s%s)'):format(name, spec.describe(self), a)
   end
   cls.__tostring = function(self) return self:short_str() end

   return cls
end

-- the channels (dim 2) of a channels-first shape of rank nd + 2, or an error naming the layout
function M.channels(name, s, nd)
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

-- nn.<name>(filters, kernel_size, {strides, padding = 'valid', dilation_rate, groups, use_bias,
-- activation, output_padding, depth_multiplier}) over torch_name(in, filters, kernel, opts)
-- (kind 'conv'), torch_name(in, kernel, opts) (kind 'depthwise': no filters argument)
-- Keras' name of a PyTorch conv option
local KERAS_NAME = {stride = 'strides', dilation = 'dilation_rate', bias = 'use_bias'}

-- the declaration of a Keras conv layer: its own names, then the inner layer's options, each with
-- its Keras name beside it (the inner layer checks them again at the probe)
local function conv_declaration(name, torch_name, depthwise)
   local _ = nn[torch_name]   -- loads the inner class, whose file declares its options
   local e = {}
   if not depthwise then e[#e + 1] = {'filters', 'integer', nil, 'output channels (in the one-table form)', min = 1} end
   e[#e + 1] = {'kernel_size', 'integer|table', nil, 'the kernel (in the one-table form)'}
   e[#e + 1] = {'activation', 'string|function', nil, "a name of nn.activation_fn, a function, or nil/'linear' for none"}
   for _, o in ipairs(require('fastnn.options').registry['nn.' .. torch_name].entries) do
      local k = KERAS_NAME[o.name]
      if k then
         e[#e + 1] = {k, o.types, nil, o.doc .. (' (%s: %s)'):format("PyTorch's name", o.name), values = o.values,
                      min = o.min, max = o.max, default_doc = o.default ~= nil and tostring(o.default) or nil}
      end
      e[#e + 1] = o
   end
   return require('fastnn.options').declare('nn.' .. name, e)
end

function M.conv(name, torch_name, nd, kind)
   local depthwise = kind == 'depthwise'
   local OPTS = conv_declaration(name, torch_name, depthwise)
   return M.class(name, {
      parse = function(self, a, b, c)
         local filters, kernel, opts
         if depthwise then
            if type(a) == 'table' and b == nil then opts = a; kernel = opts.kernel_size
            else kernel, opts = a, b end
         else
            if type(a) == 'table' and b == nil then opts = a; filters, kernel = opts.filters, opts.kernel_size
            else filters, kernel, opts = a, b, c end
            M.check_count(name, 'filters', filters, 4)
         end
         -- checked here; what goes on is the caller's own keys (defaults filled in would hide their
         -- Keras aliases: strides = 2 beside a filled-in stride = 1)
         OPTS:check(opts, 4)
         opts = opts or {}
         if kernel == nil then error(('nn.%s: kernel_size is missing'):format(name), 4) end
         self.filters, self.kernel_size = filters, kernel
         self._opts = M.torch_opts(opts)
         if self._opts.padding == nil then self._opts.padding = 'valid' end   -- Keras' default
         M.set_activation(self, name, opts.activation, 4)
         -- the inner layer's own checks (kernel, strides, padding), now rather than at build
         local ok, err = pcall(spec_probe, torch_name, depthwise, filters, kernel, self._opts)
         if not ok then error((shape.strip_where(err):gsub('^nn%.' .. torch_name, 'nn.' .. name)), 4) end
      end,
      make = function(self, s)
         local c = M.channels(name, s, nd)
         if depthwise then return nn[torch_name](c, self.kernel_size, self._opts) end
         return nn[torch_name](c, self.filters, self.kernel_size, self._opts)
      end,
      describe = function(self)
         local ks = self.kernel_size
         local k = type(ks) == 'table' and table.concat(ks, 'x') or tostring(ks)
         local inner = rawget(self, 'inner')
         local io = depthwise and (inner and (inner.inputs .. ' -> ' .. inner.outputs) or '')
                    or ((inner and (inner.inputs .. ' -> ') or '') .. self.filters)
         local pad = self._opts.padding
         local parts = {}
         if io ~= '' then parts[1] = io end
         parts[#parts + 1] = 'k=' .. k
         if type(pad) == 'string' and pad ~= 'valid' then parts[#parts + 1] = pad end
         return table.concat(parts, ', ')
      end,
   })
end


-- nn.<name>(pool_size = 2, {strides = pool_size, padding = 'valid'}) (Keras' MaxPooling2D, ...):
-- the PyTorch-style pool torch_name(pool_size, {stride, padding}); padding 'valid' or numbers
-- ('same' is refused: the pools pad symmetrically)
function M.pooling(name, torch_name)
   local base = nn[torch_name]
   local cls = base:extend(name)
   local OPTS = require('fastnn.options').declare('nn.' .. name, {
      {'pool_size', 'integer|table', 2, 'the window (in the one-table form)'},
      {'strides', 'integer|table', nil, 'step of the window', default_doc = 'pool_size'},
      {'stride', 'integer|table', nil, "PyTorch's name of strides", default_doc = 'pool_size'},
      {'padding', 'string|integer|table', 'valid', "'valid' or numbers ('same' is refused: the pools pad symmetrically)",
       values = {'valid', 'same'}},
      {'ceil_mode', 'boolean', false, 'round the output size up instead of down'},
   })
   function cls:__init(pool_size, opts)
      if type(pool_size) == 'table' and pool_size[1] == nil and opts == nil then
         pool_size, opts = pool_size.pool_size, pool_size
      end
      opts = OPTS:check(opts, 3)
      local padding = opts.padding
      if padding == nil or padding == 'valid' then padding = 0 end
      if padding == 'same' then
         error(("nn.%s: padding 'same' is not supported; pad with numbers (as nn.%s takes them)"):format(
            name, torch_name), 3)
      end
      local o = {stride = opts.strides or opts.stride, padding = padding, ceil_mode = opts.ceil_mode}
      local ok, err = pcall(base.__init, self, pool_size or 2, o)
      if not ok then error((shape.strip_where(err):gsub('^nn%.' .. torch_name, 'nn.' .. name)), 3) end
   end
   return cls
end

return M
