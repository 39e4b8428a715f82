-- fastnn.distributed: data-parallel training over Open MPI (CPU tensors) and NCCL (CUDA tensors).
--   mpirun -np 2 fastnn-lua train.lua
--   local dist = fnn.distributed
--   dist.init()                                   -- world size 1 without mpirun
--   local ddp = dist.DataParallel(model)          -- rank 0's weights everywhere
--   local opt = dist.wrap_optimizer(optim.Adam(model:parameters(), 1e-3), ddp)
--   local loader = data.DataLoader(ds, 64):shuffle():seed(1):shard(dist.rank(), dist.world_size())
--   for batch in loader:iter() do
--      opt:zero_grad(); loss_of(ddp(batch.inputs), batch.targets):backward(); opt:step()  -- syncs first
--   end
--
-- The collectives live in libfastnn_dist (dist/, built with -DFASTNN_MPI=ON), loaded only when
-- the process was started by mpirun (Open MPI's or a PMI launcher's environment). Without it,
-- or outside mpirun, this is world size 1 and every call still works: all_reduce and broadcast
-- return a copy, all_gather a [1, ...] stack, barrier returns at once, sync does nothing.
-- Ranks are 0-based, as MPI's and Device.cuda(i). Collectives must be called by every rank in
-- the same order with tensors of the same shape (checked: a mismatch raises on the ranks that
-- differ and names both shapes). The result is a new tensor (tensors are immutable), on the
-- input's device; CUDA tensors go over NCCL when the library was built with it.
--
-- Exit: MPI_Finalize runs when the process exits (a script's end or os.exit(0)), so mpirun sees
-- every rank end cleanly. An uncaught error: the fastnn-lua launcher prints it and calls
-- distributed._abort_on_error, which MPI_Aborts the whole job instead of leaving the others
-- waiting in a collective; os.exit with a failure code on one rank aborts the job the same way.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ffi = require 'ffi'
local bit = require 'bit'
local fnn = require 'fastnn'
local fnn_tensor = require 'fastnn.tensor'
local C, new, done, istype, shape_str = fnn_tensor.C, fnn_tensor.new, fnn_tensor.done, fnn_tensor.is_tensor,
   fnn_tensor.shape_str

local M = {}
local lib                          -- libfastnn_dist, when loaded
local world = {rank = 0, size = 1, initialized = false, backend = 'none'}

local OPS = {sum = 0, max = 1, min = 2, mean = 3}
local CPU, INT64 = 0, 1

-- ---------------------------------------------------------------------------
-- errors: implementations raise with level 0; the public wrappers re-raise at the user's line

local function raise(msg) error(msg, 0) end
local public = require 'fastnn.public'

local function check(rc)
   if rc ~= 0 then raise(ffi.string(lib.fnn_dist_last_error())) end
end

-- ---------------------------------------------------------------------------
-- finding libfastnn_dist: $FASTNN_DIST_LIB, beside libfastnn ($FASTNN_LIB or the launcher's
-- path), the build tree beside these sources, the installed library, package.cpath

local function candidates()
   local list = {}
   local function beside(path)
      local dir = path and path:match('^(.*)/[^/]*$')
      if dir then list[#list + 1] = dir .. '/libfastnn_dist.so' end
   end
   local env = os.getenv('FASTNN_DIST_LIB')
   if env and env ~= '' then list[#list + 1] = env end
   beside(os.getenv('FASTNN_LIB'))
   beside(rawget(_G, 'FASTNN_LIB_PATH'))
   local here = debug.getinfo(1, 'S').source:match('^@(.*)/fastnn/distributed%.lua$')
   if here then
      list[#list + 1] = here .. '/../build/libfastnn_dist.so'
      list[#list + 1] = here .. '/../../../lib/libfastnn_dist.so.0'
      list[#list + 1] = here .. '/../../../lib/x86_64-linux-gnu/libfastnn_dist.so.0'
   end
   local on_cpath = package.searchpath('libfastnn_dist', package.cpath)
   if on_cpath then list[#list + 1] = on_cpath end
   return list
end

local function load_library()
   local ok, cdef = pcall(require, 'fastnn.dist_cdef')
   if not ok then return nil, 'lua/fastnn/dist_cdef.lua is missing (configure with -DFASTNN_MPI=ON and build)' end
   local tried = {}
   for _, path in ipairs(candidates()) do
      local f = io.open(path, 'rb')
      if f then
         f:close()
         local loaded, l = pcall(ffi.load, path)
         if loaded then
            ffi.cdef(cdef)
            return l
         end
         tried[#tried + 1] = path .. ' (' .. tostring(l) .. ')'
      else
         tried[#tried + 1] = path .. ' (missing)'
      end
   end
   return nil, 'libfastnn_dist not found (build with -DFASTNN_MPI=ON or set FASTNN_DIST_LIB); tried:\n  '
               .. table.concat(tried, '\n  ')
end

-- the world size the launcher announced, or nil outside mpirun (Open MPI, then PMI/PMIx launchers)
local function launcher_size()
   for _, name in ipairs{'OMPI_COMM_WORLD_SIZE', 'PMI_SIZE', 'PMIX_SIZE', 'MPI_LOCALNRANKS'} do
      local v = tonumber(os.getenv(name) or '')
      if v then return v end
   end
   if os.getenv('PMIX_RANK') or os.getenv('PMI_RANK') then return 0 end   -- launched; size from MPI
   return nil
end

local function init_impl()
   if world.initialized then return M end
   local announced = launcher_size()
   if announced ~= nil then
      local l, why = load_library()
      if l == nil then
         if announced > 1 then
            raise(('distributed.init: started by mpirun as one of %d ranks, but %s'):format(announced, why))
         end
      else
         lib = l
         local rank, size = ffi.new('int[1]'), ffi.new('int[1]')
         check(lib.fnn_dist_init(rank, size))
         world.rank, world.size, world.backend = rank[0], size[0], 'mpi'
         if world.size > 1 then
            -- os.exit(n ~= 0) on one rank ends the job: the atexit MPI_Finalize would otherwise
            -- wait for ranks that wait for this one in a collective
            local exit = os.exit
            os.exit = function(code, ...)
               if code ~= nil and code ~= true and code ~= 0 then
                  io.stdout:flush()
                  lib.fnn_dist_abort(code == false and 1 or tonumber(code) or 1)
               end
               return exit(code, ...)
            end
         end
      end
   end
   world.initialized = true
   return M
end

local function ensure() if not world.initialized then init_impl() end end

M.init = public(init_impl)
function M.rank() ensure() return world.rank end
function M.world_size() ensure() return world.size end
function M.is_main() ensure() return world.rank == 0 end
function M.is_initialized() return world.initialized end
-- this rank's index among the ranks on its host (the GPU to use: Device.cuda(dist.local_rank()))
function M.local_rank()
   ensure()
   for _, name in ipairs{'OMPI_COMM_WORLD_LOCAL_RANK', 'MPI_LOCALRANKID', 'PMI_LOCAL_RANK', 'SLURM_LOCALID'} do
      local v = tonumber(os.getenv(name) or '')
      if v then return v end
   end
   return world.size == 1 and 0 or world.rank
end
-- 'mpi' when libfastnn_dist runs the collectives, 'none' at world size 1 without it
function M.backend() ensure() return world.backend end
function M.has_nccl() ensure() return lib ~= nil and lib.fnn_dist_has_nccl() ~= 0 end
function M.host() ensure() return lib and ffi.string(lib.fnn_dist_processor_name()) or 'localhost' end

M.barrier = public(function()
   ensure()
   if lib then check(lib.fnn_dist_barrier()) end
end)

-- ---------------------------------------------------------------------------
-- tensors to buffers

local function check_tensor(op, t)
   if not istype(t) then raise(('%s: expected a tensor, got a %s'):format(op, type(t))) end
   if t.ndim < 0 then raise(op .. ': the tensor is empty (freed)') end
   return t:contiguous()
end

-- a new contiguous tensor of this shape, dtype and device, contents undefined
local function fresh(ndim, shape, dtype, device)
   local out = new()
   if C.fnn_empty_dtype(out, ndim, shape, dtype) ~= 0 then raise(fnn_tensor.last_error()) end
   out = done(out)
   if device ~= CPU then
      local moved = new()
      if C.fnn_to_device(moved, out, device) ~= 0 then raise(fnn_tensor.last_error()) end
      out = done(moved)
   end
   return out
end
local function fresh_like(x) return fresh(x.ndim, x.shape_, x.dtype_, x.device_) end

local function bytes(t) return lib.fnn_dist_tensor_bytes(t) end

-- every rank's (ndim, dtype, device type, shape): one small all-gather, so a mismatch raises
-- with both shapes on the ranks that differ instead of corrupting or hanging a collective
local sig_len = 11
local function check_same(op, x)
   local mine = ffi.new('int64_t[?]', sig_len)
   mine[0], mine[1], mine[2] = x.ndim, x.dtype_, bit.rshift(x.device_, 8)
   for d = 0, x.ndim - 1 do mine[3 + d] = x.shape_[d] end
   local all = ffi.new('int64_t[?]', sig_len * world.size)
   check(lib.fnn_dist_all_gather(all, mine, sig_len, INT64, CPU))
   for r = 0, world.size - 1 do
      local o = all + r * sig_len
      local same = true
      for k = 0, sig_len - 1 do same = same and o[k] == mine[k] end
      if not same then
         local dims = {}
         for d = 0, tonumber(o[0]) - 1 do dims[#dims + 1] = tostring(tonumber(o[3 + d])) end
         raise(('%s: rank %d has a %s tensor %s, rank %d a %s tensor [%s]: every rank must pass the same shape'):format(
            op, world.rank, ffi.string(C.fnn_dtype_name(x.dtype_)), shape_str(x), r,
            ffi.string(C.fnn_dtype_name(tonumber(o[1]))), table.concat(dims, ',')))
      end
   end
end

local function numel(x) return tonumber(C.fnn_tensor_numel(x)) end

-- ---------------------------------------------------------------------------
-- collectives

local options = require 'fastnn.options'
local ALL_REDUCE_OPTS = options.declare('distributed.all_reduce', {
   {'op', 'string', 'sum', "'sum', 'mean', 'max' or 'min' over the ranks", values = {'sum', 'mean', 'max', 'min'}},
})
local DDP_OPTS = options.declare('distributed.DataParallel', {
   {'bucket_mb', 'number', 25, 'megabytes of gradients averaged per call', min = 0, min_open = true},
})

local function op_of(fname, opts)
   local name = opts
   if type(opts) == 'table' then
      local msg, o = ALL_REDUCE_OPTS:try(opts)
      if msg then raise(msg) end
      name = o.op
   end
   if name == nil then name = 'sum' end
   local code = OPS[name]
   if code == nil then
      raise(('%s: op is %s, expected one of sum, mean, max, min'):format(fname, show_value(name)))
   end
   return code, name
end

-- all_reduce(t, {op = 'sum'|'mean'|'max'|'min'}): a new tensor, the op over every rank's t
M.all_reduce = public(function(t, opts)
   ensure()
   local x = check_tensor('all_reduce', t)
   local code, name = op_of('all_reduce', opts)
   if name == 'mean' and x.dtype_ == INT64 then
      raise(('all_reduce: op mean needs a float32 tensor, got an int64 tensor %s'):format(shape_str(x)))
   end
   if lib == nil then return x end          -- world size 1: the values themselves (immutable)
   check_same('all_reduce', x)
   local out = fresh_like(x)
   check(lib.fnn_dist_all_reduce(bytes(out), bytes(x), numel(x), x.dtype_, code, x.device_))
   return out
end)

-- broadcast(t, root = 0): root's t on every rank (the others' t gives only shape and dtype)
M.broadcast = public(function(t, root)
   ensure()
   local x = check_tensor('broadcast', t)
   root = root or 0
   if type(root) ~= 'number' or root ~= math.floor(root) or root < 0 or root >= world.size then
      raise(('broadcast: root is %s, expected a rank 0..%d'):format(show_value(root), world.size - 1))
   end
   if lib == nil then return x end
   check_same('broadcast', x)
   local out = fresh_like(x)
   check(lib.fnn_dist_broadcast(bytes(out), bytes(x), numel(x), x.dtype_, root, x.device_))
   return out
end)

-- all_gather(t): every rank's t stacked along a new first dim, rank 0 first: [world_size, ...]
M.all_gather = public(function(t)
   ensure()
   local x = check_tensor('all_gather', t)
   if x.ndim >= 8 then raise(('all_gather: %s has 8 dims; the result would need 9'):format(shape_str(x))) end
   local shape = ffi.new('int64_t[8]')
   shape[0] = world.size
   for d = 0, x.ndim - 1 do shape[d + 1] = x.shape_[d] end
   if lib == nil then return x:reshape({1, unpack(x:shape())}) end
   check_same('all_gather', x)
   local out = fresh(x.ndim + 1, shape, x.dtype_, x.device_)
   check(lib.fnn_dist_all_gather(bytes(out), bytes(x), numel(x), x.dtype_, x.device_))
   return out
end)

-- ---------------------------------------------------------------------------
-- DataParallel

local DataParallel = require('fastnn.class')('DataParallel')
local methods = {}
-- a proxy: its methods, then the model's own methods and fields
DataParallel.__index = function(self, k)
   local m = methods[k]
   if m ~= nil then return m end
   local v = rawget(self, 'module')[k]          -- the model's own methods and fields
   if type(v) == 'function' then
      return function(s, ...)
         if s == self then s = rawget(self, 'module') end
         return v(s, ...)
      end
   end
   return v
end
DataParallel.__call = function(self, ...) return self.module:forward(...) end
DataParallel.__tostring = function(self)
   return ('dist.DataParallel(%s, %d ranks, buckets of %g MB)'):format(
      self.module.short_str and self.module:short_str() or tostring(self.module), world.size, self.bucket_mb)
end

local function model_of(what, model)
   if type(model) ~= 'table' or type(model.parameters) ~= 'function' then
      raise(('%s: expected a model (an nn.Module), got a %s'):format(what, type(model)))
   end
   return model
end

-- DataParallel(model, {bucket_mb = 25}): rank 0's parameters and buffers are broadcast, so
-- every rank starts equal; ddp:sync() then averages the gradients between backward and step.
M.DataParallel = public(function(model, opts)
   ensure()
   model_of('DataParallel', model)
   local msg, o = DDP_OPTS:try(opts)
   if msg then raise(msg) end
   local mb = o.bucket_mb
   if type(mb) ~= 'number' or not (mb > 0) then
      raise(('DataParallel: bucket_mb is %s, expected a positive number of megabytes'):format(show_value(mb)))
   end
   local self = setmetatable({module = model, bucket_mb = mb, _bucket_bytes = mb * 2^20, _last_buckets = 0},
                             DataParallel)
   if lib ~= nil and world.size > 1 then
      local params = model:parameters()
      -- the same model on every rank: the parameter count and every shape, in one check
      check_same('DataParallel (parameter count)', fnn.zeros(#params + 1))
      if #params > 0 then
         local sizes = {}
         for i, p in ipairs(params) do sizes[i] = p:numel() end
         local mine = fnn.tensor(sizes):long()
         local hi, lo = M.all_reduce(mine, {op = 'max'}), M.all_reduce(mine, {op = 'min'})
         for i = 1, #params do
            if hi[i] ~= lo[i] then
               raise(('DataParallel: the ranks have different models: parameter %d (%s) has %d elements on rank %d, '
                      .. 'between %d and %d across the ranks'):format(i, model:named_parameters()[i][1], sizes[i],
                      world.rank, lo[i], hi[i]))
            end
         end
      end
      for _, p in ipairs(params) do
         local t = p:tensor():detach()
         p:set(M.broadcast(t, 0))
      end
      for _, pair in ipairs(model:named_buffers()) do
         if istype(pair[2]) then model:set_buffer(pair[1], M.broadcast(pair[2], 0)) end
      end
   end
   return self
end)

function methods:forward(...) return self.module:forward(...) end
function methods:parameters() return self.module:parameters() end
-- how many all-reduces the last sync made (its buckets)
function methods:last_sync_buckets() return self._last_buckets end

local has_probe = ffi.new('fnn_tensor')
local function has_grad(p)
   if C.fnn_param_frozen(p.node) ~= 0 then return false end
   if C.fnn_param_grad(has_probe, p.node) ~= 0 then raise(fnn_tensor.last_error()) end
   local has = has_probe.ndim >= 0
   C.fnn_tensor_clear(has_probe)
   return has
end

-- sync(): every gradient becomes its mean over the ranks, in buckets of about bucket_mb
-- (one C call each: copy in, one all-reduce, copy out scaled). A parameter whose gradient is
-- missing on some ranks (unused in their forward) counts as zeros there; one without a
-- gradient on every rank (or frozen) is left alone, so the optimizer skips it everywhere.
methods.sync = public(function(self)
   if lib == nil or world.size == 1 then
      self._last_buckets = 0
      return self
   end
   local params = self.module:parameters()
   local n = #params
   if n == 0 then return self end
   local flags, mine = ffi.new('int64_t[?]', n), {}
   for i = 1, n do
      mine[i] = has_grad(params[i])
      flags[i - 1] = mine[i] and 1 or 0
   end
   check(lib.fnn_dist_all_reduce(flags, flags, n, INT64, OPS.max, CPU))

   local limit = self._bucket_bytes
   local src = ffi.new('const float *[?]', n)
   local dst = ffi.new('float *[?]', n)
   local counts = ffi.new('int64_t[?]', n)
   local keep, outs, owners = {}, {}, {}
   local k, bucket_bytes, device, buckets = 0, 0, nil, 0
   local scale = 1 / world.size
   local function flush()
      if k == 0 then return end
      check(lib.fnn_dist_all_reduce_bucket(k, src, dst, counts, scale, device))
      for j = 1, k do owners[j]:set_grad(outs[j]) end
      buckets = buckets + 1
      k, bucket_bytes = 0, 0
      keep, outs, owners = {}, {}, {}
   end
   for i = 1, n do
      if flags[i - 1] ~= 0 then
         local p = params[i]
         local value = p:tensor()
         local g = mine[i] and p:grad() or nil
         if g ~= nil then g = g:contiguous() end
         local dev = (g or value).device_
         if k > 0 and (dev ~= device or bucket_bytes >= limit) then flush() end
         device = dev
         local out = fresh(value.ndim, value.shape_, 0, dev)
         k = k + 1
         keep[k], outs[k], owners[k] = g, out, p
         src[k - 1] = g ~= nil and bytes(g) or nil
         dst[k - 1] = bytes(out)
         counts[k - 1] = numel(out)
         bucket_bytes = bucket_bytes + 4 * numel(out)
      end
   end
   flush()
   self._last_buckets = buckets
   return self
end)

-- wrap_optimizer(opt, ddp): the optimizer with ddp:sync() before each step; every other call
-- goes to opt (so checkpoints, schedules and lr changes see the inner optimizer's state)
M.wrap_optimizer = public(function(opt, ddp)
   if type(opt) ~= 'table' or type(opt.step) ~= 'function' then
      raise('wrap_optimizer: expected an optimizer, got a ' .. type(opt))
   end
   if getmetatable(ddp) ~= DataParallel then
      raise('wrap_optimizer: expected a dist.DataParallel as the second argument, got a ' .. type(ddp))
   end
   local wrapper = {inner = opt, ddp = ddp}
   function wrapper.step(_, closure)
      local loss
      if closure ~= nil then loss = require('fastnn.autograd').enable_grad(closure) end
      ddp:sync()
      opt:step()
      return loss
   end
   return setmetatable(wrapper, {
      __index = function(_, k)
         local v = opt[k]
         if type(v) == 'function' then
            return function(s, ...)
               if s == wrapper then s = opt end
               return v(s, ...)
            end
         end
         return v
      end,
      __tostring = function() return 'dist.wrap_optimizer(' .. tostring(opt) .. ')' end})
end)

-- ---------------------------------------------------------------------------
-- checkpoints (fastnn.serialize calls these): rank 0 writes, then every rank waits for it

-- run fn on the main rank only; the others wait at a barrier, and a failure there is raised on
-- rank 0 after the barrier (so no rank is left waiting)
function M._on_main(fn, ...)
   if lib == nil or world.size == 1 then return fn(...) end
   local r = {true}
   if world.rank == 0 then r = {pcall(fn, ...)} end
   check(lib.fnn_dist_barrier())
   if not r[1] then error(r[2], 0) end
   return unpack(r, 2, table.maxn(r))
end

-- libfastnn_dist when loaded (nil at world size 1 without mpirun), for the specs
function M._library() ensure() return lib end

-- the launcher calls this after printing an uncaught error: end the whole job
function M._abort_on_error()
   if lib ~= nil and world.size > 1 then
      io.stderr:write(('fastnn-lua: rank %d of %d failed; aborting the job\n'):format(world.rank, world.size))
      io.stderr:flush()
      lib.fnn_dist_abort(1)
   end
end

return M
