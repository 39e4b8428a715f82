-- data.CsvDataset(path, opts): a table of numbers for tabular examples, as a TensorDataset
-- (so DataLoader batches it in C, prefetch included).
--   local ds = data.CsvDataset('iris.csv', {target_columns = {'species'}})
--   ds.inputs   [N, F] float32: the other columns, in file order
--   ds.targets  [N] float32 for one target column, [N, k] for several, nil for target_columns = {}
--   ds.columns, ds.input_columns, ds.target_columns: column names (the header's, or '1', '2', ...)
--   ds.classes[name]: for a target column of words ('setosa', ...), the distinct words sorted;
--       the column then holds their 1-based ids, so batch:labels() gives class ids
-- opts:
--   target_columns   names (with a header) or 1-based positions (negative from the end); a single
--                    name or position is accepted; default: the last column
--   header = true    the first line names the columns
--   delimiter = ','  one character
--   missing          the value of an empty field (for example 0/0 for NaN); default: an error
-- Fields may be quoted ("1,5" or "say ""hi"""); a field that is not a number in an input column,
-- a short or long row, or an unknown column name is an error naming the file, line and column.
-- CSV files for tabular examples are small: the parse is Lua, one pass, straight into a float
-- buffer (no table per row).
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local TensorDataset = require 'fastnn.data.TensorDataset'
local too_many = fnn_tensor.too_many

local CsvDataset = require('fastnn.class').extend(TensorDataset, 'CsvDataset')

-- split one line into fields (reusing `out`); quoted fields per RFC 4180 within the line
local function split(line, delim, out)
   local n = 0
   if not line:find('"', 1, true) then
      local pos = 1
      while true do
         local at = line:find(delim, pos, true)
         n = n + 1
         if not at then out[n] = line:sub(pos); break end
         out[n] = line:sub(pos, at - 1)
         pos = at + 1
      end
      return n
   end
   local pos, len = 1, #line
   while true do
      n = n + 1
      if line:sub(pos, pos) == '"' then
         local parts, i = {}, pos + 1
         while true do
            local q = line:find('"', i, true)
            if not q then return nil, 'an unterminated quoted field' end
            parts[#parts + 1] = line:sub(i, q - 1)
            if line:sub(q + 1, q + 1) == '"' then parts[#parts + 1] = '"'; i = q + 2
            else pos = q + 1; break end
         end
         out[n] = table.concat(parts)
         if pos > len then break end
         if line:sub(pos, pos) ~= delim then return nil, 'text after a closing quote' end
         pos = pos + 1
      else
         local at = line:find(delim, pos, true)
         if not at then out[n] = line:sub(pos); break end
         out[n] = line:sub(pos, at - 1)
         pos = at + 1
      end
   end
   return n
end

local function trim(s) return (s:gsub('^%s+', ''):gsub('%s+$', '')) end

local OPTS = require('fastnn.options').declare('data.CsvDataset', {
   {'target_columns', 'table|string|integer', nil, 'names (with a header) or 1-based positions (negative from the end)',
    default_doc = 'the last column'},
   {'header', 'boolean', true, 'the first line names the columns'},
   {'delimiter', 'string', ',', 'the field separator, one character'},
   {'missing', 'number', nil, 'the value of an empty field (0/0 for NaN)', default_doc = 'an error'},
})

function CsvDataset.__new(cls, path, opts, extra)
   if extra ~= nil then too_many('data.CsvDataset', 3, extra, 'path, opts') end
   opts = OPTS:check(opts, 2)
   if type(path) ~= 'string' then error('CsvDataset: expected a path', 2) end
   local delim = opts.delimiter or ','
   if type(delim) ~= 'string' or #delim ~= 1 then error('CsvDataset: delimiter must be one character', 2) end
   local header = opts.header ~= false
   local f, ferr = io.open(path, 'rb')
   if not f then error(('CsvDataset: cannot open %s (%s)'):format(path, ferr), 2) end
   local fields, lineno = {}, 0
   local ncols, names, targets_at, is_target
   local buf, cap, rows = nil, 0, 0
   local words = {}          -- target column position -> {row -> word}, for columns of words
   local function fail(msg, ...) f:close(); error(('CsvDataset: %s:%d: ' .. msg):format(path, lineno, ...), 3) end

   local function setup(n, header_names)
      ncols = n
      names = {}
      for c = 1, n do names[c] = header_names and trim(header_names[c]) or tostring(c) end
      local spec = opts.target_columns
      if spec == nil then spec = {n} end
      if type(spec) ~= 'table' then spec = {spec} end
      targets_at, is_target = {}, {}
      for i, s in ipairs(spec) do
         local c
         if type(s) == 'number' then
            c = s < 0 and n + 1 + s or s
            if c ~= math.floor(c) or c < 1 or c > n then
               f:close()
               error(('CsvDataset: target column %s outside 1..%d (%s has %d columns)'):format(tostring(s), n, path, n), 3)
            end
         else
            for k = 1, n do if names[k] == s then c = k end end
            if not c then
               f:close()
               error(("CsvDataset: no column named '%s' in %s (columns: %s)"):format(
                  tostring(s), path, table.concat(names, ', ')), 3)
            end
         end
         targets_at[i] = c
         is_target[c] = true
      end
   end

   -- lines split here, not by f:lines(): LuaJIT's cuts a line at a NUL byte and drops the rest
   for line in (f:read('*a') or ''):gmatch('([^\n]*)\n?') do
      lineno = lineno + 1
      line = line:gsub('\r$', '')
      if line:match('^%s*$') then goto continue end
      local n, why = split(line, delim, fields)
      if not n then fail('%s', why) end
      if not ncols then
         if header then
            local hn = {}
            for c = 1, n do hn[c] = fields[c] end
            setup(n, hn)
            goto continue
         end
         setup(n, nil)
      end
      if n ~= ncols then fail('%d fields, the header has %d', n, ncols) end
      if (rows + 1) * ncols > cap then
         local grown = math.max(1024, cap * 2)
         local nb = ffi.new('double[?]', grown)
         if buf then ffi.copy(nb, buf, rows * ncols * 8) end
         buf, cap = nb, grown
      end
      for c = 1, ncols do
         local s = fields[c]
         local v = tonumber(s)
         if v == nil then
            local t = trim(s)
            if t == '' then
               v = opts.missing
               if v == nil then fail("column %d ('%s') is empty (set opts.missing to fill it)", c, names[c]) end
            elseif is_target[c] then
               words[c] = words[c] or {}
               words[c][rows + 1] = t
               v = 0
            else
               fail("column %d ('%s') is '%s', not a number", c, names[c], t)
            end
         end
         buf[rows * ncols + c - 1] = v
      end
      rows = rows + 1
      ::continue::
   end
   f:close()
   if not ncols or rows == 0 then error(('CsvDataset: %s has no rows of data'):format(path), 2) end

   -- columns of words -> class ids 1..K (the words sorted); numbers in such a column are words too
   local classes = {}
   for c, list in pairs(words) do
      local set, sorted = {}, {}
      for r = 1, rows do
         local w = list[r] or tostring(buf[(r - 1) * ncols + c - 1])
         list[r] = w
         if not set[w] then set[w] = true; sorted[#sorted + 1] = w end
      end
      table.sort(sorted)
      local id = {}
      for k, w in ipairs(sorted) do id[w] = k end
      for r = 1, rows do buf[(r - 1) * ncols + c - 1] = id[list[r]] end
      classes[names[c]] = sorted
   end

   local input_cols, target_names = {}, {}
   for c = 1, ncols do if not is_target[c] then input_cols[#input_cols + 1] = c end end
   for i, c in ipairs(targets_at) do target_names[i] = names[c] end
   local function gather(cols)
      local k = #cols
      local out = ffi.new('double[?]', math.max(rows * k, 1))
      for r = 0, rows - 1 do
         for j = 1, k do out[r * k + j - 1] = buf[r * ncols + cols[j] - 1] end
      end
      local t = fnn_tensor.new()
      fnn_tensor.shape_buf[0], fnn_tensor.shape_buf[1] = rows, k
      if fnn_tensor.C.fnn_tensor_from_doubles(t, 2, fnn_tensor.shape_buf, out) ~= 0 then fnn_tensor.fail() end
      return fnn_tensor.done(t)
   end
   local inputs = gather(input_cols)
   local targets
   if #targets_at == 1 then targets = gather(targets_at):reshape(rows)
   elseif #targets_at > 1 then targets = gather(targets_at) end
   local ds = TensorDataset(inputs, targets)
   ds.path, ds.columns, ds.classes = path, names, classes
   ds.input_columns, ds.target_columns = {}, target_names
   for i, c in ipairs(input_cols) do ds.input_columns[i] = names[c] end
   return setmetatable(ds, cls)
end

function CsvDataset:__tostring()
   return ('data.CsvDataset(%s: %d rows, inputs %s, targets %s)'):format(self.path, self.n,
      table.concat(self.input_columns, ','), #self.target_columns > 0 and table.concat(self.target_columns, ',') or 'none')
end

return CsvDataset
