-- fastnn.cuda (fnn.cuda): the CUDA backend's memory and streams, from Lua.
--   fnn.cuda.synchronize()        -- wait until everything queued on cuda:0 (or the device given) is done
--   fnn.cuda.memory_stats()       --> {live = bytes, cached = bytes, pinned_live, pinned_cached,
--                                      pinned_allocs = buffers from the driver, pinned_reuses}
--   fnn.cuda.empty_cache()        -- give cached GPU blocks and pinned host buffers back to the driver
--   fnn.cuda.is_available()       --> true when this build and machine have a GPU
-- GPU work is asynchronous: an op returns once its kernels are queued, so timing a loop needs a
-- synchronize() before reading the clock (reading a value, as item() or to_table(), waits anyway).
-- Each host thread queues onto its own stream: synchronize before handing a GPU tensor to another
-- thread. Without the CUDA backend (or a GPU), synchronize() on the CPU is a no-op, on a GPU an error.
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local device = require 'fastnn.device'
local C, fail = fnn_tensor.C, fnn_tensor.fail

local M = {}

function M.is_available() return device.Device.cuda(0) ~= nil end

-- synchronize(d): d a Device, 'cuda', 'cuda:<n>' or nil (cuda:0); the CPU returns at once
function M.synchronize(d)
   local dev = device._parse('synchronize', d or 'cuda')
   if C.fnn_device_synchronize(dev.id) ~= 0 then fail() end
end

local pair, four = ffi.new('int64_t[2]'), ffi.new('int64_t[4]')
function M.memory_stats()
   C.fnn_cuda_memory_stats(pair, pair + 1)   -- all 0 (and an error we do not raise) without the backend
   if C.fnn_cuda_pinned_stats(four) ~= 0 then fail() end
   return {live = tonumber(pair[0]), cached = tonumber(pair[1]), pinned_live = tonumber(four[0]),
           pinned_cached = tonumber(four[1]), pinned_allocs = tonumber(four[2]), pinned_reuses = tonumber(four[3])}
end

function M.empty_cache() C.fnn_cuda_empty_cache() end

return M
