-- fastnn: a deep-learning framework in the shape of Torch7 on a C core.
--   local fnn = require 'fastnn'
--   local y = fnn.randn(2, 3):matmul(fnn.ones(3, 4))
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local C = fnn_tensor.C

local fnn = {}
fnn._VERSION = ffi.string(C.fnn_version())
fnn.Tensor = fnn_tensor.Tensor

local function merge(mod)
   for k, v in pairs(mod) do
      if type(v) == 'function' and not k:match('^_') then fnn[k] = v end
   end
end

for _, name in ipairs{'zeros', 'ones', 'full', 'rand', 'randn', 'empty', 'arange', 'linspace', 'eye',
                      'randperm', 'manual_seed', 'tensor', 'long', 'uniform', 'zeros_like', 'ones_like', 'full_like',
                      'rand_like', 'randn_like', 'is_tensor', 'shape_str', 'collect', 'set_gc_threshold'} do
   fnn[name] = fnn_tensor[name]
end

-- op families: one Lua file per C family, found through the core's own registry
local families = {}
for i = 0, C.fnn_op_count() - 1 do
   families[ffi.string(C.fnn_op_at(i).family)] = true
end
fnn.op_families = families
for family in pairs(families) do
   local modname = family == 'device' and 'fastnn.device' or ('fastnn.ops.' .. family)
   if package.searchpath(modname, package.path) then merge(require(modname)) end
end

-- every registered op is a function of fnn too, as torch.add(x, y) is x:add(y): an op its family binds
-- only as a method (x:gather(...), x:reshape(...)) is exported here, so none is forgotten
for i = 0, C.fnn_op_count() - 1 do
   local name = ffi.string(C.fnn_op_at(i).name)
   if fnn[name] == nil and type(fnn.Tensor[name]) == 'function' then fnn[name] = fnn.Tensor[name] end
end

fnn.Device = require('fastnn.device').Device
fnn.profile = require('fastnn.profile').profile

local autograd = require 'fastnn.autograd'
merge(autograd)
fnn.Param = autograd.Param

-- bfloat16 through every op, autocast and the float32 precision controls (fastnn.precision): the
-- op families' functions are wrapped once here, before their try_ forms are made
local precision = require 'fastnn.precision'
do
   local mods = {fnn_tensor.Tensor}
   for family in pairs(families) do
      local modname = family == 'device' and 'fastnn.device' or ('fastnn.ops.' .. family)
      if package.loaded[modname] then mods[#mods + 1] = package.loaded[modname] end
   end
   mods[#mods + 1] = require('fastnn.ops.loss').functional   -- the losses under nn's names
   mods[#mods + 1] = fnn_tensor.operators
   local tables = {fnn}
   for _, m in ipairs(mods) do tables[#tables + 1] = m end   -- the modules too: nn's layers call through them
   precision.install(tables, mods, {fnn_tensor.operators, require('fastnn.ops.elementwise')})
end
fnn.set_float32_precision, fnn.get_float32_precision = precision.set_float32_precision,
   precision.get_float32_precision
fnn.set_bf16_path, fnn.get_bf16_path = precision.set_bf16_path, precision.get_bf16_path
fnn.autocast, fnn.is_autocast_enabled = precision.autocast, precision.is_autocast_enabled

-- the registry as Lua data: {name, family, differentiable, has_cuda}
function fnn.ops()
   local list = {}
   for i = 0, C.fnn_op_count() - 1 do
      local info = C.fnn_op_at(i)
      list[#list + 1] = {name = ffi.string(info.name), family = ffi.string(info.family),
                         differentiable = info.differentiable ~= 0, has_cuda = info.has_cuda ~= 0}
   end
   return list
end

function fnn.set_num_threads(n)
   if type(n) ~= 'number' or n < 1 then error('set_num_threads: expected a positive count', 2) end
   if n > 1 and C.fnn_threads_forked() ~= 0 then
      error(('set_num_threads(%d): this process was forked after its parent had started OpenMP\'s pool '
             .. '(a forward pass before the fork, such as in nginx\'s init_by_lua), which libgomp cannot '
             .. 'rebuild, so it runs on one thread: build the model after the fork (init_worker_by_lua_block)'):format(n), 2)
   end
   C.fnn_set_num_threads(n)
end
function fnn.get_num_threads() return C.fnn_get_num_threads() end
-- true in the child of a fork made after the parent's OpenMP pool may have started: it runs its
-- kernels on one thread (core/threads.c says why)
function fnn.threads_forked() return C.fnn_threads_forked() ~= 0 end

-- the compute layer (core/blas.c): 'onednn' (the default where the build has it) or 'portable'
-- (OpenBLAS) kernels for the GEMM-bound ops
function fnn.set_kernels(name)
   if type(name) ~= 'string' then
      error(('set_kernels: expected a name (onednn or portable), got %s'):format(type(name)), 2)
   end
   if C.fnn_set_kernels(name) ~= 0 then error(ffi.string(C.fnn_last_error()), 2) end
end
function fnn.get_kernels() return ffi.string(C.fnn_get_kernels()) end

-- fnn.config(): what a bug report needs, as torch.__config__.show(): a table of strings (cpu, isa,
-- kernels, blas, blas_core, blas_core_note, onednn, onednn_isa, onednn_primitives (made so far),
-- threads, openmp, float32_precision, bf16_path, build) whose printed form lists them one a line
local config_order = {'cpu', 'vendor', 'isa', 'kernels', 'blas', 'blas_core', 'blas_core_note', 'onednn',
                      'onednn_isa', 'onednn_primitives', 'threads', 'openmp', 'float32_precision', 'bf16_path',
                      'build'}
local config_mt = {__tostring = function(t)
   local lines = {'fastnn-lua ' .. fnn._VERSION}
   for _, k in ipairs(config_order) do
      if t[k] ~= nil then lines[#lines + 1] = ('  %-17s %s'):format(k, t[k]) end
   end
   return table.concat(lines, '\n')
end}
function fnn.config()
   local n = tonumber(C.fnn_config(nil, 0))
   local buf = ffi.new('char[?]', n + 1)
   C.fnn_config(buf, n + 1)
   local t = {}
   for k, v in ffi.string(buf):gmatch('([^\t\n]+)\t([^\n]*)\n') do t[k] = v end
   return setmetatable(t, config_mt)
end
function fnn.live_bytes(device) return tonumber(C.fnn_live_bytes(device == 'cuda' and 1 or 0)) end
function fnn.peak_bytes(device) return tonumber(C.fnn_peak_bytes(device == 'cuda' and 1 or 0)) end
function fnn.empty_cache() C.fnn_empty_cache() end

-- fnn.adopt(ptr): a tensor a C host made, passed as a `const fnn_tensor *` (lightuserdata or cdata).
-- It shares the host's data without copying: one more reference (atomic; this state's GC drops it),
-- and no graph node (detached), so several lua_States in several threads may adopt the same tensor.
-- Read-only like every tensor; nn.Param copies it, so no optimizer ever writes into it.
function fnn.adopt(ptr)
   local kind = type(ptr)
   if kind ~= 'userdata' and kind ~= 'cdata' then
      error(('adopt: expected a pointer to an fnn_tensor, got a %s'):format(kind), 2)
   end
   local src = ffi.cast('const fnn_tensor *', ptr)
   if src == nil then error('adopt: the pointer is NULL', 2) end
   local out = fnn_tensor.new()
   if C.fnn_detach(out, src) ~= 0 then error(ffi.string(C.fnn_last_error()):gsub('^detach', 'adopt'), 2) end
   return fnn_tensor.done(out)
end

-- try_ forms: the same call, returning nil, message instead of raising
local function strip_where(msg)
   if type(msg) ~= 'string' then return msg end
   return (msg:gsub('^[^:\n]+:%d+: ', ''))
end
local function make_try(f)
   return function(...)
      local r = {pcall(f, ...)}
      if r[1] then return unpack(r, 2, table.maxn(r)) end
      return nil, strip_where(r[2])
   end
end
fnn._make_try = make_try
local function add_tries(t)
   local names = {}
   for k, v in pairs(t) do
      if type(v) == 'function' and type(k) == 'string' and not k:match('^try_') and not k:match('^__') then
         names[#names + 1] = k
      end
   end
   for _, k in ipairs(names) do t['try_' .. k] = make_try(t[k]) end
end
-- checkpoints (fastnn.serialize, loaded on first use); the try_ forms come from add_tries below
for _, name in ipairs{'save', 'load', 'save_training', 'load_training', 'save_safetensors', 'load_safetensors'} do
   fnn[name] = function(...) return require('fastnn.serialize')[name](...) end
end
add_tries(fnn.Tensor)
add_tries(fnn)

-- sub-modules load on first use: fnn.nn, fnn.optim, fnn.data, fnn.init, fnn.cuda, fnn.plot, fnn.image,
-- fnn.tensorboard, fnn.onnx; fnn.nn comes with its Keras-style face (fastnn.keras, a layer above nn, adds it)
local submodules = {nn = 'fastnn.keras', optim = 'fastnn.optim', data = 'fastnn.data', init = 'fastnn.initializers',
                    cuda = 'fastnn.cuda', serialize = 'fastnn.serialize', plot = 'fastnn.plot',
                    image = 'fastnn.image', tensorboard = 'fastnn.tensorboard', onnx = 'fastnn.onnx'}
submodules.distributed = 'fastnn.distributed'   -- data parallel (libfastnn_dist, -DFASTNN_MPI=ON)
setmetatable(fnn, {__index = function(t, k)
   if submodules[k] then
      local m = require(submodules[k])
      rawset(t, k, m)
      return m
   end
end})

package.loaded.fastnn = fnn
return fnn
