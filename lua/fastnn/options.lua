-- fastnn.options: the one checker behind every public callable that takes an options table.
-- A callable declares its options once; the declaration checks each call and is the reference
-- documentation (tools/options_doc.lua writes docs/options.md from the registry).
--   local OPTS = options.declare('nn.Linear', {
--      {'bias', 'boolean', true, 'learn an additive bias'},
--   })
--   function Linear:__init(inputs, outputs, opts)
--      local o = OPTS:check(opts, 3)      -- 3: the user's line as seen from here
--      if o.bias then ... end             -- read only from o: an undeclared name is an error
-- An entry is {name, types, default, doc, values = {...}, min = x, max = y, check = fn, ...}:
--   types    'number', 'integer', 'boolean', 'string', 'table', 'function', 'tensor', 'any',
--            or several joined by '|' ('number|table')
--   default  filled in when the caller leaves the option out (nil: none; computed defaults say so
--            in `default_doc`)
--   values   the enumerated strings a string value must be one of
--   min, max the range of a number (min_open / max_open for open ends)
--   check    fn(v) -> nil or a message, for what the fields above cannot say
--   expect   the text after 'expected' in a type or range error, where the types say too little
-- Errors: an unknown key names the callable, the key and the known keys, nearest first
-- (edit distance); a bad value names the option and shows the value (a tensor's shape, a
-- table's contents, never an address).
local M = {}

M.registry = {}          -- name -> declaration, for the docs and the walking spec
M.order = {}             -- names in declaration order

-- the edit distance of a and b (Levenshtein: insertions, deletions and substitutions)
function M.distance(a, b)
   local la, lb = #a, #b
   local prev, cur = {}, {}
   for j = 0, lb do prev[j] = j end
   for i = 1, la do
      cur[0] = i
      local ca = a:byte(i)
      for j = 1, lb do
         local cost = ca == b:byte(j) and 0 or 1
         cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      end
      prev, cur = cur, prev
   end
   return prev[lb]
end

-- the names, nearest to `key` first (ties alphabetical); a name that begins like the key counts
-- as near as its beginning ('hiden' finds hidden_size before bias)
function M.nearest(key, names)
   local d, out = {}, {}
   key = tostring(key)
   for i, n in ipairs(names) do
      out[i] = n
      d[n] = math.min(M.distance(key, n), M.distance(key, n:sub(1, #key)) + 0.5)
   end
   table.sort(out, function(x, y)
      if d[x] ~= d[y] then return d[x] < d[y] end
      return x < y
   end)
   return out
end

local function is_tensor(v)
   if type(v) ~= 'cdata' then return false end
   local ok, t = pcall(require, 'fastnn.tensor')
   return ok and t.is_tensor(v)
end

-- a value as messages show it: 3, 'avg', true, a tensor [2,3], a table {1, 2}; never an address
function M.describe(v, depth)
   depth = depth or 0
   local tv = type(v)
   if tv == 'string' then return ("'%s'"):format(v) end
   if tv == 'number' or tv == 'boolean' or tv == 'nil' then return tostring(v) end
   if is_tensor(v) then
      local t = require 'fastnn.tensor'
      return ('a tensor %s'):format(t.shape_str(v))
   end
   if tv == 'table' then
      local mt = getmetatable(v)
      local f = type(mt) == 'table' and mt.__tostring   -- a class's, maybe inherited
      if type(f) == 'function' then
         local ok, text = pcall(f, v)
         if ok and type(text) == 'string' then return text end
      end
      if depth > 0 then return '{...}' end
      local parts, n = {}, 0
      for i, x in ipairs(v) do
         n = i
         if i > 6 then parts[#parts + 1] = '...'; break end
         parts[#parts + 1] = M.describe(x, depth + 1)
      end
      local keys = {}
      for k in pairs(v) do
         if not (type(k) == 'number' and k >= 1 and k <= n and k == math.floor(k)) then keys[#keys + 1] = tostring(k) end
      end
      table.sort(keys)
      for i, k in ipairs(keys) do
         if i > 6 then parts[#parts + 1] = '...'; break end
         parts[#parts + 1] = k .. ' = ' .. M.describe(v[k], depth + 1)
      end
      return 'a table {' .. table.concat(parts, ', ') .. '}'
   end
   return 'a ' .. tv
end

-- a value in a message as the messages that print numbers and names show it (3, avg), but a table,
-- tensor or function by its type and contents (describe), never by its address
function M.show(v)
   local tv = type(v)
   if tv == 'table' or tv == 'cdata' or tv == 'function' or tv == 'userdata' or tv == 'thread' then
      return M.describe(v)
   end
   return tostring(v)
end

local function type_ok(t, v)
   if t == 'any' then return true end
   if t == 'integer' then return type(v) == 'number' and v == math.floor(v) and v == v end
   if t == 'tensor' then return is_tensor(v) end
   return type(v) == t
end

local Decl = require('fastnn.class')('Decl')

-- declare(name, entries): register and return the declaration of `name`'s options
function M.declare(name, entries)
   local d = setmetatable({name = name, entries = {}, by_name = {}, names = {}}, Decl)
   for _, e in ipairs(entries) do
      if e.name then   -- an entry of another declaration (a wrapper declaring its inner layer's options)
         e = {e.name, e.types, e.default, e.doc, values = e.values, min = e.min, max = e.max, min_open = e.min_open,
              max_open = e.max_open, check = e.check, default_doc = e.default_doc, expect = e.expect}
      end
      local o = {name = e[1], types = e[2], default = e[3], doc = e[4], values = e.values, min = e.min, max = e.max,
                 min_open = e.min_open, max_open = e.max_open, check = e.check, default_doc = e.default_doc,
                 expect = e.expect}
      assert(type(o.name) == 'string' and type(o.types) == 'string' and type(o.doc) == 'string',
             name .. ': an option needs a name, types and a doc line')
      assert(not d.by_name[o.name], name .. ': option ' .. o.name .. ' declared twice')
      o.type_list = {}
      for t in o.types:gmatch('[^|]+') do o.type_list[#o.type_list + 1] = t end
      d.entries[#d.entries + 1] = o
      d.by_name[o.name] = o
      d.names[#d.names + 1] = o.name
   end
   table.sort(d.names)
   if M.registry[name] == nil then M.order[#M.order + 1] = name end
   M.registry[name] = d
   return d
end

-- the message for a bad value of option o, or nil
function Decl:problem(o, v)
   local ok = false
   for _, t in ipairs(o.type_list) do
      if type_ok(t, v) then ok = true; break end
   end
   if not ok then
      local want = {}
      for i, t in ipairs(o.type_list) do want[i] = (t == 'integer' and 'an ' or 'a ') .. t end
      return ('%s is %s, expected %s'):format(o.name, M.describe(v), o.expect or table.concat(want, ' or '))
   end
   if o.values and type(v) == 'string' then
      local found = false
      for _, x in ipairs(o.values) do if x == v then found = true; break end end
      if not found then
         local q = {}
         for i, x in ipairs(o.values) do q[i] = "'" .. x .. "'" end
         return ("%s '%s' is not one of %s"):format(o.name, v, table.concat(q, ', '))
      end
   end
   if type(v) == 'number' and (o.min or o.max) then
      local lo, hi = o.min, o.max
      if v ~= v or (lo and (v < lo or (o.min_open and v == lo))) or (hi and (v > hi or (o.max_open and v == hi))) then
         return ('%s is %s, expected %s'):format(o.name, tostring(v), o.expect or self.wanted(o))
      end
   end
   if o.check then
      local msg = o.check(v)
      if msg then return ('%s is %s: %s'):format(o.name, M.describe(v), msg) end
   end
   return nil
end

-- what a number out of range should have been: 'a positive integer', 'a number in [0, 1)', ...
function Decl.wanted(o)
   local int = o.type_list[1] == 'integer'
   if o.max == nil and o.min == 0 and not o.min_open then return int and 'a non-negative integer' or 'a non-negative number' end
   if o.max == nil and ((int and o.min == 1) or (o.min == 0 and o.min_open)) then
      return int and 'a positive integer' or 'a positive number'
   end
   return (int and 'an integer ' or 'a number ') .. Decl.range(o)
end

-- '[0, 1)', '>= 1', ...
function Decl.range(o)
   if o.min and o.max then
      return ('in %s%g, %g%s'):format(o.min_open and '(' or '[', o.min, o.max, o.max_open and ')' or ']')
   elseif o.min then
      return (o.min_open and '> %g' or '>= %g'):format(o.min)
   elseif o.max then
      return (o.max_open and '< %g' or '<= %g'):format(o.max)
   end
   return ''
end

-- reading an option the declaration lacks is the callable's own mistake: say so
local function guard(d)
   return {__index = function(_, k)
      if d.by_name[k] == nil then
         error(('%s reads option %s, which it does not declare (fastnn.options)'):format(d.name, tostring(k)), 2)
      end
      return nil
   end}
end

-- the raw message of a refused table, or nil and the validated table (defaults filled in)
function Decl:try(opts, extra)
   if opts == nil then opts = {} end
   if type(opts) ~= 'table' or is_tensor(opts) then
      local e = self.entries[1]
      return ('%s: options must be a table%s, got %s'):format(self.name,
             e and (' like {%s = ...}'):format(e.name) or '', is_tensor(opts) and M.describe(opts)
             or ('a %s (%s)'):format(type(opts), tostring(opts)))
   end
   local out = {}
   for k, v in pairs(opts) do
      local o = self.by_name[k]
      if o == nil then
         if not (extra and extra[k]) then
            return ("%s: unknown option '%s' (options: %s)"):format(self.name, tostring(k),
                   table.concat(M.nearest(k, self.names), ', '))
         end
      else
         local msg = self:problem(o, v)
         if msg then return self.name .. ': ' .. msg end
      end
      out[k] = v
   end
   for _, o in ipairs(self.entries) do
      if out[o.name] == nil and o.default ~= nil then
         local v = o.default
         if type(v) == 'table' then
            local c = {}
            for i, x in pairs(v) do c[i] = x end
            v = c
         end
         out[o.name] = v
      end
   end
   return nil, setmetatable(out, guard(self))
end

-- check(opts, level [, extra]): the validated table, or an error at `level` as seen from the
-- caller of check (so `OPTS:check(opts, 2)` in a public function points at its caller).
-- extra: a set of further keys the callable passes through unchecked (optim's group 'params').
function Decl:check(opts, level, extra)
   local msg, out = self:try(opts, extra)
   if msg then error(msg, level and level > 0 and level + 1 or 0) end
   return out
end

-- one value (positional arguments that stand for an option: Dropout(p), HuberLoss(delta))
function Decl:check_value(name, v, level)
   local msg = self:problem(self.by_name[name], v)
   if msg then error(self.name .. ': ' .. msg, level and level > 0 and level + 1 or 0) end
   return v
end

return M
