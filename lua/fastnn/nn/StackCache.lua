-- nn.StackCache(layers, heads, head_dim, {capacity = 256}): the keys and values a causal
-- transformer stack has seen, for decoding one step at a time (nn.TransformerStack:new_cache()
-- makes one). Per layer two preallocated buffers [N, heads, capacity, head_dim]; each step writes
-- its new keys and values into them in place (fnn.attention_cache_append) and attends to a view
-- of the filled part, so the prefix is never copied or concatenated again. A step that would
-- overflow doubles the capacity (one copy of the prefix, amortized O(1) per position).
--   cache:len()      the number of cached positions
--   cache:reset()    forget them (the buffers are kept and overwritten)
--   cache:capacity() positions the buffers hold now
-- The batch size is fixed by the first step. Views of the buffers handed out by earlier steps stay
-- valid (rows already written are never written again until reset).
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local fnn_tensor = require 'fastnn.tensor'
local C = fnn_tensor.C
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped

local StackCache = require('fastnn.class')('StackCache')

local function positive_int(v) return type(v) == 'number' and v >= 1 and v == math.floor(v) end

local OPTS = require('fastnn.options').declare('nn.StackCache', {
   {'capacity', 'integer', 256, 'positions preallocated (it grows when a step needs more)', min = 1},
})

function StackCache.__new(cls, layers, heads, head_dim, opts, extra)
   if extra ~= nil then too_many('nn.StackCache', 5, extra, 'layers, heads, head_dim, opts') end
   for i, v in ipairs{layers, heads, head_dim} do
      if not positive_int(v) then
         error(('nn.StackCache: size %d is %s, expected a positive integer (StackCache(layers, heads, head_dim))'):format(
               i, show_value(v)), 2)
      end
   end
   local cap = OPTS:check(opts, 2).capacity
   if not positive_int(cap) then
      error(('nn.StackCache: capacity is %s, expected a positive integer'):format(show_value(cap)), 2)
   end
   return setmetatable({n = 0, layers = layers, heads = heads, head_dim = head_dim, cap = cap, batch = nil,
                        kv = {}}, cls)
end

function StackCache:len(extra)
   if extra ~= nil then too_many('nn.StackCache:len', 1, extra, '') end
   return self.n
end
function StackCache:capacity(extra)
   if extra ~= nil then too_many('nn.StackCache:capacity', 1, extra, '') end
   return self.cap
end
function StackCache:reset(extra)
   if extra ~= nil then too_many('nn.StackCache:reset', 1, extra, '') end
   self.n = 0
   return self
end

-- buffers for a step of t positions at batch N on device (nil: the CPU), where the step's keys
-- are (the caller's caller sees the error: level 3)
function StackCache:_reserve(N, t, device)
   if self.batch ~= nil and self.batch ~= N then
      error(('nn.StackCache: a step of batch %d on a cache of batch %d (make a new cache per batch)'):format(
            N, self.batch), 3)
   end
   local need = self.n + t
   local moved = device ~= nil and self.kv[1] ~= nil and self.kv[1].k:device() ~= device
   if self.batch ~= nil and need <= self.cap and not moved then return end
   local cap = self.cap
   while cap < need do cap = cap * 2 end
   for l = 1, self.layers do
      local where = {device = device or 'cpu'}   -- made on the step's device
      local k = fnn_tensor.zeros(N, self.heads, cap, self.head_dim, where)
      local v = fnn_tensor.zeros(N, self.heads, cap, self.head_dim, where)
      local old = self.kv[l]
      if old and old.k:device() ~= k:device() then old = {k = old.k:to(k:device()), v = old.v:to(k:device())} end
      if old and self.n > 0 then
         if C.fnn_attention_cache_append(k, v, old.k:narrow(3, 1, self.n), old.v:narrow(3, 1, self.n), 0) ~= 0 then
            fnn_tensor.fail()
         end
      end
      self.kv[l] = {k = k, v = v}
   end
   self.batch, self.cap = N, cap
end

function StackCache:__tostring()
   return ('nn.StackCache(%d layers, %d heads of %d, %d of %d positions)'):format(self.layers, self.heads,
      self.head_dim, self.n, self.cap)
end

return StackCache
