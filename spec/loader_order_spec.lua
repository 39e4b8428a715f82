-- The order of a DataLoader pass, drawn in C (fnn_loader_order, core/io/data.c), must be the
-- permutation the loader drew in Lua before: a naive Fisher-Yates over a splitmix64 stream, written
-- here as it was. Every loader path (shuffle or not, drop_last, reuse, prefetch, workers, unseeded
-- under fnn.manual_seed) must give the batches of that permutation, pass after pass (the stream
-- continues); a pass's order buffer serves the next pass only once its own pass is over; reuse's
-- batch table and headers are the same across a pass, the default's are fresh.
local fnn = require 'fastnn'
local ffi = require 'ffi'
local bit = require 'bit'
local data = fnn.data
local C = require('fastnn.tensor').C
local fnn_tensor = require 'fastnn.tensor'

local batches = require('support').batches

-- the reference: the Lua the loader ran until fnn_loader_order (DataLoader.lua's seed_state,
-- next_u64 and order_of), one uint64 state per stream
local function seed_state(n)
   local s = ffi.new('uint64_t[1]')
   s[0] = ffi.cast('uint64_t', n) * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL
   return s
end
local function next_u64(s)
   local z = s[0] + 0x9E3779B97F4A7C15ULL
   s[0] = z
   z = bit.bxor(z, bit.rshift(z, 30)) * 0xBF58476D1CE4E5B9ULL
   z = bit.bxor(z, bit.rshift(z, 27)) * 0x94D049BB133111EBULL
   return bit.bxor(z, bit.rshift(z, 31))
end
local function ref_order(n, s)   -- a Lua array of 1-based ids
   local ids = {}
   for i = 1, n do ids[i] = i end
   if s then
      for i = n - 1, 1, -1 do
         local j = tonumber(next_u64(s) % (i + 1))
         ids[i + 1], ids[j + 1] = ids[j + 1], ids[i + 1]
      end
   end
   return ids
end

local function c_order(n, s)
   local buf = ffi.new('int64_t[?]', math.max(n, 1))
   if C.fnn_loader_order(buf, n, s) ~= 0 then return nil, fnn_tensor.last_error() end
   local ids = {}
   for i = 1, n do ids[i] = tonumber(buf[i - 1]) end
   return ids
end

-- inputs [n, 2]: row i is {i, -i}; targets: i * 10 (so a batch's rows name its items)
local function numbered(n)
   local rows, tg = {}, {}
   for i = 1, n do rows[i] = {i, -i}; tg[i] = i * 10 end
   return data.TensorDataset(fnn.tensor(rows), fnn.tensor(tg))
end

-- the batches a pass over order must give (as support.batches reads them)
local function want_batches(order, b, drop)
   local n = #order
   local limit = drop and math.floor(n / b) * b or n
   local out = {}
   for at = 1, limit, b do
      local m = math.min(b, limit - at + 1)
      local x, y = {}, {}
      for k = 0, m - 1 do
         local i = order[at + k]
         x[#x + 1], x[#x + 2] = i, -i
         y[#y + 1] = i * 10
      end
      out[#out + 1] = {size = m, inputs = x, ishape = {m, 2}, idtype = 'float32', targets = y, tshape = {m}}
   end
   return out
end

describe('fnn_loader_order', function()
   it('is the Lua Fisher-Yates over splitmix64, draw for draw, and leaves the stream where it did', function()
      for _, n in ipairs{0, 1, 2, 3, 10, 128, 257, 5000} do
         for _, seed in ipairs{0, 1, 7, 123456789, -3, 2^52 - 1} do
            local a, b = seed_state(seed), seed_state(seed)
            for pass = 1, 2 do   -- the second pass continues the stream
               assert.same(ref_order(n, a), assert(c_order(n, b)), ('n %d seed %s pass %d'):format(n, seed, pass))
               assert.equals(a[0], b[0])
            end
         end
      end
   end)

   it('without a stream fills 1..n and draws nothing', function()
      assert.same({1, 2, 3, 4, 5}, c_order(5, nil))
      local s = seed_state(4)
      local before = s[0]
      assert.same({1}, c_order(1, s))   -- one id: no swap, no draw (as the Lua loop)
      assert.equals(before, s[0])
   end)

   it('refuses a negative count and a missing buffer', function()
      assert.is_nil(c_order(-1, nil))
      assert.matches('loader_order: %-1 ids %(must be >= 0%)', select(2, c_order(-1, nil)))
      assert.equals(0, C.fnn_loader_order(nil, 0, nil))
      assert.are_not.equal(0, C.fnn_loader_order(nil, 3, nil))
      assert.matches('loader_order: 3 ids but no id array', fnn_tensor.last_error())
   end)
end)

describe('DataLoader order', function()
   it('gives the batches of the reference permutation: shuffle, drop_last, reuse, prefetch, workers', function()
      local n = 23
      local ds = numbered(n)
      for _, b in ipairs{1, 4, 5, 23, 30} do
         for _, shuffle in ipairs{false, true} do
            for _, drop in ipairs{false, true} do
               for _, reuse in ipairs{false, true} do
                  for _, cfg in ipairs{{0, 1}, {2, 1}, {3, 2}} do
                     local loader = data.DataLoader(ds, b, {shuffle = shuffle, seed = b, drop_last = drop, reuse = reuse,
                                                            prefetch = cfg[1], workers = cfg[2]})
                     local s = seed_state(b)
                     for pass = 1, 3 do
                        local want = want_batches(ref_order(n, shuffle and s or nil), b, drop)
                        assert.same(want, batches(loader), ('b %d shuffle %s drop %s reuse %s prefetch %d pass %d'):format(
                           b, tostring(shuffle), tostring(drop), tostring(reuse), cfg[1], pass))
                     end
                  end
               end
            end
         end
      end
   end)

   it('without seed draws each pass its stream from fastnn.random_uniform, as before', function()
      local n = 40
      local ds = numbered(n)
      for _, reuse in ipairs{false, true} do
         fnn.manual_seed(11)
         local s1 = seed_state(math.floor(C.fnn_random_uniform() * 2^52))
         local s2 = seed_state(math.floor(C.fnn_random_uniform() * 2^52))
         local w1, w2 = want_batches(ref_order(n, s1), 8), want_batches(ref_order(n, s2), 8)
         fnn.manual_seed(11)
         local loader = data.DataLoader(ds, 8, {shuffle = true, reuse = reuse})
         assert.same(w1, batches(loader))
         assert.same(w2, batches(loader))
      end
   end)

   it('keeps a pass\'s order while it runs: two passes at once, a pass left by a break', function()
      local n, b = 30, 4
      local ds = numbered(n)
      for _, reuse in ipairs{false, true} do
         local s = seed_state(5)
         local w1 = want_batches(ref_order(n, s), b)
         local w2 = want_batches(ref_order(n, s), b)
         local w3 = want_batches(ref_order(n, s), b)
         local w4 = want_batches(ref_order(n, s), b)
         local loader = data.DataLoader(ds, b, {shuffle = true, seed = 5, reuse = reuse})
         local function read(batch)
            return {size = batch.size, inputs = batch.inputs:to_flat(), ishape = batch.inputs:shape(),
                    idtype = batch.inputs:dtype(), targets = batch.targets:to_flat(), tshape = batch.targets:shape()}
         end
         -- pass 1 half read, pass 2 whole (its buffer then spare), pass 1 finished, pass 3 (takes
         -- pass 2's buffer) interleaved with pass 4 (a fresh one), pass 3 left early
         local it1, got1 = loader:iter(), {}
         for _ = 1, 3 do got1[#got1 + 1] = read(it1()) end
         assert.same(w2, batches(loader))
         for batch in it1 do got1[#got1 + 1] = read(batch) end
         assert.same(w1, got1)
         local it3, got3 = loader:iter(), {}
         local it4, got4 = loader:iter(), {}
         for _ = 1, 2 do
            got3[#got3 + 1] = read(it3())
            got4[#got4 + 1] = read(it4())
         end
         for batch in it4 do got4[#got4 + 1] = read(batch) end
         got3[#got3 + 1] = read(it3())
         assert.same({w3[1], w3[2], w3[3]}, got3)
         assert.same(w4, got4)
         -- pass 3 left: pass 5 and 6 still follow the stream
         assert.same(want_batches(ref_order(n, s), b), batches(loader))
         assert.same(want_batches(ref_order(n, s), b), batches(loader:prefetch(2)))
      end
   end)

   it('hands a finished pass\'s buffer to any loader, never one a pass still reads', function()
      local big, small = numbered(50), numbered(20)
      local sa, sb = seed_state(1), seed_state(2)
      local a = data.DataLoader(big, 6, {shuffle = true, seed = 1})
      local b = data.DataLoader(small, 3, {shuffle = true, seed = 2, reuse = true})
      assert.same(want_batches(ref_order(50, sa), 6), batches(a))   -- its 50-id buffer is spare now
      local wa, wb = want_batches(ref_order(50, sa), 6), want_batches(ref_order(20, sb), 3)
      local ia, ib = a:iter(), b:iter()   -- b takes the spare, a makes its own
      local ga, gb = {}, {}
      local function read(batch)
         return {size = batch.size, inputs = batch.inputs:to_flat(), ishape = batch.inputs:shape(),
                 idtype = batch.inputs:dtype(), targets = batch.targets:to_flat(), tshape = batch.targets:shape()}
      end
      for _ = 1, #wb do
         gb[#gb + 1] = read(ib())
         local x = ia()
         if x then ga[#ga + 1] = read(x) end
      end
      assert.is_nil(ib())   -- b's pass over: its buffer is spare again, while a's pass still reads its own
      assert.same(want_batches(ref_order(20, sb), 3), batches(b))
      for batch in ia do ga[#ga + 1] = read(batch) end
      assert.same(wa, ga)
      assert.same(wb, gb)
   end)

   it('with shard: each rank\'s slice of the reference permutation (seed 0 unless given)', function()
      local n = 17
      local ds = numbered(n)
      for _, reuse in ipairs{false, true} do
         local s = seed_state(0)
         local order = ref_order(n, s)
         local mine = {}
         for j = 0, math.ceil(n / 3) - 1 do mine[#mine + 1] = order[(1 + j * 3) % n + 1] end
         assert.same(want_batches(mine, 4), batches(data.DataLoader(ds, 4, {shuffle = true, reuse = reuse}):shard(1, 3)))
      end
   end)

   it('reuse: one batch table and the same headers for a pass; the default: fresh ones', function()
      local ds = numbered(20)
      for _, depth in ipairs{0, 2} do
         local tables, inputs, n = {}, {}, 0
         for batch in data.DataLoader(ds, 3, {shuffle = true, reuse = true, prefetch = depth}):iter() do
            tables[batch] = true
            inputs[tostring(ffi.cast('void *', batch.inputs))] = true
            n = n + 1
         end
         local function count(t) local k = 0 for _ in pairs(t) do k = k + 1 end return k end
         assert.equals(7, n)
         assert.equals(1, count(tables))
         assert.equals(depth == 0 and 1 or 2, count(inputs))   -- prefetch: two header pairs take turns
         tables, n = {}, 0
         for batch in data.DataLoader(ds, 3, {shuffle = true, prefetch = depth}):iter() do
            tables[batch] = true
            n = n + 1
         end
         assert.equals(7, count(tables))
      end
   end)
end)

describe('take_batch_into', function()
   it('checks the ids against the targets too when they have fewer rows than the inputs', function()
      local x, y = fnn_tensor.new(), fnn_tensor.new()
      local xb, yb = fnn_tensor.new(), fnn_tensor.new()
      local ids = ffi.new('int64_t[2]', {1, 5})
      local rc = C.fnn_take_batch_into(x, y, xb, yb, C.FNN_PREFETCH_ROWS, fnn.zeros(6, 2), fnn.zeros(4), 0, 0, 2, ids, 2)
      assert.are_not.equal(0, rc)
      assert.matches('take_rows: id 5 outside 1%.%.4 %(rows of %[4%]%)', fnn_tensor.last_error())
      assert.equals(0, C.fnn_take_batch_into(x, y, xb, yb, C.FNN_PREFETCH_ROWS, fnn.zeros(6, 2), fnn.zeros(6), 0, 0, 2,
                                             ids, 2))
      for _, t in ipairs{x, y, xb, yb} do C.fnn_tensor_clear(t) end
   end)
end)

-- Ctrl-C in a bare loop over a reused pass: the batches skip done(), where ops poll the host's
-- interrupt flag, so the loader polls it itself. A launcher child (as interrupt_leak_spec) runs a
-- pass of 3,000,000 one-row batches (~1 s here) and interrupts itself after 0.1 s: the
-- pass must stop at a batch in the middle, not at its end.
describe('DataLoader reuse and Ctrl-C', function()
   local process = require 'spec.process'
   local SCRIPT = [[
local ffi = require 'ffi'
ffi.cdef 'int getpid(void);'
local fnn = require 'fastnn'
local data = fnn.data
local N = 3000000
local ds = data.TensorDataset(fnn.zeros(N, 1), fnn.zeros(N))
for _, depth in ipairs{0, 2} do
   local loader = data.DataLoader(ds, 1, {shuffle = true, seed = 1, reuse = true, prefetch = depth})
   for _ in data.DataLoader(ds, 1000, {reuse = true}):iter() do end   -- traces warm
   os.execute(('(sleep 0.1; kill -INT %d) &'):format(ffi.C.getpid()))
   local seen = 0
   local ok, err = pcall(function() for _ in loader:iter() do seen = seen + 1 end end)
   print(('prefetch %d: %s after %s of %d batches'):format(depth, ok and 'finished' or tostring(err):match('interrupted') or tostring(err),
                                                   seen < N and 'part' or 'all', N))
end
]]
   it('stops a long pass at its next batch, on the main thread and with prefetch', function()
      local launcher = process.program('fastnn-lua', 'FASTNN_LAUNCHER')
      local path = os.tmpname()
      process.write_file(path, SCRIPT)
      local p = io.popen(('FASTNN_LUA_DIR=%s %s %s 2>&1; echo "rc=$?"'):format(
         process.quote(process.cwd .. '/lua'), process.quote(launcher), process.quote(path)))
      local out = p:read('*a')
      p:close()
      os.remove(path)
      assert.matches('prefetch 0: interrupted after part of 3000000 batches\nprefetch 2: interrupted after part of 3000000 batches\nrc=0\n$', out)
   end)
end)
