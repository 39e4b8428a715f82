-- fastnn.keras.progress: what fit prints, as a callback (Keras' ProgbarLogger).
--   verbose = 1 on a terminal: "Epoch 1/5" then a bar redrawn in place ('\r') with steps, ETA and
--     the running loss and metrics, ending with the epoch's time and figures (val_* included);
--   verbose = 1 when stdout is not a terminal, or verbose = 2: one line per epoch
--     "Epoch 1/5 - 469/469 - 2.1s - loss: 0.5123 - accuracy: 0.8201 - val_loss: 0.4410 ...";
--   verbose = 0: nothing.
-- Redraws are throttled to 20 a second, so the bar costs nothing next to a training step.
local ffi = require 'ffi'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped

local M = {}

-- libc's isatty and a monotonic clock (not fastnn's ABI, so not in fastnn.h), under names of their
-- own (asm labels), so another declaration of clock_gettime in the process cannot clash
local have_libc = pcall(ffi.cdef, [[
   int fnn_keras_isatty(int fd) __asm__("isatty");
   struct fnn_keras_timespec { int64_t sec; int64_t nsec; };
   int fnn_keras_clock_gettime(int clk, struct fnn_keras_timespec *ts) __asm__("clock_gettime");
]])

local ts = have_libc and ffi.new('struct fnn_keras_timespec') or nil
function M.now(extra)
   if extra ~= nil then too_many('progress.now', 1, extra, '') end
   if ts then
      ffi.C.fnn_keras_clock_gettime(1, ts)   -- CLOCK_MONOTONIC
      return tonumber(ts.sec) + 1e-9 * tonumber(ts.nsec)
   end
   return os.time()
end

-- is stdout a terminal? FASTNN_PROGRESS=bar|line overrides
function M.is_terminal(extra)
   if extra ~= nil then too_many('progress.is_terminal', 1, extra, '') end
   local env = os.getenv('FASTNN_PROGRESS')
   if env == 'bar' then return true end
   if env == 'line' then return false end
   return have_libc and ffi.C.fnn_keras_isatty(1) == 1
end

local function fmt_time(s, extra)
   if extra ~= nil then too_many('progress.fmt_time', 2, extra, 's') end
   if s >= 3600 then return ('%d:%02d:%02d'):format(s / 3600, (s % 3600) / 60, s % 60) end
   if s >= 60 then return ('%d:%02d'):format(s / 60, s % 60) end
   if s >= 1 then return ('%ds'):format(s + 0.5) end
   if s >= 1e-3 then return ('%dms'):format(s * 1000 + 0.5) end
   return ('%dus'):format(s * 1e6 + 0.5)
end
M.fmt_time = fmt_time

-- ' - loss: 0.1234 - accuracy: 0.9000' for the keys in order that logs has
function M.figures(keys, logs, extra)
   if extra ~= nil then too_many('progress.figures', 3, extra, 'keys, logs') end
   local parts = {}
   for _, k in ipairs(keys) do
      local v = logs[k]
      if type(v) == 'number' then parts[#parts + 1] = (' - %s: %.4f'):format(k, v) end
   end
   return table.concat(parts)
end

local Progress = require('fastnn.class')('Progress')

-- new{verbose, epochs, steps, keys = function() -> ordered log keys, out = file}
function M.new(opts, extra)
   if extra ~= nil then too_many('progress.new', 2, extra, 'opts') end
   local self = setmetatable({}, Progress)
   self.verbose, self.epochs, self.steps, self.keys = opts.verbose, opts.epochs, opts.steps, opts.keys
   self.out = opts.out or io.stdout
   self.bar = opts.verbose == 1 and (opts.terminal == nil and M.is_terminal() or opts.terminal)
   return self
end

-- the callback hooks fit calls: (epoch, logs) and (batch, logs), as every callback's
function Progress:on_epoch_begin(epoch, _logs, extra)
   if extra ~= nil then too_many('Progress:on_epoch_begin', 3, extra, 'epoch, logs') end
   self.epoch, self.t0, self.last_draw, self.width = epoch, M.now(), -1, 0
   if self.bar then self.out:write(('Epoch %d/%d\n'):format(epoch, self.epochs)); self.out:flush() end
end

function Progress:_draw(step, logs, final_text)
   local n = self.steps
   local digits = #tostring(n)
   local done = n > 0 and math.floor(30 * step / n) or 30
   local bar = string.rep('=', done)
   if step < n then bar = bar:sub(1, -2) .. (done > 0 and '>' or '') end
   bar = bar .. string.rep('.', 30 - #bar)
   local elapsed = M.now() - self.t0
   local tail
   if final_text then
      tail = final_text
   else
      local eta = step > 0 and elapsed / step * (n - step) or 0
      tail = ' - ETA: ' .. fmt_time(eta) .. M.figures(self.keys(), logs)
   end
   local line = ('%' .. digits .. 'd/%d [%s]%s'):format(step, n, bar, tail)
   local pad = self.width - #line
   self.out:write('\r', line, pad > 0 and string.rep(' ', pad) or '')
   self.width = #line
   self.out:flush()
end

function Progress:on_batch_end(step, logs, extra)
   if extra ~= nil then too_many('Progress:on_batch_end', 3, extra, 'batch, logs') end
   if not self.bar then return end
   local t = M.now()
   if step < self.steps and t - self.last_draw < 0.05 then return end
   self.last_draw = t
   if step < self.steps then self:_draw(step, logs) end
end

function Progress:on_epoch_end(epoch, logs, extra)
   if extra ~= nil then too_many('Progress:on_epoch_end', 3, extra, 'epoch, logs') end
   if self.verbose == 0 then return end
   local elapsed = M.now() - self.t0
   local per = self.steps > 0 and elapsed / self.steps or 0
   local figures = M.figures(self.keys(), logs)
   if self.bar then
      self:_draw(self.steps, logs, (' - %s %s/step%s'):format(fmt_time(elapsed), fmt_time(per), figures))
      self.out:write('\n')
   else
      self.out:write(('Epoch %d/%d - %d/%d - %s%s\n'):format(epoch, self.epochs, self.steps, self.steps,
                                                            fmt_time(elapsed), figures))
   end
   self.out:flush()
end

return M
