-- Crash safety: a child process (luajit on these sources and $FASTNN_LIB, as the specs run) saves
-- a checkpoint in a loop and is killed with SIGKILL at random moments; after every kill the
-- file on disk loads and holds one complete save. A save that fails in the middle of writing
-- (the file-size limit) raises and leaves the earlier file.
local fnn = require 'fastnn'
local nn = fnn.nn

local dir = io.popen('mktemp -d /tmp/fastnn-crash-XXXXXX'):read('*l')
local cwd = io.popen('pwd'):read('*l')
teardown(function() os.execute('rm -rf ' .. dir) end)

local process = require 'spec.process'
local write_file, read_all = process.write_file, process.try_read   -- read_all: nil when missing
local function exists(path) return read_all(path) ~= nil end

-- the environment a child needs to find fastnn: these sources, and the library the specs use
local child_env = ("LUA_PATH='%s/lua/?.lua;%s/lua/?/init.lua;;'"):format(cwd, cwd)

local function model()
   return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256))   -- about 1 MB
end

-- every parameter filled with k: a mixed file would show two values
local function filled_with(m)
   local k
   for _, p in ipairs(m:parameters()) do
      local v = p:tensor():to_flat()
      k = k or v[1]
      for i = 1, #v, 997 do
         if v[i] ~= k then return nil end
      end
      if v[#v] ~= k then return nil end
   end
   return k
end

describe('a process killed while saving', function()
   it('always leaves a checkpoint that loads, old or new, never a broken one', function()
      local path = dir .. '/run.fdl'
      write_file(dir .. '/child.lua', [[
local fnn = require 'fastnn'
local nn = fnn.nn
local m = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256))
local path, k, running = arg[1], tonumber(arg[2]), arg[3]
while true do
   k = k + 1
   for _, p in ipairs(m:parameters()) do p:set(fnn.full(p:shape(), k)) end
   fnn.save(m, path, {metadata = {k = k}})
   if running then io.open(running, 'w'):close(); running = nil end   -- the loop is under way
end
]])
      -- one shell per round starts the child, waits (bounded) until its first save of the round is
      -- done, so that the kill lands in the save loop and not in the child's start-up, kills it
      -- after a random pause and reaps it
      write_file(dir .. '/round.sh', ([[
rm -f %s/running
%s luajit %s/child.lua "$1" "$2" %s/running > %s/child.log 2>&1 &
pid=$!
i=0
while [ ! -e %s/running ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
sleep "$3"
kill -9 $pid
wait $pid
rm -f %s/running
exit 0
]]):format(dir, child_env, dir, dir, dir, dir, dir))
      math.randomseed(os.time())
      local last = 0
      local deadline = os.time() + 60       -- bounded: a hang fails instead of blocking CI
      -- what a kill can leave besides the checkpoint: temporary files named after it, safe to delete
      local function leftovers()
         local interrupted = 0
         for name in io.popen('ls -A ' .. dir):lines() do
            if name:match('^%.run%.fdl%.tmp%.') then interrupted = interrupted + 1 end
            assert.is_truthy(name == 'run.fdl' or name == 'child.lua' or name == 'child.log' or name == 'round.sh'
                             or name:match('^%.run%.fdl%.tmp%.%d+%.%d+$'), 'unexpected file ' .. name)
         end
         return interrupted
      end
      -- at least six rounds, and more until a kill has landed inside a save (a leftover temporary
      -- file shows it), so that the spec always checks that case; saves are most of the child's
      -- loop, so that takes one or two rounds unless the kills keep missing them
      local round, interrupted = 0, 0
      while round < 6 or interrupted == 0 do
         round = round + 1
         assert(round <= 60, 'sixty kills and none landed inside a save')
         local ok = os.execute(('sh %s/round.sh %s %d %.3f 2>/dev/null'):format(dir, path, last, math.random() * 0.1))
         assert.is_truthy(ok)
         local log = read_all(dir .. '/child.log') or ''
         assert.equals('', log, 'the child failed:\n' .. log)

         local m = model()
         local ok, err = pcall(fnn.load, m, path)
         assert(ok, ('round %d: the checkpoint does not load after SIGKILL: %s'):format(round, tostring(err)))
         local k = filled_with(m)
         assert(k, ('round %d: the checkpoint mixes two saves'):format(round))
         local info = require('fastnn.serialize').info(path)
         assert.equals(tostring(k), info.metadata.k)
         assert.is_true(k > last, 'every round saves at least once')
         last = k
         assert.is_true(os.time() < deadline, 'the crash loop ran past its time bound')
         interrupted = leftovers()
      end
   end)
end)

describe('a save that fails while writing', function()
   it('raises and leaves the earlier file as it was', function()
      local path = dir .. '/limited.fdl'
      fnn.manual_seed(5)
      local small = nn.Linear(4, 2)
      fnn.save(small, path)
      local before = read_all(path)
      write_file(dir .. '/big.lua', [[
local fnn = require 'fastnn'
local ok, err = pcall(fnn.save, fnn.nn.Linear(512, 512), arg[1])
print(ok, err)
]])
      -- a 64-block file-size limit: the write fails with EFBIG once the temporary file outgrows it
      local p = io.popen(("sh -c \"ulimit -f 64; trap '' XFSZ; %s luajit %s/big.lua %s\" 2>&1"):format(
         child_env, dir, path))
      local out = p:read('*a')
      p:close()
      assert.matches('^false\t.*save: .*limited%.fdl: cannot write: File too large %(the earlier file, if any, is '
                     .. 'unchanged%)', out)
      assert.equals(before, read_all(path))
      local m = nn.Linear(4, 2)
      fnn.load(m, path)
      assert.same(small.weight:tensor():to_flat(), m.weight:tensor():to_flat())
      for name in io.popen('ls -A ' .. dir):lines() do
         assert.is_falsy(name:match('^%.limited'), 'a temporary file was left: ' .. name)
      end
   end)
end)
