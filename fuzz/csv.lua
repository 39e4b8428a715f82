-- fuzz/csv.lua: the driver of fuzz_csv (see csv.c). Input: one option byte, then the file.
--   bit 0: header = false       bits 1-2: delimiter , ; tab |      bit 3: missing = NaN
--   bits 4-6: target_columns (default, {}, 1, -1, {1, 2}, 'b', {'a', 'c'}, 99)
-- A dataset that loads is checked against an independent reading of the same bytes (rows,
-- columns, every input value as float32); a refusal must be a string error at the caller's line
-- that starts with "CsvDataset: ".
local ffi = require 'ffi'
local fnn = require 'fastnn'
local data = require 'fastnn.data'
rawset(_G, 'FUZZ_EMPTY_CACHE', fnn.empty_cache)

local DELIMS = {',', ';', '\t', '|'}
local TARGETS = {false, {}, 1, -1, {1, 2}, 'b', {'a', 'c'}, 99}
local f32 = ffi.new('float[1]')

-- the caller's line: CsvDataset's errors must point here
local function user_call(path, opts)
   local ds = data.CsvDataset(path, opts)
   return ds
end
local USER = ('%s:%d: '):format(debug.getinfo(1, 'S').short_src, debug.getinfo(user_call, 'S').linedefined + 1)

-- one line -> fields, quotes per RFC 4180 within the line (nil for a malformed line)
local function fields_of(line, delim)
   local out, cur, i, n = {}, {}, 1, #line
   local quoted_field = false
   while true do
      if i <= n and line:sub(i, i) == '"' and #cur == 0 and not quoted_field then
         quoted_field = true
         i = i + 1
         while true do
            if i > n then return nil end
            local c = line:sub(i, i)
            if c == '"' then
               if line:sub(i + 1, i + 1) == '"' then cur[#cur + 1] = '"'; i = i + 2
               else i = i + 1; break end
            else cur[#cur + 1] = c; i = i + 1 end
         end
         if i <= n and line:sub(i, i) ~= delim then return nil end
      end
      if i > n then out[#out + 1] = table.concat(cur); return out end
      local c = line:sub(i, i)
      if c == delim then
         out[#out + 1] = table.concat(cur)
         cur, quoted_field = {}, false
      else
         cur[#cur + 1] = c
      end
      i = i + 1
   end
end

local function lines_of(text)
   local out, pos = {}, 1
   while pos <= #text do
      local nl = text:find('\n', pos, true)
      local line = text:sub(pos, (nl or #text + 1) - 1)
      out[#out + 1] = (line:gsub('\r$', ''))
      pos = (nl or #text) + 1
   end
   return out
end

local function same(expected, got)
   if expected ~= expected then return got ~= got end
   f32[0] = expected
   return f32[0] == got
end

return function(path, bytes)
   local opt = bytes:byte(1) or 0
   local text = bytes:sub(2)
   local f = assert(io.open(path, 'wb'))
   f:write(text)
   f:close()
   local delim = DELIMS[bit.band(bit.rshift(opt, 1), 3) + 1]
   local target = TARGETS[bit.band(bit.rshift(opt, 4), 7) + 1]
   local opts = {header = bit.band(opt, 1) == 0, delimiter = delim, missing = bit.band(opt, 8) ~= 0 and 0 / 0 or nil,
                 target_columns = target or nil}
   local ok, ds = pcall(user_call, path, opts)
   if not ok then
      if type(ds) ~= 'string' or ds:sub(1, #USER + 12) ~= USER .. 'CsvDataset: ' then
         return false, ('opts byte %d: an error that is not "%sCsvDataset: ...": %s'):format(opt, USER, tostring(ds))
      end
      return true
   end
   -- loaded: the same bytes read independently must agree
   local rows = {}
   for _, line in ipairs(lines_of(text)) do
      if not line:match('^%s*$') then
         local fl = fields_of(line, delim)
         if not fl then return false, 'loaded, but this line is malformed: ' .. line end
         rows[#rows + 1] = fl
      end
   end
   if opts.header then table.remove(rows, 1) end
   local n, inputs = #rows, ds.inputs
   local ncols = #ds.columns
   if ds:len() ~= n or inputs:dim() ~= 2 or inputs:size(1) ~= n or inputs:size(2) ~= #ds.input_columns then
      return false, ('%d rows read, dataset has %d, inputs %s'):format(n, ds:len(), inputs:shape_str())
   end
   local k = #ds.target_columns
   if #ds.input_columns + k ~= ncols then return false, 'input and target columns do not add up' end
   if k == 0 and ds.targets ~= nil then return false, 'targets without target columns' end
   if k == 1 and (ds.targets:dim() ~= 1 or ds.targets:size(1) ~= n) then return false, 'one target, not [N]' end
   if k > 1 and (ds.targets:dim() ~= 2 or ds.targets:size(2) ~= k) then return false, 'targets, not [N, k]' end
   -- the input columns: those no target names (a name picks its last column, as documented)
   local is_target, spec = {}, opts.target_columns or {ncols}
   if type(spec) ~= 'table' then spec = {spec} end
   for _, s in ipairs(spec) do
      local c = type(s) == 'number' and (s < 0 and ncols + 1 + s or s) or nil
      if type(s) == 'string' then for q = 1, ncols do if ds.columns[q] == s then c = q end end end
      is_target[c] = true
   end
   local input_at = {}
   for c = 1, ncols do if not is_target[c] then input_at[#input_at + 1] = c end end
   if #input_at ~= #ds.input_columns then return false, 'input columns differ from the targets named' end
   local got = inputs:to_flat()
   for r = 1, n do
      if #rows[r] ~= ncols then return false, ('row %d has %d fields, %d columns'):format(r, #rows[r], ncols) end
      for j, c in ipairs(input_at) do
         local want = tonumber(rows[r][c])
         if want == nil then want = opts.missing end
         if want == nil or not same(want, got[(r - 1) * #ds.input_columns + j]) then
            return false, ('row %d column %d: field %q read as %s'):format(r, c, rows[r][c],
                                                                         tostring(got[(r - 1) * #ds.input_columns + j]))
         end
      end
   end
   return true
end
