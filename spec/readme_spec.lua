-- Every ```lua block of README.md runs, so the documentation cannot rot. Each block runs on its
-- own, in a fresh environment, after the prelude the README states for its tour:
--   local fnn = require 'fastnn'; local nn, optim, data = fnn.nn, fnn.optim, fnn.data
-- (put on the block's first line, so an error's line number is the block's own).
local PRELUDE = "local fnn = require 'fastnn'; local nn, optim, data = fnn.nn, fnn.optim, fnn.data; "

local function readme_blocks(path)
   local f = assert(io.open(path, 'rb'))
   local text = f:read('*a')
   f:close()
   local blocks, heading, line_no = {}, '(top)', 0
   local inside, body, start
   for line in (text .. '\n'):gmatch('([^\n]*)\n') do
      line_no = line_no + 1
      if inside then
         if line:match('^```%s*$') then
            blocks[#blocks + 1] = {heading = heading, line = start, code = table.concat(body, '\n')}
            inside = false
         else
            body[#body + 1] = line
         end
      elseif line:match('^```lua%s*$') then
         inside, body, start = true, {}, line_no + 1
      elseif line:match('^#+ ') then
         heading = line:gsub('^#+ ', '')
      end
   end
   assert(not inside, 'README.md: a ```lua block opened at line ' .. tostring(start) .. ' is never closed')
   return blocks
end

-- runs one block as the README's reader would; true, or false and the error
local function run_block(code, line)
   local chunk, err = loadstring(PRELUDE .. code, '=README.md:' .. line)
   if not chunk then return false, err end
   setfenv(chunk, setmetatable({print = function() end}, {__index = _G}))   -- quiet output
   return pcall(chunk)
end

describe('README.md', function()
   local blocks = readme_blocks('README.md')

   it('has the tour: a Lua block under each of its sections', function()
      local seen = {}
      for _, b in ipairs(blocks) do seen[b.heading] = true end
      for _, h in ipairs{'Models', 'Training', 'Data', 'Checkpoints', 'GPU', 'Generation', 'Debugging',
                         'Tensors', 'Autograd', 'Keras-style models'} do
         assert.is_true(seen[h] == true, 'no Lua block under "' .. h .. '"')
      end
   end)

   it('catches a block that is wrong (the harness can fail)', function()
      local ok, err = run_block("assert(fnn.shape_str(fnn.zeros(2, 3)) == '[3,2]', 'shape')", 7)
      assert.is_false(ok)
      assert.matches('README.md:7:1: shape', err)   -- the block's line, then the line within it
      ok, err = run_block('local x = fnn.zeros(2):matmul(fnn.zeros(3))', 9)
      assert.is_false(ok)
      assert.matches('matmul', err)
   end)

   for i, b in ipairs(blocks) do
      it(('block %d (line %d, under "%s") runs'):format(i, b.line, b.heading), function()
         local ok, err = run_block(b.code, b.line)
         assert(ok, err)
      end)
   end
end)
