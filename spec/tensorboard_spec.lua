-- fnn.tensorboard.SummaryWriter and nn.callbacks.TensorBoard, read back by TensorBoard itself:
-- spec/tensorboard_read.py runs TensorBoard's EventAccumulator and record iterator (tensorboard
-- from PyPI) over what we write and prints what they read. Histograms are checked against a naive
-- count over PyTorch's default bins written out here, and against torch.utils.tensorboard's own
-- make_histogram where torch is installed. Without tensorboard the reading part is left out with a
-- note, unless FASTNN_REQUIRE_TENSORBOARD=1 (CI), where its absence fails.
local ffi = require 'ffi'
local fnn = require 'fastnn'
local json = require 'fastnn.json'
local process = require 'spec.process'
local support = require 'support'
local tb = fnn.tensorboard
local nn, optim = fnn.nn, fnn.optim

local dir = process.tmpdir()
teardown(function() os.execute('rm -rf ' .. process.quote(dir)) end)
local cwd = process.cwd

local function f32(v) return tonumber(ffi.new('float', v)) end

-- the file's bytes with byte `at` (1-based) xor-ed with 0x20
local function flip(path, at)
   local s = process.read_all(path)
   process.write_file(path, s:sub(1, at - 1) .. string.char(bit.bxor(s:byte(at), 0x20)) .. s:sub(at + 1))
end

describe('crc32c', function()
   it('gives the published check value and TFRecord\'s mask of it', function()
      assert.equals(0xE3069283, tb.crc32c('123456789'))
      assert.equals(0, tb.crc32c(''))
      -- rotated right by 15 bits, plus 0xa282ead8, modulo 2^32
      local c = 0xE3069283
      local rot = (math.floor(c / 2 ^ 15) + (c % 2 ^ 15) * 2 ^ 17) % 2 ^ 32
      assert.equals((rot + 0xA282EAD8) % 2 ^ 32, tb.masked_crc32c('123456789'))
      -- 32 bytes of zeros: the iSCSI test vector of RFC 3720 (B.4)
      assert.equals(0x8A9136AA, tb.crc32c(string.rep('\0', 32)))
   end)
end)

describe('SummaryWriter refuses bad input, naming the call', function()
   local function err(f) return support.err_of(f) end

   it('for shapes, steps, values and tags', function()
      local w = tb.SummaryWriter(dir .. '/bad')
      assert.matches('tensorboard_spec%.lua:%d+: SummaryWriter:add_image: img is %[2,4,4%], expected %[C,H,W%] with C 1',
                     err(function() w:add_image('i', fnn.zeros(2, 4, 4), 0) end))
      assert.matches('SummaryWriter:add_image: img is %[4,4%], expected %[C,H,W%]',
                     err(function() w:add_image('i', fnn.zeros(4, 4), 0) end))
      assert.matches('SummaryWriter:add_image: img is %[3,0,4%], expected %[C,H,W%] .* H and W >= 1',
                     err(function() w:add_image('i', fnn.zeros(3, 0, 4), 0) end))
      assert.matches('tensorboard_spec%.lua:%d+: SummaryWriter:add_scalar: step is nan, expected a whole number',
                     err(function() w:add_scalar('x', 1, 0 / 0) end))
      assert.matches('SummaryWriter:add_scalar: step is inf, expected a whole number',
                     err(function() w:add_scalar('x', 1, math.huge) end))
      assert.matches('SummaryWriter:add_scalar: step is 1%.1805916207174113e%+21, expected a whole number within %+%-2%^53',
                     err(function() w:add_scalar('x', 1, 2 ^ 70) end))
      assert.matches('SummaryWriter:add_histogram: step is 1%.5, expected a whole number',
                     err(function() w:add_histogram('h', {1, 2}, 1.5) end))
      assert.matches('SummaryWriter:add_text: step is nil, expected a whole number',
                     err(function() w:add_text('t', 'x') end))
      assert.matches("SummaryWriter:add_scalar: value is 'a', expected a number",
                     err(function() w:add_scalar('x', 'a', 1) end))
      assert.matches('SummaryWriter:add_scalar: value is a tensor %[2%], expected a number or a one%-element tensor',
                     err(function() w:add_scalar('x', fnn.zeros(2), 1) end))
      assert.matches("SummaryWriter:add_scalar: tag is '', expected a non%-empty string",
                     err(function() w:add_scalar('', 1, 1) end))
      assert.matches('tensorboard_spec%.lua:%d+: SummaryWriter:add_histogram: histogram h: value 2 is nan %(values must be finite%)',
                     err(function() w:add_histogram('h', fnn.tensor{1, 0 / 0, 3}, 0) end))
      assert.matches('SummaryWriter:add_histogram: the tensor %[0%] is empty',
                     err(function() w:add_histogram('h', fnn.zeros(0), 0) end))
      assert.matches('SummaryWriter:add_image: image i: pixel value 3 is nan',
                     err(function() w:add_image('i', fnn.tensor{{{0, 1, 0 / 0}}}, 0) end))
      assert.matches('SummaryWriter:add_scalars: values is a table %{%}, expected a table {name = number, ...}',
                     err(function() w:add_scalars('m', {}, 0) end))
      assert.matches('SummaryWriter:add_text: text is 3, expected a string',
                     err(function() w:add_text('t', 3, 0) end))
      assert.matches('SummaryWriter:add_scalar: call it with a colon',
                     err(function() w.add_scalar('x', 1, 0) end))
      w:close()
   end)

   it('for options, and a log_dir that cannot be made', function()
      assert.matches("tensorboard_spec%.lua:%d+: tensorboard.SummaryWriter: unknown option 'flush_sec'.*flush_secs",
                     err(function() tb.SummaryWriter(dir .. '/o', {flush_sec = 1}) end))
      assert.matches('tensorboard.SummaryWriter: max_queue',
                     err(function() tb.SummaryWriter(dir .. '/o', {max_queue = 0}) end))
      assert.matches('tensorboard.SummaryWriter: flush_secs',
                     err(function() tb.SummaryWriter(dir .. '/o', {flush_secs = 0}) end))
      process.write_file(dir .. '/afile', 'x')
      assert.matches('tensorboard_spec%.lua:%d+: tensorboard.SummaryWriter: cannot make the log directory .*afile/sub: Not a directory',
                     err(function() tb.SummaryWriter(dir .. '/afile/sub') end))
   end)

   it('once closed', function()
      local c = tb.SummaryWriter(dir .. '/closed')
      c:close()
      c:close()   -- twice is harmless
      assert.matches('tensorboard_spec%.lua:%d+: SummaryWriter:add_scalar: the writer of .*/closed is closed',
                     err(function() c:add_scalar('x', 1, 0) end))
      assert.matches('SummaryWriter:flush: the writer of .*/closed is closed', err(function() c:flush() end))
   end)
end)

-- ---------------------------------------------------------------------------
-- TensorBoard reads what we write

local function have_tensorboard()
   return os.execute('python3 -c "import tensorboard, PIL" >/dev/null 2>&1') == 0
end

if not have_tensorboard() and os.getenv('FASTNN_REQUIRE_TENSORBOARD') ~= '1' then
   io.stderr:write('tensorboard_spec: python3 with tensorboard (pip install tensorboard) not found: '
                   .. 'the part where TensorBoard reads our files is left out\n')
   return
end

-- what TensorBoard's reader makes of path (spec/tensorboard_read.py <mode> <path>), decoded
local function read(mode, path)
   local p = io.popen(('python3 %s/spec/tensorboard_read.py %s %s 2>&1; echo "exit=$?"'):format(
      cwd, mode, process.quote(path)))
   local out = p:read('*a')
   p:close()
   local body, rc = out:match('^(.-)exit=(%d+)%s*$')
   assert(rc == '0', 'spec/tensorboard_read.py failed:\n' .. out)
   return json.decode(body)
end

local function event_files(d)
   local out = {}
   for name in io.popen('ls ' .. process.quote(d)):lines() do
      if name:match('^events%.out%.tfevents%.') then out[#out + 1] = d .. '/' .. name end
   end
   return out
end

-- PyTorch's default bucket edges, and a naive count over them (np.histogram's rule: [e_i, e_i+1),
-- the last bin closed), trimmed as torch.utils.tensorboard.summary.make_histogram trims
local function expected_histogram(values)
   local pos = {}
   local v = 1e-12
   while v < 1e20 do pos[#pos + 1] = v; v = v * 1.1 end
   local edges = {}
   for i = #pos, 1, -1 do edges[#edges + 1] = -pos[i] end
   edges[#edges + 1] = 0
   for i = 1, #pos do edges[#edges + 1] = pos[i] end
   local counts = {}
   for i = 1, #edges - 1 do counts[i] = 0 end
   local mn, mx, sum, sq = math.huge, -math.huge, 0, 0
   for _, x in ipairs(values) do
      mn, mx, sum, sq = math.min(mn, x), math.max(mx, x), sum + x, sq + x * x
      for i = 1, #edges - 1 do
         if edges[i] <= x and (x < edges[i + 1] or (i == #edges - 1 and x == edges[i + 1])) then
            counts[i] = counts[i] + 1
            break
         end
      end
   end
   local first, last
   for i = 1, #counts do
      if counts[i] > 0 then first = first or i; last = i end
   end
   local limits, buckets = {edges[first]}, {first > 1 and counts[first - 1] or 0}
   for i = first, last do
      limits[#limits + 1] = edges[i + 1]
      buckets[#buckets + 1] = counts[i]
   end
   return {min = mn, max = mx, num = #values, sum = sum, sum_squares = sq, bucket_limit = limits, bucket = buckets}
end

local function same_histogram(want, got, what)
   assert.equals(want.min, got.min, what .. ' min')
   assert.equals(want.max, got.max, what .. ' max')
   assert.equals(want.num, got.num, what .. ' num')
   assert.is_true(math.abs(want.sum - got.sum) <= 1e-12 * math.max(1, math.abs(want.sum)), what .. ' sum')
   assert.is_true(math.abs(want.sum_squares - got.sum_squares) <= 1e-12 * want.sum_squares, what .. ' sum_squares')
   assert.same(want.bucket_limit, got.bucket_limit, what .. ' bucket_limit')
   assert.same(want.bucket, got.bucket, what .. ' bucket')
end

-- the 8-bit pixels (HWC) TensorBoard should decode from img [C, H, W]: clamped to [0, 1], x 255,
-- rounded to nearest
local function expected_pixels(img)
   local s, flat = img:shape(), img:to_flat()
   local c, h, w = s[1], s[2], s[3]
   local out = {}
   for y = 0, h - 1 do
      for x = 0, w - 1 do
         for k = 0, c - 1 do
            local v = flat[k * h * w + y * w + x + 1]
            local byte = v <= 0 and 0 or v >= 1 and 255 or math.floor(f32(v * 255) + 0.5)
            out[#out + 1] = byte
         end
      end
   end
   return out
end

describe('TensorBoard reads a SummaryWriter\'s file', function()
   it('is possible here (python3 with tensorboard)', function()
      assert.is_true(have_tensorboard(), 'python3 -c "import tensorboard, PIL" failed')
   end)

   it('with every scalar, scalar group, histogram, image and text at its step', function()
      local logdir = dir .. '/all'
      local w = tb.SummaryWriter(logdir, {max_queue = 4})
      local losses = {}
      for step = 0, 24 do
         losses[step] = 2 / (step + 1) + 0.01 * step
         w:add_scalar('loss/train', losses[step], step)
      end
      w:add_scalar('big_step', fnn.tensor{0.25}, 2 ^ 40)   -- a one-element tensor; a step past 32 bits
      w:add_scalar('zero', 0, 3)
      for step = 1, 3 do w:add_scalars('loss', {train = 1 / step, val = 2 / step}, step * 10) end
      fnn.manual_seed(5)
      local weights = fnn.randn(40, 25) * 3
      w:add_histogram('fc.weight', weights, 7)
      -- a Lua array: zeros, values on bucket edges (1e-12 and the next one up), tiny negatives, a large value
      local edge_values = {0, 0, 1e-12, 1e-12 * 1.1, -5e-13, -1e-12, 1e19, 2.5, -2.5, 3}
      w:add_histogram('edges', edge_values, 8)
      local rgb = fnn.rand(3, 5, 4)
      local grey = fnn.rand(1, 3, 2)
      local rgba = fnn.rand(4, 2, 3) * 1.4 - 0.2   -- outside [0, 1] too: clamped
      w:add_image('sample/rgb', rgb, 1)
      w:add_image('sample/rgb', (1 - rgb), 2)
      w:add_image('sample/grey', grey, 5)
      w:add_image('sample/rgba', rgba, 6)
      local note = 'lr **1e-3**, naïve: 10 µs\nline two'
      w:add_text('notes', note, 11)
      w:add_text('notes', '', 12)
      w:close()

      local files = event_files(logdir)
      assert.equals(1, #files)
      assert.matches('/events%.out%.tfevents%.%d%d%d%d%d%d%d%d%d%d%.[^/]+$', files[1])
      local rec = read('records', files[1])
      assert.equals('', rec.error)
      assert.same({what = 'file_version', file_version = 'brain.Event:2'},
                  {what = rec.events[1].what, file_version = rec.events[1].file_version})
      assert.is_true(math.abs(rec.events[1].wall_time - os.time()) < 60)
      assert.equals(1 + 25 + 2 + 2 + 4 + 2, #rec.events)

      local got = read('runs', logdir)
      local run = got.runs['.']
      local want = {}
      for step = 0, 24 do want[#want + 1] = {step, f32(losses[step])} end
      assert.same(want, run.scalars['loss/train'])
      assert.same({{2 ^ 40, 0.25}}, run.scalars.big_step)
      assert.same({{3, 0}}, run.scalars.zero)
      -- add_scalars: a run per key, each holding the main tag
      assert.same({{10, 1}, {20, f32(1 / 2)}, {30, f32(1 / 3)}}, got.runs['loss_train'].scalars.loss)
      assert.same({{10, 2}, {20, 1}, {30, f32(2 / 3)}}, got.runs['loss_val'].scalars.loss)

      local h = run.histograms['fc.weight']
      assert.equals(1, #h)
      assert.equals(7, h[1].step)
      local wv = weights:to_flat()
      same_histogram(expected_histogram(wv), h[1], 'fc.weight')
      local he = run.histograms.edges[1]
      assert.equals(8, he.step)
      same_histogram(expected_histogram(edge_values), he, 'edges')
      -- the buckets hold every value here (1e19 < 1e20), the zeros in the bin right of 0
      local total = 0
      for _, c in ipairs(he.bucket) do total = total + c end
      assert.equals(#edge_values, total)

      -- PyTorch's own histogram of the same values, where torch is installed
      for name, values in pairs{['fc.weight'] = wv, edges = edge_values} do
         local lines = {}
         for i, v in ipairs(values) do lines[i] = ('%.17g'):format(v) end
         process.write_file(dir .. '/values.txt', table.concat(lines, '\n'))
         local ref = read('torch_histogram', dir .. '/values.txt')
         if ref.missing then
            io.stderr:write('tensorboard_spec: no torch (' .. ref.missing .. '): PyTorch\'s histogram not compared\n')
         else
            same_histogram(ref, run.histograms[name][1], name .. ' (PyTorch)')
         end
      end

      local imgs = run.images['sample/rgb']
      assert.equals(2, #imgs)
      assert.same({1, 4, 5, 'RGB', 'PNG'}, {imgs[1].step, imgs[1].width, imgs[1].height, imgs[1].mode, imgs[1].format})
      assert.same(expected_pixels(rgb), imgs[1].pixels)
      assert.equals(2, imgs[2].step)
      assert.same(expected_pixels((1 - rgb)), imgs[2].pixels)
      local g = run.images['sample/grey'][1]
      assert.same({5, 2, 3, 'L'}, {g.step, g.width, g.height, g.mode})
      assert.same(expected_pixels(grey), g.pixels)
      local a = run.images['sample/rgba'][1]
      assert.same({6, 3, 2, 'RGBA'}, {a.step, a.width, a.height, a.mode})
      assert.same(expected_pixels(rgba), a.pixels)

      local texts = run.texts.notes
      assert.equals(2, #texts)
      assert.same({step = 11, plugin = 'text', dtype = 7, shape = {1}, text = {note}}, texts[1])
      assert.same({12, {''}}, {texts[2].step, texts[2].text})
   end)

   it('and reports a flipped CRC as it reports any corrupt record', function()
      local logdir = dir .. '/crc'
      local w = tb.SummaryWriter(logdir)
      for step = 1, 5 do w:add_scalar('x', step, step) end
      w:close()
      local path = event_files(logdir)[1]
      local clean = read('records', path)
      assert.same({'', 6}, {clean.error, #clean.events})
      -- record k starts after the earlier ones: 8 bytes length, 4 its CRC, the event, 4 its CRC
      local s = process.read_all(path)
      local starts, at = {}, 1
      while at <= #s do
         starts[#starts + 1] = at
         local len = 0
         for i = 7, 0, -1 do len = len * 256 + s:byte(at + i) end
         at = at + 12 + len + 4
      end
      assert.equals(6, #starts)
      assert.equals(#s + 1, at)
      -- the 4th record's event CRC (its last byte): the reader stops there, with the 3 events before it
      local len4 = starts[5] - starts[4] - 16
      flip(path, starts[4] + 12 + len4 + 3)
      local bad = read('records', path)
      assert.matches('^DataLossError: .*failed event crc32 check$', bad.error)
      assert.equals(3, #bad.events)
      local runs = read('runs', logdir)
      assert.same({{1, 1}, {2, 2}}, runs.runs['.'].scalars.x)
      assert.matches('Truncated record in .*failed event crc32 check', runs.log)
      flip(path, starts[4] + 12 + len4 + 3)   -- back as it was
      assert.same({'', 6}, {read('records', path).error, #read('records', path).events})
      -- the 2nd record's length CRC
      flip(path, starts[2] + 9)
      bad = read('records', path)
      assert.matches('^DataLossError: .*failed header crc32 check$', bad.error)
      assert.equals(1, #bad.events)
   end)

   it('up to the last flush: queued events reach the file at max_queue, flush_secs and flush()', function()
      local function scalars_on_disk(logdir)
         local r = read('records', event_files(logdir)[1])
         assert.equals('', r.error)
         return #r.events - 1   -- the first is file_version
      end
      local held = tb.SummaryWriter(dir .. '/held', {max_queue = 1000, flush_secs = 1000})
      held:add_scalar('x', 1, 1)
      held:add_scalar('x', 2, 2)
      assert.equals(0, scalars_on_disk(dir .. '/held'))   -- still queued
      held:flush()
      assert.equals(2, scalars_on_disk(dir .. '/held'))
      held:close()

      local queue = tb.SummaryWriter(dir .. '/queue', {max_queue = 3, flush_secs = 1000})
      for step = 1, 7 do queue:add_scalar('x', step, step) end
      assert.equals(6, scalars_on_disk(dir .. '/queue'))   -- two full queues written, one event held
      queue:close()
      assert.equals(7, scalars_on_disk(dir .. '/queue'))

      local timed = tb.SummaryWriter(dir .. '/timed', {max_queue = 1000, flush_secs = 0.2})
      timed:add_scalar('x', 1, 1)
      local deadline = os.time() + 20
      while scalars_on_disk(dir .. '/timed') == 0 and os.time() < deadline do os.execute('sleep 0.2') end
      assert.equals(1, scalars_on_disk(dir .. '/timed'))
      timed:close()
   end)

   it('after a crash, with everything up to the last flush', function()
      process.write_file(dir .. '/crash.lua', [[
local ffi = require 'ffi'
ffi.cdef 'int getpid(void); int kill(int pid, int sig);'
local w = require('fastnn').tensorboard.SummaryWriter(arg[1], {max_queue = 100, flush_secs = 1000})
for step = 1, 3 do w:add_scalar('x', step, step) end
w:flush()
for step = 4, 5 do w:add_scalar('x', step, step) end
ffi.C.kill(ffi.C.getpid(), 9)   -- SIGKILL: no close, no finalizers
]])
      local env = ("LUA_PATH='%s/lua/?.lua;%s/lua/?/init.lua;;'"):format(cwd, cwd)
      local ok = os.execute(('%s luajit %s %s 2>/dev/null'):format(env, process.quote(dir .. '/crash.lua'),
                                                                  process.quote(dir .. '/crash')))
      assert.are_not.equals(0, ok)   -- killed
      local got = read('runs', dir .. '/crash')
      assert.same({{1, 1}, {2, 2}, {3, 3}}, got.runs['.'].scalars.x)
   end)
end)

describe('examples/char_lm.lua --tensorboard DIR', function()
   it('logs each step\'s loss and learning rate, the validation loss and the generated text', function()
      local out_dir, logdir = dir .. '/char_lm', dir .. '/char_lm_tb'
      local cmd = table.concat({process.quote(process.program('fastnn-lua', 'FASTNN_LAUNCHER')),
         process.quote(cwd .. '/examples/char_lm.lua'), '--quick', '--steps', '30', '--chars', '20', '--fresh',
         '--out', process.quote(out_dir), '--state', process.quote(out_dir .. '/s.fdl'),
         '--tensorboard', process.quote(logdir)}, ' ')
      local p = io.popen(cmd .. ' 2>&1; echo "exit=$?"')
      local out = p:read('*a')
      p:close()
      assert.matches('exit=0%s*$', out)
      local loss, val = out:match('final step 30  loss (%S+)  validation (%S+)')
      assert.is_string(loss, out)
      local run = read('runs', logdir).runs['.']
      local train = run.scalars['loss/train']
      assert.equals(30, #train)
      for i, e in ipairs(train) do assert.equals(i, e[1]) end
      assert.is_true(math.abs(train[30][2] - tonumber(loss)) < 1e-6)
      assert.equals(30, #run.scalars.learning_rate)
      assert.equals(1, #run.scalars['loss/validation'])
      assert.equals(30, run.scalars['loss/validation'][1][1])
      assert.is_true(math.abs(run.scalars['loss/validation'][1][2] - tonumber(val)) < 1e-6)
      local sample = out:match('%-%-%- the prompt and 20 generated characters [^\n]*\n(.-)\nTensorBoard: ')
      assert.is_string(sample, out)
      assert.same({{step = 30, plugin = 'text', dtype = 7, shape = {1}, text = {'```\n' .. sample .. '\n```'}}},
                  run.texts.sample)
   end)
end)

describe('nn.callbacks.TensorBoard', function()
   it("logs fit's losses, metrics and learning rate per epoch in Keras' train and validation runs", function()
      fnn.manual_seed(3)
      local x = fnn.randn(32, 3)
      local y = x:matmul(fnn.tensor({{1.0}, {-1.0}, {2.0}}))
      local m = nn.Sequential(nn.Dense(4, 'tanh'), nn.Dense(1)):build{2, 3}
      m:compile{optimizer = optim.SGD{lr = 0.05}, loss = 'mse', metrics = {'mae'}}
      local logdir = dir .. '/keras'
      local halve = nn.callbacks.LearningRateScheduler(function(epoch, lr) return epoch == 1 and lr or lr / 2 end)
      local h = m:fit(x, y, {epochs = 3, batch_size = 8, validation_split = 0.25, verbose = 0,
                             callbacks = {halve, nn.callbacks.TensorBoard{log_dir = logdir, histogram_freq = 2}}})
      local got = read('runs', logdir).runs
      local function curve(list)
         local out = {}
         for i, v in ipairs(list) do out[i] = {i, f32(v)} end
         return out
      end
      assert.same(curve(h.loss), got.train.scalars.epoch_loss)
      assert.same(curve(h.mae), got.train.scalars.epoch_mae)
      assert.same(curve{0.05, 0.025, 0.0125}, got.train.scalars.epoch_learning_rate)
      assert.same(curve(h.val_loss), got.validation.scalars.epoch_loss)
      assert.same(curve(h.val_mae), got.validation.scalars.epoch_mae)
      assert.is_nil(got.validation.scalars.epoch_learning_rate)
      -- histogram_freq = 2: the parameters at epoch 2, by name
      local names = {}
      for _, pair in ipairs(m:named_parameters()) do names[#names + 1] = pair[1] end
      for _, name in ipairs(names) do
         assert.equals(1, #got.train.histograms[name], name)
         assert.equals(2, got.train.histograms[name][1].step)
      end
      local last = names[#names]
      local p = m:named_parameters()[#names][2]:tensor():to_flat()
      assert.equals(#p, got.train.histograms[last][1].num)
   end)

   it('refuses unknown options', function()
      assert.matches("tensorboard_spec%.lua:%d+: nn.callbacks.TensorBoard: unknown option 'logdir'.*log_dir",
                     support.err_of(function() nn.callbacks.TensorBoard{logdir = 'x'} end))
   end)
end)
