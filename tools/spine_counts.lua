-- tools/spine_counts.lua: rewrite the line counts in DESIGN.md's **The spine** paragraph (each
-- `file` (N: ...) and the "day's read" total) from the files as they are. layers_spec checks them;
-- run this after a change to a spine file:  luajit tools/spine_counts.lua  (from the repository root)
local path = arg[1] or 'DESIGN.md'
local fh = assert(io.open(path, 'rb'))
local text = fh:read('*a')
fh:close()

local head = '**The spine**'
local s = text:find(head, 1, true)
if not s then error(path .. ' has no paragraph starting ' .. head) end
local e = text:find('\n\n', s, true) or #text + 1
local para = text:sub(s, e - 1)

local function lines_of(file)
   local p = file:match('^core/') and file or 'core/' .. file   -- as layers_spec reads them
   local f = assert(io.open(p, 'rb'), p)
   local n = 0
   for _ in f:lines() do n = n + 1 end
   f:close()
   return n
end

local total, changed = 0, {}
para = para:gsub('(`([%w_/]+%.[ch])`%s+%()(%d+)', function(lead, file, count)
   local n = lines_of(file)
   total = total + n
   if n ~= tonumber(count) then changed[#changed + 1] = ('%s %s -> %d'):format(file, count, n) end
   return lead .. n
end)
local function commas(n)
   local str = tostring(n)
   while true do
      local k
      str, k = str:gsub('^(%d+)(%d%d%d)', '%1,%2')
      if k == 0 then return str end
   end
end
para = para:gsub("(day's read\": )([%d,]+)( lines)", function(a, _, b) return a .. commas(total) .. b end)

fh = assert(io.open(path, 'wb'))
fh:write(text:sub(1, s - 1), para, text:sub(e))
fh:close()
print(#changed == 0 and 'spine counts already right' or table.concat(changed, '\n'))
print(("the day's read: %s lines"):format(commas(total)))
