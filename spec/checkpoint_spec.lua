-- Checkpoints (fastnn.serialize): weights round trips for every layer family in lua/fastnn/nn/,
-- load refusals naming the tensor, strict = false, training state for every optimizer in
-- lua/fastnn/optim/ resuming bit for bit (with schedules and a seeded loader), and failed saves
-- that leave the earlier file.
local fnn = require 'fastnn'
local nn, optim, data = fnn.nn, fnn.optim, fnn.data
local serialize = require 'fastnn.serialize'

local dir = io.popen('mktemp -d /tmp/fastnn-ckpt-XXXXXX'):read('*l')
local function file(name) return dir .. '/' .. name end
local function listing(d)
   local names = {}
   for n in io.popen('ls -A ' .. d):lines() do names[#names + 1] = n end
   table.sort(names)
   return names
end

-- every named parameter and buffer as {name = flat values}
local function snapshot(m)
   local s = {}
   for _, pair in ipairs(m:named_parameters()) do s[pair[1]] = pair[2]:tensor():to_flat() end
   for _, pair in ipairs(m:named_buffers()) do s[pair[1]] = pair[2]:to_flat() end
   return s
end

local function count(t)
   local n = 0
   for _ in pairs(t) do n = n + 1 end
   return n
end

-- exactly equal, value by value (a checkpoint is bit-exact for F32)
local function assert_same(a, b, what)
   assert.equals(count(a), count(b), what .. ': tensor count')
   for name, va in pairs(a) do
      local vb = b[name]
      assert.is_not_nil(vb, what .. ': no ' .. name)
      assert.equals(#va, #vb, what .. ': ' .. name .. ' size')
      for i = 1, #va do
         if va[i] ~= vb[i] then
            error(('%s: %s element %d: %.9g vs %.9g'):format(what, name, i, va[i], vb[i]))
         end
      end
   end
end

-- every parameter and float buffer moved off its initial value, so a load has something to restore
local function perturb(m, seed)
   fnn.manual_seed(seed)
   for _, p in ipairs(m:parameters()) do p:set(p:tensor():detach() + fnn.randn(p:shape()) * 0.1) end
   for _, pair in ipairs(m:named_buffers()) do
      local t = pair[2]
      if t:dtype() == 'int64' then m:set_buffer(pair[1], t + 3)
      else m:set_buffer(pair[1], t + fnn.rand(t:shape())) end
   end
end

teardown(function() os.execute('rm -rf ' .. dir) end)

describe('fnn.save / fnn.load', function()
   local families = {
      Linear = function() return nn.Linear(4, 3) end,
      Conv2d = function() return nn.Conv2d(2, 3, 3, {padding = 1}) end,
      LayerNorm = function() return nn.LayerNorm(5) end,
      BatchNorm2d = function() return nn.BatchNorm2d(3) end,
      nested = function()
         return nn.Sequential(nn.Sequential(nn.Linear(4, 5), nn.ReLU()), nn.Sequential(nn.Linear(5, 2)))
      end,
   }
   for name, make in pairs(families) do
      it('round-trips ' .. name .. ' bit for bit, buffers included', function()
         local a = make()
         perturb(a, 1)
         fnn.save(a, file(name .. '.fdl'))
         local b = make()
         perturb(b, 2)
         local report = fnn.load(b, file(name .. '.fdl'))
         assert.same({missing = {}, unexpected = {}, mismatched = {}, skipped = {}},
                     {missing = report.missing, unexpected = report.unexpected, mismatched = report.mismatched,
                      skipped = report.skipped})
         assert.equals(#a:named_parameters() + #a:named_buffers(), #report.loaded)
         assert_same(snapshot(a), snapshot(b), name)
      end)
   end

   it('round-trips a model of the layers and behaves the same afterwards', function()
      local function make()
         return nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3),
                              nn.LayerNorm(3))
      end
      fnn.manual_seed(5)
      local a = make()
      local x = fnn.randn(2, 1, 6, 6)
      a(x)                                  -- training forward: BatchNorm's running stats move
      a:eval()
      fnn.save(a, file('model.fdl'))
      local b = make()
      fnn.load(b, file('model.fdl'))
      b:eval()
      assert.same(a(x):to_flat(), b(x):to_flat())
      assert.same(a[2].running_mean:to_flat(), b[2].running_mean:to_flat())
      assert.equals(a[2].num_batches_tracked:to_flat()[1], b[2].num_batches_tracked:to_flat()[1])
      assert.equals('int64', b[2].num_batches_tracked:dtype())
   end)

   it('round-trips every layer class of fastnn.nn (nn._names) that holds parameters or buffers', function()
      local skip = {Module = true}
      local tries = {{}, {4}, {2, 4}, {4, 3}, {3, 4, 2}, {2, 3, 2, 2}}
      local covered = {}
      for _, cname in ipairs(nn._names) do
         if not skip[cname] then
            local ok, cls = pcall(function() return nn[cname] end)
            if ok and type(cls) == 'table' and rawget(cls, '_is_class') then
               for _, args in ipairs(tries) do
                  fnn.manual_seed(3)
                  local made, a = pcall(cls, unpack(args))
                  if made and #a:named_parameters() + #a:named_buffers() > 0 then
                     perturb(a, 4)
                     local path = file('layer-' .. cname .. '.fdl')
                     fnn.save(a, path)
                     fnn.manual_seed(3)
                     local b = cls(unpack(args))
                     fnn.load(b, path)
                     assert_same(snapshot(a), snapshot(b), cname)
                     covered[#covered + 1] = cname
                     break
                  end
               end
            end
         end
      end
      -- Linear, Conv1d/2d/3d, ConvTranspose, norms, Bilinear, ... at the time of writing
      assert.is_true(#covered >= 10, 'only covered: ' .. table.concat(covered, ', '))
   end)

   it('refuses a missing, an unexpected or a mis-shaped tensor by name, changing nothing', function()
      fnn.manual_seed(1)
      local small = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
      fnn.save(small, file('small.fdl'))
      local big = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 2))
      local before = snapshot(big)
      local ok, err = pcall(function() fnn.load(big, file('small.fdl')) end)
      assert.is_false(ok)
      assert.matches('checkpoint_spec.lua:%d+: load: .*small%.fdl does not match the model: missing 5%.weight, 5%.bias', err)
      assert_same(before, snapshot(big), 'after a refused load')

      ok, err = pcall(function() fnn.load(nn.Sequential(nn.Linear(4, 3)), file('small.fdl')) end)
      assert.matches('unexpected 3%.weight, 3%.bias', err)

      local wide = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
      before = snapshot(wide)
      ok, err = pcall(function() fnn.load(wide, file('small.fdl')) end)
      assert.matches('1%.weight is F32 %[3,4%] in the file, float32 %[5,4%] in the model', err)
      assert.matches('3%.weight is F32 %[2,3%] in the file, float32 %[2,5%] in the model', err)
      assert_same(before, snapshot(wide), 'after a refused load')
   end)

   it('with strict = false loads what matches and reports what it skipped', function()
      fnn.manual_seed(1)
      local a = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
      fnn.save(a, file('a.fdl'))
      local b = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 5), nn.Linear(5, 1))
      local old3 = b[3].weight:tensor():to_flat()
      local report = fnn.load(b, file('a.fdl'), {strict = false})
      assert.same({'4.weight', '4.bias'}, report.missing)
      assert.same({}, report.unexpected)
      assert.equals(2, #report.mismatched)
      assert.matches('^3%.weight is F32 %[2,3%] in the file', report.mismatched[1])
      assert.same(a[1].weight:tensor():to_flat(), b[1].weight:tensor():to_flat())
      assert.same(a[1].bias:tensor():to_flat(), b[1].bias:tensor():to_flat())
      assert.same(old3, b[3].weight:tensor():to_flat())
   end)

   it('has try_ forms returning nil and the message', function()
      local r, err = fnn.try_load(nn.Linear(2, 2), file('absent.fdl'))
      assert.is_nil(r)
      assert.equals('load: ' .. file('absent.fdl') .. ': cannot open: No such file or directory', err)
      r, err = fnn.try_load_training(nn.Linear(2, 2), optim.SGD(nn.Linear(2, 2):parameters(), 0.1), file('absent.fdl'))
      assert.is_nil(r)
      assert.matches('^load_training: .*absent%.fdl: cannot open', err)
      r, err = fnn.try_load_safetensors(file('absent.fdl'))
      assert.is_nil(r)
      assert.matches('^load_safetensors: .*absent%.fdl: cannot open', err)
      assert.matches('checkpoint_spec.lua:%d+: load: expected a module, got a number',
                     select(2, pcall(function() fnn.load(3, file('a.fdl')) end)))
   end)

   it('writes through a temporary file beside the target and leaves nothing else behind', function()
      local d = dir .. '/atomic'
      os.execute('mkdir -p ' .. d)
      local m = nn.Linear(3, 2)
      fnn.save(m, d .. '/m.fdl')
      fnn.save(m, d .. '/m.fdl')      -- replaces it
      assert.same({'m.fdl'}, listing(d))
   end)

   it('raises on a failed save and leaves the earlier file as it was', function()
      local d = dir .. '/failing'
      os.execute('mkdir -p ' .. d)
      fnn.manual_seed(9)
      local m = nn.Linear(3, 2)
      fnn.save_safetensors(m, d .. '/w.safetensors')
      local freed = fnn.randn(4, 4)
      freed:free()
      local ok, err = pcall(function() fnn.save_safetensors({a = fnn.ones(2), b = freed}, d .. '/w.safetensors') end)
      assert.is_false(ok)
      assert.matches("checkpoint_spec.lua:%d+: save_safetensors: .*w%.safetensors: tensor 'b' was freed", err)
      -- a directory where the file should go: the rename fails after the data was written
      os.execute('mkdir -p ' .. d .. '/taken.fdl/inside')
      ok, err = pcall(function() fnn.save(m, d .. '/taken.fdl') end)
      assert.is_false(ok)
      assert.matches('save: .*taken%.fdl: cannot replace it with the new file', err)
      ok, err = pcall(function() fnn.save(m, dir .. '/no/such/dir/m.fdl') end)
      assert.matches('save: .*m%.fdl: cannot create a temporary file in .*/no/such/dir: No such file', err)
      assert.same({'taken.fdl', 'w.safetensors'}, listing(d))
      local t = fnn.load_safetensors(d .. '/w.safetensors')
      assert.same(m.weight:tensor():to_flat(), t.weight:to_flat())
   end)

   it('refuses a checkpoint of a newer format version, saying which', function()
      -- written through the C ABI, which lets fdl. keys through for a checksummed file
      local ffi, C = require 'ffi', require 'fastnn.C'
      local t = fnn.ones(2)
      local names, tensors = ffi.new('const char *[1]', {'weight'}), ffi.new('const fnn_tensor *[1]', {t})
      local keys = ffi.new('const char *[2]', {'fdl.version', 'fdl.kind'})
      local values = ffi.new('const char *[2]', {'2', 'weights'})
      assert.equals(0, C.fnn_safetensors_save(file('v2.fdl'), 1, names, tensors, 2, keys, values, 0, 1))
      local ok, err = pcall(function() fnn.load(nn.Linear(2, 1, {bias = false}), file('v2.fdl')) end)
      assert.is_false(ok)
      assert.matches('load: .*v2%.fdl has checkpoint format version 2; this fastnn reads versions up to 1', err)
      assert.is_true(fnn.serialize.info(file('v2.fdl')).checksummed)
   end)

   it('refuses metadata keys that are fastnn\'s and names that appear twice', function()
      local ok, err = pcall(function() fnn.save(nn.Linear(2, 2), file('x.fdl'), {metadata = {['fdl.kind'] = 'x'}}) end)
      assert.matches('save: metadata key fdl%.kind: keys starting with fdl%. are fastnn\'s', err)
      ok, err = pcall(function()
         fnn.save_safetensors({{'a', fnn.ones(2)}, {'a', fnn.zeros(2)}}, file('x.safetensors'))
      end)
      assert.matches("tensor name 'a' appears twice", err)
      fnn.save(nn.Linear(2, 2), file('meta.fdl'), {metadata = {note = 'hello', epoch = 3}})
      local info = serialize.info(file('meta.fdl'))
      assert.equals('hello', info.metadata.note)
      assert.equals('3', info.metadata.epoch)
      assert.equals('weights', info.metadata['fdl.kind'])
      assert.is_nil(info.metadata['fdl.header_crc32'])   -- checksums are the container's own
      assert.is_true(info.checksummed)
   end)
end)

-- ---------------------------------------------------------------------------

local function mlp()
   return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
end

local X = fnn.tensor({{0.5, -1, 2}, {1, 0.25, -0.5}, {-1.5, 1, 0.75}, {0.1, 0.2, 0.3}})
local Y = fnn.tensor({{1, 0}, {0, 1}, {0.5, 0.5}, {-1, 1}})

local function train(model, opt, steps, x, y, extra)
   for _ = 1, steps do
      opt:zero_grad()
      local d = model(x or X) - (y or Y)
      local loss = (d * d):mean()
      loss:backward()
      opt:step()
      if extra then extra() end
   end
end

-- the optimizers in lua/fastnn/optim/ and options that exercise their state
local opt_options = {
   SGD = {lr = 0.1, momentum = 0.9, nesterov = true},
   Adam = {lr = 0.01, amsgrad = true, weight_decay = 0.01},
   AdamW = {lr = 0.01},
   RMSprop = {lr = 0.01, centered = true, momentum = 0.5},
   Adagrad = {lr = 0.1, lr_decay = 0.01, initial_accumulator_value = 0.1},
   Adadelta = {lr = 1.0},
   RAdam = {lr = 0.01},
   Lion = {lr = 0.001, weight_decay = 0.1},
}
local function optimizer_names()
   local names = {}
   for fname in io.popen('ls lua/fastnn/optim'):lines() do
      local cname = fname:match('^(%u%w*)%.lua$')
      if cname then
         local cls = optim[cname]
         if type(cls) == 'table' and type(cls.defaults) == 'table' and cname ~= 'Optimizer' then
            names[#names + 1] = cname
         end
      end
   end
   table.sort(names)
   return names
end

describe('fnn.save_training / fnn.load_training', function()
   for _, name in ipairs(optimizer_names()) do
      it('resumes optim.' .. name .. ' bit for bit', function()
         local opts = opt_options[name] or {lr = 0.01}
         fnn.manual_seed(11)
         local ref = mlp()
         local ref_opt = optim[name](ref:parameters(), opts)
         train(ref, ref_opt, 6)

         fnn.manual_seed(11)
         local a = mlp()
         local a_opt = optim[name](a:parameters(), opts)
         train(a, a_opt, 3)
         a_opt:set_lr(a_opt:lr())   -- the hyperparameters in force are what is saved
         fnn.save_training(a, a_opt, 3, file('train-' .. name .. '.fdl'))

         fnn.manual_seed(12)           -- other weights, a fresh optimizer with other options
         local b = mlp()
         local b_opt = optim[name](b:parameters(), {lr = 0.5})
         local step = fnn.load_training(b, b_opt, file('train-' .. name .. '.fdl'))
         assert.equals(3, step)
         assert.equals(a_opt:lr(), b_opt:lr())
         assert.equals(3, b_opt:steps())
         train(b, b_opt, 3)
         assert_same(snapshot(ref), snapshot(b), name)
      end)
   end

   it("resumes fastnn's random stream, so a model with dropout trains on bit for bit", function()
      local function make() return nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5), nn.Linear(8, 2)) end
      fnn.manual_seed(31)
      local ref = make()
      local ref_opt = optim.Adam(ref:parameters(), 0.01)
      train(ref, ref_opt, 6)

      fnn.manual_seed(31)
      local a = make()
      local a_opt = optim.Adam(a:parameters(), 0.01)
      train(a, a_opt, 3)
      fnn.save_training(a, a_opt, 3, file('dropout.fdl'))

      fnn.manual_seed(99)            -- another stream: the checkpoint must bring the saved one back
      local b = make()
      local b_opt = optim.Adam(b:parameters(), 0.01)
      fnn.load_training(b, b_opt, file('dropout.fdl'))
      train(b, b_opt, 3)
      assert_same(snapshot(ref), snapshot(b), 'dropout model')
   end)

   it('covers every optimizer class (at least the eight of SPEC)', function()
      local names = optimizer_names()
      for _, n in ipairs{'SGD', 'Adam', 'AdamW', 'RMSprop', 'Adagrad', 'Adadelta', 'RAdam', 'Lion'} do
         local found = false
         for _, m in ipairs(names) do found = found or m == n end
         assert.is_true(found, n .. ' not found in lua/fastnn/optim')
      end
   end)

   it('resumes Lookahead (slow weights and the fast-step count) bit for bit', function()
      local function make(model) return optim.Lookahead(optim.Adam(model:parameters(), 0.01), 3, 0.5) end
      fnn.manual_seed(21)
      local ref = mlp()
      local ref_opt = make(ref)
      train(ref, ref_opt, 8)
      fnn.manual_seed(21)
      local a = mlp()
      local a_opt = make(a)
      train(a, a_opt, 4)                -- one past a sync: the count matters
      fnn.save_training(a, a_opt, 4, file('lookahead.fdl'))
      fnn.manual_seed(22)
      local b = mlp()
      local b_opt = make(b)
      assert.equals(4, fnn.load_training(b, b_opt, file('lookahead.fdl')))
      train(b, b_opt, 4)
      assert_same(snapshot(ref), snapshot(b), 'Lookahead')
   end)

   it('resumes Ema (shadow weights) bit for bit', function()
      fnn.manual_seed(31)
      local ref = mlp()
      local ref_sgd, ref_ema = optim.SGD(ref:parameters(), 0.1), optim.Ema(ref:parameters(), 0.8)
      train(ref, ref_sgd, 5, nil, nil, function() ref_ema:update() end)
      fnn.manual_seed(31)
      local a = mlp()
      local a_sgd, a_ema = optim.SGD(a:parameters(), 0.1), optim.Ema(a:parameters(), 0.8)
      train(a, a_sgd, 2, nil, nil, function() a_ema:update() end)
      fnn.save_training(a, a_ema, 2, file('ema.fdl'))
      fnn.manual_seed(32)
      local b = mlp()
      local b_sgd, b_ema = optim.SGD(b:parameters(), 0.1), optim.Ema(b:parameters(), 0.5)
      assert.equals(2, fnn.load_training(b, b_ema, file('ema.fdl')))
      assert.equals(0.8, b_ema.decay)
      train(b, b_sgd, 3, nil, nil, function() b_ema:update() end)
      b_ema:swap_in()
      ref_ema:swap_in()
      assert_same(snapshot(ref), snapshot(b), 'Ema')
   end)

   it('resumes a schedule and a seeded shuffling loader with the same data order', function()
      local n = 10
      fnn.manual_seed(41)
      local xs, ys = fnn.randn(n, 3), fnn.randn(n, 2)
      local ids = fnn.arange(1, n + 1):float():reshape{n, 1}
      local function run(model, opt, sched, loader, epochs, first_step, order)
         local step = first_step
         for _ = 1, epochs do
            for batch in loader:iter() do
               sched:apply(opt, step)
               opt:zero_grad()
               local d = model(batch.inputs:narrow(2, 1, 3)) - batch.targets
               local loss = (d * d):mean()
               loss:backward()
               opt:step()
               step = step + 1
               for _, v in ipairs(batch.inputs:narrow(2, 4, 1):to_flat()) do order[#order + 1] = v end
            end
         end
         return step
      end
      local function setup(seed)
         fnn.manual_seed(seed)
         local model = mlp()
         local opt = optim.Adam(model:parameters(), 1e-2)
         local sched = optim.Warmup(optim.CosineAnnealing(1e-2, 20), 4)
         local ds = data.TensorDataset(fnn.cat({xs, ids}, 2), ys)
         local loader = data.DataLoader(ds, 4):shuffle(true):seed(seed)
         return model, opt, sched, loader
      end
      local ref, ref_opt, ref_sched, ref_loader = setup(7)
      local ref_order = {}
      run(ref, ref_opt, ref_sched, ref_loader, 3, 0, ref_order)

      local a, a_opt, a_sched, a_loader = setup(7)
      local a_order = {}
      local step = run(a, a_opt, a_sched, a_loader, 1, 0, a_order)
      fnn.save_training(a, a_opt, step, file('resume.fdl'), {schedule = a_sched, loader = a_loader})

      local b, b_opt, b_sched, b_loader = setup(99)   -- another seed: the checkpoint must fix it
      local resumed = fnn.load_training(b, b_opt, file('resume.fdl'), {schedule = b_sched, loader = b_loader})
      assert.equals(step, resumed)
      run(b, b_opt, b_sched, b_loader, 2, resumed, a_order)
      assert.same(ref_order, a_order)
      assert_same(snapshot(ref), snapshot(b), 'resumed run')
   end)

   it('restores the fields of a stateful schedule (ReduceOnPlateau)', function()
      local m = mlp()
      local opt = optim.SGD(m:parameters(), 0.1)
      local s = optim.ReduceOnPlateau(opt, {patience = 1, factor = 0.5})
      for _, v in ipairs{1.0, 0.9, 0.95, 0.97, 0.99} do s:step(v) end
      fnn.save_training(m, opt, 5, file('plateau.fdl'), {schedule = s})
      local m2 = mlp()
      local opt2 = optim.SGD(m2:parameters(), 0.1)
      local s2 = optim.ReduceOnPlateau(opt2, {patience = 1, factor = 0.5})
      fnn.load_training(m2, opt2, file('plateau.fdl'), {schedule = s2})
      assert.equals(s.best, s2.best)
      assert.equals(s.bad, s2.bad)
      assert.equals(s.cooling, s2.cooling)
      assert.equals(opt:lr(), opt2:lr())
      assert.equals(s:step(1.5), s2:step(1.5))
   end)

   it('refuses a weights file, saying so, and changes nothing', function()
      local m = mlp()
      fnn.save(m, file('weights.fdl'))
      local m2 = mlp()
      local opt = optim.Adam(m2:parameters(), 0.01)
      local before = snapshot(m2)
      local ok, err = pcall(function() fnn.load_training(m2, opt, file('weights.fdl')) end)
      assert.is_false(ok)
      assert.matches('checkpoint_spec.lua:%d+: load_training: .*weights%.fdl is a weights file %(written by fnn%.save%): '
                     .. 'it holds no optimizer state', err)
      assert_same(before, snapshot(m2), 'after a refused load_training')
      fnn.save_safetensors(m, file('plain.safetensors'), {checksums = false})
      ok, err = pcall(function() fnn.load_training(m2, opt, file('plain.safetensors')) end)
      assert.matches('is a plain safetensors file, not a training checkpoint', err)
   end)

   it('refuses another optimizer\'s state or another model, changing neither', function()
      fnn.manual_seed(51)
      local m = mlp()
      local opt = optim.Adam(m:parameters(), 0.01)
      train(m, opt, 2)
      fnn.save_training(m, opt, 2, file('adam.fdl'))
      local m2 = mlp()
      local sgd = optim.SGD(m2:parameters(), 0.1, {momentum = 0.9})
      train(m2, sgd, 1)
      local before, sgd_state = snapshot(m2), sgd:state()
      local ok, err = pcall(function() fnn.load_training(m2, sgd, file('adam.fdl')) end)
      assert.is_false(ok)
      assert.matches('load_training: .*adam%.fdl holds the state of optim%.Adam, the optimizer given is optim%.SGD', err)
      assert_same(before, snapshot(m2), 'model')
      assert.equals(sgd_state.params[1].momentum_buffer, sgd:state().params[1].momentum_buffer)

      local other = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
      local other_opt = optim.Adam(other:parameters(), 0.5)
      before = snapshot(other)
      ok, err = pcall(function() fnn.load_training(other, other_opt, file('adam.fdl')) end)
      assert.matches('1%.weight is F32 %[4,3%] in the file, float32 %[5,3%] in the model', err)
      assert_same(before, snapshot(other), 'other model')
      assert.equals(0.5, other_opt:lr())
      assert.equals(0, other_opt:steps())
   end)

   it('lets fnn.load take the weights out of a training checkpoint', function()
      fnn.manual_seed(61)
      local m = mlp()
      local opt = optim.Adam(m:parameters(), 0.01)
      train(m, opt, 2)
      fnn.save_training(m, opt, 2, file('t.fdl'))
      local m2 = mlp()
      fnn.load(m2, file('t.fdl'))
      assert_same(snapshot(m), snapshot(m2), 'weights from a training file')
      local info = serialize.info(file('t.fdl'))
      assert.equals('training', info.metadata['fdl.kind'])
      assert.equals('2', info.metadata['fdl.step'])
      assert.equals('Adam', info.metadata['fdl.optimizer'])
      local names = {}
      for _, t in ipairs(info.tensors) do names[#names + 1] = t.name end
      assert.same({'1.weight', '1.bias', '3.weight', '3.bias', 'optim.params.1.exp_avg', 'optim.params.1.exp_avg_sq'},
                  {unpack(names, 1, 6)})
   end)

   it('checks its arguments at the caller\'s line', function()
      local m = mlp()
      local opt = optim.SGD(m:parameters(), 0.1)
      local _, err = pcall(function() fnn.save_training(m, opt, -1, file('x.fdl')) end)
      assert.matches('checkpoint_spec.lua:%d+: save_training: step is %-1, expected a whole number >= 0', err)
      _, err = pcall(function() fnn.save_training(m, {}, 1, file('x.fdl')) end)
      assert.matches('save_training: expected an optimizer %(with state%(%) and load_state%(%)%), got a table', err)
      _, err = pcall(function() fnn.save_training(m, opt, 1, file('x.fdl'), {loader = 3}) end)
      assert.matches('save_training: loader is a number, expected a DataLoader', err)
   end)
end)

describe('the JSON of the training state (fastnn.json)', function()
   local json = require 'fastnn.json'
   it('round-trips numbers bit for bit, inf, strings with escapes, arrays and objects', function()
      local v = {lr = 0.1 + 0.2, betas = {0.9, 0.999}, steps = 2 ^ 53 - 1, tiny = 5e-324, big = -math.huge,
                 flag = false, name = 'a"b\\c\n\1', nested = {{step = 0}, {step = 3, x = 1e-300}}}
      local text = json.encode(v)
      assert.equals(text, json.encode(json.decode(text)))      -- keys sorted: one text per value
      assert.same(v, json.decode(text))
      assert.equals('[1,"x",true,{}]', json.encode(json.decode(' [ 1 , "x" , true , { } ] ')))
      assert.equals('\u{e9}\u{1F600}', json.decode('"\\u00e9\\ud83d\\ude00"'))
   end)
   it('refuses what JSON cannot hold and malformed text, saying where', function()
      assert.matches('json: the value.x is nan', select(2, pcall(json.encode, {x = 0 / 0})))
      assert.matches('has a number key 5; objects take string keys', select(2, pcall(json.encode, {a = 1, [5] = 2})))
      assert.matches('is a function', select(2, pcall(json.encode, {f = print})))
      assert.matches('json: not valid JSON near byte 8 of 13', select(2, pcall(json.decode, '{"a":1 "b":2}')))
      assert.matches('json: not valid JSON near byte 5 of 5', select(2, pcall(json.decode, '[1] x')))
      assert.matches('json: not valid JSON near byte %d+ of 4', select(2, pcall(json.decode, '"abc')))
      assert.same({1, {a = true}}, json.decode(' [1, {"a": true}] \n'))
   end)
end)

describe('fnn.load onto a GPU model', function()
   it('places the weights on the model\'s device', function()
      local gpu, why = fnn.Device.cuda(0)
      if not gpu then
         -- no GPU here: the placement cannot run, so check the reason given instead
         assert.matches('cuda:0 is not available', why)
         return
      end
      fnn.manual_seed(71)
      local a = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
      fnn.save(a, file('gpu.fdl'))
      local b = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)):to_device(gpu)
      fnn.load(b, file('gpu.fdl'))
      for _, p in ipairs(b:parameters()) do assert.equals('cuda:0', tostring(p:tensor():device())) end
      for _, t in ipairs(b:buffers()) do assert.equals('cuda:0', tostring(t:device())) end
      assert.same(a[1].weight:tensor():to_flat(), b[1].weight:tensor():to('cpu'):to_flat())
      -- and training state: the optimizer's tensors go to the GPU too
      local opt = optim.Adam(a:parameters(), 0.01)
      train(a, opt, 1, X, fnn.randn(4, 4))
      fnn.save_training(a, opt, 1, file('gpu-train.fdl'))
      local b_opt = optim.Adam(b:parameters(), 0.01)
      fnn.load_training(b, b_opt, file('gpu-train.fdl'))
      assert.equals('cuda:0', tostring(b_opt:state().params[1].exp_avg:device()))
   end)
end)
