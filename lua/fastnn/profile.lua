-- fastnn.profile: where a piece of code spends its time, op by op (core/profile.c).
--   local report = fnn.profile(function() for i = 1, 10 do train_step(i) end end)
--   print(report)                 -- a table: op, forward/backward, calls, ms, share
--   report.rows[1].name, report.rows[1].ms, report.wall_ms, report.op_ms
-- Forward rows time each op's C call, backward rows each rule the engine runs (with the adding
-- of its input gradients), step rows each optimizer update of one parameter. What the ops do not
-- cover (Lua, the collector, waiting) is wall_ms - op_ms. It profiles the calling host thread
-- only; on a GPU the times are those of the launches (call fnn.cuda.synchronize() inside fn to
-- count the kernels' time once).
local ffi = require 'ffi'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local fnn_tensor = require 'fastnn.tensor'
local C = fnn_tensor.C

local M = {}

local Report = require('fastnn.class')('Report')

local KIND = {[0] = 'forward', [1] = 'backward', [2] = 'step'}

-- report:text(n): the first n rows (all by default) as an aligned table
function Report:text(n, extra)
   if extra ~= nil then too_many('profile report:text', 2, extra, 'n') end
   n = math.min(n or #self.rows, #self.rows)
   local lines = {('%-28s %-8s %9s %11s %7s'):format('op', 'pass', 'calls', 'ms', 'share')}
   for i = 1, n do
      local r = self.rows[i]
      lines[#lines + 1] = ('%-28s %-8s %9d %11.3f %6.1f%%'):format(r.name, r.kind, r.calls, r.ms,
                                                                   100 * r.ms / math.max(self.wall_ms, 1e-9))
   end
   if n < #self.rows then lines[#lines + 1] = ('(%d more rows)'):format(#self.rows - n) end
   lines[#lines + 1] = ('ops %.3f ms of %.3f ms wall (%.1f%%); the rest is Lua, the collector and waiting'):format(
      self.op_ms, self.wall_ms, 100 * self.op_ms / math.max(self.wall_ms, 1e-9))
   if self.dropped > 0 then
      lines[#lines + 1] = ('%d op calls not counted (more than 512 op names)'):format(self.dropped)
   end
   return table.concat(lines, '\n')
end
Report.__tostring = Report.text

local function pack(...) return {n = select('#', ...), ...} end

local name_p, kind_p, calls_p, ns_p = ffi.new('const char *[1]'), ffi.new('int[1]'), ffi.new('int64_t[1]'),
                                      ffi.new('int64_t[1]')

-- fnn.profile(fn, ...): runs fn(...) and returns the report, then fn's results; an error in fn
-- stops the profile and is raised again
function M.profile(fn, ...)
   if type(fn) ~= 'function' then error(('profile: expected a function, got %s'):format(type(fn)), 2) end
   if C.fnn_profile_start() ~= 0 then error(fnn_tensor.last_error(), 2) end
   fnn_tensor.set_profiling(true)
   local t0 = C.fnn_profile_now()
   local results = pack(pcall(fn, ...))
   local wall = tonumber(C.fnn_profile_now() - t0) / 1e6
   fnn_tensor.set_profiling(false)
   local count = C.fnn_profile_stop()
   local rows, op_ms = {}, 0
   for i = 0, count - 1 do
      C.fnn_profile_entry(i, name_p, kind_p, calls_p, ns_p)
      local ms = tonumber(ns_p[0]) / 1e6
      rows[#rows + 1] = {name = ffi.string(name_p[0]), kind = KIND[kind_p[0]], calls = tonumber(calls_p[0]), ms = ms}
      op_ms = op_ms + ms
   end
   local dropped = C.fnn_profile_dropped()
   C.fnn_profile_release()
   if not results[1] then error(results[2], 0) end
   table.sort(rows, function(a, b)
      if a.ms ~= b.ms then return a.ms > b.ms end
      if a.name ~= b.name then return a.name < b.name end
      return a.kind < b.kind
   end)
   local report = setmetatable({rows = rows, wall_ms = wall, op_ms = op_ms, dropped = dropped}, Report)
   return report, unpack(results, 2, results.n)
end

return M
