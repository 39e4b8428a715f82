-- The example programs (examples/*.lua, not examples/common/ nor examples/*_host*), each run as
-- a child process of the fastnn-lua launcher with --quick and --out <a temporary directory>:
-- it exits 0, every picture it names in a `wrote <path>` line lies under --out and is a PNG file,
-- and it prints the figure that shows it worked (accuracy above chance, bit-identical frozen
-- weights, a resumed run that continues as if never stopped, ...). --help prints the usage and
-- exits 0; a bad option exits 2 naming it. All the --quick runs together take about 30 s here.
-- The launcher: $FASTNN_LAUNCHER, else fastnn-lua beside $FASTNN_LIB, else build/fastnn-lua.

local process = require 'spec.process'
local exists, read_all, quote = process.exists, process.read_all, process.quote

local LAUNCHER = process.program('fastnn-lua', 'FASTNN_LAUNCHER')

local TMP = io.popen('mktemp -d'):read('*l')

-- examples/<name>.lua with args; {rc, out (stdout and stderr together)}
local function run(name, args)
   local parts = {'FASTNN_PROGRESS=line timeout 300', quote(LAUNCHER), quote('examples/' .. name .. '.lua')}
   for _, a in ipairs(args) do parts[#parts + 1] = quote(a) end
   local p = io.popen('(' .. table.concat(parts, ' ') .. ') </dev/null 2>&1; echo "rc=$?"')
   local text = p:read('*a')
   p:close()
   local out, rc = text:match('^(.-)rc=(%d+)\n?$')
   return {rc = tonumber(rc), out = out or text}
end

-- the --quick run of each example, once, in its own --out directory
local quick_runs = {}
local function quick(name)
   if not quick_runs[name] then
      local out = TMP .. '/' .. name
      quick_runs[name] = run(name, {'--quick', '--out', out})
      quick_runs[name].dir = out
   end
   return quick_runs[name]
end

-- the number after `pattern` (a Lua pattern with one capture) in the output
local function figure(out, pattern)
   local v = out:match(pattern)
   assert(v, ('no match for %q in:\n%s'):format(pattern, out))
   return tonumber(v)
end

local function wrote(out)
   local paths = {}
   for path in out:gmatch('\nwrote ([^\n]+)') do paths[#paths + 1] = path end
   if out:match('^wrote ') then table.insert(paths, 1, out:match('^wrote ([^\n]+)')) end
   return paths
end

local PNG = '\137PNG\r\n\26\n'

-- what each example must print beyond running; pictures: how many it writes at least
local checks = {
   simple_mlp = {pictures = 2, check = function(out)
      assert.matches('\naccuracy 1.00 %(4 of 4%)\n', out)
      assert.matches('\n1 xor 1 %-> %-?0%.%d+\n', out)
   end},
   mnist_mlp = {pictures = 2, check = function(out)
      assert.is_true(out:find('\nMNIST: ', 1, true) ~= nil or out:find('using Fashion-MNIST', 1, true) ~= nil)
      assert.is_true(figure(out, '\ntest accuracy (%d%.%d+)') > 0.6)   -- chance is 0.1
      assert.matches('\nepoch  3/3  train loss ', out)
   end},
   fashion_mlp = {pictures = 2, check = function(out)
      assert.matches('\nFashion%-MNIST: %d+ training', out)
      assert.is_true(figure(out, '\ntest accuracy (%d%.%d+) on Fashion%-MNIST') > 0.6)
   end},
   mnist_cnn = {pictures = 3, check = function(out)
      assert.is_true(figure(out, '\ntest accuracy (%d%.%d+)') > 0.6)
      -- the schedule: the rate after the last epoch is near zero (cosine annealing to 0)
      assert.is_true(figure(out, '\nepoch 2/2 .- lr (%d%.%d+e[-+]%d+)') < 1e-4)
   end},
   finetune = {pictures = 2, check = function(out)
      assert.matches('\nbackbone weights bit%-identical after head training: yes %(%d+ weights compared%)\n', out)
      local trainable, total = out:match('; (%d+) of (%d+) parameters trainable')
      assert.are.equal(128 * 5 + 5, tonumber(trainable))
      assert.is_true(tonumber(total) > tonumber(trainable))
      assert.is_true(figure(out, '\ntest accuracy (%d%.%d+) on the new classes') > 0.35)   -- chance is 0.2
   end},
   multi_task = {pictures = 3, check = function(out)
      assert.is_true(figure(out, '\ntest accuracy (%d%.%d+)') > 0.5)
      local rmse, baseline = out:match('\nintensity RMSE (%d%.%d+) %(always guessing the training mean: (%d%.%d+)%)')
      assert.is_true(tonumber(rmse) < 0.8 * tonumber(baseline), out)
   end},
   image_folder = {pictures = 2, check = function(out)
      assert.matches('\nmade 1000 training and 200 test pictures %(Fashion%-MNIST%) as PNG files under ', out)
      assert.matches('\n10 classes, 1000 training and 200 test pictures %(0 unreadable skipped%)\n', out)
      assert.is_true(figure(out, '\ntest accuracy (%d%.%d+)') > 0.4)   -- chance is 0.1
   end},
   export_onnx = {pictures = 0, check = function(out)
      assert.is_true(figure(out, '\ntest accuracy (%d%.%d+)') > 0.6)
      assert.is_true(figure(out, '\nread back with fnn.onnx.load: max difference ([%d.e+-]+)') <= 1e-5, out)
      -- the printed command runs the exported file in onnxruntime, where it is installed
      local cmd = out:match('\n(python3 %-c "import numpy as np, onnxruntime[^\n]+)\n')
      assert.is_string(cmd, out)
      if os.execute('python3 -c "import onnxruntime, safetensors" >/dev/null 2>&1') == 0 then
         local p = io.popen(cmd .. ' 2>&1')
         local said = p:read('*a')
         p:close()
         assert.is_true(figure(said, 'max difference ([%d.e+-]+)') <= 1e-5, said)
      end
   end},
   keras_fashion = {pictures = 2, check = function(out)
      assert.matches('\nEpoch 2/2 %- 86/86 %- [^\n]+ %- val_loss: [%d.]+ %- val_accuracy: [%d.]+\n', out)
      assert.is_true(figure(out, '\ntest loss [%d.]+  test accuracy (%d%.%d+)') > 0.6)
   end},
}
-- the RustyML seed's two programs: 5 epochs of one batch each, the summary, the prediction shape
for _, name in ipairs{'keras_sequential', 'keras_graph'} do
   checks[name] = {pictures = 1, check = function(out)
      for e = 1, 5 do assert.matches(('\nEpoch %d/5 %%- 1/1 %%- [^\n]+ %%- loss: [%%d.]+\n'):format(e), out) end
      assert.matches('\nloss after 5 epochs: [%d.]+\n', out)
      assert.matches('\nprediction shape: [8,1]\n', out, 1, true)
      assert.matches('Total params: ', out, 1, true)
   end}
end

local names = {}
local listing = io.popen('ls examples/*.lua')
for path in listing:lines() do
   local name = path:match('^examples/([^/]+)%.lua$')
   if name and not name:find('_host', 1, true) then names[#names + 1] = name end
end
listing:close()

describe('examples', function()
   teardown(function() os.execute('rm -rf ' .. quote(TMP)) end)

   it('are all found (examples/*.lua)', function()
      assert.is_true(exists(LAUNCHER), 'no launcher at ' .. LAUNCHER)
      local found = {}
      for _, n in ipairs(names) do found[n] = true end
      for n in pairs(checks) do assert.is_true(found[n] == true, 'examples/' .. n .. '.lua is missing') end
   end)

   for _, name in ipairs(names) do
      describe(name, function()
         it('runs with --quick, exits 0 and writes the PNG files it names under --out', function()
            local r = quick(name)
            assert.are.equal(0, r.rc, r.out)
            local paths = wrote(r.out)
            local want = checks[name] and checks[name].pictures or 0
            assert.is_true(#paths >= want, ('%d pictures named, expected %d:\n%s'):format(#paths, want, r.out))
            for _, path in ipairs(paths) do
               assert.are.equal(r.dir .. '/', path:sub(1, #r.dir + 1), path .. ' is not under --out')
               assert.is_true(exists(path), path .. ' does not exist')
               if path:match('%.png$') then assert.are.equal(PNG, read_all(path):sub(1, 8), path) end
            end
         end)

         if checks[name] then
            it('prints the figures that show it worked', function()
               local r = quick(name)
               assert.are.equal(0, r.rc, r.out)
               checks[name].check('\n' .. r.out)
            end)
         end

         it('prints its usage with --help and exits 0', function()
            local r = run(name, {'--help'})
            assert.are.equal(0, r.rc, r.out)
            assert.matches('usage: ', r.out, 1, true)
            assert.matches('%-%-quick', r.out)
         end)
      end)
   end

   it('mnist_mlp --resume continues from the checkpoint exactly as the uninterrupted run', function()
      local full = quick('mnist_mlp')
      local dir = TMP .. '/mnist_mlp_resume'
      local first = run('mnist_mlp', {'--quick', '--epochs', '2', '--out', dir})
      assert.are.equal(0, first.rc, first.out)
      assert.is_true(exists(dir .. '/mnist_mlp.fdl'))
      local second = run('mnist_mlp', {'--quick', '--resume', '--out', dir})
      assert.are.equal(0, second.rc, second.out)
      assert.matches('\nresumed after epoch 2 from ', second.out)
      assert.is_nil(second.out:find('\nepoch  1/', 1, true))
      -- weights, Adam's moments, the shuffle stream and the random state all came back:
      -- epoch 3 and the test accuracy are the same digits as in the run that never stopped
      local function epoch3(out) return out:match('\n(epoch  3/3  train loss .-)  %(') end
      assert.is_not_nil(epoch3(full.out))
      assert.are.equal(epoch3(full.out), epoch3(second.out))
      assert.are.equal(full.out:match('\n(test accuracy [^\n]+)'), second.out:match('\n(test accuracy [^\n]+)'))
   end)

   it('refuses an unknown option with exit status 2, naming it', function()
      local r = run('simple_mlp', {'--epochz', '3'})
      assert.are.equal(2, r.rc)
      assert.matches("simple_mlp: unknown option '%-%-epochz'", r.out)
      assert.matches('usage: fastnn-lua examples/simple_mlp.lua', r.out, 1, true)
   end)
end)
