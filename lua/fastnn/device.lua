-- fastnn.device: devices and moving tensors between them (core/device.c).
--   local gpu = fnn.Device.cuda(0) or fnn.Device.cpu()   -- or fnn.Device.best()
--   local y = x:to(gpu)                                  -- also x:to('cuda:0'), x:to('cpu')
--   print(y:device())                                    --> cuda:0
-- A Device prints as 'cpu' or 'cuda:<ordinal>'; ordinals are 0-based, as in CUDA.
-- Device.cuda(i) returns nil and the reason when this build has no CUDA backend
-- or the machine has no GPU i; mixing devices in one op is an error, never a copy.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local Tensor, C = fnn_tensor.Tensor, fnn_tensor.C
local new, done, fail = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped
local floor = math.floor

local CPU, CUDA = 0, 1          -- fnn_device_type
local STATUS_OOM = -3

local M = {}
-- The Device class and its objects are per process, not per load of this module: the tensor
-- metatype is bound once per process (ffi.metatype), so tensors keep the methods of the first load,
-- and t:device() / t:to(d) must agree with a later load's Device (busted loads fastnn afresh for each
-- spec file: module_spec's to_device failed after any earlier file with "device is table")
local PER_PROCESS = debug.getregistry()
local kept = PER_PROCESS['fastnn.device']
if not kept then
   kept = {class = require('fastnn.class')('Device'), by_id = {}}
   PER_PROCESS['fastnn.device'] = kept
end
local Device = kept.class
M.Device = Device
function Device.__new() error('Device: there is one per device: Device.cpu(), Device.cuda(i) or Device.best()', 2) end

-- one object per device id, so devices compare with == and can key tables
local by_id = kept.by_id
local function device_of(id)
   local d = by_id[id]
   if not d then
      local kind = bit.rshift(id, 8) == CUDA and 'cuda' or 'cpu'
      d = setmetatable({type = kind, index = bit.band(id, 255), id = id}, Device)
      by_id[id] = d
   end
   return d
end

function Device.__tostring(d) return d.type == 'cpu' and 'cpu' or ('cuda:' .. d.index) end
function Device.is_cuda(d) return d.type == 'cuda' end
function Device.is_device(x) return getmetatable(x) == Device end

function Device.cpu() return device_of(CPU * 256) end

-- how many devices of a kind this build and machine have ('cuda' or 'cpu')
function Device.count(kind)
   if kind ~= 'cuda' and kind ~= 'cpu' then
      error(("Device.count: kind is %s, expected 'cuda' or 'cpu'"):format(show_value(kind)), 2)
   end
   return C.fnn_device_count(kind == 'cuda' and CUDA or CPU)
end

-- the reason GPU i cannot be used, or nil when it can
local function cuda_unavailable(i)
   if C.fnn_cuda_built() == 0 then
      return 'this build has no CUDA backend; rebuild with -DFASTNN_CUDA=ON'
   end
   local n = C.fnn_device_count(CUDA)
   if n == 0 then return 'no CUDA device found (no GPU, or no working driver)' end
   if i >= n then return ('no GPU %d; this machine has %d (ordinals 0..%d)'):format(i, n, n - 1) end
   return nil
end

-- Device.cuda(i): GPU i (0-based, default 0), or nil, reason
function Device.cuda(i)
   i = i or 0
   if type(i) ~= 'number' or i ~= floor(i) or i < 0 or i > 255 then
      error(('Device.cuda: ordinal is %s, expected an integer 0..255'):format(show_value(i)), 2)
   end
   local why = cuda_unavailable(i)
   if why then return nil, ('cuda:%d is not available: %s'):format(i, why) end
   return device_of(CUDA * 256 + i)
end

-- the fastest device here: GPU 0 when there is one, else the CPU
function Device.best()
   return Device.cuda(0) or Device.cpu()
end

-- 'cpu', 'cuda', 'cuda:1' or a Device -> a Device (raising for anything else, at `level` above
-- parse's caller: 2, the default, is the caller's caller)
local function parse(op, d, level)
   level = (level or 2) + 1
   if getmetatable(d) == Device then return d end
   if type(d) == 'string' then
      if d == 'cpu' then return Device.cpu() end
      local ord = d == 'cuda' and '0' or d:match('^cuda:(%d+)$')
      if ord then
         local dev, why = Device.cuda(tonumber(ord))
         if not dev then error(op .. ': ' .. why, level) end
         return dev
      end
   end
   error(("%s: device is %s, expected a Device, 'cpu', 'cuda' or 'cuda:<n>'"):format(
      op, type(d) == 'string' and ("'" .. d .. "'") or type(d)), level)
end
M._parse = parse   -- for Module:to_device, fnn.cuda and DataLoader; not a fastnn function
fnn_tensor.parse_device = parse   -- the creators' {device = ...} (tensor.lua)

-- t:device(): where t's data lives
function Tensor.device(t, extra)
   if extra ~= nil then too_many('device', 2, extra, 't') end
   return device_of(t.device_)
end

-- t:to(device): t on that device (t itself when already there); differentiable.
-- A GPU out of memory first gets the collector and the allocator cache back, then one retry.
local stats = ffi.new('int64_t[2]')
function Tensor.to(t, d, extra)
   if extra ~= nil then too_many('to', 3, extra, 't, device') end
   if not fnn_tensor.is_tensor(t) then error(('to: expected a tensor, got a %s'):format(type(t)), 2) end
   local dev = parse('to', d)
   local out = new()
   local rc = C.fnn_to_device(out, t, dev.id)
   if rc == STATUS_OOM and dev.type == 'cuda' then
      collectgarbage()
      C.fnn_cuda_empty_cache()
      rc = C.fnn_to_device(out, t, dev.id)
      if rc == STATUS_OOM then
         local msg = ffi.string(C.fnn_last_error())
         C.fnn_cuda_memory_stats(stats, stats + 1)
         error(('%s (after collecting and emptying the CUDA cache: %d bytes live, %d cached on the GPUs)'):format(
            msg, tonumber(stats[0]), tonumber(stats[1])), 2)
      end
   end
   if rc ~= 0 then fail() end
   return done(out)
end

-- fnn.to_device(t, device): the same as a function (itself, so its errors land at the caller's line)
M.to_device = Tensor.to

return M
