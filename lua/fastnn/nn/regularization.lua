-- The dropout and noise layers, regularizers active in training mode only (the identity after
-- m:eval()): Dropout, and its subclasses SpatialDropout1d/2d/3d (whole channels) and AlphaDropout
-- (for SELU networks); GaussianDropout and GaussianNoise. Their draws come from the core's random
-- source (fastnn.nn._noise), so fnn.manual_seed makes them reproducible.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local noise = require 'fastnn.nn._noise'
local ffi = require 'ffi'
local istype, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str

local M = {}

-- nn.Dropout(p = 0.5, {noise_shape}) or nn.Dropout{p = 0.5, noise_shape = {...}}: in training mode
-- zeroes each element with probability p and scales the kept ones by 1/(1-p) (inverted dropout,
-- so evaluation needs no rescaling); in evaluation mode (m:eval()) the identity.
-- noise_shape (Keras): the full input shape with 1 on the axes that share one draw, -1 for "the
-- input's size"; {N, 1, F} on [N, T, F] drops the same features at every step.
-- x any shape -> same shape; the gradient is the mask times 1/(1-p).
-- Dropout._declare(who [, entries]): a subclass's declaration, made when it is declared
-- the mask's ndim and sizes (in mask_buf) for input x, or nil and the reason
-- SpatialDropout1d/2d/3d and AlphaDropout below extend this class (mask_shape, forward).
local Dropout = nn.Module:extend('Dropout')
M.Dropout = Dropout
local options = require 'fastnn.options'
local DECLS = {}   -- per class name: the subclasses that use this __init take the same options
local P = {'p', 'number', nil, 'the drop probability (in the one-table form)', min = 0, max = 1, max_open = true,
           default_doc = '0.5'}
local RATE = {'rate', 'number', nil, "Keras's name of p", min = 0, max = 1, max_open = true}
function Dropout._declare(who, entries)
   DECLS[who] = options.declare(who, entries or {P, RATE,
      {'noise_shape', 'table', nil, 'the input shape with 1 on the axes that share a draw (-1: the input\'s size)'}})
   return DECLS[who]
end
Dropout._P, Dropout._RATE = P, RATE
local function declaration(who) return DECLS[who] or Dropout._declare(who) end
Dropout._declare('nn.Dropout')
local mask_buf = ffi.new('int64_t[8]')

function Dropout:__init(p, opts)
   if type(p) == 'table' then p, opts = p.p or p.rate, p end
   if p == nil then p = 0.5 end
   local who = self:_full_name()
   self.p = noise.check_rate(who, 'rate p', p)
   local ns = opts ~= nil and declaration(who):check(opts, 3).noise_shape or nil   -- Spatial*: none
   if ns ~= nil then
      if type(ns) ~= 'table' or #ns > 8 then
         error(('%s: noise_shape must be a table of at most 8 sizes, got a %s'):format(who, type(ns)), 3)
      end
      for i, v in ipairs(ns) do
         if type(v) ~= 'number' or v ~= math.floor(v) or (v < 1 and v ~= -1) then
            error(('%s: noise_shape size %d is %s, expected a positive integer or -1'):format(who, i, show_value(v)), 3)
         end
      end
      self.noise_shape = {unpack(ns)}
   end
end

function Dropout:mask_shape(x)
   local ns, nd = self.noise_shape, x.ndim
   if ns == nil then
      for d = 0, nd - 1 do mask_buf[d] = x.shape_[d] end
      return nd, mask_buf
   end
   local ok = #ns == nd
   for d = 1, nd do
      if not ok then break end
      local v, size = ns[d], tonumber(x.shape_[d - 1])
      if v == -1 then v = size end
      ok = v == 1 or v == size
      mask_buf[d - 1] = v
   end
   if not ok then
      return nil, ('noise_shape [%s] does not fit input %s (each size must be 1, -1 or the input\'s)'):format(
         table.concat(ns, ','), shape_str(x))
   end
   return nd, mask_buf
end

function Dropout:check_input(x)
   if not istype(x) then
      error(('%s: input is a %s, expected a tensor'):format(self:short_str(), type(x)), 3)
   end
end

function Dropout:forward(x)
   self:check_input(x)
   if not self.training or self.p == 0 then return x end
   local nd, shape = self:mask_shape(x)
   if not nd then error(('%s: %s'):format(self:short_str(), shape), 2) end
   local keep = 1 - self.p
   return x * (noise.bernoulli(nd, shape, keep, x) * (1 / keep))
end

function Dropout:__tostring()
   local ns = self.noise_shape
   return ('%s(p=%g%s)'):format(self:_full_name(), self.p,
                                ns and (', noise_shape=[' .. table.concat(ns, ',') .. ']') or '')
end

-- ---------------------------------------------------------------------------
-- SpatialDropout: Dropout whose draws are shared over the _k spatial dims of its class, so whole
-- channels of [N, C, <k spatial dims>] are zeroed (and the kept ones scaled by 1/(1-p)) in
-- training mode; the identity in evaluation mode.

local LAYOUT = {'[N, C, L]', '[N, C, H, W]', '[N, C, D, H, W]'}
local spatial_buf = ffi.new('int64_t[8]')

local SpatialDropout = Dropout:extend('SpatialDropout')

function SpatialDropout:__init(p)
   if type(p) == 'table' then   -- {p = ...} or {rate = ...}; 1 check, 2 here, 3 the class call, 4 the user
      local o = self._OPTS:check(p, 3)
      p = o.p or o.rate
   end
   return Dropout.__init(self, p)   -- a tail call: errors still point at the user's line
end

function SpatialDropout:mask_shape(x)
   local k = self._k
   if x.ndim ~= k + 2 then
      return nil, ('input %s is not %s (%d dims)'):format(fnn_tensor.shape_str(x), LAYOUT[k], k + 2)
   end
   spatial_buf[0], spatial_buf[1] = x.shape_[0], x.shape_[1]
   for d = 2, k + 1 do spatial_buf[d] = 1 end
   return k + 2, spatial_buf
end

local function spatial_class(k)
   local name = 'SpatialDropout' .. k .. 'd'
   local cls = SpatialDropout:extend(name)
   cls._k = k
   cls._OPTS = Dropout._declare('nn.' .. name, {Dropout._P, Dropout._RATE})
   M[name] = cls
   return cls
end

-- nn.SpatialDropout1d(p = 0.5): drops whole channels of [N, C, L] inputs in training mode.
local SpatialDropout1d = spatial_class(1)

-- nn.SpatialDropout2d(p = 0.5): drops whole channels of [N, C, H, W] inputs in training mode.
local SpatialDropout2d = spatial_class(2)

-- nn.SpatialDropout3d(p = 0.5): drops whole channels of [N, C, D, H, W] inputs in training mode.
local SpatialDropout3d = spatial_class(3)

-- ---------------------------------------------------------------------------
-- nn.AlphaDropout(p = 0.5, {noise_shape}): dropout for self-normalizing (SELU) networks. In
-- training mode each element is dropped with probability p to SELU's negative saturation
-- alpha' = -scale * alpha = -1.7581 instead of 0, then y = a * x' + b with
-- a = ((1 - p) (1 + p alpha'^2))^(-1/2) and b = -a alpha' p, so an input of mean 0 and variance 1
-- keeps them (PyTorch's and Keras' formula). Identity in evaluation mode.
-- x any shape -> same shape; the gradient is a * mask. noise_shape as nn.Dropout's.
local AlphaDropout = Dropout:extend('AlphaDropout')
Dropout._declare('nn.AlphaDropout')
local ALPHA_P = -1.7580993408473766   -- -scale * alpha of SELU

function AlphaDropout:forward(x)
   self:check_input(x)
   local p = self.p
   if not self.training or p == 0 then return x end
   local nd, shape = self:mask_shape(x)
   if not nd then error(('%s: %s'):format(self:short_str(), shape), 2) end
   local a = ((1 - p) * (1 + p * ALPHA_P * ALPHA_P)) ^ -0.5
   local b = -a * ALPHA_P * p
   local keep = noise.bernoulli(nd, shape, 1 - p, x)
   -- a (x keep + alpha' (1 - keep)) + b = x (a keep) + (a alpha' + b - a alpha' keep): one mul, one add
   return x * (keep * a) + (keep * (-a * ALPHA_P) + (a * ALPHA_P + b))
end
M.AlphaDropout = AlphaDropout

-- ---------------------------------------------------------------------------
-- nn.GaussianDropout(rate): in training mode multiplies each element by noise drawn from
-- N(1, rate / (1 - rate)) (Keras: the variance of inverted dropout at that rate, without zeros);
-- the identity in evaluation mode. rate in [0, 1).
-- x any shape -> same shape; the gradient is the noise.
local GaussianDropout = nn.Module:extend('GaussianDropout')

function GaussianDropout:__init(rate)
   if type(rate) == 'table' then rate = rate.rate or rate.p end
   self.rate = noise.check_rate('nn.GaussianDropout', 'rate', rate)
end

function GaussianDropout:forward(x)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(self:short_str(), type(x)), 2) end
   local rate = self.rate
   if not self.training or rate == 0 then return x end
   return x * noise.normal(x.ndim, x.shape_, 1, math.sqrt(rate / (1 - rate)), x)
end

function GaussianDropout:__tostring() return ('nn.GaussianDropout(rate=%g)'):format(self.rate) end
M.GaussianDropout = GaussianDropout

-- ---------------------------------------------------------------------------
-- nn.GaussianNoise(stddev): in training mode adds noise drawn from N(0, stddev^2) to each element
-- (Keras; a regularizer and a data augmentation); the identity in evaluation mode.
-- x any shape -> same shape; the gradient passes unchanged.
local GaussianNoise = nn.Module:extend('GaussianNoise')

function GaussianNoise:__init(stddev)
   if type(stddev) == 'table' then stddev = stddev.stddev end
   self.stddev = noise.check_nonneg('nn.GaussianNoise', 'stddev', stddev)
end

function GaussianNoise:forward(x)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(self:short_str(), type(x)), 2) end
   if not self.training or self.stddev == 0 then return x end
   return x + noise.normal(x.ndim, x.shape_, 0, self.stddev, x)
end

function GaussianNoise:__tostring() return ('nn.GaussianNoise(stddev=%g)'):format(self.stddev) end
M.GaussianNoise = GaussianNoise

return M
