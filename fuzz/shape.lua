-- fuzz/shape.lua: the driver of fuzz_shape (see shape.c). The input is decoded into Lua values
-- (value() below) and one call of the creation API; the result must be a tensor of the shape the
-- documentation gives (computed here independently) or a string error at the caller's line that
-- starts with the op's name. Valid shapes of more than 2^22 elements are skipped: a legitimate
-- allocation of any size is the OOM spec's business, not a parser's; sizes whose product passes
-- 2^62 are called (the core must refuse them without allocating).
local ffi = require 'ffi'
local fnn = require 'fastnn'
rawset(_G, 'FUZZ_EMPTY_CACHE', fnn.empty_cache)

local SPECIAL = {-1, -2, 0.5, 1 / 0, -1 / 0, 0 / 0, 2^31, 2^32, 2^53, 2^62, 2^63, 2^64, 2^70, -2^63, 1e308,
                 3.5, 1e-300, 16, 17, 65, 1024, 2^24 + 1, -0.0, 8, 9}
local STRINGS = {'a', '', '3', 'int64', 'float32'}
local MAX_ELEMENTS = 2^22
local f32 = ffi.new('float[1]')

-- the input as a stream of bytes; past the end it reads zeros (small numbers), so values stay finite
local function reader(bytes)
   local pos = 0
   return function()
      pos = pos + 1
      return bytes:byte(pos) or 0
   end
end

local function value(next_byte, depth)
   local b = next_byte()
   local kind = depth > 8 and b % 3 or b % 9
   if kind <= 1 then return next_byte() % 7 end
   if kind == 2 then return SPECIAL[next_byte() % #SPECIAL + 1] end
   if kind == 3 then
      local t = {}
      for i = 1, next_byte() % 5 do t[i] = value(next_byte, depth + 1) end
      return t
   end
   if kind == 4 then
      local t = {}
      for i = 1, next_byte() % 20 do t[i] = next_byte() - 100 end
      return t
   end
   if kind == 5 then return nil end
   if kind == 6 then return STRINGS[next_byte() % #STRINGS + 1] end
   if kind == 7 then return next_byte() % 2 == 0 end
   local which = next_byte() % 4   -- tables the array part alone does not describe
   if which == 0 then return {1, nil, 3} end
   if which == 1 then return {x = 1} end
   if which == 2 then return {dtype = 'int64'} end
   local t = {}
   t[1] = {1, 2}
   t[2] = 5
   return t
end

-- a nested table the way fnn.tensor documents it: the shape by first elements, regular, numbers
-- at the leaves, at most 8 dims -> dims, flat values; or nil
local function reference(data)
   if type(data) == 'number' then return {}, {data} end
   if type(data) ~= 'table' then return nil end
   local dims, cur = {}, data
   while type(cur) == 'table' do dims[#dims + 1] = #cur; cur = cur[1] end
   if #dims > 8 then return nil end
   local flat = {}
   local function walk(t, level)
      if type(t) ~= 'table' or #t ~= dims[level] then return false end
      for i = 1, #t do
         if level < #dims then
            if not walk(t[i], level + 1) then return false end
         elseif type(t[i]) ~= 'number' then
            return false
         else
            flat[#flat + 1] = t[i]
         end
      end
      return true
   end
   if not walk(data, 1) then return nil end
   return dims, flat
end

local function is_opts(v) return type(v) == 'table' and v[1] == nil and next(v) ~= nil end
-- a creator's options table with a key it does not declare (dtype, device): refused, never ignored
local function unknown_option(t)
   for k in pairs(t) do if k ~= 'dtype' and k ~= 'device' then return true end end
   return false
end

-- a shape argument as documented ("sizes as varargs or one table"): nil (no sizes), one number,
-- or a table of at most 8 non-negative integers whose product (a 0 counted as 1) stays below 2^62
-- (-1 once where inference is allowed)
-- -> its sizes and element count, or nil
local function shape_of(s, allow_infer)
   if s == nil then return {}, 1 end
   if type(s) == 'number' then s = {s} end
   if type(s) ~= 'table' then return nil end
   if #s > 8 then return nil end
   local count, infer, span = 1, 0, 1
   for i = 1, #s do
      local v = s[i]
      if type(v) ~= 'number' or v ~= math.floor(v) or v ~= v then return nil end
      if v == -1 and allow_infer then infer = infer + 1
      elseif v < 0 then return nil
      else count = count * v end
      span = span * math.max(v, 1)   -- the strides' range, a size 0 counted as 1
      if span >= 2^62 then return nil end
   end
   if infer > 1 then return nil end
   return s, count
end

-- a creator's shape: a size list within MAX_ELEMENTS -> it; 'skip' for a larger legitimate one
local function creator_shape(s)
   local sizes, count = shape_of(s)
   if sizes and count > MAX_ELEMENTS then return 'skip' end
   return sizes
end

-- each call: the op's name and function(args) -> result; want(args) -> the documented shape, or
-- nil when the call must fail, or 'skip'
local user_line
local calls = {
   {'tensor', function(a) return fnn.tensor(a.v) end, function(a) return (reference(a.v)) end},
   {'tensor', function(a) return fnn.tensor(a.v, a.s) end, function(a)
      if a.s == nil or is_opts(a.s) then   -- fnn.tensor(data[, opts])
         if is_opts(a.s) and unknown_option(a.s) then return nil end
         local int64 = is_opts(a.s) and a.s.dtype == 'int64'
         if is_opts(a.s) and a.s.dtype ~= nil and a.s.dtype ~= 'int64' then return nil end
         return reference(a.v) and (int64 and 'any' or (reference(a.v))) or nil, int64 and 'int64' or nil
      end
      if type(a.v) == 'number' then return nil end   -- a number is a 0-d tensor: a shape is refused, not ignored
      if type(a.v) ~= 'table' then return nil end
      local s, count = shape_of(a.s)
      if not s then return nil end
      if count > MAX_ELEMENTS then return 'skip' end
      if #a.v ~= count then return nil end
      for i = 1, count do if type(a.v[i]) ~= 'number' then return nil end end
      return s
   end},
   {'tensor', function(a) return fnn.long(a.v) end, function(a) return reference(a.v) and 'any' or nil end, 'int64'},
   {'zeros', function(a) return fnn.zeros(a.s) end, function(a)
      if is_opts(a.s) then   -- zeros{dtype = ...}: no sizes
         if unknown_option(a.s) then return nil end
         if a.s.dtype ~= nil and a.s.dtype ~= 'int64' and a.s.dtype ~= 'float32' then return nil end
         return {}, a.s.dtype == 'int64' and 'int64' or nil
      end
      return creator_shape(a.s)
   end},
   {'ones', function(a) return fnn.ones(a.s, {dtype = 'int64'}) end, function(a) return creator_shape(a.s) end, 'int64'},
   {'empty', function(a) return fnn.empty(unpack(type(a.s) == 'table' and a.s or {a.s})) end, function(a)
      -- varargs of sizes, then optionally options: a table among the sizes is the table form
      local args = type(a.s) == 'table' and a.s or {a.s}
      local n = #args
      if n > 0 and is_opts(args[n]) then
         if unknown_option(args[n]) then return nil end
         if args[n].dtype ~= nil and args[n].dtype ~= 'int64' and args[n].dtype ~= 'float32' then return nil end
         return 'skip'   -- the dtype rules are zeros' (above)
      end
      local sizes = {}
      for i = 1, n do
         if type(args[i]) == 'table' then return 'skip' end
         sizes[i] = args[i]
      end
      if n == 1 and args[1] == nil then return {} end   -- empty(nil): no sizes
      for i = 1, n do if args[i] == nil then return nil end end
      return creator_shape(sizes)
   end},
   {'full', function(a) return fnn.full(a.s, a.v) end, function(a)
      if type(a.v) ~= 'number' then return nil end
      return creator_shape(a.s)
   end},
   {'rand', function(a) return fnn.rand(a.s) end, function(a) return creator_shape(a.s) end},
   {'reshape', function(a) return fnn.arange(1, 13):float():reshape(a.s) end, function(a)
      local s, count = shape_of(a.s, true)
      if not s then return nil end
      local out = {}
      for i = 1, #s do out[i] = s[i] end
      for i = 1, #s do
         if s[i] == -1 then
            if count == 0 or 12 % count ~= 0 then return nil end
            out[i] = 12 / count
            count = 12
         end
      end
      if count ~= 12 then return nil end
      return out
   end},
   {'view', function(a) return fnn.arange(1, 7):float():reshape(2, 3):transpose(1, 2):view(a.s) end, function(a)
      local s, count = shape_of(a.s, true)
      if not s then return nil end
      if count == 6 then return 'either' end   -- a view only where the layout allows
      for i = 1, #s do if s[i] == -1 and count > 0 and 6 % count == 0 then return 'either' end end
      return nil
   end},
}

local function user_call(f, a)
   local r = f(a)
   return r
end
user_line = ('%s:%d: '):format(debug.getinfo(1, 'S').short_src, debug.getinfo(user_call, 'S').linedefined + 1)

local function show(v, depth)
   depth = depth or 0
   if type(v) ~= 'table' then return type(v) == 'string' and ('%q'):format(v) or tostring(v) end
   if depth > 6 then return '{...}' end
   local parts = {}
   for k, x in pairs(v) do
      parts[#parts + 1] = (type(k) == 'number' and '' or tostring(k) .. ' = ') .. show(x, depth + 1)
   end
   return '{' .. table.concat(parts, ', ') .. '}'
end

local function same(expected, got, dtype)
   if expected ~= expected then return got ~= got end
   if dtype == 'int64' then return true end   -- the conversion's rules are dtype_spec's
   f32[0] = expected
   return f32[0] == got or (f32[0] ~= f32[0] and got ~= got)
end

return function(_, bytes)
   local next_byte = reader(bytes)
   local call = calls[next_byte() % #calls + 1]
   local op, fn, want_of, dtype = call[1], call[2], call[3], call[4] or 'float32'
   local a = {v = value(next_byte, 0), s = value(next_byte, 0)}
   local want, want_dtype = want_of(a)
   if want == 'skip' then return true end
   dtype = want_dtype or dtype
   local ok, r = pcall(user_call, fn, a)
   local where = ('%s with v = %s, s = %s'):format(op, show(a.v), show(a.s))
   local may_fail = want == 'either' or want == 'any'
   if want == 'any' then want = (reference(a.v)) end   -- int64 conversion may refuse a value
   if not ok then
      if want ~= nil and not may_fail then
         return false, ('%s: documented to give %s, raised %s'):format(where, show(want), tostring(r))
      end
      -- the op names itself; an options table it refuses is named by its declaration (fnn.tensor)
      local prefix, declared = user_line .. op .. ': ', user_line .. 'fnn.' .. op .. ': '
      if type(r) ~= 'string' or (r:sub(1, #prefix) ~= prefix and r:sub(1, #declared) ~= declared) then
         return false, ('%s: an error that is not "%s...": %s'):format(where, prefix, tostring(r))
      end
      return true
   end
   if not fnn.is_tensor(r) then return false, where .. ': returned a ' .. type(r) end
   if want == nil then return false, ('%s: documented to fail, returned %s'):format(where, r:shape_str()) end
   if r:dtype() ~= dtype then return false, ('%s: returned %s, expected %s'):format(where, r:dtype(), dtype) end
   if type(want) == 'table' then
      local got = r:shape()
      if #got ~= #want then return false, ('%s: returned %s'):format(where, r:shape_str()) end
      for i = 1, #want do
         if got[i] ~= want[i] then return false, ('%s: returned %s'):format(where, r:shape_str()) end
      end
   end
   if op == 'tensor' and (type(a.v) == 'table' or type(a.v) == 'number') then
      local _, flat = reference(a.v)
      if not flat and type(a.v) == 'table' then flat = a.v end
      local got = r:to_flat()
      if #got ~= #flat then return false, ('%s: %d values, given %d'):format(where, #got, #flat) end
      for i = 1, #flat do
         if not same(flat[i], got[i], dtype) then
            return false, ('%s: value %d is %s, given %s'):format(where, i, tostring(got[i]), tostring(flat[i]))
         end
      end
   end
   return true
end
