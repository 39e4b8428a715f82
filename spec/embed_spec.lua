-- examples/embed_host.c run as a child process: it loads a checkpoint once in C and serves it
-- from 4 threads, each with its own lua_State, the weights shared (fnn.adopt, no copy). Checked
-- here: its exit status, every per-thread line (bit-equal outputs, identical runs, the same
-- weight addresses in every thread), the final line, and its figures against a naive MLP
-- written below for a checkpoint this spec saved; also fnn.adopt itself, inside this process.
-- The program is $FASTNN_EMBED_HOST, else embed_host beside $FASTNN_LIB, else build/embed_host.
local ffi = require 'ffi'
local fnn = require 'fastnn'
local nn = fnn.nn
local support = require 'spec.support'

local process = require 'spec.process'
local read_all, quote = process.read_all, process.quote

local HOST = process.program('embed_host', 'FASTNN_EMBED_HOST')

local TMP = io.popen('mktemp -d'):read('*l')

-- embed_host with args, from /tmp with no hints about where fastnn is (FASTNN_LIB kept: the
-- library under test). {rc, out, err}
local function run(args)
   local out, err = TMP .. '/out', TMP .. '/err'
   local parts = {'cd /tmp && env -u FASTNN_LUA_DIR -u LUA_PATH -u LUA_CPATH -u LUA_INIT timeout 60', quote(HOST)}
   for _, a in ipairs(args) do parts[#parts + 1] = quote(a) end
   local p = io.popen('(' .. table.concat(parts, ' ') .. ') </dev/null >' .. out .. ' 2>' .. err .. '; echo $?')
   local rc = tonumber(p:read('*a'))
   p:close()
   return {rc = rc, out = read_all(out), err = read_all(err)}
end

-- the per-thread lines: every thread bit-equal, steady, sharing `storages` storages at one address
local function check_threads(out, shape, storages)
   local line = '^(%S+ ?%d*): 200 runs, output (%S+) bit%-equal to the single%-thread run, runs identical, '
                .. '(%d+) weight storages shared %(1%.weight at (0x%x+)%)$'
   local seen, address = {}, nil
   for l in out:gmatch('[^\n]+') do
      local who, s, n, at = l:match(line)
      if who then
         assert.equals(shape, s)
         assert.equals(storages, tonumber(n))
         address = address or at
         assert.equals(address, at)         -- one buffer for every state
         seen[who] = true
      end
   end
   for _, who in ipairs{'single-thread', 'thread 1', 'thread 2', 'thread 3', 'thread 4'} do
      assert.is_true(seen[who], who .. ' line missing in:\n' .. out)
   end
   assert.matches('\nembed_host: 4 threads agree\n$', out)
end

-- the fixed batch embed_host feeds: 8 rows, x[r][c] = sin(0.7 r + 1.3 c)
local function naive_mlp(layers, width)
   local x = {}
   for r = 1, 8 do
      x[r] = {}
      for c = 1, width do x[r][c] = math.sin(0.7 * r + 1.3 * c) end
   end
   for li, layer in ipairs(layers) do
      local w, b = layer.weight, layer.bias        -- w[o][i], b[o]
      local y = {}
      for r = 1, 8 do
         y[r] = {}
         for o = 1, #w do
            local acc = b and b[o] or 0
            for i = 1, #w[o] do acc = acc + x[r][i] * w[o][i] end
            if li < #layers then acc = math.max(acc, 0) end   -- ReLU between the Linears
            y[r][o] = acc
         end
      end
      x = y
   end
   return x
end

local function rows(t)
   local flat, shape, out = t:to_flat(), t:shape(), {}
   if #shape == 1 then return flat end
   for r = 1, shape[1] do
      out[r] = {}
      for c = 1, shape[2] do out[r][c] = flat[(r - 1) * shape[2] + c] end
   end
   return out
end

describe('examples/embed_host', function()
   teardown(function() os.execute('rm -rf ' .. quote(TMP)) end)

   it('trains its own checkpoint without an argument, then 4 threads agree', function()
      local r = run({})
      assert.equals('', r.err)
      assert.equals(0, r.rc)
      assert.matches('^embed_host: trained a 16%-32%-4 MLP for 60 steps %(loss [%d.]+ %-> [%d.]+%), saved /tmp/', r.out)
      local first, last = r.out:match('loss ([%d.]+) %-> ([%d.]+)')
      assert.is_true(tonumber(last) < tonumber(first) / 10, 'training did not learn: ' .. first .. ' -> ' .. last)
      assert.matches('\nembed_host: loaded 4 tensors %(676 floats%) from /tmp/embed_host%.%w+/model%.fdl once\n', r.out)
      -- 16x32 weight and 32 bias are storages; the [4] bias lives inline in its header
      check_threads(r.out, '[8,4]', 3)
   end)

   it('serves a checkpoint saved here, with the figures of a naive MLP', function()
      fnn.manual_seed(3)
      local model = nn.Sequential(nn.Linear(5, 20), nn.ReLU(), nn.Linear(20, 6), nn.ReLU(), nn.Linear(6, 3))
      local path = TMP .. '/mlp.fdl'
      fnn.save(model, path)
      local r = run({path})
      assert.equals('', r.err)
      assert.equals(0, r.rc)
      assert.matches('^embed_host: loaded 6 tensors %(267 floats%) from ' .. path:gsub('%p', '%%%0') .. ' once\n', r.out)
      check_threads(r.out, '[8,3]', 4)          -- 1.weight, 1.bias, 3.weight, 5.weight (biases of 6, 3: inline)

      local layers = {}
      for _, i in ipairs{1, 3, 5} do
         layers[#layers + 1] = {weight = rows(model[i].weight:tensor()), bias = rows(model[i].bias:tensor())}
      end
      local want = naive_mlp(layers, 5)
      local sum_s, row_s = r.out:match('single%-thread output %[8,3%] sum (%S+) row 1:([^\n]*)')
      assert.is_truthy(sum_s, r.out)
      local sum = 0
      for rr = 1, 8 do for c = 1, 3 do sum = sum + want[rr][c] end end
      assert.is_true(math.abs(tonumber(sum_s) - sum) < 1e-4, ('sum %s, naive %.9g'):format(sum_s, sum))
      local got = {}
      for v in row_s:gmatch('%S+') do got[#got + 1] = tonumber(v) end
      support.approx_abs(want[1], got, 1e-5)
   end)

   it('refuses a checkpoint that is not an nn.Sequential MLP, in every state', function()
      local path = TMP .. '/other.safetensors'
      fnn.save_safetensors({encoder = fnn.ones(4, 4)}, path)
      local r = run({path})
      assert.equals(1, r.rc)
      assert.matches('single%-thread: error: checkpoint tensor encoder is not <i>%.weight or <i>%.bias', r.out)
      assert.is_nil(r.out:find('threads agree', 1, true))
   end)

   it('fails on a missing file naming it, and on two arguments with its usage', function()
      local r = run({TMP .. '/missing.fdl'})
      assert.equals(1, r.rc)
      assert.matches('embed_host: [^\n]*missing%.fdl[^\n]*', r.err)
      r = run({'a.fdl', 'b.fdl'})
      assert.equals(2, r.rc)
      assert.matches('^usage: [^\n]*embed_host %[model%.fdl%]', r.err)
   end)
end)

describe('fnn.adopt', function()
   it('wraps a tensor given as a pointer without copying, detached, one more reference', function()
      local C = require 'fastnn.C'
      local p = fnn.Param(support.seq({4, 5}))
      local t = p:tensor() * 2                       -- has a node, 20 floats in a storage
      local box = ffi.new('fnn_tensor[1]', t)        -- a header as a C host would hold it
      local a = fnn.adopt(box)
      assert.equals(ffi.cast('uintptr_t', C.fnn_tensor_data(t)), ffi.cast('uintptr_t', C.fnn_tensor_data(a)))
      assert.is_nil(a:grad_fn())                     -- adopted tensors never join a graph
      assert.same({4, 5}, a:shape())
      support.approx(t:to_flat(), a)
      -- the reference is the adopter's own: dropping the other handles keeps the data alive
      t, box, p = nil, nil, nil
      collectgarbage(); collectgarbage()
      support.approx((support.seq({4, 5}) * 2):to_flat(), a)
      -- an untyped pointer works the same (embed_host passes lightuserdata); inline data is copied
      local keep = ffi.new('fnn_tensor[1]', fnn.ones(3))
      assert.same({1, 1, 1}, fnn.adopt(ffi.cast('void *', keep)):to_flat())
   end)

   it('refuses what is not a tensor pointer', function()
      assert.matches('adopt: expected a pointer to an fnn_tensor, got a number', support.err_of(function() fnn.adopt(5) end))
      assert.matches('adopt: the pointer is NULL', support.err_of(function() fnn.adopt(ffi.cast('void *', 0)) end))
      local empty = ffi.new('fnn_tensor[1]')
      require('fastnn.C').fnn_tensor_init(empty)
      assert.matches('^[^\n]*embed_spec%.lua:%d+: adopt: ', support.err_of(function() fnn.adopt(empty) end))
      local ok, err = fnn.try_adopt(5)
      assert.is_nil(ok)
      assert.matches('^adopt: expected a pointer', err)
   end)
end)
