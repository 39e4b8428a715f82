-- common.clock: a monotonic wall clock in seconds (os.clock would add up the CPU time of every
-- BLAS thread, so it runs fast on several cores).
--   local clock = require 'common.clock'
--   local t0 = clock(); ...; print(('%.1fs'):format(clock() - t0))
local ffi = require 'ffi'

if not pcall(ffi.typeof, 'struct fastnn_example_ts') then
   ffi.cdef [[
      struct fastnn_example_ts { int64_t sec; int64_t nsec; };
      int clock_gettime(int clk, struct fastnn_example_ts *ts);
   ]]
end
local ts = ffi.new('struct fastnn_example_ts')
local CLOCK_MONOTONIC = 1

return function()
   ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
   return tonumber(ts.sec) + 1e-9 * tonumber(ts.nsec)
end
