-- bench/gpu/gpu_util.lua: what the GPU benchmarks (bench/gpu/*.lua, run by spec/gpu/check.sh) share,
-- on top of bench/bench_util.lua: the device (skipped cleanly without one), the smoke mode, timing
-- around a synchronised loop, and the "skipped: <op> not on cuda in this build" line.
--   package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. (arg[0]:match('^(.*)/gpu/[^/]*$') or '..') .. '/?.lua;' .. package.path
--   local G = require 'gpu_util'; local gpu = G.device('gpu_sgemm')
-- FASTNN_GPU_BENCH_SMOKE=1: tiny sizes, so a script's logic runs in seconds under the host emulation
-- (spec/gpu/emulate.sh's build); its figures mean nothing there.
local B = require 'bench_util'
local fnn = B.fnn

local G = {B = B, fnn = fnn}
G.smoke = os.getenv('FASTNN_GPU_BENCH_SMOKE') == '1'

-- print the line check.sh counts, and leave (exit 0: a skip is not a failure of the script)
function G.skip(name, reason)
   io.write(('SKIPPED %s: skipped: %s\n'):format(name, (tostring(reason):gsub('\n', ' '))))
   io.stdout:flush()
   os.exit(0)
end

-- GPU 0, or a clean skip naming why there is none
function G.device(name)
   local gpu, why = fnn.Device.cuda(0)
   if not gpu then G.skip(name, why) end
   print(('# %s: %s on %s%s'):format(name, fnn._VERSION, tostring(gpu), G.smoke and ' (FASTNN_GPU_BENCH_SMOKE: tiny sizes)' or ''))
   io.stdout:flush()
   return gpu
end

-- seconds for fn() run `calls` times, the device synchronised before and after the loop only
function G.timed(calls, fn)
   fnn.cuda.synchronize()
   local t0 = B.now()
   for i = 1, calls do fn(i) end
   fnn.cuda.synchronize()
   return B.now() - t0
end

-- run fn; an op that refuses cuda becomes "skipped: <op> not on cuda in this build"
function G.run_or_skip(name, fn)
   local ok, err = xpcall(fn, debug.traceback)
   if ok then return end
   local msg = tostring(err)
   local head = msg:match('^[^\n]*')
   if head:find('not implemented', 1, true) then
      local n
      repeat head, n = head:gsub('^[^\n]-:%d+: ', '') until n == 0   -- drop "file.lua:12: " prefixes
      G.skip(name, (head:match('^([%w_]+):') or head) .. ' not on cuda in this build (' .. head .. ')')
   end
   io.stderr:write(name, ': ', msg, '\n')
   os.exit(1)
end

return G
