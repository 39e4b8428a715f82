-- fastnn.tensor: the tensor handle. A tensor is an `fnn_tensor` header that
-- lives in GC-managed cdata; C ops fill a fresh header passed first. A header
-- that holds a storage or a graph node gets a finalizer; a tiny result with
-- inline data gets none, so a small op costs one allocation and one C call.
--
-- This module holds the metatype, the helpers every op binding uses (new,
-- done, fail, dim and shape conversion), creation, inspection and printing.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ffi = require 'ffi'
local C = require 'fastnn.C'

local M = {}
local Tensor = {}          -- methods, shared by every tensor
M.Tensor, M.C = Tensor, C

local T = ffi.typeof('fnn_tensor')
M.ctype = T
local ffi_gc, ffi_string, istype = ffi.gc, ffi.string, ffi.istype
local clear = C.fnn_tensor_clear
local floor, huge = math.floor, math.huge

-- ---------------------------------------------------------------------------
-- results, errors and memory pressure

-- The Lua GC does not see C buffers: when the core's live bytes grow past a
-- threshold since the last collection, collect (torch7's heap tracking).
local live_cpu = C.fnn_live_bytes_ptr(0)
local MIN_THRESHOLD = 64 * 1024 * 1024
local threshold = MIN_THRESHOLD
local function collect(extra)
   if extra ~= nil then M.too_many('collect', 1, extra, '') end
   collectgarbage()
   local now = tonumber(live_cpu[0])
   threshold = math.max(MIN_THRESHOLD, now * 1.4)
end
M.collect = collect
function M.set_gc_threshold(bytes, extra)
   if extra ~= nil then M.too_many('set_gc_threshold', 2, extra, 'bytes') end
   MIN_THRESHOLD = bytes; threshold = bytes
end

-- fnn.profile (profile.lua) turns this on for the duration of its function: new() and done()
-- then bracket each op's C call for the core's per-thread timer (core/profile.c). A flag per load
-- of this module (an upvalue: nothing to look up per op), every load's set together: tensors keep
-- the first load's methods (the metatype is bound once per process), so a second load's profile
-- must turn the first load's flag on too (busted loads fastnn afresh for each spec file)
local profiling = false
do
   local setters = debug.getregistry()['fastnn.profiling_setters'] or {}
   debug.getregistry()['fastnn.profiling_setters'] = setters
   setters[#setters + 1] = function(on) profiling = on end
   function M.set_profiling(on) for i = 1, #setters do setters[i](on) end end
end
function M.profiling() return profiling end

local function new()   -- zero-filled; C fills every field (T(-1) would not compile)
   if profiling then C.fnn_profile_begin() end
   return T()
end

-- a filled header becomes a tensor; only headers that hold something get a finalizer
local live_gpu = C.fnn_live_bytes_ptr(1)
local gpu_threshold = 256 * 1024 * 1024
local function collect_gpu()
   collectgarbage()
   C.fnn_cuda_empty_cache()
   gpu_threshold = math.max(256 * 1024 * 1024, tonumber(live_gpu[0]) * 1.4)
end

-- Ctrl-C. A host that opened this state with fastnn_lua_open (the launcher, embedding hosts)
-- left the address of its interrupt flag in the registry. Every op reads it, so a loop the JIT
-- compiled into one trace, where the host's hook never runs, still stops at its next tensor op
-- with the error "interrupted" at the user's line. Without such a host the flag stays 0.
local interrupt_flag = ffi.new('int32_t[1]')
do
   local host_flag = debug.getregistry()['fastnn.interrupt_flag']
   if type(host_flag) == 'userdata' then interrupt_flag = ffi.cast('volatile int32_t *', host_flag) end
end
local library_dir = '@' .. (debug.getinfo(1, 'S').source:match('^@(.-)fastnn/tensor%.lua$') or '\0') .. 'fastnn/'

local function raise_interrupted()
   interrupt_flag[0] = 0                   -- consumed: the host's hook then finds nothing to raise
   local level = 2                         -- the first frame outside these modules is the user's
   while true do
      local info = debug.getinfo(level, 'S')
      if not info then level = 0 break end
      if info.what ~= 'C' and info.source:sub(1, #library_dir) ~= library_dir then break end
      level = level + 1
   end
   error('interrupted', level)
end
-- the host's hook raises through it too, when the Ctrl-C lands outside a trace; inside these
-- modules (source under library_dir) the hook waits, so that done() raises once the op's output
-- has its finalizer (raised between the C call and done(), the output would leak)
debug.getregistry()['fastnn.raise_interrupted'] = raise_interrupted
debug.getregistry()['fastnn.library_dir'] = library_dir

local function done(out)
   if profiling then C.fnn_profile_mark(0) end   -- before the finalizer and any collection
   if out.storage ~= nil or out.node ~= nil then
      ffi_gc(out, clear)
      if live_cpu[0] > threshold then collect() end
      if live_gpu[0] > gpu_threshold then collect_gpu() end
   end
   -- after the finalizer: raised before it, the op's output (storage and node) was never released
   if interrupt_flag[0] ~= 0 then raise_interrupted() end
   return out
end

-- raise the core's message at the user's line (1 fail, 2 the binding, 3 the caller)
-- as: the name the user called when the C entry has another (zeros and ones run fnn_full_dtype)
local function fail(as)
   local msg = ffi_string(C.fnn_last_error())
   if as then msg = msg:gsub('^full: cannot allocate', as .. ': cannot allocate', 1) end
   error(msg, 3)
end

M.new, M.done, M.fail = new, done, fail

-- ---------------------------------------------------------------------------
-- arguments past an op's last: refused, never dropped (x:relu(5), x:clamp(0, 1, 3), a:add(b, c))

local describe = require('fastnn.options').describe   -- a value as messages show it: never an address

-- The one refusal: "<op>: unexpected argument <pos> (<value>); <op> takes (<takes>)". pos counts the
-- function form's arguments (x:clamp(0, 1, 3) is clamp(x, 0, 1, 3): argument 4), so the method and
-- the function say the same. Raised at the binding's caller: level counts from the caller of this
-- as Decl:check's does (default 2: 1 this, 2 the binding, 3 the binding's caller); hint, when given,
-- follows the signature.
-- A binding of fixed arity names one parameter past its last and calls this when that is not nil:
--    function Tensor.relu(x, extra) if extra ~= nil then too_many('relu', 2, extra, 'x') end ... end
-- which costs one comparison (a trailing nil stays legal: Lua cannot tell it from none). Bindings
-- that take varargs anyway pass them to `rest`.
local function too_many(op, pos, v, takes, level, hint)
   error(('%s: unexpected argument %d (%s)%s%s'):format(op, pos, describe(v),
         takes and ('; %s takes (%s)'):format(op, takes) or '', hint and ('; ' .. hint) or ''), (level or 2) + 1)
end
M.too_many = too_many

-- the first non-nil of ..., refused as argument pos + its index - 1 at the caller of the binding
-- that calls rest (nils pass, as past a named parameter)
local function rest(op, pos, takes, ...)
   for i = 1, select('#', ...) do
      local v = select(i, ...)
      if v ~= nil then too_many(op, pos + i - 1, v, takes, 3) end
   end
end
M.rest = rest

function M.is_tensor(x, extra)
   if extra ~= nil then too_many('is_tensor', 2, extra, 'x') end
   return istype(T, x)
end
function M.last_error() return ffi_string(C.fnn_last_error()) end

-- ---------------------------------------------------------------------------
-- shapes and dims

local shape_buf = ffi.new('int64_t[8]')
M.shape_buf = shape_buf

local function shape_str(t, extra)
   if extra ~= nil then too_many('shape_str', 2, extra, 't') end
   local parts = {}
   for i = 0, t.ndim - 1 do parts[#parts + 1] = tostring(tonumber(t.shape_[i])) end
   return '[' .. table.concat(parts, ',') .. ']'
end
M.shape_str = shape_str
Tensor.shape_str = shape_str

-- sizes as varargs or one table -> shape_buf, ndim; `allow_infer` lets one -1 through. `at` is the
-- argument number of the sizes in the op's call (x:reshape{2, 3} is reshape(x, {2, 3}): 2): an
-- argument after a sizes table is refused under its number
local function parse_shape_at(op, allow_infer, at, first, ...)
   local n, list
   if type(first) == 'table' then
      for i = 1, select('#', ...) do
         local v = select(i, ...)
         if v ~= nil then too_many(op, at + i, v, nil, 3, 'the sizes are one table or numbers') end
      end
      list, n = first, #first
   else
      n = select('#', first, ...)
      if n == 1 and first == nil then n = 0 end
      list = {first, ...}
   end
   if n > 8 then error(('%s: %d dims, at most 8 supported'):format(op, n), 3) end
   local span = 1   -- what the strides multiply up to (a size 0 counts as 1): as the core, below 2^62
   for i = 1, n do
      local v = list[i]
      if type(v) ~= 'number' or v ~= floor(v) or (v < 0 and not (allow_infer and v == -1)) then
         error(('%s: size %d is %s, expected a non-negative integer'):format(op, i, show_value(v)), 3)
      end
      span = span * math.max(v, 1)
      if span >= 2^62 then
         error(('%s: sizes %s multiply past 2^62 (strides overflow)'):format(op, M.dims_str(list)), 3)
      end
      shape_buf[i - 1] = v
   end
   return n, shape_buf
end
M.parse_shape_at = parse_shape_at
-- the sizes as the op's first argument (a creator's)
local function parse_shape(op, allow_infer, ...) return parse_shape_at(op, allow_infer, 1, ...) end
M.parse_shape = parse_shape

-- a 1-based (or negative) Lua dim -> 0-based C dim, checked; `extra` admits ndim+extra dims (unsqueeze)
local function cdim(op, t, d, extra)
   local n = t.ndim + (extra or 0)
   if type(d) ~= 'number' or d ~= floor(d) or d == 0 or d > n or d < -n then
      if type(d) ~= 'number' then   -- a table here is an options table the op does not take
         error(('%s: dim is %s, expected a whole number (dims of %s are 1..%d or -%d..-1)%s'):format(
            op, show_value(d), shape_str(t), n, n, type(d) == 'table' and '; ' .. op .. ' takes no options' or ''), 3)
      end
      error(('%s: dim %s out of range for %s (dims are 1..%d or -%d..-1)'):format(
         op, tostring(d), shape_str(t), n, n), 3)
   end
   if d < 0 then return d + n end
   return d - 1
end
M.cdim = cdim

-- an integer argument, returned (else an error 3 frames up: the user's line when a binding's helper
-- calls this)
function M.int_arg(op, what, v)
   if type(v) ~= 'number' or v ~= floor(v) then
      error(('%s: %s is %s, expected an integer'):format(op, what, show_value(v)), 3)
   end
   return v
end

-- the one argument check of the bindings: t must be a tensor, else an error raised `level` frames
-- up (default 3: the caller of the binding that called this) naming the op and, when given, the
-- argument ("conv2d: weight is a nil, expected a tensor"; "sum: expected a tensor, got a table")
function M.check_tensor(op, t, what, level)
   if M.is_tensor(t) then return end
   local msg = what and ('%s: %s is a %s, expected a tensor'):format(op, what, type(t))
      or ('%s: expected a tensor, got a %s'):format(op, type(t))
   error(msg, (level or 2) + 1)
end

-- dtypes by name and by code (fnn_dtype)
local DTYPE_CODE = {float32 = 0, int64 = 1, float = 0, long = 1, bfloat16 = 3, bf16 = 3}
local DTYPE_NAME = {[0] = 'float32', [1] = 'int64', [3] = 'bfloat16'}
M.DTYPE_CODE, M.DTYPE_NAME = DTYPE_CODE, DTYPE_NAME

-- the dtype code an options table asks for (float32 when it names none); errors at the user's line
local function dtype_of(op, opts)
   if opts == nil or opts.dtype == nil then return 0 end
   local code = DTYPE_CODE[opts.dtype]
   if code == nil then
      error(("%s: dtype is %s, expected 'float32', 'int64' or 'bfloat16'"):format(op, show_value(opts.dtype)), 3)
   end
   return code
end
M.dtype_of = dtype_of

-- a trailing options table ({dtype = ...}) in a creator's varargs: a table with no array part
local function is_opts(v) return type(v) == 'table' and v[1] == nil and next(v) ~= nil end

-- the creators' options, declared once per creator (fastnn.options): an unknown key is refused at
-- the user's line; dtype_of and device_id check the values
local CREATOR_OPTS = {}
for _, op in ipairs{'zeros', 'ones', 'empty', 'full', 'arange', 'tensor', 'zeros_like', 'ones_like', 'full_like'} do
   CREATOR_OPTS[op] = require('fastnn.options').declare('fnn.' .. op, {
      {'dtype', 'string', nil, "the element type: 'float32' (float), 'int64' (long) or 'bfloat16' (bf16)",
       expect = "'float32', 'int64' or 'bfloat16'", default_doc = op:match('_like$') and "the tensor's" or
       (op == 'arange' and 'int64 for whole-number arguments, else float32' or 'float32')},
      {'device', 'any', nil, "where the tensor lives: a Device, 'cpu', 'cuda' or 'cuda:<n>'",
       default_doc = op:match('_like$') and "the tensor's" or 'the CPU'},
   })
end
-- opts checked for creator op (nil stays nil), raised `level` frames above the caller of this
local function creator_opts(op, opts, level)
   if opts == nil then return nil end
   local checked = CREATOR_OPTS[op]:check(opts, level + 1)   -- not a tail call: the level counts this frame
   return checked
end

-- a tensor argument, or a number turned into a 0-d tensor; beside an int64 tensor (`other`) a
-- whole number becomes an int64 scalar, so ids compare and add exactly past 2^24
local function as_tensor(op, x, pos, other)
   if istype(T, x) then return x end
   if type(x) == 'number' then
      local out = new()
      local int = istype(T, other) and other.dtype_ == 1 and x == floor(x) and x > -2^63 and x < 2^63
      local device = istype(T, other) and other.device_ or 0   -- beside a GPU tensor: made there
      if C.fnn_full_on(out, device, 0, shape_buf, x, int and 1 or 0) ~= 0 then fail() end
      return done(out)
   end
   error(('%s: argument %d is a %s, expected a tensor or a number'):format(op, pos, type(x)), 3)
end
M.as_tensor = as_tensor

-- ---------------------------------------------------------------------------
-- creation

local function creator(op, cfn)
   return function(...)
      local n, shape = parse_shape(op, false, ...)
      local out = new()
      if cfn(out, n, shape) ~= 0 then fail() end
      return done(out)
   end
end
M.rand = creator('rand', C.fnn_rand)

-- uniform(shape, lo, hi): U[lo, hi) (what the layers' default initialisations draw)
function M.uniform(shape, lo, hi, extra)
   if extra ~= nil then too_many('uniform', 4, extra, 'shape, lo, hi') end
   if type(lo) ~= 'number' or type(hi) ~= 'number' then
      error(('uniform: bounds are %s and %s, expected numbers'):format(type(lo), type(hi)), 2)
   end
   local n, buf = parse_shape('uniform', false, shape)
   local out = new()
   if C.fnn_uniform(out, n, buf, lo, hi) ~= 0 then fail() end
   return done(out)
end
M.randn = creator('randn', C.fnn_randn)

-- the device a creator's opts name (a Device, 'cpu', 'cuda', 'cuda:<n>') as its id, 0 for the CPU;
-- fastnn.device sets M.parse_device when it loads (it requires this module)
local function device_id(op, opts)
   if opts == nil or opts.device == nil then return 0 end
   return M.parse_device(op, opts.device, 3).id   -- raised at the creator's caller
end

-- value (nil: empty) of dtype on device: made there, never made here and copied over
local function make_filled(op, n, shape, value, dtype, device)
   local out = new()
   local rc = value and C.fnn_full_on(out, device, n, shape, value, dtype) or C.fnn_empty_on(out, device, n, shape, dtype)
   if rc ~= 0 then fail(op) end
   return done(out)
end

-- zeros, ones, empty: sizes as varargs or a table, then optionally {dtype = 'int64', device = d}
local TYPED_TAKES = 'sizes as numbers or one table, then optionally {dtype = ..., device = ...}'
local function typed_creator(op, value)
   return function(...)
      local nargs = select('#', ...)
      local first = ...
      local n, shape, opts
      if type(first) == 'table' and not is_opts(first) then   -- ({sizes}[, opts]): nothing after the options
         local second = select(2, ...)
         if second ~= nil and not is_opts(second) then too_many(op, 2, second, TYPED_TAKES) end
         if nargs > 2 then rest(op, 3, TYPED_TAKES, select(3, ...)) end
         opts = second
         n, shape = parse_shape(op, false, first)
      else
         local last = nargs > 0 and select(nargs, ...) or nil
         if is_opts(last) then
            opts = last
            n, shape = parse_shape(op, false, unpack({...}, 1, nargs - 1))
         else
            n, shape = parse_shape(op, false, ...)
         end
      end
      local dtype, device = 0, 0
      if opts ~= nil then
         opts = creator_opts(op, opts, 2)
         dtype, device = dtype_of(op, opts), device_id(op, opts)
      end
      return make_filled(op, n, shape, value, dtype, device)
   end
end
M.zeros = typed_creator('zeros', 0)
M.ones = typed_creator('ones', 1)
M.empty = typed_creator('empty', nil)

-- full(shape, value[, {dtype = ..., device = ...}])
function M.full(shape, value, opts, extra)
   if extra ~= nil then too_many('full', 4, extra, 'shape, value, opts') end
   if type(value) ~= 'number' then
      error(('full: value is a %s, expected a number'):format(type(value)), 2)
   end
   opts = creator_opts('full', opts, 2)
   local dtype, device = dtype_of('full', opts), device_id('full', opts)
   local n, buf = parse_shape('full', false, shape)
   return make_filled('full', n, buf, value, dtype, device)
end

-- arange(n), arange(a, b[, step]), each optionally followed by {dtype = ...}. As in PyTorch, whole
-- numbers give an int64 range (exact past 2^24) and any fractional argument a float32 one
local ARANGE_TAKES = 'n[, opts] or a, b[, step][, opts]'
function M.arange(a, b, step, opts, extra)
   -- the options table ends the call wherever it stands
   if is_opts(b) then
      if step ~= nil or opts ~= nil or extra ~= nil then
         local at = step ~= nil and 3 or opts ~= nil and 4 or 5
         too_many('arange', at, at == 3 and step or at == 4 and opts or extra, ARANGE_TAKES)
      end
      b, opts = nil, b
   elseif is_opts(step) then
      if opts ~= nil or extra ~= nil then too_many('arange', opts ~= nil and 4 or 5, opts or extra, ARANGE_TAKES) end
      step, opts = nil, step
   elseif extra ~= nil then
      too_many('arange', 5, extra, ARANGE_TAKES)
   end
   opts = creator_opts('arange', opts, 2)
   if b == nil then a, b = 0, a end
   step = step or 1
   for i, v in ipairs{a, b, step} do
      if type(v) ~= 'number' then
         error(('arange: argument %d is a %s, expected a number'):format(i, type(v)), 2)
      end
   end
   local dtype = dtype_of('arange', opts)
   if opts == nil or opts.dtype == nil then
      dtype = (a == floor(a) and b == floor(b) and step == floor(step) and b ~= huge and b ~= -huge) and 1 or 0
   end
   local out = new()
   if C.fnn_arange_dtype(out, a, b, step, dtype) ~= 0 then fail() end
   return done(out)
end

function M.linspace(a, b, n, extra)
   if extra ~= nil then too_many('linspace', 4, extra, 'start, stop, count') end
   local out = new()
   if type(a) ~= 'number' or type(b) ~= 'number' or type(n) ~= 'number' then
      error('linspace: expected (start, stop, count) numbers', 2)
   end
   if C.fnn_linspace(out, a, b, n) ~= 0 then fail() end
   return done(out)
end

function M.eye(n, m, extra)
   if extra ~= nil then too_many('eye', 3, extra, 'n[, m]') end
   if type(n) ~= 'number' or n < 0 or (m ~= nil and (type(m) ~= 'number' or m < 0)) then
      error('eye: expected (n[, m]) non-negative sizes', 2)
   end
   local out = new()
   if C.fnn_eye(out, n, m or -1) ~= 0 then fail() end
   return done(out)
end

-- randperm(n): an int64 permutation of 1..n
function M.randperm(n, extra)
   if extra ~= nil then too_many('randperm', 2, extra, 'n') end
   local out = new()
   if type(n) ~= 'number' or n ~= floor(n) then error('randperm: expected a whole count, got ' .. show_value(n), 2) end
   if C.fnn_randperm(out, n) ~= 0 then fail() end
   return done(out)
end

function M.manual_seed(seed, extra)
   if extra ~= nil then too_many('manual_seed', 2, extra, 'seed') end
   if type(seed) ~= 'number' then error('manual_seed: expected a number', 2) end
   C.fnn_manual_seed(seed)
end

-- rand_like, randn_like: t's shape, drawn on t's device (cuRAND on a GPU)
local function like_random(op, cfn, lo, hi, cfn_on)
   return function(t, extra)
      if extra ~= nil then too_many(op, 2, extra, 't') end
      if not istype(T, t) then error(('%s: expected a tensor, got %s'):format(op, type(t)), 2) end
      local out = new()
      local rc
      if t.device_ == 0 then rc = cfn(out, t.ndim, t.shape_) else rc = cfn_on(out, t.device_, t.ndim, t.shape_, lo, hi) end
      if rc ~= 0 then fail() end
      return done(out)
   end
end
M.rand_like = like_random('rand_like', C.fnn_rand, 0, 1, C.fnn_uniform_on)
M.randn_like = like_random('randn_like', C.fnn_randn, 0, 1, C.fnn_normal_on)
-- zeros_like(t[, opts]), ones_like(t[, opts]), full_like(t, value[, opts]): t's shape, dtype and
-- device (PyTorch's), unless opts name another dtype or device
local function like_filled(op, fixed)
   local takes = fixed and 't[, opts]' or 't, value[, opts]'
   return function(t, a, b, extra)
      if fixed and b ~= nil then too_many(op, 3, b, takes) end
      if extra ~= nil then too_many(op, 4, extra, takes) end
      if not istype(T, t) then error(('%s: expected a tensor, got %s'):format(op, type(t)), 2) end
      local value, opts = fixed, a
      if fixed == nil then
         value, opts = a, b
         if type(value) ~= 'number' then error(('%s: value is a %s, expected a number'):format(op, type(value)), 2) end
      end
      if opts ~= nil and type(opts) ~= 'table' then
         error(('%s: options are a %s, expected a table such as {dtype = ..., device = ...}'):format(op, type(opts)), 2)
      end
      opts = creator_opts(op, opts, 2)
      local dtype = opts and opts.dtype ~= nil and dtype_of(op, opts) or t.dtype_
      local device = opts and opts.device ~= nil and device_id(op, opts) or t.device_
      return make_filled(op, t.ndim, t.shape_, value, dtype, device)
   end
end
M.zeros_like, M.ones_like, M.full_like = like_filled('zeros_like', 0), like_filled('ones_like', 1), like_filled('full_like')

-- fnn.tensor(nested_table) or fnn.tensor(flat_table, shape) or fnn.tensor(number)
local function nested_shape(data)
   local dims, cur = {}, data
   while type(cur) == 'table' do
      dims[#dims + 1] = #cur
      cur = cur[1]
   end
   return dims
end
M.nested_shape = nested_shape   -- fastnn.serve reads a decoded JSON array's shape with it

-- fnn.tensor(data[, shape][, {dtype = 'int64'}]); a tensor comes back as it is (converted to dtype
-- when one is named)
function M.tensor(data, shape, opts, extra)
   if is_opts(shape) then
      if opts ~= nil then too_many('tensor', 3, opts, 'data[, shape][, opts]') end
      shape, opts = nil, shape
   end
   if extra ~= nil then too_many('tensor', 4, extra, 'data[, shape][, opts]') end
   opts = creator_opts('tensor', opts, 2)
   local dtype = dtype_of('tensor', opts)
   if shape ~= nil and type(data) ~= 'table' then   -- a shape arranges a table's values: nothing else takes one
      error(('tensor: shape %s is for a flat table of values, not %s'):format(show_value(shape), describe(data)), 2)
   end
   if istype(T, data) then
      if opts == nil or opts.dtype == nil or data.dtype_ == dtype then return data end
      local out = new()
      if C.fnn_to_dtype(out, data, dtype) ~= 0 then fail() end
      return done(out)
   end
   local out = new()
   if type(data) == 'number' then   -- through the table path's C call, so a refusal names tensor
      if C.fnn_tensor_from_doubles_dtype(out, 0, shape_buf, ffi.new('double[1]', data), dtype) ~= 0 then fail() end
      return done(out)
   end
   if type(data) ~= 'table' then
      error(('tensor: expected a table of numbers, got a %s'):format(type(data)), 2)
   end
   local values, count = nil, 0
   local ndim, dims
   if shape ~= nil then
      ndim = parse_shape('tensor', false, shape)
      local want = 1
      for i = 0, ndim - 1 do want = want * tonumber(shape_buf[i]) end
      if #data ~= want then
         local sizes = {}   -- from shape_buf: the shape may have been given as one number
         for i = 0, ndim - 1 do sizes[i + 1] = tonumber(shape_buf[i]) end
         error(('tensor: %d values for shape %s (%d elements)'):format(#data, M.dims_str(sizes), want), 2)
      end
      values = ffi.new('double[?]', math.max(want, 1))
      for i = 1, want do
         local v = data[i]
         if type(v) ~= 'number' then
            error(('tensor: element %d is a %s, expected a number'):format(i, type(v)), 2)
         end
         values[i - 1] = v
      end
   else
      dims = nested_shape(data)
      ndim = #dims
      if ndim > 8 then error(('tensor: %d levels of nesting, at most 8 dims'):format(ndim), 2) end
      local total = 1
      for i = 1, ndim do total = total * dims[i] end
      values = ffi.new('double[?]', math.max(total, 1))
      local path = {}
      local function walk(t, level)
         if #t ~= dims[level] then
            error(('tensor: ragged nested table: row [%s] has %d elements, expected %d'):format(
               table.concat(path, ']['), #t, dims[level]), 0)
         end
         for i = 1, #t do
            path[level] = i
            local v = t[i]
            if level < ndim then
               if type(v) ~= 'table' then
                  error(('tensor: ragged nested table: element [%s] is a %s, expected a table of %d'):format(
                     table.concat(path, '][', 1, level), type(v), dims[level + 1]), 0)
               end
               walk(v, level + 1)
            else
               if type(v) ~= 'number' then
                  error(('tensor: element [%s] is a %s, expected a number'):format(
                     table.concat(path, '][', 1, level), type(v)), 0)
               end
               values[count] = v
               count = count + 1
            end
         end
         path[level] = nil
      end
      local ok, err = pcall(walk, data, 1)
      if not ok then error(err, 2) end
      for i = 1, ndim do shape_buf[i - 1] = dims[i] end
   end
   if C.fnn_tensor_from_doubles_dtype(out, ndim, shape_buf, values, dtype) ~= 0 then fail() end
   return done(out)
end

-- fnn.long(data[, shape]): an int64 tensor (Torch7's LongTensor) from a table, number or tensor
function M.long(data, shape, extra)
   if extra ~= nil then too_many('long', 3, extra, 'data[, shape]') end
   if istype(T, data) then
      if shape ~= nil then
         error(('long: shape %s is for a flat table of values, not %s'):format(show_value(shape), describe(data)), 2)
      end
      return data:long()
   end
   return M.tensor(data, shape, {dtype = 'int64'})
end

function M.dims_str(list)
   local parts = {}
   for i = 1, #list do parts[i] = tostring(list[i]) end
   return '[' .. table.concat(parts, ',') .. ']'
end

-- ---------------------------------------------------------------------------
-- inspection

local function check_usable(op, t)
   if not istype(T, t) then error(('%s: expected a tensor, got a %s'):format(op, type(t)), 3) end
   if t.freed ~= 0 then error(op .. ': tensor was freed', 3) end
end

-- (each takes t alone, or t and a dim: a further argument is refused)
function Tensor.dim(t, extra)
   if extra ~= nil then too_many('dim', 2, extra, 't') end
   return t.ndim
end
function Tensor.dtype(t, extra)
   if extra ~= nil then too_many('dtype', 2, extra, 't') end
   return DTYPE_NAME[t.dtype_] or 'unknown'
end
-- t:long() / t:float(): t converted (t itself when it has that dtype); to int64 refuses a value
-- that is not a whole number, naming it and its position
function Tensor.long(t, extra)
   if extra ~= nil then too_many('long', 2, extra, 't') end
   local out = new()
   if C.fnn_to_dtype(out, t, 1) ~= 0 then fail() end
   return done(out)
end
function Tensor.float(t, extra)
   if extra ~= nil then too_many('float', 2, extra, 't') end
   local out = new()
   if C.fnn_to_dtype(out, t, 0) ~= 0 then fail() end
   return done(out)
end
function Tensor.numel(t, extra)
   if extra ~= nil then too_many('numel', 2, extra, 't') end
   return tonumber(C.fnn_tensor_numel(t))
end
function Tensor.shape(t, extra)
   if extra ~= nil then too_many('shape', 2, extra, 't') end
   local s = {}
   for i = 0, t.ndim - 1 do s[i + 1] = tonumber(t.shape_[i]) end
   return s
end
function Tensor.size(t, d, extra)
   if extra ~= nil then too_many('size', 3, extra, 't[, dim]') end
   if d == nil then return t:shape() end
   return tonumber(t.shape_[cdim('size', t, d)])
end
function Tensor.stride(t, d, extra)
   if extra ~= nil then too_many('stride', 3, extra, 't[, dim]') end
   if d == nil then
      local s = {}
      for i = 0, t.ndim - 1 do s[i + 1] = tonumber(t.stride_[i]) end
      return s
   end
   return tonumber(t.stride_[cdim('stride', t, d)])
end
function Tensor.is_contiguous(t, extra)
   if extra ~= nil then too_many('is_contiguous', 2, extra, 't') end
   return C.fnn_tensor_is_contiguous(t) == 1
end
function Tensor.storage_id(t, extra)
   if extra ~= nil then too_many('storage_id', 2, extra, 't') end
   return tonumber(ffi.cast('intptr_t', C.fnn_tensor_storage_id(t)))
end
function Tensor.is_freed(t, extra)
   if extra ~= nil then too_many('is_freed', 2, extra, 't') end
   return t.freed ~= 0
end

local item_buf = ffi.new('double[1]')
function Tensor.item(t, extra)
   if extra ~= nil then too_many('item', 2, extra, 't') end
   if C.fnn_item(t, item_buf) ~= 0 then fail() end
   return item_buf[0]
end

-- values in row-major order as a flat double array (a temporary buffer; exact for int64 to 2^53)
local function flat_values(op, t)
   check_usable(op, t)
   local n = t:numel()
   local buf = ffi.new('double[?]', math.max(n, 1))
   if C.fnn_copy_to_doubles(t, buf, n) ~= 0 then fail() end
   return buf, n
end

function Tensor.to_table(t, extra)
   if extra ~= nil then too_many('to_table', 2, extra, 't') end
   local buf = flat_values('to_table', t)
   if t.ndim == 0 then return buf[0] end
   local pos = 0
   local function build(level)
      local r = {}
      local size = tonumber(t.shape_[level])
      for i = 1, size do
         if level == t.ndim - 1 then
            r[i] = buf[pos]; pos = pos + 1
         else
            r[i] = build(level + 1)
         end
      end
      return r
   end
   return build(0)
end

-- the values as a flat Lua array (row-major)
function Tensor.to_flat(t, extra)
   if extra ~= nil then too_many('to_flat', 2, extra, 't') end
   local buf, n = flat_values('to_flat', t)
   local r = {}
   for i = 1, n do r[i] = buf[i - 1] end
   return r
end

function Tensor.free(t, extra)
   if extra ~= nil then too_many('free', 2, extra, 't') end
   C.fnn_tensor_free(t)
end

function Tensor.device_name(t, extra)
   if extra ~= nil then too_many('device_name', 2, extra, 't') end
   local dev = t.device_
   if bit.rshift(dev, 8) == 0 then return 'cpu' end
   return 'cuda:' .. bit.band(dev, 255)
end

-- ---------------------------------------------------------------------------
-- printing, in the style of PyTorch (values) and Torch7 (a trailer with shape and device)

local function format_numbers(buf, n, int64)
   if int64 then return function(v) return ('%d'):format(v) end end
   local all_int, max_abs, min_abs = true, 0, huge
   for i = 0, n - 1 do
      local v = buf[i]
      if v == v and v ~= huge and v ~= -huge then
         if v ~= floor(v) then all_int = false end
         local a = math.abs(v)
         if a > max_abs then max_abs = a end
         if a > 0 and a < min_abs then min_abs = a end
      end
   end
   local fmt
   if all_int and max_abs < 1e8 then fmt = '%.0f.'
   elseif max_abs >= 1e5 or min_abs < 1e-4 then fmt = '%.4e'
   else fmt = '%.4f' end
   return function(v)
      if v ~= v then return 'nan' end
      if v == huge then return 'inf' end
      if v == -huge then return '-inf' end
      return (fmt:format(v))
   end
end

local EDGE = 3
function Tensor.__tostring(t)
   if not istype(T, t) then return tostring(t) end
   if t.freed ~= 0 then return '[fnn.Tensor (freed)]' end
   if t.ndim < 0 then return '[fnn.Tensor (empty)]' end
   local trailer = ('[fnn.Tensor of shape %s%s on %s%s]'):format(shape_str(t),
      t.dtype_ ~= 0 and (', ' .. t:dtype() .. ',') or '', t:device_name(),
      t.node ~= nil and (', grad_fn=' .. ffi_string(C.fnn_grad_fn_name(t))) or '')
   if t:device_name() ~= 'cpu' then return trailer end
   local buf, n = flat_values('tostring', t)
   local fmt = format_numbers(buf, n, t.dtype_ == 1)
   if t.ndim == 0 then return fmt(buf[0]) .. '\n' .. trailer end
   local summarize = n > 1000
   local strides, width = {}, 1
   local s = 1
   for d = t.ndim - 1, 0, -1 do strides[d] = s; s = s * tonumber(t.shape_[d]) end
   for i = 0, n - 1 do width = math.max(width, #fmt(buf[i])) end
   local function rec(level, base, indent)
      local size = tonumber(t.shape_[level])
      local items = {}
      local idx = {}
      if summarize and size > 2 * EDGE then
         for i = 0, EDGE - 1 do idx[#idx + 1] = i end
         idx[#idx + 1] = false
         for i = size - EDGE, size - 1 do idx[#idx + 1] = i end
      else
         for i = 0, size - 1 do idx[#idx + 1] = i end
      end
      for _, i in ipairs(idx) do
         if i == false then
            items[#items + 1] = '...'
         elseif level == t.ndim - 1 then
            local str = fmt(buf[base + i])
            items[#items + 1] = (' '):rep(width - #str) .. str
         else
            items[#items + 1] = rec(level + 1, base + i * strides[level], indent .. ' ')
         end
      end
      if level == t.ndim - 1 then return '[' .. table.concat(items, ', ') .. ']' end
      local sep = ',' .. ('\n'):rep(t.ndim - 1 - level) .. indent .. ' '
      return '[' .. table.concat(items, sep) .. ']'
   end
   return 'tensor(' .. rec(0, 0, '       ') .. ')\n' .. trailer
end

-- ---------------------------------------------------------------------------
-- the metatype: methods by name, t[i] indexes dim 1, #t is the size of dim 1

local get_index = ffi.new('int64_t[8]')
local mt = {}
M.mt = mt
mt.__index = function(t, k)
   local m = Tensor[k]
   if m ~= nil then return m end
   if type(k) == 'number' then
      if t.ndim == 0 then error('index: cannot index a 0-dim tensor; use :item()', 2) end
      local size = tonumber(t.shape_[0])
      if k ~= floor(k) or k < -size or k == 0 or k > size then
         error(('index: %s out of range 1..%d for %s'):format(tostring(k), size, shape_str(t)), 2)
      end
      if k < 0 then k = k + size + 1 end
      if t.ndim == 1 then
         get_index[0] = k - 1
         if C.fnn_get(t, get_index, item_buf) ~= 0 then fail() end
         return item_buf[0]
      end
      return t:select(1, k)
   end
   return nil
end
mt.__len = function(t)
   if t.ndim == 0 then error('#: a 0-dim tensor has no length; use :item()', 2) end
   return tonumber(t.shape_[0])
end
mt.__tostring = Tensor.__tostring
-- arithmetic operators (with numbers on either side); named methods are in ops/elementwise.lua
local function arith(name, tt, ts, st)
   local what = name .. ': expected a tensor or a number, got a '
   return function(a, b)
      local out = new()
      local rc
      if type(b) == 'number' then
         if not istype(T, a) then error(what .. type(a), 2) end
         rc = ts(out, a, b)
      elseif type(a) == 'number' then
         if not istype(T, b) then error(what .. type(b), 2) end
         rc = st(out, b, a)
      else
         if not istype(T, a) then error(what .. type(a), 2) end
         if not istype(T, b) then error(what .. type(b), 2) end
         rc = tt(out, a, b)
      end
      if rc ~= 0 then   -- the scalar kernels name themselves (mul_scalar for t / 2): name the operator
         error((ffi_string(C.fnn_last_error()):gsub('^r?%a+_scalar: ', name .. ': ', 1)), 2)
      end
      return done(out)
   end
end
-- the operators' functions, in a table the metamethods read at each call, so fastnn.precision can
-- wrap them after the metatype is made (a metatype's metatable must not change once it is set)
local operators = {
   add = arith('add', C.fnn_add, C.fnn_add_scalar, C.fnn_add_scalar),
   sub = arith('sub', C.fnn_sub, function(o, a, s) return C.fnn_add_scalar(o, a, -s) end, C.fnn_rsub_scalar),
   mul = arith('mul', C.fnn_mul, C.fnn_mul_scalar, C.fnn_mul_scalar),
   div = arith('div', C.fnn_div, function(o, a, s)
      if a.dtype_ ~= 0 then a = a:float() end   -- int64 / number is a true division, as PyTorch
      return C.fnn_mul_scalar(o, a, 1 / s)
   end, C.fnn_rdiv_scalar),
   pow = arith('pow', C.fnn_pow, C.fnn_pow_scalar, C.fnn_rpow_scalar),
   neg = function(a)
      local out = new()
      if C.fnn_neg(out, a) ~= 0 then fail() end
      return done(out)
   end,
}
M.operators = operators
mt.__add = function(a, b) return operators.add(a, b) end
mt.__sub = function(a, b) return operators.sub(a, b) end
mt.__mul = function(a, b) return operators.mul(a, b) end
mt.__div = function(a, b) return operators.div(a, b) end
mt.__pow = function(a, b) return operators.pow(a, b) end
mt.__unm = function(a) return operators.neg(a) end
-- the named forms, a:add(b) ... a:pow(b): the operators' functions (read at each call, as the
-- metamethods do) behind a refusal of a third argument, which PyTorch's add and sub read as alpha
-- and Torch7's add as a scale of the other operand: refused, not guessed. The metamethods keep
-- their direct calls (Lua passes them exactly two)
for _, name in ipairs{'add', 'sub', 'mul', 'div', 'pow'} do
   local hint = (name == 'add' or name == 'sub') and ('for a scaled operand write a %s alpha * b'):format(
      name == 'add' and '+' or '-') or nil
   Tensor[name] = function(a, b, extra)
      if extra ~= nil then too_many(name, 3, extra, 'a, b', 2, hint) end
      return operators[name](a, b)
   end
end
M.arith = arith
ffi.metatype(T, mt)

return M
