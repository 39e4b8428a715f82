-- The layers of the C library (DESIGN.md, "The house"): libfastnn_core holds the spine, autograd
-- and the ops and links only kernel libraries and libm; the I/O layer (core/io/) is libfastnn, over
-- it, and alone links the file libraries. Checked on the built libraries (their NEEDED entries) and
-- on the sources (what they include), so a stray #include <png.h> in an op, or an op calling a
-- loader, fails here (the latter also fails the link: libfastnn_core links with --no-undefined).
local lib = assert(os.getenv('FASTNN_LIB'), 'FASTNN_LIB names the built libfastnn.so')
local dir = lib:match('^(.*)/[^/]*$') or '.'

local function needed(path)
   local p = assert(io.popen('readelf -d ' .. path .. ' 2>&1'))
   local out, text = {}, p:read('*a')
   p:close()
   for name in text:gmatch('%(NEEDED%)%s+Shared library: %[([^%]]+)%]') do out[#out + 1] = name end
   assert.is_true(#out > 0, 'readelf found no NEEDED entries in ' .. path .. ':\n' .. text)
   return out
end

local function stem(soname) return soname:match('^(lib[%w_+%-]-)[%.%-]') or soname end

-- what the core may link: the kernel libraries, the C and C++ runtimes, the sanitizers' runtimes
local CORE_MAY = {}
for _, s in ipairs{'libopenblas', 'libdnnl', 'libgomp', 'libomp', 'libm', 'libc', 'ld', 'libpthread', 'libdl',
                   'librt', 'libcudart', 'libcublas', 'libcublasLt', 'libcurand', 'libstdc++', 'libgcc_s',
                   'libasan', 'libubsan', 'libtsan'} do CORE_MAY[s] = true end
-- libprotobuf-c.so.1 (TensorBoard's event files) has the stem 'libprotobuf': stem() stops at a '-'
local FILE_LIBS = {'libz', 'libcurl', 'libcrypto', 'libcjson', 'libpng16', 'libturbojpeg', 'libprotobuf'}

local function source_files(pattern)
   local p = assert(io.popen('git ls-files ' .. pattern .. ' 2>/dev/null'))
   local out = {}
   for f in p:lines() do out[#out + 1] = f end
   p:close()
   return out
end

describe('the layers', function()
   it('libfastnn_core links only the kernel libraries and libm', function()
      local stray = {}
      for _, n in ipairs(needed(dir .. '/libfastnn_core.so')) do
         local s = n:match('^ld%-linux') and 'ld' or stem(n)
         if not CORE_MAY[s] then stray[#stray + 1] = n end
      end
      assert.same({}, stray)
   end)

   it('libfastnn (the I/O layer) stands on libfastnn_core and links the file libraries', function()
      local have = {}
      for _, n in ipairs(needed(lib)) do have[stem(n)] = true end
      assert.is_true(have.libfastnn_core, 'libfastnn does not link libfastnn_core')
      for _, s in ipairs(FILE_LIBS) do assert.is_true(have[s], 'libfastnn does not link ' .. s) end
   end)

   it('no source outside core/io/ includes a file library or an I/O source', function()
      local files = source_files('core/*.c core/*.h core/ops core/autograd cuda')
      assert.is_true(#files > 30, 'git ls-files listed ' .. #files .. ' core files')
      local bad = {}
      for _, f in ipairs(files) do
         if not f:match('^core/io/') and not f:match('^core/include/') then
            local fh = assert(io.open(f))
            local n = 0
            for line in fh:lines() do
               n = n + 1
               local inc = line:match('^%s*#%s*include%s*[<"]([^>"]+)[>"]')
               if inc and (inc:match('^curl/') or inc:match('^png') or inc:match('^turbojpeg') or
                           inc:match('^cjson/') or inc:match('^openssl/') or inc == 'zlib.h' or
                           inc:match('^protobuf%-c/') or inc:match('%.pb%-c%.h$') or inc:match('^io/')) then
                  bad[#bad + 1] = ('%s:%d: #include %s'):format(f, n, inc)
               end
            end
            fh:close()
         end
      end
      assert.same({}, bad)
   end)

   -- DESIGN.md names the spine's files with their line counts and their total ("the day's read");
   -- a change to the spine must change those numbers too (luajit tools/spine_counts.lua rewrites them)
   it("DESIGN.md counts the spine's lines as they are", function()
      local fh = assert(io.open('DESIGN.md'))
      local text = fh:read('*a')
      fh:close()
      local para = text:match('%*%*The spine%*%*(.-)\n\n')
      assert.is_string(para, 'DESIGN.md has no paragraph starting **The spine**')
      local total = tonumber((para:match("day's read\": ([%d,]+) lines"):gsub(',', '')))
      local sum, wrong = 0, {}
      for file, count in para:gmatch('`([%w_/]+%.[ch])`%s+%((%d+)') do
         local path = file:match('^core/') and file or 'core/' .. file   -- tensor.c, autograd/node.c: from core/
         local f = assert(io.open(path), path)
         local n = 0
         for _ in f:lines() do n = n + 1 end
         f:close()
         sum = sum + n
         if n ~= tonumber(count) then wrong[#wrong + 1] = ('%s: DESIGN says %s, the file has %d'):format(path, count, n) end
      end
      assert.same({}, wrong)
      assert.equals(sum, total)
   end)

   -- the Lua layers: keras (compile, fit, ...) stands above nn and adds its face to nn's models when
   -- it loads; nn names nothing of it, so nn loads and runs without it
   it('lua/fastnn/nn requires nothing from lua/fastnn/keras', function()
      local bad = {}
      for _, f in ipairs(source_files('lua/fastnn/nn/')) do
         local fh = assert(io.open(f))
         local n = 0
         for line in fh:lines() do
            n = n + 1
            local code = line:gsub('%-%-.*$', '')
            if code:find('fastnn.keras', 1, true) or code:find('fastnn/keras', 1, true) then
               bad[#bad + 1] = ('%s:%d: %s'):format(f, n, line)
            end
         end
         fh:close()
      end
      assert.same({}, bad)
   end)
end)
