-- The CPU compute layer (core/blas.c): every op whose products run in oneDNN or in OpenBLAS gives
-- the same values and gradients through both kernel paths (fnn.set_kernels), on odd shapes,
-- transposed and broadcast operands; fnn.config(); and the check of OpenBLAS's core, run in child
-- processes that start OpenBLAS on its generic kernels (OPENBLAS_CORETYPE=Prescott).
-- (The convolutions have their own such spec, conv_kernels_spec.lua.)
local fnn = require 'fastnn'
local nn = fnn.nn
local process = require 'spec.process'

local config = fnn.config()
local has_onednn = not config.onednn:match('^not built')
-- what the library selected at load: FASTNN_KERNELS when set, else oneDNN where it is built
local default_kernels = os.getenv('FASTNN_KERNELS') or (has_onednn and 'onednn' or 'portable')

-- the largest |a - b| over the largest |a| (at least 1)
local rel_diff = require('support').rel_diff

-- a shell command's stdout and stderr (through a temporary file); a non-zero exit fails the spec
local function child_output(command)
   local out = os.tmpname()
   local p = io.popen(('%s >%s 2>&1; echo $?'):format(command, out))
   local rc = tonumber(p:read('*a'))
   p:close()
   local text = process.read_all(out)
   os.remove(out)
   assert.equals(0, rc, text)
   return text
end

-- run(case) with each kernel path; case() returns a list of tensors (outputs and gradients)
local function both_paths(case)
   local results = {}
   for _, kernels in ipairs{'onednn', 'portable'} do
      fnn.set_kernels(kernels)
      fnn.manual_seed(7)
      results[kernels] = case()
   end
   fnn.set_kernels('onednn')
   return results.onednn, results.portable
end

-- out's gradient is a fixed random weighting, so every output element matters to every gradient
local function backward_weighted(out)
   local w = fnn.randn(unpack(out:shape()))
   local loss = (out * w):sum()
   loss:backward()
end

local function grads_of(params)
   local list = {}
   for i, p in ipairs(params) do list[i] = p:grad() end
   return list
end

-- a recurrent layer's output and the gradients of its input and every parameter
local function recurrent(layer, shape)
   local x = fnn.Param(fnn.randn(unpack(shape)))
   local y = layer(x:tensor())
   backward_weighted(y)
   local out = {y, x:grad()}
   for _, g in ipairs(grads_of(layer:parameters())) do out[#out + 1] = g end
   return out
end

local cases = {
   {'matmul, odd sizes', function()
      local a, b = fnn.Param(fnn.randn(37, 53)), fnn.Param(fnn.randn(53, 29))
      local y = a:tensor():matmul(b:tensor())
      backward_weighted(y)
      return {y, a:grad(), b:grad()}
   end},
   {'matmul of transposed views (no copies: the GEMM reads them transposed)', function()
      local a, b = fnn.Param(fnn.randn(41, 19)), fnn.Param(fnn.randn(23, 41))
      local y = a:tensor():transpose(1, 2):matmul(b:tensor():transpose(1, 2))
      backward_weighted(y)
      return {y, a:grad(), b:grad()}
   end},
   {'batched matmul with broadcast batch dims', function()
      local a, b = fnn.Param(fnn.randn(3, 1, 5, 17)), fnn.Param(fnn.randn(4, 17, 6))
      local y = a:tensor():matmul(b:tensor())
      backward_weighted(y)
      return {y, a:grad(), b:grad()}
   end},
   {'bmm', function()
      local a, b = fnn.Param(fnn.randn(5, 9, 33)), fnn.Param(fnn.randn(5, 33, 7))
      local y = fnn.bmm(a:tensor(), b:tensor())
      backward_weighted(y)
      return {y, a:grad(), b:grad()}
   end},
   {'matrix times vector and vector times matrix', function()
      local m, v = fnn.Param(fnn.randn(13, 31)), fnn.Param(fnn.randn(31))
      local y1, y2 = m:tensor():matmul(v:tensor()), v:tensor():matmul(m:tensor():transpose(1, 2))
      backward_weighted(y1)
      return {y1, y2, m:grad(), v:grad()}
   end},
   {'nn.Linear on a [N, T, F] input', function()
      local layer = nn.Linear(45, 27)
      local x = fnn.Param(fnn.randn(3, 11, 45))
      local y = layer(x:tensor())
      backward_weighted(y)
      return {y, x:grad(), layer.weight:grad(), layer.bias:grad()}
   end},
   {"nn.Linear large enough for oneDNN's matmul primitive (the bias inside the product), with and without a bias",
    function()
      local layer, plain = nn.Linear(200, 96), nn.Linear(200, 40, {bias = false})
      local x = fnn.Param(fnn.randn(4, 100, 200))
      local y = layer(x:tensor())
      local z = plain(x:tensor())
      backward_weighted(y)
      backward_weighted(z)
      return {y, z, x:grad(), layer.weight:grad(), layer.bias:grad(), plain.weight:grad()}
   end},
   {'nn.Linear on a transposed input (not row-major: the GEMM path)', function()
      local layer = nn.Linear(150, 70)
      local x = fnn.Param(fnn.randn(150, 300))
      local y = layer(x:tensor():transpose(1, 2))
      backward_weighted(y)
      return {y, x:grad(), layer.weight:grad(), layer.bias:grad()}
   end},
   {'attention large enough for the GEMM path, causal and not', function()
      local q, k, v = fnn.Param(fnn.randn(1, 2, 260, 64)), fnn.Param(fnn.randn(1, 2, 260, 64)),
                      fnn.Param(fnn.randn(1, 2, 260, 64))
      local y = fnn.attention(q:tensor(), k:tensor(), v:tensor(), {causal = true}) + fnn.attention(q:tensor(), k:tensor(), v:tensor())
      backward_weighted(y)
      return {y, q:grad(), k:grad(), v:grad()}
   end},
   {"attention on char_gpt's head size (oneDNN's GEMM against the portable build's own kernel)", function()
      local q, k, v = fnn.Param(fnn.randn(2, 4, 64, 32)), fnn.Param(fnn.randn(2, 4, 64, 32)),
                      fnn.Param(fnn.randn(2, 4, 64, 32))
      local y = fnn.attention(q:tensor(), k:tensor(), v:tensor(), {causal = true})
      backward_weighted(y)
      return {y, q:grad(), k:grad(), v:grad()}
   end},
   {'nn.LSTM, two layers', function() return recurrent(nn.LSTM(7, 13, {num_layers = 2}), {5, 9, 7}) end},
   {'nn.GRU', function() return recurrent(nn.GRU(6, 10), {4, 8, 6}) end},
   {"nn.LSTM with steps large enough for oneDNN's matmul primitive (C added inside the kernel)", function()
      return recurrent(nn.LSTM(64, 128), {32, 6, 64})
   end},
}

describe('the compute layer', function()
   it('reports what a bug report needs in fnn.config()', function()
      for _, key in ipairs{'cpu', 'isa', 'kernels', 'blas', 'blas_core', 'blas_core_note', 'onednn', 'threads', 'build'} do
         assert.is_string(config[key], key)
      end
      assert.matches('^OpenBLAS %d', config.blas)
      assert.equals(tostring(fnn.get_num_threads()), config.threads)
      -- the widest CPU variant of the core's loops the build has (CMake's FASTNN_MAX_CLONE)
      local clones = config.build:match(', clones (%w+)$')
      assert.is_truthy(clones == 'v4' or clones == 'v3' or clones == 'none', config.build)
      local text = tostring(config)
      assert.matches('\n  cpu +', text)
      assert.matches('\n  blas_core +' .. config.blas_core, text)
   end)

   it('refuses an unknown kernel library, naming the choices', function()
      local ok, err = pcall(fnn.set_kernels, 'mkl')
      assert.is_false(ok)
      assert.matches("set_kernels: unknown kernels 'mkl' %(choices: onednn, portable%)", err)
      assert.equals(default_kernels, fnn.get_kernels())
   end)

   if not has_onednn then
      it('runs the portable kernels only, and says so, in a build without oneDNN', function()
         local ok, err = pcall(fnn.set_kernels, 'onednn')
         assert.is_false(ok)
         assert.matches('FASTNN_ONEDNN=OFF', err)
         assert.equals('portable', config.kernels)
      end)
      return
   end

   it('selects oneDNN by default and OpenBLAS on request', function()
      assert.equals(default_kernels, config.kernels)
      assert.matches('^%d+%.%d+%.%d+', config.onednn)
      fnn.set_kernels('portable')
      assert.equals('portable', fnn.get_kernels())
      assert.equals('portable', fnn.config().kernels)
      fnn.set_kernels('onednn')
      assert.equals('onednn', fnn.get_kernels())
   end)

   it('makes no oneDNN primitive in a training step after the first (they are cached by shape)', function()
      local model = nn.Sequential(nn.Conv2d(3, 8, 3, {padding = 1}), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 12 * 12, 64),
                                  nn.ReLU(), nn.Linear(64, 10))
      local opt = fnn.optim.Adam(model:parameters(), 1e-3)
      local ids = {}
      for i = 1, 16 do ids[i] = (i - 1) % 10 + 1 end
      local x, y = fnn.randn(16, 3, 12, 12), fnn.tensor(ids):long()
      local function step()
         opt:zero_grad()
         nn.cross_entropy(model(x), y):backward()
         opt:step()
         return tonumber(fnn.config().onednn_primitives)
      end
      local after_first = step()
      assert.is_true(after_first > 0)
      assert.equals(after_first, step())
      assert.equals(after_first, step())
   end)

   for _, case in ipairs(cases) do
      it(case[1] .. ': the same values and gradients through oneDNN and OpenBLAS', function()
         local a, b = both_paths(case[2])
         assert.equals(#a, #b)
         for i = 1, #a do
            assert.same(a[i]:shape(), b[i]:shape())
            local d = rel_diff(a[i], b[i])
            assert.is_true(d <= 2e-5, ('%s, result %d: relative difference %.3g'):format(case[1], i, d))
         end
      end)
   end
end)

-- a child process whose OpenBLAS starts on its generic SSE3 kernels, as Debian 12's 0.3.21 does on
-- CPUs newer than it knows (Sapphire and Emerald Rapids)
describe("OpenBLAS's core", function()
   local launcher = process.program('fastnn-lua', 'FASTNN_LAUNCHER')
   local probe = [[
      local fnn = require 'fastnn'
      fnn.set_kernels('portable')
      local c = fnn.config()
      -- a product through OpenBLAS, against a plain loop
      local a, b = fnn.randn(67, 45), fnn.randn(45, 71)
      local y, fa, fb = a:matmul(b):to_flat(), a:to_flat(), b:to_flat()
      local worst = 0
      for i = 0, 66 do
         for j = 0, 70 do
            local s = 0
            for p = 0, 44 do s = s + fa[i * 45 + p + 1] * fb[p * 71 + j + 1] end
            worst = math.max(worst, math.abs(s - y[i * 71 + j + 1]))
         end
      end
      print('core=' .. c.blas_core)
      print('note=' .. c.blas_core_note)
      print('worst=' .. worst)
   ]]
   local function run(env)
      local script = process.tmpname('.lua')
      process.write_file(script, probe)
      local out, err = os.tmpname(), os.tmpname()
      local cmd = ('env %s timeout 60 %s %s >%s 2>%s; echo $?'):format(env, process.quote(launcher),
                                                                      process.quote(script), out, err)
      local p = io.popen(cmd)
      local rc = tonumber(p:read('*a'))
      p:close()
      local r = {rc = rc, out = process.read_all(out), err = process.read_all(err)}
      os.remove(script); os.remove(out); os.remove(err)
      return r
   end
   local wide = config.isa:match('AVX2') and config.isa:match('FMA')

   it('is corrected when OpenBLAS chose a generic core on a CPU with AVX2 or AVX-512', function()
      local r = run('OPENBLAS_CORETYPE=Prescott')
      assert.equals(0, r.rc, r.err)
      assert.is_true(tonumber(r.out:match('worst=(%S+)')) < 1e-3, r.out)
      if wide then
         local core = r.out:match('core=(%S+)')
         assert.are_not.equal('Prescott', core)
         assert.matches('note=corrected from Prescott', r.out)
         assert.equals(config.isa:match('AVX%-512') and true or false, core == 'SkylakeX' or core == 'Cooperlake')
         assert.equals('', r.err)   -- corrected: nothing to warn about
      else
         assert.matches('core=Prescott', r.out)
         assert.matches('note=chosen by OpenBLAS', r.out)
      end
   end)

   it('is warned about once, with its figures, when it may not be changed', function()
      local r = run('OPENBLAS_CORETYPE=Prescott FASTNN_BLAS_CORE=keep')
      assert.equals(0, r.rc, r.err)
      assert.is_true(tonumber(r.out:match('worst=(%S+)')) < 1e-3, r.out)
      assert.matches('core=Prescott', r.out)
      if wide then
         local _, count = r.err:gsub("OpenBLAS runs its 'Prescott' kernels on this CPU", '')
         assert.equals(1, count, r.err)
         assert.matches('%d+ GFLOP/s on one thread', r.err)
         assert.matches('note=left at Prescott', r.out)
      end
   end)
end)

-- OpenBLAS starts a pool of threads when it loads, which poll for work for ~0.27 s: under the oneDNN
-- kernels (which never call OpenBLAS on more than one thread) core/blas.c stops it at load; a threaded
-- GEMM of the portable kernels starts it again. A child process counts its threads (/proc/self/status)
describe("OpenBLAS's pool", function()
   local launcher = process.program('fastnn-lua', 'FASTNN_LAUNCHER')
   local function threads_of(env, code)
      return child_output(('env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS %s timeout 60 %s -e %s'):format(
         env, process.quote(launcher), process.quote([[
            local function threads()
               for line in io.lines('/proc/self/status') do
                  local n = line:match('^Threads:%s*(%d+)')
                  if n then return n end
               end
            end
            local fnn = require 'fastnn'
            io.write(threads())
            ]] .. code .. [[
            io.write(' ', threads())]])))
   end
   local cores = tonumber(io.popen('nproc'):read('*l'))

   it('is stopped at load under the oneDNN kernels and started again by the portable kernels', function()
      assert(cores >= 2, 'one core: OpenBLAS starts no pool, so there is nothing to check here')
      local kept = threads_of('FASTNN_KERNELS=portable', ''):match('^(%d+)')
      assert.is_true(tonumber(kept) >= 2, kept)         -- the portable kernels keep it from the start
      if has_onednn then
         local product = "fnn.set_kernels('portable'); fnn.set_num_threads(2); " ..
                         "local a = fnn.rand(512, 512); a:matmul(a):free()"
         local before, after = threads_of('FASTNN_KERNELS=onednn', product):match('^(%d+) (%d+)$')
         assert.equals('1', before)                     -- only the main thread: no pool polling
         assert.is_true(tonumber(after) >= 2, after)    -- OpenBLAS's pool is back for its threaded GEMM
      end
   end)
end)

-- lua/fastnn/C.lua sets how OpenMP's workers wait before libgomp loads: a short spin with the
-- oneDNN kernels (every GEMM runs in OpenMP's pool; passive waiting cost lstm_seq 2x), passive with
-- the portable ones (OpenBLAS's own pool needs the cores). It reads which from the library's
-- DT_NEEDED entries, through libfastnn to the libfastnn_core beside it.
describe("OpenMP's wait policy", function()
   local launcher = process.program('fastnn-lua', 'FASTNN_LAUNCHER')
   local function policy(env)
      return child_output(('env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u FASTNN_KERNELS %s timeout 60 %s -e %s')
         :format(env, process.quote(launcher), process.quote(
            "local fnn = require 'fastnn'; io.write(os.getenv('GOMP_SPINCOUNT') or '-', ' ', " ..
            "os.getenv('OMP_WAIT_POLICY') or '-')")))
   end

   it('spins briefly with the oneDNN kernels and waits passively with the portable ones', function()
      assert.equals(has_onednn and '10000 -' or '- PASSIVE', policy(''))
      assert.equals('- PASSIVE', policy('FASTNN_KERNELS=portable'))
      assert.equals('- ACTIVE', policy('OMP_WAIT_POLICY=ACTIVE'))   -- the user's choice stands
   end)
end)
