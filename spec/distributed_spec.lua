-- fastnn.distributed: world size 1 in this process, sharded loaders simulated in-process, and
-- the multi-rank behaviour under mpirun: the rank scripts in spec/dist/ run through
-- tools/mpirun.sh (-np 2 and 3) as subprocesses under `timeout`, print their figures as lines
-- `<key> <rank> <values...>`, and this spec compares them with hand-computed values and with
-- one process at the combined batch.
-- The launcher is fastnn-lua beside $FASTNN_LIB (else build/fastnn-lua); the multi-rank part
-- needs libfastnn_dist beside it (configure with -DFASTNN_MPI=ON). Without it that part is
-- left out with a note, unless FASTNN_REQUIRE_MPI=1 (CI), where its absence fails.
local fnn = require 'fastnn'
local support = require 'spec.support'
local dist = fnn.distributed
local nn, optim, data = fnn.nn, fnn.optim, fnn.data

local process = require 'spec.process'
local exists, read_all, quote, cwd, absolute, dirname =
   process.exists, process.read_all, process.quote, process.cwd, process.absolute, process.dirname

local BUILD = process.build_dir()
local LAUNCHER = BUILD .. '/fastnn-lua'
local HAVE_MPI = exists(BUILD .. '/libfastnn_dist.so') and exists(LAUNCHER)

-- run a rank script under mpirun with np ranks (np = nil: a plain single process); returns
-- {rc, out, err, seconds, lines = {key = {[rank] = {fields...}}}}
local function launch(np, script, args, env)
   local out, err = os.tmpname(), os.tmpname()
   local parts = {'env FASTNN_NUM_THREADS=1 OMP_NUM_THREADS=1'}
   for k, v in pairs(env or {}) do parts[#parts + 1] = k .. '=' .. quote(v) end
   parts[#parts + 1] = 'timeout 60'
   if np then parts[#parts + 1] = quote(absolute('tools/mpirun.sh')) .. ' -np ' .. np end
   parts[#parts + 1] = quote(LAUNCHER) .. ' ' .. quote('spec/dist/' .. script)
   for _, a in ipairs(args or {}) do parts[#parts + 1] = quote(a) end
   local t0 = os.time()
   local p = io.popen('(' .. table.concat(parts, ' ') .. ') >' .. out .. ' 2>' .. err .. '; echo $?')
   local rc = tonumber(p:read('*a'))
   p:close()
   local r = {rc = rc, out = read_all(out), err = read_all(err), seconds = os.time() - t0, lines = {}}
   os.remove(out)
   os.remove(err)
   for line in r.out:gmatch('[^\n]+') do
      local fields = {}
      for w in line:gmatch('%S+') do fields[#fields + 1] = w end
      local key, rank = fields[1], tonumber(fields[2])
      if key and rank then
         r.lines[key] = r.lines[key] or {}
         local rest = {}
         for i = 3, #fields do rest[#rest + 1] = tonumber(fields[i]) or fields[i] end
         if r.lines[key][rank] then   -- a key printed several times: a list per rank
            local prev = r.lines[key][rank]
            if not prev.multi then prev = {multi = true, prev} end
            prev[#prev + 1] = rest
            r.lines[key][rank] = prev
         else
            r.lines[key][rank] = rest
         end
      end
   end
   return r
end

local function ok_run(r, what)
   assert.equals(0, r.rc, what .. ' failed:\n' .. r.out .. '\n' .. r.err)
end

-- ---------------------------------------------------------------------------

describe('distributed at world size 1 (no mpirun)', function()
   it('is rank 0 of 1, the main rank', function()
      assert.equals(dist, dist.init())
      assert.equals(0, dist.rank())
      assert.equals(0, dist.local_rank())
      assert.equals(1, dist.world_size())
      assert.is_true(dist.is_main())
      assert.equals('none', dist.backend())
      assert.is_nil(dist.barrier())
   end)

   it('all_reduce, broadcast and all_gather return the values themselves', function()
      local x = fnn.tensor{{1, -2, 3}, {4.5, 0, -6}}
      for _, op in ipairs{'sum', 'mean', 'max', 'min'} do
         support.approx({1, -2, 3, 4.5, 0, -6}, dist.all_reduce(x, {op = op}))
      end
      support.approx({1, -2, 3, 4.5, 0, -6}, dist.all_reduce(x:transpose(1, 2)):transpose(1, 2))
      support.approx({1, -2, 3, 4.5, 0, -6}, dist.broadcast(x, 0))
      local g = dist.all_gather(x)
      assert.same({1, 2, 3}, g:shape())
      support.approx({1, -2, 3, 4.5, 0, -6}, g)
      assert.equals('int64', dist.all_reduce(fnn.tensor{1, 2}:long()):dtype())
   end)

   it('refuses bad arguments at the caller line, naming the op', function()
      local err = support.err_of(function() dist.all_reduce(fnn.ones(2), {op = 'prod'}) end)
      assert.matches("distributed_spec%.lua:%d+: distributed%.all_reduce: op 'prod' is not one of 'sum', 'mean', 'max', 'min'", err)
      err = support.err_of(function() dist.all_reduce(fnn.tensor{1, 2}:long(), {op = 'mean'}) end)
      assert.matches('all_reduce: op mean needs a float32 tensor, got an int64 tensor %[2%]', err)
      err = support.err_of(function() dist.broadcast(fnn.ones(2), 1) end)
      assert.matches('distributed_spec%.lua:%d+: broadcast: root is 1, expected a rank 0..0', err)
      err = support.err_of(function() dist.all_gather({1, 2}) end)
      assert.matches('all_gather: expected a tensor, got a table', err)
      err = support.err_of(function() dist.DataParallel(42) end)
      assert.matches('distributed_spec%.lua:%d+: DataParallel: expected a model %(an nn.Module%), got a number', err)
      err = support.err_of(function() dist.DataParallel(nn.Linear(2, 2), {bucket_mb = 0}) end)
      assert.matches('DataParallel: bucket_mb is 0, expected a positive number', err)
      err = support.err_of(function() dist.wrap_optimizer(optim.SGD(nn.Linear(2, 2):parameters(), 0.1), {}) end)
      assert.matches('wrap_optimizer: expected a dist.DataParallel as the second argument', err)
   end)

   it('DataParallel and wrap_optimizer train exactly as the plain model and optimizer', function()
      local function train(wrapped)
         fnn.manual_seed(4)
         local model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
         local opt = optim.Adam(model:parameters(), 0.05)
         local net = model
         if wrapped then
            net = dist.DataParallel(model)
            opt = dist.wrap_optimizer(opt, net)
         end
         local x, y = fnn.tensor{{1, 2, 3}, {-1, 0, 2}}, fnn.tensor{{1}, {-1}}
         for _ = 1, 5 do
            opt:zero_grad()
            nn.mse(net(x), y):backward()
            opt:step()
         end
         assert.equals(5, opt:steps())
         local all = {}
         for _, p in ipairs(net:parameters()) do
            for _, v in ipairs(p:tensor():to_flat()) do all[#all + 1] = v end
         end
         return all
      end
      local plain = train(false)
      support.approx(plain, train(true), 0)
   end)

   it('save_training writes and load_training reads in a world of one', function()
      local path = process.tmpname('.fdl')
      fnn.manual_seed(6)
      local model = nn.Linear(2, 3)
      local opt = optim.SGD(model:parameters(), 0.1)
      fnn.save_training(model, opt, 3, path)
      local other = nn.Linear(2, 3)
      assert.equals(3, fnn.load_training(other, optim.SGD(other:parameters(), 0.1), path))
      support.approx(model.weight:tensor():to_flat(), other.weight:tensor(), 0)
      os.remove(path)
   end)
end)

-- ---------------------------------------------------------------------------

-- ids of one pass of loader, and its batch count
local function pass(loader)
   local ids, steps = {}, 0
   for batch in loader:iter() do
      steps = steps + 1
      for _, v in ipairs(batch.inputs:to_flat()) do ids[#ids + 1] = v end
   end
   return ids, steps
end

describe('DataLoader:shard', function()
   local function dataset(n) return data.TensorDataset(fnn.arange(1, n + 1):float():reshape(n, 1)) end

   it('splits each pass into disjoint slices that cover it, the same step count on every rank', function()
      for _, c in ipairs{{n = 12, world = 2, b = 2}, {n = 12, world = 3, b = 4}, {n = 10, world = 3, b = 2},
                         {n = 10, world = 3, b = 3, drop = true}, {n = 7, world = 2, b = 2, drop = true},
                         {n = 2, world = 3, b = 1}, {n = 9, world = 1, b = 4}} do
         local what = ('n=%d world=%d batch=%d drop_last=%s'):format(c.n, c.world, c.b, tostring(c.drop))
         local loaders = {}
         for r = 0, c.world - 1 do
            loaders[r] = data.DataLoader(dataset(c.n), c.b):shuffle(true):seed(3):drop_last(c.drop or false)
                                                         :shard(r, c.world)
         end
         local per = c.drop and math.floor(c.n / c.world) or math.ceil(c.n / c.world)
         local batches = c.drop and math.floor(per / c.b) or math.ceil(per / c.b)
         local epochs = {}
         for epoch = 1, 2 do
            local seen, count, all = {}, 0, {}
            for r = 0, c.world - 1 do
               assert.equals(batches, loaders[r]:len(), what)
               local ids, steps = pass(loaders[r])
               assert.equals(batches, steps, what)
               assert.equals(c.drop and batches * c.b or per, #ids, what)
               for _, id in ipairs(ids) do
                  seen[id] = (seen[id] or 0) + 1
                  count = count + 1
                  all[#all + 1] = id
               end
            end
            local distinct = 0
            for id, k in pairs(seen) do
               distinct = distinct + 1
               assert.is_true(id >= 1 and id <= c.n, what)
               if c.drop or c.n % c.world == 0 then assert.equals(1, k, what .. ': id ' .. id .. ' twice') end
            end
            if c.drop then
               -- disjoint, and what is missing is less than one item per rank plus the batch tails
               assert.equals(count, distinct, what)
               assert.is_true(c.n - distinct < c.world * (c.b + 1), what)
            else
               assert.equals(math.min(c.n, count), distinct, what)   -- every item, padding repeats
            end
            epochs[epoch] = table.concat(all, ',')
         end
         if c.n > 3 then assert.are_not.equal(epochs[1], epochs[2], what .. ': two passes alike') end
      end
   end)

   it('gives at step k of the world the batch of one loader at world x batch', function()
      local world, b = 3, 2
      local single = data.DataLoader(dataset(24), world * b):shuffle(true):seed(8)
      local ranks = {}
      for r = 0, world - 1 do ranks[r] = data.DataLoader(dataset(24), b):shuffle(true):seed(8):shard(r, world) end
      for _ = 1, 2 do
         local its = {}
         for r = 0, world - 1 do its[r] = ranks[r]:iter() end
         for batch in single:iter() do
            local want, got = {}, {}
            for _, v in ipairs(batch.inputs:to_flat()) do want[#want + 1] = v end
            for r = 0, world - 1 do
               for _, v in ipairs(its[r]().inputs:to_flat()) do got[#got + 1] = v end
            end
            table.sort(want)
            table.sort(got)
            assert.same(want, got)
         end
      end
   end)

   it('without a seed, still draws the same permutation on every rank', function()
      fnn.manual_seed(1)
      local a = pass(data.DataLoader(dataset(8), 2):shuffle(true):shard(0, 2))
      fnn.manual_seed(2)
      local b = pass(data.DataLoader(dataset(8), 2):shuffle(true):shard(1, 2))
      local seen = {}
      for _, v in ipairs(a) do seen[v] = true end
      for _, v in ipairs(b) do assert.is_nil(seen[v]) seen[v] = true end
      for i = 1, 8 do assert.is_true(seen[i]) end
   end)

   it('refuses a rank outside the world', function()
      local loader = data.DataLoader(dataset(4), 2)
      local err = support.err_of(function() loader:shard(2, 2) end)
      assert.matches('distributed_spec%.lua:%d+: DataLoader:shard: rank is 2, expected 0..1', err)
      err = support.err_of(function() loader:shard(0, 0) end)
      assert.matches('DataLoader:shard: world size is 0, expected a positive integer', err)
   end)
end)

-- ---------------------------------------------------------------------------

if not HAVE_MPI and os.getenv('FASTNN_REQUIRE_MPI') ~= '1' then
   io.stderr:write(('distributed_spec: %s/libfastnn_dist.so not built (-DFASTNN_MPI=ON): '
                    .. 'the mpirun part is left out\n'):format(BUILD))
   return
end

describe('distributed under mpirun', function()
   it('is built (libfastnn_dist and the launcher beside libfastnn)', function()
      assert.is_true(HAVE_MPI, BUILD .. '/libfastnn_dist.so or fastnn-lua is missing: configure with -DFASTNN_MPI=ON')
   end)

   local train = dofile('spec/dist/train.lua')
   for _, np in ipairs{2, 3} do
      describe(('on %d ranks'):format(np), function()
         -- one launch of spec/dist/suite.lua for every check below (MPI_Init costs ~0.5 s here)
         local path = process.tmpname('.fdl')
         local run
         local function suite()
            if not run then
               run = launch(np, 'suite.lua', {path, np == 3 and 'exit' or 'end'})
               ok_run(run, 'spec/dist/suite.lua')
            end
            return run.lines
         end
         teardown(function() os.remove(path) end)

         it('resolves every function of fastnn_dist.h and ends every rank cleanly' ..
            (np == 3 and ' through os.exit' or ''), function()
            local L = suite()
            for k = 0, np - 1 do
               assert.same({0}, L.abi[k])
               assert.is_table(L.finished[k])
            end
            -- mpirun says so when a rank ends without MPI_Finalize
            assert.is_nil(run.err:find('improperly', 1, true), run.err)
            assert.is_nil(run.err:find('MPI_Finalize', 1, true), run.err)
         end)

         it('computes all_reduce, broadcast and all_gather', function()
            local L = suite()
            -- rank k holds [k+1, 10(k+1), -k, 2^k]
            local sum, mx, mn = {0, 0, 0, 0}, {-1e9, -1e9, -1e9, -1e9}, {1e9, 1e9, 1e9, 1e9}
            for k = 0, np - 1 do
               local v = {k + 1, 10 * (k + 1), -k, 2 ^ k}
               for i = 1, 4 do
                  sum[i] = sum[i] + v[i]
                  mx[i], mn[i] = math.max(mx[i], v[i]), math.min(mn[i], v[i])
               end
            end
            for k = 0, np - 1 do
               assert.same({np, k == 0 and 'true' or 'false', k}, L.world[k])   -- one host: local = rank
               support.approx(sum, L.sum[k])
               support.approx({sum[1] / np, sum[2] / np, sum[3] / np, sum[4] / np}, L.mean[k], 1e-6)
               support.approx(mx, L.max[k])
               support.approx(mn, L.min[k])
               support.approx({k + 1, 10 * (k + 1), -k, 2 ^ k}, L.input[k])   -- inputs untouched
               -- a transposed [100, 10] view of arange(1000) times (rank + 1), summed
               local f = np * (np + 1) / 2
               support.approx({100, 10, 0, 100 * f, 999 * f}, L.big[k])
               support.approx({np * (np - 1) / 2, 3 * np}, L.long[k])
               assert.same({'int64'}, L.longtype[k])
               support.approx({np, 10 * np, -(np - 1), 2 ^ (np - 1)}, L.bcast[k])      -- root np-1
               support.approx({7, 7, 7}, L.bcast0[k])                                  -- root 0
               assert.same({np, 1, 2}, L.gather_shape[k])
               local want = {}
               for j = 0, np - 1 do want[#want + 1] = j; want[#want + 1] = j + 0.5 end
               support.approx(want, L.gather[k])
               -- rank 1 passed [3], the others [2]: each rank that sees a difference names both
               assert.matches('^false all_reduce: rank ' .. k .. ' has a float32 tensor %[' .. (k == 1 and 3 or 2)
                              .. '%], rank %d a float32 tensor %[' .. (k == 1 and 2 or 3) .. '%]',
                              table.concat(L.mismatch[k], ' '))
               assert.matches("^false distributed.all_reduce: op 'prod' is not one of 'sum', 'mean', 'max', 'min'", table.concat(L.badop[k], ' '))
               assert.is_table(L.done[k])
            end
         end)

         it(('trains %d ranks at batch 4 to the weights of one process at batch %d'):format(np, 4 * np), function()
            local L = suite()
            local want, steps = train(4 * np, 20)
            assert.equals(20, steps)
            assert.equals(4, #want)
            for _, tag in ipairs{'big', 'small'} do
               for k = 0, np - 1 do
                  local got = L['w_' .. tag][k]
                  assert.is_true(got.multi and #got == #want, 'four parameter lines expected')
                  for i = 1, #want do support.approx(want[i], got[i], 2e-5) end
                  assert.same({20}, L['steps_' .. tag][k])
                  -- 4 parameters of 128, 32, 96 and 12 bytes: one bucket of 25 MB, or 3 of ~100 bytes
                  assert.same({tag == 'big' and 1 or 3}, L['buckets_' .. tag][k])
               end
            end
         end)

         it('syncs when some ranks have no gradient for a parameter', function()
            local L = suite()
            local pre, post = {}, {}
            for k = 0, np - 1 do
               pre[k], post[k] = {}, {}
               for _, f in ipairs(L.pre[k]) do pre[k][f[1]] = f end
               for _, f in ipairs(L.post[k]) do post[k][f[1]] = f end
            end
            for _, name in ipairs{'trunk.weight', 'trunk.bias', 'a.weight', 'a.bias', 'b.weight', 'b.bias'} do
               -- the mean over the ranks, a missing gradient counting as zeros
               local n = #pre[0][name] - 1
               local mean = {}
               for i = 1, n do
                  local s = 0
                  for k = 0, np - 1 do
                     if pre[k][name][2] ~= 'nil' then s = s + pre[k][name][i + 1] end
                  end
                  mean[i] = s / np
               end
               for k = 0, np - 1 do
                  local got = {}
                  for i = 1, n do got[i] = post[k][name][i + 1] end
                  support.approx(mean, got, 1e-5)
               end
            end
            for k = 0, np - 1 do
               assert.equals(k ~= 0, pre[k]['b.bias'][2] == 'nil')      -- only rank 0 used head b
               for _, name in ipairs{'c.weight', 'c.bias', 'frozen.weight', 'frozen.bias'} do
                  assert.equals('nil', post[k][name][2], name .. ' got a gradient on rank ' .. k)
               end
            end
         end)

         it('shards a loader into disjoint slices that cover the pass', function()
            local L = suite()
            local n = 6 * np
            for epoch = 1, 2 do
               local seen = {}
               for k = 0, np - 1 do
                  local ids = L.ids[k][epoch]
                  assert.equals(epoch, ids[1])
                  assert.equals(6, #ids - 1)
                  for i = 2, #ids do
                     assert.is_nil(seen[ids[i]], 'item ' .. ids[i] .. ' on two ranks')
                     seen[ids[i]] = k
                  end
                  assert.same({epoch, 3}, L.steps[k][epoch])
                  assert.same({3}, L.len[k])
               end
               for i = 1, n do assert.is_number(seen[i], 'item ' .. i .. ' on no rank') end
            end
            -- drop_last with 2 items left over: every rank the same number of whole batches
            local per = math.floor((n + 2) / np)
            for k = 0, np - 1 do
               assert.same({math.floor(per / 4)}, L.dlen[k])
               assert.equals(math.floor(per / 4) * 4, #L.dids[k][1] - 1)
               assert.same({1, math.floor(per / 4)}, L.dsteps[k][1])
            end
         end)

         it('writes a checkpoint on rank 0 only and loads it on every rank', function()
            local L = suite()
            local want = L.before[0][1]
            assert.are_not.equal(want, L.before[1][1])            -- the ranks start apart
            for k = 0, np - 1 do
               support.approx({want, 7, 1e-3}, L.after[k], 1e-6)   -- rank 0's weights, step and lr
               assert.is_table(L.finished[k])
            end
            assert.is_true(exists(path))
         end)

         it('aborts the whole job with the failing rank\'s message', function()
            local r = launch(np, 'fail.lua')
            assert.are_not.equal(0, r.rc)
            assert.are_not.equal(124, r.rc, 'the job hung until the timeout')
            assert.is_true(r.seconds < 30, 'took ' .. r.seconds .. ' s')
            assert.matches('fail%.lua:12: matmul: shapes %[2,3%] and %[4,5%] do not agree', r.err)
            assert.matches('rank ' .. (np - 1) .. ' of ' .. np .. ' failed; aborting the job', r.err)
            assert.is_nil(r.out:find('unreachable', 1, true))
         end)

         it('aborts the whole job when one rank calls os.exit with a failure code', function()
            local r = launch(np, 'fail.lua', {'exit'})
            assert.are_not.equal(0, r.rc)
            assert.are_not.equal(124, r.rc, 'the job hung until the timeout')
            assert.is_true(r.seconds < 30, 'took ' .. r.seconds .. ' s')
            assert.is_nil(r.out:find('unreachable', 1, true))
         end)
      end)
   end
end)
