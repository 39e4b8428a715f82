-- nn.Dropout(p = 0.5, {noise_shape}) or nn.Dropout{p = 0.5, noise_shape = {...}}: in training mode
-- zeroes each element with probability p and scales the kept ones by 1/(1-p) (inverted dropout,
-- so evaluation needs no rescaling); in evaluation mode (m:eval()) the identity.
-- noise_shape (Keras): the full input shape with 1 on the axes that share one draw, -1 for "the
-- input's size"; {N, 1, F} on [N, T, F] drops the same features at every step.
-- x any shape -> same shape; the gradient is the mask times 1/(1-p).
-- SpatialDropout1d/2d/3d and AlphaDropout extend this class (mask_shape, forward).
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local noise = require 'fastnn.nn._noise'
local ffi = require 'ffi'
local istype, shape_str = fnn_tensor.is_tensor, fnn_tensor.shape_str

local Dropout = nn.Module:extend('Dropout')
local options = require 'fastnn.options'
local DECLS = {}   -- per class name: the subclasses that use this __init take the same options
local P = {'p', 'number', nil, 'the drop probability (in the one-table form)', min = 0, max = 1, max_open = true,
           default_doc = '0.5'}
local RATE = {'rate', 'number', nil, "Keras's name of p", min = 0, max = 1, max_open = true}
-- Dropout._declare(who [, entries]): a subclass's declaration, made when its file loads
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

-- the mask's ndim and sizes (in mask_buf) for input x, or nil and the reason
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

return Dropout
