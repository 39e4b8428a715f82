-- fuzz regressions: every crash the fuzz targets found is kept as fuzz/corpus/<target>/regress-*
-- (tools/fuzz.sh replays them in C with the sanitizers); here each one goes through the public
-- Lua API and must give a clean, exact error (or, where the input was valid, the right result).
-- A regress file without a case below fails this spec, so none is forgotten. docs/security.md
-- lists each with its fix.
local fnn = require 'fastnn'
local data = fnn.data
local idx = require 'fastnn.data.idx'
local support = require 'support'

local CORPUS = 'fuzz/corpus'

local function read(path)
   local f = assert(io.open(path, 'rb'))
   local s = f:read('*a')
   f:close()
   return s
end

local made = {}   -- temporary files, removed at the end
local function tmpname()
   made[#made + 1] = os.tmpname()
   return made[#made]
end

local function tmpfile(bytes)
   local path = tmpname()
   local f = assert(io.open(path, 'wb'))
   f:write(bytes)
   f:close()
   return path
end

-- a fuzz input (mode byte first, fuzz/idx.c) as the file the loaders read
local function without_mode(target, name)
   return tmpfile(read(('%s/%s/%s'):format(CORPUS, target, name)):sub(2))
end

-- the model fuzz/fdl.lua uses, one Adam step taken, and a training checkpoint of it whose
-- fdl.training is `state` (written by the core, so its checksums are right)
local ffi = require 'ffi'
local function training_file(state)
   fnn.manual_seed(7)
   local model = fnn.nn.Sequential(fnn.nn.Linear(3, 2), fnn.nn.ReLU(), fnn.nn.Linear(2, 1))
   local opt = fnn.optim.Adam(model:parameters(), {lr = 1e-3})
   model:forward(fnn.randn(4, 3)):sum():backward()
   opt:step()
   local path = tmpname()
   fnn.save_training(model, opt, 3, path)
   local tensors, meta = fnn.load_safetensors(path)
   meta['fdl.training'] = state
   local names, keys = {}, {}
   for k in pairs(tensors) do names[#names + 1] = k end
   for k in pairs(meta) do keys[#keys + 1] = k end
   local cn, ct = ffi.new('const char *[?]', #names), ffi.new('const fnn_tensor *[?]', #names)
   for i, k in ipairs(names) do cn[i - 1], ct[i - 1] = k, tensors[k] end
   local ck, cv = ffi.new('const char *[?]', #keys), ffi.new('const char *[?]', #keys)
   for i, k in ipairs(keys) do ck[i - 1], cv[i - 1] = k, meta[k] end
   assert(fnn.Tensor and require('fastnn.C').fnn_safetensors_save(path, #names, cn, ct, #keys, ck, cv, 0, 1) == 0)
   -- the live state moves on, so a half-done load would show
   opt:zero_grad()
   model:forward(fnn.randn(4, 3)):sum():backward()
   opt:step()
   return model, opt, path
end

-- the Lua targets' drivers check the same contract as the fuzzer does
local function driver(target)
   return dofile(('fuzz/%s.lua'):format(target))
end

local cases = {
   idx = {
      -- a 16-byte file claiming [1000,1000,1000]: 4 GB was allocated before the data was looked for
      ['regress-huge-claim'] = function(name)
         local t, err = idx.read(without_mode('idx', name), 1)
         assert.is_nil(t)
         assert.matches('read_idx: .*: truncated, expected 1000000000 bytes of data, got 0 %(sizes %[1000,1000,1000%]%)',
                        err)
      end,
      -- [0, 2^32-1, 2^32-1]: zero elements passed the cap, and the strides overflowed (UBSan)
      ['regress-zero-size-strides'] = function(name)
         local t, err = idx.read(without_mode('idx', name), 1)
         assert.is_nil(t)
         assert.matches('read_idx: .*: sizes %[0,4294967295,4294967295%] in the header are implausibly large', err)
      end,
   },
   checkpoint = {
      -- a tensor [0, 2^32, 2^32] with no bytes: the header passed, fnn_empty's strides overflowed
      ['regress-zero-size-strides'] = function(name)
         local path = ('%s/checkpoint/%s'):format(CORPUS, name)
         local t, err = fnn.try_load_safetensors(path)
         assert.is_nil(t)
         assert.matches("regress%-zero%-size%-strides: tensor 'x' has sizes %[0,4294967296,4294967296%], "
                        .. 'which multiply past 2%^62', err)
      end,
   },
   fdl = {
      -- a training state whose optimizer groups hold a number: Optimizer:load_state replaced the
      -- optimizer's state, then failed in pairs(): a half-loaded optimizer and a message of Lua's
      ['regress-group-not-table'] = function(name)
         local bytes = read(('%s/fdl/%s'):format(CORPUS, name))
         assert.same({true}, {driver('fdl')(nil, bytes)})
         local model, opt, path = training_file(bytes:match('^fdl%.training=([^\n]*)'))
         local before = opt:state().params[1].exp_avg:to_flat()
         local err = support.err_of(function() fnn.load_training(model, opt, path) end)
         assert.matches('fuzz_regressions_spec.lua:%d+: load_training: optim.Adam: load_state: group 1 is a number, '
                        .. 'expected a table of options', err)
         assert.same(before, opt:state().params[1].exp_avg:to_flat())
      end,
      -- a state entry whose exp_avg_sq was renamed loaded (the key is ignored), and the next
      -- opt:step() failed inside Adam ("adam: expected a tensor, got nil"): found by a training step
      -- of the next input. The load now refuses a stepped parameter's state without a buffer its
      -- options use, naming it, and leaves the model and optimizer as they were.
      ['regress-missing-buffer'] = function(name)
         local bytes = read(('%s/fdl/%s'):format(CORPUS, name))
         local run = driver('fdl')
         assert.same({true}, {run(nil, bytes)})
         assert.same({true}, {run(nil, bytes)})   -- the second input's training step follows the first's load
         local model, opt, path = training_file(bytes:match('^fdl%.training=([^\n]*)'))
         local before = opt:state().params[1].exp_avg_sq:to_flat()
         local w = model:parameters()[1]:tensor():to_flat()
         local err = support.err_of(function() fnn.load_training(model, opt, path) end)
         assert.matches('load_training: optim%.Adam: load_state: parameter 1 has stepped %(step 1%) but its state has '
                        .. 'no exp_avg_sq', err)
         assert.same(before, opt:state().params[1].exp_avg_sq:to_flat())
         assert.same(w, model:parameters()[1]:tensor():to_flat())
      end,
      -- random state words "0" x 6 passed the check (decimal strings), and fnn_random_set_state
      -- refused them after the model and optimizer had been changed, with a message of its own
      ['regress-random-state'] = function(name)
         local bytes = read(('%s/fdl/%s'):format(CORPUS, name))
         assert.same({true}, {driver('fdl')(nil, bytes)})
         local model, opt, path = training_file(bytes:match('^fdl%.training=([^\n]*)'))
         local w = model:parameters()[1]:tensor():to_flat()
         local err = support.err_of(function() fnn.load_training(model, opt, path) end)
         assert.matches('fuzz_regressions_spec.lua:%d+: load_training: .*: its random state is not one fastnn writes', err)
         assert.same(w, model:parameters()[1]:tensor():to_flat())
      end,
      -- lr = "fast" in the file was loaded, and the next step failed inside the FFI
      ['regress-option-type'] = function(name)
         local bytes = read(('%s/fdl/%s'):format(CORPUS, name))
         assert.same({true}, {driver('fdl')(nil, bytes)})
         local model, opt, path = training_file(bytes:match('^fdl%.training=([^\n]*)'))
         local err = support.err_of(function() fnn.load_training(model, opt, path) end)
         assert.matches('load_training: optim.Adam: load_state: option lr of group 1 is a string, expected a number', err)
         assert.equals(1e-3, opt.groups[1].lr)
      end,
   },
   csv = {
      -- LuaJIT's file:lines() ends a line at a NUL byte and drops the rest of it: rows were lost
      -- or silently shortened
      ['regress-nul-byte'] = function(name)
         local bytes = read(('%s/csv/%s'):format(CORPUS, name))
         assert.same({true}, {driver('csv')(tmpname(), bytes)})
         local ds = data.CsvDataset(tmpfile(bytes:sub(2)), {header = false, delimiter = '\t', target_columns = 1})
         assert.equals(2, ds:len())
         -- a NUL inside a number is a bad field now, not the end of the line
         local path = tmpfile('a,b,c\n1,2\0,5\n3,4,6\n')
         local err = support.err_of(function() data.CsvDataset(path) end)
         assert.matches("fuzz_regressions_spec.lua:%d+: CsvDataset: .*:2: column 2 %('b'%) is '2%z', not a number", err)
      end,
   },
   shape = {
      -- fnn.tensor(values, n) with a count mismatch: the message builder indexed the number
      ['regress-number-shape'] = function(name)
         assert.same({true}, {driver('shape')(nil, read(('%s/shape/%s'):format(CORPUS, name)))})
         local err = support.err_of(function() fnn.tensor({1, 2, 3, 4, 5, 6, 7, 8}, 0) end)
         assert.matches('fuzz_regressions_spec.lua:%d+: tensor: 8 values for shape %[0%] %(0 elements%)$', err)
      end,
      -- fnn.long(3.5): the refusal named 'full', an op the user never called
      ['regress-long-fraction'] = function(name)
         assert.same({true}, {driver('shape')(nil, read(('%s/shape/%s'):format(CORPUS, name)))})
         local err = support.err_of(function() fnn.long(3.5) end)
         assert.matches('fuzz_regressions_spec.lua:%d+: tensor: element 1 of %[%] is 3.5, not a whole number', err)
      end,
      -- fnn.rand(1e308): the size wrapped to -2^63 and the core reported "tensor: negative size"
      ['regress-huge-size'] = function(name)
         assert.same({true}, {driver('shape')(nil, read(('%s/shape/%s'):format(CORPUS, name)))})
         local err = support.err_of(function() fnn.rand(1e308) end)
         assert.matches('fuzz_regressions_spec.lua:%d+: rand: sizes %[1e%+308%] multiply past 2%^62', err)
      end,
      -- zeros{0, 2^62, 2^62}: no elements, but strides of 2^124
      ['regress-zero-size-strides'] = function(name)
         assert.same({true}, {driver('shape')(nil, read(('%s/shape/%s'):format(CORPUS, name)))})
         local err = support.err_of(function() fnn.zeros({0, 2^62, 2^62}) end)
         assert.matches('fuzz_regressions_spec.lua:%d+: zeros: sizes %[0,4.6116860184274e%+18,4.6116860184274e%+18%] '
                        .. 'multiply past 2%^62',
                        err)
         -- the largest legal span still works: [0, 2^61] is an empty tensor
         assert.same({0, 2^61}, fnn.zeros(0, 2^61):shape())
      end,
   },
}

describe('fuzz regressions', function()
   for _, target in ipairs({'idx', 'checkpoint', 'fdl', 'csv', 'text', 'shape'}) do
      local list = io.popen(('ls %s/%s 2>/dev/null'):format(CORPUS, target))
      for name in list:lines() do
         if name:match('^regress%-') then
            it(('%s/%s gives a clean error through the Lua API'):format(target, name), function()
               local case = cases[target] and cases[target][name]
               assert(case, ('%s/%s/%s has no case in spec/fuzz_regressions_spec.lua'):format(CORPUS, target, name))
               case(name)
            end)
         end
      end
      list:close()
   end

   teardown(function() for _, path in ipairs(made) do os.remove(path) end end)

   it('every case has its regress file', function()
      for target, list in pairs(cases) do
         for name in pairs(list) do
            assert.is_not_nil(io.open(('%s/%s/%s'):format(CORPUS, target, name), 'rb'), target .. '/' .. name)
         end
      end
   end)
end)
