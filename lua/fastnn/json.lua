-- fastnn.json: JSON for the plain Lua tables checkpoints keep in their header (optimizer
-- hyperparameters, step counts, schedule and loader positions): encoding here, decoding by
-- cJSON in C (no hand-written parser).
--   json.encode({lr = 1e-3, betas = {0.9, 0.999}})  --> '{"betas":[0.9,0.999],"lr":0.001}'
--   json.decode(text)                               --> the table again
-- Numbers are written with 17 significant digits, so every double reads back bit for bit;
-- inf is written 1e999 (which JSON readers take as inf); nan is refused. A table is an array
-- when its keys are exactly 1..n (n >= 1), else an object whose keys must be strings; object
-- keys are sorted, so equal tables encode to equal text. Errors are raised with level 0 (the
-- caller adds its own context).
local M = {}

local escapes = {['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n',
                 ['\r'] = '\\r', ['\t'] = '\\t'}
local function quote(s)
   return '"' .. s:gsub('[%c"\\]', function(c) return escapes[c] or ('\\u%04x'):format(c:byte()) end) .. '"'
end

local function number(v, where)
   if v ~= v then error(('json: %s is nan, which JSON cannot hold'):format(where), 0) end
   if v == math.huge then return '1e999' end
   if v == -math.huge then return '-1e999' end
   if v == math.floor(v) and math.abs(v) < 2^53 then return ('%d'):format(v) end
   return ('%.17g'):format(v)
end

local function encode(v, where, depth, out)
   local t = type(v)
   if v == nil then out[#out + 1] = 'null'
   elseif t == 'boolean' then out[#out + 1] = tostring(v)
   elseif t == 'number' then out[#out + 1] = number(v, where)
   elseif t == 'string' then out[#out + 1] = quote(v)
   elseif t == 'table' then
      if depth > 64 then error(('json: %s nests deeper than 64 levels (a cycle?)'):format(where), 0) end
      local n, count = #v, 0
      for _ in pairs(v) do count = count + 1 end
      if n > 0 and count == n then
         out[#out + 1] = '['
         for i = 1, n do
            if i > 1 then out[#out + 1] = ',' end
            encode(v[i], where .. '[' .. i .. ']', depth + 1, out)
         end
         out[#out + 1] = ']'
      else
         local keys = {}
         for k in pairs(v) do
            if type(k) ~= 'string' then
               error(('json: %s has a %s key %s; objects take string keys'):format(where, type(k), tostring(k)), 0)
            end
            keys[#keys + 1] = k
         end
         table.sort(keys)
         out[#out + 1] = '{'
         for i, k in ipairs(keys) do
            if i > 1 then out[#out + 1] = ',' end
            out[#out + 1] = quote(k)
            out[#out + 1] = ':'
            encode(v[k], where .. '.' .. k, depth + 1, out)
         end
         out[#out + 1] = '}'
      end
   else
      error(('json: %s is a %s, which JSON cannot hold'):format(where, t), 0)
   end
end

function M.encode(v)
   local out = {}
   encode(v, 'the value', 0, out)
   return table.concat(out)
end

-- ---------------------------------------------------------------------------
-- decoding: cJSON parses (core/io/serialize.c); this walks its tree into Lua tables. An object's
-- keys become string keys, an array is 1-based; null inside a container is dropped (Lua tables
-- cannot hold nil), at the top it is nil.

local ffi = require 'ffi'
local C = require 'fastnn.C'

local function walk(j, depth)
   if depth > 64 then error('json: nested deeper than 64 levels', 0) end
   local kind = C.fnn_json_type(j)
   if kind == 0 then return nil end
   if kind == 1 then return false end
   if kind == 2 then return true end
   if kind == 3 then return C.fnn_json_number(j) end
   if kind == 4 then return ffi.string(C.fnn_json_string(j)) end
   local out, n = {}, C.fnn_json_size(j)
   for i = 0, n - 1 do
      local child = C.fnn_json_child(j, i)
      if kind == 5 then out[i + 1] = walk(child, depth + 1)
      else out[ffi.string(C.fnn_json_key(child))] = walk(child, depth + 1) end
   end
   return out
end

function M.decode(s)
   if type(s) ~= 'string' then error(('json: expected a string, got a %s'):format(type(s)), 0) end
   local root = C.fnn_json_parse(s, #s)
   if root == nil then error(ffi.string(C.fnn_last_error()), 0) end
   local ok, v = pcall(walk, root, 0)
   C.fnn_json_free(root)
   if not ok then error(v, 0) end
   return v
end

return M
