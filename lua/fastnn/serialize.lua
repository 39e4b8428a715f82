-- fastnn.serialize: checkpoints and safetensors exchange (also as fnn.save, fnn.load, ...).
--   fnn.save(model, 'm.fdl')                      weights and buffers by dotted name
--   fnn.load(model, 'm.fdl')                      refuses a missing, unexpected or mis-shaped tensor
--   fnn.load(model, 'm.fdl', {strict = false})    loads what matches, returns what it skipped
--   fnn.save_training(model, opt, step, 'run.fdl', {schedule = s, loader = l})
--   local step = fnn.load_training(model, opt, 'run.fdl', {schedule = s, loader = l})
--   fnn.save_safetensors(model_or_table, 'w.safetensors', {dtype = 'BF16'})
--   local tensors, metadata = fnn.load_safetensors('w.safetensors')
--   fnn.try_load(...), fnn.try_load_training(...), fnn.try_load_safetensors(...) -> nil, err
-- The container is read and written in C (core/io/serialize.c): a .fdl is a safetensors file whose
-- __metadata__ carries the kind, the format version, the step, the optimizer's non-tensor state
-- (JSON) and a CRC-32 of every tensor and of the header. docs/checkpoint-format.md has the layout.
-- Saves are atomic (temporary file, fsync, rename, fsync of the directory); a failed save raises
-- and leaves the earlier file. A load reads and checks everything before it changes anything.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local json = require 'fastnn.json'
local C = fnn_tensor.C
local new, done, is_tensor, shape_str = fnn_tensor.new, fnn_tensor.done, fnn_tensor.is_tensor, fnn_tensor.shape_str
local unpack = unpack or table.unpack

local M = {}
M.format_version = 1           -- what fdl.version this code writes and the newest it reads

local ST_CODE = {F32 = 0, I64 = 1, F16 = 2, BF16 = 3, F64 = 4, I32 = 5,
                 float32 = 0, float16 = 2, bfloat16 = 3}
local MAX_LISTED = 8           -- names per category in a mismatch message

-- every error below is raised with level 0 inside the implementation; public() re-raises it at
-- the caller's line
local function raise(msg) error(msg, 0) end
local function last_error() return ffi.string(C.fnn_last_error()) end

local public = require 'fastnn.public'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped

-- the options of each function, declared once (docs/options.md); each reads only what check returns
local options = require 'fastnn.options'
local E = {
   dtype = {'dtype', 'string', 'F32', "the float type written: 'F32', 'F16' or 'BF16'"},
   metadata = {'metadata', 'table', nil, 'string keys and string (or number) values stored in the header'},
   strict = {'strict', 'boolean', true, 'refuse a missing, unexpected or mis-shaped tensor (false: load what matches '
             .. 'and return {loaded, skipped, missing, unexpected, mismatched})'},
   schedule = {'schedule', 'any', nil, 'a schedule whose state is saved (or restored) too'},
   loader = {'loader', 'any', nil, 'a DataLoader whose position and stream are saved (or restored) too'},
   checksums = {'checksums', 'boolean', true, "store fastnn's CRC-32s and version in the header (false: a plain file)"},
   names = {'names', 'string', 'fastnn', "'fastnn' (Sequential children from 1) or 'torch' (PyTorch's state_dict "
            .. 'names: children from 0)', values = {'fastnn', 'torch'}},
   rename = {'rename', 'table|function', nil, "our name (after `names`) -> the file's: a table, or a function "
             .. 'returning the new name (nil keeps it)'},
   keep = {'dtype', 'string', 'float32', "the file's BF16 tensors as 'float32' (widened) or 'keep' (bfloat16 "
           .. 'tensors, loading into a table only; F16 always widens)', values = {'float32', 'keep'}},
}
local DECL = {}
for op, keys in pairs{save = {'dtype', 'metadata'}, load = {'strict'},
                      save_training = {'dtype', 'metadata', 'schedule', 'loader'},
                      load_training = {'schedule', 'loader'},
                      save_safetensors = {'dtype', 'metadata', 'checksums', 'names', 'rename'},
                      load_safetensors = {'strict', 'names', 'rename', 'keep'}} do
   local list = {}
   for i, k in ipairs(keys) do list[i] = E[k] end
   DECL[op] = options.declare('fnn.' .. op, list)
end

local function check_opts(op, opts)
   local msg, o = DECL[op]:try(opts)
   if msg then raise(msg) end
   return o
end

-- PyTorch's name of one of ours: a container's children count from 0 there (Sequential, ModuleList)
local function torch_name(name)
   return (name:gsub('%f[^.%z](%d+)%f[.%z]', function(d) return tostring(tonumber(d) - 1) end))
end

-- each entry's name in the file (en.file), by opts.names and opts.rename; two entries may not share one
local function file_names(op, entries, opts)
   local used, rename = {}, opts.rename
   for _, en in ipairs(entries) do
      local n = en.name
      if opts.names == 'torch' then n = torch_name(n) end
      if type(rename) == 'table' then
         local r = rename[n]
         if r ~= nil and type(r) ~= 'string' then
            raise(('%s: rename[%s] is %s, expected a name'):format(op, n, options.describe(r)))
         end
         n = r or n
      elseif rename ~= nil then
         local r = rename(n)
         if r ~= nil and type(r) ~= 'string' then
            raise(('%s: rename(%s) returned %s, expected a name or nil'):format(op, n, options.describe(r)))
         end
         n = r or n
      end
      if used[n] then raise(('%s: %s and %s would both be named %s in the file'):format(op, used[n], en.name, n)) end
      used[n] = en.name
      en.file = n
   end
   return entries
end

local function check_path(op, path)
   if type(path) ~= 'string' or path == '' then
      raise(('%s: path is a %s, expected a file name'):format(op, type(path) == 'string' and 'empty string' or type(path)))
   end
end

local function is_module(m)
   return type(m) == 'table' and type(m.named_parameters) == 'function'
end

-- {name, param = p} and {name, buffer = t} entries of a module, parameters first
local function model_entries(op, model)
   if not is_module(model) then raise(('%s: expected a module, got a %s'):format(op, type(model))) end
   local list = {}
   for _, pair in ipairs(model:named_parameters()) do list[#list + 1] = {name = pair[1], param = pair[2]} end
   if type(model.named_buffers) == 'function' then
      for _, pair in ipairs(model:named_buffers()) do
         if not is_tensor(pair[2]) then
            raise(('%s: buffer %s is a %s, expected a tensor'):format(op, pair[1], type(pair[2])))
         end
         list[#list + 1] = {name = pair[1], buffer = pair[2]}
      end
   end
   return list
end

local function current(e)
   if e.param then return e.param:tensor():detach() end
   return e.buffer
end

-- user metadata: a table of string keys and string (or number) values, fdl. keys are ours
local function user_metadata(op, meta, out)
   if meta == nil then return out end
   if type(meta) ~= 'table' then raise(('%s: metadata must be a table of strings, got a %s'):format(op, type(meta))) end
   local keys = {}
   for k, v in pairs(meta) do
      if type(k) ~= 'string' or (type(v) ~= 'string' and type(v) ~= 'number') then
         raise(('%s: metadata %s = %s: keys and values must be strings'):format(op, tostring(k), tostring(v)))
      end
      if k:sub(1, 4) == 'fdl.' then raise(('%s: metadata key %s: keys starting with fdl. are fastnn\'s'):format(op, k)) end
      keys[#keys + 1] = k
   end
   table.sort(keys)
   for _, k in ipairs(keys) do out[#out + 1] = {k, tostring(meta[k])} end
   return out
end

-- one C call writes the file (atomically)
local function write(op, path, names, tensors, meta, float_dtype, checksums)
   local n, nm = #names, #meta
   local cn = ffi.new('const char *[?]', math.max(n, 1))
   local ct = ffi.new('const fnn_tensor *[?]', math.max(n, 1))
   for i = 1, n do
      cn[i - 1] = names[i]
      ct[i - 1] = tensors[i]
   end
   local ck = ffi.new('const char *[?]', math.max(nm, 1))
   local cv = ffi.new('const char *[?]', math.max(nm, 1))
   for i = 1, nm do
      ck[i - 1] = meta[i][1]
      cv[i - 1] = meta[i][2]
   end
   if C.fnn_safetensors_save(path, n, cn, ct, nm, ck, cv, float_dtype, checksums and 1 or 0) ~= 0 then
      raise(op .. ': ' .. last_error())
   end
   -- names, tensors and meta keep the strings and headers alive through the call
   return names, tensors, meta
end

-- ---------------------------------------------------------------------------
-- reading: an opened, validated file

local int1, int2, shape8 = ffi.new('int[1]'), ffi.new('int[1]'), ffi.new('int64_t[8]')

local function open(op, path)
   check_path(op, path)
   local pp = ffi.new('fnn_safetensors *[1]')
   if C.fnn_safetensors_open(pp, path) ~= 0 then raise(op .. ': ' .. last_error()) end
   local h = ffi.gc(pp[0], C.fnn_safetensors_close)
   local f = {handle = h, path = path, entries = {}, by_name = {}, meta = {}, meta_keys = {},
              checksummed = C.fnn_safetensors_checksummed(h) == 1}
   for i = 0, C.fnn_safetensors_count(h) - 1 do
      C.fnn_safetensors_info(h, i, int1, int2, shape8)
      local shape = {}
      for d = 0, int2[0] - 1 do shape[d + 1] = tonumber(shape8[d]) end
      local st = int1[0]
      local e = {index = i, name = ffi.string(C.fnn_safetensors_name(h, i)), st = st,
                 st_name = ffi.string(C.fnn_st_dtype_name(st)), shape = shape,
                 shape_s = '[' .. table.concat(shape, ',') .. ']',
                 dtype = (st == 1 or st == 5) and 'int64' or 'float32'}
      f.entries[#f.entries + 1] = e
      f.by_name[e.name] = e
   end
   for i = 0, C.fnn_safetensors_meta_count(h) - 1 do
      local k = ffi.string(C.fnn_safetensors_meta_key(h, i))
      f.meta[k] = ffi.string(C.fnn_safetensors_meta_value(h, i))
      f.meta_keys[#f.meta_keys + 1] = k
   end
   return f
end

local function close(f)
   if f.handle ~= nil then
      C.fnn_safetensors_close(ffi.gc(f.handle, nil))
      f.handle = nil
   end
end

-- fn(f) with the file open; closed on every path
local function with_file(op, path, fn)
   local f = open(op, path)
   local r = {pcall(fn, f)}
   close(f)
   if not r[1] then error(r[2], 0) end
   return unpack(r, 2, table.maxn(r))
end

local function read(op, f, e, keep)
   local out = new()
   local rc = keep and C.fnn_safetensors_read_kept(out, f.handle, e.index) or C.fnn_safetensors_read(out, f.handle, e.index)
   if rc ~= 0 then raise(op .. ': ' .. last_error()) end
   return done(out)
end

local function verify(op, f, e)
   if C.fnn_safetensors_verify(f.handle, e.index) ~= 0 then raise(op .. ': ' .. last_error()) end
end

local function check_version(op, f)
   local v = f.meta['fdl.version']
   if v == nil then return end
   local n = tonumber(v)
   if not n or n ~= math.floor(n) or n < 1 then
      raise(('%s: %s: fdl.version is "%s", expected a whole number'):format(op, f.path, v))
   end
   if n > M.format_version then
      raise(('%s: %s has checkpoint format version %d; this fastnn reads versions up to %d'):format(
         op, f.path, n, M.format_version))
   end
end

-- the training state in a training file's header, with the names of the tensors it refers to
local function training_state(op, f)
   local text = f.meta['fdl.training']
   if text == nil then raise(('%s: %s: a training checkpoint without fdl.training metadata'):format(op, f.path)) end
   local ok, st = pcall(json.decode, text)
   if not ok or type(st) ~= 'table' then
      raise(('%s: %s: the training state in its header is not valid: %s'):format(op, f.path,
            ok and 'not a JSON object' or tostring(st)))
   end
   local refs = {}
   local function walk(v)
      if type(v) ~= 'table' then return end
      local name = v['$tensor']
      if name ~= nil then
         if type(name) ~= 'string' or not f.by_name[name] then
            raise(('%s: %s: the training state refers to tensor %s, which the file lacks'):format(
               op, f.path, tostring(name)))
         end
         refs[name] = true
         return
      end
      for _, x in pairs(v) do walk(x) end
   end
   walk(st)
   return st, refs
end

-- ---------------------------------------------------------------------------
-- matching a file to a model (nothing changes here)

local function list_of(names)
   local shown = {}
   for i = 1, math.min(#names, MAX_LISTED) do shown[i] = names[i] end
   local s = table.concat(shown, ', ')
   if #names > MAX_LISTED then s = s .. (', and %d more'):format(#names - MAX_LISTED) end
   return s
end

-- the plan: {entry, file entry} pairs to load; the report: what does not match
local function match(op, f, entries, skip, strict)
   -- names are the file's (en.file when names or rename changed them); loaded and skipped say what
   -- a {strict = false} load did: skipped = unexpected and mismatched tensors of the file
   local report = {missing = {}, unexpected = {}, mismatched = {}, loaded = {}, skipped = {}}
   local plan, seen = {}, {}
   for _, en in ipairs(entries) do
      local name = en.file or en.name
      local fe = not skip[name] and f.by_name[name] or nil
      if fe == nil then
         report.missing[#report.missing + 1] = name
      else
         seen[name] = true
         local cur = current(en)
         local want, got = shape_str(cur), fe.shape_s
         if want ~= got or fe.dtype ~= cur:dtype() then
            report.mismatched[#report.mismatched + 1] = ('%s is %s %s in the file, %s %s in the model'):format(
               name, fe.st_name, got, cur:dtype(), want)
            report.skipped[#report.skipped + 1] = name
         else
            plan[#plan + 1] = {entry = en, file = fe, current = cur}
            report.loaded[#report.loaded + 1] = name
         end
      end
   end
   for _, fe in ipairs(f.entries) do
      if not skip[fe.name] and not seen[fe.name] then
         report.unexpected[#report.unexpected + 1] = fe.name
         report.skipped[#report.skipped + 1] = fe.name
      end
   end
   if strict and (#report.missing > 0 or #report.unexpected > 0 or #report.mismatched > 0) then
      local parts = {}
      if #report.missing > 0 then parts[#parts + 1] = 'missing ' .. list_of(report.missing) end
      if #report.unexpected > 0 then parts[#parts + 1] = 'unexpected ' .. list_of(report.unexpected) end
      if #report.mismatched > 0 then parts[#parts + 1] = list_of(report.mismatched) end
      raise(('%s: %s does not match the model: %s (nothing was loaded; {strict = false} loads what matches)'):format(
         op, f.path, table.concat(parts, '; ')))
   end
   return plan, report
end

-- t on device (a device id), a copy when it is elsewhere
local function on_device(t, device)
   if t.device_ == device then return t end
   local out = new()
   if C.fnn_to_device(out, t, device) ~= 0 then raise(last_error()) end
   return done(out)
end

-- read the plan's tensors and check every other tensor's CRC, then (all checks passed) set them
local function read_plan(op, f, plan, also_read)
   local wanted = {}
   for _, item in ipairs(plan) do wanted[item.file.name] = true end
   for name in pairs(also_read or {}) do wanted[name] = true end
   local values = {}
   for _, fe in ipairs(f.entries) do
      if wanted[fe.name] then values[fe.name] = read(op, f, fe) else verify(op, f, fe) end
   end
   for _, item in ipairs(plan) do
      item.value = on_device(values[item.file.name], item.current.device_)
   end
   return values
end

local function apply_plan(model, plan)
   for _, item in ipairs(plan) do
      local en = item.entry
      if en.param then en.param:set(item.value) else model:set_buffer(en.name, item.value) end
   end
end

-- ---------------------------------------------------------------------------
-- weights

local function entries_to_lists(op, entries)
   local names, tensors = {}, {}
   for i, en in ipairs(entries) do
      names[i] = en.file or en.name
      tensors[i] = current(en)
   end
   return names, tensors
end

local function float_dtype(op, opts)
   local d = opts.dtype or 'F32'
   local code = ST_CODE[d]
   if code == nil or code == 1 or code > 3 then
      raise(("%s: dtype is %s, expected 'F32', 'F16' or 'BF16'"):format(op, show_value(d)))
   end
   return code
end

local function save_impl(model, path, opts, extra)
   if extra ~= nil then too_many('save', 4, extra, 'model, path, opts') end
   local op = 'save'
   opts = check_opts(op, opts)
   check_path(op, path)
   local names, tensors = entries_to_lists(op, model_entries(op, model))
   local meta = user_metadata(op, opts.metadata, {{'fdl.version', tostring(M.format_version)}, {'fdl.kind', 'weights'}})
   write(op, path, names, tensors, meta, float_dtype(op, opts), true)
end

local function load_into(op, model, path, opts)
   opts = check_opts(op, opts)
   if op == 'load_safetensors' and opts.dtype ~= 'float32' then
      raise(op .. ": dtype 'keep' applies to a load into a table (load_safetensors(path, {dtype = 'keep'})); a "
            .. "model's tensors are float32")
   end
   local entries = model_entries(op, model)
   if op == 'load_safetensors' then file_names(op, entries, opts) end
   return with_file(op, path, function(f)
      check_version(op, f)
      local kind, skip = f.meta['fdl.kind'], {}
      if kind == 'training' then
         local _, refs = training_state(op, f)
         skip = refs
      elseif kind ~= nil and kind ~= 'weights' and kind ~= 'tensors' then
         raise(('%s: %s is a "%s" file, not weights'):format(op, path, kind))
      end
      local plan, report = match(op, f, entries, skip, opts.strict ~= false)
      read_plan(op, f, plan)
      apply_plan(model, plan)
      return report
   end)
end

local function load_impl(model, path, opts, extra)
   if extra ~= nil then too_many('load', 4, extra, 'model, path, opts') end
   return load_into('load', model, path, opts)
end

-- ---------------------------------------------------------------------------
-- training state: the optimizer's state() with its tensors stored as tensors and the rest as JSON

-- a copy of v with each tensor replaced by {["$tensor"] = name}, the tensors appended to names/tensors
local function split_tensors(op, v, path, names, tensors, depth)
   if is_tensor(v) then
      names[#names + 1] = path
      tensors[#tensors + 1] = v
      return {['$tensor'] = path}
   end
   local t = type(v)
   if t == 'number' or t == 'string' or t == 'boolean' or v == nil then return v end
   if t ~= 'table' then raise(('%s: %s is a %s, which a checkpoint cannot hold'):format(op, path, t)) end
   if depth > 32 then raise(('%s: %s nests too deep (a cycle?)'):format(op, path)) end
   local out, keys = {}, {}
   for k in pairs(v) do
      if type(k) ~= 'string' and type(k) ~= 'number' then
         raise(('%s: %s has a %s key'):format(op, path, type(k)))
      end
      keys[#keys + 1] = k
   end
   -- a fixed order (numbers, then names), so equal states give equal files
   table.sort(keys, function(a, b)
      if type(a) ~= type(b) then return type(a) == 'number' end
      return a < b
   end)
   for _, k in ipairs(keys) do
      out[k] = split_tensors(op, v[k], path .. '.' .. tostring(k), names, tensors, depth + 1)
   end
   return out
end

-- the inverse, with the tensors read from the file and placed on device
local function join_tensors(v, values, device)
   if type(v) ~= 'table' then return v end
   if v['$tensor'] ~= nil then return on_device(values[v['$tensor']], device) end
   local out = {}
   for k, x in pairs(v) do out[k] = join_tensors(x, values, device) end
   return out
end

-- plain fields of a schedule object (its position and counters), or its own state()
local function schedule_state(op, s)
   if type(s) ~= 'table' then raise(('%s: schedule is a %s, expected a schedule object'):format(op, type(s))) end
   if type(s.state) == 'function' then return {state = s:state()} end
   local fields = {}
   for k, v in pairs(s) do
      local t = type(v)
      if type(k) == 'string' and (t == 'number' or t == 'string' or t == 'boolean') then fields[k] = v end
   end
   return {fields = fields}
end

local function u64_string(v) return (tostring(v):gsub('ULL$', '')) end
local function u64_of(s)
   local v = ffi.new('uint64_t', 0)
   for d in s:gmatch('%d') do v = v * 10 + tonumber(d) end
   return v
end

-- a loader's position: its own state() when it has one; else its random stream, which fixes the
-- order of every following epoch of a seeded loader
-- fastnn's random stream of this thread (dropout masks, init, unseeded shuffles): saved so a
-- resumed run draws what the uninterrupted one would have
local rng_words = ffi.new('uint64_t[6]')
local function random_state()
   C.fnn_random_get_state(rng_words)
   local words = {}
   for i = 0, 5 do words[i + 1] = u64_string(rng_words[i]) end
   return words
end
local function check_random_state(op, path, words)
   if type(words) ~= 'table' or #words ~= 6 then raise(('%s: %s: its random state is not 6 words'):format(op, path)) end
   for i = 1, 6 do
      if type(words[i]) ~= 'string' or not words[i]:match('^%d+$') then
         raise(('%s: %s: word %d of its random state is not a decimal number'):format(op, path, i))
      end
      if #words[i] > 20 or (#words[i] == 20 and words[i] > '18446744073709551615') then
         raise(('%s: %s: word %d of its random state is past 2^64'):format(op, path, i))
      end
   end
   -- what fnn_random_set_state accepts, checked now: it runs after the model has been changed
   local w = {}
   for i = 1, 6 do w[i] = u64_of(words[i]) end
   if (w[1] == 0 and w[2] == 0 and w[3] == 0 and w[4] == 0) or w[5] > 1 or w[6] > 0xffffffff then
      raise(('%s: %s: its random state is not one fastnn writes (all-zero words or bad flags)'):format(op, path))
   end
end
local function restore_random_state(words)
   for i = 1, 6 do rng_words[i - 1] = u64_of(words[i]) end
   if C.fnn_random_set_state(rng_words) ~= 0 then raise(ffi.string(C.fnn_last_error())) end
end

local function loader_state(op, l)
   if type(l) ~= 'table' then raise(('%s: loader is a %s, expected a DataLoader'):format(op, type(l))) end
   if type(l.state) == 'function' then return {state = l:state()} end
   local rng = rawget(l, '_rng')
   return {rng = rng ~= nil and u64_string(rng[0]) or false}
end

local function check_step(op, step)
   if type(step) ~= 'number' or step ~= math.floor(step) or step < 0 or step >= 2^53 then
      raise(('%s: step is %s, expected a whole number >= 0'):format(op, show_value(step)))
   end
end

local function check_optimizer(op, opt)
   if type(opt) ~= 'table' or type(opt.state) ~= 'function' or type(opt.load_state) ~= 'function' then
      raise(('%s: expected an optimizer (with state() and load_state()), got a %s'):format(op, type(opt)))
   end
end

local function save_training_impl(model, opt, step, path, opts, extra)
   if extra ~= nil then too_many('save_training', 6, extra, 'model, opt, step, path, opts') end
   local op = 'save_training'
   opts = check_opts(op, opts)
   check_optimizer(op, opt)
   check_step(op, step)
   check_path(op, path)
   local names, tensors = entries_to_lists(op, model_entries(op, model))
   local st = opt:state()
   local state = {optimizer = split_tensors(op, st, 'optim', names, tensors, 0), random = random_state()}
   if opts.schedule ~= nil then state.schedule = schedule_state(op, opts.schedule) end
   if opts.loader ~= nil then state.loader = loader_state(op, opts.loader) end
   local ok, text = pcall(json.encode, state)
   if not ok then raise(op .. ': the optimizer state cannot be saved: ' .. tostring(text)) end
   local meta = user_metadata(op, opts.metadata, {
      {'fdl.version', tostring(M.format_version)}, {'fdl.kind', 'training'}, {'fdl.step', ('%d'):format(step)},
      {'fdl.optimizer', tostring(st.optimizer or '?')}, {'fdl.training', text}})
   write(op, path, names, tensors, meta, float_dtype(op, opts), true)
end

local function strip_position(msg)
   return (tostring(msg):gsub('^[^:\n]+:%d+: ', ''))
end

local function load_training_impl(model, opt, path, opts, extra)
   if extra ~= nil then too_many('load_training', 5, extra, 'model, opt, path, opts') end
   local op = 'load_training'
   opts = check_opts(op, opts)
   check_optimizer(op, opt)
   local entries = model_entries(op, model)
   return with_file(op, path, function(f)
      local kind = f.meta['fdl.kind']
      if kind ~= 'training' then
         if kind == 'weights' then
            raise(('%s: %s is a weights file (written by fnn.save): it holds no optimizer state, so resuming '
                   .. 'from it would silently reset the optimizer; load weights with fnn.load'):format(op, path))
         end
         raise(('%s: %s is %s, not a training checkpoint (written by fnn.save_training): it holds no optimizer '
                .. 'state'):format(op, path, kind and ('a "' .. kind .. '" file') or 'a plain safetensors file'))
      end
      check_version(op, f)
      local state, refs = training_state(op, f)
      local step = tonumber(f.meta['fdl.step'])
      if not step or step ~= math.floor(step) or step < 0 then
         raise(('%s: %s: fdl.step is %s, expected a whole number'):format(op, path, show_value(f.meta['fdl.step'])))
      end
      local saved = state.optimizer
      local mine = opt:state()
      if type(saved) ~= 'table' then raise(('%s: %s holds no optimizer state'):format(op, path)) end
      if saved.optimizer ~= mine.optimizer then
         raise(('%s: %s holds the state of optim.%s, the optimizer given is optim.%s'):format(
            op, path, tostring(saved.optimizer), tostring(mine.optimizer)))
      end
      if opts.schedule ~= nil and state.schedule == nil then
         raise(('%s: %s holds no schedule state (it was saved without {schedule = ...})'):format(op, path))
      end
      if opts.loader ~= nil and state.loader == nil then
         raise(('%s: %s holds no loader state (it was saved without {loader = ...})'):format(op, path))
      end
      if state.random ~= nil then check_random_state(op, path, state.random) end
      local plan = match(op, f, entries, refs, true)
      local values = read_plan(op, f, plan, refs)
      local device = #plan > 0 and plan[1].current.device_ or 0
      local opt_state = join_tensors(saved, values, device)

      -- all read and checked: now change things, optimizer first (it may still refuse)
      local ok, err = pcall(opt.load_state, opt, opt_state)
      if not ok then raise(op .. ': ' .. strip_position(err)) end
      if opts.loader ~= nil then
         local l, ls = opts.loader, state.loader
         if type(ls.state) == 'table' and type(l.load_state) == 'function' then
            ok, err = pcall(l.load_state, l, ls.state)
            if not ok then
               opt:load_state(mine)   -- put the optimizer back
               raise(op .. ': ' .. strip_position(err))
            end
         elseif ls.rng then
            rawset(l, '_rng', ffi.new('uint64_t[1]', u64_of(ls.rng)))
         end
      end
      if opts.schedule ~= nil then
         local s, ss = opts.schedule, state.schedule
         if type(ss.state) == 'table' and type(s.load_state) == 'function' then s:load_state(ss.state)
         elseif type(ss.fields) == 'table' then
            for k, v in pairs(ss.fields) do if type(rawget(s, k)) == type(v) then rawset(s, k, v) end end
         end
      end
      apply_plan(model, plan)
      if state.random ~= nil then restore_random_state(state.random) end
      return step
   end)
end

-- ---------------------------------------------------------------------------
-- safetensors exchange

local function save_safetensors_impl(obj, path, opts, extra)
   if extra ~= nil then too_many('save_safetensors', 4, extra, 'obj, path, opts') end
   local op = 'save_safetensors'
   opts = check_opts(op, opts)
   check_path(op, path)
   local names, tensors = {}, {}
   if is_module(obj) then
      names, tensors = entries_to_lists(op, file_names(op, model_entries(op, obj), opts))
   elseif type(obj) == 'table' then
      if opts.names ~= 'fastnn' or opts.rename ~= nil then
         raise(('%s: names and rename apply to a module; a table of tensors is written under its own names'):format(op))
      end
      if #obj > 0 then        -- {{name, tensor}, ...} in this order
         for i, pair in ipairs(obj) do
            if type(pair) ~= 'table' or type(pair[1]) ~= 'string' or not is_tensor(pair[2]) then
               raise(('%s: element %d is not a {name, tensor} pair'):format(op, i))
            end
            names[i], tensors[i] = pair[1], pair[2]
         end
      else                    -- {name = tensor}, written in name order
         for k, v in pairs(obj) do
            if type(k) ~= 'string' or not is_tensor(v) then
               raise(('%s: %s = %s: expected name = tensor entries'):format(op, show_value(k), type(v)))
            end
            names[#names + 1] = k
         end
         table.sort(names)
         for i, k in ipairs(names) do tensors[i] = obj[k] end
      end
   else
      raise(('%s: expected a module or a table of tensors, got a %s'):format(op, type(obj)))
   end
   local checksums = opts.checksums ~= false
   local meta = checksums and {{'fdl.version', tostring(M.format_version)}, {'fdl.kind', 'tensors'}} or {}
   write(op, path, names, tensors, user_metadata(op, opts.metadata, meta), float_dtype(op, opts), checksums)
end

-- load_safetensors(path[, {dtype = 'keep'}]) -> {name = tensor}, metadata; load_safetensors(model, path, opts)
-- loads by name (into the model's float32 tensors: a BF16 file widens)
local function load_safetensors_impl(a, b, c, extra)
   local op = 'load_safetensors'
   if is_module(a) then
      if extra ~= nil then too_many(op, 4, extra, 'model, path, opts') end
      return load_into(op, a, b, c)
   end
   if c ~= nil then too_many(op, 3, c, 'path, opts') end
   local opts = check_opts(op, b)
   return with_file(op, a, function(f)
      check_version(op, f)
      local out = {}
      for _, fe in ipairs(f.entries) do out[fe.name] = read(op, f, fe, opts.dtype == 'keep') end
      local meta = {}
      for k, v in pairs(f.meta) do meta[k] = v end
      return out, meta
   end)
end

-- info(path): what a file holds, without reading the data:
-- {tensors = {{name =, dtype = 'F16', shape = {..}}, ...} (file order), metadata = {..}, checksummed = bool}
local function info_impl(path, extra)
   if extra ~= nil then too_many('info', 2, extra, 'path') end
   return with_file('info', path, function(f)
      local list = {}
      for i, fe in ipairs(f.entries) do list[i] = {name = fe.name, dtype = fe.st_name, shape = fe.shape} end
      local meta = {}
      for k, v in pairs(f.meta) do meta[k] = v end
      return {tensors = list, metadata = meta, checksummed = f.checksummed}
   end)
end

-- in distributed mode (fastnn.distributed initialized with several ranks) rank 0 writes and
-- every rank then waits at a barrier, so a load that follows sees the file on every rank
local function on_main(impl)
   return function(...)
      local dist = package.loaded['fastnn.distributed']
      if dist and dist.is_initialized() then return dist._on_main(impl, ...) end
      return impl(...)
   end
end
M.save = public(on_main(save_impl))
M.load = public(load_impl)
M.save_training = public(on_main(save_training_impl))
M.load_training = public(load_training_impl)
M.save_safetensors = public(save_safetensors_impl)
M.load_safetensors = public(load_safetensors_impl)
M.info = public(info_impl)
for _, name in ipairs{'load', 'load_training', 'load_safetensors', 'info'} do
   local f = M[name]
   M['try_' .. name] = function(...)
      local r = {pcall(f, ...)}
      if r[1] then return unpack(r, 2, table.maxn(r)) end
      return nil, strip_position(r[2])
   end
end

package.loaded['fastnn.serialize'] = M
return M
