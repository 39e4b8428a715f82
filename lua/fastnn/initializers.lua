-- fastnn.init (file initializers.lua: fastnn/init.lua is the package itself):
-- weight initializers with PyTorch's formulas. Each takes a shape (table) and
-- options and returns a new tensor. Fans follow PyTorch: for a weight
-- [out, in, k...], fan_in = in * prod(k), fan_out = out * prod(k).
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local C = fnn_tensor.C
local M = {}

local function fans(op, shape)
   if type(shape) ~= 'table' or #shape < 1 then
      error(('init.%s: expected a shape table, got %s'):format(op, show_value(shape)), 3)
   end
   if #shape == 1 then return shape[1], shape[1] end
   local receptive = 1
   for i = 3, #shape do receptive = receptive * shape[i] end
   return shape[2] * receptive, shape[1] * receptive
end

-- gain for a nonlinearity, as torch.nn.init.calculate_gain
function M.calculate_gain(nonlinearity, param)
   nonlinearity = nonlinearity or 'leaky_relu'
   if nonlinearity == 'linear' or nonlinearity == 'sigmoid' or nonlinearity:match('^conv') then return 1 end
   if nonlinearity == 'tanh' then return 5 / 3 end
   if nonlinearity == 'relu' then return math.sqrt(2) end
   if nonlinearity == 'selu' then return 3 / 4 end
   if nonlinearity == 'leaky_relu' then
      local slope = param or 0.01
      return math.sqrt(2 / (1 + slope * slope))
   end
   error('init.calculate_gain: unknown nonlinearity ' .. tostring(nonlinearity), 2)
end

local options = require 'fastnn.options'
local KAIMING = {
   {'a', 'number', 0, 'the negative slope of the leaky_relu that follows'},
   {'mode', 'string', 'fan_in', "'fan_in' or 'fan_out'", values = {'fan_in', 'fan_out'}},
   {'nonlinearity', 'string', 'leaky_relu', "the gain's nonlinearity (init.calculate_gain)"},
}
local GAIN = {{'gain', 'number', 1, 'a scale of the result'}}
local DECL = {
   kaiming_uniform = options.declare('init.kaiming_uniform', KAIMING),
   kaiming_normal = options.declare('init.kaiming_normal', KAIMING),
   xavier_uniform = options.declare('init.xavier_uniform', GAIN),
   xavier_normal = options.declare('init.xavier_normal', GAIN),
   orthogonal = options.declare('init.orthogonal', GAIN),
   uniform_ = options.declare('init.uniform_', {
      {'a', 'number', nil, 'the low end', default_doc = '0'}, {'b', 'number', nil, 'the high end', default_doc = '1'},
      {'low', 'number', nil, "another name of a", default_doc = '0'},
      {'high', 'number', nil, 'another name of b', default_doc = '1'}}),
   normal_ = options.declare('init.normal_', {
      {'mean', 'number', 0, 'the mean'}, {'std', 'number', 1, 'the standard deviation', min = 0}}),
}
-- the checked options of initializer op; the user is level 4 from here (1 check, 2 this, 3 op)
local function opts_of(op, opts)
   local o = DECL[op]:check(opts, 3)
   return o
end

-- opts: checked by the caller (opts_of counts levels from the initializer the user called)
local function kaiming_std(op, shape, opts)
   local fan_in, fan_out = fans(op, shape)
   local fan = (opts.mode == 'fan_out') and fan_out or fan_in
   local gain = M.calculate_gain(opts.nonlinearity or 'leaky_relu', opts.a or 0)
   return gain / math.sqrt(fan)
end

function M.kaiming_uniform(shape, opts)
   local bound = math.sqrt(3) * kaiming_std('kaiming_uniform', shape, opts_of('kaiming_uniform', opts))
   return fnn_tensor.rand(shape) * (2 * bound) - bound
end

function M.kaiming_normal(shape, opts)
   local std = kaiming_std('kaiming_normal', shape, opts_of('kaiming_normal', opts))
   return fnn_tensor.randn(shape) * std
end

function M.xavier_uniform(shape, opts)
   local fan_in, fan_out = fans('xavier_uniform', shape)
   local bound = opts_of('xavier_uniform', opts).gain * math.sqrt(6 / (fan_in + fan_out))
   return fnn_tensor.rand(shape) * (2 * bound) - bound
end

function M.xavier_normal(shape, opts)
   local fan_in, fan_out = fans('xavier_normal', shape)
   local gain = opts_of('xavier_normal', opts).gain
   return fnn_tensor.randn(shape) * (gain * math.sqrt(2 / (fan_in + fan_out)))
end

function M.uniform_(shape, opts)
   opts = opts_of('uniform_', opts)
   local lo, hi = opts.a or opts.low or 0, opts.b or opts.high or 1
   return fnn_tensor.rand(shape) * (hi - lo) + lo
end

function M.normal_(shape, opts)
   opts = opts_of('normal_', opts)
   local r = fnn_tensor.randn(shape) * opts.std + opts.mean
   return r
end

function M.zeros_(shape) return fnn_tensor.zeros(shape) end
function M.ones_(shape) return fnn_tensor.ones(shape) end
function M.constant_(shape, value) return fnn_tensor.full(shape, value) end

-- orthogonal: rows = shape[1], cols = the product of the rest (PyTorch flattens trailing dims)
function M.orthogonal(shape, opts)
   local gain = opts_of('orthogonal', opts).gain
   fans('orthogonal', shape)
   local rows, cols = shape[1], 1
   for i = 2, #shape do cols = cols * shape[i] end
   local out = fnn_tensor.new()
   if C.fnn_orthogonal(out, rows, #shape == 1 and 1 or cols, gain) ~= 0 then fnn_tensor.fail() end
   out = fnn_tensor.done(out)
   if #shape > 2 or #shape == 1 then return out:reshape(shape) end
   return out
end

return M
