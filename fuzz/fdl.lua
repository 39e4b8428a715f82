-- fuzz/fdl.lua: the driver of fuzz_fdl (see fdl.c). A model and its Adam optimizer (one step
-- taken) are saved once with fnn.save_training; each input edits that checkpoint's metadata and
-- tensors, the core writes the result as a valid .fdl, and fnn.load_training reads it back into
-- the model. Contract: it returns a step, or raises a string error at the caller's line naming
-- load_training, and then the model and the optimizer are exactly as before (nothing half-loaded).
-- fnn.load (weights) gets the same file and the same check.
local ffi = require 'ffi'
local fnn = require 'fastnn'
rawset(_G, 'FUZZ_EMPTY_CACHE', fnn.empty_cache)
local C = require 'fastnn.C'

fnn.manual_seed(7)
local model = fnn.nn.Sequential(fnn.nn.Linear(3, 2), fnn.nn.ReLU(), fnn.nn.Linear(2, 1))
local opt = fnn.optim.Adam(model:parameters(), {lr = 1e-3})
model:forward(fnn.randn(4, 3)):sum():backward()
opt:step()
local path = os.tmpname()
fnn.save_training(model, opt, 3, path)
local base_tensors, base_meta = fnn.load_safetensors(path)
os.remove(path)   -- each input writes it again and removes it (no files left behind)

-- everything a failed load must leave as it was, as text
local function dump(v, seen)
   seen = seen or {}
   if fnn.is_tensor(v) then return v:shape_str() .. table.concat(v:to_flat(), ',') end
   if type(v) ~= 'table' then return tostring(v) end
   if seen[v] then return '<cycle>' end
   seen[v] = true
   local keys = {}
   for k in pairs(v) do keys[#keys + 1] = k end
   table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
   local parts = {}
   for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. '=' .. dump(v[k], seen) end
   return '{' .. table.concat(parts, ';') .. '}'
end
local function snapshot()
   local w = {}
   for i, p in ipairs(model:parameters()) do w[i] = p:tensor() end
   return dump(w) .. '|' .. dump(opt:state()) .. '|' .. dump(opt.groups)
end

local function user_call(f, ...)
   local r = f(...)
   return r
end
local USER = ('%s:%d: '):format(debug.getinfo(1, 'S').short_src, debug.getinfo(user_call, 'S').linedefined + 1)

local function write(meta, tensors)
   local names, list = {}, {}
   for k in pairs(tensors) do names[#names + 1] = k end
   table.sort(names)
   local keys = {}
   for k in pairs(meta) do keys[#keys + 1] = k end
   table.sort(keys)
   local cn, ct = ffi.new('const char *[?]', #names + 1), ffi.new('const fnn_tensor *[?]', #names + 1)
   for i, k in ipairs(names) do cn[i - 1], ct[i - 1], list[i] = k, tensors[k], tensors[k] end
   local ck, cv = ffi.new('const char *[?]', #keys + 1), ffi.new('const char *[?]', #keys + 1)
   for i, k in ipairs(keys) do ck[i - 1], cv[i - 1] = k, meta[k] end
   return C.fnn_safetensors_save(path, #names, cn, ct, #keys, ck, cv, 0, 1) == 0
end

local function check(op, ok, r, before)
   if ok then return true end
   local prefix = USER .. op .. ': '
   if type(r) ~= 'string' or r:sub(1, #prefix) ~= prefix then
      return false, ('an error that is not "%s...": %s'):format(prefix, tostring(r))
   end
   local after = snapshot()
   if after ~= before then return false, op .. ' failed but changed the model or optimizer: ' .. r end
   return true
end

local function load_both()
   -- a training step first: the live state then differs from the file's (so a half-done load
   -- shows), and a state loaded earlier must still be one the optimizer can step with
   local ok_step, err_step = pcall(function()
      opt:zero_grad()
      model:forward(fnn.randn(4, 3)):sum():backward()
      opt:step()
   end)
   if not ok_step then return false, 'a training step after an earlier load failed: ' .. tostring(err_step) end
   local before = snapshot()
   local ok, r = pcall(user_call, fnn.load_training, model, opt, path)
   local good, why = check('load_training', ok, r, before)
   if not good then return false, why end
   if ok and type(r) ~= 'number' then return false, 'load_training returned a ' .. type(r) end
   before = snapshot()
   ok, r = pcall(user_call, fnn.load, model, path)
   return check('load', ok, r, before)
end

return function(_, bytes)
   local meta, tensors = {}, {}
   for k, v in pairs(base_meta) do meta[k] = v end
   for k, v in pairs(base_tensors) do tensors[k] = v end
   for line in bytes:gmatch('[^\n]+') do
      local name, dims = line:match('^@([^=]+)=(.*)$')
      if name then
         local shape, n = {}, 1
         for d in dims:gmatch('%d+') do shape[#shape + 1] = math.min(tonumber(d), 8); n = n * shape[#shape] end
         if #shape <= 4 then tensors[name] = fnn.zeros(shape) end
      elseif line:sub(1, 1) == '!' then
         meta[line:sub(2)], tensors[line:sub(2)] = nil, nil
      else
         local k, v = line:match('^([^=]+)=(.*)$')
         if k then meta[k] = v end
      end
   end
   if not write(meta, tensors) then return true end   -- a name or key the writer refuses
   local ok_all, good_all, why_all = pcall(load_both)
   os.remove(path)
   if not ok_all then error(good_all, 0) end
   return good_all, why_all
end
