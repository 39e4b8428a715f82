-- fastnn.C: the one place that declares the C ABI to LuaJIT and loads libfastnn.
-- Every other module does `local C = require 'fastnn.C'`.
local ffi = require 'ffi'

-- Lua reads four header fields under other names, so the methods t:shape(),
-- t:stride(), t:device() and t:dtype() are not shadowed by the fields (FFI fields win over
-- __index). Only names change; the layout is the header's own.
local cdef = require('fastnn.cdef'):gsub('(typedef struct fnn_tensor {.-} fnn_tensor;)', function(body)
   return (body:gsub('int64_t shape%[', 'int64_t shape_['):gsub('int64_t stride%[', 'int64_t stride_[')
               :gsub('int32_t device;', 'int32_t device_;'):gsub('int32_t dtype;', 'int32_t dtype_;'))
end)
ffi.cdef(cdef)

-- How OpenMP's workers wait between loops; libgomp reads it once, when libfastnn_core (its first
-- user, under libfastnn) is loaded below. With the oneDNN kernels every GEMM runs in OpenMP's pool, and workers that spin
-- a little before they sleep answer the next loop at once: passive waiting cost lstm_seq and
-- char_gpt 30-40%. But only a little: libgomp's default spin (300000 rounds, milliseconds) made a
-- char_gpt step 10x slower on a machine loaded by other processes (a spinning worker holds a core
-- another thread needs), so GOMP_SPINCOUNT is 10000 unless the user says otherwise. With the
-- portable kernels OpenBLAS's own pool runs the GEMMs, and OpenMP workers that spin would steal its
-- cores: they sleep (passive).
ffi.cdef[[int setenv(const char *name, const char *value, int overwrite);]]
-- the first MB of a file (DT_NEEDED names sit in .dynstr, in its first pages), or ''
local function head_of(path)
   local f = path and io.open(path, 'rb')
   if not f then return '' end
   local head = f:read(1024 * 1024) or ''
   f:close()
   return head
end
local function runs_onednn(path)
   local kernels = os.getenv('FASTNN_KERNELS')
   if kernels == 'portable' then return false end
   -- does the core need libdnnl? libfastnn is the I/O layer: the kernels are in the
   -- libfastnn_core.so.0 it names, which sits beside it (build tree, install, rock)
   local head = head_of(path)
   if head:find('libdnnl.so', 1, true) then return true end
   if not head:find('libfastnn_core.so', 1, true) then return false end
   local dir = path:match('^(.*)/[^/]*$') or '.'
   return head_of(dir .. '/libfastnn_core.so.0'):find('libdnnl.so', 1, true) ~= nil
end
local function set_wait_policy(path)
   if os.getenv('OMP_WAIT_POLICY') then return end   -- the user's choice
   if runs_onednn(path) then
      ffi.C.setenv('GOMP_SPINCOUNT', '10000', 0)
   else
      ffi.C.setenv('OMP_WAIT_POLICY', 'PASSIVE', 0)
   end
end

-- where libfastnn is: $FASTNN_LIB, a path set by a host (FASTNN_LIB_PATH global),
-- the build tree beside these sources, the installed library (cmake or LuaRocks layout),
-- package.cpath, then the loader's search
local function candidates()
   local list = {}
   local env = os.getenv('FASTNN_LIB')
   if env and env ~= '' then list[#list + 1] = env end
   if rawget(_G, 'FASTNN_LIB_PATH') then list[#list + 1] = rawget(_G, 'FASTNN_LIB_PATH') end
   local here = debug.getinfo(1, 'S').source:match('^@(.*)/fastnn/C%.lua$')
   if here then
      list[#list + 1] = here .. '/../build/libfastnn.so'
      list[#list + 1] = here .. '/../../../lib/libfastnn.so.0'     -- <prefix>/share/lua/5.1 -> <prefix>/lib
      list[#list + 1] = here .. '/../../../lib/x86_64-linux-gnu/libfastnn.so.0'
      list[#list + 1] = here .. '/../../../lib/lua/5.1/libfastnn.so'  -- LuaRocks: <tree>/share/lua/5.1
   end
   local on_cpath = package.searchpath('libfastnn', package.cpath)      -- LuaRocks' deploy dir
   if on_cpath then list[#list + 1] = on_cpath end
   list[#list + 1] = 'fastnn'
   return list
end

local function file_exists(path)
   local f = io.open(path, 'rb')
   if f then f:close() return true end
   return false
end

-- a library named explicitly must load, or we say why: never fall back silently to another build
local explicit = os.getenv('FASTNN_LIB')
if explicit and explicit ~= '' then
   set_wait_policy(explicit)
   local ok, lib = pcall(ffi.load, explicit)
   if ok then return lib end
   error(('fastnn: cannot load FASTNN_LIB=%s: %s'):format(explicit, tostring(lib)), 2)
end

local tried = {}
for _, path in ipairs(candidates()) do
   if path == 'fastnn' or file_exists(path) then
      set_wait_policy(path ~= 'fastnn' and path or nil)
      local ok, lib = pcall(ffi.load, path)
      if ok then return lib end
      tried[#tried + 1] = path .. ' (' .. tostring(lib) .. ')'
   else
      tried[#tried + 1] = path .. ' (missing)'
   end
end
error('fastnn: cannot load libfastnn; build it (cmake --build build) or set FASTNN_LIB. Tried:\n  '
      .. table.concat(tried, '\n  '), 2)
