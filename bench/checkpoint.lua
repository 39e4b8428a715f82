-- checkpoint: save and load of a 100 MB model (25 tensors of 1M floats) against `cp` of the same
-- file (issue #12: at least 0.5x cp's throughput). Medians of REPS runs, each file in the page
-- cache as cp's is. A save includes what makes it atomic and durable (fsync of the file, rename,
-- fsync of the directory), so `cp + sync` of the file is shown beside plain cp.
--   luajit bench/checkpoint.lua [dir]      (dir: where the files go, default /tmp)
-- with FASTNN_LIB pointing at the library (or the build/ beside the sources).
local here = arg[0]:match('^(.*)/[^/]*$') or '.'
package.path = here .. '/?.lua;' .. here .. '/../lua/?.lua;' .. here .. '/../lua/?/init.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn

local NAME, NT, SIZE, REPS = 'checkpoint', 25, 1000000, 5

local function time_of(fn)
   local times = {}
   for i = 1, REPS do
      local t0 = B.now()
      fn()
      times[i] = B.now() - t0
   end
   return B.median(times)
end

B.main(NAME, function()
   B.setup_threads(NAME)
   local dir = arg[1] or '/tmp'
   local path, copy = dir .. '/fastnn-bench.fdl', dir .. '/fastnn-bench-copy.fdl'
   fnn.manual_seed(0)
   local model = fnn.nn.Module:extend('Big')()
   for i = 1, NT do model:register_parameter('w' .. i, fnn.Param(fnn.randn(SIZE))) end
   local mb = NT * SIZE * 4 / 1e6
   fnn.save(model, path)                       -- warm-up: the file exists, its pages are cached

   local save = time_of(function() fnn.save(model, path) end)
   local load = time_of(function() fnn.load(model, path) end)
   local read = time_of(function() fnn.load_safetensors(path) end)
   local cp = time_of(function() assert(os.execute(('cp %s %s'):format(path, copy)) == 0) end)
   local cp_sync = time_of(function() assert(os.execute(('cp %s %s && sync %s'):format(path, copy, copy)) == 0) end)
   os.remove(path)
   os.remove(copy)

   print(('# %.0f MB: save %.1f ms (%.0f MB/s), load into the model %.1f ms (%.0f MB/s), load_safetensors %.1f ms'):format(
      mb, save * 1e3, mb / save, load * 1e3, mb / load, read * 1e3))
   print(('# cp %.1f ms (%.0f MB/s), cp + sync %.1f ms; save/cp throughput %.2fx (%.2fx of cp + sync), load/cp %.2fx'):format(
      cp * 1e3, mb / cp, cp_sync * 1e3, cp / save, cp_sync / save, cp / load))
   B.result(NAME, {'save_ms', save * 1e3, 'ms'}, {'load_ms', load * 1e3, 'ms'}, {'cp_ms', cp * 1e3, 'ms'},
            {'save_vs_cp', cp / save, 'x'}, {'load_vs_cp', cp / load, 'x'})
end)
