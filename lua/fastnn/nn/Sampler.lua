-- nn.Sampler(): turns one position's logits into a token id, for generation.
--   local sampler = nn.Sampler():temperature(0.8):top_k(40):top_p(0.95)
--   local id = sampler:sample(logits)      -- logits [V], [1, V] or [1, 1, V] -> a 1-based id
-- Setters chain and check their argument; nn.Sampler{temperature = 0.8, top_k = 40, top_p = 0.95}
-- sets the same at once. Defaults: temperature 1, top_k off, top_p 1 (off).
-- Semantics are Hugging Face's warpers in their order (core/ops/sample.c does all of it in one
-- call): logits / temperature, then the top_k largest (logits equal to the k-th stay too), then
-- the nucleus (the fewest best tokens whose renormalised probability reaches top_p, at least one),
-- then one draw from softmax over what is left. temperature 0 is greedy: the argmax, the first of
-- equal maxima, and no random number is used. Each draw takes one U[0,1) from the thread's random
-- source, so fnn.manual_seed(n) makes a generation reproducible. -inf logits (masked tokens) are
-- never drawn. Logits on a GPU are copied to the CPU first (V floats).
-- Not a Module: a sampler has no parameters and no state but its three settings.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ffi = require 'ffi'
local bit = require 'bit'
local fnn_tensor = require 'fastnn.tensor'
local C, fail, istype, shape_str = fnn_tensor.C, fnn_tensor.fail, fnn_tensor.is_tensor, fnn_tensor.shape_str
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped
local floor = math.floor
local fnn_sample = C.fnn_sample

local Sampler = require('fastnn.class')('Sampler')
local id_buf = ffi.new('int64_t[1]')

-- the three settings: the test a value must pass, what the refusal expects, and (top_k, top_p) the
-- value that nil or false turn it off to
local SETTINGS = {
   temperature = {ok = function(t) return type(t) == 'number' and t == t and t >= 0 and t ~= math.huge end,
                  expected = 'a finite number >= 0 (0 is greedy)'},
   top_k = {ok = function(k) return type(k) == 'number' and k >= 1 and k == floor(k) and k <= 2 ^ 53 end,
            expected = 'a whole number >= 1 (nil turns it off)', off = 0},
   top_p = {ok = function(p) return type(p) == 'number' and p > 0 and p <= 1 end,
            expected = 'a number in (0, 1] (1 turns it off)', off = 1},
}

-- a setting's value, refused at `level`: 3 from a setter or the constructor (1 here, 2 them, 3 the user)
local function checked(name, v, level)
   local s = SETTINGS[name]
   if s.off ~= nil and (v == nil or v == false) then return s.off end
   if not s.ok(v) then error(('Sampler: %s is %s, expected %s'):format(name, show_value(v), s.expected), level) end
   return v
end

local OPTS = require('fastnn.options').declare('nn.Sampler', {
   {'temperature', 'number', 1, 'divides the logits; 0 is greedy', min = 0},
   {'top_k', 'integer|boolean', nil, 'sample among the k most likely ids (nil or false: all)', min = 1, default_doc = 'off'},
   {'top_p', 'number|boolean', nil, 'sample among the fewest ids whose probability reaches p (nucleus)',
    min = 0, min_open = true, max = 1, default_doc = '1 (off)'},
})

function Sampler.__new(cls, opts, extra)
   if extra ~= nil then too_many('nn.Sampler', 2, extra, 'opts') end
   local self = setmetatable({_temperature = 1, _top_k = 0, _top_p = 1}, cls)
   if opts == nil then return self end
   if type(opts) ~= 'table' then
      error(('Sampler: options are a table like {temperature = 0.8, top_k = 40, top_p = 0.95}, got a %s'):format(
         type(opts)), 2)
   end
   for k in pairs(opts) do   -- names through the declaration; values through the checks below
      if OPTS.by_name[k] == nil then OPTS:check({[k] = true}, 2) end
   end
   if opts.temperature ~= nil then self._temperature = checked('temperature', opts.temperature, 3) end
   self._top_k = checked('top_k', opts.top_k, 3)
   self._top_p = checked('top_p', opts.top_p, 3)
   return self
end

-- the chained setters: sampler:temperature(t), sampler:top_k(k), sampler:top_p(p)
for name in pairs(SETTINGS) do
   local op = 'Sampler:' .. name
   Sampler[name] = function(self, v, extra)
      if extra ~= nil then too_many(op, 2, extra, name == 'top_k' and 'k' or name == 'top_p' and 'p' or 't') end
      self['_' .. name] = checked(name, v, 3)
      return self
   end
end

-- the settings as a table (top_k nil when off)
function Sampler:settings(extra)
   if extra ~= nil then too_many('Sampler:settings', 1, extra, '') end
   return {temperature = self._temperature, top_k = self._top_k > 0 and self._top_k or nil, top_p = self._top_p}
end

-- sampler:sample(logits) -> a 1-based id (a Lua number)
function Sampler:sample(logits, extra)
   if extra ~= nil then too_many('Sampler:sample', 2, extra, 'logits') end
   if not istype(logits) then
      error(('Sampler:sample: logits are a %s, expected a tensor [V], [1, V] or [1, 1, V]'):format(type(logits)), 2)
   end
   local nd = logits.ndim
   if nd > 1 and nd <= 3 and logits.shape_[nd - 2] ~= 1 then
      -- the common mistake: a whole sequence's logits
      error(('Sampler:sample: logits %s hold %d positions; pass the last one ([V], [1, V] or [1, 1, V], e.g. '
             .. 'logits:narrow(%d, %d, 1))'):format(shape_str(logits), tonumber(logits.shape_[nd - 2]), nd - 1,
             tonumber(logits.shape_[nd - 2])), 2)
   end
   if bit.rshift(logits.device_, 8) ~= 0 then logits = logits:to('cpu') end
   if fnn_sample(id_buf, logits, self._temperature, self._top_k, self._top_p) ~= 0 then fail() end
   return tonumber(id_buf[0])
end

function Sampler:__tostring()
   local parts = {('temperature=%g'):format(self._temperature)}
   if self._top_k > 0 then parts[#parts + 1] = ('top_k=%d'):format(self._top_k) end
   if self._top_p < 1 then parts[#parts + 1] = ('top_p=%g'):format(self._top_p) end
   return 'nn.Sampler(' .. table.concat(parts, ', ') .. ')'
end

return Sampler
