-- bench_util: what every bench/<workload>.lua shares: the monotonic clock,
-- the thread setup, the RESULT/NOTYET lines bench/run.sh reads, the IDX
-- loader for Fashion-MNIST (untimed) and small statistics.
--
--   package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
--   local B = require 'bench_util'
--   local fnn = B.fnn
--   B.main('tiny_ops', function() ... B.result('tiny_ops', {'add_us_per_op', v, 'us'}) end)
--
-- A workload the framework cannot run yet prints `NOTYET <reason>` and exits 0
-- (B.need, or a core entry point that still answers "not implemented"), so the
-- table shows it as "not yet" with the reason instead of dropping it.
local ffi = require 'ffi'

local B = {}

ffi.cdef[[
typedef long time_t;
struct timespec { time_t tv_sec; long tv_nsec; };
int clock_gettime(int clk_id, struct timespec *tp);
]]
local ts = ffi.new('struct timespec')
local CLOCK_MONOTONIC = 1
-- seconds from CLOCK_MONOTONIC, as the C reference (sgemm_peak.c) reads it
function B.now()
   ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
   return tonumber(ts.tv_sec) + 1e-9 * tonumber(ts.tv_nsec)
end

local function notyet(reason)
   io.write('NOTYET ', (tostring(reason):gsub('\n', ' ')), '\n')
   io.stdout:flush()
   os.exit(0)
end
B.notyet = notyet

-- a failure that means "this part of the framework is not written yet"
local function is_missing(msg)
   if msg == nil then return false end
   msg = tostring(msg)
   return msg:find('not implemented', 1, true) ~= nil
       or msg:find("module 'fastnn%.[%w_.]+' not found") ~= nil
end

local ok, fnn = pcall(require, 'fastnn')
if not ok then
   io.stderr:write(tostring(fnn), '\n')
   if is_missing(fnn) then notyet(fnn) end
   os.exit(1)
end
B.fnn = fnn

-- B.need{ {'nn.Linear', function() return fnn.nn.Linear end}, ... }:
-- every getter must return a non-nil value without raising; otherwise NOTYET
-- naming everything that is missing.
-- B.check is the same test, returning the reason (nil when all is there).
function B.check(list)
   local missing = {}
   for _, item in ipairs(list) do
      local good, v = pcall(item[2])
      if not good or v == nil then missing[#missing + 1] = item[1] end
   end
   if #missing > 0 then return 'missing: ' .. table.concat(missing, ', ') end
end
function B.need(list)
   local reason = B.check(list)
   if reason then notyet(reason) end
end

-- true when the core registry has an op whose name contains `pattern` (plain text)
function B.has_op(pattern)
   for _, op in ipairs(fnn.ops()) do
      if op.name:find(pattern, 1, true) then return true end
   end
   return nil
end

-- the first of several names that exists (API spellings that SPEC allows)
function B.pick(...)
   for i = 1, select('#', ...) do
      local good, v = pcall(select(i, ...))
      if good and v ~= nil then return v end
   end
   return nil
end

-- thread setup: BENCH_THREADS (default 2) for OpenBLAS and the core's kernels together
-- and FASTNN_PRECISION, the counterpart of the PyTorch scripts' TORCH_MODE: 'ieee' (the default),
-- 'bf16' (fnn.set_float32_precision('bf16'): the GEMM-bound ops take bf16 operands, as
-- TORCH_MODE=bf16) or 'autocast_bf16' (each workload's forward and loss inside B.precision, which is
-- fnn.autocast('bf16', ...) then, as TORCH_MODE=autocast_bf16 runs them in torch.autocast)
function B.setup_threads(name)
   local n = tonumber(os.getenv('BENCH_THREADS') or '') or 2
   fnn.set_num_threads(n)
   local precision = os.getenv('FASTNN_PRECISION') or 'ieee'
   if precision == 'bf16' then
      fnn.set_float32_precision('bf16')
   elseif precision == 'autocast_bf16' then
      B.autocast = true
   elseif precision ~= 'ieee' and precision ~= '' then
      io.stderr:write(('FASTNN_PRECISION=%s: expected ieee, bf16 or autocast_bf16\n'):format(precision))
      os.exit(2)
   end
   local cfg = fnn.config()
   print(('# %s: fastnn %s, fnn.set_num_threads(%d) (OpenBLAS + core kernels), %s, FASTNN_PRECISION=%s '
          .. '(float32 precision %s; bf16 path: %s)'):format(name, fnn._VERSION, fnn.get_num_threads(),
      jit and jit.version or _VERSION, precision, cfg.float32_precision, cfg.bf16_path))
   io.stdout:flush()
   return n
end

-- fn() under FASTNN_PRECISION=autocast_bf16's fnn.autocast('bf16', fn), else fn(): the forward and the
-- loss of a training step (PyTorch's scripts: `with precision():`)
function B.precision(fn)
   if B.autocast then return fnn.autocast('bf16', fn) end
   return fn()
end

-- RESULT <name> <metric>=<value> <unit> ... (values as Python's %.6g)
function B.result(name, ...)
   local parts = {}
   for i = 1, select('#', ...) do
      local t = select(i, ...)
      parts[#parts + 1] = ('%s=%.6g %s'):format(t[1], t[2], t[3])
   end
   io.write('RESULT ', name, ' ', table.concat(parts, ' '), '\n')
   io.stdout:flush()
end

-- run the workload; "not implemented" from the core becomes NOTYET, anything else fails loudly
B.is_missing = function(msg) return is_missing(msg) end
-- BENCH_PROFILE=n: run under fnn.profile and print its first n rows (setup included) to stderr
function B.main(name, fn)
   local rows = tonumber(os.getenv('BENCH_PROFILE') or '')
   if rows and fnn.profile then
      local inner = fn
      fn = function()
         local report = fnn.profile(inner)
         io.stderr:write(report:text(rows), '\n')
      end
   end
   local good, err = xpcall(fn, debug.traceback)
   if good then
      -- leave without lua_close: unloading libfastnn under live OpenMP workers
      -- is not something a benchmark should trip over
      io.stdout:flush()
      os.exit(0)
   end
   if is_missing(err) then
      io.stderr:write(tostring(err), '\n')
      notyet((tostring(err):match('^[^\n]*')))
   end
   io.stderr:write(name, ': ', tostring(err), '\n')
   os.exit(1)
end

function B.median(list)
   local s = {}
   for i = 1, #list do s[i] = list[i] end
   table.sort(s)
   local n = #s
   if n % 2 == 1 then return s[(n + 1) / 2] end
   return 0.5 * (s[n / 2] + s[n / 2 + 1])
end

function B.sum(list)
   local t = 0
   for i = 1, #list do t = t + list[i] end
   return t
end

-- per-step seconds -> the '#' summary line the references print
function B.step_summary(times)
   local ms = {}
   local lo, hi = math.huge, -math.huge
   for i = 1, #times do
      ms[i] = times[i] * 1e3
      lo, hi = math.min(lo, ms[i]), math.max(hi, ms[i])
   end
   return {median = B.median(ms), mean = B.sum(ms) / #ms, min = lo, max = hi, total_s = B.sum(times)}
end

-- ---------------------------------------------------------------------------
-- Fashion-MNIST (untimed): the core's IDX reader through the C ABI, so the
-- bench does not depend on how fnn.data wraps it.
B.FMNIST_DIR = os.getenv('FMNIST_DIR') or '/usr/share/datasets/fashion-mnist'

function B.read_idx(file, scale)
   local T = require 'fastnn.tensor'
   local out = T.new()
   if T.C.fnn_read_idx(out, B.FMNIST_DIR .. '/' .. file, scale) ~= 0 then
      error(ffi.string(T.C.fnn_last_error()), 2)
   end
   return T.done(out)
end

-- images [N,28,28] in [0,1], labels [N] as 1-based class ids (1..10)
function B.load_fmnist(split)
   local x = B.read_idx(split .. '-images-idx3-ubyte.gz', 1 / 255)
   local y = B.read_idx(split .. '-labels-idx1-ubyte.gz', 1) + 1
   return x, y
end

-- a tensor's values in a Lua-indexable float buffer (0-based), for untimed checks
function B.floats(t)
   local T = require 'fastnn.tensor'
   local n = tonumber(T.C.fnn_tensor_numel(t))
   local buf = ffi.new('float[?]', math.max(n, 1))
   if T.C.fnn_copy_to_floats(t, buf, n) ~= 0 then error(ffi.string(T.C.fnn_last_error()), 2) end
   return buf, n
end

-- accuracy in % of logits [N,K] against 1-based labels [N] (argmax in Lua, untimed)
function B.accuracy(logits, labels)
   local lg = B.floats(logits)
   local lb, n = B.floats(labels)
   local k = logits:size(2)
   local right = 0
   for i = 0, n - 1 do
      local best, arg = -math.huge, 0
      for j = 0, k - 1 do
         local v = lg[i * k + j]
         if v > best then best, arg = v, j end
      end
      if arg + 1 == lb[i] then right = right + 1 end
   end
   return 100 * right / n
end

-- collect the parameters of several modules into one list
function B.params_of(mods)
   local list = {}
   for _, m in ipairs(mods) do
      for _, p in ipairs(m:parameters()) do list[#list + 1] = p end
   end
   return list
end

return B
